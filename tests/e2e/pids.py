"""Real pid reuse on demand: as root, ``/proc/sys/kernel/ns_last_pid`` chooses the next pid.

Writing ``P - 1`` there makes the next process created in this pid namespace
get ``P`` if it is free. Anything else on the machine that creates a process
or a thread meanwhile takes the number first, so a spawn is checked and tried
again. Where the file is missing or not writable (not Linux, not root),
``pid_reuse_unavailable`` says why, for the test to skip with that reason.
"""

from __future__ import annotations

import os
import subprocess
from functools import lru_cache
from pathlib import Path
from typing import Any

from tests.e2e.harness import DEFAULT_TIMEOUT, Terminal, running, wait_for

NS_LAST_PID = Path("/proc/sys/kernel/ns_last_pid")
ATTEMPTS = 200
RETAKE_WAIT_S = 10.0


class PidTaken(Exception):
    """Another process got the number first (the machine runs other work)."""


def pid_in_use(pid: int) -> bool:
    """Whether the number is held: by a process (running, or a zombie not yet reaped), or as
    the process group or session of others (a supervisor leads its own session, so its
    number stays taken until its heir is reaped too)."""
    return Path(f"/proc/{pid}").exists() or bool(holders(pid))


def wait_until_free(pid: int, timeout: float = DEFAULT_TIMEOUT) -> None:
    """Until ``pid`` is reaped (an orphan's zombie is reaped by init, here within about 1 s);
    PidTaken if it stays in use (another process got the number)."""
    try:
        wait_for(lambda: not pid_in_use(pid), timeout, f"pid {pid} to be free")
    except AssertionError as exc:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            stat = "no such process"
        raise PidTaken(f"{exc}: {stat}; held by {holders(pid)}") from None


def spawn_at_pid(pid: int, argv: list[str], **popen: Any) -> subprocess.Popen[Any]:
    """Start ``argv`` as process ``pid``; PidTaken if another process keeps the number.

    The counter is put back where it was afterwards, so the processes that follow (here
    and anywhere on the machine) get numbers as they would have: no other test sees its
    pids jump back to recently used ones or change their number of digits."""
    before = int(NS_LAST_PID.read_text())
    try:
        return _spawn_at_pid(pid, argv, **popen)
    finally:
        NS_LAST_PID.write_text(f"{before}\n")


def _spawn_at_pid(pid: int, argv: list[str], **popen: Any) -> subprocess.Popen[Any]:
    for _ in range(ATTEMPTS):
        # Whatever took the number first (a short-lived process, a thread) gives it back.
        wait_until_free(pid, RETAKE_WAIT_S)
        NS_LAST_PID.write_text(f"{pid - 1}\n")
        process: subprocess.Popen[Any] = subprocess.Popen(argv, **popen)
        if process.pid == pid:
            return process
        process.kill()  # another process or thread took the number first: try again
        process.communicate()
    raise AssertionError(
        f"could not start a process as pid {pid} in {ATTEMPTS} attempts "
        f"(group or session of: {holders(pid) or 'none'})"
    )


def holders(pid: int) -> list[str]:
    """The processes whose process group or session is ``pid``: they keep the number taken
    after its own process is gone."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2 :].split()
        if str(pid) in (fields[2], fields[3]):
            found.append(raw[: raw.rfind(")") + 1])
    return found


def free_pid() -> int:
    """A pid no process holds, far from the ones being handed out now."""
    last = int(NS_LAST_PID.read_text())
    maximum = int(Path("/proc/sys/kernel/pid_max").read_text())
    for candidate in range(last + 5000, last + 15000):
        pid = 300 + candidate % (maximum - 300)
        if not pid_in_use(pid):
            return pid
    raise AssertionError("no free pid found")


@lru_cache(maxsize=1)
def pid_reuse_unavailable() -> str | None:
    """Why a chosen pid cannot be had on this machine, or None when it can (tried once)."""
    if not NS_LAST_PID.exists():
        return f"{NS_LAST_PID} does not exist (not Linux, or a kernel without it)"
    if os.geteuid() != 0:
        return f"not root: only root may write {NS_LAST_PID} to choose the next pid"
    try:
        pid = free_pid()
        process = spawn_at_pid(pid, ["true"])
    except (OSError, AssertionError, PidTaken) as exc:
        return f"choosing the next pid through {NS_LAST_PID} failed here: {exc}"
    process.wait()
    return None


def kill_and_reap(pid: int) -> None:
    """SIGKILL ``pid`` (not our child) and wait until its number is free again."""
    if running(pid):
        os.kill(pid, 9)
    wait_until_free(pid)


def stranger(pid: int) -> subprocess.Popen[bytes]:
    """An unrelated process (no agent-assist environment) as ``pid``, once it is free."""
    wait_until_free(pid)
    return spawn_at_pid(pid, ["sleep", "3600"], env={"PATH": "/usr/bin:/bin"})


class ReusedTerminal(Terminal):
    """A new tab's shell that got the pid of a tab that closed."""

    def __init__(self, pid: int) -> None:
        self.process = stranger(pid)
        self.pid = pid
