"""What a restore takes the conversation back to: a checkpoint's tail, the turns the file's
cap had moved beside the session file put back before it, read as messages once."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage

from session.checkpoints import Checkpoint
from session.file_cap import MovedBack
from session.history import load_messages
from session.models import SessionState


@dataclass(frozen=True)
class Conversation:
    """A checkpoint's conversation as a restore takes it back (``conversation_of``)."""

    state: SessionState
    messages: tuple[ModelMessage, ...]
    """``state.recent_messages`` read as messages: the restore's resume reads them no more."""
    missing: tuple[str, ...] = ()
    """The turns moved beside the session file that could not be read back."""


def conversation_of(checkpoint: Checkpoint, back: MovedBack) -> Conversation | None:
    """``checkpoint``'s conversation with the moved turns read back (``back``; one that is
    not messages is named in ``missing``, as one gone, and left out with the turns before
    it: the conversation goes on from after the last one missing, with no hole in it, and
    its stamps say which turns it lacks, as a resume's tail's do). None when the entry's
    own messages are not ones this agent-assist reads (a newer version's, an edit by
    hand): the restore is refused before anything is asked or written."""
    state = checkpoint.state
    try:
        tail = load_messages(state.recent_messages)
    except ValidationError:
        return None
    read: list[tuple[str, tuple[dict[str, object], ...], list[ModelMessage]]] = []
    unread: list[str] = []
    for name, messages in back.turns:
        try:
            read.append((name, messages, load_messages(messages)))
        except ValidationError:
            unread.append(name)
    gone = {*back.missing, *unread}
    missing = tuple(name for name in checkpoint.moved if name in gone)
    if missing:  # a hole: the turns before the last one missing are not put back
        after = set(checkpoint.moved[checkpoint.moved.index(missing[-1]) + 1 :])
        read = [turn for turn in read if turn[0] in after]
    raw = [messages for _, messages, _ in read]
    loaded = [messages for _, _, messages in read]
    if not raw:
        return Conversation(state, tuple(tail), missing)
    messages = (*itertools.chain.from_iterable(raw), *state.recent_messages)
    return Conversation(
        state.model_copy(update={"recent_messages": messages}),
        (*itertools.chain.from_iterable(loaded), *tail),
        missing,
    )
