"""One supervisor per state root: ``<root>/.supervisor.lock``, held (flock) for the
supervisor's life, names the runtime directory of the one holding it.

Two runtime directories (``XDG_RUNTIME_DIR`` set on a desktop, unset over ssh) made
two supervisors over one home, and each granted the same session to a terminal of
its own: their writes overwrote each other's turns. Standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
from pathlib import Path

from supervisor.runtime import HOME_HELD_EXIT

__all__ = ["HOME_HELD_EXIT", "HomeHeld", "home_holder", "take_home_lock"]

log = logging.getLogger("agent_assist.supervisor")
HOME_LOCK_NAME = ".supervisor.lock"


class HomeHeld(Exception):
    """Another supervisor, with another runtime directory, keeps sessions in this root."""

    def __init__(self, root: Path, holder: str) -> None:
        where = f"runtime directory {holder}" if holder else "another runtime directory"
        hint = f"; set AGENT_ASSIST_RUNTIME_DIR={holder} to use it" if holder else ""
        super().__init__(f"another supervisor ({where}) keeps the sessions in {root}{hint}")
        self.holder = holder


def take_home_lock(root: Path, runtime_dir: Path) -> int | None:
    """Hold ``root``'s supervisor lock, writing ``runtime_dir`` in it; its descriptor, or
    None when the root cannot hold one (not a directory, read-only: each operation on
    it then says so). HomeHeld if another supervisor holds it."""
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(root / HOME_LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        log.warning("no lock in the state root %s (%s)", root, exc.strerror or exc)
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder(fd)
        os.close(fd)
        raise HomeHeld(root, holder) from None
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.pwrite(fd, os.fsencode(runtime_dir), 0)
    return fd


def home_holder(root: Path) -> str | None:
    """The runtime directory of the supervisor holding ``root``'s lock, or None if none
    holds it (for offline changes: ``sessions rm`` and ``prune``)."""
    try:
        fd = os.open(root / HOME_LOCK_NAME, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return _holder(fd) or "?"
    finally:
        os.close(fd)
    return None


def _holder(fd: int, tries: int = 20) -> str:
    """The runtime directory the holder wrote, waiting a little for a holder that has
    just taken the lock and not written it yet."""
    for _ in range(tries):
        if holder := _read(fd):
            return holder
        time.sleep(0.01)
    return ""


def _read(fd: int) -> str:
    try:
        return os.fsdecode(os.pread(fd, 4096, 0)).strip()
    except OSError:
        return ""
