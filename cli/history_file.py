"""The project's input history on disk (``prompt_history``), shared by every chat of the
project: each entry appended in one write and synced, each rewrite atomic, both under
``prompt_history.lock`` (two chats rewriting and appending at once lost a line: the
rewrite read the file, another chat appended, and the rename dropped what it added).

Imported when the prompt is made (it loads prompt_toolkit)."""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit.history import FileHistory

if TYPE_CHECKING:
    from cli.console import HistoryScrubber

LOCK_WAIT_S = 2.0
"""How long a chat waits for another one's write of the history: a chat stopped while it
held the lock (``kill -STOP``) must not hang this one's prompt; past it the entry is
written without the lock, as before there was one."""
_LOCK_POLL_S = 0.005


class ScrubbedHistory(FileHistory):
    """Input history on disk (0600), scrubbed as the session is (``scrubber``)."""

    def __init__(self, path: Path, scrubber: HistoryScrubber) -> None:
        super().__init__(str(path))
        self.path = path
        self.scrubber = scrubber

    def store_string(self, string: str) -> None:
        line = self.scrubber.line(string)
        with history_lock(self.path):
            if self.scrubber.found_earlier or self.scrubber.pending:
                self.scrubber.scrub_file(self.path)
            append_entry(self.path, line)


def lock_path(path: Path) -> Path:
    """The lock beside the history file: ``prompt_history.lock``."""
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def history_lock(path: Path) -> Iterator[None]:
    """Hold the history's lock (flock on ``lock_path``, 0600) for a write of it, waiting
    at most ``LOCK_WAIT_S``; a lock that cannot be opened or taken in time is gone without
    (the entry still written)."""
    try:
        fd = os.open(
            lock_path(path), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o600
        )
    except OSError:
        yield
        return
    try:
        _take(fd)
        yield
    finally:
        os.close(fd)  # releases the lock


def _take(fd: int) -> None:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return
            time.sleep(_LOCK_POLL_S)


def entry_bytes(string: str, now: datetime.datetime) -> bytes:
    """One history entry as prompt_toolkit's ``FileHistory`` writes it (a ``#`` line with
    the time, then each line of the entry after ``+``), as one block of bytes."""
    lines = "".join(f"+{line}\n" for line in string.split("\n"))
    return f"\n# {now}\n{lines}".encode("utf-8", errors="replace")


def append_entry(path: Path, string: str) -> None:
    """Append ``string`` to the history in one ``write`` (O_APPEND: never interleaved with
    another chat's entry, which prompt_toolkit's buffered writes of over 8 KiB could be)
    and sync it; a file that cannot be written is left as it is (the prompt goes on)."""
    data = entry_bytes(string, datetime.datetime.now())
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
    except OSError:
        return
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
