"""A supervisor that a terminal starts and that is killed before it listens is started again."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time

from tests.e2e.harness import Env, running

ATTEMPTS = 5


def kill_first_supervisor(env: Env, killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first supervisor to write ``supervisor.pid``, at once (it listens only
    some milliseconds later)."""
    while not stop.is_set():
        pid = env.supervisor_pid()
        if pid is not None and running(pid) and env.ours(pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed.append(pid)
            return
        time.sleep(0.0002)


def killed_before_listening(env: Env, pid: int) -> bool:
    log = (env.runtime / "supervisor.log").read_text()
    return (
        f"supervisor {pid} starting" in log
        and f"{pid} agent_assist.supervisor INFO listening" not in log
    )


def test_a_supervisor_killed_before_it_listens_is_started_again(env: Env) -> None:
    tab = env.terminal()
    for attempt in range(ATTEMPTS):
        killed: list[int] = []
        stop = threading.Event()
        killer = threading.Thread(target=kill_first_supervisor, args=(env, killed, stop))
        killer.start()
        try:
            result = env.run("--new", input=f"attempt {attempt}\n", terminal=tab)
        finally:
            stop.set()
            killer.join()
        assert result.returncode == 0, result.stderr
        assert f'You said: "attempt {attempt}"' in result.stdout
        assert env.run("supervisor", "stop").returncode == 0
        if killed and killed_before_listening(env, killed[0]):
            return  # the case under test happened, and the chat went on
    raise AssertionError(f"no kill landed before the supervisor listened in {ATTEMPTS} tries")
