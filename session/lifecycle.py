"""``SessionLifecycle``: one terminal's session as pure transitions that return effects.

Rules (the table ``TRANSITIONS`` is the source of truth):

* A lifecycle starts ``unstarted``. ``start_fresh`` or ``resume`` make it
  ``active``; ``exit`` makes it ``closed``, and nothing follows ``closed``
  except a late ``record_summary``, the result of the compaction that was in
  flight, and the compaction that came due behind it (written at once: the
  session is on disk; the window due after the last turn was never compacted
  when the one before it was still running at the exit).
* A turn is a phase of its own: ``begin_turn`` moves ``active`` to ``in a
  turn``; ``complete_turn`` (saved) or ``abandon_turn`` (cancelled or failed:
  nothing kept) move it back. In a turn, ``save``, ``reset``, ``restore``,
  another ``begin_turn`` and starting a compaction are illegal (the reply ends
  first); a summary, a checkpoint (the automatic one before a file write), a
  compaction's result and ``exit`` are not. ``allows`` asks the table, so the
  caller can refuse in words before it asks anything else.
* The terminal leaving during a turn (``terminal_left``) is a phase too: a
  connection that simply ended lets the turn finish (``finishing``), any other
  exit or the finish wait's end cuts it (``cutting``); either way the turn's end
  moves to ``leaving``, where only the exit (and a summary or a compaction's
  result) follows: no turn begins for a terminal that is gone.
* Every transition returns a new lifecycle and the effects the caller must
  perform, in order (write or delete a session file or the pointer). The
  lifecycle never does IO; the caller passes in what IO found (the stored
  state, the file drift, the manifest, the clock).
* ``reset`` (``/reset``, ``/new``) deletes the saved session and pointer, clears
  history and resume context, starts a new id and sets ``session_deleted``:
  autosave (``exit``, ``record_summary``) then writes nothing until a turn
  completes or the user saves explicitly.
* ``exit`` of a session that was never saved and holds no messages writes no
  file (an empty session is not worth listing); it drops the pointer.
* The pointer is written when a session starts or resumes and with the first
  save after a ``reset``; later saves leave it alone.
* The in-memory history is bounded (``PersistPolicy.memory_turns``), so a long
  session costs the same per turn as a short one.
* A summary is written when it arrives, in a second write of the session
  already on disk (durability never waits for a summary); none for a session
  deleted by ``reset`` or never saved.
* A save keeps the session file under the cap every read holds it to
  (``PersistPolicy.max_file_bytes``, ``session/file_cap.py``): the already compacted
  turns it keeps go first, then the largest tool returns' and replies' bodies, never the
  user's messages: when they alone are over it, the oldest turns move whole to files beside
  it (``WriteSession.aside``); memory keeps them all. The first such save of a chat carries
  the line that says so (``WriteSession.told``, ``cap_told``, ``moved_told``).
* ``record_checkpoint`` moves ``checkpoint_count`` (the next write carries it);
  ``restore`` (``/checkpoint N``) replaces state and history with a checkpoint's
  through the path ``resume`` takes, keeping the session's id, creation time and
  count, and saves.
* Compaction (DESIGN 7, ``session/compaction.py``): ``compaction_due`` names the
  window to summarize (sliding window after a turn, token budget before one, or
  everything on ``/compact``); one is in flight at a time, except that the token
  budget does not wait for one in flight (``supersede_compaction``). ``compacted`` keeps
  the result: the request then carries the compaction first and the turns after
  its boundary (with none, the last turn it covers, when it fits its share); memory
  keeps ``overlap`` already compacted turns for the next window; the session file
  keeps the compaction in ``compacted_history_summary`` and in ``recent_messages``
  the overlap, the turn sent again and the turns after the boundary, so a resume
  sends and compacts exactly as the session that never left. A result for an older
  generation of the history
  (after ``reset`` or another resume), or covering no more than the one kept, is
  ignored; one that would not make the next request smaller is not kept (its offline
  fallback, if any, is tried instead) and counts as a failure. ``compaction_failed`` backs
  off: the next automatic try waits ``interval * 2**failures`` turns.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from functools import lru_cache

from pydantic_ai.messages import CompactionPart, ModelMessage, ModelRequest

from session.compacted import LAST_TURN_AGAIN, turn_again, turns_missing
from session.compaction import (
    CHARS_PER_TOKEN,
    FIRST_KEPT,
    EventCompaction,
    EventsCompactionConfig,
    Window,
    compaction_chars,
    compaction_event,
    compaction_message,
    compaction_without_secrets,
    estimate_tokens,
    events_from_messages,
    fold_window,
    merge_decisions,
    offline_compaction,
    parse_compaction,
    render_compaction,
    retention_window,
    rules_in_force,
    sliding_window,
    stated_decisions,
    token_window,
    uncompacted_chars,
    window_without_secrets,
)
from session.compaction import Event as CompactionEvent
from session.encoded import EncodedMessages
from session.environment import longest_first
from session.errors import IllegalTransition
from session.file_cap import (
    HEADROOM_DIVISOR,
    MAX_SESSION_BYTES,
    MovedTurn,
    Trimmed,
    trimmed_line,
    within_cap,
)
from session.filesystem import FileDrift
from session.history import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_TURNS,
    framing_chars,
    is_turn_start,
    last_turns_start,
    load_messages,
    message_chars,
    plain_messages,
    recent_start,
    reconstruct_history,
    turn_starts,
)
from session.interrupted import unanswered_turn, without_secret_heads
from session.kept_context import KeptContext
from session.leaving import (
    CUT_BY_EXIT,
    CUT_BY_SHUTDOWN,
    CUT_WAIT_OVER,
    CUT_WHILE_WAITED,
    FINISHING_AFTER_EXIT,
    SHUTDOWN,
    TAKEN_UP,
    AwaitCut,
    CutTurn,
    Leave,
    LeavingStep,
    LetTurnFinish,
    failed_before_reply,
)
from session.models import SessionState, WorkPhase
from session.redaction import (
    REDACTED,
    continued_secret,
    cut_token_head,
    replace_known,
    revealed_in,
    scrub_text,
)
from session.resume import RestoredFrom, build_resume_context, decisions_in_context
from session.shares import ends_within
from session.summary import user_prompts
from session.turns import stamp_turn, stamped_turn
from session.wire import wire_chars

WindowDigest = tuple[int, int, int, int, int, int | None]
"""``SessionLifecycle.window_digest``: what a compaction window's summary depends on."""
_REDACTED_BYTES = REDACTED.encode()
RULES_HEADING = "## The user's rules from earlier in this conversation (always follow them)"


class Phase(StrEnum):
    UNSTARTED = "unstarted"
    ACTIVE = "active"
    IN_TURN = "in a turn"
    FINISHING = "finishing a turn for a terminal gone"
    CUTTING = "cutting a turn to exit"
    LEAVING = "leaving once the turn ended"
    CLOSED = "closed"


class Event(StrEnum):
    START = "start a fresh session"
    RESUME = "resume a session"
    BEGIN_TURN = "begin a turn"
    TURN = "complete a turn"
    ABANDON_TURN = "end a turn without a result"
    SAVE = "save"
    RESET = "reset"
    SUMMARY = "record a summary"
    COMPACT = "start a compaction"
    COMPACTED = "keep a compaction"
    EXIT = "exit"
    CHECKPOINT = "record a checkpoint"
    RESTORE = "restore a checkpoint"
    TERMINAL_GONE = "let the turn of a terminal gone finish"
    CUT_TURN = "cut the turn to exit"


