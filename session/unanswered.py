"""A turn that got no reply keeps the user's message, with a marker for a reply.

A turn the model failed (an error, a stall, a context window it could not be made to
fit) or that was cut with no tool run (the supervisor stopped, the terminal reopened
while its reply ran) used to be dropped whole: the user's message was lost, and neither
the resume offer nor the model heard of it. It is kept as a request and a response whose
only text is ``[no reply: <reason>]``: a valid pair for the next run (a history ending in
a request is not), one turn for the compaction's count. A turn the user stopped (Ctrl+C)
is not kept so: they chose to drop it (the prompt's history still holds the text).

No pydantic-ai here: the listing reads saved messages as plain data (the terminal
client never loads it); ``session/interrupted.py`` builds the turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from session.printable import printable

NO_REPLY_PREFIX = "[no reply: "
REASON_CHARS = 200
FIRST_WORDS_CHARS = 50
"""Of an unanswered message, what a listing shows: as much as the resume offer's line
shows of it on an 80-column terminal (``cli.resume_offer.unanswered_text``)."""


def no_reply(reason: str) -> str:
    """The marker that stands for the reply of a turn that got none."""
    reason = " ".join(reason.split())[:REASON_CHARS].rstrip(" .;")
    return f"{NO_REPLY_PREFIX}{reason or 'unknown'}]"


def unanswered_message(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """The user's message of the last turn of serialized ``messages`` if that turn got no
    reply (its last response is a ``[no reply: ...]`` marker), else None."""
    if not messages or messages[-1].get("kind") != "response":
        return None
    texts = [content for content in _contents(messages[-1], "text") if content]
    if not texts or not texts[-1].startswith(NO_REPLY_PREFIX):
        return None
    for message in reversed(messages):
        if message.get("kind") == "request":
            prompts = _contents(message, "user-prompt")
            if prompts:
                return prompts[0]
    return None


def first_words(message: str) -> str:
    """``message`` on one line, cut to ``FIRST_WORDS_CHARS`` with an ellipsis."""
    line = " ".join(printable(message).split())
    return line if len(line) <= FIRST_WORDS_CHARS else line[: FIRST_WORDS_CHARS - 1] + "…"


def _contents(message: Mapping[str, Any], part_kind: str) -> list[str]:
    parts = message.get("parts")
    return [
        part["content"]
        for part in (parts if isinstance(parts, list) else ())
        if isinstance(part, Mapping)
        and part.get("part_kind") == part_kind
        and isinstance(part.get("content"), str)
    ]
