"""Real pid reuse: a number that named a tab, the supervisor or its heir now names a stranger.

Each test kills a process for good, waits until its pid is free, and starts
an unrelated process as that very pid (tests/e2e/pids.py, root only), then
drives the real ``agent-assist`` against what the files still say.
"""

from __future__ import annotations

import json
import subprocess
import time

import pytest

from cli.supervisor_cmd import wait_gone
from session.processes import process_start_time
from supervisor.client import heir_waiting
from supervisor.runtime import RuntimePaths
from tests.e2e.harness import AGENT_ASSIST, Env, running, wait_for
from tests.e2e.pids import (
    ReusedTerminal,
    kill_and_reap,
    pid_reuse_unavailable,
    spawn_at_pid,
    stranger,
)

pytestmark = pytest.mark.skipif(
    pid_reuse_unavailable() is not None, reason=f"no real pid reuse: {pid_reuse_unavailable()}"
)


def stop_stranger(process: subprocess.Popen[bytes]) -> None:
    process.kill()
    process.wait()


def prompts(env: Env, session_id: str) -> list[str]:
    return [
        part["content"]
        for message in env.session(session_id)["recent_messages"]
        for part in message["parts"]
        if part.get("part_kind") == "user-prompt"
    ]


def row(env: Env, session_id: str) -> dict[str, object]:
    (found,) = [r for r in env.sessions_json() if r["session_id"] == session_id]
    return found


def dead_tab_with_a_session(env: Env, message: str) -> tuple[int, str]:
    """A tab whose agent-assist and then the tab itself are killed -9 mid-session; (its pid,
    its session id) once the supervisor has seen the terminal go and the pid is free."""
    tab = env.terminal()
    client = env.spawn(terminal=tab)
    client.send(message)
    client.expect(f'You said: "{message}"')
    (session_id,) = env.session_ids()
    assert row(env, session_id)["state"] == "live"
    client.kill9()
    tab.close()
    kill_and_reap(tab.pid)
    wait_for(lambda: row(env, session_id)["state"] != "live", what="the session to be let go")
    return tab.pid, session_id


def status(env: Env) -> tuple[int, dict[str, object]]:
    result = env.run("supervisor", "status", "--json")
    info: dict[str, object] = json.loads(result.stdout)
    return result.returncode, info


def test_a_supervisor_pid_reused_by_a_stranger_is_neither_trusted_nor_signalled(
    env: Env,
) -> None:
    tab = env.terminal()
    first = env.run(input="before the kill\n", terminal=tab)
    assert first.returncode == 0, first.stderr
    old = env.supervisor_pid()
    assert old is not None
    env.kill_supervisor_and_heir()
    kill_and_reap(old)
    impostor = stranger(old)
    try:
        assert env.supervisor_pid() == old, "supervisor.pid still names the number"
        code, info = status(env)
        assert (code, info["running"], info["pid"]) == (3, False, None)
        stopped = env.run("supervisor", "stop")
        assert (stopped.returncode, stopped.stdout.strip()) == (0, "supervisor is not running")
        assert running(old), "supervisor stop signalled the stranger"

        again = env.run("--yes", input="after the kill\n", terminal=tab)
        assert again.returncode == 0, again.stderr
        assert 'You said: "after the kill"' in again.stdout
        new = env.supervisor_pid()
        assert new is not None and new != old and running(new)
        code, info = status(env)
        assert (code, info["pid"]) == (0, new)

        stopped = env.run("supervisor", "stop")
        assert stopped.stdout.strip() == f"supervisor stopped (pid {new})"
        assert running(old) and impostor.poll() is None, "the stranger outlived every command"
    finally:
        stop_stranger(impostor)
    (session_id,) = env.session_ids()
    assert prompts(env, session_id) == ["before the kill", "after the kill"]


def test_an_heir_pid_reused_by_a_stranger_is_not_waited_for_nor_signalled(env: Env) -> None:
    tab = env.terminal()
    first = env.run(input="before the kill\n", terminal=tab)
    assert first.returncode == 0, first.stderr
    heir = wait_for(
        lambda: (pid := env.heir_pid()) is not None and running(pid) and pid,
        what="the heir to wait",
    )
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    assert heir_waiting(RuntimePaths(env.runtime))
    env.kill_supervisor_and_heir()
    kill_and_reap(heir)
    kill_and_reap(supervisor)
    impostor = stranger(heir)
    try:
        assert env.heir_pid() == heir, "heir.pid still names the number"
        assert not heir_waiting(RuntimePaths(env.runtime)), "a stranger is no heir to wait for"
        again = env.run("--yes", input="after the kill\n", terminal=tab)
        assert again.returncode == 0, again.stderr
        assert 'You said: "after the kill"' in again.stdout
        assert env.supervisor_pid() not in (None, supervisor, heir)
        assert impostor.poll() is None, "the stranger was signalled"
        stopped = env.run("supervisor", "stop")
        assert stopped.returncode == 0, stopped.stderr
        assert impostor.poll() is None, "supervisor stop signalled the stranger"
    finally:
        stop_stranger(impostor)