_U, _A, _T, _C = Phase.UNSTARTED, Phase.ACTIVE, Phase.IN_TURN, Phase.CLOSED
_F, _X, _L = Phase.FINISHING, Phase.CUTTING, Phase.LEAVING
TRANSITIONS: dict[tuple[Phase, Event], Phase] = {
    (_U, Event.START): _A,
    (_U, Event.RESUME): _A,
    (_U, Event.EXIT): _C,
    (_A, Event.BEGIN_TURN): _T,
    (_A, Event.SAVE): _A,
    (_A, Event.RESET): _A,
    (_A, Event.SUMMARY): _A,
    (_A, Event.COMPACT): _A,
    (_A, Event.COMPACTED): _A,
    (_A, Event.CHECKPOINT): _A,
    (_A, Event.RESTORE): _A,
    (_A, Event.EXIT): _C,
    (_T, Event.TURN): _A,
    (_T, Event.ABANDON_TURN): _A,
    (_T, Event.SUMMARY): _T,
    (_T, Event.COMPACTED): _T,
    (_T, Event.CHECKPOINT): _T,
    (_T, Event.EXIT): _C,
    (_T, Event.TERMINAL_GONE): _F,
    (_T, Event.CUT_TURN): _X,
    (_F, Event.TURN): _L,
    (_F, Event.ABANDON_TURN): _L,
    (_F, Event.SUMMARY): _F,
    (_F, Event.COMPACTED): _F,
    (_F, Event.CHECKPOINT): _F,
    (_F, Event.CUT_TURN): _X,
    (_F, Event.EXIT): _C,
    (_X, Event.TURN): _L,
    (_X, Event.ABANDON_TURN): _L,
    (_X, Event.SUMMARY): _X,
    (_X, Event.COMPACTED): _X,
    (_X, Event.CHECKPOINT): _X,
    (_X, Event.EXIT): _C,
    (_L, Event.SUMMARY): _L,
    (_L, Event.COMPACTED): _L,
    (_L, Event.EXIT): _C,
    (_C, Event.SUMMARY): _C,
    (_C, Event.COMPACT): _C,
    (_C, Event.COMPACTED): _C,
}
TURN_PHASES = frozenset({Phase.IN_TURN, Phase.FINISHING, Phase.CUTTING})
"""The phases in which a turn runs."""


@dataclass(frozen=True)
class WriteSession:
    state: SessionState
    encoded: EncodedMessages | None = None
    """``state.recent_messages`` already scrubbed and encoded (or None)."""
    told: str | None = None
    """A line for the terminal once it is written: the first save of a chat that left
    something out of the file to keep it under its cap (``session/file_cap.py``)."""
    aside: tuple[MovedTurn, ...] = ()
    """Turns moved out of the file whole (the user's messages alone over its cap): each
    written beside it, unless there already, before the session file."""


@dataclass(frozen=True)
class DeleteSession:
    session_id: str


@dataclass(frozen=True)
class WritePointer:
    session_id: str


@dataclass(frozen=True)
class DeletePointer:
    session_id: str
    """The session the pointer names (told if the pointer stays)."""


@dataclass(frozen=True)
class KeepOriginal:
    """A resume compacted turns its session file holds in full (``compacted``), or, with
    automatic compaction off, left the file's oldest turns out of the tail a save writes
    (``left_out``: how many): keep the file as it is aside before a save drops them from
    it."""

    session_id: str
    compacted: EventCompaction | None = None
    left_out: int = 0


@dataclass(frozen=True)
class ScrubEarlier:
    """Values a turn revealed as secret: scrub them from what the session wrote before
    they were known (every file kept for it but its own: ``SessionCatalog.scrub_written``)."""

    session_id: str
    secrets: tuple[str, ...]


@dataclass(frozen=True)
class MarkReplyUnseen:
    """The turn that just ended ran for a terminal gone: nobody saw its end. Mark it, so
    that the next open of the session shows it, once (``session/unseen_reply.py``)."""

    session_id: str


Effect = (
    WriteSession
    | DeleteSession
    | WritePointer
    | DeletePointer
    | ScrubEarlier
    | KeepOriginal
    | MarkReplyUnseen
)


@dataclass(frozen=True)
class PersistPolicy:
    """How much history a save keeps and which secret values it scrubs."""

    max_turns: int | None = DEFAULT_MAX_TURNS
    max_chars: int | None = DEFAULT_MAX_CHARS
    known_secrets: tuple[str, ...] = ()
    memory_turns: int = 4 * DEFAULT_MAX_TURNS
    """Turns kept in memory (for summaries and the next compaction window)."""
    compaction: EventsCompactionConfig = EventsCompactionConfig(0, 0)
    """The sliding window and the token budget (no summarizer: the actor has it)."""
    agent_chars: int = 0
    """What every request carries besides the session's part (the agent's base
    instructions and tool definitions), in characters: counted in every estimate."""
    max_file_bytes: int = MAX_SESSION_BYTES
    """The size a save keeps the session file under (``within_cap``): the cap the reader
    holds files to; lower only in tests (a real supervisor writing past a small cap)."""


@dataclass(frozen=True)
class Transition:
    lifecycle: SessionLifecycle
    effects: tuple[Effect, ...]


