"""Whether saved messages are of shapes this version's message model knows, told without
loading that model (pydantic-ai: 0.6 s to import, and never in the terminal client).

A listing reads headers only; a file whose messages a newer pydantic-ai wrote (a kind
of message or of part this one does not know) looked like any session, with "0 turns",
was offered for resumption and refused once chosen. Checking the ``kind`` of each
message and the ``part_kind`` of each of its parts costs a few dict lookups per message
of the JSON the header read parsed anyway. It is the shape only: a message of known
kinds damaged inside (a field of the wrong type) is found when it is validated, by a
resume or ``prune``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

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
    every message and part is of a kind it knows."""
    for number, message in enumerate(messages, 1):
        kind = message.get("kind")
        if not isinstance(kind, str) or kind not in MESSAGE_KINDS:
            return f"message {number} is of kind {_shown(kind)}"
        parts = message.get("parts")
        if not isinstance(parts, list):
            return f"message {number} has no list of parts"
        known = REQUEST_PART_KINDS if kind == "request" else RESPONSE_PART_KINDS
        for part in parts:
            part_kind = part.get("part_kind") if isinstance(part, dict) else None
            if not isinstance(part_kind, str) or part_kind not in known:
                return f"message {number} has a part of kind {_shown(part_kind)}"
    return None
