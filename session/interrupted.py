"""What a turn the user interrupted (Ctrl+C) keeps of its conversation.

A turn cut before any tool ran is dropped whole, as before: nothing happened that the
conversation must hold. One cut after a tool ran keeps its messages so far: a file
was written, a decision recorded, and a next turn whose model knew nothing of it
(the user saw it happen) went wrong. Every call keeps its return (a call cut before
its return gets one pydantic-ai synthesizes), and the turn ends with the reply's text
so far and a note that it was interrupted, so the next prompt starts a turn of its
own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    ModelResponsePart,
    TextPart,
    ToolCallPart,
    UserPromptPart,
    repair_messages,
)

from session.redaction import without_cut_token, without_secret_head
from session.unanswered import no_reply

INTERRUPTED = "[interrupted: this reply was stopped before its end]"
"""Neutral: a Ctrl+C, the terminal gone, and the supervisor stopped end a turn alike."""


def interrupted_turn(messages: Sequence[ModelMessage], partial: str) -> tuple[ModelMessage, ...]:
    """What the turn whose messages so far are ``messages`` keeps (``partial``: the text
    of the reply being written when it was cut); empty if no tool was called."""
    messages = [_without_cut_calls(message) for message in messages]
    called = any(
        isinstance(message, ModelResponse)
        and any(isinstance(part, ToolCallPart) for part in message.parts)
        for message in messages
    )
    if not called or not isinstance(messages[0], ModelRequest):
        return ()
    kept = repair_messages(messages)
    last = kept[-1]
    partial = without_cut_token(partial)  # a key cut mid-way is too short for the patterns
    said = f"{partial.rstrip()}\n\n{INTERRUPTED}" if partial.strip() else INTERRUPTED
    if isinstance(last, ModelRequest):
        kept.append(ModelResponse(parts=[TextPart(said)]))
    elif not any(isinstance(part, TextPart) and part.content for part in last.parts):
        # pydantic-ai's record of the response it was reading, empty: the text so far
        # and the note go in it
        kept[-1] = dataclasses.replace(last, parts=[*last.parts, TextPart(said)])
    elif last.state == "interrupted":  # its text is there already
        parts = [*last.parts[:-1], _without_cut_token(last.parts[-1]), TextPart(INTERRUPTED)]
        kept[-1] = dataclasses.replace(last, parts=parts)
    return tuple(kept)


def without_secret_heads(
    messages: Sequence[ModelMessage], known_secrets: tuple[str, ...]
) -> Sequence[ModelMessage]:
    """A turn's ``messages``, its reply's text where it was cut (``INTERRUPTED`` after it)
    without the head of a known secret (``without_secret_head``); ``messages`` itself when
    nothing was cut there."""
    last = messages[-1] if messages and known_secrets else None
    if not isinstance(last, ModelResponse) or not last.parts:
        return messages
    parts = list(last.parts)
    end = parts[-1]
    if not isinstance(end, TextPart) or not end.content.endswith(INTERRUPTED):
        return messages
    if end.content != INTERRUPTED:  # the text so far and the note, in one part
        said = end.content[: -len(INTERRUPTED)]
        kept = without_secret_head(said, known_secrets)
        parts[-1] = dataclasses.replace(end, content=kept + INTERRUPTED)
    elif len(parts) > 1 and isinstance(parts[-2], TextPart):  # the text's own part, then it
        before = parts[-2]
        parts[-2] = dataclasses.replace(
            before, content=without_secret_head(before.content, known_secrets)
        )
    if parts == list(last.parts):
        return messages
    return (*messages[:-1], dataclasses.replace(last, parts=parts))


def _without_cut_token(part: ModelResponsePart) -> ModelResponsePart:
    """The response's last part; its text, where the reply was cut, without a key cut."""
    if not isinstance(part, TextPart):
        return part
    return dataclasses.replace(part, content=without_cut_token(part.content))


def _without_cut_calls(message: ModelMessage) -> ModelMessage:
    """A response cut while it was read (pydantic-ai records it as ``interrupted``)
    without its tool calls: none of them ran, and one may be cut in its arguments."""
    if not isinstance(message, ModelResponse) or message.state != "interrupted":
        return message
    parts = [part for part in message.parts if not isinstance(part, ToolCallPart)]
    return dataclasses.replace(message, parts=parts)


def unanswered_turn(text: str, reason: str) -> tuple[ModelMessage, ...]:
    """The turn of the user's message ``text`` that got no reply, for ``reason``: the
    message and a ``[no reply: <reason>]`` marker as its reply (``session/unanswered.py``)."""
    return (
        ModelRequest(parts=[UserPromptPart(text)]),
        ModelResponse(parts=[TextPart(no_reply(reason))]),
    )
