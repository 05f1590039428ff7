"""``headers.index``: a project's session headers, cached on disk for cold listings.

A listing needs each session's header (ids, times, summary, message and turn counts),
not its messages, but the header sits in the same JSON document as the
messages, so reading it means parsing them all: five times the cost of
reading the bytes. The index keeps, for each session file, the header read
from it and the file's identity (inode, size, modification and change times,
as ``SessionManager``'s in-memory cache does). It is never trusted over the
files: an entry is used only while a fresh ``stat`` of its file gives the same
identity, and a file that changed, appeared or has no entry is read in full
(and the index rewritten). A missing, unreadable or malformed index (a fifo,
a directory, a symlink) is simply rebuilt. Its entries are scrubbed again by
the reader, whose known secrets may differ from the writer's. It is a cache,
so it is written atomically (``atomic_write``, mode 0600) but without fsync:
after a crash it is at worst old (entries fail the identity check) or
unreadable (rebuilt). Only the manager of a writable directory writes it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
from collections.abc import Callable, Iterator, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from session.atomic import atomic_write, clear_stale_temps
from session.models import SessionHeader, is_session_id

INDEX_NAME = "headers.index"
INDEX_VERSION = 5
"""2: each header has its ``turns``. 3: a file whose messages are of a shape this version
cannot read has none (``session/message_shapes.py``): an entry of 2 may be of such a file,
listed as a session of 0 turns and offered. 4: no ``updated_at`` is in the future (one
of 3 may be: see ``manager._not_in_the_future``)."""
MAX_INDEX_BYTES = 64 * 1024 * 1024

FileIdentity = tuple[int, int, int, int]
Cached = tuple[FileIdentity, SessionHeader]


def _read_bytes(path: Path) -> bytes | None:
    """The index's bytes, or None if it is missing, unreadable, not a regular file (a fifo
    is never waited on) or too large."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_INDEX_BYTES:
            return None
        with os.fdopen(os.dup(fd), "rb") as file:
            return file.read(MAX_INDEX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _text(value: Any) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError("not a string")


def _entry(session_id: str, value: Any) -> Cached:
    identity, header = value
    ino, size, mtime, ctime = identity
    if not all(type(n) is int for n in (ino, size, mtime, ctime)):
        raise TypeError("identity is not four integers")
    created = datetime.fromisoformat(header["created_at"])
    updated = datetime.fromisoformat(header["updated_at"])
    if created.tzinfo is None or updated.tzinfo is None:
        raise ValueError("naive time")
    messages, turns = header["messages"], header["turns"]
    if type(messages) is not int or messages < 0 or type(turns) is not int or turns < 0:
        raise ValueError("bad message or turn count")
    return (ino, size, mtime, ctime), SessionHeader(
        session_id=session_id,
        created_at=created,
        updated_at=updated,
        summary=_text(header["summary"]),
        compacted_history_summary=_text(header["compacted_history_summary"]),
        messages=messages,
        turns=turns,
        unanswered=_text(header["unanswered"]),
    )


def read_index(directory: Path) -> dict[str, Cached]:
    """The entries of ``directory``'s index that are well formed (none if it is unusable)."""
    data = _read_bytes(directory / INDEX_NAME)
    if data is None:
        return {}
    try:
        raw = orjson.loads(data)
        if raw.get("version") != INDEX_VERSION:
            return {}
        entries = raw["sessions"]
        if not isinstance(entries, dict):
            return {}
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
        return {}
    found: dict[str, Cached] = {}
    for session_id, value in entries.items():
        if not is_session_id(session_id):
            continue
        with contextlib.suppress(ValueError, TypeError, KeyError, AttributeError):
            found[session_id] = _entry(session_id, value)
    return found


def _header_json(header: SessionHeader) -> dict[str, object]:
    return {
        "created_at": header.created_at.isoformat(),
        "updated_at": header.updated_at.isoformat(),
        "summary": header.summary,
        "compacted_history_summary": header.compacted_history_summary,
        "messages": header.messages,
        "turns": header.turns,
        "unanswered": header.unanswered,
    }


def write_index(directory: Path, headers: Mapping[str, Cached]) -> None:
    """Replace the index with ``headers`` (atomically; best effort: a failure is ignored)."""
    data = orjson.dumps(
        {
            "version": INDEX_VERSION,
            "sessions": {
                session_id: [list(identity), _header_json(header)]
                for session_id, (identity, header) in headers.items()
                if header.note is None
            },
        }
    )
    temp = directory / f".{INDEX_NAME}.{os.getpid()}.tmp"
    with contextlib.suppress(OSError):
        atomic_write(directory / INDEX_NAME, data, durable=False, tmp=temp)
    clear_stale_temps(directory, _TEMP_NAMES)  # of writers killed mid-write


_TEMP_NAMES = re.compile(rf"\.{re.escape(INDEX_NAME)}\.[0-9]+\.tmp")


COPIES_NAME = "copies.index"
"""Beside the recovery copies of a project (``session/catalog.py``): what a listing needs
of each (its turns and its ``updated_at``), recorded by the copy's writer, so that no
listing parses a copy of many megabytes. Never trusted over the file: an entry is used
only while a ``stat`` of its copy gives the identity recorded, and a listing of a writable
catalog drops those that no longer match (``catalog.drop_stale_records``). Every update
reads and writes it under ``COPIES_LOCK_NAME``."""
COPIES_VERSION = 1
CopyRecord = tuple[FileIdentity, int, datetime]
"""A copy's identity when recorded, its turns and its ``updated_at``."""


def _copy_record(value: Any) -> CopyRecord:
    identity, turns, updated = value
    ino, size, mtime, ctime = identity
    if not all(type(n) is int for n in (ino, size, mtime, ctime, turns)) or turns < 0:
        raise TypeError("identity or turns not integers")
    when = datetime.fromisoformat(updated)
    if when.tzinfo is None:
        raise ValueError("naive time")
    return (ino, size, mtime, ctime), turns, when


def read_copies(place: Path) -> dict[str, CopyRecord]:
    """The well-formed records of ``place``'s copies, by file name (none if unusable)."""
    data = _read_bytes(place / COPIES_NAME)
    if data is None:
        return {}
    try:
        raw = orjson.loads(data)
        if raw.get("version") != COPIES_VERSION or not isinstance(raw["copies"], dict):
            return {}
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError):
        return {}
    found: dict[str, CopyRecord] = {}
    for name, value in raw["copies"].items():
        with contextlib.suppress(ValueError, TypeError):
            found[name] = _copy_record(value)
    return found