def test_a_dead_tabs_session_is_orphaned_while_a_stranger_holds_its_pid(env: Env) -> None:
    """DESIGN 5: idle means pointed to by a *living* terminal; the pointer's start time is
    not the stranger's, so the session is orphaned (not idle under the stranger's pid, which
    would hide it from new tabs and from prune), and the next new tab resumes it whole."""
    pid, old = dead_tab_with_a_session(env, "the old tab's turn")
    impostor = stranger(pid)
    try:
        assert json.loads((env.project / f"active_{pid}.json").read_text())["session_id"] == old
        listed = row(env, old)
        assert (listed["state"], listed["terminal_pid"]) == ("orphaned", None)
        other_tab = env.terminal()
        resumed = env.run("--yes", input="a new tab's turn\n", terminal=other_tab)
        assert resumed.returncode == 0, resumed.stderr
        assert env.session_ids() == [old], "offered as the newest orphan, and resumed"
        assert prompts(env, old) == ["the old tab's turn", "a new tab's turn"]
        assert impostor.poll() is None
    finally:
        stop_stranger(impostor)


def test_a_new_tab_that_reuses_a_dead_tabs_pid_is_not_offered_that_tabs_session(
    env: Env,
) -> None:
    """DESIGN 5: a new tab has no pointer and is offered the project's newest orphan. The
    pointer at its pid is the dead tab's (another start time), so it is not this tab's own:
    the tab is offered the newer orphan, and its pointer is then its own."""
    pid, old = dead_tab_with_a_session(env, "the old tab's turn")
    dead = json.loads((env.project / f"active_{pid}.json").read_text())
    assert dead["session_id"] == old
    other_tab = env.terminal()
    other = env.run("--new", input="a later tab's turn\n", terminal=other_tab)
    assert other.returncode == 0, other.stderr
    other_tab.close()  # now the newest orphan
    (newest,) = set(env.session_ids()) - {old}
    # That tab's start removed the dead tab's pointer (a gone terminal's); put back, as an
    # older version left it, it must not be taken for the new tab's own.
    (env.project / f"active_{pid}.json").write_text(json.dumps(dead))
    # The new tab: a shell given the dead tab's pid, running agent-assist as its child
    # (no AGENT_ASSIST_TERMINAL_PID: its identity is its parent, this shell).
    new_tab = spawn_at_pid(
        pid,
        ["sh", "-c", 'read go; "$@"; exit $?', "tab", AGENT_ASSIST],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=env.workspace,
        env=env.environ(),
    )
    out, err = new_tab.communicate("go\ny\nthe new tab's turn\n", timeout=60)
    assert new_tab.returncode == 0, err
    assert "Resume previous session? [Y/n]" in err
    assert 'You said: "the new tab\'s turn"' in out
    assert prompts(env, newest) == ["a later tab's turn", "the new tab's turn"]
    assert prompts(env, old) == ["the old tab's turn"], "the dead tab's session is untouched"
    pointer = json.loads((env.project / f"active_{pid}.json").read_text())
    assert pointer["session_id"] == newest
    assert pointer["pid_start_time"] != dead["pid_start_time"], "the new tab's own start time"


def test_supervisor_stop_does_not_wait_for_a_stranger_that_took_the_stopped_pid(
    env: Env,
) -> None:
    stopped = env.terminal()  # stands for the supervisor that exits once told to stop
    spawned = time.monotonic()  # it started before this
    pid = stopped.pid
    started = process_start_time(pid)
    assert started is not None
    # Start times are told apart to a tick or so (session/processes.py): like any supervisor,
    # this one has lived longer than that before it stops. (Its computed start time cannot
    # tell its age: the boot time it is counted from is given in whole seconds.)
    wait_for(lambda: time.monotonic() - spawned > 0.2, what="the process to age")
    stopped.close()
    kill_and_reap(pid)
    impostor = stranger(pid)
    try:
        wait_gone(pid, started, timeout=5.0)  # SupervisorUnavailable if it waited for it
        assert impostor.poll() is None
    finally:
        stop_stranger(impostor)


def test_a_dead_tabs_pid_reused_at_once_is_attached_not_refused_as_busy(env: Env) -> None:
    tab = env.terminal()
    client = env.spawn(terminal=tab)
    client.send("the old tab's turn")
    client.expect('You said: "the old tab\'s turn"')
    (old,) = env.session_ids()
    client.kill9()
    tab.close()
    # No wait for the supervisor to see the terminal go: the new tab comes at once.
    new_tab = ReusedTerminal(tab.pid)
    env.terminals.append(new_tab)
    again = env.run("--new", input="the new tab's turn\n", terminal=new_tab)
    assert again.returncode == 0, again.stderr
    (new,) = set(env.session_ids()) - {old}
    assert prompts(env, new) == ["the new tab's turn"]
    assert prompts(env, old) == ["the old tab's turn"]
