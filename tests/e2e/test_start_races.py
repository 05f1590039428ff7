"""A supervisor that a terminal starts and that is killed before it listens is started again."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from tests.e2e.harness import Env, running, wait_for

STOP_BEFORE_LISTENING = '''
"""Test only: the first supervisor stops itself just before it listens."""
import os
import signal
import socket
import sys

_marker = os.environ.get("AA_TEST_STOPPED_SUPERVISOR")
_listen = socket.socket.listen


def _listen_after_stopping(self, *args):
    if _marker and not os.path.exists(_marker):
        with open(_marker + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.rename(_marker + ".tmp", _marker)
        os.kill(os.getpid(), signal.SIGSTOP)  # killed here by the test
    return _listen(self, *args)


if "supervisor" in sys.orig_argv and "run" in sys.orig_argv:
    socket.socket.listen = _listen_after_stopping
'''
"""A ``sitecustomize`` put on the supervisor's ``PYTHONPATH``: the first supervisor run with
it writes its pid to the marker file and stops itself at its first ``listen``, after its
pid file and its log's first line are written, so the test kills it at that very point
(a thread that polled for the pid file and killed at once landed there only now and
then: under load, never in five tries)."""


def stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (by a signal)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"


def killed_before_listening(env: Env, pid: int) -> bool:
    log = (env.runtime / "supervisor.log").read_text()
    return (
        f"supervisor {pid} starting" in log
        and f"{pid} agent_assist.supervisor INFO listening" not in log
    )


def test_a_supervisor_killed_before_it_listens_is_started_again(
    env: Env, tmp_path: Path
) -> None:
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(STOP_BEFORE_LISTENING)
    marker = tmp_path / "stopped.pid"
    chat = env.spawn(
        "--new", PYTHONPATH=str(hooks), AA_TEST_STOPPED_SUPERVISOR=str(marker)
    )
    pid = int(wait_for(lambda: marker.exists() and marker.read_text(), what="a stopped one"))
    wait_for(lambda: stopped(pid), what="it stopped itself")
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not running(pid), what="the stopped supervisor gone")
    chat.send("attempt after the kill")
    chat.expect('You said: "attempt after the kill"')
    chat.close_stdin()
    assert chat.wait() == 0, "\n".join(chat.drain_stderr())
    assert killed_before_listening(env, pid)
    assert env.supervisor_pid() not in (None, pid)
