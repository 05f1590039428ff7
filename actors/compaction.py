"""CompactionActor: summaries and compactions off the turn's critical path; failures never
break a session.

With ``AGENT_ASSIST_SUMMARY_MODEL`` set, an LLM writes the summary and the
compaction narrative (bounded by a timeout) and the offline summarizer is the
fallback; without it, the offline summarizer alone. A compaction (DESIGN 7)
that fails or is not shorter than what it replaces is answered with an error;
the TerminalActor backs off and the conversation goes on. A summary model's
summary too long for that is replaced by the offline summarizer's, and one
that is shorter comes with the offline one as a fallback (``Compacted.fallback``)."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import math
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final, TypeVar

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
)

from actors.assistant import resolve_model
from actors.base import Actor, ActorRef, DeadActor, Envelope
from actors.messages import (
    Compact,
    Compacted,
    CompactionMessage,
    StopCompaction,
    Summarize,
    SummarizeDue,
    SummaryReady,
)
from actors.turn_lines import (
    context_window_exceeded,
    endpoint_of,
    error_words,
    stated_context_window,
)
from session.compaction import (
    SESSION_SUMMARY_TEMPLATE,
    BaseEventsSummarizer,
    CompactionError,
    Event,
    EventCompaction,
    LlmEventSummarizer,
    OfflineEventSummarizer,
    RunawaySummary,
    SummaryNotShorter,
    SummaryTooLong,
    compaction_event,
    events_from_messages,
    finish_compaction,
    messages_without_secrets,
    offline_fallback,
    parse_compaction,
    window_without_secrets,
)
from session.history import count_turns, trim_to_recent
from session.redaction import replace_known, scrub_text
from session.summary import MAX_SUMMARY_CHARS, offline_summary
from session.summary_window import WINDOW_TRIES, SummaryWindows
from session.turns import stamped_turn
from session.waits import wait_words

log = logging.getLogger("agent_assist.compaction")
LLM_SUMMARY_TIMEOUT_S = 30.0
LLM_BLOCKING_TIMEOUT_S = 15.0
"""A compaction the next request waits for (token budget, ``/compact``) gives the summary
model less time before the offline summarizer takes over."""
LLM_RETRY_AFTER_S = 300.0
"""After the summary model failed, the offline summarizer alone for this long."""
LLM_BLIP_RETRY_S = 30.0
"""The same after a failure a server has now and then (a 5xx, overloaded, the connection
lost), met again by the HTTP client's own tries (``chat_client``)."""
BLIPS = (ModelServerError, ModelUnavailableError, ModelConnectionError)
SUMMARY_DELAY_S = 1.0
SUMMARY_MODEL_SLOTS = 4
"""Session summaries asked of the summary model at once: every terminal leaving together
(a logout, ``supervisor stop``) asked it one each, hundreds at once."""
SUMMARY_SLOT_WAIT_S = 5.0
"""How long an asked summary (the exit's, whose asker gives up after 10 s) waits for one
of ``SUMMARY_MODEL_SLOTS`` before the offline summarizer answers instead."""
KEPT_ANSWERS = 64
"""Told compactions' answers kept for an ask of the same window."""
STOPPED_LINE = "the compaction actor stopped before it finished"
TOO_LONG_BECAUSE: Final = (
    "the summary model's summary was too long; the offline summarizer's is used"
)
"""Why the offline summarizer's compaction was kept in the summary model's place: the
model's would not have made the next request smaller (told once, as a warning)."""
BUSY_BECAUSE: Final = (
    "the summary model had not answered this session's previous compaction yet; "
    "the offline summarizer's is used"
)
"""Why a compaction was written offline: its wait for the session's request before it
(one at a time) outlasted its own time (told once, as a warning)."""
OFFLINE: Final = "offline"
"""As a summary model: the offline summarizer (no model)."""
NOT_A_FAILURE: Final = (SummaryNotShorter, RunawaySummary)
"""Answers not used that are no sign of a summary model down (one not shorter than a
short conversation, one over the cap): the offline summary for that window, one warning,
and the model asked again next time (not ``LLM_RETRY_AFTER_S`` offline)."""
R = TypeVar("R")

SUMMARY_TEMPLATE: Final = SESSION_SUMMARY_TEMPLATE
"""The session summary's prompt (the listing's summary, not a compaction's narrative)."""


