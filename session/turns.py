"""Turns as saved: each turn's first request carries the turn's number in the session
(a tail held to the token budget still says which turn it starts at) and the id of the
user message that started it, kept in the session with its request (idempotent turns).

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

from session.compacted import TURN_NUMBER_KEY
from session.history import is_turn_start

MESSAGE_ID_KEY = "message_id"
MESSAGE_ID_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}\Z")


def is_message_id(value: object) -> bool:
    return isinstance(value, str) and MESSAGE_ID_RE.match(value) is not None


def stamp_turn(
    messages: Sequence[ModelMessage], number: int, message_id: str | None = None
) -> tuple[ModelMessage, ...]:
    """``messages`` of one turn with its ``number`` (the session's turns, compacted ones
    included) and ``message_id`` recorded on its first request: a saved tail whose
    oldest turns were left out still says which turn it starts at."""
    out = list(messages)
    stamp: dict[str, object] = {TURN_NUMBER_KEY: number}
    if message_id is not None:
        stamp[MESSAGE_ID_KEY] = message_id
    for i, message in enumerate(out):
        if isinstance(message, ModelRequest):
            out[i] = dataclasses.replace(message, metadata={**(message.metadata or {}), **stamp})
            break
    return tuple(out)


def stamped_turn(history: Sequence[ModelMessage]) -> int | None:
    """The number stamped on the first turn of ``history`` (None: none, or not stamped)."""
    first = next((m for m in history if is_turn_start(m)), None)
    if not isinstance(first, ModelRequest):
        return None
    number = (first.metadata or {}).get(TURN_NUMBER_KEY)
    valid = isinstance(number, int) and not isinstance(number, bool) and number >= 1
    return number if valid else None


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
