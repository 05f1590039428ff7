"""Process identity: a pid's start time, so a reused pid is not taken for the old process."""

from __future__ import annotations

import os
import subprocess
import time
from functools import lru_cache
from pathlib import Path

PID_MAX = 2**31 - 1
"""No process id is larger (``pid_t`` is a signed 32-bit integer); a larger number is no process."""
# /proc gives 10 ms resolution; ps only whole seconds.
_PROC_TOLERANCE_S = 0.05
_PS_TOLERANCE_S = 1.0


@lru_cache(maxsize=1)
def _boot_time() -> float | None:
    try:
        for line in Path("/proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except OSError:
        return None
    return None


def _proc_stat_fields(pid: int) -> list[str] | None:
    """The fields of ``/proc/<pid>/stat`` after the command name (state first)."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return raw[raw.rfind(")") + 2 :].split()


def _ps_start_time(pid: int) -> float | None:
    """Portable fallback: ``ps -o lstart=``, one-second resolution."""
    try:
        out = subprocess.run(
            ["ps", "-o", "lstart=", "-p", str(pid)],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        ).stdout.strip()
        return time.mktime(time.strptime(out, "%a %b %d %H:%M:%S %Y")) if out else None
    except (OSError, ValueError, subprocess.SubprocessError):
        return None


def process_start_time(pid: int) -> float | None:
    """When ``pid`` started, in seconds since the epoch, or None if unknown or gone."""
    if not 0 < pid <= PID_MAX:
        return None
    fields = _proc_stat_fields(pid)
    boot = _boot_time()
    if fields is not None and boot is not None:
        ticks = int(fields[19])
        return round(boot + ticks / os.sysconf("SC_CLK_TCK"), 2)
    if Path("/proc/self/stat").exists():
        return None
    return _ps_start_time(pid)


def process_alive(pid: int, start_time: float | None = None) -> bool:
    """Whether ``pid`` runs (not a zombie) and, if ``start_time`` is given, is that same process."""
    if not 0 < pid <= PID_MAX:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    fields = _proc_stat_fields(pid)
    if fields is not None and fields[0] in ("Z", "X"):
        return False
    if start_time is None:
        return True
    current = process_start_time(pid)
    tolerance = _PROC_TOLERANCE_S if fields is not None else _PS_TOLERANCE_S
    return current is None or abs(current - start_time) < tolerance


REUSED_AFTER_S = 1.0
"""A process at a file's pid that started this long after the file was written is another
process than the one the file was written for."""


def started_after(pid: int, written: float) -> bool:
    """Whether the process running at ``pid`` (one is) started after a file naming it was
    written at ``written`` (seconds since the epoch): its pid was reused since."""
    started = process_start_time(pid)
    return started is not None and started > written + REUSED_AFTER_S


def may_still_run(pid: int, written: float) -> bool:
    """Whether the terminal ``pid`` for which a file was written at ``written`` may still
    run: a process runs at ``pid`` that had started by then (as far as can be told)."""
    return process_alive(pid) and not started_after(pid, written)
