"""``stopped``: the pids of the latest supervisors stopped on purpose (``supervisor stop``,
SIGTERM, SIGINT, SIGHUP), in the runtime directory.

A stop tells each attached terminal in a last ``closed`` frame, but a terminal that
reads nothing (stopped with Ctrl+Z) cannot be waited for: the supervisor saves its
session and exits without writing that frame. Continued, the terminal finds its
connection ended with no ``closed``, as after a crash; this file tells it the
supervisor it was attached to was stopped on purpose, so it ends as the others did
instead of starting a supervisor the user just stopped. Plain file reads and writes:
the chat imports this (no anyio).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

STOPPED_NAME = "stopped"
KEPT_PIDS = 8
"""The latest stops remembered: a terminal stopped across a few supervisors' lives."""


def _read(directory: Path) -> list[int]:
    try:
        with open(directory / STOPPED_NAME, "rb") as file:
            text = file.read(4096).decode("ascii", "replace")
    except OSError:
        return []
    return [int(word) for word in text.split() if word.isdigit() and len(word) <= 10]


def _write(directory: Path, pids: list[int]) -> None:
    path = directory / STOPPED_NAME
    temp = directory / f".{STOPPED_NAME}.tmp"
    with contextlib.suppress(FileNotFoundError):
        temp.unlink()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as file:
        file.write("".join(f"{pid}\n" for pid in pids[-KEPT_PIDS:]))
    os.replace(temp, path)


def mark_stopped(directory: Path, pid: int) -> None:
    """Record that supervisor ``pid`` is stopping on purpose (best effort: a terminal
    that cannot read it re-attaches, as after a crash)."""
    with contextlib.suppress(OSError):
        _write(directory, [p for p in _read(directory) if p != pid] + [pid])


def forget_stopped(directory: Path, pid: int) -> None:
    """A supervisor starting as ``pid`` (a pid used again) is not the stopped one."""
    pids = _read(directory)
    if pid in pids:
        with contextlib.suppress(OSError):
            _write(directory, [p for p in pids if p != pid])


def stopped_on_purpose(directory: Path, pid: int | None) -> bool:
    """Whether the supervisor ``pid`` (the one a terminal was attached to) was stopped on
    purpose."""
    return pid is not None and pid in _read(directory)
