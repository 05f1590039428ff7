"""Which checkpoint entries are known to be as their writer scrubbed them: a reader scrubs
only those that are not (the scrub of a 70 MB entry took 3.6 s at each read).

``checkpoints/scrubbed.index`` records each entry's digest (BLAKE2b: not a file
content's SHA-256) as it was written scrubbed, with the digest of the rules it was
scrubbed by (the source of ``session/redaction.py`` and ``session/manager.py``). An
entry whose bytes have that digest now, under the same rules, holds what a scrub would
leave as it is, but for the secret values learned since: those are looked for in its
bytes, as orjson wrote them (``encoded_forms``). The record names no secret, and is
never trusted over the bytes: bytes written by anyone else, or changed by one bit, do
not match it. A record lost or unreadable costs a full scrub, nothing else.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Collection, Iterable
from functools import lru_cache
from pathlib import Path

import orjson

from session.atomic import atomic_write
from session.redaction import encoded_forms

INDEX_NAME = "scrubbed.index"
MAX_INDEX_BYTES = 1 << 20
_RULES = ("redaction.py", "manager.py")


@lru_cache(maxsize=1)
def rules_digest() -> str | None:
    """The digest of the scrub's rules as this code has them; None where its source
    cannot be read (then no record is trusted or written)."""
    digest = hashlib.sha256()
    try:
        for name in _RULES:
            digest.update((Path(__file__).parent / name).read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def entry_digest(entry: bytes | Iterable[bytes]) -> str:
    digest = hashlib.blake2b(digest_size=32)
    for part in (entry,) if isinstance(entry, bytes) else entry:
        digest.update(part)
    return digest.hexdigest()


def _records(directory: Path) -> dict[str, str]:
    """The index's records (``<session>/<entry name>`` -> digest) made under this code's
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
    return {k: v for k, v in entries.items() if isinstance(v, str)}


def scrubbed_as_written(entry: Path, data: bytes, known_secrets: Collection[str]) -> bool:
    """Whether the bytes ``data`` of the entry at ``entry`` are those recorded as written
    scrubbed under these rules, and hold none of ``known_secrets``: a scrub would change
    nothing."""
    if rules_digest() is None:
        return False
    recorded = _records(entry.parent.parent).get(_key(entry))
    if recorded is None or recorded != entry_digest(data):
        return False
    return not any(needle in data for needle in encoded_forms(known_secrets))


def record_scrubbed(entry: Path, digest: str) -> None:
    """Record the entry at ``entry`` as written scrubbed, its bytes of digest ``digest``;
    the records of entries no longer there are dropped. Not durable, and a failure is
    ignored: a record lost costs a scrub."""
    rules = rules_digest()
    if rules is None:
        return
    directory = entry.parent.parent
    entries = {k: v for k, v in _records(directory).items() if (directory / k).is_file()}
    entries[_key(entry)] = digest
    with contextlib.suppress(OSError):
        atomic_write(
            directory / INDEX_NAME,
            orjson.dumps({"rules": rules, "entries": entries}),
            sync_dir=False,
            durable=False,
        )


def _key(entry: Path) -> str:
    return f"{entry.parent.name}/{entry.name}"
