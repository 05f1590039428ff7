"""StorageActor with real files: single writer, no resurrection, one live terminal per session."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.messages import (
    Claim,
    FindResumable,
    Finishing,
    Handover,
    ListCheckpoints,
    ListSessions,
    LiveCount,
    Release,
    RemovePointer,
    RemoveSession,
    SavePointer,
    SaveSession,
    WriteCheckpoint,
)
from actors.storage import StorageActor, StorageMemory
from session.catalog import Resumable, SessionListing
from session.errors import (
    LeftBehind,
    SessionDeleted,
    SessionLive,
    SupersededWriter,
    UnsafeSessionDirectory,
    UnsafeSessionFile,
)
from session.history import dump_messages
from session.manager import SessionManager, Written
from session.models import Pointer, SessionState
from session.processes import process_start_time
from tests.conversations import conversation

pytestmark = pytest.mark.anyio
NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
MESSAGES = tuple(dump_messages(conversation(0)))  # built outside the event loop


def state(session_id: str, hour: int = 12) -> SessionState:
    return SessionState(
        session_id=session_id,
        created_at=NOW,
        updated_at=NOW.replace(hour=hour),
        recent_messages=MESSAGES,
    )


@pytest.fixture
async def storage(tmp_path: Path, no_blocking: None) -> AsyncIterator[ActorRef[Any]]:
    async with anyio.create_task_group() as tg:
        ref: ActorRef[Any] = await tg.start(
            partial(run_supervised, "storage", lambda _: StorageActor(tmp_path))
        )
        yield ref
        ref.close()


def project(tmp_path: Path) -> Path:
    return tmp_path / "projects" / "ws_00000000" / "sessions"


async def test_a_session_deleted_by_reset_is_never_written_again(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    await storage.ask(SaveSession(project(tmp_path), state("aaaaaaaaaaaa"), writer=1))
    await storage.ask(RemoveSession(project(tmp_path), "aaaaaaaaaaaa", forever=True))
    with pytest.raises(SessionDeleted):
        await storage.ask(SaveSession(project(tmp_path), state("aaaaaaaaaaaa"), writer=1))
    assert not (project(tmp_path) / "aaaaaaaaaaaa.json").exists()


async def test_a_reset_whose_file_went_but_not_its_checkpoints_is_never_written_again(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """The removal fails (``LeftBehind``: a file where its checkpoints would be) after its
    file is gone: the session is gone, and a late save may not bring it back."""
    p = project(tmp_path)
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=1))
    in_the_way = p.parent / "checkpoints" / "aaaaaaaaaaaa"
    in_the_way.parent.mkdir(parents=True, exist_ok=True)
    in_the_way.write_text("not a directory")
    with pytest.raises(LeftBehind):
        await storage.ask(RemoveSession(p, "aaaaaaaaaaaa", forever=True))
    with pytest.raises(SessionDeleted):
        await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=1))
    assert not (p / "aaaaaaaaaaaa.json").exists()


async def test_a_reset_that_could_not_remove_the_file_leaves_the_session_saved(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """A directory at the session file's place: nothing is removed, and the session is not
    taken for deleted (its saves are the disk's to refuse, not the actor's)."""
    p = project(tmp_path)
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=1))
    (p / "aaaaaaaaaaaa.json").unlink()
    (p / "aaaaaaaaaaaa.json").mkdir()
    with pytest.raises(UnsafeSessionFile):
        await storage.ask(RemoveSession(p, "aaaaaaaaaaaa", forever=True))
    (p / "aaaaaaaaaaaa.json").rmdir()
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa", hour=13), writer=1))
    assert (p / "aaaaaaaaaaaa.json").exists()


async def test_one_live_terminal_per_session(storage: ActorRef[Any], tmp_path: Path) -> None:
    await storage.ask(Claim("aaaaaaaaaaaa", 100))
    await storage.ask(Claim("aaaaaaaaaaaa", 100))
    with pytest.raises(SessionLive) as caught:
        await storage.ask(Claim("aaaaaaaaaaaa", 200))
    assert caught.value.holder_pid == 100
    with pytest.raises(SessionLive):
        await storage.ask(SaveSession(project(tmp_path), state("aaaaaaaaaaaa"), writer=200))
    await storage.ask(Release("aaaaaaaaaaaa", 200))  # not the holder: no effect
    with pytest.raises(SessionLive):
        await storage.ask(Claim("aaaaaaaaaaaa", 200))
    await storage.ask(Release("aaaaaaaaaaaa", 100))
    await storage.ask(Claim("aaaaaaaaaaaa", 200))


async def test_a_finishing_session_is_handed_over_to_one_successor(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """H134: a session whose terminal left while its turn finishes is not listed live; the
    first claim gets a Handover and holds it at the holder's release (the holder writes
    until then), a second claim is told it is live."""
    sid = "aaaaaaaaaaaa"
    await storage.ask(SaveSession(project(tmp_path), state(sid), writer=100, token=1))
    await storage.ask(Claim(sid, 100, token=1))
    holder, _ = open_mailbox("holder")
    await storage.ask(Finishing(sid, 1, holder))
    listing: SessionListing = await storage.ask(ListSessions((project(tmp_path),)))
    assert [row.state for row in listing.rows] == ["orphaned"]
    handover = await storage.ask(Claim(sid, 200, token=2))
    assert isinstance(handover, Handover) and handover.holder is holder
    with pytest.raises(SessionLive) as caught:
        await storage.ask(Claim(sid, 300, token=3))
    assert caught.value.holder_pid == 200
    await storage.ask(SaveSession(project(tmp_path), state(sid), writer=100, token=1))
    assert not handover.released.is_set()
    await storage.ask(Release(sid, 100, token=1))
    assert handover.released.is_set()
    await storage.ask(SaveSession(project(tmp_path), state(sid), writer=200, token=2))
    with pytest.raises(SessionLive):
        await storage.ask(SaveSession(project(tmp_path), state(sid), writer=100, token=1))


async def test_listing_marks_live_idle_and_orphaned(storage: ActorRef[Any], tmp_path: Path) -> None:
    p = project(tmp_path)
    for sid, hour in (("aaaaaaaaaaaa", 10), ("bbbbbbbbbbbb", 11), ("cccccccccccc", 12)):
        await storage.ask(SaveSession(p, state(sid, hour), writer=1))
    me = os.getpid()
    await storage.ask(
        SavePointer(
            p,
            Pointer(
                session_id="bbbbbbbbbbbb",
                pid=me,
                pid_start_time=process_start_time(me),
                updated_at=NOW,
            ),
        )
    )
    await storage.ask(Claim("cccccccccccc", 4242))
    listing: SessionListing = await storage.ask(ListSessions((p,)))
    states = {r.session_id: (r.state, r.terminal_pid) for r in listing.rows}
    assert states == {
        "aaaaaaaaaaaa": ("orphaned", None),
        "bbbbbbbbbbbb": ("idle", me),
        "cccccccccccc": ("live", 4242),
    }


async def test_a_terminal_is_offered_its_own_session_first(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    p = project(tmp_path)
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa", 10), writer=1))
    await storage.ask(SaveSession(p, state("bbbbbbbbbbbb", 12), writer=1))
    me = os.getpid()
    await storage.ask(
        SavePointer(
            p,
            Pointer(
                session_id="aaaaaaaaaaaa",
                pid=me,
                pid_start_time=process_start_time(me),
                updated_at=NOW,
            ),
        )
    )
    own: Resumable = await storage.ask(FindResumable(p, me))
    assert own.offer is not None and own.offer.session_id == "aaaaaaaaaaaa"
    other: Resumable = await storage.ask(FindResumable(p, 999_999))
    assert other.offer is not None and other.offer.session_id == "bbbbbbbbbbbb"


async def test_a_reused_pid_does_not_count_as_the_old_terminal(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    p = project(tmp_path)
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=1))
    me = os.getpid()
    started = process_start_time(me)
    assert started is not None
    stale = Pointer(session_id="aaaaaaaaaaaa", pid=me, pid_start_time=started - 500, updated_at=NOW)
    await storage.ask(SavePointer(p, stale))
    listing: SessionListing = await storage.ask(ListSessions((p,)))
    assert [r.state for r in listing.rows] == ["orphaned"]


async def test_claims_and_reset_tombstones_survive_a_restart_of_the_actor(tmp_path: Path) -> None:
    memory = StorageMemory()
    p = project(tmp_path)
    async with anyio.create_task_group() as tg:
        ref: ActorRef[Any] = await tg.start(
            partial(run_supervised, "storage", lambda _: StorageActor(tmp_path, memory))
        )
        await ref.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=1))
        await ref.ask(RemoveSession(p, "aaaaaaaaaaaa", forever=True))
        await ref.ask(Claim("bbbbbbbbbbbb", 100))
        # A failing tell crashes the actor; run_supervised starts a new incarnation.
        await ref.tell(SaveSession(p, state("bbbbbbbbbbbb"), writer=200))
        with pytest.raises(SessionDeleted):  # a late autosave after the restart
            await ref.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=1))
        with pytest.raises(SessionLive):
            await ref.ask(Claim("bbbbbbbbbbbb", 300))
        ref.close()
    assert not (p / "aaaaaaaaaaaa.json").exists()


async def test_rm_of_a_live_session_is_refused_in_the_same_step(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    p = project(tmp_path)
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=100))
    await storage.ask(Claim("aaaaaaaaaaaa", 100))
    with pytest.raises(SessionLive):
        await storage.ask(RemoveSession(p, "aaaaaaaaaaaa", unless_live=True))
    assert (p / "aaaaaaaaaaaa.json").exists()
    await storage.ask(Release("aaaaaaaaaaaa", 100))
    assert await storage.ask(RemoveSession(p, "aaaaaaaaaaaa", unless_live=True)) is True


async def test_a_late_write_of_a_departed_actor_cannot_overwrite_its_successor(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """Both actors serve terminal 100: the one that left writes its summary late."""
    p = project(tmp_path)
    await storage.ask(Claim("aaaaaaaaaaaa", 100, token=1))
    await storage.ask(Release("aaaaaaaaaaaa", 100, token=1))
    await storage.ask(Claim("aaaaaaaaaaaa", 100, token=2))
    newer = state("aaaaaaaaaaaa", hour=13)
    await storage.ask(SaveSession(p, newer, writer=100, token=2))
    with pytest.raises(SessionLive):
        await storage.ask(SaveSession(p, state("aaaaaaaaaaaa", hour=12), writer=100, token=1))
    await storage.ask(Release("aaaaaaaaaaaa", 100, token=1))  # not the holder: no effect
    with pytest.raises(SessionLive):
        await storage.ask(Claim("aaaaaaaaaaaa", 200))
    listing: SessionListing = await storage.ask(ListSessions((p,)))
    assert [r.updated_at.hour for r in listing.rows] == [13]


async def test_a_late_write_after_another_terminal_held_the_session_is_refused(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """Terminal 100 left (its summary, written after the exit, is slow); terminal 200 resumed
    the session, added a turn and left too. 100's late write would drop 200's turn."""
    p = project(tmp_path)
    await storage.ask(Claim("aaaaaaaaaaaa", 100, token=1))
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa", hour=12), writer=100, token=1))
    await storage.ask(Release("aaaaaaaaaaaa", 100, token=1))
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa", hour=12), writer=100, token=1))
    await storage.ask(Claim("aaaaaaaaaaaa", 200, token=2))
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa", hour=13), writer=200, token=2))
    await storage.ask(Release("aaaaaaaaaaaa", 200, token=2))
    with pytest.raises(SupersededWriter) as refused:  # not "live in terminal 100": it left
        await storage.ask(SaveSession(p, state("aaaaaaaaaaaa", hour=12), writer=100, token=1))
    assert str(refused.value) == (
        "session aaaaaaaaaaaa was opened again since terminal 100 wrote it; that terminal's "
        "late write is refused"
    )
    listing: SessionListing = await storage.ask(ListSessions((p,)))
    assert [r.updated_at.hour for r in listing.rows] == [13]


async def test_a_resume_of_a_session_that_is_not_stored_claims_nothing(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """A failed resume never holds the session, even for a moment: another terminal asking
    meanwhile is told there is no such session, not that it is live."""
    p = project(tmp_path)
    with pytest.raises(FileNotFoundError):
        await storage.ask(Claim("aaaaaaaaaaaa", 100, stored_in=p))
    await storage.ask(SaveSession(p, state("bbbbbbbbbbbb"), writer=1))
    await storage.ask(RemoveSession(p, "bbbbbbbbbbbb", forever=True))
    with pytest.raises(FileNotFoundError):
        await storage.ask(Claim("bbbbbbbbbbbb", 100, stored_in=p))
    await storage.ask(Claim("aaaaaaaaaaaa", 200))  # neither is held by 100
    await storage.ask(Claim("bbbbbbbbbbbb", 200))
    await storage.ask(SaveSession(p, state("cccccccccccc"), writer=1))
    await storage.ask(Claim("cccccccccccc", 100, stored_in=p))
    with pytest.raises(SessionLive):
        await storage.ask(Claim("cccccccccccc", 200, stored_in=p))


async def test_an_asked_save_is_answered_once_the_file_holds_it(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """The disk's thread answers the ask itself: when the answer comes, the file is there."""
    saved = await storage.ask(SaveSession(project(tmp_path), state("aaaaaaaaaaaa", 13), writer=1))
    assert saved == Written(project(tmp_path) / "aaaaaaaaaaaa.json")
    on_disk = SessionState.model_validate_json(saved.path.read_bytes())
    assert on_disk.updated_at == NOW.replace(hour=13)


