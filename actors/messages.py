"""The typed, immutable messages the actors exchange."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio

from actors.base import Ask, Reply
from session.errors import SetAside
from session.models import Pointer, SessionState, WorkPhase

if TYPE_CHECKING:  # annotations only: the supervisor answers attaches before pydantic-ai loads
    from pydantic_ai.messages import ModelMessage

    from actors.base import ActorRef
    from session.catalog import Pruned, Resumable, SessionListing  # noqa: F401 (in Ask["..."])
    from session.checkpoints import (
        Checkpoint,
        Reason,
        Unchanged,  # noqa: F401 (in Ask["..."])
    )
    from session.compaction import EventCompaction, Window
    from session.conversation_back import Conversation  # noqa: F401 (in Ask["..."])
    from session.encoded import EncodedMessages
    from session.file_cap import MovedTurn
    from session.kept_context import KeptContext
    from session.last_reply import LastReply
    from session.manager import ListedCheckpoints, RestoredFiles, Written  # noqa: F401 (in Ask["..."])


# -- StorageActor (all asks) ------------------------------------------------


@dataclass(frozen=True)
class SaveSession(Ask["Written"]):
    """Refused (SessionLive) unless ``writer`` holds the session or nobody does."""

    project: Path
    state: SessionState
    writer: int
    encoded: EncodedMessages | None = None
    """``state.recent_messages`` already scrubbed and encoded, if the writer has them."""
    token: int | None = None
    """The writing actor's own id (see ``Claim``): a terminal actor that has left cannot
    overwrite the session a newer actor of the same terminal pid claimed since."""
    secrets: tuple[str, ...] = ()
    """The writer's own secret values (its terminal's environment), scrubbed too."""
    workspace: Path | None = None
    """The workspace whose project ``project`` is, recorded there once."""
    moved: tuple[MovedTurn, ...] = ()
    """Turns the file has no room for (``WriteSession.aside``): written beside it first."""


@dataclass(frozen=True)
class RemoveSession(Ask[bool]):
    """Delete a session file. ``forever`` (``/reset``) also refuses any later write of it."""

    project: Path
    session_id: str
    forever: bool = False
    unless_live: bool = False
    """``sessions rm``: SessionLive if a terminal holds it, checked in the same step; and
    nothing is deleted (False) unless the session file is there: the checkpoints of one
    moved aside as corrupt may be what repairs it."""
    force: bool = False
    """``sessions rm --force``: even one a running terminal may hold, its pointer unreadable
    (``MayBeHeld``); never a live one."""
    terminal_pid: int | None = None
    """``sessions rm``: the tab that asks (its own live session and unreadable pointer are
    said as this tab's)."""


@dataclass(frozen=True)
class KeepUnsaved(Ask["Path"]):
    """Answer: where ``state`` was kept (a session whose saves failed); OSError if nowhere.
    Recovery copies live in ``recovered/`` beside ``sessions/``, else under the state root,
    else in the temp directory; as ``name`` if given (replacing the copy kept before)."""

    project: Path
    state: SessionState
    secrets: tuple[str, ...] = ()
    name: str | None = None


@dataclass(frozen=True)
class SavePointer(Ask["Written | None"]):
    """Point the tab ``pointer.pid`` at a session; None, nothing written, when the asking
    actor (``token``) is not the tab's latest claim: a newer one moved the tab on."""

    project: Path
    pointer: Pointer
    token: int | None = None


@dataclass(frozen=True)
class RemovePointer(Ask[bool]):
    """Remove the tab's pointer; False, nothing removed, when the asking actor (``token``)
    is not the tab's latest claim."""

    project: Path
    pid: int
    token: int | None = None


MessagesLoaded = Literal["scrubbed", "unscrubbed", "none"]
"""How a ``LoadSession`` answers with the session's messages: every text scrubbed (what
``sessions show`` prints), as the file holds them (for ``SessionLifecycle.resume``, which
scrubs the ones it keeps, once), or left out (what opening it needs: its manifest)."""


@dataclass(frozen=True)
class LoadSession(Ask[SessionState]):
    project: Path
    session_id: str
    messages: MessagesLoaded = "scrubbed"
    set_aside: SetAside = "leave"
    """``move``: a corrupt file is moved aside (a chat opening it); by default it is left
    in place (``sessions show`` changes no file)."""


@dataclass(frozen=True)
class LoadShown(Ask["dict[str, object]"]):
    """Answer: what ``sessions show`` prints of the session (``SessionCatalog.shown``):
    read, not its messages, and changing no file."""

    project: Path
    session_id: str


@dataclass(frozen=True)
class LoadUnanswered(Ask["str | None"]):
    """Answer: the session's last user message if it got no reply (from its header, read
    once per version of the file), else None."""

    project: Path
    session_id: str


@dataclass(frozen=True)
class LoadRecovered(Ask["tuple[Path, SessionState] | None"]):
    """Answer: the recovery copy of ``state``'s session holding more turns than it, and
    that copy's state (None if there is none)."""

    project: Path
    state: SessionState


@dataclass(frozen=True)
class FindResumable(Ask["Resumable"]):
    """Answer: ``Resumable``."""

    project: Path
    terminal_pid: int


@dataclass(frozen=True)
class Claim(Ask["Handover | None"]):
    """Make ``terminal_pid`` the one live terminal of the session; SessionLive if taken.
    A session whose terminal left while its turn finishes (``Finishing``) is taken up by
    the first claim: answered with a ``Handover`` (the claim holds it once released)."""

    session_id: str
    terminal_pid: int
    token: int | None = None
    """The claiming actor's id: two actors of one terminal pid (one leaving, one arriving)
    are told apart by it."""
    stored_in: Path | None = None
    """For a resume: the project whose file of the session must exist, checked in the same
    step as the claim (FileNotFoundError, nothing claimed, if it does not), so a resume of
    a session that is gone never holds it even for a moment."""
    new_in: Path | None = None
    """For a new session: its project (it has no file until its first turn: listings show
    it, live, meanwhile)."""


@dataclass(frozen=True)
class Finishing(Ask[None]):
    """The terminal of the session's holder (``token``) left while its turn finishes: the
    session is no longer live to others, and the first to claim it takes it up once the
    holder releases it (``holder`` is told ``Detach("taken-up")`` to cut the turn
    instead)."""

    session_id: str
    token: int
    holder: ActorRef[TerminalMessage]


@dataclass(frozen=True, eq=False)
class Handover:
    """A ``Claim``'s answer for a session whose turn finishes for a terminal gone: the
    claimer holds the session once ``released`` is set (its turn saved, its holder gone);
    ``holder`` is the actor to tell ``Detach("taken-up")`` to cut the turn."""

    released: anyio.Event
    holder: ActorRef[TerminalMessage]


@dataclass(frozen=True)
class Release(Ask[None]):
    session_id: str
    terminal_pid: int
    token: int | None = None


@dataclass(frozen=True)
class ListSessions(Ask["SessionListing"]):
    """Answer: ``SessionListing``. ``projects`` None means every project; ``terminal_pid``:
    the tab that asks, whose own unreadable pointer its lines say is its own."""

    projects: tuple[Path, ...] | None
    terminal_pid: int | None = None


@dataclass(frozen=True)
class PruneSessions(Ask["Pruned"]):
    projects: tuple[Path, ...] | None
    older_than_days: float
    dry_run: bool
    terminal_pid: int | None = None
    """The tab that asks, whose own unreadable pointer its lines say is its own."""


@dataclass(frozen=True)
class LiveCount(Ask[int]):
    pass


@dataclass(frozen=True)
class WriteCheckpoint(Ask["Checkpoint | Unchanged"]):
    """Answer: the ``Checkpoint`` written (the next number), with the content of ``paths``
    of ``workspace`` as they are now, or ``Unchanged`` (``unless_unchanged``: the latest
    checkpoint already holds that). Refused like ``SaveSession``; CheckpointCapExceeded
    when the session's cap would be passed (then nothing is written)."""

    project: Path
    workspace: Path
    state: SessionState
    paths: tuple[str, ...]
    writer: int
    reason: Reason
    cap: int | None = None
    """The session's cap in bytes; None: the actor's (``AGENT_ASSIST_CHECKPOINT_MAX_MB``)."""
    secrets: tuple[str, ...] = ()
    keep: tuple[str, ...] = ()
    """Paths about to be written over: one there that cannot be read refuses the
    checkpoint (CheckpointError), as what is written over it could not be taken back."""
    dry_run: bool = False
    """Check only: the answer is the checkpoint that would be written, refused as it
    would be (the cap, a file of ``keep`` unreadable), and nothing is written."""
    made: tuple[str, ...] = ()
    """Files the restore this checkpoint undoes will make (absent now): restoring this
    checkpoint deletes them."""
    last_request: str = ""
    """The last user message, kept for the checkpoint's line when ``state``'s tail holds
    none (a compaction took it whole)."""
    unless_unchanged: bool = False
    """Write none when the session's latest checkpoint holds the same files, modes and
    conversation state (``/save`` and the automatic checkpoint; never a restore's undo)."""
    restored: int | None = None
    """With ``unless_unchanged``: the checkpoint the conversation was taken back to, no
    turn since; none is written either when it holds the same (``/save`` right after
    ``/checkpoint N`` wrote a copy of N)."""
    encoded: EncodedMessages | None = None
    """``state.recent_messages`` as the session's save holds them, scrubbed and encoded
    (``WriteSession.encoded``): the entry splices them as they are, neither scrubbing nor
    encoding them again, when they were scrubbed of every secret the entry's are."""
    moved: tuple[MovedTurn, ...] = ()
    """The turns the conversation holds before ``state``'s tail that the session file's
    cap moved beside it (``WriteSession.aside``): written there first, if absent, and
    named by the entry (``Checkpoint.moved``), so that a restore sends them again."""
    token: int | None = None
    """The writing actor's token, checked as ``SaveSession``'s is: an actor that left does
    not add a checkpoint to a session another actor of its terminal holds since."""


@dataclass(frozen=True)
class ListCheckpoints(Ask["ListedCheckpoints"]):
    """Answer: ``ListedCheckpoints`` (oldest first)."""

    project: Path
    session_id: str


@dataclass(frozen=True)
class LoadCheckpoint(Ask["Checkpoint"]):
    """Answer: the ``Checkpoint``; CheckpointError if there is no such number."""

    project: Path
    session_id: str
    number: int


@dataclass(frozen=True)
class LoadConversation(Ask["Conversation | None"]):
    """Answer: ``checkpoint``'s conversation as a restore takes it back, the turns moved
    beside the session's file (``Checkpoint.moved``) read back before its tail, all read
    as messages once, in the worker thread; None if its own messages are not readable."""

    project: Path
    checkpoint: Checkpoint


@dataclass(frozen=True)
class CheckBlobs(Ask[None]):
    """Answer: None if the stored content of each of ``paths`` at ``checkpoint`` is there,
    a regular file of its size; CheckpointError naming the first that is not (asked
    before ``Restore files too?``, so a ``y`` is never answered by a missing blob)."""

    project: Path
    checkpoint: Checkpoint
    paths: tuple[str, ...]


@dataclass(frozen=True)
class RestoreFiles(Ask["RestoredFiles"]):
    """Write ``paths`` of ``workspace`` back to their content at checkpoint ``number``, each
    atomically, and delete ``delete`` (files of its ``made``), leaving those that no longer
    hold what ``asked`` says they held when the user was asked. Answer: the paths written,
    those deleted, those left as changed, and those that could not be, with why."""

    project: Path
    workspace: Path
    session_id: str
    number: int
    paths: tuple[str, ...]
    writer: int
    delete: tuple[str, ...] = ()
    asked: Mapping[str, str | None] = field(default_factory=dict)
    token: int | None = None
    """The writing actor's token (``WriteCheckpoint.token``)."""


@dataclass(frozen=True)
class KeepSessionFile(Ask[Path]):
    """Keep the session file as it is aside (a resume compacted turns it holds in full,
    which the next save drops from it). Answer: where it is kept."""

    project: Path
    session_id: str


@dataclass(frozen=True)
class KeepContext(Ask[None]):
    """Keep the resume context ``kept`` that terminal ``writer``'s session was given: a
    supervisor that takes over gives it the same (``session/kept_context.py``)."""

    project: Path
    session_id: str
    kept: KeptContext
    writer: int
    token: int | None = None


@dataclass(frozen=True)
class LoadKeptContext(Ask["KeptContext | None"]):
    """Answer: the resume context kept for the session, None if none is."""

    project: Path
    session_id: str


@dataclass(frozen=True)
class ScrubSession(Ask[int]):
    """Scrub ``secrets`` (found secret by a turn) from what the session wrote before
    (``SessionCatalog.scrub_written``). Answer: how many checkpoints were rewritten."""

    project: Path
    session_id: str
    secrets: tuple[str, ...]


@dataclass(frozen=True)
class MarkUnseen(Ask[None]):
    """Mark the session's last reply as seen by nobody (its turn ended for a terminal
    gone): the next open shows it (``session/unseen_reply.py``)."""

    project: Path
    session_id: str


@dataclass(frozen=True)
class TakeUnseen(Ask[bool]):
    """Answer: whether the session's last reply was marked unseen; the mark is removed."""

    project: Path
    session_id: str


StorageMessage = (
    SaveSession
    | KeepUnsaved
    | RemoveSession
    | SavePointer
    | RemovePointer
    | KeepSessionFile
    | LoadSession
    | LoadShown
    | LoadUnanswered
    | LoadRecovered
    | FindResumable
    | Claim
    | Finishing
    | Release
    | ListSessions
    | PruneSessions
    | LiveCount
    | WriteCheckpoint
    | ListCheckpoints
    | LoadCheckpoint
    | LoadConversation
    | CheckBlobs
    | RestoreFiles
    | ScrubSession
    | KeepContext
    | LoadKeptContext
    | MarkUnseen
    | TakeUnseen
)


# -- LLMActor -----------------------------------------------------------------


@dataclass(frozen=True)
class StartTurn:
    turn_id: int
    model: str
    prompt: str
    history: tuple[ModelMessage, ...]
    workspace: Path
    resume_context: str
    notes: str
    reply_to: ActorRef[TerminalMessage]
    stall_timeout_s: float | None = None
    """The session's model timeout; None: the actor's own."""
    token_budget: int | None = None
    """The request size (tokens, by the characters-per-token estimate) each model request
    of the turn is kept within: the budget less what the model counts beyond the estimate
    (``SessionLifecycle.estimate_budget``)."""
    message_over_budget: bool = False
    """Whether ``prompt`` alone reaches the token budget (``SessionLifecycle.
    message_over_budget``): a refusal as over the window then says to send a part."""
    tool_lines_delivered: bool = False
    """Whether ``reply_to`` tells when the line of a tool call reaches the terminal
    (``TurnToolCall.delivered``): the tools wait for it before they run."""
    known_secrets: tuple[str, ...] = ()
    """The session's known secret values (``PersistPolicy.known_secrets``): the lines told
    of the turn's tool calls show none of them, nor one ``prompt`` reveals."""


@dataclass(frozen=True)
class CancelTurn:
    turn_id: int
    reply_to: ActorRef[TerminalMessage]
    """The terminal whose turn it is: turn ids are counted per terminal, so two terminals'
    replies can carry the same one."""


LLMMessage = StartTurn | CancelTurn


# -- CompactionActor ----------------------------------------------------------


@dataclass(frozen=True)
class Summarize(Ask["str | None"]):
    """Answer: the summary text. With ``reply_to`` a ``SummaryReady`` is also told there.

    ``previous`` summarizes what is no longer in ``messages`` (the compacted part).
    """

    session_id: str
    messages: tuple[ModelMessage, ...]
    decisions: tuple[str, ...]
    previous: str | None
    reply_to: ActorRef[TerminalMessage] | None = None
    summary_model: str | None = None
    """The session's summary model (``offline``: none); None: the actor's own."""
    max_chars: int | None = None
    """The session's token budget in characters: a summary model is sent the newest whole
    turns within it (``previous`` covers the rest), as a chat request is held to it."""
    secrets: tuple[str, ...] = ()
    """The session's known secret values (``longest_first``): replaced in ``messages``
    before a summarizer reads them."""


@dataclass(frozen=True)
class SummarizeDue:
    """The compaction actor's own timer: summarize the latest waiting request now."""

    session_id: str


Trigger = Literal["window", "tokens", "command"]
"""What started a compaction: the sliding window, the token budget, or ``/compact``."""


@dataclass(frozen=True)
class Compact(Ask["Compacted"]):
    """Summarize ``window`` into a compaction. Asked, the answer is ``Compacted``; told
    with ``reply_to``, the ``Compacted`` is told there."""

    session_id: str
    generation: int
    window: Window
    trigger: Trigger
    reply_to: ActorRef[TerminalMessage] | None = None
    summary_model: str | None = None
    """The session's summary model (``offline``: none); None: the actor's own."""
    secrets: tuple[str, ...] = ()
    """The session's known secret values (``longest_first``): replaced in the window
    before a summarizer reads it."""
    max_chars: int | None = None
    """The session's token budget in characters: a summary model's request is held to
    it, as a chat request is."""


@dataclass(frozen=True)
class TellHeldChanges:
    """The TerminalActor's own timer: tell the changes outside a flood held (one line)."""


@dataclass(frozen=True)
class CheckFloodOver:
    """The TerminalActor's own timer: has the flood of changes outside gone quiet (then
    tell what it holds now)?"""


@dataclass(frozen=True)
class CompactionWaitOver:
    """The TerminalActor's own timer: the wait for ``compaction``'s answer is over."""

    compaction: Compact


@dataclass(frozen=True)
class StopCompaction:
    """Stop the told ``compaction`` if it still runs (the user cancelled the wait for it):
    its answer is then never told, and the summary model's request is abandoned."""

    compaction: Compact


CompactionMessage = Summarize | SummarizeDue | Compact | StopCompaction


# -- DriftWatcherActor --------------------------------------------------------


@dataclass(frozen=True)
class Watch(Ask[None]):
    """Watch these files of ``workspace`` for ``owner`` (replaces its earlier watch); an ask
    is answered once the watch is in place (a change after the answer is seen)."""

    owner: int
    workspace: Path
    manifest: dict[str, str]
    notify: ActorRef[TerminalMessage]


@dataclass(frozen=True)
class Unwatch:
    owner: int


@dataclass(frozen=True)
class Writing:
    """``owner``'s session ``session_id`` is about to write ``paths`` of ``workspace`` (a
    tool of its turn is called to): another session that tracks one of them is told the
    change as made by that session, not outside agent-assist."""

    owner: int
    session_id: str
    workspace: Path
    paths: tuple[str, ...]


@dataclass(frozen=True)
class Wrote:
    """``owner``'s turn has ended, having written ``written`` (``{path: sha256}``): what
    it claimed with ``Writing`` is over, and a file found holding what it wrote is its
    write."""

    owner: int
    session_id: str
    workspace: Path
    written: dict[str, str]


@dataclass(frozen=True)
class FsEvents:
    """From the watchdog thread: something happened to each of ``paths`` (absolute), all
    the events the event loop found waiting at once."""

    paths: frozenset[str]
    lost: bool = False
    """The kernel dropped events (its inotify queue overflowed): any tracked file may have
    changed."""


@dataclass(frozen=True)
class Settle:
    """Coalescing timer: hash what changed since the last settle."""


DriftMessage = Watch | Unwatch | Writing | Wrote | FsEvents | Settle


# -- TerminalActor ------------------------------------------------------------


@dataclass(frozen=True)
class OpenSession(Ask["Opened"]):
    """Answer: ``Opened``."""

    mode: Literal["new", "resume"]
    session_id: str | None
    continuing: Literal["resumed", "fresh"] | int | None = None
    """A re-attach after the supervisor went away (the protocol's ``Continuing``)."""


@dataclass(frozen=True)
class UserTurn:
    text: str
    message_id: str | None = None
    """The terminal's id of this message: a retry of a saved turn is answered from disk."""
    saved_only: bool = False
    """Answer it only from the session (``UserMessage.saved_only``): never run it again."""


@dataclass(frozen=True)
class CancelCurrentTurn:
    pass


@dataclass(frozen=True)
class RunCommand(Ask[None]):
    name: str
    arg: str | None


@dataclass(frozen=True)
class ConfirmAnswer:
    id: int
    answer: bool
    cancelled: bool = False


@dataclass(frozen=True)
class Detach(Ask[None]):
    """The terminal's connection ended (exit, Ctrl+C, crash) or the supervisor stops.

    ``reason`` is ``exit`` (the client said goodbye), ``disconnected`` or ``shutdown``.
    """

    reason: str


@dataclass(frozen=True)
class TurnDelta:
    turn_id: int
    text: str


@dataclass(frozen=True)
class TurnDone:
    turn_id: int
    new_messages: tuple[ModelMessage, ...] = ()
    decisions: tuple[str, ...] = ()
    touched: tuple[str, ...] = ()
    written: tuple[tuple[str, str], ...] = ()
    """The files the turn wrote, with the SHA-256 of what it wrote last."""
    read: tuple[tuple[str, str], ...] = ()
    """The files the turn read (before any write of them), with the SHA-256 read."""
    cancelled: bool = False
    error: str | None = None
    context_full: bool = False
    """The turn failed because the model refused a request as over its context window."""
    context_window: int | None = None
    """The context window that refusal stated, in tokens, if it stated one."""
    input_tokens: int | None = None
    """The model's count of the turn's last request, if it reported one."""
    elided_chars: int = 0
    """The characters of the history that request left out to keep within the budget."""
    phase: WorkPhase | None = None
    """The phase of the work the turn moved to, if it set one."""
    text: str = ""
    """The reply's last text, still held when the turn ended: the terminal gets it with
    the turn's end, in one write after the save, instead of in a write of its own that
    would compete with the save for the event loop."""


@dataclass(frozen=True)
class TurnToolCall:
    """The running turn calls a tool; ``text`` describes it in one line. ``writes``: the
    workspace paths it is called to write (sent before it runs: a change the watcher sees
    at any other path during the turn is not the turn's own)."""

    turn_id: int
    text: str
    writes: tuple[str, ...] = ()
    delivered: Reply | None = field(default=None, compare=False)
    """Set once the terminal has the line (its frame is written to the socket; or there is
    no terminal to tell): the tool waits for it before it runs, so that a supervisor
    killed while the tool runs leaves a terminal that knows a tool of the turn may have
    run, and does not send the message again to be run again."""


@dataclass(frozen=True)
class SummaryReady:
    session_id: str
    summary: str
    covers: tuple[ModelMessage, ...] = ()
    """The messages summarized (``Summarize.messages``, the same object)."""
    offline_because: str | None = None
    """Why the offline summarizer wrote it in the summary model's place, if it did."""


@dataclass(frozen=True)
class Compacted:
    """A compaction's outcome: ``compaction`` to keep, or ``error`` (None and None: the
    summarizer skipped the window)."""

    session_id: str
    generation: int
    trigger: Trigger
    compaction: EventCompaction | None = None
    error: str | None = None
    no_gain: bool = False
    """The summary would not have been shorter: nothing worth compacting yet."""
    offline_because: str | None = None
    """Why the offline summarizer wrote it in the summary model's place, if it did because
    the summary model failed (now or lately): the warning the terminal is told once."""
    offline: bool = False
    """The offline summarizer wrote it (or the summary no shorter) in the summary model's
    place: the model failed, or its answer was not used (``/compact`` says so)."""
    window: Window | None = field(default=None, compare=False)
    """The window it answers for (compared by identity): a late answer of a compaction
    given up on is told from the one in flight."""
    fallback: EventCompaction | None = None
    """When the summary model wrote ``compaction``: the offline summarizer's of the same
    window, kept instead if the model's would not make the next request smaller."""


@dataclass(frozen=True)
class FilesChanged:
    paths: tuple[str, ...] = field(default=())
    digests: tuple[str, ...] = ()
    """The SHA-256 each of ``paths`` held when it was seen ("": gone), if known."""
    by: tuple[str, ...] = ()
    """The id of the other agent-assist session that wrote each of ``paths`` ("": none
    did, it changed outside agent-assist), if known."""


@dataclass(frozen=True)
class CheckpointBeforeWrite(Ask[str | None]):
    """Asked by a turn's first file write: checkpoint the conversation and what the tracked
    files and ``paths`` (the files this turn touched, and the one about to be written) hold
    now. Answer: None when the write may go ahead, else why it may not (the checkpoint
    failed, so the write could not be taken back)."""

    turn_id: int
    paths: tuple[str, ...]


@dataclass(frozen=True)
class WatchUnavailable:
    """The DriftWatcher cannot watch this terminal's files (``reason``): compare hashes instead."""

    reason: str


@dataclass(frozen=True)
class TakeUpOver:
    """The wait of an open for ``handover`` ends: its session is ``released`` to the
    waiting actor, or (False) the wait's bound is reached."""

    handover: Handover
    released: bool


TerminalMessage = (
    OpenSession
    | UserTurn
    | CancelCurrentTurn
    | RunCommand
    | ConfirmAnswer
    | Detach
    | TurnDelta
    | TurnDone
    | TurnToolCall
    | SummaryReady
    | Compacted
    | CompactionWaitOver
    | TakeUpOver
    | TellHeldChanges
    | CheckFloodOver
    | FilesChanged
    | CheckpointBeforeWrite
    | WatchUnavailable
)


# -- TerminalActor to its terminal (the connection handler turns them into frames)


@dataclass(frozen=True)
class Opened:
    session_id: str
    resumed: bool
    drift: tuple[str, ...] = ()
    """For a resumed session: how its tracked files changed (``- a.md: modified``)."""
    phase: str | None = None
    last_reply: LastReply | None = None
    """For an open that waited for the turn of a terminal gone to finish (the handover):
    what the chat shows of that turn."""
    unanswered: str | None = None
    """For a resumed session whose last message got no reply (and no ``last_reply`` says
    so): that message, for a chat that showed no offer (``--resume ID``) to tell it."""


@dataclass(frozen=True)
class ReplyText:
    text: str


@dataclass(frozen=True)
class TurnEnded:
    status: Literal["ok", "cancelled", "error"]
    error: str | None = None
    input_tokens: int | None = field(default=None, compare=False)
    """The model's count of the turn's last request, or for a model that counts none
    (``offline``) the estimate of the turn's request (for the terminal's toolbar; not
    part of what the turn ended with)."""
    phase: str | None = field(default=None, compare=False)
    notes: tuple[str, ...] = ()
    """What the terminal says after the reply: where the model stopped (its output token
    limit, a content filter), or that a cancelled reply is kept as far as it got. Sent
    with the end, so a colour terminal draws them below the reply, not above its last
    paragraph as a notice during it is."""
    learned: tuple[str, ...] = field(default=(), compare=False)
    """Values found secret since the last end told (``ScrubEarlier``'s), kept by the
    terminal for its hello after a re-attach: a supervisor that takes over knows nothing
    else of them (the files hold ``[REDACTED]``)."""


@dataclass(frozen=True)
class ToolCallLine:
    text: str
    delivered: Reply | None = field(default=None, compare=False)
    """``TurnToolCall.delivered``: set by the connection's writer once the line's frame is
    written (or can be no more); failed with ``NotDelivered`` if the supervisor stops
    before a terminal that reads nothing took it."""


class NotDelivered(Exception):
    """A tool call's line never reached its terminal: the supervisor stopped while the
    terminal read nothing (stopped with Ctrl+Z). The tool does not run and the turn ends
    as interrupted, as far as it got."""


@dataclass(frozen=True)
class Info:
    """One line for the user (a notice, a warning)."""

    text: str
    at_reattach: bool = False
    """A change outside told by the re-attach after the supervisor went away (the
    terminal may have shown it before: not shown twice)."""
    files: tuple[str, ...] = ()
    """The files a line for a flood of changes outside stands for (not named in it)."""


@dataclass(frozen=True)
class AskUser:
    id: int
    question: str


@dataclass(frozen=True)
class CommandOutput:
    text: str
    phase: str | None = field(default=None, compare=False)
    """After a command that replaced the session's state (a restore): its phase of the work."""
    input_tokens: int | None = field(default=None, compare=False)
    """After a compaction: the tokens the conversation is estimated at now (the toolbar's
    count until the next turn's)."""


@dataclass(frozen=True)
class Closed:
    """The terminal's session is closed and, if ``saved``, durable on disk."""

    session_id: str | None
    saved: bool
    reason: str
    unsaved: bool = False
    """Turns were made that could not be saved (they are at ``kept_at``, if anywhere)."""
    kept_at: str | None = None
    told: bool = False
    """A line just said what became of the session (it could not be saved): the terminal
    adds no closing line of its own."""


@dataclass(frozen=True)
class Failure:
    """An error for the terminal; ``fatal`` ends the connection after it is sent."""

    code: str
    message: str
    fatal: bool = False
    open_refused: bool = False
    """It refuses the open the front door had answered (``ErrorFrame.open_refused``)."""


TerminalOutput = (
    Opened
    | ReplyText
    | TurnEnded
    | Info
    | AskUser
    | CommandOutput
    | Closed
    | Failure
    | ToolCallLine
)
