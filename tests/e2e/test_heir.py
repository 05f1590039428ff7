"""The supervisor's heir: takes over at once when the supervisor is killed, never after a stop."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest

from tests.e2e.harness import Env, running, wait_for
from tests.e2e.openai_server import ChatServer


def test_a_killed_supervisor_s_heir_takes_over_and_the_terminal_goes_on(env: Env) -> None:
    client = env.spawn("--new", terminal=env.terminal())
    client.send("before the crash")
    client.expect("before the crash")
    first = env.supervisor_pid()
    heir = wait_for(env.heir_pid, what="the heir")
    assert first is not None and heir != first
    os.kill(first, signal.SIGKILL)
    client.send("after the crash")
    assert "(turn 2 of this conversation" in client.expect("after the crash")
    restored = client.expect("the supervisor went away", stderr=True)
    assert "started a new one" not in restored  # the heir was there: nothing was started
    assert env.supervisor_pid() == heir
    wait_for(lambda: env.heir_pid() not in (None, heir), what="the heir's own heir")
    client.close_stdin()
    assert client.wait() == 0


def test_a_killed_heir_is_replaced_and_the_new_one_takes_over(env: Env) -> None:
    """The heir holds a second model stack: the OOM killer's first pick. One that dies is
    replaced, so the supervisor's own death later is still taken over at once."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("before the crashes")
    client.expect("before the crashes")
    first_heir = wait_for(env.heir_pid, what="the heir")
    os.kill(first_heir, signal.SIGKILL)
    second_heir = wait_for(
        lambda: (pid := env.heir_pid()) not in (None, first_heir) and running(pid) and pid,
        what="a new heir",
    )
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    client.send("after the crashes")
    assert "(turn 2 of this conversation" in client.expect("after the crashes")
    assert "started a new one" not in client.expect("the supervisor went away", stderr=True)
    assert env.supervisor_pid() == second_heir
    client.close_stdin()
    assert client.wait() == 0


