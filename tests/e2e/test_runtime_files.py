"""A running supervisor keeps its place in the runtime directory: a socket, lock or pid
file removed by a temp-dir cleaner or by hand is put back, and never two supervisors."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

from tests.e2e.harness import Env, running, wait_for


def status(env: Env) -> dict[str, object]:
    result = env.run("supervisor", "status", "--json")
    return dict(json.loads(result.stdout))


def test_a_removed_socket_is_made_again_and_the_next_chat_reaches_the_same_supervisor(
    env: Env,
) -> None:
    """Before, the supervisor ran on unreachable, and every chat waited 20 s for a start
    its lock refused, then failed."""
    assert env.run("supervisor", "start").returncode == 0
    pid = env.supervisor_pid()
    (env.runtime / "supervisor.sock").unlink()
    wait_for(lambda: (env.runtime / "supervisor.sock").exists(), what="the socket made again")
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert status(env)["pid"] == pid
    log = (env.runtime / "supervisor.log").read_text()
    assert "was removed or replaced; listening again" in log


def test_a_removed_runtime_directory_is_made_again_with_its_lock_and_pid_file(
    env: Env,
) -> None:
    assert env.run("supervisor", "start").returncode == 0
    pid = env.supervisor_pid()
    assert pid is not None
    shutil.rmtree(env.runtime)
    wait_for(
        lambda: (env.runtime / "supervisor.sock").exists()
        and (env.runtime / "supervisor.pid").exists(),
        what="the socket and pid file made again",
    )
    assert (env.runtime / "supervisor.pid").read_text().strip() == str(pid)
    assert oct(env.runtime.stat().st_mode & 0o777) == "0o700"
    lock = os.open(env.runtime / "supervisor.lock", os.O_RDWR)
    try:  # held again: a second supervisor cannot take it
        wait_for(lambda: _held(lock), what="the lock taken again")
    finally:
        os.close(lock)
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert status(env)["pid"] == pid
    log = (env.runtime / "supervisor.log").read_text()  # written at its path again
    assert "supervisor.lock was removed or replaced; took it again" in log


def test_a_supervisor_whose_lock_another_took_stops_and_the_other_serves(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    first = env.supervisor_pid()
    assert first is not None
    (env.runtime / "supervisor.lock").unlink()
    (env.runtime / "supervisor.sock").unlink()
    # What a second supervisor does at start, before the first looks again.
    lock = os.open(env.runtime / "supervisor.lock", os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        wait_for(lambda: not running(first), what="the first supervisor stopping")
    finally:
        os.close(lock)
    assert "another supervisor holds" in (env.runtime / "supervisor.log").read_text()
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr


def _held(fd: int) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    fcntl.flock(fd, fcntl.LOCK_UN)
    return False


def test_a_second_runtime_directory_over_the_same_home_starts_no_second_supervisor(
    env: Env,
) -> None:
    """Two supervisors over one home (XDG_RUNTIME_DIR set on a desktop, unset over ssh)
    each granted the same session to a terminal: one's acknowledged turns were lost."""
    assert env.run("supervisor", "start").returncode == 0
    other = env.runtime.parent / "run-elsewhere"
    chat = env.run("--new", input="hello\n", AGENT_ASSIST_RUNTIME_DIR=str(other))
    assert chat.returncode == 1
    (line,) = chat.stderr.splitlines()
    assert line == (
        f"error: another supervisor (runtime directory {env.runtime}) keeps the sessions in "
        f"{env.home.resolve()}; set AGENT_ASSIST_RUNTIME_DIR={env.runtime} to use it"
    )
    assert env.session_ids() == []
    prune = env.run("sessions", "prune", "--older-than", "0", AGENT_ASSIST_RUNTIME_DIR=str(other))
    assert prune.returncode == 1
    assert "another supervisor (runtime directory" in prune.stderr


def test_a_removed_home_lock_leaves_one_supervisor_serving_the_home(env: Env) -> None:
    """With <home>/.supervisor.lock removed, a second runtime directory started a second
    supervisor over the home, and both stayed: a terminal of each was given one session."""
    assert env.run("supervisor", "start").returncode == 0
    first = env.supervisor_pid()
    assert first is not None
    other = env.runtime.parent / "run-elsewhere"
    (env.home.resolve() / ".supervisor.lock").unlink()
    env.run("supervisor", "start", AGENT_ASSIST_RUNTIME_DIR=str(other))  # may win the race
    second_pid = other / "supervisor.pid"

    def serving() -> list[int]:
        pids = [first] if running(first) else []
        if second_pid.exists():
            with contextlib.suppress(ValueError):
                pid = int(second_pid.read_text())
                pids += [pid] if running(pid) else []
        return pids

    try:
        wait_for(lambda: len(serving()) == 1, what="one supervisor left over the home")
        time.sleep(1.5)  # a second look: the survivor keeps it (outside processes)
        assert len(serving()) == 1
    finally:
        env.run("supervisor", "stop", AGENT_ASSIST_RUNTIME_DIR=str(other))