async def test_a_save_the_disk_refuses_fails_the_ask_and_the_actor_goes_on(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    blocked = tmp_path / "projects" / "blocked_00000000"
    blocked.parent.mkdir(parents=True, exist_ok=True)
    blocked.write_text("a file where the project's directory should be")
    with pytest.raises(UnsafeSessionDirectory):
        await storage.ask(SaveSession(blocked / "sessions", state("aaaaaaaaaaaa"), writer=1))
    saved = await storage.ask(SaveSession(project(tmp_path), state("bbbbbbbbbbbb"), writer=1))
    assert saved.path.exists()


async def test_the_tabs_actor_takes_up_the_front_doors_claim_of_a_finishing_session(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """Found by the interleavings (seed 32, loaded machine): the front door (no token)
    claimed a session whose turn finished for a terminal gone and was made its successor;
    the tab's TerminalActor, opening it again for real with its token, was told the session
    was live (in its own tab), and the front door's claim stayed live for good."""
    sid = "aaaaaaaaaaaa"
    await storage.ask(SaveSession(project(tmp_path), state(sid), writer=100, token=1))
    await storage.ask(Claim(sid, 100, token=1))
    holder, _ = open_mailbox("holder")
    await storage.ask(Finishing(sid, 1, holder))
    front_door = await storage.ask(Claim(sid, 200, stored_in=project(tmp_path)))
    assert isinstance(front_door, Handover)
    adopted = await storage.ask(Claim(sid, 200, token=2, stored_in=project(tmp_path)))
    assert isinstance(adopted, Handover) and adopted.released is front_door.released
    with pytest.raises(SessionLive):
        await storage.ask(Claim(sid, 300, token=3))
    await storage.ask(Release(sid, 100, token=1))
    assert adopted.released.is_set()
    await storage.ask(SaveSession(project(tmp_path), state(sid), writer=200, token=2))
    await storage.ask(Release(sid, 200, token=2))
    assert await storage.ask(LiveCount()) == 0


def pointer_to(session_id: str, pid: int) -> Pointer:
    return Pointer(
        session_id=session_id, pid=pid, pid_start_time=process_start_time(pid), updated_at=NOW
    )


async def tab_moved_from_aaaa_to_bbbb(storage: ActorRef[Any], p: Path, me: int) -> None:
    """Actor 1 (token 1) of tab ``me`` claimed a new aaaa; actor 2 (token 2) resumed bbbb and
    pointed the tab at it."""
    await storage.ask(Claim("aaaaaaaaaaaa", me, token=1, new_in=p))
    await storage.ask(SaveSession(p, state("bbbbbbbbbbbb"), writer=200))
    await storage.ask(Claim("bbbbbbbbbbbb", me, token=2, stored_in=p))
    await storage.ask(SavePointer(p, pointer_to("bbbbbbbbbbbb", me), token=2))


async def test_a_late_save_of_the_session_a_tab_left_does_not_move_the_tabs_pointer(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """The tab's first connection (actor 1) left while its turn on aaaa finished; its second
    (actor 2) resumed bbbb meanwhile. Actor 1's first save of aaaa lands after: the turn is
    kept, but the tab stays on bbbb (a serial order cannot point it back at aaaa)."""
    p, me = project(tmp_path), os.getpid()
    await tab_moved_from_aaaa_to_bbbb(storage, p, me)
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=me, token=1))
    assert await storage.ask(SavePointer(p, pointer_to("aaaaaaaaaaaa", me), token=1)) is None
    pointer = catalog_pointer(tmp_path, me)
    assert pointer is not None and pointer.session_id == "bbbbbbbbbbbb"
    assert (p / "aaaaaaaaaaaa.json").exists()


async def test_a_tab_whose_newer_connection_claimed_keeps_its_pointer_from_a_late_removal(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """Actor 1 of the tab left (its /reset ends late); actor 2 resumed bbbb and pointed the tab
    at it. Actor 1's removal of the tab's pointer is refused, as its save of one is."""
    p, me = project(tmp_path), os.getpid()
    await tab_moved_from_aaaa_to_bbbb(storage, p, me)
    assert await storage.ask(RemovePointer(p, me, token=1)) is False
    pointer = catalog_pointer(tmp_path, me)
    assert pointer is not None and pointer.session_id == "bbbbbbbbbbbb"


async def test_the_tabs_latest_claim_moves_its_pointer(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """The front door claims for the tab (no token); the actor that adopts the session claims
    again with its token, and its pointer writes go through."""
    p = project(tmp_path)
    me = os.getpid()
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=200))
    await storage.ask(Claim("aaaaaaaaaaaa", me, stored_in=p))
    await storage.ask(Claim("aaaaaaaaaaaa", me, token=3, stored_in=p))
    assert await storage.ask(SavePointer(p, pointer_to("aaaaaaaaaaaa", me), token=3)) is not None
    assert await storage.ask(RemovePointer(p, me, token=3)) is True
    assert catalog_pointer(tmp_path, me) is None


def catalog_pointer(tmp_path: Path, pid: int) -> Pointer | None:
    """Tab ``pid``'s pointer as it is on disk."""
    return SessionManager(project(tmp_path), read_only=True).read_pointer(pid)


async def test_an_actor_that_left_adds_no_checkpoint_to_the_session_its_successor_holds(
    storage: ActorRef[Any], tmp_path: Path
) -> None:
    """Actor 1 of tab 100 released aaaa; actor 2 of the same tab resumed it. A late
    checkpoint of actor 1 is refused as its late save is: the checkpoints stay actor 2's."""
    p = project(tmp_path)
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    await storage.ask(Claim("aaaaaaaaaaaa", 100, token=1, new_in=p))
    await storage.ask(SaveSession(p, state("aaaaaaaaaaaa"), writer=100, token=1))
    await storage.ask(Release("aaaaaaaaaaaa", 100, token=1))
    await storage.ask(Claim("aaaaaaaaaaaa", 100, token=2, stored_in=p))
    late = WriteCheckpoint(p, workspace, state("aaaaaaaaaaaa"), (), 100, "save", token=1)
    with pytest.raises(SupersededWriter):
        await storage.ask(late)
    assert (await storage.ask(ListCheckpoints(p, "aaaaaaaaaaaa"))).checkpoints == ()
