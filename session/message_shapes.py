"""Whether saved messages are of shapes this version's message model knows, told without
loading that model (pydantic-ai: 0.6 s to import, and never in the terminal client).

A listing reads headers only; a file whose messages a newer pydantic-ai wrote (a kind
of message or of part this one does not know) looked like any session, with "0 turns",
was offered for resumption and refused once chosen. Checking the ``kind`` of each
message and the ``part_kind`` of each of its parts costs a few dict lookups per message
of the JSON the header read parsed anyway. It is the shape only: a message of known
kinds damaged inside (a field of the wrong type) is found when it is validated, by a
resume or ``prune``.

The kinds are those of the pydantic-ai this version was made with (``KNOWN_UP_TO``). A
newer one, which a user may install (the dependency allows ``<3``), may add kinds: with
it, a kind not in these lists is no sign of a file this version cannot read, and nothing
is concluded (the resume's validation is the judge, as before). The installed version is
looked up only then, when a kind is not known: never on a listing's usual path.
"""

from __future__ import annotations

import functools
import importlib.metadata
import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

KNOWN_UP_TO: Final = (2, 78)
"""The pydantic-ai-slim (major, minor) whose kinds these are (a test keeps it in step)."""

MESSAGE_KINDS: Final = frozenset({"request", "response"})
REQUEST_PART_KINDS: Final = frozenset(
    {
        "capability",
        "capability-load-delta",
        "capability-load-return",
        "compaction",
        "instruction-baseline",
        "instruction-delta",
        "model-settings-delta",
        "retry-feedback",
        "retry-prompt",
        "speech",
        "system-prompt",
        "tool-availability-delta",
        "tool-return",
        "tool-search-return",
        "user-prompt",
    }
)
"""The ``part_kind`` tags pydantic-ai's ``ModelRequestPart`` takes (a test checks they
cover the installed pydantic-ai's)."""
RESPONSE_PART_KINDS: Final = frozenset(
    {
        "builtin-tool-call",
        "builtin-tool-return",
        "builtin-tool-search-call",
        "builtin-tool-search-return",
        "capability-load-call",
        "compaction",
        "file",
        "speech",
        "text",
        "thinking",
        "tool-call",
        "tool-search-call",
    }
)
"""The ``part_kind`` tags of pydantic-ai's ``ModelResponsePart``."""
UNKNOWN_SHAPE_NOTE: Final = "messages this agent-assist cannot read"


def _shown(value: object) -> str:
    return repr(value)[:40]


def unknown_shape(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """What makes ``messages`` (a session file's, parsed, not validated) of a shape this
    version cannot read (``message 3 has a part of kind 'user-prompt-v2'``); None when
    every message and part is of a kind it knows, or of a kind a newer pydantic-ai than
    ``KNOWN_UP_TO``, installed, may know."""
    for number, message in enumerate(messages, 1):
        kind = message.get("kind")
        if not isinstance(kind, str):
            return f"message {number} is of kind {_shown(kind)}"
        if kind not in MESSAGE_KINDS:
            return None if _newer_pydantic_ai() else f"message {number} is of kind {_shown(kind)}"
        parts = message.get("parts")
        if not isinstance(parts, list):
            return f"message {number} has no list of parts"
        known = REQUEST_PART_KINDS if kind == "request" else RESPONSE_PART_KINDS
        for part in parts:
            part_kind = part.get("part_kind") if isinstance(part, dict) else None
            if not isinstance(part_kind, str):
                return f"message {number} has a part of kind {_shown(part_kind)}"
            if part_kind not in known:
                if _newer_pydantic_ai():
                    return None
                return f"message {number} has a part of kind {_shown(part_kind)}"
    return None


def newer_than_known(version: str) -> bool:
    """Whether pydantic-ai-slim ``version`` (``2.81.0``, ``3.0.0b1``) is newer than the one
    whose kinds this module lists."""
    numbers = tuple(int(n) for n in re.findall(r"\d+", version)[:2])
    return numbers > KNOWN_UP_TO


@functools.cache
def _newer_pydantic_ai() -> bool:
    """Whether the installed pydantic-ai is newer than ``KNOWN_UP_TO`` (not installed:
    no)."""
    try:
        return newer_than_known(importlib.metadata.version("pydantic-ai-slim"))
    except importlib.metadata.PackageNotFoundError:
        return False
