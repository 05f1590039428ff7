"""The one line that tells a session's write or removal failed: a save (or its pointer's
write) is retried and words itself as such; every other failure says what stays."""

from __future__ import annotations

from session.errors import SecretsLeft
from session.lifecycle import (
    DeletePointer,
    DeleteSession,
    Effect,
    KeepOriginal,
    MarkReplyUnseen,
    ScrubEarlier,
    WritePointer,
    WriteSession,
)

RETRIED = "error: could not update the session on disk"
"""The prefix of a failed save's line: the next turn and the exit write it again, and the
run's end tells what stays unsaved (``cli/chat.py``'s ``SAVE_RETRIED``: no failure by
itself). No other failure may begin so: nothing writes it again."""


def reason(exc: BaseException) -> str:
    """Why, in a few words: an OSError's text without its path (the line names the file)."""
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)


def pointer_name(pid: int) -> str:
    return f"active_{pid}.json"


def failure_line(effect: Effect, exc: BaseException, pid: int) -> str:
    """``error: ...`` for ``effect`` (of terminal ``pid``) failed with ``exc``."""
    match effect:
        case WriteSession() | WritePointer():
            return f"{RETRIED}: {exc}"
        case DeletePointer(session_id):
            return (
                f"error: {pointer_name(pid)} not removed ({reason(exc)}); it stays, naming "
                f"session {session_id}, which has no file"
            )
        case ScrubEarlier(session_id):
            if isinstance(exc, SecretsLeft):
                return str(exc)
            return (
                f"error: a secret may stay in plain text in the checkpoints or copies of session "
                f"{session_id} ({exc}); /reset or `agent-assist sessions rm {session_id}` "
                "removes them"
            )
        case DeleteSession(session_id):
            return f"error: session {session_id} not removed ({exc}); it stays"
        case KeepOriginal(session_id):
            return f"error: {session_id}.json not kept aside ({exc}); it stays as it is"
        case MarkReplyUnseen(session_id):
            return (
                f"error: the reply nobody saw in session {session_id} could not be marked "
                f"({exc}); the next open does not show it (it is in the session)"
            )


def pointer_unwritten_line(pid: int, session_id: str, exc: BaseException) -> str:
    """A session saved whose tab's pointer was never written: what its exit says."""
    return (
        f"error: {pointer_name(pid)} not written ({reason(exc)}); session {session_id} is "
        "saved, but this tab does not point to it (it is listed as orphaned)"
    )
