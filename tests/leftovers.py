"""Processes a test started that are still running after it: found by the marks in their
environment (this run's token and the test's ``PYTEST_CURRENT_TEST``), stopped, named."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

RUN_MARK = "PYTEST_AGENT_ASSIST_RUN"
"""Set in this test process's environment (so every process a test starts inherits it):
a token of this run, so another run's processes (other test runs on the machine, with
the same test names) are never taken for ours. Not ``AGENT_ASSIST_*``: the harness keeps
those out of the environments it builds."""

AGENT_ASSIST = str(Path(sys.executable).with_name("agent-assist"))
GIVE_UP_AFTER_S = 30.0
"""How long SIGKILLs go on (in rounds, each over every process still found) before a
leftover is reported as unkillable; a process that keeps starting others dies in the first."""


def mark_this_run() -> None:
    """Give the processes started from now on this run's token (once per run)."""
    os.environ.setdefault(RUN_MARK, secrets.token_hex(8))


@dataclass(frozen=True)
class Leftover:
    pid: int
    argv: tuple[str, ...]
    environ: dict[str, str]

    @property
    def role(self) -> str:
        if "supervisor.heir" in self.argv:
            return "heir"
        if self.argv[-2:] == ("supervisor", "run"):
            return "supervisor"
        return "process"

    def __str__(self) -> str:
        runtime = self.environ.get("AGENT_ASSIST_RUNTIME_DIR", "(none)")
        return f"{self.role} {self.pid} ({' '.join(self.argv)}; runtime dir {runtime})"


def _environ(pid: int) -> dict[str, str] | None:
    """The environment ``pid`` was started with; None if gone, a zombie, or not ours."""
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return None
    pairs = (entry.partition(b"=") for entry in raw.split(b"\0") if entry)
    return {os.fsdecode(k): os.fsdecode(v) for k, _, v in pairs}


def _argv(pid: int) -> tuple[str, ...]:
    with contextlib.suppress(OSError):
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        return tuple(os.fsdecode(arg) for arg in raw.split(b"\0") if arg)
    return ()


def started_by(test: str) -> list[Leftover]:
    """The running processes this run's ``test`` (a node id) started, directly or not."""
    token = os.environ.get(RUN_MARK)
    if token is None:
        return []
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        # The command line first: a process whose memory is gone (exiting) has none and
        # runs no more code; read second, it was found empty once (see harness.processes).
        argv = _argv(int(entry))
        environ = _environ(int(entry))
        if not argv or not environ or environ.get(RUN_MARK) != token:
            continue
        if environ.get("PYTEST_CURRENT_TEST", "").startswith(f"{test} ("):
            found.append(Leftover(int(entry), argv, environ))
    return found


def stop(leftovers: list[Leftover], test: str) -> list[Leftover]:
    """Stop the leftovers: their supervisors with ``supervisor stop`` in their own
    environment (which ends the heirs too), then SIGKILL whatever of the test still runs;
    the ones that could not be killed."""
    for runtime, environ in {
        left.environ.get("AGENT_ASSIST_RUNTIME_DIR"): left.environ
        for left in leftovers
        if left.role == "supervisor"
    }.items():
        if runtime is not None:
            with contextlib.suppress(subprocess.SubprocessError, OSError):
                subprocess.run(
                    [AGENT_ASSIST, "supervisor", "stop"],
                    env=environ,
                    capture_output=True,
                    timeout=30,
                    check=False,
                )
    deadline = time.monotonic() + GIVE_UP_AFTER_S
    while time.monotonic() < deadline:
        still = started_by(test)
        if not still:
            return []
        for left in still:
            with contextlib.suppress(ProcessLookupError):
                os.kill(left.pid, signal.SIGKILL)
    return started_by(test)
