"""TerminalActor: one per attached terminal pid; owns that terminal's SessionLifecycle.

Every operation on the session (open, turns, /save, /reset, autosave on
detach) is handled one at a time in mailbox order, which is what serializes
"autosave on crash vs /reset vs resume" without shared state. What the
terminal should see goes to ``outbox`` as ``TerminalOutput`` messages; the
supervisor's connection handler turns them into frames.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import itertools
import logging
import os
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal, assert_never

import anyio
import anyio.lowlevel
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import ValidationError
from pydantic_ai.messages import ModelMessage

from actors.base import Actor, ActorRef, Ask, DeadActor, Envelope, next_item
from actors.compaction import LLM_BLOCKING_TIMEOUT_S, OFFLINE, TOO_LONG_BECAUSE
from actors.log_scrub import scrub_logs_of
from actors.messages import (
    AskUser,
    CancelCurrentTurn,
    CancelTurn,
    CheckBlobs,
    CheckFloodOver,
    CheckpointBeforeWrite,
    Claim,
    Closed,
    CommandOutput,
    Compact,
    Compacted,
    CompactionMessage,
    CompactionWaitOver,
    ConfirmAnswer,
    Detach,
    DriftMessage,
    FilesChanged,
    Finishing,
    Handover,
    Info,
    KeepContext,
    KeepSessionFile,
    KeepUnsaved,
    ListCheckpoints,
    LLMMessage,
    LoadCheckpoint,
    LoadConversation,
    LoadKeptContext,
    LoadRecovered,
    LoadSession,
    MarkUnseen,
    Opened,
    OpenSession,
    Release,
    RemovePointer,
    RemoveSession,
    ReplyText,
    RestoreFiles,
    RunCommand,
    SavePointer,
    SaveSession,
    ScrubSession,
    StartTurn,
    StopCompaction,
    StorageMessage,
    Summarize,
    SummaryReady,
    TakeUnseen,
    TakeUpOver,
    TellHeldChanges,
    TerminalMessage,
    TerminalOutput,
    ToolCallLine,
    Trigger,
    TurnDelta,
    TurnDone,
    TurnEnded,
    TurnToolCall,
    Unwatch,
    UserTurn,
    Watch,
    WatchUnavailable,
    WriteCheckpoint,
    Writing,
    Wrote,
)
from actors.turn_lines import (
    TURNS_LEFT_OUT_LINE,
    checkpoint_failed,
    compaction_failed_line,
    message_over_budget_line,
    over_budget_line,
    over_budget_uncompacted_line,
    stop_note,
)
from session.catalog import reset_refused_line
from session.checkpoints import (
    Checkpoint,
    Reason,
    RestorePlan,
    Unchanged,
    changed_lines,
    failed_lines,
    last_user_text,
    listing_lines,
    moved_missing_line,
    named,
    parse_number,
    restore_plan,
    turns_missing_line,
)
from session.compacted import turns_missing
from session.compaction import CHARS_PER_TOKEN, Window, estimate_tokens, turns_named
from session.conversation_back import Conversation
from session.design_files import DesignFiles, delete_design_files, design_files
from session.errors import (
    CheckpointCapExceeded,
    CheckpointError,
    LeftBehind,
    SessionDeleted,
    SessionError,
    SessionLive,
)
from session.filesystem import (
    FileDrift,
    detect_file_drift,
    file_modes,
    is_inside,
    unreadable_of,
    unseen_changes,
    what_is_at,
)
from session.interrupted import unanswered_turn
from session.kept_context import KeptContext
from session.known_digests import KnownDigests
from session.last_reply import LastReply, last_reply, missed_reply
from session.leaving import (
    CLOSED_BY_CHAT,
    CUT_WAIT_OVER,
    SHUTDOWN,
    TAKEN_UP,
    WAITING_FOR_LAST_REPLY,
    AwaitCut,
    CutTurn,
    Leave,
    LetTurnFinish,
)
from session.lifecycle import (
    DeletePointer,
    DeleteSession,
    Effect,
    Event,
    KeepOriginal,
    MarkReplyUnseen,
    PersistPolicy,
    Phase,
    ScrubEarlier,
    SessionLifecycle,
    Transition,
    WritePointer,
    WriteSession,
)
from session.live_drift import LiveDrift, changed_during_turn, unexpected
from session.manager import ListedCheckpoints, RestoredFiles, Written
from session.models import Pointer, SessionState, utc_now, validate_session_id
from session.notices import Notices, Told
from session.redaction import scrub_text
from session.resume import RestoredFrom, drift_lines
from session.summary import offline_summary
from session.tracked import (
    AGENT_SPEC,
    TEMPLATE_DIR,
    drift_at_resume,
    only,
    tracked_files,
    tracked_files_and,
)
from session.turns import answered
from session.unanswered import NO_REPLY_PREFIX, unanswered_message
from session.waits import wait_words
from session.wire import wire_chars
from session.write_failures import (
    failure_line,
    pointer_name,
    pointer_unwritten_line,
)

NOT_OURS_TO_KEEP = (SessionDeleted, SessionLive)
"""A save refused for these is not kept aside at exit: the session was deleted on purpose
(``/reset``), or another terminal holds it. Any other failed save is (a sessions
directory that became a file, a full disk, a newer file on disk): the turns are kept in
``recovered/``, never lost."""

log = logging.getLogger("agent_assist.terminal")

SUMMARY_AFTER_EXIT_TIMEOUT_S = 10.0
SUMMARY_AFTER_EXIT_LOST = "summary after exit of session %s not written: %s"
"""supervisor.log's line for a summary after exit that never reached the file: its terminal
is gone, the next start tells nothing (the exit's write holds the offline summary)."""
STOPPED_FIRST = (
    "the supervisor stopped before the summary model answered; the offline summary is kept"
)
EXIT_COMPACTION_WAIT_S = 3.0
"""How long a chat's exit waits for the compaction in flight before its last line: a
summary model that fails fast (refused, a 4xx, a 5xx met again) is told; one that hangs
is not waited for (its compaction is kept after the exit, as before)."""
EXIT_SAVE_RETRIES_S = (0.2, 1.0)
_ACTOR_TOKENS = itertools.count(1)
"""Pauses before each retry of an exit save that failed (a transient EIO, a disk freed)."""
STORAGE_TIMEOUT_S = 30.0
NO_SESSION = "no session is open"
COMMAND_EVENTS = {"save": Event.SAVE, "reset": Event.RESET, "compact": Event.COMPACT}
"""Commands the lifecycle's table may refuse (in a turn: the reply ends first)."""
COMPACTION_TIMEOUT_S = 60.0
GIVEN_UP_KEPT = 4
"""The compactions given up on whose late answers are recognized (and not kept)."""
SLOW_COMPACTION_S = 1.0
COMPACTING_LINE = (
    "note: compacting to fit the token budget (waiting for the summary model, up to "
    f"{wait_words(LLM_BLOCKING_TIMEOUT_S)})"
)
"""Told when the compaction a message waits for takes longer than ``SLOW_COMPACTION_S``."""
COMPACTING_NOW_LINE = (
    f"note: compacting (waiting for the summary model, up to {wait_words(LLM_BLOCKING_TIMEOUT_S)}, "
    "then offline)"
)
"""``/compact``'s, told alike."""
NOT_SHORTER_AGAIN_LINE: Final = (
    "Not compacted: a summary would not be shorter (~{tokens:,} tokens); "
    "nothing changed since the last try"
)
"""``/compact`` of a window whose summary came back no shorter, unchanged since: no
summarizer is asked again (``SessionLifecycle.known_no_shorter``)."""
COMPACTING_OFFLINE_LINE = "note: compacting the conversation to fit the token budget"
COMPACTING_NOW_OFFLINE_LINE = "note: compacting the conversation"
"""The same with the offline summarizer: no summary model is waited for (a window of long
turns is what takes a while)."""


def compacting_line(trigger: Trigger, summary_model: str | None) -> str:
    """What a user waiting for a compaction is told after ``SLOW_COMPACTION_S``: the wait
    for the summary model only when one is asked (None: the supervisor's own)."""
    if summary_model == OFFLINE:
        return COMPACTING_OFFLINE_LINE if trigger == "tokens" else COMPACTING_NOW_OFFLINE_LINE
    return COMPACTING_LINE if trigger == "tokens" else COMPACTING_NOW_LINE


KEPT_AS_FAR_AS_IT_GOT = (
    "note: the reply is kept as far as it got (a tool of it had run: the assistant is told "
    "what it did)"
)
NOT_RUN_AGAIN = (
    "the supervisor stopped after this reply's tools ran, before the reply was saved; the "
    "message was not sent again, so its tools do not run twice (what they wrote is on "
    "disk): send it again to have it redone"
)
"""The end of a retry that is answered only if saved (``UserTurn.saved_only``)."""
DETACH_TURN_WAIT_S = 5.0
"""How long an exit waits for the end of the turn it cut (what its tools did is kept)."""
DETACH_FINISH_WAIT_S = 300.0
"""How long a turn whose terminal went away (not a Ctrl+C: kill -9, a closed window, a
dropped SSH) is let run to its end and be saved before it is cut (the supervisor's
``AGENT_ASSIST_FINISH_WAIT_S`` says otherwise: ``TerminalConfig.finish_wait_s``)."""
FINISHES_ALONE = frozenset({"disconnected"})
"""The detach reasons (the connection ended with no ``close`` frame) that let a running
turn finish: nobody asked the reply to stop. An exit asked for (a supervisor stop, a Ctrl+C
of the chat taking the session up, ``TAKEN_UP``) cuts it."""
KEPT_UNANSWERED = "note: the message is kept in the session, marked unanswered"
SAVED_AGAIN = "note: the session is saved again (the saves that failed are made good)"


MIN_LEARNED_BUDGET = 1_024
"""The lowest token budget a model's refusal of a request as over its context window
brings a chat's budget down to, unless the refusal stated a window smaller than it."""


def learned_budget(refused_tokens: int, stated_window: int | None) -> int:
    """The token budget a refusal as over the context window teaches: three quarters of
    the refused request (not under ``MIN_LEARNED_BUDGET``), and of the window the refusal
    stated (a request far over the window left three quarters of it still over: H88).
    The stated window wins over the floor: a budget over the window (a model run with a
    small n_ctx) compacted nothing, and every message was refused (H91)."""
    budget = max(MIN_LEARNED_BUDGET, refused_tokens * 3 // 4)
    return budget if stated_window is None else min(budget, stated_window * 3 // 4)


def context_full_line(after: int, budget: int) -> str:
    """Said as the message is sent again (a Ctrl+C waiting may still cancel it: the line
    announces the resend, not its reply; and with compaction off the turns left out are
    not summarized: "compacted" would say more than was done). One short line: the
    refusal, the request's new size and the chat's budget from now on."""
    return (
        "note: the model refused it as over its context window; sent again at "
        f"~{after:,} tokens, budget ~{budget:,}"
    )


def _kept_status(done: TurnDone) -> Literal["ok", "cancelled", "error"]:
    """How a turn that is kept ended: whole, or cut after a tool ran (by the user, or by a
    failure of the model: its error is told)."""
    if done.error is not None:
        return "error"
    return "cancelled" if done.cancelled else "ok"


@dataclass(frozen=True)
class _Message:
    """A user message sent to the model: kept to send it again, once."""

    text: str
    message_id: str | None
    again: bool = False
    """It is being sent again."""
    error: str | None = None
    """Why the model refused it (told if sending it again cannot help)."""
    window: int | None = None
    """The context window the refusal stated, if it stated one."""


@dataclass(frozen=True)
class Peers:
    storage: ActorRef[StorageMessage]
    llm: ActorRef[LLMMessage]
    compaction: ActorRef[CompactionMessage]
    drift: ActorRef[DriftMessage]


@dataclass(frozen=True)
class TerminalConfig:
    terminal_pid: int
    terminal_start_time: float | None
    workspace: Path
    project: Path
    model: str
    policy: PersistPolicy = PersistPolicy()
    summary_model: str | None = None
    """The session's summary model (``offline``: the offline summarizer; None: the
    CompactionActor's own)."""
    stall_timeout_s: float | None = None
    """The session's model timeout (None: the LLMActor's own)."""
    checkpoint_cap: int | None = None
    """The session's checkpoint size cap in bytes (None: the StorageActor's own)."""
    acknowledges_tool_lines: bool = False
    """Whether the outbox's reader sets each ``ToolCallLine.delivered`` once the line is
    written to the terminal (the connection's writer does): the tool waits for that."""
    finish_wait_s: float = DETACH_FINISH_WAIT_S
    """How long the turn of a terminal gone is let run before it is cut."""


def compacted_at_resume_line(effect: KeepOriginal, kept: Path) -> str:
    """The one short line that tells a resume compacted turns its file held in full (or,
    with automatic compaction off, left them out of the session), and where the file as
    it was is kept."""
    compaction = effect.compacted
    if compaction is None:
        turns = "turn" if effect.left_out == 1 else f"{effect.left_out:,} turns"
        return f"note: oldest {turns} dropped (compaction off); old file: {kept.name}"
    turns = turns_named(compaction.start_invocation, compaction.end_invocation)
    return f"note: {turns} compacted offline on resume; old file: {kept.name}"


def not_kept_aside_line(effect: KeepOriginal, exc: BaseException) -> str:
    """The one line that refuses a resume whose session file could not be kept aside
    before the resume compacted (or left out) turns the file holds in full."""
    compaction = effect.compacted
    if compaction is None:
        left = "turn" if effect.left_out == 1 else f"{effect.left_out:,} turns"
        what = (
            "more turns than automatic compaction off (compaction_interval 0) keeps: its "
            f"oldest {left} would be left out of it"
        )
    else:
        turns = turns_named(compaction.start_invocation, compaction.end_invocation)
        what = f"every turn uncompacted: {turns} would be compacted now"
    reason = " ".join(str(exc).split()) or type(exc).__name__
    return (
        f"session {effect.session_id}'s file holds {what}, and the file as it was could not "
        f"be kept aside first ({reason}); nothing was changed: resume it again once its "
        "directory can be written to, or start a new session (--new)"
    )


WATCH_TIMEOUT_S = 5.0
"""How long a reset waits for its files' watch to be in place."""


WRITE_WITHOUT_UNDO = (
    "the assistant's write goes ahead without the automatic checkpoint before it: "
    "no /checkpoint can undo it"
)
"""What the cap's line adds when the checkpoint it refused is the one before a write."""


def _described(exc: BaseException) -> str:
    """An error in words: an OSError's reason and file, not ``[Errno 13] ...``."""
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    return str(exc) or type(exc).__name__


WORKSPACE_GONE_LINE = (
    "Files not restored: the workspace {workspace} is not there any more (moved or deleted)."
)
"""The restore's line about the files when the workspace is gone (none is asked about)."""
SAME_FILES_LINE = "Tracked files are as at checkpoint {number}: none to restore."
"""The restore's line about the files when none differs from the checkpoint's."""


UNREADABLE_CHECKPOINT = (
    "error: checkpoint {number} not restored; nothing changed: it holds messages this "
    "agent-assist cannot read; left untouched"
)


def _restore_refused(number: int, exc: BaseException) -> str:
    """The one line of a restore refused because its undo checkpoint cannot be written
    (never for the size cap, which that checkpoint may pass)."""
    return (
        f"error: checkpoint {number} not restored; nothing changed: the checkpoint that "
        f"would undo the restore cannot be written ({_described(exc)})"
    )


class TerminalActor(Actor[TerminalMessage]):
    name = "terminal"

    def __init__(
        self,
        self_ref: ActorRef[TerminalMessage],
        config: TerminalConfig,
        peers: Peers,
        outbox: MemoryObjectSendStream[TerminalOutput],
    ) -> None:
        self._self = self_ref
        self._config = config
        self._peers = peers
        self._outbox = outbox
        self._mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]] | None = None
        self._aside: collections.deque[Envelope[TerminalMessage]] = collections.deque()
        """Messages taken from the mailbox while a compaction was waited for: handled
        next, in their order (``_wait_for_compaction``)."""
        self._given_up: collections.deque[Window] = collections.deque(maxlen=GIVEN_UP_KEPT)
        """The windows of the last compactions waited for and given up on (cancelled, or
        no answer in time): an answer that comes for one later is not kept."""
        self._lc = SessionLifecycle(policy=config.policy)
        self._token = next(_ACTOR_TOKENS)
        """This actor's own id for its claims and writes (the terminal pid is shared by the
        actor that leaves and the one that arrives)."""
        self._unsaved = False
        """The last write of the session failed: turns exist only in memory (retried at the
        next turn and at exit; kept for recovery if the exit write fails too)."""
        self._failure_told: dict[str, set[type[Effect]]] = {}
        """Each failure told, and the kinds of write that failed so since, until each works:
        a failure is told once (the same refusal of a pointer and of a save too), and a
        save that works again after one says so."""
        self._pointer_failed: Exception | None = None
        """Why the last write of this tab's pointer failed, until one works: retried by the
        first save; at an exit with nothing saved, the session could not be (told, the
        run fails: the failure line alone reads as a save retried and made good)."""
        """The last disk failure told the terminal: the same one again is not repeated."""
        self._kept_as: dict[str, str] = {}
        """The name of each session's recovery copy (written again at each failed save)."""
        self._turn_count = 0
        self._request_tokens = 0
        """The estimated size of the turn's request, for a model that counts none."""
        self._confirm: int | None = None
        self._confirm_count = 0
        self._on_confirm: Callable[[bool], Awaitable[None]] | None = None
        """What the answer to the pending question does."""
        self._confirm_event = Event.SAVE
        """The lifecycle event that action performs (the table may refuse it by then)."""
        self._hashing_at_each_turn = False
        """The DriftWatcher cannot watch: tracked files are compared at each turn instead."""
        self._history_at_restore: tuple[Any, ...] | None = None
        self._restored_to: int | None = None
        """The checkpoint the last restore took the conversation back to."""
        """The history a restore brought back: until a turn changes it, a summary that
        arrives was asked for the conversation before the restore, and is dropped."""
        self._notices = Notices()
        """The notices told lately and those held back: the changes outside (bursts, a
        flood's line) and the background ones held while a reply streams
        (``session/notices.py``)."""
        self._compaction_told: set[Trigger] = set()
        """What triggered the automatic compactions told (each is told once a run)."""
        self._offline_told = False
        """The summary model failed and the terminal was told the offline summarizer
        stands in (once, until the model writes again)."""
        self._learned_untold: tuple[str, ...] = ()
        """Values found secret (``ScrubEarlier``) that no ``TurnEnded`` told yet."""
        self._left_out_told = False
        """``TURNS_LEFT_OUT_LINE`` was told this run."""
        self._summary_covers: tuple[ModelMessage, ...] | None = None
        """The history the last summary kept was made of (the exit asks for none again)."""
        self._drift = LiveDrift()
        """The files changed outside and what the model was told of them
        (``session/live_drift.py``)."""
        self._message: _Message | None = None
        """The running (or last) turn's user message."""
        self._turn_writes: set[str] = set()
        """The paths the running turn's tools were called to write (``TurnToolCall``)."""
        self._known: tuple[dict[str, str], str | None] | None = None
        self._digests = KnownDigests()
        """The tracked files read for a manifest, known by ``lstat`` while unchanged (a
        turn that writes one file does not read 2,000 templates again). Used by one
        worker-thread call at a time: this actor's, awaited."""
        self._watched: dict[str, str] | None = None
        self.released = anyio.Event()
        """Set once the exit autosave is done and the session is released."""
        self.finishing = anyio.Event()
        """Set once the turn of its terminal gone finishes alone: the session is another's
        to take up (the StorageActor hands it over at the release)."""

    # -- the loop: a failure saves what the actor holds and is reported ----

    async def serve(self, mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]]) -> None:
        self._mailbox = mailbox
        try:
            while (envelope := await self._next_envelope(mailbox)) is not None:
                try:
                    result = await self.handle(envelope.message)
                except Exception as exc:
                    if envelope.reply is not None:
                        envelope.reply.fail(exc)
                    else:
                        await self._on_failure(exc, envelope.message)
                else:
                    if envelope.reply is not None:
                        envelope.reply.set(result)
        finally:
            self.released.set()
            for envelope in self._aside:  # stopped while a compaction was waited for
                if envelope.reply is not None:
                    envelope.reply.fail(DeadActor(f"{self.name} stopped"))
            with anyio.CancelScope(shield=True):
                await self._emergency_save()

    async def _next_envelope(
        self, mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]]
    ) -> Envelope[TerminalMessage] | None:
        """The next message to handle: those set aside during a wait first."""
        if self._aside:
            return self._aside.popleft()
        return await next_item(mailbox)

    async def _on_failure(self, exc: Exception, message: TerminalMessage) -> None:
        """Save what the actor holds and tell the terminal in the frame it waits for: a
        command's result, a turn's end, or else a notice (a terminal waiting for one of the
        first two would otherwise wait for ever)."""
        log.exception("terminal %d: handling failed", self._config.terminal_pid)
        if isinstance(message, UserTurn | TurnDone) and self._lc.turn is not None:
            with contextlib.suppress(DeadActor):
                await self._peers.llm.tell(CancelTurn(self._lc.turn, self._self))
            self._lc = self._lc.abandon_turn()
        # scrubbed before the cut (a value at the cut would keep its head), on one line
        text = " ".join(scrub_text(str(exc), self._lc.policy.known_secrets).split())[:300]
        saved = await self._emergency_save(failed=f"{type(exc).__name__}: {text}")
        line = (
            f"internal error ({type(exc).__name__}: {text}); "
            f"{'session saved' if saved else 'nothing to save'}"
        )
        if isinstance(message, RunCommand | ConfirmAnswer):
            await self._emit(CommandOutput(f"error: {line}"))
        elif isinstance(message, UserTurn | TurnDone):
            await self._emit(TurnEnded("error", line))
        else:
            await self._emit(Info(f"error: {line}"))

    async def _emergency_save(self, *, failed: str | None = None) -> bool:
        """Write what the actor last held, if anything is worth writing (a turn it was in,
        its message kept unanswered): the actor stops (the supervisor does), or a handler
        ``failed`` (its error's type and text) while the turn may still run."""
        lc = self._lc.with_turn_unanswered(self._unanswered_at_exit(SHUTDOWN, failed=failed))
        if not lc.is_open or lc.session_deleted or not (lc.saved or lc.history):
            return False
        assert lc.state is not None
        return await self._perform(
            [lc.write(utc_now(), lc.state.file_manifest, lc.state.agent_spec_path)]
        )

    # -- messages -----------------------------------------------------------

    async def handle(self, message: TerminalMessage) -> Any:
        match message:
            case OpenSession(mode, session_id, continuing):
                return await self._open(mode, session_id, continuing)
            case UserTurn(text, message_id, saved_only):
                await self._start_turn(text, message_id, saved_only=saved_only)
            case TurnDelta(turn_id, text):
                if turn_id == self._lc.turn:
                    await self._emit(ReplyText(text))
            case TurnDone():
                await self._finish_turn(message)
                if self._lc.phase is Phase.LEAVING:  # the turn of a terminal gone ended
                    await self._detach(self._lc.leaving or "disconnected")
            case TurnToolCall(turn_id, text, writes, delivered):
                if turn_id == self._lc.turn and self._lc.leaving is not None:
                    if delivered is not None:  # a terminal gone never gets it: no tool runs
                        delivered.set(False)
                elif turn_id == self._lc.turn:
                    self._turn_writes.update(writes)
                    await self._claim_writes(writes)
                    await self._emit(ToolCallLine(text, delivered))
                elif delivered is not None:
                    delivered.set(None)  # no terminal waits for it
            case CancelCurrentTurn():
                if self._lc.turn is not None:
                    await self._peers.llm.tell(CancelTurn(self._lc.turn, self._self))
            case RunCommand(name, arg):
                await self._command(name, arg)
            case ConfirmAnswer(confirm_id, _, True):
                if confirm_id == self._confirm:
                    self._confirm = None
                    self._on_confirm = None
                    await self._emit(CommandOutput("Cancelled; nothing was changed."))
            case ConfirmAnswer(confirm_id, answer):
                if confirm_id == self._confirm:
                    self._confirm = None
                    action, self._on_confirm = self._on_confirm, None
                    if action is not None and not self._lc.allows(self._confirm_event):
                        await self._emit(
                            CommandOutput("error: a reply is running; nothing was changed")
                        )
                    elif action is not None:
                        await action(answer)
            case CheckpointBeforeWrite(turn_id, paths):
                if turn_id == self._lc.turn:
                    return await self._checkpoint_before_write(paths)
            case WatchUnavailable(reason):
                await self._watch_unavailable(reason)
            case FilesChanged(paths, digests, by):
                gone = frozenset(p for p, digest in zip(paths, digests, strict=False) if not digest)
                writers = {p: w for p, w in zip(paths, by, strict=False) if w}
                # with no watcher, a report of what the terminal expects is no news
                expected = self._watched if self._hashing_at_each_turn else None
                self._drift, paths = self._drift.seen(*unexpected(paths, digests, expected))
                if not paths:
                    return None
                # The watcher's baseline is now what it saw, no longer ``_watched``: the
                # next ``_watch`` tells it what to expect, even an unchanged manifest; and
                # the manifest is hashed anew after the next turn (the one kept would
                # give the watcher the old digest back, and the change be told again).
                self._watched = None
                self._known = None
                if self._lc.in_turn:  # told now unless the turn writes it
                    self._drift, paths = self._drift.during_turn(paths, self._turn_writes)
                if paths:
                    unread: frozenset[str] = frozenset()
                    if missing := gone & set(paths):  # only a file gone can be unreadable
                        unread = await anyio.to_thread.run_sync(
                            unreadable_of, self._config.workspace, missing
                        )
                    await self._note_changes(paths, gone, writers=writers, unread=unread)
            case SummaryReady(session_id, summary, covers, offline_because):
                # After the exit, whose write holds a summary of every turn, one asked for
                # before the last turns (a slow summary model) would put it back behind.
                late = self._lc.phase is Phase.CLOSED and covers is not self._lc.history
                if self._lc.history is not self._history_at_restore and not late:
                    await self._record_summary(session_id, summary)
                    self._summary_covers = covers
                await self._tell_offline(offline_because)
            case Compacted():
                await self._keep_compaction(message)
            case CompactionWaitOver() | TakeUpOver():
                pass  # the wait it ends had its answer first, or was given up
            case TellHeldChanges():
                await self._tell_held_changes()
            case CheckFloodOver():
                await self._check_flood_over()
            case Detach(reason):
                await self._detach_during_turn(reason)
        return None

    async def _open(
        self, mode: str, session_id: str | None, continuing: str | int | None = None
    ) -> Opened:
        """``continuing``: the session the terminal never left, after the supervisor went
        away (the protocol's ``Continuing``): it goes on with the kind of context it had,
        rebuilt from the file. Its drift (what changed since its last save: while nobody
        watched, or noticed and not yet told) is told as changes outside, not in that
        context: a file the first resume had named "modified" changed again gave the model
        no new word of it."""
        if self._lc.phase is not Phase.UNSTARTED:
            raise SessionError("a session is already open in this terminal")
        pid = self._config.terminal_pid
        storage = self._peers.storage
        drift_text: tuple[str, ...] = ()
        kept_line: str | None = None
        outside: tuple[str, ...] = ()
        compared: dict[str, str] = {}
        stored_state: SessionState | None = None
        drift_found: FileDrift | None = None
        waited_for: LastReply | None = None
        unanswered: str | None = None
        if mode == "new":
            transition = self._lc.start_fresh(utc_now(), session_id)
            new_id = transition.lifecycle.session_id
            assert new_id is not None
            claim = Claim(new_id, pid, self._token, new_in=self._config.project)
            await storage.ask(claim, STORAGE_TIMEOUT_S)
        else:
            wanted = validate_session_id(session_id or "")
            claim = Claim(wanted, pid, self._token, stored_in=self._config.project)
            handover = await storage.ask(claim, STORAGE_TIMEOUT_S)
            try:
                if handover is not None:
                    await self._take_up(wanted, handover)
                stored = await storage.ask(
                    LoadSession(self._config.project, wanted, "unscrubbed", "move"),
                    STORAGE_TIMEOUT_S,
                )
                stored = await self._with_turns_kept_aside(stored)
                take = TakeUnseen(self._config.project, wanted)
                if handover is not None:  # the turn waited for ends the session's messages
                    waited_for = last_reply(stored.recent_messages)
                    await storage.tell(take)  # shown now: its mark goes (not waited for)
                elif continuing is None and await storage.ask(take, STORAGE_TIMEOUT_S):
                    waited_for = missed_reply(stored.recent_messages)  # nobody saw it
                if waited_for is None and continuing is None:  # else said, or known
                    unanswered = unanswered_message(stored.recent_messages)
                drift = await anyio.to_thread.run_sync(
                    drift_at_resume, self._config.workspace, stored.file_manifest
                )
                drift_text = tuple(drift_lines(drift))
                self._drift = self._drift.resumed(drift)
                compared = drift.as_compared(stored.file_manifest)
                stored_state, drift_found = stored, drift
                if continuing == "fresh":  # no context to tell the drift: changes outside
                    transition = await self._resumed(stored, drift, context=False)
                    outside = (*drift.modified, *drift.deleted)
                elif continuing is not None:  # the context it had; the drift, outside
                    kept = await self._kept_context(wanted, continuing)
                    restored = await self._restored_from(wanted, continuing)
                    transition = await self._resumed(
                        stored, drift, restored, drift_in_context=False, kept=kept
                    )
                    outside = (*drift.modified, *drift.deleted)
                else:
                    transition = await self._resumed(stored, drift)
                    self._drift = self._drift.in_context(drift, stored.file_manifest)
                transition, kept_line = await self._keep_original_first(transition)
            except ValidationError as exc:
                await storage.ask(Release(wanted, pid, self._token), STORAGE_TIMEOUT_S)
                raise SessionError(
                    f"session file {wanted}.json holds messages this agent-assist cannot "
                    "read; left untouched"
                ) from exc
            except BaseException:
                await storage.ask(Release(wanted, pid, self._token), STORAGE_TIMEOUT_S)
                raise
        self._lc = transition.lifecycle
        state = transition.lifecycle.state
        if state is not None and state.summary:  # a resume with no turn asks for none
            self._summary_covers = self._lc.history
        if kept_line is not None:
            await self._emit(Info(kept_line))
        await self._perform(transition.effects)
        if mode == "resume" and continuing is None:
            await self._keep_context("resumed")
        manifest, _ = await self._manifest()
        # The files the drift looked at are watched from what it found: one changed since
        # (a flood while the supervisor was replaced) is told by the watcher's first look.
        await self._watch({**manifest, **compared})
        if outside:
            await self._note_changes(outside, at_reattach=True)
        opened = Opened(
            transition.lifecycle.session_id or "",
            resumed=mode == "resume",
            drift=drift_text,
            phase=state.phase if state else None,
            last_reply=waited_for,
            unanswered=unanswered,
        )
        await self._emit(opened)
        if stored_state is not None and drift_found is not None:
            cut_short = await self._restore_cut_short(stored_state, drift_found)
            if cut_short is not None:
                await self._emit(Info(cut_short))
        return opened

    async def _take_up(self, session_id: str, handover: Handover) -> None:
        """Wait until the session, whose turn finishes for a terminal gone, is released to
        this actor (its turn saved), reading the mailbox as ``_wait_for_compaction`` does:
        a Ctrl+C (``CancelCurrentTurn``) has the holder cut the turn (kept unanswered) and
        the wait goes on for its end; the terminal leaving (``Detach``, set aside) or the
        bound (the holder's finish wait and its cut's) gives the wait up: SessionError."""
        assert self._mailbox is not None
        await self._emit(Info(WAITING_FOR_LAST_REPLY))
        bound = self._config.finish_wait_s + 2 * DETACH_TURN_WAIT_S + STORAGE_TIMEOUT_S
        cut = False
        async with anyio.create_task_group() as timers:
            timers.start_soon(self._tell_when_over, handover, bound)
            try:
                while (envelope := await next_item(self._mailbox)) is not None:
                    match envelope.message:
                        case TakeUpOver(over, released) if over is handover:
                            if released:
                                return
                            break
                        case CancelCurrentTurn() if not cut:  # a second would not wait
                            cut = True  # for the cut turn's end
                            with contextlib.suppress(DeadActor):  # gone: released already
                                await handover.holder.tell(Detach(TAKEN_UP))
                        case CancelCurrentTurn():
                            pass
                        case Detach():
                            self._aside.append(envelope)
                            break
                        case _:
                            self._aside.append(envelope)
            finally:
                timers.cancel_scope.cancel()
        raise SessionError(f"session {session_id}: gave up waiting for its last reply to end")

    async def _tell_when_over(self, handover: Handover, bound: float) -> None:
        with anyio.move_on_after(bound):
            await handover.released.wait()
        self._self.tell_when_room(TakeUpOver(handover, handover.released.is_set()))

    async def _restore_cut_short(self, stored: SessionState, drift: FileDrift) -> str | None:
        """The line that says a restore of ``stored`` was cut short (a supervisor killed
        among its writes), if what is on disk tells so: the session's last checkpoint U is
        the one a restore wrote first, to undo it, and tracked files it was to write over
        that differ from the session's manifest still hold U's content (or are absent, the
        restore being to make them). None otherwise."""
        number = stored.checkpoint_count
        if number < 1 or not drift.changed:
            return None
        try:
            undo: Checkpoint = await self._peers.storage.ask(
                LoadCheckpoint(self._config.project, stored.session_id, number),
                STORAGE_TIMEOUT_S,
            )
        except (SessionError, OSError, ValidationError, DeadActor, TimeoutError) as exc:
            log.info("checkpoint %d of %s: %s", number, stored.session_id, exc)
            return None
        if undo.reason != "restore":
            return None
        # Only the files it was to write over: one a restore of the conversation alone left
        # as it was holds U's content too (the file keeps N's digest, for the drift to be
        # told), and was named as left by a restore cut short.
        over = set(undo.written_over)
        left = [
            p for p in drift.modified if p in over and drift.found.get(p) == undo.files.get(p)
        ]
        left += [p for p in drift.deleted if p in undo.made]
        if not left:
            return None
        return (
            f"note: the last restore of this session was cut short: {named(left)} "
            f"{'holds' if len(left) == 1 else 'hold'} what {'it' if len(left) == 1 else 'they'} "
            f"held before it; /checkpoint {number} undoes the restore"
        )

    async def _with_turns_kept_aside(self, stored: SessionState) -> SessionState:
        """The session a resume goes on with: its recovery copy, if its saves had failed
        since the file was written (the copy holds turns the file lacks; going on from
        the file dropped them from the conversation without a word: after the supervisor
        went away, and after a terminal killed while the disk was full)."""
        try:
            found = await self._peers.storage.ask(
                LoadRecovered(self._config.project, stored), STORAGE_TIMEOUT_S
            )
        except (SessionError, OSError, ValidationError, DeadActor, TimeoutError) as exc:
            log.warning("recovery copy of %s not read: %s", stored.session_id, exc)
            return stored
        if found is None:
            return stored
        path, kept = found
        self._kept_as[kept.session_id] = path.name  # failing again, the same copy is written
        await self._emit(
            Info(
                f"note: going on with the turns kept in {path} when the session's saves "
                "failed (its file lacks them)"
            )
        )
        return kept

    async def _resumed(
        self,
        stored: SessionState,
        drift: FileDrift,
        restored: RestoredFrom | None = None,
        kept: KeptContext | None = None,
        *,
        context: bool = True,
        drift_in_context: bool = True,
    ) -> Transition:
        """``SessionLifecycle.resume`` in a worker thread: reading back, checking and
        encoding again a session of long turns takes a while (seconds for a 30 MB file),
        and on the event loop every other terminal of the supervisor waited for it. The
        lifecycle is immutable: the call is pure."""
        resume = partial(
            self._lc.resume,
            stored,
            drift,
            restored,
            kept_context=kept,
            context=context,
            drift_in_context=drift_in_context,
        )
        return await anyio.to_thread.run_sync(resume)

    async def _keep_original_first(self, transition: Transition) -> tuple[Transition, str | None]:
        """Keep the session file as it is aside before the resume ``transition`` is taken,
        when it compacted (or left out) turns the file holds in full: the next save drops
        them from the file. The transition without that effect, and the line that tells
        where the file was kept (None if there was nothing to keep). If it cannot be kept
        (a full disk, a directory that refuses it), the resume is refused (SessionError,
        one line) and nothing is changed: going on dropped those turns at the next save
        with no copy of them anywhere."""
        keep = next((e for e in transition.effects if isinstance(e, KeepOriginal)), None)
        if keep is None:
            return transition, None
        try:
            kept = await self._peers.storage.ask(
                KeepSessionFile(self._config.project, keep.session_id), STORAGE_TIMEOUT_S
            )
        except Exception as exc:
            log.warning(
                "terminal %d: %s not kept aside: %s",
                self._config.terminal_pid,
                keep.session_id,
                exc,
                exc_info=not isinstance(exc, SessionError | OSError | DeadActor | TimeoutError),
            )
            raise SessionError(not_kept_aside_line(keep, exc)) from exc
        rest = tuple(e for e in transition.effects if e is not keep)
        return dataclasses.replace(transition, effects=rest), compacted_at_resume_line(keep, kept)

    async def _keep_context(self, kind: str | int) -> None:
        """Keep the resume context the session was just given (resumed, or taken back to
        checkpoint ``kind``): a supervisor that takes over after this one died gives it
        the same, not one rebuilt from the file saved since. Not kept: logged (the one
        that takes over rebuilds it, as it did)."""
        session_id = self._lc.session_id
        assert session_id is not None
        kept = KeptContext(kind, self._lc.resume_context, self._lc.context_decisions)
        message = KeepContext(
            self._config.project, session_id, kept, self._config.terminal_pid, self._token
        )
        try:
            await self._peers.storage.ask(message, STORAGE_TIMEOUT_S)
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            log.warning("resume context of %s not kept: %s", session_id, exc)

    async def _kept_context(
        self, session_id: str, continuing: str | int
    ) -> KeptContext | None:
        """The context kept for the session the terminal never left, if it is the kind
        the terminal says it had (``continuing``: "resumed", or a checkpoint's number)."""
        try:
            kept: KeptContext | None = await self._peers.storage.ask(
                LoadKeptContext(self._config.project, session_id), STORAGE_TIMEOUT_S
            )
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            log.warning("resume context of %s not read: %s", session_id, exc)
            return None
        return kept if kept is not None and kept.kind == continuing else None

    async def _restored_from(
        self, session_id: str, continuing: str | int | None
    ) -> RestoredFrom | None:
        """The checkpoint a continuing session had been taken back to, if it still has it
        (else its context is a resumed one's)."""
        if not isinstance(continuing, int):
            return None
        try:
            checkpoint: Checkpoint = await self._peers.storage.ask(
                LoadCheckpoint(self._config.project, session_id, continuing), STORAGE_TIMEOUT_S
            )
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            log.info("checkpoint %d of %s: %s", continuing, session_id, exc)
            return None
        return RestoredFrom(checkpoint.number, checkpoint.created_at)

    async def _start_turn(
        self,
        text: str,
        message_id: str | None = None,
        *,
        again: bool = False,
        saved_only: bool = False,
    ) -> None:
        """Send the user's message to the model (``again``: a second time, after the model
        refused it as over its context window and the conversation was compacted). A retry
        of a turn the session saved is answered from it; ``saved_only``, one it did not
        save is not run again (its tools had run before the supervisor died)."""
        if not self._lc.allows(Event.BEGIN_TURN):
            already = self._lc.in_turn
            await self._emit(
                TurnEnded("error", "a reply is already running" if already else NO_SESSION)
            )
            return
        if message_id is not None:
            reply = answered(self._lc.history, message_id)
            if reply is not None and reply.startswith(NO_REPLY_PREFIX):  # saved unanswered
                await self._emit(TurnEnded("error", reply.removeprefix(NO_REPLY_PREFIX)[:-1]))
                return
            if reply is not None:  # a retry of a turn already saved: answer it from there
                log.info(
                    "terminal %d: message %s answered from the session",
                    self._config.terminal_pid,
                    message_id,
                )
                if reply:
                    await self._emit(ReplyText(reply))
                await self._emit(TurnEnded("ok", None))
                return
        if saved_only:
            await self._emit(TurnEnded("error", NOT_RUN_AGAIN))
            return
        await self._compare_tracked_files()
        text_chars = wire_chars(text)  # weighed once: the request below reuses it
        tokens = await self._compact_for_budget(text_chars + wire_chars(self._drift.note))
        if tokens is None:  # Ctrl+C while the compaction before it ran: the message is not sent
            await self._emit(TurnEnded("cancelled", None))
            return
        self._request_tokens = tokens
        self._turn_count += 1
        self._lc = self._lc.begin_turn(self._turn_count, message_id)
        self._message = _Message(text, message_id, again)
        self._drift, notes = self._drift.sent()  # and the context that tells the drift
        try:
            await self._peers.llm.tell(
                self._start_request(text, notes, text_chars + wire_chars(notes))
            )
        except DeadActor:
            self._lc = self._lc.abandon_turn()
            await self._emit(TurnEnded("error", "the model is not available; please try again"))

    def _start_request(self, text: str, notes: str, extra_chars: int) -> StartTurn:
        """``extra_chars``: what ``text`` and ``notes`` weigh on the wire (``wire_chars``)."""
        return StartTurn(
            turn_id=self._turn_count,
            model=self._config.model,
            prompt=text,
            history=tuple(self._lc.request_history(len(text) + len(notes))),
            workspace=self._config.workspace,
            resume_context=self._lc.instructions(),
            notes=notes,
            reply_to=self._self,
            stall_timeout_s=self._config.stall_timeout_s,
            token_budget=self._lc.estimate_budget(),
            message_over_budget=self._lc.message_over_budget(extra_chars),
            tool_lines_delivered=self._config.acknowledges_tool_lines,
            known_secrets=self._lc.policy.known_secrets,
        )

    async def _finish_turn(self, done: TurnDone) -> None:
        if done.turn_id != self._lc.turn:
            return
        # Nothing kept, or kept unanswered: the model never read the note its request
        # carried, and the next request carries it again.
        kept = not (done.cancelled or done.error is not None) or bool(done.new_messages)
        self._drift, deferred, told_in_turn = self._drift.turn_ended(done.written, read=kept)
        watched = self._watched  # the watcher's baseline while the turn ran
        if self._turn_writes or done.written:
            await self._tell_writes_done(dict(done.written))
        self._turn_writes.clear()
        error = done.error and scrub_text(done.error, self._lc.policy.known_secrets)
        resend: _Message | None = None
        unanswered = self._unanswered(done, error)
        if unanswered:
            done = dataclasses.replace(done, new_messages=unanswered)
        if (done.cancelled or done.error is not None) and not done.new_messages:
            self._lc = self._lc.abandon_turn(done.touched)
            if done.touched:  # what it wrote is tracked, watched, and not told as outside
                manifest, _ = await self._manifest(done.touched)
                await self._watch(manifest)
            outside, gone = self._changed_during_turn(deferred, done, watched)
            if done.text:
                await self._emit(ReplyText(done.text))
            resend = self._resendable(done, error)
            if resend is None:
                await self._emit(TurnEnded("cancelled" if done.cancelled else "error", error))
        else:
            try:
                manifest, spec = await self._manifest_after_turn(done.touched)
                outside, gone = self._changed_during_turn(deferred, done, watched)
                transition = self._lc.complete_turn(
                    done.new_messages,
                    # kept unanswered after its terminal left: nobody was active since
                    now=self._lc.state.updated_at
                    if unanswered and self._lc.leaving is not None and self._lc.state
                    else utc_now(),
                    manifest=self._as_the_model_knows(manifest, outside, dict(done.written)),
                    agent_spec_path=spec,
                    decisions=done.decisions,
                    touched=done.touched,
                    input_tokens=done.input_tokens,
                    elided_chars=done.elided_chars,
                    phase=done.phase,
                )
            except Exception:  # the turn ends unkept; the failure is reported by the loop
                self._lc = self._lc.abandon_turn()
                if done.text:
                    await self._emit(ReplyText(done.text))
                raise
            self._lc = transition.lifecycle
            if done.context_full:  # kept as far as it got: not sent again, but the next
                self._learn_budget(done.context_window)  # request is compacted first
            # The reply's last text goes out after the save, with the turn's end in one
            # write, and before what a failed save has to say.
            told: list[TerminalOutput] = [ReplyText(done.text)] if done.text else []
            notes = []
            if note := stop_note(done.new_messages):  # kept: the model's whole answer
                notes.append(note)
            if unanswered:
                notes.append(KEPT_UNANSWERED)
            elif done.cancelled or error:  # one that had run a tool (session/interrupted.py)
                notes.append(KEPT_AS_FAR_AS_IT_GOT)
            saved = await self._perform(transition.effects, told)
            if self._unsaved:  # kept aside before the turn ends: a crash now loses nothing
                await self._keep_unsaved()
            for output in told:
                await self._emit(output)
            await self._emit(
                TurnEnded(
                    _kept_status(done),  # kept as far as it got if not "ok"
                    error or (None if saved else "the session could not be saved"),
                    done.input_tokens or self._request_tokens,
                    self._lc.state.phase if self._lc.state else None,
                    tuple(notes),
                )
            )
            await anyio.lowlevel.checkpoint()  # the turn's end goes out before what follows
            await self._watch(manifest)
            await self._summarize_later()
            await self._compact_later()
            await self._tell_turns_left_out()
        outside -= told_in_turn - {path for path, _ in done.written}  # read, told already
        if outside:
            await self._note_changes(outside, gone & outside)
        self._notices, held = self._notices.turn_over()
        await self._tell(held)
        if resend is not None:
            await self._send_again_smaller(resend)

    def _unanswered(self, done: TurnDone, error: str | None) -> tuple[ModelMessage, ...]:
        """The turn that keeps the user's message of ``done``, a turn that ended with
        nothing kept and is not sent again, marked unanswered (``session/unanswered.py``):
        it failed, or an exit cut it. Empty if it is kept as far as it got, ended well,
        was stopped by the user (Ctrl+C: dropped, as they asked), or is sent again."""
        message = self._message
        if done.new_messages or message is None or not (done.cancelled or error):
            return ()
        if done.cancelled and self._lc.leaving is None:  # the user's Ctrl+C
            return ()
        if self._resendable(done, error) is not None:
            return ()
        return unanswered_turn(message.text, error or self._lc.unanswered_because())

    def _unanswered_at_exit(
        self, reason: str, *, failed: str | None = None
    ) -> tuple[ModelMessage, ...]:
        """The turn that keeps the message of the turn in flight, if one runs, when the
        actor leaves (for ``reason``), stops or saves after a failure before its end came."""
        text = self._message.text if self._message is not None else None
        return self._lc.unanswered(text, reason, failed=failed)

    def _resendable(self, done: TurnDone, error: str | None) -> _Message | None:
        """The message of a turn the model refused as over its context window, to be sent
        again once the conversation is compacted: once, and not if a tool of the turn ran
        (it wrote a file, recorded a decision: the turn is kept as far as it got) or the
        terminal has left."""
        message = self._message
        if not done.context_full or message is None or message.again:
            return None
        if done.written or done.new_messages:
            return None
        if self._lc.leaving is not None:
            return None
        return dataclasses.replace(message, error=error, window=done.context_window)

    def _learn_budget(self, stated_window: int | None) -> int:
        """The model refused a request as over its context window: this chat's token
        budget comes down to what that teaches (``learned_budget``; it never goes up).
        The budget learned."""
        budget = learned_budget(self._request_tokens, stated_window)
        threshold = self._lc.policy.compaction.token_threshold
        if threshold is None or budget < threshold:
            self._lc = self._lc.with_token_threshold(budget)
        return budget

    async def _send_again_smaller(self, message: _Message) -> None:
        """The model refused the request as over its context window: the token budget of
        this chat learns it (three quarters of the refused request), the conversation is
        compacted to it and the message is sent again. If the request could not be made
        smaller, the turn ends with the refusal."""
        extra = wire_chars(message.text) + wire_chars(self._drift.note)
        before = self._lc.estimated_tokens(extra)
        budget = self._learn_budget(message.window)
        if await self._compact_for_budget(extra, again=True) is None:  # Ctrl+C: not sent again
            await self._emit(TurnEnded("cancelled", None))
            return
        after = self._lc.estimated_tokens(extra)
        if after >= before:
            await self._emit(TurnEnded("error", message.error))
            return
        await self._emit(Info(context_full_line(after, budget)))
        await self._start_turn(message.text, message.message_id, again=True)

    async def _command(self, name: str, arg: str | None) -> None:
        if not self._lc.is_open:
            await self._emit(CommandOutput(f"error: {NO_SESSION}"))
            return
        if arg is not None and name != "checkpoint":  # not dropped silently: it did nothing
            await self._emit(
                CommandOutput(
                    f"error: /{name} takes no argument (a message that starts with / is "
                    "sent as //...); nothing was done"
                )
            )
            return
        event = COMMAND_EVENTS.get(name)
        if event is not None and not self._lc.allows(event):
            await self._emit(CommandOutput(f"error: wait for the reply to finish before /{name}"))
            return
        if name == "save":
            await self._save_command()
        elif name == "checkpoint":
            await self._checkpoint_command(arg)
        elif name == "reset":
            recorded = self._lc.state.file_manifest if self._lc.state is not None else {}
            files = await anyio.to_thread.run_sync(
                design_files,
                self._config.workspace,
                self._lc.tracked_paths,
                {**recorded, **self._drift.written},
                self._drift.edited,
            )
            question = files.question
            if question is None:
                await self._reset(None)
                return
            if files.left_alone:  # said before the question: its answer does not touch them
                await self._emit(Info(files.left_alone))
            await self._ask(
                question,
                lambda answer: self._reset(files if answer else None),
                Event.RESET,
            )
        elif name == "resume":
            await self._emit(CommandOutput(self._context_text()))
        elif name == "compact":
            await self._compact_now()
        else:
            await self._emit(CommandOutput(f"/{name} is not available yet."))

    async def _reset(self, delete_files: DesignFiles | None) -> None:
        """``/reset``; ``delete_files``: the design files the user said to delete."""
        pid = self._config.terminal_pid
        old = self._lc.session_id
        transition = self._lc.reset(utc_now())
        new = transition.lifecycle.session_id
        assert old is not None and new is not None
        # The saved session first: one that stays keeps its history and pointer (told,
        # nothing reset), never an orphan the user was told is gone.
        delete_session = [e for e in transition.effects if isinstance(e, DeleteSession)]
        rest = [e for e in transition.effects if not isinstance(e, DeleteSession)]
        refused: list[Exception] = []
        await self._perform(delete_session, failed=refused)
        left_behind = [exc for exc in refused if isinstance(exc, LeftBehind)]
        left = [str(exc) for exc in left_behind]
        if refused and not left:  # its file stays (what it leaves, once gone, is told)
            await self._emit(CommandOutput(reset_refused_line(old, refused[0])))
            return
        claim = Claim(new, pid, self._token, new_in=self._config.project)
        await self._peers.storage.ask(claim, STORAGE_TIMEOUT_S)
        self._lc = transition.lifecycle
        self._unsaved = False  # what could not be saved was just deleted on purpose
        (drop,) = rest  # the tab's pointer: the delete removed it too, if it could
        unremoved: list[Exception] = []
        await self._perform(rest, failed=unremoved)
        if unremoved and not any(pointer_name(pid) in exc.stays for exc in left_behind):
            left.append(failure_line(drop, unremoved[0], pid))
        # Released only once deleted: in between, another terminal could be offered it.
        await self._peers.storage.ask(Release(old, pid, self._token), STORAGE_TIMEOUT_S)
        await self._peers.drift.tell(Unwatch(pid))
        self._watched = None
        self._drift = self._drift.reset()
        self._known = None
        deleted: list[str] = []
        failed: list[str] = []
        changed: list[str] = []
        if delete_files is not None:
            deleted, failed, changed = await anyio.to_thread.run_sync(
                delete_design_files, self._config.workspace, delete_files
            )
        await self._watch(settled=True)  # the new session tracks the design files left
        text = (
            f"Session reset: history, saved session and resume context cleared. New session {new}."
        )
        if deleted:
            text += f" Deleted {' and '.join(deleted)}."
        if delete_files is not None and delete_files.left_alone:
            text += f"\n{delete_files.left_alone}."
        if changed:  # the answer was to what the question named: not this
            text += f"\n{named(tuple(changed))} changed after the question; not deleted."
        if failed:
            text += f"\nerror: could not delete {' or '.join(failed)}; it is left as it was."
        for line in left:
            text += f"\n{line}"
        await self._emit(CommandOutput(text))

    async def _detach_during_turn(self, reason: str) -> None:
        """The terminal left (``reason``): the lifecycle says what follows
        (``SessionLifecycle.terminal_left``). A turn let finish has at most
        ``TerminalConfig.finish_wait_s`` before it is cut; a cut turn's end is waited for
        ``DETACH_TURN_WAIT_S``, so that what its tools did is kept as far as it got (a
        terminal killed after a write and a decision lost both from the session)."""
        self._lc, step = self._lc.terminal_left(reason, finishes_alone=reason in FINISHES_ALONE)
        match step:
            case Leave(why):
                await self._detach(why)
            case LetTurnFinish():
                # kept unanswered until the turn's end (what stays if the supervisor dies)
                await self._perform(self._lc.kept_meanwhile(self._unanswered_at_exit(SHUTDOWN)))
                if (session_id := self._lc.session_id) is not None:  # others may take it up
                    finishing = Finishing(session_id, self._token, self._self)
                    await self._peers.storage.ask(finishing, STORAGE_TIMEOUT_S)
                    self.finishing.set()
                asyncio.get_running_loop().call_later(
                    self._config.finish_wait_s,
                    self._self.tell_when_room,
                    Detach("finish-wait-over"),
                )
            case CutTurn(turn):
                try:
                    await self._peers.llm.tell(CancelTurn(turn, self._self))
                except DeadActor:  # no end will come: leave now
                    await self._detach(self._lc.leaving or reason)
                    return
                asyncio.get_running_loop().call_later(
                    DETACH_TURN_WAIT_S, self._self.tell_when_room, Detach(CUT_WAIT_OVER)
                )
            case AwaitCut():
                pass  # the cut turn's end, or its wait's, follows

    async def _detach(self, reason: str) -> None:
        if self._lc.phase is Phase.CLOSED:
            return
        pid = self._config.terminal_pid
        if self._lc.turn is not None:
            with contextlib.suppress(DeadActor):  # a model actor gone has no turn to cut
                await self._peers.llm.tell(CancelTurn(self._lc.turn, self._self))
        self._confirm = None
        self._on_confirm = None
        self._lc = self._lc.with_turn_unanswered(self._unanswered_at_exit(reason))
        manifest, spec = await self._manifest() if self._lc.is_open else ({}, None)
        # an edit just before the exit, its event not settled: kept untold (H139); the
        # writes of a turn cut unended are ours
        unseen, _ = unseen_changes(
            self._watched, manifest, self._still_tracked, self._turn_writes
        )
        summary = self._exit_summary()
        transition = self._lc.exit(
            manifest=self._as_the_model_knows(manifest, unseen),
            agent_spec_path=spec,
            summary=summary,
        )
        self._lc = transition.lifecycle
        wrote = any(isinstance(e, WriteSession) for e in transition.effects)
        # a pointer never written (its failure told, and what it means said below) is not
        # told again as one that stays
        unwritten = not wrote and self._pointer_failed is not None
        saved = await self._perform(transition.effects, failed=[] if unwritten else None) and wrote
        for delay in EXIT_SAVE_RETRIES_S:
            if not self._unsaved:
                break
            await anyio.sleep(delay)
            state = self._lc.state
            assert state is not None
            saved = await self._perform(
                [self._lc.write(state.updated_at, state.file_manifest, state.agent_spec_path)]
            )
        kept_at = await self._keep_unsaved() if self._unsaved else None
        session_id = self._lc.session_id
        told = session_id is not None and not saved and not self._unsaved
        told = told and bool(self._pointer_failed)
        if told:  # no turn to keep, but nothing of the session could be written: failed
            why = self._pointer_failed
            await self._emit(Info(f"error: session {session_id} could not be saved: {why}"))
        elif session_id is not None and saved and self._pointer_failed is not None:
            # the session is saved, its tab's pointer never was: once more, else told
            await self._perform([WritePointer(session_id)], failed=[])
            if (why := self._pointer_failed) is not None:
                await self._emit(Info(pointer_unwritten_line(pid, session_id, why)))
        if saved and reason == CLOSED_BY_CHAT:  # its warning told before the exit's last line
            await self._compaction_after_exit(EXIT_COMPACTION_WAIT_S)
        if session_id is not None:
            await self._peers.storage.ask(Release(session_id, pid, self._token), STORAGE_TIMEOUT_S)
        await self._peers.drift.tell(Unwatch(pid))
        await self._emit(
            Closed(session_id if saved else None, saved, reason, self._unsaved, kept_at, told)
        )
        self.released.set()
        if saved:
            await self._second_write_with_summary()
            await self._compaction_after_exit(SUMMARY_AFTER_EXIT_TIMEOUT_S)
        self._self.close()

    def _exit_summary(self) -> str | None:
        """The offline summary, for the exit's write, when the summary kept does not cover
        every turn; with the offline summarizer as the summary model nothing is asked after
        the exit, then."""
        if not self._lc.is_open or self._lc.state is None or not self._lc.history:
            return None
        if self._summary_covers is self._lc.history and self._lc.state.summary:
            return None
        summary = self._offline_summary(self._summary_request())
        if self._config.summary_model in (None, OFFLINE):
            self._summary_covers = self._lc.history
        return summary

    async def _compaction_after_exit(self, within: float) -> None:
        """The compaction in flight when the terminal left (due after its last turn) is kept
        too: asked again (its told answer would find this actor gone) and written; then
        the window that came due behind it (its turns ended while the one before was still
        running, so none was started for them), once; all ``within`` seconds. A chat that
        exits waits ``EXIT_COMPACTION_WAIT_S`` for them before its last line, so that their
        warnings reach it (a piped run ended before a failing summary model's answer, and
        never learned that summaries fell back); what is still running then is kept after.
        """
        deadline = anyio.current_time() + within
        for _ in range(2):
            window = self._lc.compacting  # a compaction waited for ends before the exit
            if window is None:
                window = self._lc.compaction_due()
                if window is None:
                    return
                self._lc = self._lc.begin_compaction(window)
            request = self._compact_request(window, "window")
            try:
                result: Compacted = await self._peers.compaction.ask(
                    request, max(0.0, deadline - anyio.current_time())
                )
            except anyio.get_cancelled_exc_class():
                log.warning(
                    "compaction after exit of session %s not kept: the supervisor stopped "
                    "before it ended (the next resume compacts those turns)",
                    self._lc.session_id,
                )
                raise
            except TimeoutError as exc:
                log.info("compaction after exit not ended: %s", exc)  # the next wait takes it
                return
            except Exception as exc:
                log.warning("compaction after exit failed: %s", exc)
                return
            if not await self._keep_compaction(result):
                return

    async def _keep_unsaved(self) -> str | None:
        """The session could not be saved: write it where it can be recovered from (the
        same copy each time: it holds every turn the session file does not)."""
        state = self._lc.state
        if state is None:
            return None
        state = self._summarized(state)
        name = self._kept_as.get(state.session_id)
        try:
            path = await self._peers.storage.ask(
                KeepUnsaved(
                    self._config.project, state, self._lc.policy.known_secrets, name
                ),
                STORAGE_TIMEOUT_S,
            )
        except Exception as exc:  # a defect too: the exit goes on, and releases the session
            log.error(
                "terminal %d: session %s kept nowhere: %s",
                self._config.terminal_pid,
                state.session_id,
                exc,
                exc_info=not isinstance(exc, OSError | DeadActor | TimeoutError),
            )
            return None
        if name is None:
            log.warning(
                "terminal %d: unsaved session %s kept at %s",
                self._config.terminal_pid,
                state.session_id,
                path,
            )
        self._kept_as[state.session_id] = path.name
        return str(path)

    def _summarized(self, state: SessionState) -> SessionState:
        """``state`` (the session now) with a summary of every turn it holds: the one kept
        if it does, else the offline one. A copy or a checkpoint is kept as it is, and the
        summary model's comes later, if at all (a burst of turns has no pause for it):
        resumed or restored, it would tell the model a summary turns behind its history."""
        if state.summary and self._summary_covers is self._lc.history:
            return state
        summary = self._offline_summary(self._summary_request())
        return state.model_copy(update={"summary": summary}) if summary else state

    async def _second_write_with_summary(self) -> None:
        """Durability did not wait for the summarizer; a better summary follows if it comes."""
        state = self._lc.state
        if state is None or (state.summary and self._summary_covers is self._lc.history):
            return  # the summary written already covers every turn
        request = self._summary_request()
        try:
            summary = await self._peers.compaction.ask(request, SUMMARY_AFTER_EXIT_TIMEOUT_S)
        except anyio.get_cancelled_exc_class():  # nobody is told: the log says it (H190)
            log.warning(SUMMARY_AFTER_EXIT_LOST, state.session_id, STOPPED_FIRST)
            raise
        except Exception as exc:  # a slow summary model: the offline summary, not none
            log.warning(
                "summary after exit of session %s failed: %s; the offline summary is kept",
                state.session_id,
                exc,
            )
            summary = self._offline_summary(request)
        if summary:
            failed: list[Exception] = []
            await self._record_summary(state.session_id, summary, failed)
            for failure in failed:
                log.warning(SUMMARY_AFTER_EXIT_LOST, state.session_id, failure)

    async def _record_summary(
        self, session_id: str, summary: str, failed: list[Exception] | None = None
    ) -> None:
        """Write ``summary`` into the session; a failed write goes into ``failed`` if given
        (else it is told as any failed write)."""
        state = self._lc.state
        if state is None or session_id != state.session_id or summary == state.summary:
            return
        transition = self._lc.record_summary(
            summary,
            now=state.updated_at,
            manifest=state.file_manifest,
            agent_spec_path=state.agent_spec_path,
        )
        self._lc = transition.lifecycle
        await self._perform(transition.effects, failed=failed)

    def _summary_request(self, reply_to: ActorRef[TerminalMessage] | None = None) -> Summarize:
        state = self._lc.state
        assert state is not None
        return Summarize(
            state.session_id,
            self._lc.history,
            state.decisions,
            self._lc.earlier_summary(),
            reply_to,
            self._config.summary_model,
            self._budget_chars(),
            self._lc.policy.known_secrets,
        )

    @staticmethod
    def _offline_summary(request: Summarize) -> str | None:
        """What the offline summarizer makes of what ``request`` asks a summary of."""
        return offline_summary(request.messages, request.decisions, request.previous)

    async def _summarize_later(self) -> None:
        """Ask the summary model for the session's summary (it is written when it comes).
        A session with none yet is written with the offline one first: a summary model
        takes seconds, the CompactionActor waits for a pause in the turns (a piped burst
        has none), and the listing would show nothing meanwhile."""
        request = self._summary_request(self._self)
        state = self._lc.state
        if state is not None and not state.summary:
            summary = self._offline_summary(request)
            if summary:
                await self._record_summary(state.session_id, summary)
        try:
            await self._peers.compaction.tell(request)
        except DeadActor:
            log.warning("compaction actor unavailable; summary skipped")

    # -- compaction (DESIGN 7): the lifecycle decides, the CompactionActor summarizes --

    async def _compact_later(self) -> None:
        """After a completed turn: start the sliding window's compaction if one is due.
        It runs in the CompactionActor; the next input does not wait for it."""
        window = self._lc.compaction_due()
        if window is None:
            return
        self._lc = self._lc.begin_compaction(window)
        try:
            await self._peers.compaction.tell(self._compact_request(window, "window", self._self))
        except DeadActor:
            self._lc = self._lc.compaction_failed(self._lc.generation)

    async def _tell_turns_left_out(self) -> None:
        """Once a run: with automatic compaction off, the first turn the request's tail
        leaves out (neither sent nor summarized) is said, not dropped without a word."""
        if not self._left_out_told and self._lc.turns_left_out():
            self._left_out_told = True
            await self._emit(Info(TURNS_LEFT_OUT_LINE))

    async def _compact_for_budget(self, extra_chars: int, *, again: bool = False) -> int | None:
        """Before a model request: over the token budget, compact first (and wait). If the
        request is still over it afterwards (what is kept outweighs the budget), say so,
        and again when it has grown by half (a message over it alone is told as such, once:
        not again as it is sent ``again`` after a refusal), but do not back off: the next
        request compacts what came since. Returns the request's size in tokens, as the
        budget sees it; None if the user cancelled the wait (Ctrl+C)."""
        threshold = self._lc.policy.compaction.token_threshold
        alone = self._lc.message_over_budget(extra_chars)
        if threshold is not None and alone and not again:
            line = message_over_budget_line(estimate_tokens(extra_chars), threshold)
            await self._emit(Info(line))
        tokens = self._lc.request_tokens(extra_chars)
        window = self._lc.compaction_due(request_tokens=tokens)
        superseding = False
        if window is None and self._lc.compacting is not None:
            # Over the budget while a compaction runs in the background (a slow summary
            # model): compact now rather than send requests over it until that answers.
            superseded = self._lc.supersede_compaction()
            window = superseded.compaction_due(request_tokens=tokens)
            if window is not None:
                self._lc, superseding = superseded, True
        if window is None:
            if threshold is not None and tokens >= threshold and not alone:
                # Nothing was compacted (automatic compaction off, or nothing left to
                # compact), yet the request is over: say so as after a compaction.
                off = self._lc.policy.compaction.compaction_interval <= 0
                line = over_budget_uncompacted_line(tokens, threshold, compaction_off=off)
                await self._tell_over_budget(tokens, line)
            return tokens
        # The offline summarizer, at once: the summary model has not answered the one in
        # flight yet (the user does not wait for it twice), or, the budget out of reach, it
        # would be waited for before every request for a compaction that cannot help.
        offline = superseding or self._lc.budget_out_of_reach(extra_chars)
        result = await self._compact_and_wait(window, "tokens", offline=offline)
        if result is None:
            return None
        tokens = self._lc.request_tokens(extra_chars)
        if threshold is None:
            return tokens
        if tokens >= threshold and not alone:  # else the message was told of
            await self._tell_over_budget(tokens, over_budget_line(result, tokens, threshold))
        return tokens

    async def _tell_over_budget(self, tokens: int, line: str) -> None:
        """Warn of a request over the token budget: once, then again when it grew by half."""
        self._lc, tell = self._lc.over_budget(self._lc.generation, tokens)
        if tell:
            await self._emit(Info(line))

    async def _compact_now(self) -> None:
        """``/compact``: everything completed so far, now; prints the tokens before and after."""
        if self._lc.compacting is not None:  # a background one: /compact does not wait for it
            self._lc = self._lc.supersede_compaction()
        window = self._lc.compaction_due(force=True)
        if window is None:
            await self._emit(
                CommandOutput(
                    "Nothing to compact: no turn since the last compaction."
                    if self._lc.compaction is not None
                    else "Nothing to compact yet: no turn has completed."
                )
            )
            return
        before = self._lc.estimated_tokens()
        if self._lc.known_no_shorter(window):  # asked before, and nothing changed since
            await self._emit(CommandOutput(NOT_SHORTER_AGAIN_LINE.format(tokens=before)))
            return
        result = await self._compact_and_wait(window, "command")
        if result is None:
            await self._emit(CommandOutput("Compaction cancelled; nothing was changed."))
        elif result.compaction is not None:
            after = self._lc.estimated_tokens()
            by = " by the offline summarizer" if result.offline else ""
            end = result.compaction.end_invocation
            await self._emit(
                CommandOutput(
                    f"Compacted {turns_named(result.compaction.start_invocation, end)}{by}: "
                    f"~{before:,} -> ~{after:,} tokens.",
                    input_tokens=after,
                )
            )
        elif result.no_gain:
            by = " by the offline summarizer" if result.offline else ""
            await self._emit(
                CommandOutput(
                    f"Not compacted: a summary{by} would not be shorter (~{before:,} tokens)."
                )
            )
        else:
            reason = result.error or "the summarizer skipped it"
            reason = scrub_text(reason, self._lc.policy.known_secrets)
            await self._emit(CommandOutput(f"error: compaction failed: {reason}"))

    async def _compact_and_wait(
        self, window: Window, trigger: Trigger, *, offline: bool = False
    ) -> Compacted | None:
        """Compact ``window`` now, the user waiting (the token budget's, ``/compact``; with
        ``offline``, by the offline summarizer): the result, kept if it is any good; None
        if the user cancelled the wait (Ctrl+C)."""
        lc = self._lc
        self._lc = lc.begin_compaction(window)
        request = self._compact_request(window, trigger, self._self, offline=offline)
        try:
            await self._peers.compaction.tell(request)
        except DeadActor as exc:
            result = Compacted(lc.session_id or "", lc.generation, trigger, None, str(exc))
        else:
            answer = await self._wait_for_compaction(request)
            if answer is None or answer.window is None:  # cancelled, or no answer in time
                self._given_up.append(window)  # its answer may be on its way already
                with contextlib.suppress(DeadActor):  # given up on: not worth finishing
                    await self._peers.compaction.tell(StopCompaction(request))
            if answer is None:
                self._lc = self._lc.compaction_failed(lc.generation, back_off=False)
                return None
            result = answer
        kept = await self._keep_compaction(result, asked_offline=offline)
        if not kept and result.compaction is not None:
            return dataclasses.replace(result, compaction=None, no_gain=True)
        if result.fallback is not None and self._lc.compaction is result.fallback:
            return dataclasses.replace(result, compaction=result.fallback, offline=True)
        return result

    async def _wait_for_compaction(self, request: Compact) -> Compacted | None:
        """Wait for the answer to ``request`` (told to the CompactionActor, answered to this
        actor) by reading this actor's own mailbox: a Ctrl+C (``CancelCurrentTurn``) ends
        the wait (None), and so does the terminal leaving or the supervisor stopping
        (``Detach``, handled next: set aside behind the compaction, it held the tab and
        the stop for the summary model's time), and ``COMPACTION_TIMEOUT_S`` (a failure
        without a window); a change outside is told now (within a second, as DESIGN
        asks), unless something set aside is before it; every other message is set
        aside and handled after, in its order.

        Reading the mailbox is what lets a Ctrl+C in while the summary model takes its
        time (the handler waiting for an ask held it in the mailbox until the end). No
        read of it is ever cancelled (anyio's ``receive`` cancelled just as an item
        reached it drops that item): the timeout comes as a message too. What is set
        aside is not bounded by the mailbox's size, but by the wait's time."""
        assert self._mailbox is not None
        timeout = f"no answer in {COMPACTION_TIMEOUT_S:.0f} s"
        async with anyio.create_task_group() as timers:
            if request.trigger != "window":  # the user waits for it, and is told why
                line = compacting_line(request.trigger, request.summary_model)
                timers.start_soon(self._tell_after, SLOW_COMPACTION_S, line)
            timers.start_soon(self._wait_over_after, COMPACTION_TIMEOUT_S, request)
            try:
                while (envelope := await next_item(self._mailbox)) is not None:
                    match envelope.message:
                        case Compacted(window=window) if window is request.window:
                            return envelope.message
                        case CompactionWaitOver(compaction) if compaction is request:
                            break
                        case CancelCurrentTurn():
                            return None
                        case Detach():  # no one waits any more: leave without it
                            self._aside.append(envelope)
                            return None
                        case FilesChanged() | TellHeldChanges() | CheckFloodOver() if (
                            not self._aside
                        ):
                            await self.handle(envelope.message)  # told within a second
                        case _:
                            self._aside.append(envelope)
            finally:
                timers.cancel_scope.cancel()
        return Compacted(request.session_id, request.generation, request.trigger, None, timeout)

    async def _wait_over_after(self, delay: float, request: Compact) -> None:
        await anyio.sleep(delay)
        self._self.tell_when_room(CompactionWaitOver(request))

    async def _tell_after(self, delay: float, line: str) -> None:
        await anyio.sleep(delay)
        await self._emit(Info(line))

    def _compact_request(
        self,
        window: Window,
        trigger: Trigger,
        reply_to: ActorRef[TerminalMessage] | None = None,
        *,
        offline: bool = False,
    ) -> Compact:
        return Compact(
            self._lc.session_id or "",
            self._lc.generation,
            window,
            trigger,
            reply_to,
            OFFLINE if offline else self._config.summary_model,
            self._lc.policy.known_secrets,
            self._budget_chars(),
        )

    def _budget_chars(self) -> int | None:
        """The session's token budget in characters as a chat request is held to it, less
        what the model counted beyond the estimate (``estimate_budget``); None: no budget."""
        budget = self._lc.estimate_budget()
        return None if budget is None else budget * CHARS_PER_TOKEN

    async def _keep_compaction(self, result: Compacted, *, asked_offline: bool = False) -> bool:
        """Keep a compaction's result (saving it), or back off after a failure: a
        warning line once per run of failures, and the conversation goes on. A summary
        that would not make the request smaller backs off quietly; ``/compact`` answers
        for itself. Whether the compaction was kept. One ``asked_offline`` (of the offline
        summarizer) says nothing of the summary model: it neither failed nor wrote it."""
        lc = self._lc
        if result.session_id != lc.session_id or result.generation != lc.generation:
            return False
        if self._was_given_up(result):
            return False
        if not lc.allows(Event.COMPACTED):  # not started, or in a phase that takes none
            return False
        automatic = result.trigger != "command"
        # the summarizers the session asks answered (not the offline one in a failing
        # model's place): an answer no shorter is theirs for this window, while unchanged
        settled = not asked_offline and result.offline_because in (None, TOO_LONG_BECAUSE)
        if result.compaction is None:
            self._lc = lc.compaction_failed(
                result.generation,
                back_off=automatic,
                window=result.window,
                no_gain=result.no_gain and settled,
            )
            if self._lc is lc:  # the late answer of a superseded compaction
                return False
            if result.offline_because is not None:  # the summary model failed: told now
                await self._tell_offline(result.offline_because)
            quiet = result.no_gain or result.error is None  # nothing worth it, or skipped
            if automatic and not quiet and self._lc.compaction_failures == 1:
                wait = self._lc.backoff_until - self._lc.invocations
                error = result.error and scrub_text(result.error, self._lc.policy.known_secrets)
                await self._tell_between_turns(compaction_failed_line(error, wait))
            return False
        before = lc.estimated_tokens()
        assert lc.state is not None
        transition = lc.compacted(
            result.compaction,
            result.generation,
            # one landing in the background is no activity (as a summary's): the resume's
            # "last active" said when it landed (after a takeover, or an exit it followed)
            now=lc.state.updated_at if automatic else utc_now(),
            manifest=lc.state.file_manifest,
            agent_spec_path=lc.state.agent_spec_path,
            back_off=automatic,
            fallback=result.fallback,
            settled=settled,
        )
        self._lc = transition.lifecycle
        kept = self._lc.compaction
        fell_back = kept is not None and kept is result.fallback
        if (kept is not result.compaction and not fell_back) or lc.compaction is kept:
            if result.offline_because is not None and kept is lc.compaction:
                await self._tell_offline(result.offline_because)  # no smaller: still told
            return False  # stale, no smaller, or kept already (/compact waited for it)
        await self._perform(transition.effects)
        if not asked_offline:
            await self._tell_offline(TOO_LONG_BECAUSE if fell_back else result.offline_because)
        if automatic and result.trigger not in self._compaction_told:
            self._compaction_told.add(result.trigger)  # once: with interval 1, every turn
            after = self._lc.estimated_tokens()
            compaction = result.compaction
            turns = turns_named(compaction.start_invocation, compaction.end_invocation)
            await self._tell_between_turns(
                f"note: compacted {turns} into a summary (~{before:,} -> ~{after:,} tokens)"
            )
        return True

    def _was_given_up(self, result: Compacted) -> bool:
        """Whether ``result`` answers a compaction the user was told had not happened (a
        Ctrl+C, or no answer in time): its StopCompaction came too late (the
        CompactionActor's mailbox held behind an ask, the summary answering meanwhile)."""
        return any(result.window is window for window in self._given_up)

    async def _tell_offline(self, because: str | None) -> None:
        """Say once that the offline summarizer stands in for a failing summary model (and
        again after the model has written something since)."""
        if because is None:
            self._offline_told = False
        elif not self._offline_told:
            self._offline_told = True
            # the endpoint's own words, which may echo a secret the session knows (its key)
            because = scrub_text(because, self._lc.policy.known_secrets)
            await self._tell_between_turns(f"warning: {because}")

    async def _tell_between_turns(self, line: str) -> None:
        """A notice of work done in the background (a compaction, the summary model): held
        while a reply streams, and told after it (``Notices.between_turns``)."""
        self._notices, told = self._notices.between_turns(line, self._lc.in_turn)
        await self._tell(told)

    def _context_text(self) -> str:
        """What ``/resume`` shows: what the model is given, as it is given: the resume
        context and the user's rules (its instructions), and the compaction it is sent."""
        parts = []
        if instructions := self._lc.instructions():
            parts.append(instructions)
        if (text := self._lc.compaction_sent()) is not None:
            parts.append(
                f"# Compacted history (sent first in every request, ~{estimate_tokens(len(text))}"
                f" tokens)\n{text}"
            )
        return "\n\n".join(parts) or (
            "No resume context: this session was not resumed, or it was reset."
        )

    async def _note_changes(
        self,
        paths: Iterable[str],
        gone: frozenset[str] = frozenset(),
        at_reattach: bool = False,
        writers: Mapping[str, str] | None = None,
        unread: frozenset[str] = frozenset(),
    ) -> None:
        """Tell the terminal of ``paths`` changed outside, one notice per file and burst,
        until a flood (``Notices.changed``), and have the next request name each file
        once. ``gone``: seen no more (told as deleted, or as made unreadable if in
        ``unread``); ``writers``: the other agent-assist session that wrote a file;
        ``at_reattach``: the drift a re-attach found (see ``Info``)."""
        paths = frozenset(paths)
        self._drift = self._drift.noted(paths)
        now = anyio.current_time()
        self._notices, told = self._notices.changed(paths, now, gone, unread, writers)
        await self._tell(told, at_reattach)

    async def _check_flood_over(self) -> None:
        """A flood quiet for a second is over: its held changes are told now."""
        self._notices, told = self._notices.checked(anyio.current_time())
        await self._tell(told)

    async def _tell_held_changes(self) -> None:
        """One line for the changes a flood held (``session/notices.py``)."""
        self._notices, told = self._notices.take()
        await self._tell(told)

    async def _tell(self, told: Told, at_reattach: bool = False) -> None:
        """Tell what a transition of ``Notices`` says, and set the timers it asks for."""
        for line in told.lines:
            await self._emit(Info(line, at_reattach))
        if told.flood is not None:
            await self._emit(Info(told.flood, files=told.files))  # the toolbar counts them
        loop = asyncio.get_running_loop()
        if told.take_in is not None:
            loop.call_later(told.take_in, self._self.tell_when_room, TellHeldChanges())
        if told.check_in is not None:
            loop.call_later(told.check_in, self._self.tell_when_room, CheckFloodOver())

    async def _claim_writes(self, writes: tuple[str, ...]) -> None:
        """Tell the DriftWatcher what this turn is about to write: another session that
        tracks one of those files is told it was this session's change."""
        if writes and self._lc.state is not None:
            claim = Writing(
                self._config.terminal_pid, self._lc.state.session_id, self._config.workspace, writes
            )
            with contextlib.suppress(DeadActor):
                await self._peers.drift.tell(claim)

    async def _tell_writes_done(self, written: dict[str, str]) -> None:
        """Tell the DriftWatcher the turn's writes are over, and what they wrote."""
        if self._lc.state is not None:
            session_id = self._lc.state.session_id
            done = Wrote(self._config.terminal_pid, session_id, self._config.workspace, written)
            with contextlib.suppress(DeadActor):
                await self._peers.drift.tell(done)

    def _as_the_model_knows(
        self,
        manifest: dict[str, str],
        untold: Iterable[str] = (),
        wrote: Mapping[str, str] | None = None,
        deleted: Iterable[str] = (),
    ) -> dict[str, str]:
        """``manifest`` as the session file keeps it (``LiveDrift.as_the_model_knows``)."""
        saved = self._lc.state.file_manifest if self._lc.state is not None else None
        tracked = self._lc.tracked_paths
        return self._drift.as_the_model_knows(manifest, saved, tracked, untold, wrote, deleted)

    def _changed_during_turn(
        self, seen: Iterable[str], done: TurnDone, watched: dict[str, str] | None
    ) -> tuple[set[str], frozenset[str]]:
        """The files that changed outside during the turn ``done`` ends, and which of them
        are gone (``changed_during_turn``)."""
        now = self._known[0] if self._known is not None else {}
        return changed_during_turn(seen, done.written, done.read, now, watched, self._still_tracked)

    def _still_tracked(self, path: str) -> bool:
        """Whether ``path`` is tracked now, there or not (a file of the template directory:
        if it is there)."""
        tracked = path == AGENT_SPEC or path in self._lc.tracked_paths
        return tracked or path.startswith(TEMPLATE_DIR + "/")

    # -- checkpoints ------------------------------------------------------------

    async def _save_command(self) -> None:
        """``/save``: the next checkpoint, then the session file (which carries its number).
        A change made just before it, not told yet, is told (its manifest takes it in)."""
        watched = self._watched
        manifest, spec = await self._manifest()
        changed, gone = unseen_changes(watched, manifest, self._still_tracked)
        if changed:
            await self._note_changes(changed, gone)
        written = await self._checkpoint("save", manifest, spec)
        transition = self._lc.save(
            now=utc_now(), manifest=self._as_the_model_knows(manifest), agent_spec_path=spec
        )
        self._lc = transition.lifecycle
        self._failure_told.clear()  # asked for: a failure says why, even told before
        ok = await self._perform(transition.effects)
        await self._watch(manifest, settled=True)  # what it took in is watched from now on
        session_id = self._lc.session_id
        if not ok:
            text = "error: the save failed; the session is kept in memory until a save succeeds"
        elif isinstance(written, Unchanged):
            number = written.latest.number
            text = f"Session {session_id} saved; nothing changed since checkpoint {number}."
        elif isinstance(written, Checkpoint):
            text = f"Session {session_id} saved as checkpoint {written.number}."
        else:
            text = f"Session {session_id} saved (no checkpoint written)."
        await self._emit(CommandOutput(text))

    def _checkpoint_message(
        self,
        reason: Reason,
        manifest: dict[str, str],
        spec: str | None,
        keep: tuple[str, ...],
        *,
        dry_run: bool = False,
        made: tuple[str, ...] = (),
    ) -> WriteCheckpoint:
        """The StorageActor's order for the next checkpoint of the conversation and of the
        files of ``manifest``; one of ``/save`` or before a write is not written when the
        latest checkpoint holds the same (a restore's undo always is: its line names it)."""
        write = self._lc.write(utc_now(), manifest, spec)
        state = self._summarized(write.state)  # the messages are the same: ``encoded`` holds them
        config = self._config
        return WriteCheckpoint(
            config.project,
            config.workspace,
            state,
            tuple(manifest),
            config.terminal_pid,
            reason,
            config.checkpoint_cap,
            self._lc.policy.known_secrets,
            keep,
            dry_run,
            made,
            # in memory: a compaction may have taken the whole tail of ``state``
            last_user_text(self._lc.history_encoded.json),
            unless_unchanged=reason != "restore",
            restored=(
                self._restored_to if self._lc.history is self._history_at_restore else None
            ),
            encoded=write.encoded,
            moved=write.aside,
            token=self._token,
        )

    async def _checkpoint(
        self,
        reason: Reason,
        manifest: dict[str, str],
        spec: str | None,
        keep: tuple[str, ...] = (),
        *,
        tell: bool = True,
        made: tuple[str, ...] = (),
    ) -> Checkpoint | Unchanged | Exception:
        """Have the StorageActor write the next checkpoint of the conversation and of the
        files of ``manifest`` (``keep``: files about to be written over, refused if one
        cannot be read): the checkpoint, ``Unchanged`` naming the latest one when that
        holds the same, or the error (the user was told, unless ``tell`` is False: the
        caller tells it in its own words)."""
        config = self._config
        message = self._checkpoint_message(reason, manifest, spec, keep, made=made)
        try:
            answer: Checkpoint | Unchanged = await self._peers.storage.ask(
                message, STORAGE_TIMEOUT_S
            )
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            log.warning("terminal %d: checkpoint failed: %s", config.terminal_pid, exc)
            if not tell:
                return exc
            why = _described(exc)
            if not why.startswith("checkpoint not written"):  # the cap's line says it
                why = f"checkpoint not written: {why}"
            if reason == "auto" and isinstance(exc, CheckpointCapExceeded):
                why += f"; {WRITE_WITHOUT_UNDO}"  # refused otherwise: the tool's line says so
            await self._emit(Info(f"error: {why}"))
            return exc
        number = answer.latest.number if isinstance(answer, Unchanged) else answer.number
        self._lc = self._lc.record_checkpoint(number).lifecycle
        return answer

    async def _checkpoint_before_write(self, paths: Sequence[str]) -> str | None:
        """The turn's first file write is about to happen: keep what the files hold. None
        lets the write go ahead; a checkpoint that failed refuses it (it could not be taken
        back), except over the size cap, which the user was told how to lift."""
        manifest, spec = await self._manifest(paths)
        written = await self._checkpoint("auto", manifest, spec, tuple(paths))
        if isinstance(written, Checkpoint | Unchanged | CheckpointCapExceeded):
            return None
        return checkpoint_failed(written)

    async def _checkpoint_command(self, arg: str | None) -> None:
        """``/checkpoint`` lists; ``/checkpoint N`` restores (asking about the files)."""
        if arg is None or not arg.strip():
            await self._list_checkpoints()
            return
        try:
            number = parse_number(arg)
        except CheckpointError as exc:
            await self._emit(CommandOutput(f"error: {exc}"))
            return
        if not self._lc.allows(Event.RESTORE):
            await self._emit(
                CommandOutput(f"error: a reply is streaming; /checkpoint {number} after it ends")
            )
            return
        session_id = self._lc.session_id
        assert session_id is not None
        storage = self._peers.storage
        try:
            checkpoint: Checkpoint = await storage.ask(
                LoadCheckpoint(self._config.project, session_id, number), STORAGE_TIMEOUT_S
            )
            # read as messages once, off the loop: the restore's resume reads no more
            conversation: Conversation | None = await storage.ask(
                LoadConversation(self._config.project, checkpoint), STORAGE_TIMEOUT_S
            )
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            await self._emit(CommandOutput(f"error: {exc}"))
            return
        if conversation is None:  # before anything is asked, written or taken back
            await self._emit(CommandOutput(UNREADABLE_CHECKPOINT.format(number=number)))
            return
        if not await anyio.to_thread.run_sync(os.path.isdir, self._config.workspace):
            # No file can be written back, so none is asked about: the conversation is
            # taken back and one line says so (a "y" typed for a question never asked
            # was sent to the model, H152).
            gone = WORKSPACE_GONE_LINE.format(workspace=self._config.workspace)
            empty = RestorePlan((), (), ())
            await self._restore(
                checkpoint, conversation, empty, files=False, workspace_gone=gone
            )
            return
        # One pass over the files: the plan, the check of its undo and the manifest the
        # next turn may reuse are all taken from it (20,000 templates take seconds).
        now, spec, tracked = await anyio.to_thread.run_sync(
            tracked_files_and,
            self._config.workspace,
            self._lc.tracked_paths,
            [*checkpoint.files, *checkpoint.made],
            self._digests,
        )
        self._known = only(now, tracked), spec  # not N's files that are tracked no more
        missing = [path for path in checkpoint.files if path not in now]
        workspace = self._config.workspace
        in_the_way = await anyio.to_thread.run_sync(what_is_at, workspace, missing)
        modes_now = await anyio.to_thread.run_sync(file_modes, workspace, checkpoint.modes)
        plan = restore_plan(
            checkpoint.files,
            now,
            in_the_way,
            modes_then=checkpoint.modes,
            modes_now=modes_now,
            made=checkpoint.made,
        )
        undo = only(now, tracked | set(plan.written_over))
        if plan.to_write and (refused := await self._content_missing(checkpoint, plan)):
            await self._emit(CommandOutput(refused))  # before a question it could not honour
            return
        if plan.written_over and (refused := await self._undo_refused(number, plan, undo, spec)):
            await self._emit(CommandOutput(refused))  # before a question it could not honour
            return
        if not plan.written_over:
            if plan.in_the_way:  # nothing to ask: named, never written over
                lines = [f"Tracked files differ from checkpoint {number}:", *plan.lines(number)]
                await self._emit(Info("\n".join(lines)))
            await self._restore(checkpoint, conversation, plan, files=False)
            return
        await self._emit(
            Info(
                "\n".join([f"Tracked files differ from checkpoint {number}:", *plan.lines(number)])
            )
        )
        await self._ask(
            "Restore files too? [y/N]",
            lambda answer: self._restore(checkpoint, conversation, plan, files=answer),
            Event.RESTORE,
        )

    async def _content_missing(self, checkpoint: Checkpoint, plan: RestorePlan) -> str | None:
        """Why the files of ``checkpoint`` a restore would write back cannot be (a stored
        content missing), in the restore's refusal line; None if they can. Checked before
        ``Restore files too?``: a ``y`` was answered by a missing blob, after the
        conversation was taken back."""
        message = CheckBlobs(self._config.project, checkpoint, plan.to_write)
        try:
            await self._peers.storage.ask(message, STORAGE_TIMEOUT_S)
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            log.warning("terminal %d: restore refused: %s", self._config.terminal_pid, exc)
            return f"error: checkpoint {checkpoint.number} not restored; nothing changed: {exc}"
        return None

    async def _undo_refused(
        self, number: int, plan: RestorePlan, manifest: dict[str, str], spec: str | None
    ) -> str | None:
        """Why the checkpoint that would undo a restore of ``number`` with its files (the
        larger of the two a restore may write: ``manifest``, the tracked files and those
        the restore writes over, as just hashed) cannot be written now, in the restore's
        refusal line; None if it can. Checked before ``Restore files too?``: at the size
        cap, the question was asked and the answer then refused."""
        made = tuple(path for path in plan.to_write if path not in manifest)
        message = self._checkpoint_message(
            "restore", manifest, spec, plan.written_over, dry_run=True, made=made
        )
        try:
            await self._peers.storage.ask(message, STORAGE_TIMEOUT_S)
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            log.warning("terminal %d: restore refused: %s", self._config.terminal_pid, exc)
            return _restore_refused(number, exc)
        return None

    async def _list_checkpoints(self) -> None:
        session_id = self._lc.session_id
        assert session_id is not None
        try:
            listing: ListedCheckpoints = await self._peers.storage.ask(
                ListCheckpoints(self._config.project, session_id), STORAGE_TIMEOUT_S
            )
        except (SessionError, OSError, DeadActor, TimeoutError) as exc:
            await self._emit(CommandOutput(f"error: {exc}"))
            return
        for problem in listing.problems:
            await self._emit(Info(problem))
        lines = listing_lines(listing.checkpoints, session_id)
        await self._emit(CommandOutput("\n".join(lines)))

    async def _restore(
        self,
        checkpoint: Checkpoint,
        conversation: Conversation,
        plan: RestorePlan,
        *,
        files: bool,
        workspace_gone: str | None = None,
    ) -> None:
        """Checkpoint the present (so the restore can be undone), write the files back if
        asked, then bring the conversation back to ``checkpoint``. Its lines always say
        what was done about the files (``workspace_gone``: the line that says none could
        be)."""
        config = self._config
        number = checkpoint.number
        # The undo keeps every file the restore may write over or delete, tracked now or
        # not (one deleted, so dropped from the manifest at a resume, then made again by
        # hand), and names those it will make, which a restore of the undo deletes.
        written_over = plan.written_over if files else ()
        manifest, spec = await self._manifest(written_over)
        made = tuple(path for path in plan.to_write if files and path not in manifest)
        kept = await self._checkpoint(
            "restore", manifest, spec, written_over, tell=False, made=made
        )
        if isinstance(kept, Exception):
            await self._emit(CommandOutput(_restore_refused(number, kept)))
            return
        undo = kept.latest.number if isinstance(kept, Unchanged) else kept.number
        written: tuple[str, ...] = ()
        deleted: tuple[str, ...] = ()
        changed: tuple[str, ...] = ()
        failed: dict[str, str] = {}
        if files and plan.written_over:
            # The watcher learns the content to expect first: a restore is our own write.
            restored = {p: checkpoint.files[p] for p in plan.to_write}
            gone = dict.fromkeys(plan.to_delete, "")
            await self._watch({**(self._watched or manifest), **restored, **gone})
            await self._save_restored_before_writing(
                checkpoint, conversation, manifest, spec, plan
            )
            session_id = self._lc.session_id
            assert session_id is not None
            try:
                result: RestoredFiles = await self._peers.storage.ask(
                    RestoreFiles(
                        config.project,
                        config.workspace,
                        session_id,
                        number,
                        plan.to_write,
                        config.terminal_pid,
                        plan.to_delete,
                        plan.asked,
                        self._token,
                    ),
                    STORAGE_TIMEOUT_S,
                )
                written, failed, deleted = result.written, result.failed, result.deleted
                changed = result.changed
                restored_now = {p: checkpoint.files[p] for p in written}
                self._drift = self._drift.restored_written(restored_now)  # ours last
            except (SessionError, OSError, DeadActor, TimeoutError) as exc:
                await self._emit(Info(f"error: files not restored: {exc}"))
        manifest, spec = await self._manifest(checkpoint.files)
        drift = await anyio.to_thread.run_sync(
            detect_file_drift, config.workspace, checkpoint.files
        )
        self._drift = self._drift.in_context(drift, checkpoint.files)
        transition = self._lc.restore(
            conversation.state,
            drift,
            checkpoint=RestoredFrom(number, checkpoint.created_at),
            now=utc_now(),
            manifest=self._as_the_model_knows(manifest, deleted=deleted),
            agent_spec_path=spec,
            loaded=conversation.messages,
        )
        self._lc = transition.lifecycle
        self._history_at_restore = self._lc.history
        self._restored_to = number
        saved = await self._perform(transition.effects)
        await self._keep_context(number)
        await self._watch(manifest)
        turns = checkpoint.turns
        lines = [
            f"Restored the conversation to checkpoint {number} "
            f"({turns} turn{'' if turns == 1 else 's'})"
            + ("" if saved else ", but the session could not be saved")
            + f"; /checkpoint {undo} undoes this."
        ]
        state = conversation.state
        gap = turns_missing(state.compacted_history_summary, state.recent_messages)
        if conversation.missing:
            lines.append(moved_missing_line(number, conversation.missing, gap))
        elif gap:
            lines.append(turns_missing_line(number, gap))
        if written:
            lines.append(f"Files restored: {named(written)}.")
        if deleted:
            absent = f"absent before the restore checkpoint {number} undoes"
            lines.append(f"Files deleted ({absent}): {named(deleted)}.")
        lines += changed_lines(changed, plan.to_delete)
        lines += failed_lines(failed)
        done = {*written, *deleted, *failed, *changed}
        untouched = [p for p in plan.written_over if p not in done]
        if untouched:
            lines.append(f"Files left as they are: {named(untouched)}.")
        if plan.left_alone:
            lines.append(f"Not in checkpoint {number}, left alone: {named(plan.left_alone)}.")
        if workspace_gone is not None:
            lines.append(workspace_gone)
        elif len(lines) == 1 and not plan.in_the_way:  # nothing said of the files yet
            lines.append(SAME_FILES_LINE.format(number=number))
        phase = self._lc.state.phase if self._lc.state else None
        await self._emit(CommandOutput("\n".join(lines), phase))

    async def _save_restored_before_writing(
        self,
        checkpoint: Checkpoint,
        conversation: Conversation,
        manifest: dict[str, str],
        spec: str | None,
        plan: RestorePlan,
    ) -> None:
        """Save the session as the restore will leave it (N's conversation, the files as
        they will be, the undo's number) before a file is written: a supervisor killed
        among the writes leaves the restore asked for, not the conversation before it with
        the files written back "changed outside agent-assist" and an undo nothing named."""
        expected = {p: d for p, d in manifest.items() if p not in plan.to_delete}
        expected.update({p: checkpoint.files[p] for p in plan.to_write})
        transition = self._lc.restore(
            conversation.state,
            None,
            checkpoint=RestoredFrom(checkpoint.number, checkpoint.created_at),
            now=utc_now(),
            manifest=self._as_the_model_knows(expected, deleted=plan.to_delete),
            agent_spec_path=spec,
            loaded=conversation.messages,
        )
        self._lc = transition.lifecycle
        await self._perform(transition.effects)  # a failure is told; the restore goes on

    async def _ask(
        self, question: str, action: Callable[[bool], Awaitable[None]], event: Event
    ) -> None:
        """Ask the terminal a yes/no question; ``action`` (which performs ``event``) gets
        the answer, if the lifecycle still allows ``event`` when it comes."""
        self._confirm_count += 1
        self._confirm = self._confirm_count
        self._on_confirm = action
        self._confirm_event = event
        await self._emit(AskUser(self._confirm, question))

    # -- live drift without a watcher ----------------------------------------------

    async def _watch_unavailable(self, reason: str) -> None:
        if self._hashing_at_each_turn:
            return
        self._hashing_at_each_turn = True
        await self._emit(
            Info(
                f"note: cannot watch tracked files ({reason}); comparing them at each turn instead"
            )
        )

    async def _compare_tracked_files(self) -> None:
        """Without a watcher: the tracked files changed since last seen (made, modified or
        deleted), noted before the turn. A file watched as absent (``""``: deleted, or
        agent_spec.md not made yet) and still absent is no change, as with the watcher."""
        if not self._hashing_at_each_turn or not self._watched:
            return
        watched = {path: digest for path, digest in self._watched.items() if is_inside(path)}
        manifest, _ = await self._manifest(watched)
        changed = [path for path, digest in watched.items() if manifest.get(path, "") != digest]
        if changed:
            self._watched = {**dict.fromkeys(watched, ""), **manifest}
            gone = frozenset(path for path in changed if path not in manifest)
            await self._note_changes(changed, gone)

    # -- helpers --------------------------------------------------------------

    async def _manifest(self, extra: Iterable[str] = ()) -> tuple[dict[str, str], str | None]:
        """Hash the tracked files now (in a worker thread) and remember the result."""
        paths = set(self._lc.tracked_paths) | set(extra)
        self._known = await anyio.to_thread.run_sync(
            tracked_files, self._config.workspace, paths, self._digests
        )
        return self._known

    async def _manifest_after_turn(
        self, touched: Sequence[str]
    ) -> tuple[dict[str, str], str | None]:
        """A turn whose tools touched no file changed nothing the manifest knows: reuse it.

        Changes made outside meanwhile are caught by the exit and /save manifests,
        and told live by the DriftWatcher.
        """
        if touched or self._known is None:
            return await self._manifest(touched)
        return self._known

    async def _watch(
        self, manifest: dict[str, str] | None = None, *, settled: bool = False
    ) -> None:
        """Have the DriftWatcher watch ``manifest`` (unless it already does); ``settled``:
        wait until the watch is in place (what the user does next is seen)."""
        if manifest is None:
            manifest, _ = await self._manifest()
        # agent_spec.md is tracked once it exists, and a tracked file deleted stays
        # tracked: watched while absent, their making is seen.
        manifest = {AGENT_SPEC: "", **dict.fromkeys(self._lc.tracked_paths, ""), **manifest}
        if manifest == self._watched:
            return
        self._watched = dict(manifest)
        watch = Watch(self._config.terminal_pid, self._config.workspace, manifest, self._self)
        if not settled:
            await self._peers.drift.tell(watch)
            return
        try:
            await self._peers.drift.ask(watch, WATCH_TIMEOUT_S)
        except (DeadActor, TimeoutError) as exc:  # changes are then seen at the next turn
            log.warning("terminal %d: watch not confirmed: %s", self._config.terminal_pid, exc)

    async def _perform(
        self,
        effects: Sequence[Effect],
        told: list[TerminalOutput] | None = None,
        failed: list[Exception] | None = None,
    ) -> bool:
        """Carry out a transition's effects through the StorageActor; False if one failed.
        What a failure tells the terminal goes out at once, or into ``told`` if given; the
        failures go into ``failed`` if given (the caller words them)."""
        config = self._config
        ok = True
        for effect in effects:
            try:
                match effect:
                    case WriteSession(state, encoded, _, aside):
                        message: Ask[object] = SaveSession(
                            config.project,
                            state,
                            config.terminal_pid,
                            encoded,
                            self._token,
                            self._lc.policy.known_secrets,
                            config.workspace,
                            aside,
                        )
                    case DeleteSession(session_id):
                        message = RemoveSession(config.project, session_id, forever=True)
                    case WritePointer(session_id):
                        pointer = Pointer(
                            session_id=session_id,
                            pid=config.terminal_pid,
                            pid_start_time=config.terminal_start_time,
                            updated_at=utc_now(),
                        )
                        message = SavePointer(config.project, pointer, self._token)
                    case DeletePointer():
                        message = RemovePointer(config.project, config.terminal_pid, self._token)
                    case ScrubEarlier(session_id, secrets):
                        scrub_logs_of(secrets)  # an endpoint's error may echo them
                        self._learned_untold += secrets  # the terminal keeps them too
                        message = ScrubSession(config.project, session_id, secrets)
                    case KeepOriginal(session_id):
                        message = KeepSessionFile(config.project, session_id)
                    case MarkReplyUnseen(session_id):
                        message = MarkUnseen(config.project, session_id)
                    case _:
                        assert_never(effect)
                answer = await self._peers.storage.ask(message, STORAGE_TIMEOUT_S)
            except Exception as exc:  # a defect too: the turns are kept aside, as for a disk's
                ok = False
                if isinstance(effect, WriteSession) and not isinstance(exc, NOT_OURS_TO_KEEP):
                    self._unsaved = True
                if isinstance(effect, WritePointer):
                    self._pointer_failed = exc
                log.warning(
                    "terminal %d: %s failed: %s",
                    config.terminal_pid,
                    type(effect).__name__,
                    exc,
                    exc_info=not isinstance(exc, SessionError | OSError | DeadActor | TimeoutError),
                )
                if failed is not None:  # the caller words it
                    failed.append(exc)
                    continue
                line = failure_line(effect, exc, config.terminal_pid)
                kinds = self._failure_told.setdefault(line, set())
                if kinds:
                    kinds.add(type(effect))
                    continue  # told already; the run's end says where unsaved turns are kept
                kinds.add(type(effect))
                await self._tell_or_hold(Info(line), told)
            else:
                if isinstance(effect, WritePointer):
                    self._pointer_failed = None
                if self._failure_over(type(effect)) and isinstance(effect, WriteSession):
                    await self._tell_or_hold(Info(SAVED_AGAIN), told)  # the failure is over
                moved = answer.warning() if isinstance(answer, Written) else None
                if moved is not None:  # a directory at the file's name, made by hand
                    log.warning("terminal %d: %s", config.terminal_pid, moved)
                    await self._tell_or_hold(Info(moved), told)
                if isinstance(effect, KeepOriginal) and isinstance(answer, Path):
                    await self._tell_or_hold(Info(compacted_at_resume_line(effect, answer)), told)
                if isinstance(effect, WriteSession):
                    self._unsaved = False
                    if effect.told is not None:  # the file kept under its cap: once a chat
                        await self._tell_or_hold(Info(effect.told), told)
                    # the next failure keeps a copy of its own: this one may hold turns a
                    # restore takes back
                    self._kept_as.pop(effect.state.session_id, None)
        return ok

    def _failure_over(self, kind: type[Effect]) -> bool:
        """A write of ``kind`` worked: whether a failure of it had been told."""
        told = False
        for line, kinds in list(self._failure_told.items()):
            if kind in kinds:
                told = True
                kinds.discard(kind)
                if not kinds:
                    del self._failure_told[line]
        return told

    async def _tell_or_hold(
        self, output: TerminalOutput, held: list[TerminalOutput] | None
    ) -> None:
        """``output`` to the terminal now, or into ``held`` (sent later, in order) if given."""
        if held is None:
            await self._emit(output)
        else:
            held.append(output)

    async def _emit(self, output: TerminalOutput) -> None:
        """Queue for the terminal (without a task switch when there is room). If the
        terminal is gone, the session is still handled. While an exit waits for the turn
        it cut, that turn's text and end are not told: the exit's ``Closed`` tells it (a
        terminal told by a stopping supervisor that its reply was cut off)."""
        if self._lc.leaving is not None and isinstance(output, ReplyText | TurnEnded):
            return
        if isinstance(output, TurnEnded) and self._learned_untold:
            output = dataclasses.replace(output, learned=self._learned_untold)
            self._learned_untold = ()
        try:
            try:
                self._outbox.send_nowait(output)
            except anyio.WouldBlock:
                await self._outbox.send(output)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            if isinstance(output, ToolCallLine) and output.delivered is not None:
                output.delivered.set(False)  # the terminal is gone: its tool does not run
