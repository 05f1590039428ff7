"""What a checkpoint entry's writer knew of it: whether it is as scrubbed (a reader scrubs
only entries that may not be: the scrub of a 70 MB entry took 3.6 s at each read), and
what its line lists that its head lacks (its turns, its last request's first words).

``checkpoints/scrubbed.index`` records each entry's SHA-256 as it was written
scrubbed, with the digest of the rules it was scrubbed by (the source of
``session/redaction.py`` and ``session/manager.py``). An entry whose bytes have that
digest now, under the same rules, holds what a scrub would leave as it is, but for the
secret values learned since: those are looked for in its bytes, as orjson wrote them
(``encoded_forms``). The record names no secret, and is
never trusted over the bytes: bytes written by anyone else, or changed by one bit, do
not match it. A record lost or unreadable costs a full scrub, nothing else.

The listing's facts are known by the file's identity (``lstat``), as ``headers.index``
knows a session's header: no secret rides on them (the words are scrubbed again as they
are listed), and an entry changed since is read whole.

Recovery copies (``recovered/``) are known the same way, by a ``scrubbed.index`` beside
their ``copies.index``: each copy's SHA-256 as written scrubbed, keyed by its name.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections import deque
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

import orjson

from session.atomic import atomic_write
from session.checkpoints import FIRST_WORDS, Checkpoint
from session.redaction import encoded_forms, replace_known_bytes

INDEX_NAME = "scrubbed.index"
MAX_INDEX_BYTES = 16 << 20
"""Some 14,000 entries' records; past it the index is read as empty (a cache: each entry
is then read whole until it is written again)."""
_RULES = ("redaction.py", "manager.py")
Record = dict[str, object]
LAST_USER_CHARS = 1024
"""What is kept of the last request past the words its line shows: a secret longer than
that, which could start in the words and end past what is kept, makes the entry read
whole (``listed_facts``)."""
_WORD_RE = re.compile(r"\S+")
"""A word as ``first_words`` splits them (``str.split``)."""


@dataclass(frozen=True)
class ListedFacts:
    """What an entry's line lists that its head does not hold, with its format."""

    format: int
    turns: int
    last_user: str
    """The text the line's words are taken from, up to ``LAST_USER_CHARS`` past its first
    ``FIRST_WORDS`` words (the words are taken as it is listed, after its scrub: taken
    first, they could end inside a secret learned since, whose part no scrub finds)."""

    @classmethod
    def of(cls, checkpoint: Checkpoint) -> ListedFacts:
        text = checkpoint.last_user_text
        words = deque(islice(_WORD_RE.finditer(text), FIRST_WORDS), maxlen=1)
        kept = (words[0].end() if words else 0) + LAST_USER_CHARS
        return cls(checkpoint.format, checkpoint.turns, text[:kept])


