"""What a TerminalActor does when its terminal leaves: the step that
``SessionLifecycle.terminal_left`` returns (the table decides, the actor performs it)."""

from __future__ import annotations

from dataclasses import dataclass

WAITING_FOR_LAST_REPLY = (
    "waiting for the last reply to finish... (Ctrl+C: stop it; the message is kept, "
    "marked unanswered)"
)
"""Said while a session whose terminal left mid-turn is taken up: its turn ends first."""
TAKEN_UP = "taken-up"
"""The detach reason that cuts such a turn: the one taking the session up stopped waiting."""
CLOSED_BY_CHAT = "exit"
"""The detach reason of a chat that left by its own ``close`` (the end of piped input,
``/exit``): it waits for the exit's last line."""
SHUTDOWN = "shutdown"
"""The detach reason of a supervisor stop (``supervisor stop``, SIGTERM)."""
CUT_WAIT_OVER = "cut-wait-over"
"""The detach reason that ends the wait for a cut turn's end: the actor leaves without it."""

CUT_BY_EXIT = "the chat ended before the reply"
CUT_WHILE_WAITED = "stopped by the user while it was waited for"
"""A turn let finish for a terminal gone, cut by a Ctrl+C of the chat waiting to take
the session up (``TAKEN_UP``): the user stopped it, no chat ended."""
CUT_BY_SHUTDOWN = "the supervisor stopped before the reply"
FINISHING_AFTER_EXIT = "the terminal went away; the supervisor stopped before the reply ended"
"""The reason a turn let finish for a terminal gone is saved with at once: it stays only if
the supervisor dies before the turn's end (which saves the turn again)."""


def failed_before_reply(failure: str, *, terminal_gone: bool) -> str:
    """The reason a turn in flight is saved with when an internal error (``failure``: its
    type and text) made the actor save before the turn's end: it stays only if that end
    is never saved (the supervisor dies first, or the user stops the turn)."""
    gone = "the terminal went away; " if terminal_gone else ""
    return f"{gone}an internal error ({failure}) came before the reply ended"


@dataclass(frozen=True)
class LetTurnFinish:
    """The connection ended with no request to stop (kill -9, a closed window): turn
    ``turn`` runs on to its end and is saved, for at most the finish wait; its tools do
    not run (the terminal would never see their lines)."""

    turn: int


@dataclass(frozen=True)
class CutTurn:
    """Cut turn ``turn`` (an exit asked for, or the finish wait over) and leave once its
    end has come, so that what its tools did is kept; its end is waited for briefly."""

    turn: int


@dataclass(frozen=True)
class AwaitCut:
    """Turn ``turn`` is being cut already: its end, or the end of the cut's bounded wait
    (``CUT_WAIT_OVER``), is what the exit waits for (a stop meanwhile made the actor leave
    at once, without what the turn's tools had done)."""

    turn: int


@dataclass(frozen=True)
class Leave:
    """Exit now, for ``reason`` (no turn runs, or the wait for a cut turn's end is over)."""

    reason: str


LeavingStep = LetTurnFinish | CutTurn | AwaitCut | Leave
