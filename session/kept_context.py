"""The resume context a live session was given, kept in ``checkpoints/<id>/resume-context``
(JSON) so a supervisor that dies does not change what the model is told."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass
from pathlib import Path

import orjson

from session.atomic import write_creating_directories
from session.errors import UnreadSessionFile, UnsafeSessionFile
from session.manager import CONTEXT_NAME, read_regular_file
from session.redaction import encoded_forms, scrub_text

log = logging.getLogger("agent_assist.storage")

MAX_BYTES = 4 * 1024 * 1024


@dataclass(frozen=True)
class KeptContext:
    """``text`` (the resume context) and ``decisions`` (those it lists), given when the
    session was resumed (``kind`` "resumed") or taken back to checkpoint ``kind``."""

    kind: str | int
    text: str
    decisions: frozenset[str]


def write_kept_context(
    directory: Path, kept: KeptContext, known_secrets: tuple[str, ...] = ()
) -> None:
    """Write ``kept`` into ``directory`` (the session's checkpoints), scrubbed, atomically."""
    data = {
        "kind": kept.kind,
        "text": scrub_text(kept.text, known_secrets),
        "decisions": sorted(scrub_text(d, known_secrets) for d in kept.decisions),
    }
    write_creating_directories(directory / CONTEXT_NAME, orjson.dumps(data))


def read_kept_context(directory: Path) -> KeptContext | None:
    """The context kept in ``directory``; None if none is there, or it does not read: a
    symlink, a FIFO (whose open would wait for a writer, and with it every write of the
    StorageActor, H145) or anything else not a regular file is never opened as one."""
    try:
        data = orjson.loads(read_regular_file(directory / CONTEXT_NAME, MAX_BYTES))
    except UnsafeSessionFile as exc:
        log.warning("ignoring %s: %s", exc.path, exc.reason)
        return None
    except (OSError, orjson.JSONDecodeError):
        return None
    with contextlib.suppress(TypeError, KeyError):
        kind, text, decisions = data["kind"], data["text"], data["decisions"]
        valid_kind = kind == "resumed" or (type(kind) is int and kind >= 1)
        strings = isinstance(decisions, list) and all(isinstance(d, str) for d in decisions)
        if valid_kind and isinstance(text, str) and strings:
            return KeptContext(kind, text, frozenset(decisions))
    return None



def scrub_kept_context(directory: Path, known_secrets: tuple[str, ...]) -> bool:
    """Rewrite the context kept in ``directory`` scrubbed of ``known_secrets`` if it holds
    one (values found secret after it was written). None kept, or not a file of ours (a
    symlink): nothing. OSError or UnreadSessionFile if it could not be read or rewritten.
    False when the file holds one but does not parse as a context (left to the caller,
    ``SessionCatalog.scrub_written``, which replaces it in the bytes)."""
    try:
        data = read_regular_file(directory / CONTEXT_NAME, MAX_BYTES)
    except FileNotFoundError:
        return True
    except UnreadSessionFile:
        raise
    except UnsafeSessionFile:
        return True  # never read as the context either
    if not any(needle in data for needle in encoded_forms(known_secrets)):
        return True
    kept = read_kept_context(directory)
    if kept is None:
        return False
    write_kept_context(directory, kept, known_secrets)
    return True
