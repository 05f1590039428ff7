"""What a chat that took a session up shows of the turn it waited for (H143), or of the one
that ended unseen before it came (H152): the reply its terminal gone let finish, or one
line saying the turn ended unanswered or cut."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from session.file_cap import elided
from session.interrupted import INTERRUPTED
from session.unanswered import NO_REPLY_PREFIX, first_words

UNANSWERED_LINE = (
    "note: the last reply did not come ({reason}); the message is kept in the session, "
    "marked unanswered"
)
CUT_LINE = (
    "note: the last reply was stopped before its end; it is kept as far as it got (a tool "
    "of it had run)"
)

ELIDED_LINE = (
    "note: the last reply ({size:,} bytes) was left out of the session file to keep it "
    "under its {cap} cap; it is not kept"
)
"""Said instead of a reply a save left out of the file (``session/file_cap.py``): never
its marker shown as the reply."""

MISSED_LINE = 'note: the reply to "{message}" finished after its chat was gone; here it is:'
"""Said above a reply shown at an open because its chat (window closed, killed) was gone
before it ended, and nobody has seen it since."""

SHOWN_CHARS = 8_000_000
"""Of a longer reply, the head is shown (it is whole in the session): the ``opened`` frame
stays under the wire's 64 MiB even if every character is escaped in six bytes."""
LONG_LINE = (
    "note: the last reply is {chars:,} characters long; its first {shown:,} are shown "
    "(it is whole in the session)"
)


@dataclass(frozen=True)
class LastReply:
    """``text``: the turn's final text, shown as a reply; ``note``: a line said instead
    (or after a reply shown in part)."""

    text: str = ""
    note: str | None = None
    heading: str | None = None
    """A line said before ``text`` (``MISSED_LINE``), if any."""


def last_reply(messages: Sequence[Mapping[str, Any]]) -> LastReply | None:
    """Of serialized ``messages`` whose last turn is the one waited for: its last
    response's text, or the line for a ``[no reply: ...]`` or interrupted end. None if
    they end with no response's text."""
    if not messages or messages[-1].get("kind") != "response":
        return None
    parts = messages[-1].get("parts")
    text = "".join(
        part["content"]
        for part in (parts if isinstance(parts, list) else ())
        if isinstance(part, Mapping)
        and part.get("part_kind") == "text"
        and isinstance(part.get("content"), str)
    )
    if not text.strip():
        return None
    if (left_out := elided(text)) is not None:
        return LastReply(note=ELIDED_LINE.format(size=left_out[0], cap=left_out[1]))
    if text.startswith(NO_REPLY_PREFIX):
        reason = text.removeprefix(NO_REPLY_PREFIX).removesuffix("]")
        return LastReply(note=UNANSWERED_LINE.format(reason=reason))
    if text.rstrip().endswith(INTERRUPTED):
        return LastReply(note=CUT_LINE)
    if len(text) > SHOWN_CHARS:  # the open's frame stays below the wire's cap
        note = LONG_LINE.format(chars=len(text), shown=SHOWN_CHARS)
        return LastReply(text=text[:SHOWN_CHARS], note=note)
    return LastReply(text=text)


def missed_reply(messages: Sequence[Mapping[str, Any]]) -> LastReply | None:
    """``last_reply`` of a turn that ended after its chat was gone, with nobody waiting for
    it: its reply under ``MISSED_LINE``, naming the message it answers."""
    shown = last_reply(messages)
    if shown is None or not shown.text:
        return shown
    prompt = next(
        (
            part["content"]
            for message in reversed(messages)
            if message.get("kind") == "request"
            for part in (message.get("parts") or ())
            if isinstance(part, Mapping)
            and part.get("part_kind") == "user-prompt"
            and isinstance(part.get("content"), str)
        ),
        None,
    )
    if prompt is None:
        return shown
    return LastReply(shown.text, shown.note, MISSED_LINE.format(message=first_words(prompt)))
