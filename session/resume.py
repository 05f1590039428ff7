"""``build_resume_context()``: the block injected into the instructions of a resumed session."""

from __future__ import annotations

from datetime import UTC, datetime

from session.filesystem import FileDrift
from session.models import SessionState

HEADING = "# Resumed Session Context"
IMPORTANT = (
    "IMPORTANT: You are resuming a previous session. Review the context above\n"
    "before proceeding. If the user's request seems to continue prior work,\n"
    "use this context. If they start a new topic, proceed normally."
)


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


def build_resume_context(state: SessionState | None, drift: FileDrift | None = None) -> str:
    """The resume block of DESIGN.md section 6, or ``""`` when there is nothing to resume.

    Sections without content are left out.
    """
    if state is None or not state.has_content():
        return ""
    lines = [
        HEADING,
        f"This is a resumed session (ID: {state.session_id}).",
        f"Originally started: {format_utc(state.created_at)}",
        f"Last active: {format_utc(state.updated_at)}",
    ]
    if state.agent_spec_path:
        lines += ["", f"Agent specification file: {state.agent_spec_path}"]
    summary = state.summary or state.compacted_history_summary
    if summary and summary.strip():
        lines += ["", "## Previous Session Summary", summary.strip()]
    decisions = [_one_line(d) for d in state.decisions if d.strip()]
    if decisions:
        shown = decisions[-RESUME_DECISIONS:]
        lines += ["", "## Key Decisions Made"]
        if len(decisions) > len(shown):
            earlier = len(decisions) - len(shown)
            lines.append(f"- ({earlier} earlier decisions are kept in the session file)")
        lines += [f"- {_clip(d, RESUME_DECISION_CHARS)}" for d in shown]
    changes = drift_lines(drift) if drift is not None else []
    if changes:
        lines += ["", "## File Changes Since Last Session", *changes]
    lines += ["", IMPORTANT]
    return "\n".join(lines)