def test_a_stopped_supervisor_leaves_no_heir(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    heir = wait_for(env.heir_pid, what="the heir")
    assert env.run("supervisor", "stop").returncode == 0
    wait_for(lambda: not running(heir), what="the heir's end")
    assert not (env.runtime / "heir.pid").exists()
    status = env.run("supervisor", "status")
    assert status.returncode == 3, status.stdout


def test_without_an_heir_a_terminal_starts_a_new_supervisor_after_a_crash(env: Env) -> None:
    env.extra["AGENT_ASSIST_HEIR"] = "0"
    client = env.spawn("--new", terminal=env.terminal())
    client.send("before the crash")
    client.expect("before the crash")
    first = env.supervisor_pid()
    assert first is not None and env.heir_pid() is None
    os.kill(first, signal.SIGKILL)
    client.send("after the crash")
    assert "(turn 2 of this conversation" in client.expect("after the crash")
    assert "started a new one" in client.expect("the supervisor went away", stderr=True)
    assert wait_for(env.supervisor_pid) != first
    client.close_stdin()
    assert client.wait() == 0


def test_the_heir_is_a_fresh_interpreter_in_the_supervisor_s_process_group(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    supervisor = wait_for(env.supervisor_pid, what="the supervisor")
    heir = wait_for(env.heir_pid, what="the heir")
    command = Path(f"/proc/{heir}/cmdline").read_bytes().split(b"\0")
    assert command[1:5] == [b"-P", b"-m", b"supervisor.heir", str(env.runtime).encode()]
    assert os.getpgid(heir) == os.getpgid(supervisor)


def _heir_waiting_on_a_lock_held_here(
    env: Env, supervisor_pid: str | None
) -> tuple[subprocess.Popen[bytes], int]:
    """An heir started by this test (its parent), waiting on ``supervisor.lock`` held here,
    with ``supervisor.pid`` naming ``supervisor_pid`` (absent if None)."""
    env.runtime.mkdir(mode=0o700, exist_ok=True)
    lock = os.open(env.runtime / "supervisor.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX)
    if supervisor_pid is not None:
        (env.runtime / "supervisor.pid").write_text(f"{supervisor_pid}\n")
    heir = subprocess.Popen(
        [sys.executable, "-m", "supervisor.heir", str(env.runtime), str(os.getpid())],
        env=env.environ(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    wait_for(lambda: env.heir_pid() == heir.pid, what="the heir, loaded and waiting")
    return heir, lock


def test_an_heir_serves_only_once_it_holds_the_lock(env: Env) -> None:
    heir, lock = _heir_waiting_on_a_lock_held_here(env, str(os.getpid()))
    try:
        assert heir.poll() is None
        assert not (env.runtime / "supervisor.sock").exists()
        assert env.run("supervisor", "status").returncode == 3
    finally:
        os.close(lock)  # as the kernel does when the supervisor dies
    wait_for(lambda: env.run("supervisor", "status").returncode == 0, what="the heir serving")
    assert env.supervisor_pid() == heir.pid
    assert env.run("supervisor", "stop").returncode == 0
    assert heir.wait(timeout=30) == 0


def _a_pid_no_longer_running() -> str:
    gone = subprocess.Popen(["true"])
    gone.wait()
    return str(gone.pid)


@pytest.mark.parametrize("another", [False, True], ids=["stopped", "another supervisor's"])
def test_an_heir_whose_supervisor_did_not_die_exits_instead_of_serving(
    env: Env, another: bool
) -> None:
    last = _a_pid_no_longer_running() if another else None  # a stop removes supervisor.pid
    heir, lock = _heir_waiting_on_a_lock_held_here(env, last)
    os.close(lock)
    assert heir.wait(timeout=30) == 0
    assert not (env.runtime / "supervisor.sock").exists()
    assert env.heir_pid() is None


def _heirs_in(runtime: Path) -> dict[int, int]:
    """Every heir process of this runtime directory: {pid: the supervisor that started it}."""
    heirs = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[1:5] == [b"-P", b"-m", b"supervisor.heir", str(runtime).encode()]:
            heirs[int(entry.name)] = int(argv[5])
    return heirs


def test_a_supervisor_killed_while_its_heir_loads_leaves_one_supervisor(env: Env) -> None:
    client = env.spawn("--new", terminal=env.terminal())
    client.send("before the crashes")
    client.expect("before the crashes")
    first = env.supervisor_pid()
    heir = wait_for(env.heir_pid, what="the heir")
    assert first is not None
    os.kill(first, signal.SIGKILL)
    client.send("after the first crash")
    client.expect("after the first crash")
    os.kill(heir, signal.SIGKILL)  # its own heir has only just started loading
    client.send("after the second crash")
    assert "(turn 3 of this conversation" in client.expect("after the second crash")
    serving = wait_for(env.supervisor_pid, what="a supervisor")
    wait_for(
        lambda: set(_heirs_in(env.runtime).values()) == {serving} and env.heir_pid() is not None,
        what="one heir, of the supervisor serving, and none left of the dead ones",
    )
    assert running(serving)
    client.close_stdin()
    assert client.wait() == 0


def test_a_reply_that_loses_two_supervisors_ends_alone_and_the_chat_goes_on(
    env: Env, streaming_server: ChatServer
) -> None:
    """The second death within one reply ends that reply with one line; the next message
    re-attaches and is answered (the chat used to exit 1 there)."""
    client = env.spawn("--new", "--model", "openai-chat:test-model", terminal=env.terminal())
    client.send("a slow reply please")
    for streams in (1, 2):  # the message, then its re-send after the first death
        wait_for(partial(streamed, streaming_server, streams), what=f"stream {streams}")
        pid = env.supervisor_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
    client.expect("lost the supervisor twice during this reply", stderr=True)
    client.send("after both")
    client.expect("echo: after both")
    client.close_stdin()
    assert client.wait() == 1, "piped, the reply that ended alone makes the status 1"


def streamed(server: ChatServer, requests: int) -> bool:
    """Whether the model was asked ``requests`` times by now."""
    return sum(1 for request in server.requests if request["model"] == "test-model") >= requests


def test_the_session_answered_at_the_offer_is_the_one_opened_after_the_supervisor_died(
    env: Env,
) -> None:
    """The answer was kept as a place in the offer ("y", "2", "3") and read again against
    the offer of the supervisor that took over: another tab had taken the offered session
    meanwhile, so "3" was past the end of the new offer (a traceback) and "y" opened a
    session the user had not chosen."""
    for topic in ("topic one", "topic two", "topic three"):
        tab = env.terminal()
        assert env.run("--new", input=f"{topic}\n", terminal=tab).returncode == 0
        tab.close()  # orphaned: offered to a new tab, the newest first
    ids = {row["summary"].split('"')[1]: row["session_id"] for row in env.sessions_json()}
    chat = env.spawn(terminal=env.terminal())
    chat.expect("3) ", stderr=True)  # "topic one", the oldest
    chat.expect("Resume previous session? [Y/n]", stderr=True)
    holder = env.spawn("--resume", ids["topic three"], terminal=env.terminal())
    holder.send("taken meanwhile")
    holder.expect("taken meanwhile")
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    holder.send("after the crash")  # re-attached: "topic three" is live again, not offered
    holder.expect("after the crash")
    chat.send("3")
    chat.send("which topic is this?")
    chat.expect("which topic is this?")
    chat.close_stdin()
    assert chat.wait() == 0, chat.drain_stderr()
    assert chat.drain_stderr()[-1] == f"Session {ids['topic one']} saved."
    holder.close_stdin()
    assert holder.wait() == 0


def test_a_second_agent_assist_of_a_tab_does_not_take_the_tab_when_the_supervisor_dies(
    env: Env,
) -> None:
    """A second agent-assist of a tab is refused while the first is attached, and says hello
    again for a moment (the first may have been leaving). The supervisor killed meanwhile,
    its heir welcomed the second before the first re-attached: the first, the chat in use,
    was then refused in turn and its message went unanswered."""
    tab = env.terminal()
    first = env.spawn("--new", terminal=tab)
    first.send("before the crash")
    first.expect("before the crash")
    second = env.spawn("--new", terminal=tab)
    log = env.runtime / "supervisor.log"
    wait_for(lambda: f"agent-assist pid {second.process.pid} refused" in log.read_text())
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    assert second.wait() == 1
    assert "another agent-assist is attached for this tab" in second.drain_stderr()[-1]
    first.send("after the crash")
    assert "(turn 2 of this conversation" in first.expect("after the crash")
    first.close_stdin()
    assert first.wait() == 0


def test_a_new_session_said_yes_to_at_the_start_is_opened_after_the_supervisor_died(
    env: Env,
) -> None:
    """``--resume ID`` of a session live elsewhere asks "Start a new session instead?". The
    "y" came after the supervisor died: the attach done again asked the question again, and
    piped, the next line (a message) was read as its answer and stopped the run."""
    holder = env.spawn("--new", terminal=env.terminal())
    holder.send("the holder's first message")
    holder.expect("the holder's first message")
    (session_id,) = env.session_ids()
    chat = env.spawn("--resume", session_id, terminal=env.terminal())
    chat.expect("Start a new session instead? [Y/n]", stderr=True)
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    holder.send("after the crash")  # re-attached: the session is live again
    holder.expect("after the crash")
    chat.send("y")
    chat.send("a message of the new session")
    assert "(turn 1 of this conversation" in chat.expect("a message of the new session")
    chat.close_stdin()
    assert chat.wait() == 0, chat.drain_stderr()
    errors = chat.drain_stderr()
    assert sum("Start a new session instead?" in line for line in errors) == 1, errors
    assert errors[-1] != f"Session {session_id} saved."
    holder.close_stdin()
    assert holder.wait() == 0


def test_a_second_agent_assist_refused_by_the_heir_too_is_welcomed_once_the_first_left(
    env: Env,
) -> None:
    """The second agent-assist of a tab was refused by the supervisor, then by its heir
    (the first re-attached to it); the first then left, and the heir welcomed the second.
    It was refused all the same, with the first supervisor's line: only that one's
    welcome was taken, though the heir had seen the first attached and let it go."""
    tab = env.terminal()
    first = env.spawn("--new", terminal=tab)
    first.send("before the crash")
    first.expect("before the crash")
    heir = wait_for(env.heir_pid, what="the heir")
    wait_for(lambda: "model stack loaded" in (env.runtime / "supervisor.log").read_text())
    second = env.spawn("--new", terminal=tab)
    log = env.runtime / "supervisor.log"
    refused = (
        f"{{}} agent_assist.server INFO terminal {tab.pid}: "
        f"agent-assist pid {second.process.pid} refused"
    )
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    wait_for(lambda: refused.format(supervisor) in log.read_text(), what="the first refusal")
    os.kill(supervisor, signal.SIGKILL)
    first.send("after the crash")  # the first re-attaches to the heir
    first.expect("after the crash")
    wait_for(lambda: refused.format(heir) in log.read_text(), what="the heir's refusal")
    first.close_stdin()
    assert first.wait() == 0
    second.send("the second's message")
    assert "(turn 1 of this conversation" in second.expect("the second's message")
    second.close_stdin()
    assert second.wait() == 0, second.drain_stderr()


def test_a_secret_the_killed_supervisor_learned_stays_secret_after_the_heir_takes_over(
    env: Env,
) -> None:
    """H181's leftover: the values a chat's turns revealed as secret lived in the dead
    supervisor's memory only, so the heir saved that value in clear when it was said
    again alone. The chat keeps what its supervisor learned (in memory) and tells the
    heir at its re-attach, as it tells its shell's secret variables."""
    value = "Zq9Xv7Lm2Pk4Qw"
    client = env.spawn("--new", terminal=env.terminal())
    client.send(f"the password for staging is {value}")
    client.expect("(turn 1 of this conversation")
    (session_id,) = env.session_ids()
    first = env.supervisor_pid()
    heir = wait_for(env.heir_pid, what="the heir")
    assert first is not None and heir != first
    os.kill(first, signal.SIGKILL)
    client.send(f"deploy with {value} tonight")
    client.expect("the supervisor went away", stderr=True)
    client.expect("(turn 2 of this conversation")
    client.close_stdin()
    assert client.wait() == 0
    written = env.settled(session_id).read_text()
    assert "deploy with [REDACTED] tonight" in written
    assert value not in written
    for path in [*env.home.rglob("*"), *env.runtime.rglob("*")]:  # supervisor.log too
        if path.is_file():
            assert value.encode() not in path.read_bytes(), path
