"""A supervisor of the version before this one, still running after an upgrade, and the new
command line talking to it: what it does not know is neither lost nor misread."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from supervisor.identity import Identity
from tests.e2e.harness import Client, Env, Terminal, running
from tests.e2e.test_unreadable_store import BREAKAGES, idle_session

PREVIOUS = "01b2e66d817a4ae8148d6515dbb139a71bf19e03"
"""The last commit of session 37: the version before H175's ``sessions rm --force``."""
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def previous(env: Env) -> Path:
    """The previous version's source, from this repository's history (skipped without it)."""
    archived = subprocess.run(
        ["git", "-C", str(REPO), "archive", PREVIOUS, "cli", "session", "actors", "supervisor"],
        capture_output=True,
        check=False,
    )
    if archived.returncode != 0:
        pytest.skip(f"no commit {PREVIOUS[:7]} in this checkout's history")
    source = env.base / "previous"
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as tar:
        tar.extractall(source, filter="data")
    return source


def run_previous(
    env: Env, source: Path, *args: str, input: str = "", terminal: Terminal | None = None
) -> subprocess.CompletedProcess[str]:
    """``agent-assist ARGS`` of the previous version, in the workspace."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        input=input,
        env=env.environ(terminal, PYTHONPATH=str(source)),
        cwd=env.workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def spawn_previous(env: Env, source: Path, *args: str, terminal: Terminal) -> Client:
    """``agent-assist ARGS`` of the previous version, running with its stdin piped."""
    process = subprocess.Popen(
        [sys.executable, "-m", "cli", *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        bufsize=1,
        cwd=env.workspace,
        env=env.environ(terminal, PYTHONPATH=str(source)),
    )
    client = Client(process)
    env.clients.append(client)
    return client


def start_previous(env: Env, source: Path) -> None:
    started = run_previous(env, source, "supervisor", "start")
    assert started.returncode == 0, started.stderr


def test_rm_keeps_a_session_a_running_tab_may_hold_with_a_previous_supervisor(
    env: Env, previous: Path
) -> None:
    """H178's find: the previous supervisor knows no doubt of an unreadable pointer, and
    removed the session a running tab may hold (the new refusal was skipped without a
    word). It is checked from the files before the request, as a supervisor would."""
    session_id, tab = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    start_previous(env, previous)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    refused = env.run("sessions", "rm", session_id)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"error: session {session_id} not removed: pointer active_{tab.pid}.json could not "
        f"be read and terminal {tab.pid} still runs, so it may be its session; "
        f"agent-assist sessions rm --force {session_id} removes it anyway"
    ], refused.stderr
    assert env.session_ids() == [session_id]


def test_rm_force_removes_the_session_with_a_previous_supervisor(
    env: Env, previous: Path
) -> None:
    """H178's find: the previous supervisor refused the frame's ``force`` key:
    ``error: invalid force: Extra inputs are not permitted``, exit 1, nothing removed."""
    session_id, tab = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    start_previous(env, previous)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    removed = env.run("sessions", "rm", "--force", session_id)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"Removed session {session_id}.\n"
    assert env.session_ids() == []


def test_a_previous_terminal_converses_with_this_supervisor(env: Env, previous: Path) -> None:
    """Additive: what this supervisor's welcome and status say of it, the version before
    ignores; it converses, lists and stops it as it did its own."""
    assert env.run("supervisor", "start").returncode == 0
    chat = run_previous(env, previous, "--new", input="hello\n")
    assert chat.returncode == 0, chat.stderr
    assert 'You said: "hello"' in chat.stdout
    (session_id,) = env.session_ids()
    listed = run_previous(env, previous, "sessions", "--json")
    assert [row["session_id"] for row in json.loads(listed.stdout)] == [session_id]
    resumed = run_previous(env, previous, "--yes", input="again\n")
    assert resumed.returncode == 0, resumed.stderr
    assert 'You said: "again". (turn 2 of this conversation' in resumed.stdout
    stopped = run_previous(env, previous, "supervisor", "stop")
    assert stopped.returncode == 0, stopped.stderr


def versions() -> tuple[str, str]:
    """The previous supervisor's version and this one's, as the notes name them (the
    package version is the same: the previous one's code tells no build)."""
    this = Identity.of_this_process()
    return f"{this.version} (an earlier build)", f"{this.version} (build {this.build})"


def test_a_chat_restarts_an_unused_previous_supervisor_and_resumes_its_session(
    env: Env, previous: Path
) -> None:
    """After an upgrade the next chat met the supervisor of the version before, and went on
    with its old code (and refusals: ``sessions rm --force``) for as long as it ran."""
    tab = env.terminal()
    start_previous(env, previous)
    old = env.supervisor_pid()
    assert old is not None
    first = run_previous(env, previous, "--new", input="hello\n", terminal=tab)
    assert first.returncode == 0, first.stderr
    (session_id,) = env.session_ids()
    resumed = env.run("--yes", input="again\n", terminal=tab)
    assert resumed.returncode == 0, resumed.stderr
    before, now = versions()
    assert f"note: restarted the supervisor (agent-assist {before} -> {now})" in (
        resumed.stderr.splitlines()
    ), resumed.stderr
    assert 'You said: "again". (turn 2 of this conversation' in resumed.stdout
    assert env.session_ids() == [session_id]
    assert not running(old)
    status = json.loads(env.run("supervisor", "status", "--json").stdout)
    assert status["build"] == Identity.of_this_process().build


def test_a_chat_uses_a_previous_supervisor_a_terminal_uses_then_switches_once_it_leaves(
    env: Env, previous: Path
) -> None:
    start_previous(env, previous)
    old = env.supervisor_pid()
    other_tab = env.terminal()
    other = spawn_previous(env, previous, "--new", terminal=other_tab)
    other.send("hello")
    other.expect('You said: "hello"')
    (held,) = env.session_ids()
    chat = env.run("--new", input="hi\n", terminal=env.terminal())
    assert chat.returncode == 0, chat.stderr
    before, now = versions()
    told = [line for line in chat.stderr.splitlines() if "agent-assist supervisor stop" in line]
    assert told == [
        f"note: the supervisor runs agent-assist {before}, not {now}, and 1 terminal uses it, "
        "so it stays: the first start once none does switches; agent-assist supervisor stop "
        "switches now (it saves every session; the chats attached end)"
    ], chat.stderr
    assert 'You said: "hi"' in chat.stdout
    assert env.supervisor_pid() == old
    other.close_stdin()
    assert other.wait() == 0
    resumed = env.run("--yes", input="again\n", terminal=other_tab)
    assert resumed.returncode == 0, resumed.stderr
    assert f"note: restarted the supervisor (agent-assist {before} -> {now})" in (
        resumed.stderr.splitlines()
    ), resumed.stderr
    assert f"[resume context: session {held}]" in resumed.stdout
    assert 'You said: "again". (turn 2 of this conversation' in resumed.stdout


def test_supervisor_start_restarts_an_unused_previous_supervisor(
    env: Env, previous: Path
) -> None:
    start_previous(env, previous)
    old = env.supervisor_pid()
    started = env.run("supervisor", "start")
    assert started.returncode == 0, started.stderr
    before, now = versions()
    assert started.stderr == f"note: restarted the supervisor (agent-assist {before} -> {now})\n"
    assert started.stdout.startswith(f"supervisor started (pid {env.supervisor_pid()}, ")
    assert env.supervisor_pid() != old


def test_sessions_lists_with_a_previous_supervisor(env: Env, previous: Path) -> None:
    """The previous supervisor does not know the asking tab's identity in the list frame
    (H186's ``terminal_pid``): it is asked without it, as its welcome says no such
    capability, and lists the sessions."""
    session_id, _tab = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    start_previous(env, previous)
    listed = env.run("sessions", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [row["session_id"] for row in json.loads(listed.stdout)] == [session_id]