def _rules_digest() -> str | None:
    """The digest of the scrub's rules as this code has them; None where its source
    cannot be read (then no record is trusted or written). Taken as the module is
    imported, with the code it describes: an upgrade in place while a supervisor runs
    does not make its records claim the new rules."""
    digest = hashlib.sha256()
    try:
        for name in _RULES:
            digest.update((Path(__file__).parent / name).read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


RULES_DIGEST = _rules_digest()


def rules_digest() -> str | None:
    return RULES_DIGEST


def entry_digest(entry: bytes | Iterable[bytes]) -> str:
    digest = hashlib.new("sha256")  # not ``hashlib.sha256``: what counts files hashed
    for part in (entry,) if isinstance(entry, bytes) else entry:
        digest.update(part)
    return digest.hexdigest()


def _records(directory: Path) -> dict[str, Record]:
    """The index's records (``<session>/<entry name>`` -> record) made under this code's
    rules; none if it is missing, unreadable, or of other rules."""
    try:
        with open(directory / INDEX_NAME, "rb") as handle:
            raw = orjson.loads(handle.read(MAX_INDEX_BYTES + 1))
    except (OSError, orjson.JSONDecodeError):
        return {}
    if not isinstance(raw, dict) or raw.get("rules") != rules_digest():
        return {}
    entries = raw.get("entries")
    if not isinstance(entries, dict):
        return {}
    return {k: v for k, v in entries.items() if isinstance(v, dict)}


def _record(entry: Path) -> Record | None:
    return _records(entry.parent.parent).get(_key(entry)) if rules_digest() else None


def _as_written(record: Record | None, data: bytes, known_secrets: Collection[str]) -> bool:
    if record is None or record.get("digest") != entry_digest(data):
        return False
    return not any(needle in data for needle in encoded_forms(known_secrets))


def scrubbed_as_written(entry: Path, data: bytes, known_secrets: Collection[str]) -> bool:
    """Whether the bytes ``data`` of the entry at ``entry`` are those recorded as written
    scrubbed under these rules, and hold none of ``known_secrets``: a scrub would change
    nothing."""
    return _as_written(_record(entry), data, known_secrets)


def copy_scrubbed_as_written(copy: Path, data: bytes, known_secrets: Collection[str]) -> bool:
    """``scrubbed_as_written`` of the recovery copy at ``copy``."""
    record = _records(copy.parent).get(copy.name) if rules_digest() else None
    return _as_written(record, data, known_secrets)


def listed_facts(entry: Path, known_secrets: Collection[str]) -> ListedFacts | None:
    """What the writer of the entry at ``entry`` recorded for its line, while the file is
    the one it wrote (same ``lstat`` identity); None otherwise, or when a secret of
    ``known_secrets`` is so long that it could start in the line's words and end past
    what the record keeps."""
    record = _record(entry)
    if record is None or record.get("identity") != _identity(entry):
        return None
    if max(map(len, known_secrets), default=0) > LAST_USER_CHARS:
        return None
    format_, turns, words = record.get("format"), record.get("turns"), record.get("last_user")
    if not (isinstance(format_, int) and isinstance(turns, int) and isinstance(words, str)):
        return None
    return ListedFacts(format_, turns, words)


def record_scrubbed(entry: Path, digest: str, listed: ListedFacts) -> None:
    """Record the entry just written at ``entry`` as scrubbed, its bytes of digest
    ``digest``, with ``listed``; the records of entries no longer there are dropped. Not
    durable, and a failure is ignored: a record lost costs a scrub, or a whole read."""
    record: Record = {
        "digest": digest,
        "identity": _identity(entry),
        "format": listed.format,
        "turns": listed.turns,
        "last_user": listed.last_user,
    }
    _write_record(entry.parent.parent, _key(entry), record)


def record_copy_scrubbed(copy: Path, digest: str) -> None:
    """Record the recovery copy just written at ``copy`` as scrubbed, its bytes of digest
    ``digest`` (as ``record_scrubbed``)."""
    _write_record(copy.parent, copy.name, {"digest": digest})


def forget_secrets(directory: Path, known_secrets: tuple[str, ...]) -> None:
    """Rewrite the index in ``directory`` without the records that hold one of
    ``known_secrets`` in a written form (a line's last request, kept before the value was
    found secret; the record of an entry moved aside is never written again): a record
    lost costs a whole read, nothing else. An index that does not parse loses the values
    in its bytes (``replace_known_bytes``). OSError if it cannot be read or rewritten."""
    path = directory / INDEX_NAME
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except FileNotFoundError:
        return
    needles = encoded_forms(known_secrets)
    if not any(needle in data for needle in needles):
        return
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        raw = None
    entries = raw.get("entries") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(entries, dict):
        atomic_write(path, replace_known_bytes(data, known_secrets), sync_dir=False)
        return
    kept = {
        key: record
        for key, record in entries.items()
        if not any(needle in orjson.dumps(record) for needle in needles)
    }
    atomic_write(path, orjson.dumps({**raw, "entries": kept}), sync_dir=False)


def _write_record(directory: Path, key: str, record: Record) -> None:
    rules = rules_digest()
    if rules is None:
        return
    entries = {k: v for k, v in _records(directory).items() if (directory / k).is_file()}
    entries[key] = record
    with contextlib.suppress(OSError):
        atomic_write(
            directory / INDEX_NAME,
            orjson.dumps({"rules": rules, "entries": entries}),
            sync_dir=False,
            durable=False,
        )


def _identity(entry: Path) -> list[int] | None:
    try:
        info = os.lstat(entry)
    except OSError:
        return None
    return [info.st_dev, info.st_ino, info.st_mode, info.st_size, info.st_mtime_ns,
            info.st_ctime_ns]


def _key(entry: Path) -> str:
    return f"{entry.parent.name}/{entry.name}"