COPIES_LOCK_NAME = ".copies.index.lock"
"""Beside the index, ``flock``ed by each update of it: two writers (a supervisor and its
heir, two supervisors of one home) each read, change and write the whole index, and the
one that wrote last dropped the other's record (H171). Never removed: a lock file
unlinked while another writer waits on it would let a third lock a new one."""


@contextlib.contextmanager
def _copies_locked(place: Path) -> Iterator[None]:
    """Hold ``place``'s copies lock (OSError if it cannot be opened: the caller's best
    effort gives up; a writer killed while holding it releases it)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    fd = os.open(place / COPIES_LOCK_NAME, flags, 0o600)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(place / COPIES_LOCK_NAME))
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # releases the lock


def _write_copies(place: Path, records: Mapping[str, CopyRecord]) -> None:
    data = orjson.dumps(
        {
            "version": COPIES_VERSION,
            "copies": {n: [list(i), t, u.isoformat()] for n, (i, t, u) in records.items()},
        }
    )
    temp = place / f".{COPIES_NAME}.{os.getpid()}.tmp"
    atomic_write(place / COPIES_NAME, data, durable=False, tmp=temp)


def record_copy(place: Path, name: str, record: CopyRecord) -> None:
    """Add ``name``'s record to ``place``'s copies index, dropping those of copies gone
    (best effort, as ``write_index``: at worst a listing reads the copy)."""

    def change(records: dict[str, CopyRecord]) -> dict[str, CopyRecord]:
        present = set(os.listdir(place))  # under the lock: a copy written meanwhile is in
        return {**{n: r for n, r in records.items() if n in present and n != name}, name: record}

    update_copies(place, change)


def update_copies(
    place: Path, change: Callable[[dict[str, CopyRecord]], dict[str, CopyRecord]]
) -> None:
    """Replace ``place``'s copies index with ``change`` of its records, read and written
    under its lock (best effort: an OSError leaves it as it was; unchanged: not written)."""
    with contextlib.suppress(OSError), _copies_locked(place):
        records = read_copies(place)
        changed = change(dict(records))
        if changed != records:
            _write_copies(place, changed)
    clear_stale_temps(place, _COPIES_TEMP_NAMES)


_COPIES_TEMP_NAMES = re.compile(rf"\.{re.escape(COPIES_NAME)}\.[0-9]+\.tmp")
