"""Which sessions are live, idle or orphaned, and which one a terminal is offered to resume."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from session.models import Pointer, SessionHeader
from session.resume import format_utc
from session.unanswered import first_words

SessionStatus = Literal["live", "idle", "orphaned"]


@dataclass(frozen=True)
class SessionRow:
    session_id: str
    project: str
    state: SessionStatus
    terminal_pid: int | None
    created_at: datetime
    updated_at: datetime
    summary: str | None
    messages: int
    turns: int | None
    """None when they cannot be counted (see ``SessionHeader.turns``)."""
    note: str | None = None
    unanswered: str | None = None
    """The user's message of the last turn when it got no reply."""
    kept_only: bool = False
    """Its only copy is a recovery copy, which it opens from (``SessionHeader.kept_only``)."""

    @property
    def opens(self) -> bool:
        """Whether this version opens it (offered, pruned): no note, or one saying where its
        only copy is."""
        return self.note is None or self.kept_only

    def to_json(self) -> dict[str, object]:
        return {
            "session_id": self.session_id,
            "project": self.project,
            "state": self.state,
            "terminal_pid": self.terminal_pid,
            "created_at": self.created_at.isoformat().replace("+00:00", "Z"),
            "updated_at": self.updated_at.isoformat().replace("+00:00", "Z"),
            "last_active": format_utc(self.updated_at),
            "summary": self.summary,
            "messages": self.messages,
            "turns": self.turns,
            "note": self.note,
            "unanswered": None if self.unanswered is None else first_words(self.unanswered),
        }


def classify(
    project: str,
    sessions: Iterable[SessionHeader],
    pointers: Iterable[Pointer],
    live: Mapping[str, int],
    alive: Callable[[Pointer], bool],
) -> list[SessionRow]:
    """Rows newest first: live (attached now), idle (a living terminal points to it), orphaned."""
    holders: dict[str, int] = {}  # each session's living terminal that pointed to it last
    for pointer in sorted(pointers, key=lambda p: p.updated_at):
        if alive(pointer):
            holders[pointer.session_id] = pointer.pid
    rows = []
    for state in sorted(sessions, key=lambda s: s.updated_at, reverse=True):
        status: SessionStatus
        if state.session_id in live:
            status, pid = "live", live[state.session_id]
        elif state.session_id in holders:
            status, pid = "idle", holders[state.session_id]
        else:
            status, pid = "orphaned", None
        rows.append(
            SessionRow(
                session_id=state.session_id,
                project=project,
                state=status,
                terminal_pid=pid,
                created_at=state.created_at,
                updated_at=state.updated_at,
                summary=state.summary or state.compacted_history_summary,
                messages=state.messages,
                turns=state.turns,
                note=state.note,
                unanswered=state.unanswered,
                kept_only=state.kept_only,
            )
        )
    return rows


def resumable(
    rows: Iterable[SessionRow], own_pointer: Pointer | None, own_pointer_alive: bool
) -> str | None:
    """The session a terminal is offered: its own tab's pointer, else the newest orphan."""
    by_id = {row.session_id: row for row in rows}
    if own_pointer is not None and own_pointer_alive:
        row = by_id.get(own_pointer.session_id)
        if row is not None and row.state != "live" and row.opens:
            return row.session_id
    orphans = [row for row in by_id.values() if row.state == "orphaned" and row.opens]
    return max(orphans, key=lambda r: r.updated_at).session_id if orphans else None
