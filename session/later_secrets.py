"""Values a turn revealed as secret, scrubbed from what a session keeps beside its file and
checkpoints: the copies kept before a resume compacted it or when its saves failed, and the
resume context it was given."""

from __future__ import annotations

from pathlib import Path

import orjson

from session.atomic import atomic_write
from session.file_cap import MAX_SESSION_BYTES
from session.kept_context import read_kept_context, write_kept_context
from session.manager import read_regular_file
from session.redaction import encoded_forms, replace_known, scrub_json


def scrub_kept_copy(path: Path, secrets: tuple[str, ...]) -> bool:
    """Rewrite the copy of a session file at ``path`` (``.uncompacted-``, a recovery copy)
    scrubbed of ``secrets`` (``longest_first``) if its bytes hold any, atomically; whether
    it was rewritten."""
    data = read_regular_file(path, MAX_SESSION_BYTES)
    needles = encoded_forms(secrets) | {s.encode() for s in secrets if s}
    if not any(needle in data for needle in needles):
        return False
    atomic_write(path, orjson.dumps(scrub_json(orjson.loads(data), secrets)))
    return True


def scrub_kept_context(directory: Path, secrets: tuple[str, ...]) -> bool:
    """Rewrite the resume context kept in ``directory`` (the session's checkpoints)
    scrubbed of ``secrets`` if it holds any; whether it was rewritten."""
    kept = read_kept_context(directory)
    if kept is None:
        return False
    texts = (kept.text, *sorted(kept.decisions))
    if replace_known(texts, secrets) is texts:
        return False
    write_kept_context(directory, kept, secrets)
    return True
