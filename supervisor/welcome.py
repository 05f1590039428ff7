"""A terminal's welcome: the resumption offer with what the user needs to decide, and others.

Light (no model stack): both the front door of a starting supervisor and the
Server send it.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from actors.base import ActorRef
from actors.messages import FindResumable, ListSessions, StorageMessage
from session.catalog import Resumable, SessionListing
from session.filesystem import detect_file_drift
from session.resume import format_utc
from supervisor import protocol as p
from supervisor.identity import Identity

MAX_OTHER_OFFERS = 3
"""Other sessions the offer lists: DESIGN 6 allows "at most a few lines of context"."""


async def offer_with_context(found: Resumable, workspace: Path) -> p.Offer:
    """The offered session (without its messages: ``found.turns`` counts them) with what
    the user needs to decide: turns, summary, drift, and when it was last active as the
    listing tells it (a time in the future is not believed)."""
    state = found.offer
    assert state is not None
    drift = await anyio.to_thread.run_sync(detect_file_drift, workspace, state.file_manifest)
    return p.Offer(
        session_id=state.session_id,
        last_active=format_utc(found.last_active or state.updated_at),
        turns=found.turns,
        summary=state.summary or state.compacted_history_summary,
        modified=drift.modified,
        deleted=drift.deleted,
        unchanged=len(drift.unchanged),
        unanswered=found.unanswered,
        notes=found.offer_notes,
    )


async def other_offers(
    storage: ActorRef[StorageMessage], project: Path, offered: str
) -> tuple[tuple[p.Offer, ...], int]:
    """The project's other orphaned sessions, newest first, for the user to pick from
    (at most ``MAX_OTHER_OFFERS``), and how many more there are. Each with its turns, from
    the listing's headers (no message is read); no drift (it would hash every tracked
    file of each)."""
    listing: SessionListing = await storage.ask(ListSessions((project,)))
    others = [
        p.Offer(
            session_id=row.session_id,
            last_active=format_utc(row.updated_at),
            turns=row.turns,
            summary=row.summary,
        )
        for row in listing.rows
        if row.state == "orphaned" and row.note is None and row.session_id != offered
    ]
    return tuple(others[:MAX_OTHER_OFFERS]), max(0, len(others) - MAX_OTHER_OFFERS)


async def welcome(
    storage: ActorRef[StorageMessage],
    project: Path,
    terminal_pid: int,
    workspace: Path,
    identity: Identity,
) -> p.Welcome:
    found: Resumable = await storage.ask(FindResumable(project, terminal_pid))
    offer, others, more = None, tuple[p.Offer, ...](), 0
    if found.offer is not None:
        offer = await offer_with_context(found, workspace)
        others, more = await other_offers(storage, project, found.offer.session_id)
    return p.Welcome(
        supervisor_pid=os.getpid(),
        offer=offer,
        warnings=found.warnings,
        others=others,
        more_others=more,
        taken=found.taken,
        openai_base_url=os.environ.get("OPENAI_BASE_URL") or None,
        **identity.as_fields(),
    )
