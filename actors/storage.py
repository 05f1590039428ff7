"""StorageActor: the only writer of session files, pointers and checkpoints, and the keeper of
live claims.

Disk work runs in the actor's own worker thread, one message at a time, so
writes are serialized without locks. A session deleted by ``/reset`` is never written
again (no resurrection by a late autosave); a session has at most one live
terminal, and a terminal that is not its holder cannot write it. Both facts
live in ``StorageMemory``, which the supervisor creates once and hands to
every incarnation of the actor, so they survive its restarts.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, assert_never

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.base import Actor, ActorRef, Envelope
from actors.messages import (
    CheckBlobs,
    Claim,
    FindResumable,
    Finishing,
    Handover,
    KeepContext,
    KeepSessionFile,
    KeepUnsaved,
    ListCheckpoints,
    ListSessions,
    LiveCount,
    LoadCheckpoint,
    LoadConversation,
    LoadKeptContext,
    LoadRecovered,
    LoadSession,
    LoadShown,
    LoadUnanswered,
    MarkUnseen,
    PruneSessions,
    Release,
    RemovePointer,
    RemoveSession,
    RestoreFiles,
    SavePointer,
    SaveSession,
    ScrubSession,
    StorageMessage,
    TakeUnseen,
    TerminalMessage,
    WriteCheckpoint,
)
from actors.worker_thread import WorkerThread
from session.catalog import SessionCatalog
from session.checkpoints import Checkpoint, Unchanged, cap_bytes
from session.errors import (
    CheckpointError,
    LiveInThisTab,
    SessionDeleted,
    SessionLive,
    SupersededWriter,
)
from session.kept_context import read_kept_context, write_kept_context
from session.manager import RestoredFiles, Written
from session.models import utc_now
from session.unseen_reply import mark_unseen, take_unseen

log = logging.getLogger("agent_assist.storage")
T = TypeVar("T")

if TYPE_CHECKING:  # annotations only: the message model loads at a restore
    from session.conversation_back import Conversation


def _conversation(
    catalog: SessionCatalog, project: Path, checkpoint: Checkpoint
) -> Conversation | None:
    """``LoadConversation``'s answer, in the disk's thread: the moved turns read back and
    every message read once (the message model is imported here, at a restore: the
    supervisor answers attaches before pydantic-ai loads)."""
    from session.conversation_back import conversation_of

    back = catalog.moved_turns(project, checkpoint.state.session_id, checkpoint.moved)
    return conversation_of(checkpoint, back)


@dataclass
class StorageMemory:
    """What the StorageActor must not forget when it restarts: the live claims
    (session id to terminal pid) and the sessions ``/reset`` deleted for good."""

    live: dict[str, int] = field(default_factory=dict)
    deleted: set[str] = field(default_factory=set)
    tokens: dict[str, int] = field(default_factory=dict)
    """The claiming actor's token of each live session (when it gave one)."""
    unsaved_new: dict[str, tuple[Path, datetime]] = field(default_factory=dict)
    """Each live new session's project and the time it began (listed before it has a file)."""
    last_claimed_by: dict[str, int | None] = field(default_factory=dict)
    """The token of each session's latest claim, kept after its release: a late write of an
    actor that left is refused once another actor has claimed the session since."""
    finishing: dict[str, Taking] = field(default_factory=dict)
    """The live sessions whose terminal left while their turn finishes (``Finishing``)."""
    tab_claims: dict[int, int | None] = field(default_factory=dict)
    """The token of each terminal's latest claim (None: the front door's): the one actor
    that may move or remove the tab's pointer (``_moves_pointer``)."""


@dataclass
class Taking:
    """A session whose turn finishes for a terminal gone: its holder keeps writing it until
    it releases it; then ``successor`` (the pid and token of the one claim that waits for
    it, if any) holds it. Listed as its pointers say (idle or orphaned), not live, until a
    successor waits."""

    holder: ActorRef[TerminalMessage]
    released: anyio.Event = field(default_factory=anyio.Event)
    successor: tuple[int, int | None] | None = None


