"""The resume context a live session was given, kept in ``checkpoints/<id>/resume-context``
(JSON) so a supervisor that dies does not change what the model is told."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path

import orjson

from session.atomic import write_creating_directories
from session.redaction import scrub_text

CONTEXT_NAME = "resume-context"
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
    """The context kept in ``directory``; None if none is there, or it does not read."""
    try:
        with (directory / CONTEXT_NAME).open("rb") as file:
            data = orjson.loads(file.read(MAX_BYTES + 1))
    except (OSError, orjson.JSONDecodeError):
        return None
    with contextlib.suppress(TypeError, KeyError):
        kind, text, decisions = data["kind"], data["text"], data["decisions"]
        valid_kind = kind == "resumed" or (type(kind) is int and kind >= 1)
        strings = isinstance(decisions, list) and all(isinstance(d, str) for d in decisions)
        if valid_kind and isinstance(text, str) and strings:
            return KeptContext(kind, text, frozenset(decisions))
    return None


def delete_kept_context(directory: Path) -> bool:
    """Remove the kept context of the session whose checkpoints are in ``directory``."""
    try:
        (directory / CONTEXT_NAME).unlink()
    except FileNotFoundError:
        return False
    return True
