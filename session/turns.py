"""Idempotent turns: each user message carries an id, kept in the session with its request.

A terminal re-sends a message whose answer it did not get (the supervisor died
after the turn was saved but before the reply ended). The id, stored in the
request's ``metadata`` and so in the session file, lets the retry be answered
from what was saved instead of being run and stored a second time.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence

from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart

MESSAGE_ID_KEY = "message_id"
MESSAGE_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


def is_message_id(value: object) -> bool:
    return isinstance(value, str) and MESSAGE_ID_RE.match(value) is not None


def stamp_message_id(
    messages: Sequence[ModelMessage], message_id: str | None
) -> tuple[ModelMessage, ...]:
    """``messages`` of one turn with ``message_id`` recorded on its first request."""
    out = list(messages)
    if message_id is None:
        return tuple(out)
    for i, message in enumerate(out):
        if isinstance(message, ModelRequest):
            metadata = {**(message.metadata or {}), MESSAGE_ID_KEY: message_id}
            out[i] = dataclasses.replace(message, metadata=metadata)
            break
    return tuple(out)


def answered(history: Sequence[ModelMessage], message_id: str) -> str | None:
    """The saved reply text of the turn started by ``message_id``; None if no such turn.

    Only the latest turns can be retried, so the search runs from the end.
    """
    for start in range(len(history) - 1, -1, -1):
        message = history[start]
        if not isinstance(message, ModelRequest):
            continue
        if (message.metadata or {}).get(MESSAGE_ID_KEY) != message_id:
            continue
        texts: list[str] = []
        for later in history[start + 1 :]:
            if isinstance(later, ModelRequest) and (later.metadata or {}).get(MESSAGE_ID_KEY):
                break
            if isinstance(later, ModelResponse):
                texts += [p.content for p in later.parts if isinstance(p, TextPart)]
        return "".join(texts)
    return None