@dataclass
class _Running:
    """A told compaction in progress: ``done`` is set when it ends (``result`` unless it
    was cut short); ``scope`` stops it (``StopCompaction``)."""

    done: anyio.Event = field(default_factory=anyio.Event)
    result: Compacted | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)


_WindowKey = tuple[str, int, int, int]
"""A compaction's session, generation, and window's first and last invocations."""


async def off_the_loop(fn: Callable[..., R], *args: Any) -> R:
    """``fn(*args)`` in a worker thread: summarizing a window and extracting what it keeps
    scan every text of it (a session of long turns took seconds), and on the event loop
    every other terminal of the supervisor waited that long. The work is pure: a
    cancelled wait abandons it."""
    return await anyio.to_thread.run_sync(partial(fn, *args), abandon_on_cancel=True)


def _window_key(message: Compact) -> _WindowKey:
    window = message.window
    return message.session_id, message.generation, window.start_invocation, window.end_invocation


def summary_model_down_line(model: str, reason: str, seconds: float) -> str:
    """Why the offline summarizer stands in for the summary ``model``, in one line: where it
    was asked and why it failed (not clipped: the endpoint's own words are the cause),
    then for how long (``wait_words``: 150 s was said as ``2 min``; the supervisor's log
    names the model too)."""
    left = wait_words(seconds)
    return (
        f"the summary model at {endpoint_of(model)} failed ({reason}); "
        f"offline summaries for {left}"
    )


def failure_reason(exc: BaseException, known_secrets: tuple[str, ...] = ()) -> str:
    """Why the summary model failed, as the terminal's line says it: pydantic-ai's own words
    for an empty or unusable answer ("Exceeded maximum output retries (1)") say nothing
    to a user. Scrubbed of ``known_secrets`` before it is cut."""
    if isinstance(exc, TimeoutError):
        return "TimeoutError: no answer in time"
    if isinstance(exc, UnexpectedModelBehavior):
        return "its answer was empty or could not be used"
    text = error_words(exc, known_secrets)[:200]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def offline_for(exc: BaseException) -> float:
    """For how long the offline summarizer stands in for a summary model that failed with
    ``exc``: a blip briefly, anything else (a timeout, ours or the transport's; a refusal,
    a key, a rate limit) for ``LLM_RETRY_AFTER_S``, so that a model that is down or hangs
    costs one failure, not one a turn."""
    blip = isinstance(exc, BLIPS) and not isinstance(exc, ModelTimeoutError)
    return LLM_BLIP_RETRY_S if blip else LLM_RETRY_AFTER_S


