"""``build_resume_context()``: the block injected into the instructions of a resumed session."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from session.filesystem import FileDrift
from session.models import SessionState
from session.shares import first_lines_within, newest_within
from session.unanswered import unanswered_message

DECISIONS_PREFIX = "Decisions: "
"""Begins the offline summary's line of decisions: a block that lists the decisions in
their own section leaves that line out of the summary it shows."""

HEADING = "# Resumed Session Context"
UNANSWERED_HEADING = "## Last Message Unanswered"
UNANSWERED_CHARS = 500
"""Of the unanswered message the context quotes: the history holds it whole."""
IMPORTANT = (
    "IMPORTANT: You are resuming a previous session. Review the context above\n"
    "before proceeding. If the user's request seems to continue prior work,\n"
    "use this context. If they start a new topic, proceed normally."
)
RESTORED_HEADING = "# Restored Checkpoint Context"
RESTORED_IMPORTANT = (
    "IMPORTANT: This conversation was taken back to an earlier checkpoint. What was\n"
    "said after it is no longer part of it: do not rely on it unless the user\n"
    "says it again. Review the context above before proceeding."
)


MISSING_TURNS = (
    "{turns} of this conversation {are} not in the messages that follow: the saved "
    "session left {them} out; {rest}."
)
"""What the model is told of the turns between the summary and the tail (``turns_missing``),
which no request of a resumed or restored session carries."""


def missing_turns_line(missing: range, summarized: bool) -> str:
    """``MISSING_TURNS`` for ``missing`` (turn numbers), and where what they said is kept."""
    one = len(missing) == 1
    turns = f"Turn {missing.start}" if one else f"Turns {missing.start}-{missing[-1]}"
    them = "it" if one else "them"
    rest = (
        f"what the summary above says of {them} is all that is kept here"
        if summarized
        else f"ask the user if you need what was said in {them}"
    )
    return MISSING_TURNS.format(turns=turns, are="is" if one else "are", them=them, rest=rest)


@dataclass(frozen=True)
class RestoredFrom:
    """The checkpoint a conversation was taken back to (``/checkpoint N``)."""

    number: int
    taken_at: datetime


def format_utc(moment: datetime) -> str:
    """``2026-03-31 14:22 UTC`` (four-digit years: strftime's ``%Y`` gives ``1`` for year 1)."""
    utc = moment.astimezone(UTC)
    return f"{utc.year:04d}-{utc:%m-%d %H:%M} UTC"


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def drift_lines(drift: FileDrift) -> list[str]:
    """``- <file>: modified`` / ``- <file>: deleted`` by path, then the unchanged count."""
    changes = [(p, "modified") for p in drift.modified] + [(p, "deleted") for p in drift.deleted]
    lines = [f"- {path}: {what}" for path, what in sorted(changes)]
    count = len(drift.unchanged)
    if count:
        lines.append(f"- {count} tracked file{'' if count == 1 else 's'} unchanged")
    return lines


RESUME_DECISION_CHARS = 300
RESUME_DECISIONS = 40
"""The newest decisions the resume context lists: it goes with every request, so it stays
small however many a long session made."""


def without_decisions_line(summary: str | None) -> str | None:
    """``summary`` without its ``Decisions:`` line, for a text that lists the decisions
    in a section of their own (not twice)."""
    if not summary:
        return summary
    return "\n".join(line for line in summary.splitlines() if not line.startswith(DECISIONS_PREFIX))


def _listed_decisions(decisions: list[str], share_chars: int | None) -> tuple[list[str], int]:
    """The lines of the decisions the resume context lists (the newest, within
    ``share_chars``), and how many earlier ones it leaves out."""
    shown = decisions[-RESUME_DECISIONS:]
    listed = [f"- {_clip(d, RESUME_DECISION_CHARS)}" for d in shown]
    earlier = len(decisions) - len(shown)
    if share_chars is not None:
        fitted = newest_within(listed, share_chars)
        if fitted is not listed:  # cut: its first line counts what it left out
            earlier += len(listed) - (len(fitted) - 1)
            listed = fitted[1:]
    return listed, earlier


def decisions_in_context(state: SessionState | None, share_chars: int | None) -> frozenset[str]:
    """The decisions (on one line each) that ``build_resume_context`` lists for ``state``
    (a long one clipped): a compaction sent with it need not list them again."""
    if state is None or not state.has_content():
        return frozenset()
    decisions = [_one_line(d) for d in state.decisions if d.strip()]
    listed, _ = _listed_decisions(decisions, share_chars)
    return frozenset(decisions[len(decisions) - len(listed) :])


def build_resume_context(
    state: SessionState | None,
    drift: FileDrift | None = None,
    restored: RestoredFrom | None = None,
    share_chars: int | None = None,
    missing: range = range(0),
) -> str:
    """The resume block of DESIGN.md section 6, or ``""`` when there is nothing to resume.

    Sections without content are left out. After ``/checkpoint N`` (``restored``) the
    same block says that the conversation was taken back to checkpoint N instead of
    resumed, and the drift is the files' since that checkpoint. ``share_chars`` (a share
    of the token budget) holds the summary to its first lines within half of it and the
    decisions to their newest that fit in it (resumed, a request was over the budget).
    ``missing``: the turns the history lacks between the summary and the tail (one line).
    """
    if state is None or (restored is None and not state.has_content()):
        return ""  # a restore to an empty checkpoint is still told: the model saw more
    if restored is None:
        lines = [
            HEADING,
            f"This is a resumed session (ID: {state.session_id}).",
            f"Originally started: {format_utc(state.created_at)}",
            f"Last active: {format_utc(state.updated_at)}",
        ]
        changes_heading, important = "## File Changes Since Last Session", IMPORTANT
    else:
        lines = [
            RESTORED_HEADING,
            f"This session (ID: {state.session_id}) was taken back to checkpoint "
            f"{restored.number}.",
            f"Originally started: {format_utc(state.created_at)}",
            f"Checkpoint {restored.number} taken: {format_utc(restored.taken_at)}",
        ]
        changes_heading = f"## File Changes Since Checkpoint {restored.number}"
        important = RESTORED_IMPORTANT
    if state.agent_spec_path:
        lines += ["", f"Agent specification file: {state.agent_spec_path}"]
    # Not the compacted history in its place: every request carries that already (it was
    # sent twice to a session restored to a checkpoint taken before any summary).
    decisions = [_one_line(d) for d in state.decisions if d.strip()]
    summary = without_decisions_line(state.summary) if decisions else state.summary
    if summary and summary.strip():
        summary = summary.strip()
        if share_chars is not None:
            summary = first_lines_within(summary, max(share_chars // 2, 80))
        lines += ["", "## Previous Session Summary", summary]
    if decisions:
        listed, earlier = _listed_decisions(decisions, share_chars)
        lines += ["", "## Key Decisions Made"]
        if earlier:
            lines.append(f"- ({earlier} earlier decisions are kept in the session file)")
        lines += listed
    if missing:
        lines += ["", missing_turns_line(missing, bool(summary and summary.strip()))]
    changes = drift_lines(drift) if drift is not None else []
    if changes:
        lines += ["", changes_heading, *changes]
    if (unanswered := unanswered_message(state.recent_messages)) is not None:
        lines += ["", UNANSWERED_HEADING, unanswered_line(unanswered)]
    lines += ["", important]
    return "\n".join(lines)


def unanswered_line(message: str) -> str:
    """What the model is told of the user's last message, which got no reply (the reply
    failed, or was cut off): it is in the history; the user may expect it picked up."""
    quoted = " ".join(message.split())
    if len(quoted) > UNANSWERED_CHARS:
        quoted = quoted[:UNANSWERED_CHARS].rstrip() + "..."
    return (
        f'The user\'s last message got no reply (see the history): "{quoted}". '
        "Pick it up if the user asks to go on, or does not move on to something else."
    )