def test_from_a_second_runtime_directory_a_live_session_is_not_shown_orphaned_untold(
    env: Env,
) -> None:
    """H73's find: from a shell whose runtime directory is not the running supervisor's
    (XDG_RUNTIME_DIR set in one, unset in another), ``sessions`` listed a live session as
    orphaned, and ``prune --dry-run`` said it would remove it, with no word of the other
    supervisor; ``prune`` itself then refused (it knows of it)."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect("hello")
    (session_id,) = env.session_ids()
    other = str(env.runtime.parent / "run-elsewhere")
    told = (
        f"another supervisor (runtime directory {env.runtime}) keeps the sessions in "
        f"{env.home.resolve()}; set AGENT_ASSIST_RUNTIME_DIR={env.runtime} to use it"
    )
    for flags in ((), ("--json",), ("--all",)):
        listed = env.run("sessions", *flags, AGENT_ASSIST_RUNTIME_DIR=other)
        assert listed.returncode == 0, listed.stderr
        assert f"warning: {told}; listed from the files (none as live)" in listed.stderr
    shown = env.run("sessions", "show", session_id, AGENT_ASSIST_RUNTIME_DIR=other)
    assert shown.returncode == 0, shown.stderr
    assert f"warning: {told}" in shown.stderr
    dry = env.run(
        "sessions", "prune", "--older-than", "0", "--dry-run", AGENT_ASSIST_RUNTIME_DIR=other
    )
    assert (dry.returncode, dry.stderr) == (1, f"error: {told}\n")
    assert "Would remove" not in dry.stdout
    client.close_stdin()
    assert client.wait() == 0
    assert env.session_ids() == [session_id]


def _log_about_to_rotate(runtime: Path) -> None:
    """``supervisor.log`` a line short of its rotation size (1 MiB)."""
    from supervisor.daemon import LOG_BYTES

    runtime.mkdir(mode=0o700, exist_ok=True)
    line = b"x" * 99 + b"\n"
    (runtime / "supervisor.log").write_bytes(line * ((LOG_BYTES - 60) // len(line)))


def test_a_failed_start_is_told_even_when_the_log_rotates_as_the_supervisor_starts(
    env: Env,
) -> None:
    """A supervisor started in the background writes its ``error:`` line to its stderr, the
    log; its first log line rotated the log, and the line went to ``supervisor.log.1``:
    the terminal, which reads it back from ``supervisor.log``, said only "the supervisor
    did not start; see ...supervisor.log"."""
    assert env.run("supervisor", "start").returncode == 0
    other = env.runtime.parent / "run-elsewhere"
    _log_about_to_rotate(other)
    chat = env.run("--new", input="hello\n", AGENT_ASSIST_RUNTIME_DIR=str(other))
    assert chat.returncode == 1
    (line,) = chat.stderr.splitlines()
    assert line.startswith("error: another supervisor (runtime directory"), line
    assert (other / "supervisor.log.1").exists()  # the log did rotate


def test_an_heir_says_it_takes_over_in_the_log_as_it_is_after_a_rotation(env: Env) -> None:
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    first = env.supervisor_pid()
    heir = wait_for(env.heir_pid, what="the heir")
    assert first is not None
    _log_about_to_rotate(env.runtime)
    (env.runtime / "supervisor.sock").unlink()  # the supervisor logs it: the log rotates
    wait_for(lambda: (env.runtime / "supervisor.log.1").exists(), what="the log rotated")
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: env.supervisor_pid() == heir, what="the heir to take over")
    said = f"heir {heir} takes over from supervisor {first}"
    wait_for(lambda: said in (env.runtime / "supervisor.log").read_text(), what=said)


def test_the_heirs_takeover_line_has_the_time_and_level_of_every_log_line(env: Env) -> None:
    """H108's find: the line was printed bare (`heir 4242 takes over from supervisor
    4241`), the only one of the log without its time, pid, logger and level."""
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    first = env.supervisor_pid()
    heir = wait_for(env.heir_pid, what="the heir")
    assert first is not None
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: env.supervisor_pid() == heir, what="the heir to take over")
    said = f"heir {heir} takes over from supervisor {first}"
    log = env.runtime / "supervisor.log"
    wait_for(lambda: said in log.read_text(), what=said)
    (line,) = [x for x in log.read_text().splitlines() if said in x]
    stamp = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3}"
    assert re.fullmatch(rf"{stamp} {heir} agent_assist.supervisor INFO {said}", line), line


def test_a_relative_runtime_directory_is_named_as_the_absolute_one_it_means(env: Env) -> None:
    """``AGENT_ASSIST_RUNTIME_DIR=rel``: the supervisor started in one directory was "not
    running" from another, whose chat was refused with "another supervisor (runtime
    directory rel) ...; set AGENT_ASSIST_RUNTIME_DIR=rel to use it", the value it had."""
    first, second = env.base / "first", env.base / "second"
    first.mkdir()
    second.mkdir()

    def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return env.run(
            *args, input="hello\n", terminal=env.terminal(), cwd=cwd, AGENT_ASSIST_RUNTIME_DIR="rel"
        )

    try:
        assert run(first, "supervisor", "start").returncode == 0
        shown = run(first, "supervisor", "status", "--json")
        assert json.loads(shown.stdout)["socket"] == str(first / "rel" / "supervisor.sock")
        refused = run(second, "--new")
        assert refused.returncode == 1
        assert f"set AGENT_ASSIST_RUNTIME_DIR={first / 'rel'} to use it" in refused.stderr
    finally:
        run(first, "supervisor", "stop")


def test_the_supervisor_holds_no_working_directory_and_a_relative_home_is_the_starters(
    env: Env,
) -> None:
    """A helper's find (H75): a supervisor started in a directory kept it as its working
    directory (and so did its heir): a workspace's mount could not be unmounted while it
    ran. It works in ``/``; a relative AGENT_ASSIST_HOME still means the directory it was
    started from, as it does for the terminal that started it."""
    starter = env.base / "starter"
    starter.mkdir()
    chat = env.run(
        "--new",
        "--workspace",
        str(env.workspace),
        input="hello\n",
        terminal=env.terminal(),
        cwd=starter,
        AGENT_ASSIST_HOME="relhome",
    )
    assert chat.returncode == 0, chat.stderr
    pid = env.supervisor_pid()
    assert pid is not None
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    saved = list((starter / "relhome" / "projects").glob("*/sessions/*.json"))
    assert [p for p in saved if not p.name.startswith("active_")], saved