@dataclass(frozen=True)
class SessionLifecycle:
    """What a TerminalActor holds: the session, its in-memory history and flags."""

    phase: Phase = Phase.UNSTARTED
    state: SessionState | None = None
    history: tuple[ModelMessage, ...] = ()
    history_encoded: EncodedMessages = EncodedMessages()
    """``history`` in the session file's form: dumped, scrubbed and encoded once each."""
    last_prompt: str | None = None
    """The last turn's user message as typed, which ``history`` keeps scrubbed as the file
    does (None after a start, a resume or a reset): ``continued_secret`` reads it."""
    tail_start: int = 0
    """Where the recent whole turns within the policy's budgets start in ``history``:
    what the next request sends and what a save keeps (kept by ``_move``)."""
    history_starts: tuple[int, ...] = ()
    """Where each user turn of ``history`` starts (kept by ``_move``: a turn extends
    them instead of walking the history again, three times, as it did)."""
    resume_context: str = ""
    context_decisions: frozenset[str] = frozenset()
    """The decisions ``resume_context`` lists: the compaction sent with it leaves them
    out (each decision once in a request)."""
    session_deleted: bool = False
    saved: bool = False
    tracked_paths: frozenset[str] = frozenset()
    policy: PersistPolicy = field(default_factory=PersistPolicy)
    first_invocation: int = 1
    """The invocation (user turn) number of ``history``'s first turn."""
    compaction: EventCompaction | None = None
    last_turn_not_again: bool = False
    """The request after ``compaction`` does not carry its last turn again: with it, the
    request would not have been smaller than before the compaction (short turns)."""
    compacting: Window | None = None
    """The window of the compaction in flight, if any."""
    compaction_failures: int = 0
    backoff_until: int = 0
    """No automatic compaction before this many invocations have completed."""
    no_shorter: WindowDigest | None = None
    """The last window whose summary (the summary model's, and the offline one) came back
    no shorter than its turns (``window_digest``): while it is what is due, no summarizer
    is asked it again (H189: 21 ``/compact``s, 21 requests to the summary model)."""
    generation: int = 0
    """Bumped whenever the history is replaced (start, resume, reset)."""
    budget_warned: int = 0
    """The request's tokens when the user was last told the compacted conversation is
    still over the token budget (0: not told)."""
    token_base: int | None = None
    """Tokens of the next request as the model last counted them (its input tokens
    plus an estimate of its reply); None when the history changed since."""
    token_overhead: int = 0
    """What the model's last count held beyond the estimate of the messages and the
    instructions (the tool definitions, the base prompt): added to the estimate while
    ``token_base`` is stale (after a compaction)."""
    turn: int | None = None
    """The id of the turn in flight (``in a turn`` only)."""
    turn_message_id: str | None = None
    """The terminal's id of the message that turn answers, if it sent one."""
    leaving: str | None = None
    """Why the terminal left during a turn (``finishing``, ``cutting`` and after): its
    turn's text and end are told to nobody, and the exit gives this reason."""
    cut_by: str | None = None
    """Why the turn in flight was cut (``cutting``): ``leaving`` keeps the first reason,
    and a turn let finish for a terminal gone may be cut by another (``TAKEN_UP``)."""
    unseen: bool = False
    """The turn in flight goes on for a terminal gone (let finish, and perhaps cut at the
    finish wait's end): its end is seen by nobody (``MarkReplyUnseen``)."""
    cap_told: bool = False
    """A save left something out of the file to keep it under its cap, and a write
    carried the line that says so (``WriteSession.told``): told once a chat."""
    moved_told: bool = False
    """A save moved turns of the user's out of the file (``WriteSession.aside``), and a
    write carried the line naming where: told once a chat too, even after ``cap_told``."""

    # -- queries ----------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.state.session_id if self.state is not None else None

    @property
    def is_open(self) -> bool:
        """A session is open (between its start or resume and the exit)."""
        return self.phase in (Phase.ACTIVE, *TURN_PHASES, Phase.LEAVING)

    @property
    def in_turn(self) -> bool:
        """A turn runs (its terminal there or gone)."""
        return self.phase in TURN_PHASES

    def allows(self, event: Event) -> bool:
        """Whether the transition table allows ``event`` now."""
        return (self.phase, event) in TRANSITIONS

    def request_history(
        self, extra_chars: int = 0, *, last_turn_again: bool = True
    ) -> list[ModelMessage]:
        """The ``message_history`` for the next agent run: the recent whole turns (with
        ``last_turn_again``, the last compacted turn when no turn follows the boundary,
        unless with it the request, ``extra_chars`` more (the message about to be sent),
        would reach the token budget: it is the first thing left out, being compacted).

        ``history`` holds only what ``resume`` reconstructed and what agent runs
        produced, so cutting at a turn start keeps it valid.
        """
        tail = self.history[self.tail_start :]
        if self.compaction is None:
            return list(tail)
        share = compaction_chars(self.policy.compaction)
        if not tail and last_turn_again:
            again = self._last_compacted_turn()
            head = compaction_message(self.compaction, share, self.context_decisions, True)
            if again and self._within_budget([head, *again], extra_chars):
                return [head, *again]
        head = compaction_message(self.compaction, share, self.context_decisions, False)
        return [head, *tail]

    def _within_budget(self, history: Sequence[ModelMessage], extra_chars: int) -> bool:
        """Whether a request carrying ``history`` and ``extra_chars`` more stays under the
        token budget (as ``request_tokens`` estimates it after a compaction)."""
        threshold = self.policy.compaction.token_threshold
        return threshold is None or self._stale_tokens(history, extra_chars) < threshold

    def _estimate(self, history: Sequence[ModelMessage], extra_chars: int) -> int:
        """The tokens of a request carrying ``history``, the instructions, the agent's own
        part (``PersistPolicy.agent_chars``) and ``extra_chars`` more, by the
        characters-per-token estimate alone."""
        chars = sum(message_chars(m) for m in history) + wire_chars(self.instructions())
        chars += extra_chars
        return estimate_tokens(chars + self.policy.agent_chars)

    def _stale_tokens(self, history: Sequence[ModelMessage], extra_chars: int) -> int:
        """``_wire_estimate`` plus what the model's last count held beyond it
        (``token_overhead``): ``request_tokens`` while that count is stale, and
        ``_within_budget``: one sum."""
        return self._wire_estimate(history, extra_chars) + self.token_overhead

    def _wire_estimate(self, history: Sequence[ModelMessage], extra_chars: int) -> int:
        """``_estimate`` with what the wire adds besides (a compaction's framing): what the
        budget holds a request to."""
        return self._estimate(history, extra_chars + framing_chars(history))

    def _last_compacted_turn(self) -> tuple[ModelMessage, ...]:
        """With no turn after the compaction's boundary (one just took every turn), its last
        turn, whole (a tool call with its return), so that the model still reads the last
        exchange word for word, live as after a resume, and as scrubbed as a resume reads
        it (no secret goes back to the model with it); none when it weighs more than the
        compaction's own share of the token budget (the request stays bounded)."""
        start = self._last_compacted_turn_start()
        if start is None:
            return ()
        # As a resume reads it from the file: scrubbed (the compaction's own text is).
        return self._scrubbed(self.history[start:])[0]

    def _sends_last_turn_again(self) -> bool:
        """Whether the next request carries the compaction's last turn again (no turn
        follows its boundary): the session file says so, as the request does, for a resume
        to send what this session would (whether it is sent was decided when the
        compaction was kept, against the request before it, which a resume cannot see)."""
        return self.tail_start == len(self.history) and (
            self._last_compacted_turn_start() is not None
        )

    def _last_compacted_turn_start(self) -> int | None:
        """Where ``_last_compacted_turn`` starts in ``history`` (None: none is sent again),
        for a save, which keeps it, without scrubbing it."""
        if self.compaction is None or self.last_turn_not_again or not self.history_starts:
            return None
        start = self.history_starts[-1]
        share = compaction_chars(self.policy.compaction)
        if share is not None and sum(message_chars(m) for m in self.history[start:]) > share:
            return None
        return start

    def instructions(self) -> str:
        """This session's part of the agent's instructions: the resume context, and the
        user's rules once a compaction took them out of the history (rules are
        instructions; the compaction itself is only context), the oldest few and the newest
        that fit in the compaction's share of the token budget (rules gathered over a long
        conversation outgrew the budget themselves, and every turn compacted again)."""
        rules = self.compaction.retained.rules if self.compaction else ()
        if rules:
            rules = tuple(rules_in_force(rules, self.history[self.tail_start :]))
        if not rules:
            return self.resume_context
        lines = [f"- {rule}" for rule in rules]
        share = compaction_chars(self.policy.compaction)
        kept = lines if share is None else ends_within(lines, share, FIRST_KEPT)
        block = "\n".join([RULES_HEADING, *kept])
        return "\n\n".join(part for part in (self.resume_context, block) if part)

    def compaction_sent(self) -> str | None:
        """The compaction's text as requests carry it (held to its share of the budget,
        ending with ``LAST_TURN_AGAIN`` when the request carries its last turn again)."""
        if self.compaction is None:
            return None
        head = self.request_history()[0].parts[0]
        return str(head.content) if isinstance(head, CompactionPart) else None

    def earlier_summary(self) -> str | None:
        """What summarizes the turns before ``history``'s, for the session's summary: the
        compaction, or, with none, when turns were left out of memory (a resume's tail),
        the session's last summary, as a compaction of those turns."""
        if self.compaction is not None:
            return stored_summary(self.compaction, self.policy.known_secrets)
        earlier = self._earlier_turns()
        return render_compaction(earlier) if earlier is not None else None

    def _earlier_turns(self) -> EventCompaction | None:
        """With no compaction, the turns before those in memory (left out by the tail's
        limits with compaction off, or by a resume) as a compaction of the session's
        last summary; None if there are none, or no summary."""
        summary = self.state.summary if self.state is not None else None
        if self.compaction is None and self.first_invocation > 1 and summary:
            return EventCompaction(1, self.first_invocation - 1, summary)
        return None

    @property
    def invocations(self) -> int:
        """Completed invocations (user turns) of this session, compacted ones included."""
        return self.first_invocation - 1 + len(self.history_starts)

    def events(self) -> list[CompactionEvent]:
        """The history in memory as compaction events (the compaction, if any, last)."""
        events = events_from_messages(self.history, self.first_invocation)
        # With no compaction, the summary of the turns left out stands for them: a
        # /compact's summary then starts from the first turn, not the oldest in memory.
        earlier = self.compaction or self._earlier_turns()
        return [*events, compaction_event(earlier)] if earlier else events

    def request_tokens(self, extra_chars: int = 0) -> int:
        """The next request's size in tokens: the model's own count of the last request
        plus an estimate of what was added since, or the estimate of the whole if that
        is larger; while that count is stale (after a compaction) the estimate plus
        what the count held beyond it (``token_overhead``)."""
        history = self.request_history(extra_chars)
        if self.token_base is None:
            return self._stale_tokens(history, extra_chars)
        estimate = self._wire_estimate(history, extra_chars)
        # The model's count is the ground truth; the estimate guards against a model
        # (or a proxy) that under-reports, so compaction comes early rather than late.
        return max(self.token_base + estimate_tokens(extra_chars), estimate)

    def estimate_budget(self) -> int | None:
        """The token budget as the characters-per-token estimate must keep to it within a
        turn: less what the model's last count held beyond the estimate (``token_overhead``:
        a tokenizer that counts more than the estimate); None: no budget."""
        threshold = self.policy.compaction.token_threshold
        return None if threshold is None else max(1, threshold - self.token_overhead)

    def estimated_tokens(self, extra_chars: int = 0, *, last_turn_again: bool = True) -> int:
        """The next request's size by the characters-per-token estimate alone (the same
        measure before and after a compaction, for the notices)."""
        history = self.request_history(extra_chars, last_turn_again=last_turn_again)
        return self._estimate(history, extra_chars)

    def history_chars(self, extra_chars: int = 0, *, last_turn_again: bool = True) -> int:
        """The characters of the history the next request carries (``extra_chars`` more
        besides: the message about to be sent)."""
        history = self.request_history(extra_chars, last_turn_again=last_turn_again)
        return sum(message_chars(m) for m in history)

    def budget_out_of_reach(self, extra_chars: int = 0) -> bool:
        """Whether what the next request carries besides its history (the instructions, the
        base prompt and tool definitions the model's count holds, ``extra_chars``: the
        message about to be sent) reaches the token budget alone: no compaction brings the
        request under it, one only keeps it as small as it can be."""
        threshold = self.policy.compaction.token_threshold
        if threshold is None:
            return False
        history = estimate_tokens(self.history_chars(extra_chars))
        return self.request_tokens(extra_chars) - history >= threshold

    def message_over_budget(self, extra_chars: int) -> bool:
        """Whether a message of ``extra_chars`` reaches the token budget on its own: no
        compaction brings a request carrying it under the budget."""
        threshold = self.policy.compaction.token_threshold
        return threshold is not None and estimate_tokens(extra_chars) >= threshold

    def turns_left_out(self) -> int:
        """The turns in memory the next request leaves out, neither sent nor summarized:
        with automatic compaction off and no ``/compact`` yet, the tail's limits (its
        turns, its characters, the token budget) drop the oldest (after a ``/compact``
        they join its summary instead)."""
        if self.compaction is not None:
            return 0
        return bisect.bisect_left(self.history_starts, self.tail_start)

    def window_digest(self, window: Window) -> WindowDigest:
        """What a window's summary depends on: its history (generation), its invocations,
        the compaction it starts from, the secrets scrubbed out of it and the budget it is
        held to. Unchanged, a summarizer's answer does not change either."""
        boundary = self.compaction.end_invocation if self.compaction else 0
        return (
            self.generation,
            window.start_invocation,
            window.end_invocation,
            boundary,
            len(self.policy.known_secrets),
            self.estimate_budget(),
        )

    def known_no_shorter(self, window: Window) -> bool:
        """Whether ``window``'s summary came back no shorter than its turns, and nothing it
        depends on changed since: asking again would cost a summary and change nothing."""
        return self.no_shorter is not None and self.no_shorter == self.window_digest(window)

    def compaction_due(
        self, *, request_tokens: int | None = None, force: bool = False
    ) -> Window | None:
        """The window to compact now, if any: everything (``force``, ``/compact``, which
        asks ``known_no_shorter`` itself), the token budget's (``request_tokens`` given) or
        the sliding window's; none known no shorter."""
        window = self._compaction_due(request_tokens=request_tokens, force=force)
        if window is None or force or not self.known_no_shorter(window):
            return window
        return None

    def _compaction_due(
        self, *, request_tokens: int | None = None, force: bool = False
    ) -> Window | None:
        if not self.allows(Event.COMPACT) or self.compacting is not None:
            return None
        config = self.policy.compaction
        if force:
            return retention_window(self.events(), 0)
        if request_tokens is not None:  # the budget's: no back-off holds a request over it
            if config.compaction_interval <= 0:
                return None  # compaction off: the tail is held to the budget instead
            if config.token_threshold is None or request_tokens < config.token_threshold:
                return None  # what token_window answers, without building the events
            other_chars = request_tokens * CHARS_PER_TOKEN - self.history_chars()
            return token_window(self.events(), config, request_tokens, other_chars)
        if self.invocations < self.backoff_until:
            return None  # the sliding window's back-off after a failure
        boundary = self.compaction.end_invocation if self.compaction else 0
        if config.compaction_interval <= 0 or (
            self.invocations - boundary < config.compaction_interval
        ):
            return None  # not even every invocation since the boundary fills the window
        return sliding_window(self.events(), config)

    def write(
        self, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> WriteSession:
        """The session file to write now: the recent tail, scrubbed and already encoded,
        and the fresh manifest."""
        start = self._saved_start()
        tail = self.history_encoded[start:]
        state = self._require_state().model_copy(
            update={
                "updated_at": now,
                "file_manifest": dict(manifest),
                "agent_spec_path": agent_spec_path,
                "recent_messages": tail.json,
                "compacted_history_summary": (
                    stored_summary(
                        self.compaction,
                        self.policy.known_secrets,
                        last_turn_again=self._sends_last_turn_again(),
                    )
                    if self.compaction
                    else None
                ),
            }
        )
        capped, trimmed = self._within_cap(state, tail, start)
        if trimmed is None:
            return WriteSession(state, tail)
        state = state.model_copy(update={"recent_messages": capped.json})
        told = self.moved_told if trimmed.moved else self.cap_told
        aside = tuple(MovedTurn.of(state.session_id, n, m) for n, m in trimmed.moved)
        line = None if told else trimmed_line(trimmed, state.session_id)
        return WriteSession(state, capped, line, aside)

    def _within_cap(
        self, state: SessionState, tail: EncodedMessages, start: int
    ) -> tuple[EncodedMessages, Trimmed | None]:
        """``tail`` (``history_encoded`` from ``start``) as the file ``state`` holds it keeps
        under the policy's cap (``within_cap``): the already compacted turns before the
        boundary may go whole, oldest first."""
        cap = self.policy.max_file_bytes
        if tail.nbytes() <= cap // 2:
            return tail, None  # most saves: no need to measure the rest
        header = len(state.model_copy(update={"recent_messages": ()}).model_dump_json())
        room = cap - cap // HEADROOM_DIVISOR - header
        boundary = self._boundary_index(self.history_starts)
        ends = (*self.history_starts, len(self.history))
        cuts = [at - start for at in ends if start < at <= boundary]
        turns = [
            (at - start, self.first_invocation + number)
            for number, at in enumerate(self.history_starts)
            if at >= start
        ]
        return within_cap(tail, cuts, room, cap, turns)

    def _writing(
        self, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> tuple[SessionLifecycle, WriteSession]:
        """``write``, and the lifecycle that has told the line it carries, if any."""
        write = self.write(now, manifest, agent_spec_path)
        if write.told is None:
            return self, write
        return self._with(cap_told=True, moved_told=self.moved_told or bool(write.aside)), write

    def _saved_start(self) -> int:
        """Where the turns a save keeps start in ``history``: the request's tail, and before
        it the already compacted turns the next window reads again (its overlap) and the
        last turn the request carries again, so that a resumed session sends and compacts
        as one that never left (their first request's stamp says which turn each is)."""
        if self.compaction is None:
            return self.tail_start
        kept = self.compaction.end_invocation + 1 - self._compacted_turns_kept()
        index = max(0, kept - self.first_invocation)
        starts = self.history_starts
        start = starts[index] if index < len(starts) else len(self.history)
        again = None
        if self.tail_start == len(self.history):
            again = self._last_compacted_turn_start()
        return min(start, self.tail_start, len(self.history) if again is None else again)

    def _compacted_turns_kept(self) -> int:
        """How many already compacted turns the session file keeps for the next window: its
        overlap (none with the sliding window off: no window reads them)."""
        config = self.policy.compaction
        return config.overlap_size if config.compaction_interval > 0 else 0

    def _revealing(
        self, messages: Sequence[ModelMessage]
    ) -> tuple[PersistPolicy, EncodedMessages]:
        """``messages`` encoded, and the policy with the secret values the patterns found
        in them among its known secrets (the same policy when none is new): from then on
        they are replaced wherever they stand, however they are written there."""
        raw = plain_messages(messages)
        secrets = self.policy.known_secrets
        continued = self._continued_secret(messages)
        if continued:
            secrets = longest_first((*secrets, *continued))
        encoded = EncodedMessages.scrub(raw, secrets)
        if not any(_REDACTED_BYTES in chunk for chunk in encoded.chunks):
            return self.policy, encoded  # nothing replaced (most turns: no walk)
        found = revealed_in(raw, list(encoded.json)) - set(secrets)
        found.update(continued)
        if not found:
            return self.policy, encoded
        known = longest_first((*self.policy.known_secrets, *found))
        return dataclasses.replace(self.policy, known_secrets=known), encoded

    def _continued_secret(self, messages: Sequence[ModelMessage]) -> tuple[str, ...]:
        """The rest of a key the user cut between the last turn's message and this one's
        (``continued_secret``), and its head when too short for its pattern
        (``cut_token_head``): only the message before is scrubbed again."""
        previous = self.last_prompt
        if previous is None:  # resumed: the file's message, scrubbed
            previous = _last_prompt(self.history)
        new = user_prompts(messages[:1])
        if previous is None or not new:
            return ()
        rest = continued_secret(previous, new[0], self.policy.known_secrets)
        if rest is None:
            return ()
        head = cut_token_head(previous)
        return (rest,) if head is None else (rest, head)

    def _context_without(self, secrets: tuple[str, ...]) -> dict[str, object]:
        """The fields of what requests carry besides the history (the compaction and the
        rules it retained, the resume context and its decisions) with ``secrets`` replaced:
        a value a turn reveals as secret is sent no more from any of them."""
        return {
            "compaction": self.compaction
            and compaction_without_secrets(self.compaction, secrets),
            "resume_context": replace_known(self.resume_context, secrets),
            "context_decisions": frozenset(replace_known(tuple(self.context_decisions), secrets)),
        }

    def _dump(
        self, messages: Sequence[ModelMessage], secrets: tuple[str, ...] | None = None
    ) -> EncodedMessages:
        """The ``history_encoded`` entries of ``messages`` (scrubbed of ``secrets``, by
        default the policy's known secrets)."""
        known = self.policy.known_secrets if secrets is None else secrets
        return EncodedMessages.scrub(plain_messages(messages), known)

    def _scrubbed(
        self, messages: Sequence[ModelMessage]
    ) -> tuple[tuple[ModelMessage, ...], EncodedMessages]:
        """``messages`` scrubbed of the policy's secrets and credential-looking strings, and
        their ``history_encoded`` entries: the one scrub of what a resume keeps (a stored
        session's messages come as its file holds them). Read back from their scrubbed form
        when a text was replaced: the next request sends none of it."""
        encoded = self._dump(messages)
        return _read_back(messages, encoded), encoded

    # -- transitions ------------------------------------------------------

    def start_fresh(self, now: datetime, session_id: str | None = None) -> Transition:
        state = SessionState.new(now, session_id)
        new = self._move(
            Event.START,
            state=state,
            history=(),
            history_encoded=EncodedMessages(),
            last_prompt=None,
            resume_context="",
            context_decisions=frozenset(),
            saved=False,
            **self._fresh_compaction(None, 1),
        )
        return Transition(new, (WritePointer(state.session_id),))

    def resume(
        self,
        stored: SessionState,
        drift: FileDrift | None,
        restored: RestoredFrom | None = None,
        *,
        context: bool = True,
        drift_in_context: bool = True,
        kept_context: KeptContext | None = None,
        loaded: Sequence[ModelMessage] | None = None,
    ) -> Transition:
        """The stored session goes on (or, with ``restored``, checkpoint N's state: its
        context then says so instead of "resumed"). Without ``context``, no resume context:
        the session the terminal never left goes on after the supervisor went away. Without
        ``drift_in_context``, the context does not list the drift (it is told otherwise);
        either way the files it found deleted are tracked no more. ``kept_context``: the
        context the session was given before the supervisor went away, given again as it was (its
        "Last active", summary and drift are not the file's since). ``stored``'s messages
        may be as its file holds them (``SessionManager.load_for_resume``): those kept are
        scrubbed here, once. A tail that lacks turns before it (``turns_missing``: the file's
        cap moved them aside) is resumed with a context that says so, whatever ``context``
        and ``kept_context`` say: the chat that went on from it was sending them."""
        if loaded is None:  # else ``stored``'s messages, read already (``restore``)
            loaded = load_messages(stored.recent_messages)
        compaction = parse_compaction(stored.compacted_history_summary)
        missing = turns_missing(stored.compacted_history_summary, stored.recent_messages)
        if missing and (not context or kept_context is not None):
            # The chat was sending turns its file moved aside: going on from the file is a
            # resume, told as one (its drift told as it was to be: outside, or not at all)
            drift_in_context = drift_in_context and context
            context, kept_context = True, None
        # After a compaction every saved turn is kept: those the tail's limits leave out
        # of the request join the compaction (``_move``) instead of leaving a gap after it.
        max_turns, max_chars = self._tail_limits() if compaction is None else (None, None)
        kept = reconstruct_history(loaded, max_turns=max_turns, max_chars=max_chars)
        dropped = len(turn_starts(loaded)) - len(turn_starts(kept))
        first = (compaction.end_invocation if compaction else 0) + 1 + max(0, dropped)
        if compaction is None:  # the tail held to the budget may have left turns out of
            first = stamped_turn(kept) or first  # the file: its first one's stamp says
        else:  # the file may keep compacted turns before the boundary (the overlap)
            first = _first_kept_turn(kept, compaction) or first
        share = compaction_chars(self.policy.compaction)
        if kept_context is None:
            told = drift if drift_in_context else None
            resume_text = build_resume_context(stored, told, restored, share, missing)
            in_context = decisions_in_context(stored, share) if context else frozenset()
        else:
            resume_text, in_context = kept_context.text, kept_context.decisions
        at_once = (
            self._compacted_at_resume(
                kept, first, stored.summary, wire_chars(resume_text) if context else 0
            )
            if compaction is None
            else None
        )
        decisions = stored.decisions
        if at_once is not None:
            compaction, skipped = at_once
            kept = kept[turn_starts(kept)[skipped] :]
            first += skipped
            decisions = merge_decisions(decisions, compaction.retained.decisions)
        history, history_encoded = self._scrubbed(kept)  # only what is kept: once
        # the file says whether its compaction's last turn is sent again (``write``);
        # a compaction made here now is followed by turns
        again = at_once is not None or turn_again(stored.compacted_history_summary)
        new = self._move(
            Event.RESUME,
            # the file's messages, which may not be scrubbed (``load_for_resume``), are not
            # kept: a save writes the history's tail
            state=stored.model_copy(
                update={"recent_messages": history_encoded.json, "decisions": decisions}
            ),
            history=history,
            history_encoded=history_encoded,
            last_prompt=None,
            resume_context=resume_text if context else "",
            context_decisions=in_context if context else frozenset(),
            saved=True,
            # a file gone is told by this resume, then tracked no more
            tracked_paths=frozenset(stored.file_manifest) - set(drift.deleted if drift else ()),
            **self._fresh_compaction(compaction, first, last_turn_again=again),
        )
        new = new._due_window_waits_for_a_turn()
        pointer = WritePointer(stored.session_id)
        if restored is not None:  # a checkpoint keeps its own copy
            return Transition(new, (pointer,))
        if at_once is not None:
            keep = KeepOriginal(stored.session_id, at_once[0])
        elif dropped > 0 and compaction is None:  # the tail's limits left turns of the file out
            keep = KeepOriginal(stored.session_id, left_out=dropped)
        else:
            return Transition(new, (pointer,))
        return Transition(new, (keep, pointer))

    def _due_window_waits_for_a_turn(self) -> SessionLifecycle:
        """A resumed session whose sliding window is due already: it was due when the
        session was left, and that run tried it (backing off, its summary no shorter) or
        was cut short. The back-off is not saved, so without this a resume asked the
        summary model for the same window again at once (at the exit of a resume with no
        turn, every time); it is tried after the next turn, with that turn in it."""
        config = self.policy.compaction
        boundary = self.compaction.end_invocation if self.compaction else 0
        if 0 < config.compaction_interval <= self.invocations - boundary:
            return self._with(backoff_until=self.invocations + 1)
        return self

    def _compacted_at_resume(
        self,
        messages: Sequence[ModelMessage],
        first: int,
        summary: str | None,
        context_chars: int,
    ) -> tuple[EventCompaction, int] | None:
        """With the sliding window on, a stored tail that holds no compaction and weighs
        more than the token budget (a file made by hand, or by an older version: this
        version's saves compact it) is compacted here, by the offline summarizer, as the
        budget would compact it before the first request: what it keeps (decisions, rules,
        paths) is the same, and the turns it covers are neither kept in memory nor
        scrubbed (a 29 MB tail took 23 s to scrub whole before the compaction dropped all
        but its last turns). The compaction, and how many turns of ``messages`` it leaves
        out of memory (it covers them; the overlap the next window reads again stays);
        None if nothing is due."""
        config = self.policy.compaction
        if config.compaction_interval <= 0 or config.token_threshold is None:
            return None
        chars = sum(message_chars(m) for m in messages) + context_chars
        if estimate_tokens(chars) < config.token_threshold:
            return None
        events = events_from_messages(messages, first)
        if first > 1 and summary:  # the turns before, as ``events`` has them
            events.append(compaction_event(EventCompaction(1, first - 1, summary)))
        window = token_window(events, config, estimate_tokens(chars), context_chars)
        if window is None:
            return None
        compaction = offline_compaction(window_without_secrets(window, self.policy.known_secrets))
        if compaction is None:
            return None
        keep_from = compaction.end_invocation + 1 - config.overlap_size
        skipped = min(max(0, keep_from - first), len(turn_starts(messages)) - 1)
        return compaction, skipped

    def with_token_threshold(self, threshold: int) -> SessionLifecycle:
        """A copy whose token budget is ``threshold`` (a model refused a request as over
        its context window: the budget learns it), with the request's tail held to it."""
        compaction = dataclasses.replace(self.policy.compaction, token_threshold=threshold)
        new = self._with(policy=dataclasses.replace(self.policy, compaction=compaction))
        return new._with_tail() if new.history else new

    def begin_turn(self, turn_id: int, message_id: str | None = None) -> SessionLifecycle:
        """A reply to a user message starts (``turn_id`` names it until it ends)."""
        self._check(Event.BEGIN_TURN)
        return self._move(Event.BEGIN_TURN, turn=turn_id, turn_message_id=message_id)

    def abandon_turn(self, touched: Iterable[str] = ()) -> SessionLifecycle:
        """The turn in flight was cancelled or failed: nothing of its conversation is
        kept, but the files its tools ``touched`` before are tracked (what it wrote is on
        disk)."""
        return self._move(
            Event.ABANDON_TURN,
            turn=None,
            turn_message_id=None,
            tracked_paths=self.tracked_paths | frozenset(touched),
        )

    def terminal_left(
        self, reason: str, *, finishes_alone: bool
    ) -> tuple[SessionLifecycle, LeavingStep]:
        """The terminal left (``reason``; ``finishes_alone``: the connection simply ended,
        nobody asked the reply to stop). With no turn running, or once the wait for a cut
        turn's end is over (``CUT_WAIT_OVER``), it leaves now; another reason while a cut
        turn ends (the stop after the finish wait's cut) waits for that end; a turn running
        lets it finish if ``finishes_alone``, else (or when the finish wait is over) it is
        cut. The first reason is kept."""
        if self.turn is None or (self.phase is Phase.CUTTING and reason == CUT_WAIT_OVER):
            return self, Leave(self.leaving or reason)
        if not self.allows(Event.CUT_TURN):
            return self, AwaitCut(self.turn)
        if finishes_alone and self.allows(Event.TERMINAL_GONE):
            return self.let_turn_finish(reason), LetTurnFinish(self.turn)
        return self.cut_turn(reason), CutTurn(self.turn)

    def let_turn_finish(self, reason: str) -> SessionLifecycle:
        """The turn runs on for a terminal gone (``finishing``)."""
        return self._move(Event.TERMINAL_GONE, leaving=self.leaving or reason, unseen=True)

    def unanswered_because(self, reason: str | None = None, *, failed: str | None = None) -> str:
        """Why the message of the turn in flight is kept unanswered (``[no reply: ...]``):
        the one place that decides it. ``reason`` None: the turn's own end, cut with
        nothing kept; else the actor leaves or saves before that end came, for ``reason``
        (``SHUTDOWN``: the supervisor stops, or what stays if it dies first: a turn let
        finish for a terminal gone is kept so meanwhile). ``failed``: an internal error
        (its type and text) made the actor save before the turn's end."""
        if failed is not None:
            return failed_before_reply(failed, terminal_gone=self.phase is Phase.FINISHING)
        if self.phase is Phase.FINISHING and reason is not None:
            return FINISHING_AFTER_EXIT
        if TAKEN_UP in (reason, self.cut_by):
            return CUT_WHILE_WAITED
        if SHUTDOWN in (reason, self.leaving, self.cut_by):
            return CUT_BY_SHUTDOWN
        return CUT_BY_EXIT

    def unanswered(
        self, text: str | None, reason: str | None = None, *, failed: str | None = None
    ) -> tuple[ModelMessage, ...]:
        """The turn that keeps ``text``, the message of the turn in flight, marked
        unanswered for why ``unanswered_because`` says; empty with no turn or no message."""
        if self.turn is None or text is None:
            return ()
        return unanswered_turn(text, self.unanswered_because(reason, failed=failed))

    def kept_meanwhile(self, unanswered: Sequence[ModelMessage]) -> tuple[Effect, ...]:
        """The writes that keep the turn in flight as ``unanswered`` (its message, marked:
        ``unanswered(text, SHUTDOWN)``) while it finishes for a terminal gone: a supervisor
        that dies before its end loses the message no more. Nothing with no message. The
        lifecycle is left as it is (the turn's end replaces the file); the session's
        last-active time is kept: nobody was active."""
        kept = self._answered_by(unanswered) if unanswered else None
        if kept is None:
            return ()
        return tuple(e for e in kept.effects if not isinstance(e, MarkReplyUnseen))  # no end yet

    def with_turn_unanswered(self, unanswered: Sequence[ModelMessage]) -> SessionLifecycle:
        """The turn in flight ends with no end of its own (the actor leaves or stops before
        it came): kept as ``unanswered``, so that what the user typed is in the next write
        (an exit's wrote the session without it, and over the copy ``kept_meanwhile`` had
        written). As it is if no turn runs or nothing is given."""
        kept = self._answered_by(unanswered) if unanswered else None
        return self if kept is None else kept.lifecycle

    def _answered_by(self, unanswered: Sequence[ModelMessage]) -> Transition | None:
        """The turn in flight completed by ``unanswered`` at the session's last-active time
        (nobody was active); None if no turn runs."""
        state = self._require_state()
        if self.turn is None:
            return None
        return self.complete_turn(
            unanswered,
            now=state.updated_at,
            manifest=state.file_manifest,
            agent_spec_path=state.agent_spec_path,
        )

    def cut_turn(self, reason: str) -> SessionLifecycle:
        """The turn is being cut for the exit (``cutting``)."""
        return self._move(Event.CUT_TURN, leaving=self.leaving or reason, cut_by=reason)

    def complete_turn(
        self,
        new_messages: Sequence[ModelMessage],
        *,
        now: datetime,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
        decisions: Iterable[str] = (),
        touched: Iterable[str] = (),
        input_tokens: int | None = None,
        elided_chars: int = 0,
        phase: WorkPhase | None = None,
    ) -> Transition:
        """A turn finished: keep its messages and save (autosave is re-enabled).

        ``input_tokens`` is the model's count of the turn's last request, which left out
        ``elided_chars`` of the history to keep within the budget (the history keeps
        them, and the next request carries them again); ``phase`` the phase of the work
        the turn moved to, if it set one."""
        state = self._check(Event.TURN)
        new_messages = stamp_turn(new_messages, self.invocations + 1, self.turn_message_id)
        merged = merge_decisions(state.decisions, stated_decisions(new_messages), decisions)
        policy, encoded = self._revealing(new_messages)
        cut = without_secret_heads(new_messages, policy.known_secrets)
        if cut is not new_messages:  # a reply cut in a secret: its head goes too
            new_messages = cut
            policy, encoded = self._revealing(new_messages)
        if policy is self.policy:
            history_encoded = self.history_encoded + encoded
            history = (*self.history, *_read_back(new_messages, encoded))
        else:  # a new secret: all again
            history_encoded = self._dump((*self.history, *new_messages), policy.known_secrets)
            history = _read_back((*self.history, *new_messages), history_encoded)
        at = len(self.history)
        starts = (
            *self.history_starts,
            *(at + i for i, message in enumerate(new_messages) if is_turn_start(message)),
        )
        keep = self._memory_start(history, starts)
        dropped = bisect.bisect_left(starts, keep)
        last_reply = next(
            (m for m in reversed(new_messages) if not isinstance(m, ModelRequest)), None
        )
        token_base = (
            input_tokens + estimate_tokens(elided_chars + message_chars(last_reply))
            if input_tokens and last_reply is not None
            else None
        )
        new = self._move(
            Event.TURN,
            **({} if policy is self.policy else self._context_without(policy.known_secrets)),
            policy=policy,
            state=state.model_copy(update={"decisions": merged, "phase": phase or state.phase}),
            history=history[keep:],
            history_encoded=history_encoded[keep:],
            last_prompt=_last_prompt(new_messages) or self.last_prompt,
            history_starts=tuple(start - keep for start in starts[dropped:]),
            first_invocation=self.first_invocation + dropped,
            session_deleted=False,
            tracked_paths=self.tracked_paths | frozenset(touched),
            token_base=token_base,
            turn=None,
            turn_message_id=None,
        )
        if token_base is not None:
            new = new._with(token_overhead=max(0, token_base - new.estimated_tokens()))
        written = new._written(now, manifest, agent_spec_path)
        effects = written.effects
        if policy is not self.policy:
            found = tuple(s for s in policy.known_secrets if s not in self.policy.known_secrets)
            effects = (*effects, ScrubEarlier(state.session_id, found))
        if self.unseen:  # after the session's write: a reopen finds the reply saved
            effects = (*effects, MarkReplyUnseen(state.session_id))
        return Transition(written.lifecycle, effects)

    def save(
        self, *, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> Transition:
        """Explicit ``/save``: rebuild manifest and spec path, re-enable autosave."""
        new = self._move(Event.SAVE, session_deleted=False)
        return new._written(now, manifest, agent_spec_path)

    def reset(self, now: datetime, session_id: str | None = None) -> Transition:
        old = self._check(Event.RESET)
        new = self._move(
            Event.RESET,
            state=SessionState.new(now, session_id),
            history=(),
            history_encoded=EncodedMessages(),
            last_prompt=None,
            resume_context="",
            context_decisions=frozenset(),
            session_deleted=True,
            saved=False,
            tracked_paths=frozenset(),
            **self._fresh_compaction(None, 1),
        )
        return Transition(new, (DeleteSession(old.session_id), DeletePointer(old.session_id)))

    # -- compaction ---------------------------------------------------------

    def begin_compaction(self, window: Window) -> SessionLifecycle:
        """A compaction of ``window`` is in flight (one at a time)."""
        self._check(Event.COMPACT)
        return self._with(compacting=window)

    def supersede_compaction(self) -> SessionLifecycle:
        """Give up waiting for the compaction in flight: the token budget compacts now,
        before the next request, instead of sending it over the budget until a slow
        summary answers. That answer, when it comes, is kept only if it covers more
        than the compaction kept by then (``compacted``)."""
        self._check(Event.COMPACT)
        return self._with(compacting=None)

    def compacted(
        self,
        compaction: EventCompaction,
        generation: int,
        *,
        now: datetime,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
        back_off: bool = True,
        fallback: EventCompaction | None = None,
        settled: bool = True,
    ) -> Transition:
        """Keep ``compaction``: memory drops the turns before its overlap (or before its
        last turn), the request starts at its boundary, decisions gain what it retained,
        and it is saved.

        Not kept (no effect): a result for an older generation, or one that covers no
        more than the compaction already kept (a superseded one, answering late). One
        that would not make the next request smaller (a summary longer than the turns it
        replaces once the request's framing and the rules in the instructions are
        counted) is not kept: ``fallback`` (the offline summarizer's of the same window,
        when a summary model wrote ``compaction``) is tried in its place; with none, or
        no smaller either, it is taken as a failure (``compaction_failed(back_off)``),
        remembered as no shorter when ``settled`` (written by the summarizer the session
        asks, not by the offline one standing in for a model that failed)."""
        state = self._check(Event.COMPACTED)
        if generation != self.generation:
            return Transition(self, ())
        if self.compaction is not None and (
            compaction.end_invocation <= self.compaction.end_invocation
        ):
            return Transition(self, ())
        end = compaction.end_invocation
        # the overlap the next window reads again, and at least the last turn: a
        # checkpoint of a tail the compaction took whole still names its last message
        keep_from = end + 1 - max(1, self.policy.compaction.overlap_size)
        starts = self.history_starts
        skip = min(max(0, keep_from - self.first_invocation), len(starts))
        cut = starts[skip] if skip < len(starts) else len(self.history)
        # summarized before a turn revealed a value as secret: it may still hold it
        compaction = compaction_without_secrets(compaction, self.policy.known_secrets)
        decisions = merge_decisions(state.decisions, compaction.retained.decisions)
        new = self._move(
            Event.COMPACTED,
            state=state.model_copy(update={"decisions": decisions}),
            history=self.history[cut:],
            history_encoded=self.history_encoded[cut:],
            first_invocation=self.first_invocation + skip,
            compaction=compaction,
            last_turn_not_again=False,
            compacting=None,
            compaction_failures=0,
            backoff_until=0,
            token_base=None,
        )
        # the last turn sent again after it is no part of what the compaction made; it is
        # sent only if the request stays smaller with it (a compaction never grows it)
        before = self.estimated_tokens()
        if new.estimated_tokens(last_turn_again=False) >= before:
            if fallback is not None:
                return self.compacted(
                    fallback,
                    generation,
                    now=now,
                    manifest=manifest,
                    agent_spec_path=agent_spec_path,
                    back_off=back_off,
                    settled=settled,
                )
            failed = self.compaction_failed(generation, back_off=back_off, no_gain=settled)
            return Transition(failed, ())
        if new.estimated_tokens() >= before:
            new = new._with(last_turn_not_again=True)
        if new.session_deleted or not new.saved:
            return Transition(new, ())
        new, write = new._writing(now, manifest, agent_spec_path)
        return Transition(new, (write,))

    def compaction_failed(
        self,
        generation: int,
        *,
        back_off: bool = True,
        window: Window | None = None,
        no_gain: bool = False,
    ) -> SessionLifecycle:
        """Back off: the next automatic compaction waits ``interval * 2**failures`` turns
        (a failed ``/compact`` does not: ``back_off`` False only ends the attempt).
        ``window``, if known, is the one that failed: not the one in flight, nothing.
        ``no_gain``: its summary was no shorter, remembered (``known_no_shorter``)."""
        if generation != self.generation or self.compacting is None:
            return self  # a late answer of a superseded compaction: nothing in flight
        if window is not None and window is not self.compacting:
            return self  # a late answer of a superseded compaction, another in flight
        no_shorter = self.window_digest(self.compacting) if no_gain else self.no_shorter
        if not back_off:
            return self._with(compacting=None, no_shorter=no_shorter)
        failures = self.compaction_failures + 1
        wait = max(1, self.policy.compaction.compaction_interval) * 2 ** min(failures, 6)
        return self._with(
            compacting=None,
            compaction_failures=failures,
            backoff_until=self.invocations + wait,
            no_shorter=no_shorter,
        )

    def over_budget(self, generation: int, tokens: int) -> tuple[SessionLifecycle, bool]:
        """A request goes over the token budget, at ``tokens``: a compaction for it left it
        over (the new message, or what the instructions carry, outweigh the budget), or
        none could be made (compaction off, or nothing left to compact). No back-off:
        before the next request the turns completed since are compacted again (one
        compaction per request, and none when nothing is left to compact), so the request
        stays as small as it can be; backing off let a run of huge messages grow it
        without bound. True when the user should be told: the first time in this
        history, and again whenever the request has grown by half since."""
        if generation != self.generation:
            return self, False
        if self.budget_warned and tokens < self.budget_warned * 3 // 2:
            return self, False
        return self._with(budget_warned=tokens), True

    def _fresh_compaction(
        self,
        compaction: EventCompaction | None,
        first_invocation: int,
        *,
        last_turn_again: bool = True,
    ) -> dict[str, object]:
        return {
            "compaction": compaction,
            "last_turn_not_again": not last_turn_again,
            "first_invocation": first_invocation,
            "compacting": None,
            "compaction_failures": 0,
            "backoff_until": 0,
            "no_shorter": None,
            "generation": self.generation + 1,
            "token_base": None,
            "budget_warned": 0,
        }

    def record_summary(
        self,
        summary: str,
        *,
        now: datetime,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
    ) -> Transition:
        """A summary arrived: a second write of a session already on disk (the listing
        shows it at once; it no longer waits for the next turn's save, a turn behind)."""
        state = self._check(Event.SUMMARY)
        new = self._move(Event.SUMMARY, state=state.model_copy(update={"summary": summary}))
        if new.session_deleted or not new.saved:
            return Transition(new, ())
        new, write = new._writing(now, manifest, agent_spec_path)
        return Transition(new, (write,))

    def exit(
        self,
        *,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
        summary: str | None = None,
    ) -> Transition:
        """The terminal went away (exit, Ctrl+C, crash): the autosave path. ``summary``:
        one to write with it (the offline summary of what the kept one does not cover:
        a summary model may answer late, or never if the supervisor stops first).

        The write keeps the session's last-active time (``updated_at``): that of its last
        completed turn, ``/save`` or restore. Leaving is no activity: a terminal killed
        while its message was unanswered moved the resume offer's ``last active`` to the
        time of the kill, though no turn had completed since."""
        new = self._move(Event.EXIT, turn=None, turn_message_id=None)
        if summary and new.state is not None and new.state.summary != summary:
            new = new._with(state=new.state.model_copy(update={"summary": summary}))
        if self.phase is Phase.UNSTARTED or self.session_deleted:
            return Transition(new, ())
        if not self.saved and not self.history:
            return Transition(new, (DeletePointer(self._require_state().session_id),))
        last_active = self._require_state().updated_at
        return new._written(last_active, manifest, agent_spec_path)

    def record_checkpoint(self, number: int) -> Transition:
        """Checkpoint ``number`` was written: ``checkpoint_count`` follows (the next write
        of the session carries it)."""
        state = self._check(Event.CHECKPOINT)
        count = max(number, state.checkpoint_count)
        new = self._move(
            Event.CHECKPOINT, state=state.model_copy(update={"checkpoint_count": count})
        )
        return Transition(new, ())

    def restore(
        self,
        stored: SessionState,
        drift: FileDrift | None,
        *,
        checkpoint: RestoredFrom,
        now: datetime,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
        loaded: Sequence[ModelMessage] | None = None,
    ) -> Transition:
        """``/checkpoint N``: the conversation goes back to checkpoint N's state (``loaded``:
        its messages, already read as messages where the entry was read).

        State and history are replaced wholesale through the path ``resume`` takes
        (so the next request carries N's history and N's resume context); the
        session keeps its id, creation time and checkpoint count, keeps tracking
        the files it tracks now, and is saved (autosave is re-enabled).
        """
        current = self._check(Event.RESTORE)
        state = stored.model_copy(
            update={
                "session_id": current.session_id,
                "created_at": current.created_at,
                "checkpoint_count": max(current.checkpoint_count, stored.checkpoint_count),
            }
        )
        unstarted = self._with(phase=Phase.UNSTARTED)
        resumed = unstarted.resume(state, drift, checkpoint, loaded=loaded).lifecycle
        new = resumed._with(
            phase=self._target(Event.RESTORE),
            session_deleted=False,
            saved=self.saved,
            tracked_paths=self.tracked_paths | resumed.tracked_paths,
        )
        return new._written(now, manifest, agent_spec_path)

    # -- helpers ----------------------------------------------------------

    def _written(
        self, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> Transition:
        told, write = self._writing(now, manifest, agent_spec_path)
        # Every file a save's manifest holds stays tracked, as a resume's do: a template
        # file deleted (and told) was dropped at the next turn, and its coming back, or an
        # edit after it, was never told.
        tracked = self.tracked_paths
        if not tracked.issuperset(manifest):  # at a turn's end: a set's check, most often
            tracked = tracked | frozenset(manifest)
        new = told._with(state=write.state, saved=True, tracked_paths=tracked)
        if self.saved:
            return Transition(new, (write,))
        return Transition(new, (write, WritePointer(write.state.session_id)))

    def _target(self, event: Event) -> Phase:
        target = TRANSITIONS.get((self.phase, event))
        if target is None:
            raise IllegalTransition(event.value, self.phase.value)
        return target

    def _check(self, event: Event) -> SessionState:
        """Refuse ``event`` if the table does not allow it here; return the current state."""
        self._target(event)
        return self._require_state()

    def _with(self, **changes: object) -> SessionLifecycle:
        """A copy with ``changes``: ``dataclasses.replace`` without running ``__init__``
        again for all twenty fields (a turn makes five copies)."""
        unknown = changes.keys() - _FIELDS
        if unknown:
            raise TypeError(f"SessionLifecycle has no field {', '.join(sorted(unknown))}")
        new = object.__new__(type(self))
        vars(new).update(vars(self), **changes)
        return new

    def _move(self, event: Event, **changes: object) -> SessionLifecycle:
        new = self._with(phase=self._target(event), **changes)
        if "history" not in changes:
            return new
        if "history_starts" not in changes:
            new = new._with(history_starts=tuple(turn_starts(new.history)))
        return new._with_tail()

    def _with_tail(self) -> SessionLifecycle:
        """A copy whose ``tail_start`` follows the history and the policy's limits."""
        new = self
        max_turns, max_chars = new._tail_limits()
        starts = new.history_starts
        if max_chars is None:
            recent = last_turns_start(starts, len(new.history), max_turns)
        else:
            recent = recent_start(new.history, max_turns=max_turns, max_chars=max_chars)
        boundary = new._boundary_index(starts)
        if recent > boundary and new.compaction is not None:
            # Compaction off, after a /compact: the turns the budget leaves out of the
            # request join the compaction, or its "later turns follow in full" is false
            # and they vanish from the request, the file and the turn count.
            folded = new._folded(starts, recent)
            if folded is None:
                recent = boundary  # nothing could cover them: they stay
            else:
                new = new._with(compaction=folded)
                boundary = new._boundary_index(starts)
        return new._with(tail_start=max(recent, boundary))

    def _folded(self, starts: Sequence[int], cut: int) -> EventCompaction | None:
        """The compaction extended by the offline summarizer over the turns after its
        boundary that start before index ``cut`` of ``history`` (``starts``: where its
        turns start), or None if no cut there is safe."""
        end = self.first_invocation + bisect.bisect_left(starts, cut) - 1
        window = fold_window(self.events(), end)
        if window is None:
            return None
        return offline_compaction(window_without_secrets(window, self.policy.known_secrets))

    def _tail_limits(self) -> tuple[int | None, int | None]:
        """The request's tail limits. With the sliding window on there are none: every
        turn after the boundary is sent in full (the window and the token budget keep
        it small); with it off (no automatic compaction), the recent turns within the
        policy's budgets and the token budget's."""
        config = self.policy.compaction
        if config.compaction_interval > 0:
            return None, None
        budget = uncompacted_chars(config)
        limits = [limit for limit in (self.policy.max_chars, budget) if limit is not None]
        return self.policy.max_turns, min(limits, default=None)

    def _memory_start(self, history: Sequence[ModelMessage], starts: Sequence[int]) -> int:
        """Where the turns kept in memory start: the policy's ``memory_turns``, but never
        past a turn the sliding window has yet to compact (or give again as overlap),
        up to a hard bound of twice the window's need."""
        policy = self.policy
        keep = last_turns_start(starts, len(history), policy.memory_turns)
        config = policy.compaction
        if config.compaction_interval <= 0:
            return keep
        boundary = self.compaction.end_invocation if self.compaction else 0
        needed = max(0, boundary + 1 - config.overlap_size - self.first_invocation)
        needed_start = starts[needed] if needed < len(starts) else len(history)
        hard = 2 * max(policy.memory_turns, config.compaction_interval + config.overlap_size + 1)
        return max(min(keep, needed_start), last_turns_start(starts, len(history), hard))

    def _boundary_index(self, starts: Sequence[int]) -> int:
        """Where the turns after the compaction's boundary start in ``history``, whose
        turns start at ``starts``."""
        if self.compaction is None:
            return 0
        inside = self.compaction.end_invocation + 1 - self.first_invocation
        if inside <= 0:
            return 0
        return starts[inside] if inside < len(starts) else len(self.history)

    def _require_state(self) -> SessionState:
        if self.state is None:
            raise IllegalTransition("use the session", self.phase.value)
        return self.state


@lru_cache(maxsize=8)
def stored_summary(
    compaction: EventCompaction, known_secrets: tuple[str, ...], *, last_turn_again: bool = False
) -> str:
    """The session file's ``compacted_history_summary`` of ``compaction``: rendered and
    scrubbed once, not at every save; ending, as the request's does, with
    ``LAST_TURN_AGAIN`` when the request carries its last turn again
    (``parse_compaction`` leaves that line out of the compaction it reads)."""
    text = scrub_text(render_compaction(compaction), known_secrets)
    if last_turn_again:
        text += "\n\n" + LAST_TURN_AGAIN.format(number=compaction.end_invocation)
    return text


_FIELDS = frozenset(f.name for f in dataclasses.fields(SessionLifecycle))


def _first_kept_turn(history: Sequence[ModelMessage], compaction: EventCompaction) -> int | None:
    """The number of ``history``'s first turn when it is one ``compaction`` covers (a saved
    tail keeps the overlap the next window reads again before the boundary, stamped with
    their numbers), or one after the turn after the boundary (the turns between were moved
    out of the file: ``MovedTurn``); None when it is not stamped (a file of an older
    version, which saved only the turns after the boundary)."""
    number = stamped_turn(history)
    if number is None or number < compaction.start_invocation:
        return None
    return number


def _read_back(
    messages: Sequence[ModelMessage], encoded: EncodedMessages
) -> tuple[ModelMessage, ...]:
    """``messages`` as their scrubbed ``encoded`` form holds them: read back only when a
    text was replaced (most turns: the same messages), so that no request sends it."""
    if any(_REDACTED_BYTES in chunk for chunk in encoded.chunks):
        return tuple(load_messages(encoded.json))
    return tuple(messages)


def _last_prompt(history: Sequence[ModelMessage]) -> str | None:
    """The text of the last user message in ``history`` (its last turn's), if any."""
    for message in reversed(history):
        if isinstance(message, ModelRequest):
            prompts = user_prompts([message])
            if prompts:
                return prompts[-1]
    return None