class CompactionActor(Actor[CompactionMessage]):
    """An ask (``Summarize`` without ``reply_to``) is answered at once: the exit path
    waits for it. A told ``Summarize`` waits ``SUMMARY_DELAY_S`` and only the latest
    one of a session is summarized, so a burst of turns costs one summary and the
    work does not compete with the turns themselves (nor, with an LLM, burn tokens).
    """

    name = "compaction"

    def __init__(
        self,
        self_ref: ActorRef[CompactionMessage],
        summary_model: str | None = None,
        summarizer: BaseEventsSummarizer | None = None,
        llm_timeouts: tuple[float, float] = (LLM_SUMMARY_TIMEOUT_S, LLM_BLOCKING_TIMEOUT_S),
        summary_slots: tuple[int, float] = (SUMMARY_MODEL_SLOTS, SUMMARY_SLOT_WAIT_S),
    ) -> None:
        """``summarizer`` replaces the configured ones (LLM, then offline) for compactions;
        ``llm_timeouts`` bound the summary model in the background and when waited for;
        ``summary_slots``: the summaries asked of the model at once, and how long an
        asked one waits for a slot."""
        self._self = self_ref
        self._summary_model = summary_model
        self._summarizer = summarizer
        self._llm_summarizers: dict[str, LlmEventSummarizer] = {}
        self._llm_down: dict[str, tuple[float, str]] = {}
        """Summary models that failed: until when the offline summarizer stands in, why."""
        self._windows = SummaryWindows()
        """What summary models' refusals as over their context window taught
        (``_within_window``)."""
        self._llm_timeouts = llm_timeouts
        self._summary_slots = anyio.CapacityLimiter(summary_slots[0])
        self._summary_slot_wait = summary_slots[1]
        self._waiting: dict[str, Summarize] = {}
        self._summarizing: set[str] = set()
        """Sessions whose summary is being written: one at a time each (a hung summary
        model took one more request per turn, a dozen at once)."""
        self._asking: dict[str, anyio.Lock] = {}
        """Sessions whose compaction asks the summary model now, one at a time each
        (``_one_request``)."""
        self._running: dict[_WindowKey, _Running] = {}
        """The told compactions running or just answered, by session, generation and
        window: an ask for the same window (the exit's, for the compaction due after the
        last turn) waits for that answer, or takes it, instead of asking the model again."""
        self._tg: TaskGroup | None = None

    async def serve(self, mailbox: MemoryObjectReceiveStream[Envelope[CompactionMessage]]) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            await super().serve(mailbox)
            tg.cancel_scope.cancel()

    async def answer(
        self, envelope: Envelope[CompactionMessage], message: CompactionMessage
    ) -> None:
        """An ask (the exit's summary, the exit's compaction) is answered from a task of
        its own: it may wait for the summary model (up to ``LLM_SUMMARY_TIMEOUT_S``), and
        in the mailbox it held every message behind it that long: the StopCompaction of
        a /compact cancelled with Ctrl+C, and every other terminal's compactions."""
        if envelope.reply is None or self._tg is None:
            await super().answer(envelope, message)
        else:
            self._tg.start_soon(self._answer_apart, envelope, message)

    async def _answer_apart(
        self, envelope: Envelope[CompactionMessage], message: CompactionMessage
    ) -> None:
        try:
            await super().answer(envelope, message)
        finally:  # cut short (the actor stops): the asker is told, not left to time out
            assert envelope.reply is not None
            envelope.reply.fail(DeadActor(f"{self.name} stopped"))

    async def handle(self, message: CompactionMessage) -> Any:
        match message:
            case Compact(reply_to=None):
                running = self._running.get(_window_key(message))
                if running is not None:  # told before (the exit asks again): that answer
                    await running.done.wait()
                    if running.result is not None:
                        return dataclasses.replace(running.result, trigger=message.trigger)
                return await self._compact(message)
            case Compact(reply_to=reply_to) if reply_to is not None:
                assert self._tg is not None
                running = self._running[_window_key(message)] = _Running()  # a retry: afresh
                self._tg.start_soon(self._compact_and_tell, message, reply_to, running)
            case StopCompaction(compaction):
                running = self._running.get(_window_key(compaction))
                if running is not None and running.result is None:
                    running.scope.cancel()
            case Summarize(reply_to=None, session_id=session_id):
                self._waiting.pop(session_id, None)  # asked for now: the told one is moot
                return await self._summarize(message)
            case Summarize(session_id=session_id):
                if session_id not in self._waiting and self._tg is not None:
                    self._tg.start_soon(self._due_later, session_id)
                self._waiting[session_id] = message
            case SummarizeDue(session_id) if session_id in self._summarizing:
                pass  # the newest request waits; it is started when the running one ends
            case SummarizeDue(session_id):
                waiting = self._waiting.pop(session_id, None)
                if waiting is not None and waiting.reply_to is not None and self._tg is not None:
                    # In its own task: a slow summary model never holds up the mailbox.
                    self._summarizing.add(session_id)
                    self._tg.start_soon(self._summarize_and_tell, waiting, waiting.reply_to)
        return None

    async def _summarize_and_tell(self, message: Summarize, reply_to: ActorRef[Any]) -> None:
        """A summary that fails is logged and skipped: in its own task, an exception would
        crash the actor, and with it the compactions other sessions are waiting for."""
        try:
            summary, because = await self._summary_and_why(message)
        except Exception:
            log.exception("summary of session %s failed; skipped", message.session_id)
            return
        finally:
            self._summarizing.discard(message.session_id)
            if message.session_id in self._waiting and self._tg is not None:
                self._tg.start_soon(self._due_later, message.session_id)  # the newest next
        if summary:
            ready = SummaryReady(message.session_id, summary, message.messages, because)
            with contextlib.suppress(DeadActor):
                await reply_to.tell(ready)

    async def _compact_and_tell(
        self, message: Compact, reply_to: ActorRef[Any], running: _Running
    ) -> None:
        """Tell the compaction's result; if the actor stops first (a crash, the supervisor's
        stop), tell that it failed, or the session would wait for it for good (no other
        compaction starts while one is in flight). Stopped (``StopCompaction``), nothing."""
        key = _window_key(message)
        try:
            with running.scope:
                result = await self._compact(message)
            if running.scope.cancelled_caught:  # stopped: the one waiting has gone on
                log.info("compaction of session %s stopped", message.session_id)
                return
        except BaseException:  # cancelled: _compact turns every failure into an answer
            stopped = Compacted(
                message.session_id,
                message.generation,
                message.trigger,
                None,
                STOPPED_LINE,
                window=message.window,
            )
            reply_to.tell_when_room(stopped)  # a cancelled task cannot wait
            raise
        finally:
            running.done.set()
            if self._running.get(key) is running:
                del self._running[key]
        running.result = result
        self._running[key] = running  # kept a while: the exit may ask after it ended
        while len(self._running) > KEPT_ANSWERS:
            del self._running[next(iter(self._running))]
        with contextlib.suppress(DeadActor):
            await reply_to.tell(result)

    async def _compact(self, message: Compact) -> Compacted:
        """Summarize the window; every failure becomes an answer, never an exception."""
        window = message.window
        background, waited_for = self._llm_timeouts
        timeout = background if message.trigger == "window" else waited_for
        offline_because: str | None = None
        offline = False
        fallback: EventCompaction | None = None
        try:
            model = self._model_of(message.summary_model)
            readable = (  # no thread's turn for a session that knows no secret
                await off_the_loop(window_without_secrets, window, message.secrets)
                if message.secrets
                else window
            )
            summarized, offline, too_long = await self._summarize_window(
                model,
                readable.events,
                timeout,
                message.max_chars,
                message.session_id,
                message.secrets,
            )
            offline_because = too_long or self._offline_because(model)
            by_model = not offline and (self._summarizer is not None or model is not None)
            try:
                compaction = await off_the_loop(
                    finish_compaction, readable, summarized, message.secrets
                )
            except SummaryTooLong as exc:
                if not by_model:
                    raise
                log.info("compaction of session %s: %s", message.session_id, exc)
                summarized = await off_the_loop(OfflineEventSummarizer().summarize, readable.events)
                compaction = await off_the_loop(finish_compaction, readable, summarized)
                offline, offline_because = True, TOO_LONG_BECAUSE
            else:
                if by_model and compaction is not None:
                    fallback = await off_the_loop(offline_fallback, readable, compaction)
        except SummaryTooLong as exc:
            log.info("compaction of session %s skipped: %s", message.session_id, exc)
            return Compacted(  # who wrote the summary no shorter, and why, is told too
                message.session_id,
                message.generation,
                message.trigger,
                None,
                str(exc),
                True,
                offline_because=offline_because,
                offline=offline,
                window=window,
            )
        except Exception as exc:
            text = error_words(exc, message.secrets) or type(exc).__name__
            if not isinstance(exc, CompactionError):
                text = f"{type(exc).__name__}: {text}"
            log.warning("compaction of session %s failed: %s", message.session_id, text)
            return Compacted(
                message.session_id, message.generation, message.trigger, None, text, window=window
            )
        return Compacted(
            message.session_id,
            message.generation,
            message.trigger,
            compaction,
            offline_because=offline_because,
            offline=offline,
            window=window,
            fallback=fallback,
        )

    def _model_of(self, requested: str | None) -> str | None:
        """The summary model of a request: the session's, else this actor's; None for the
        offline summarizer."""
        model = requested or self._summary_model
        return None if model in (None, OFFLINE) else model

    async def _summarize_window(
        self,
        model: str | None,
        events: tuple[Event, ...],
        timeout: float,
        max_chars: int | None,
        session_id: str = "",
        secrets: tuple[str, ...] = (),
    ) -> tuple[Event | None, bool, str | None]:
        """The window's summary, whether the offline summarizer wrote it in the summary
        model's place (the model failed now or lately, or its answer was not used), and
        ``TOO_LONG_BECAUSE`` when the model's answer was over the cap (told: a model that
        answers every window at length would have none of its summaries used unsaid), or
        ``BUSY_BECAUSE``. One request of a session's at a time (``_one_request``), all
        within ``timeout``."""
        if self._summarizer is not None:
            with anyio.fail_after(timeout):
                return await self._summarizer.summarize_events(events), False, None
        because: str | None = None
        if model is not None and self._llm_usable(model):
            # built before the wait and the timeout: it imports at first
            summarizer = (await self._llm(model)).within(max_chars)
            deadline = anyio.current_time() + timeout
            async with self._one_request(session_id, timeout) as asking:
                because = None if asking else BUSY_BECAUSE
                if asking and self._llm_usable(model):  # the one before may have failed
                    try:
                        with anyio.fail_after(max(0.0, deadline - anyio.current_time())):
                            summarized = await self._within_window(
                                model, summarizer, lambda held: held.summarize_events(events)
                            )
                        return summarized, False, None
                    except NOT_A_FAILURE as exc:  # the model answered: asked again next time
                        log.warning("LLM compaction with %s not used: %s", model, exc)
                        because = TOO_LONG_BECAUSE if isinstance(exc, RunawaySummary) else None
                    except Exception as exc:
                        self._llm_failed(model, "compaction", exc, secrets)
        offline = await off_the_loop(OfflineEventSummarizer().summarize, events)
        return offline, model is not None, because

    @contextlib.asynccontextmanager
    async def _one_request(self, session_id: str, wait: float) -> AsyncIterator[bool]:
        """Whether this session's turn to ask the summary model came within ``wait``
        seconds: a compaction or a summary waits for the request before it (H189: a hung
        summary model in a fast piped run had 8 requests of one session open at once, each
        new window's compaction asking again while the one before it was superseded, not
        ended)."""
        lock = self._asking.setdefault(session_id, anyio.Lock())
        taken = False
        try:  # a free turn is taken without a turn of the loop (as ``_summary_slot``'s)
            lock.acquire_nowait()
            taken = True
        except anyio.WouldBlock:
            with anyio.move_on_after(wait):
                await lock.acquire()
                taken = True
        try:
            yield taken
        finally:
            if taken:
                lock.release()
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._asking.pop(session_id, None)

    async def _llm(self, model: str) -> LlmEventSummarizer:
        """The summary model's summarizer (with the compaction prompt), built once, in a
        worker thread: its client imports the provider's SDK at first (most of a second),
        and builds an HTTP client, which must not stall the loop (as the LLMActor's agent)."""
        if model not in self._llm_summarizers:
            built = await anyio.to_thread.run_sync(resolve_model, model)
            self._llm_summarizers.setdefault(model, LlmEventSummarizer(built))
        return self._llm_summarizers[model]

    async def _within_window(
        self,
        model: str,
        summarizer: LlmEventSummarizer,
        ask: Callable[[LlmEventSummarizer], Awaitable[R]],
    ) -> R:
        """``ask(summarizer)`` held to the summary ``model``'s window as its refusals taught
        it (``SummaryWindows``); each refusal as over the window teaches, and it is asked
        again within it, while the request gets smaller (a summary model with a smaller
        window than the chat model's refused every window of the chat's budget, and was
        taken for down; then one whose window was under three quarters of the first
        request refused the retry too, and was taken for down all the same). One that
        refuses what cannot get smaller, or ``WINDOW_TRIES`` requests, fails as any other."""
        sent: int | None = None
        for tries_left in range(WINDOW_TRIES - 1, -1, -1):
            limit = self._windows.held_to(model, summarizer.max_request_chars, anyio.current_time())
            held = summarizer.within(limit)
            try:
                return await ask(held)
            except Exception as exc:
                smaller = sent is None or held.sent_chars < sent
                if not context_window_exceeded(exc) or not held.sent_chars or not smaller:
                    raise
                if not tries_left:
                    raise
                sent = held.sent_chars
                self._windows = self._windows.refused(
                    model, sent, stated_context_window(exc), anyio.current_time()
                )
                log.info(
                    "summary model %s refused %d characters: held to %s",
                    model,
                    sent,
                    self._windows.held_to(model, None, anyio.current_time()),
                )
        raise AssertionError("unreachable")  # the last try returns or raises

    def _llm_usable(self, model: str) -> bool:
        return self._offline_because(model) is None

    def _offline_because(self, model: str | None) -> str | None:
        """Why the offline summarizer stands in for the summary ``model`` now (it failed
        lately), as the terminal's line says it; None when the model is asked."""
        if model is None or model not in self._llm_down:
            return None
        until, reason = self._llm_down[model]
        left = until - anyio.current_time()
        if left <= 0:
            return None
        return summary_model_down_line(model, reason, left)

    def _llm_failed(
        self, model: str, what: str, exc: BaseException, secrets: tuple[str, ...] = ()
    ) -> None:
        """Remember a failing summary model: the offline summarizer alone for a while, so
        a model that is down costs one timeout, not one per turn."""
        reason, offline_s = failure_reason(exc, secrets), offline_for(exc)
        self._llm_down[model] = (anyio.current_time() + offline_s, reason)
        log.warning(
            "LLM %s with %s at %s failed (%s); the offline summarizer alone for %.0f s",
            what,
            model,
            endpoint_of(model),
            reason,
            offline_s,
        )

    async def _due_later(self, session_id: str) -> None:
        await anyio.sleep(SUMMARY_DELAY_S)
        with contextlib.suppress(DeadActor):
            await self._self.tell(SummarizeDue(session_id))

    async def _summarize(self, message: Summarize) -> str | None:
        return (await self._summary_and_why(message))[0]

    async def _summary_and_why(self, message: Summarize) -> tuple[str | None, str | None]:
        """The session's summary, and why the offline summarizer wrote it in the summary
        model's place, if it did and that is told (the model failed lately, or its answer
        was over the cap: told, or a summary not used would take back the warning)."""
        if message.secrets:  # no thread's turn for a session that knows none
            message = await off_the_loop(_without_secrets, message)
        model = self._model_of(message.summary_model)
        too_long: str | None = None
        if model is not None and message.messages and self._llm_usable(model):  # new turns
            # An asked summary (the exit's) waits a while for a slot, a told one (after a
            # turn, one per session at a time) as long as it takes.
            # One request of the session's at a time, its compactions' too (_one_request).
            wait = self._summary_slot_wait if message.reply_to is None else math.inf
            deadline = anyio.current_time() + wait
            async with self._one_request(message.session_id, wait) as asking:
                left = max(0.0, deadline - anyio.current_time())
                if asking and self._llm_usable(model) and await self._summary_slot(left):
                    try:
                        summarizer = (
                            (await self._llm(model))
                            .with_prompt_template(SUMMARY_TEMPLATE)
                            .within(message.max_chars)
                        )
                        with anyio.fail_after(self._llm_timeouts[0]):
                            summary = await self._within_window(
                                model, summarizer, partial(self._llm_summary, message=message)
                            )
                        return summary, None
                    except NOT_A_FAILURE as exc:  # the model answered: asked again next time
                        log.warning("LLM summary with %s not used: %s", model, exc)
                        if isinstance(exc, RunawaySummary):
                            too_long = TOO_LONG_BECAUSE
                    except Exception as exc:
                        self._llm_failed(model, "summary", exc, message.secrets)
                    finally:
                        self._summary_slots.release()
        offline = offline_summary(message.messages, message.decisions, message.previous)
        return offline, too_long or self._offline_because(model)

    async def _summary_slot(self, wait: float) -> bool:
        """One of the summary model's slots taken within ``wait`` seconds (released by
        the caller), or none. A free one is taken without a turn of the loop: an exit's
        summary is asked before a ``supervisor stop`` right behind it ends the actor."""
        try:
            self._summary_slots.acquire_nowait()
            return True
        except anyio.WouldBlock:
            pass
        with anyio.move_on_after(wait):
            await self._summary_slots.acquire()
            return True
        return False

    async def _llm_summary(self, summarizer: LlmEventSummarizer, *, message: Summarize) -> str:
        """The same summary model and input bound as compactions, with the summary prompt."""
        earlier = parse_compaction(message.previous)
        head = [compaction_event(earlier)] if earlier else []
        messages = message.messages
        if message.max_chars is not None:  # compaction off kept 80 turns: over the budget
            messages = tuple(trim_to_recent(messages, max_turns=None, max_chars=message.max_chars))
        # The turns' own numbers: the history keeps the compacted turns the next window
        # reads again, which are no turns after the earlier summary (unstamped, from a
        # file of an older version, they are taken to follow it).
        dropped = count_turns(message.messages) - count_turns(messages)
        after = earlier.end_invocation + 1 if earlier else 1
        first = stamped_turn(messages) or after + dropped
        events = [*head, *events_from_messages(messages, first)]
        summarized = await summarizer.summarize_events(events)
        if summarized is None or summarized.compaction is None:
            raise CompactionError("the summary model wrote nothing")
        # scrubbed as a compaction's narrative is: the model may echo a secret it was never
        # sent (the API key it was called with), and the summary is the next one's input
        answer = summarized.compaction.compacted_content
        text = await off_the_loop(scrub_text, answer, message.secrets)
        return text.strip()[:MAX_SUMMARY_CHARS]


def _without_secrets(message: Summarize) -> Summarize:
    """``message`` with its session's known secret values replaced in what a summarizer
    reads (the patterns it runs do not know them)."""
    return dataclasses.replace(
        message,
        messages=messages_without_secrets(message.messages, message.secrets),
        decisions=replace_known(message.decisions, message.secrets),
        previous=replace_known(message.previous, message.secrets),
    )
