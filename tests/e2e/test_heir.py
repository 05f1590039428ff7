"""The supervisor's heir: takes over at once when the supervisor is killed, never after a stop."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

from tests.e2e.harness import Env, running, wait_for


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


def test_an_heir_is_forked_only_when_no_import_is_half_done(tmp_path: Path) -> None:
    (tmp_path / "slow_module.py").write_text(
        "import time\ntime.sleep(0.3)\nDONE = True\n", encoding="utf-8"
    )
    program = textwrap.dedent(
        """
        import os, sys, threading, time
        sys.path.insert(0, sys.argv[1])
        from supervisor.heir import fork_when_no_import_runs
        threading.Thread(target=__import__, args=("slow_module",)).start()
        time.sleep(0.05)  # the import is under way
        pid = fork_when_no_import_runs()
        if pid == 0:
            os._exit(0 if getattr(sys.modules.get("slow_module"), "DONE", False) else 1)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", program, str(tmp_path)], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "0"