class StorageActor(Actor[StorageMessage]):
    name = "storage"

    def __init__(
        self,
        root: Path,
        memory: StorageMemory | None = None,
        known_secrets: tuple[str, ...] = (),
    ) -> None:
        self._catalog = SessionCatalog(root, known_secrets=known_secrets)
        self._memory = StorageMemory() if memory is None else memory
        self._deleted = self._memory.deleted
        self._live = self._memory.live
        self._disk = WorkerThread("storage")
        """One thread: the disk work runs one call at a time, in mailbox order."""

    async def serve(self, mailbox: MemoryObjectReceiveStream[Envelope[StorageMessage]]) -> None:
        try:
            await super().serve(mailbox)
        finally:
            self._disk.stop()  # its last call, if any, still completes

    async def _io(self, fn: Callable[[], T], *, behind: bool = False) -> T:
        """``fn()`` in this actor's own worker thread; the wait is shielded, so work that
        started always completes before the actor goes on (or stops). ``behind``: see
        ``WorkerThread.run``.

        Not ``anyio.to_thread``: its checkpoint and capacity limiter cost two turns of
        the event loop on every save's critical path (``WorkerThread`` says why not an
        executor either)."""
        return await self._disk.run(fn, behind=behind)

    async def answer(self, envelope: Envelope[StorageMessage], message: StorageMessage) -> None:
        """A save that is asked is answered by the disk's thread itself, as soon as the
        file is durable: the asker goes on a turn of the loop sooner than if this actor
        woke first to pass the answer on. The actor still waits for the write to end
        before it takes its next message."""
        reply = envelope.reply
        if reply is None or not isinstance(message, SaveSession):
            await super().answer(envelope, message)
            return
        try:
            saving = self._saving(message)
        except Exception as exc:
            reply.fail(exc)
            return
        loop = asyncio.get_running_loop()

        def save() -> None:
            try:
                path = saving()
            except Exception as exc:
                loop.call_soon_threadsafe(reply.fail, exc)
            else:
                loop.call_soon_threadsafe(reply.set, path)

        await self._io(save, behind=True)  # the turn's end goes out first

    def _saving(self, message: SaveSession) -> Callable[[], Written]:
        """The disk work of ``message``, once its writer may write (refused otherwise)."""
        self._check_writer(message.state.session_id, message.writer, message.token)
        catalog, project, workspace = self._catalog, message.project, message.workspace

        def save() -> Written:
            for moved in message.moved:  # first: the file written next goes without them
                catalog.keep_moved_turn(project, moved, message.secrets)
            written = catalog.manager(project).save(
                message.state, message.encoded, message.secrets
            )
            if workspace is not None:
                catalog.note_workspace(project, workspace)
            return written

        return save

    async def _stored(self, project: Path, session_id: str) -> bool:
        if session_id in self._deleted:
            return False
        return await self._io(lambda: self._catalog.stored(project, session_id))

    async def _here(self, project: Path, session_id: str) -> bool:
        """Whether ``project`` has the session: its file, or it is new there and live (no
        turn saved yet). Another project's live session is not found here, not "live"."""
        new = self._memory.unsaved_new.get(session_id)
        if new is not None and session_id in self._live and session_id not in self._deleted:
            return new[0] == project
        return await self._stored(project, session_id)

    def _check_holder(self, session_id: str, terminal_pid: int) -> None:
        """SessionLive unless the session is free or held by ``terminal_pid``."""
        holder = self._live.get(session_id)
        if holder is not None and holder != terminal_pid:
            raise SessionLive(session_id, holder)

    def _check_writer(self, session_id: str, writer: int, token: int | None = None) -> None:
        if session_id in self._deleted:
            raise SessionDeleted(session_id)
        self._check_holder(session_id, writer)
        held_by = self._memory.tokens.get(session_id)
        if token is not None and held_by is not None and held_by != token:
            raise SupersededWriter(session_id, writer)  # a newer actor of this terminal has it
        latest = self._memory.last_claimed_by.get(session_id)
        if token is not None and latest is not None and latest != token:
            raise SupersededWriter(session_id, writer)  # another actor held it since (and left)

    def _moves_pointer(self, terminal_pid: int, token: int | None) -> bool:
        """Whether the actor ``token`` may write tab ``terminal_pid``'s pointer: unless a
        newer claim of the tab replaced its own (the late save of a session the tab left
        keeps its turn in the session's file, but does not point the tab back at it)."""
        claims = self._memory.tab_claims
        return token is None or terminal_pid not in claims or claims[terminal_pid] == token

    def _shown_live(self) -> dict[str, int]:
        """The live sessions as others see them: one whose turn finishes for a terminal
        gone is not, unless a claim waits to take it up (DESIGN 5: its pointers say)."""
        finishing = self._memory.finishing
        shown = {sid: pid for sid, pid in self._live.items() if sid not in finishing}
        for sid, taking in finishing.items():
            if taking.successor is not None:
                shown[sid] = taking.successor[0]
        return shown

    @staticmethod
    def _take_up(
        session_id: str, taking: Taking, terminal_pid: int, token: int | None
    ) -> Handover:
        """The claim of a session whose turn finishes: the first waits for its release
        (one successor: another claim meanwhile is told the session is live). The front
        door's claim (no token) is its tab's: the TerminalActor that adopts it, claiming
        again with its token, is that successor, as a claim of the holder's own pid is."""
        successor = taking.successor
        adopted = successor == (terminal_pid, None)
        if successor is not None and successor != (terminal_pid, token) and not adopted:
            raise SessionLive(session_id, successor[0])
        taking.successor = (terminal_pid, token)
        return Handover(taking.released, taking.holder)

    def _release(self, session_id: str, terminal_pid: int, token: int | None) -> None:
        """The holder leaves (its successor, if one waits, holds the session now), or a
        successor stops waiting."""
        memory = self._memory
        taking = memory.finishing.get(session_id)
        successor = taking is not None and taking.successor == (terminal_pid, token)
        if taking is not None and successor and memory.tokens.get(session_id) != token:
            taking.successor = None  # not the holder: a successor that stops waiting
            return
        held_by = memory.tokens.get(session_id)
        if self._live.get(session_id) != terminal_pid or not (
            token is None or held_by is None or held_by == token
        ):
            return
        memory.unsaved_new.pop(session_id, None)
        if taking is None or taking.successor is None:
            del self._live[session_id]
            memory.tokens.pop(session_id, None)
        else:
            self._live[session_id], successor_token = taking.successor
            memory.last_claimed_by[session_id] = successor_token
            if successor_token is None:
                memory.tokens.pop(session_id, None)
            else:
                memory.tokens[session_id] = successor_token
        if taking is not None:
            del memory.finishing[session_id]
            taking.released.set()

    async def handle(self, message: StorageMessage) -> Any:
        catalog = self._catalog
        match message:
            case SaveSession():
                return await self._io(self._saving(message))
            case KeepUnsaved(project, state, secrets, name):
                return await self._io(lambda: catalog.keep_unsaved(project, state, secrets, name))
            case RemoveSession(project, session_id, forever, unless_live, force, pid):
                if unless_live and session_id in self._live:
                    holder = self._live[session_id]
                    if holder == pid:
                        raise LiveInThisTab(session_id, holder)
                    raise SessionLive(session_id, holder)
                gone = False  # whether its file is gone, however the removal ended

                def remove() -> bool:
                    nonlocal gone
                    try:
                        return catalog.remove_session(
                            project, session_id, if_saved=unless_live, force=force, terminal_pid=pid
                        )
                    finally:  # in the same hop: the disk's thread looks as it leaves
                        if forever:
                            path = catalog.manager(project).session_path(session_id)
                            gone = not os.path.lexists(path)

                try:
                    return await self._io(remove)
                finally:  # refused for good only once its file is gone (a file that stays
                    # is the session still: its saves go on)
                    if gone:
                        self._deleted.add(session_id)
                        self._memory.last_claimed_by.pop(session_id, None)
            case SavePointer(project, pointer, token):
                if not self._moves_pointer(pointer.pid, token):
                    return None
                return await self._io(lambda: catalog.manager(project).write_pointer(pointer))
            case RemovePointer(project, pid, token):
                if not self._moves_pointer(pid, token):
                    return False
                return await self._io(lambda: catalog.manager(project).delete_pointer(pid))
            case KeepSessionFile(project, session_id):
                return await self._io(lambda: catalog.manager(project).keep_original(session_id))
            case KeepContext(project, session_id, kept, writer, token):
                self._check_writer(session_id, writer, token)
                directory = catalog.checkpoints(project).session_dir(session_id)
                secrets = catalog.known_secrets
                return await self._io(lambda: write_kept_context(directory, kept, secrets))
            case LoadKeptContext(project, session_id):
                directory = catalog.checkpoints(project).session_dir(session_id)
                return await self._io(lambda: read_kept_context(directory))
            case MarkUnseen(project, session_id):
                if session_id in self._deleted:
                    raise SessionDeleted(session_id)
                directory = catalog.checkpoints(project).session_dir(session_id)
                return await self._io(lambda: mark_unseen(directory))
            case TakeUnseen(project, session_id):
                directory = catalog.checkpoints(project).session_dir(session_id)
                return await self._io(lambda: take_unseen(directory))
            case LoadSession(project, session_id, messages, set_aside):
                return await self._io(
                    lambda: catalog.load(project, session_id, messages, set_aside)
                )
            case LoadShown(project, session_id):
                return await self._io(lambda: catalog.shown(project, session_id))
            case LoadUnanswered(project, session_id):
                return await self._io(lambda: catalog.unanswered(project, session_id))
            case LoadRecovered(project, state):
                return await self._io(lambda: catalog.recovery_ahead(project, state))
            case FindResumable(project, terminal_pid):
                live = self._shown_live()
                return await self._io(lambda: catalog.find_resumable(project, terminal_pid, live))
            case Claim(session_id, terminal_pid, token, stored_in, new_in):
                if stored_in is not None and not await self._here(stored_in, session_id):
                    raise FileNotFoundError(errno.ENOENT, "no such session", session_id)
                taking = self._memory.finishing.get(session_id)
                if taking is not None and token != self._memory.tokens.get(session_id):
                    handover = self._take_up(session_id, taking, terminal_pid, token)
                    self._memory.tab_claims[terminal_pid] = token
                    return handover
                self._check_holder(session_id, terminal_pid)
                self._memory.tab_claims[terminal_pid] = token
                self._live[session_id] = terminal_pid
                if new_in is not None:
                    self._memory.unsaved_new[session_id] = (new_in, utc_now())
                self._memory.last_claimed_by[session_id] = token
                if token is None:
                    self._memory.tokens.pop(session_id, None)
                else:
                    self._memory.tokens[session_id] = token
                return None
            case Finishing(session_id, token, holder):
                if self._memory.tokens.get(session_id) == token and session_id in self._live:
                    self._memory.finishing.setdefault(session_id, Taking(holder))
                return None
            case Release(session_id, terminal_pid, token):
                self._release(session_id, terminal_pid, token)
                return None
            case ListSessions(projects, asking):
                live = self._shown_live()
                new = {
                    session_id: (project, since, live[session_id])
                    for session_id, (project, since) in self._memory.unsaved_new.items()
                    if session_id in live
                }
                return await self._io(
                    lambda: catalog.list(projects, live, new, terminal_pid=asking)
                )
            case PruneSessions(projects, days, dry_run, asking):
                live = dict(self._live)
                return await self._io(
                    lambda: catalog.prune(projects, days, dry_run, live, asking)
                )
            case LiveCount():
                return len(self._live)
            case WriteCheckpoint(
                project,
                workspace,
                state,
                paths,
                writer,
                reason,
                wanted_cap,
                secrets,
                keep,
                dry_run,
                made,
                last_request,
                unless_unchanged,
                restored,
                encoded,
                moved,
                token,
            ):
                self._check_writer(state.session_id, writer, token)
                cap = self._checkpoint_cap() if wanted_cap is None else wanted_cap
                store = catalog.checkpoints(project)
                write = (
                    partial(store.write_unless_unchanged, restored=restored)
                    if unless_unchanged
                    else partial(store.write, dry_run=dry_run, made=made)
                )

                def write_checkpoint() -> Checkpoint | Unchanged:
                    for turn in () if dry_run else moved:  # first: the entry names them
                        catalog.keep_moved_turn(project, turn, secrets)
                    return write(
                        state,
                        workspace,
                        paths,
                        reason=reason,
                        cap=cap,
                        now=utc_now(),
                        secrets=secrets,
                        keep=keep,
                        last_request=last_request,
                        encoded=encoded,
                        moved=tuple(turn.name for turn in moved),
                    )

                return await self._io(write_checkpoint)
            case ListCheckpoints(project, session_id):
                return await self._io(lambda: catalog.checkpoints(project).listed(session_id))
            case LoadCheckpoint(project, session_id, number):
                return await self._io(lambda: catalog.checkpoints(project).load(session_id, number))
            case LoadConversation(project, checkpoint):
                return await self._io(partial(_conversation, catalog, project, checkpoint))
            case CheckBlobs(project, checkpoint, paths):
                store = catalog.checkpoints(project)
                return await self._io(lambda: store.check_blobs(checkpoint, paths))
            case RestoreFiles(
                project, workspace, session_id, number, paths, writer, delete, asked, token
            ):
                self._check_writer(session_id, writer, token)
                store = catalog.checkpoints(project)

                def restore() -> RestoredFiles:
                    checkpoint = store.load(session_id, number)
                    return store.restore_files(workspace, checkpoint, paths, delete, asked)

                return await self._io(restore)
            case ScrubSession(project, session_id, secrets):

                def scrub() -> int:
                    return catalog.scrub_written(project, session_id, secrets)

                return await self._io(scrub)
            case _:
                assert_never(message)

    @staticmethod
    def _checkpoint_cap() -> int:
        """The per-session cap, read at each checkpoint (a bad value is told then)."""
        try:
            return cap_bytes()
        except ValueError as exc:
            raise CheckpointError(str(exc)) from exc
