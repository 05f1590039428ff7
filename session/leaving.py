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
class Leave:
    """Exit now, for ``reason`` (no turn runs, or a second cut)."""

    reason: str


LeavingStep = LetTurnFinish | CutTurn | Leave
