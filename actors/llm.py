"""LLMActor: runs pydantic-ai agent turns, streams text back, limits concurrency, cancels."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import dataclasses
import logging
import math
import os
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic_ai import Agent, AgentRun
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    ModelResponsePart,
    NativeToolCallPart,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolCallPart,
    ToolReturnPart,
)

from actors.assistant import TurnDeps, build_agent, resolve_model, written_paths
from actors.base import Actor, ActorRef, DeadActor, Envelope, Reply, next_item
from actors.messages import (
    CancelTurn,
    CheckpointBeforeWrite,
    LLMMessage,
    NotDelivered,
    StartTurn,
    TerminalMessage,
    TurnDone,
    TurnToolCall,
)
from actors.reply import ReplyForwarder
from actors.turn_lines import (
    checkpoint_failed,
    context_window_exceeded,
    describe_tool_call,
    error_words,
    explain_failure,
    refused_calls,
    stated_context_window,
)
from session.compaction import estimate_tokens
from session.interrupted import interrupted_turn
from session.model_names import BARE_NAMES
from session.redaction import with_revealed
from session.waits import wait_words
from session.wire import wire_chars

log = logging.getLogger("agent_assist.llm")
DEFAULT_CONCURRENCY = 4
AGENTS_KEPT = 8
"""Agents kept built, least recently used dropped first: a client sending many model
names costs at most this many (about 1 MB each)."""
STOPPED_LINE = "the reply was stopped: the supervisor's model actor stopped; please try again"
STALL_TIMEOUT_S = 300.0
"""A model that sends nothing for this long is given up on (``AGENT_ASSIST_MODEL_TIMEOUT_S``):
the turn ends with one line and the session goes on."""
TERMINAL_GONE_LINE = "the terminal went away before the reply's tools could run"
"""Why a turn stopped at a response that calls tools: their lines cannot reach a terminal
that is gone, and a tool runs only once its terminal has its line (H111)."""
DELIVERY_CHECK_S = 1.0
"""How often a tool waiting for its line to reach the terminal looks whether the terminal's
actor still runs."""
SLOT_KEPT_FOR_DELIVERY_S = 0.25
"""How long a turn whose tool waits for its line to reach the terminal keeps its place
among the concurrent turns: beyond, the terminal reads nothing (stopped with Ctrl+Z) and
the place goes to other terminals' turns until it reads again."""


def _one_line(exc: BaseException, known_secrets: tuple[str, ...] = ()) -> str:
    """``exc`` for a log line, scrubbed of ``known_secrets`` before its cut."""
    text = error_words(exc, known_secrets) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:500]


class LLMActor(Actor[LLMMessage]):
    name = "llm"

    def __init__(
        self,
        concurrency: int = DEFAULT_CONCURRENCY,
        agents_kept: int = AGENTS_KEPT,
        stall_timeout_s: float = STALL_TIMEOUT_S,
        own_directories: tuple[Path, ...] = (),
    ) -> None:
        """``own_directories``: agent-assist's state root and runtime directory, which
        the tools never write (see ``TurnDeps.own_directories``)."""
        self._stall_timeout_s = stall_timeout_s
        self._own_directories = tuple(Path(os.path.realpath(d)) for d in own_directories)
        self._limiter = anyio.CapacityLimiter(concurrency)
        self._agents: OrderedDict[str, Agent[TurnDeps, str]] = OrderedDict()
        self._agents_kept = agents_kept
        self._scopes: dict[tuple[ActorRef[TerminalMessage], int], anyio.CancelScope] = {}
        """The running turns, by terminal and turn id."""
        self._tg: TaskGroup | None = None
        self._parked: collections.deque[asyncio.Future[None]] = collections.deque()
        """The readers whose turn is over, each waiting to be handed the mailbox again."""

    @property
    def agents_kept(self) -> tuple[str, ...]:
        """The model names whose agents are built, least recently used first."""
        return tuple(self._agents)

    async def serve(self, mailbox: MemoryObjectReceiveStream[Envelope[LLMMessage]]) -> None:
        """Read the mailbox until it closes; the turns run in this actor's own task group
        and end when it stops.

        Leader and follower: the task that takes a ``StartTurn`` hands the mailbox to the
        next reader and runs the turn itself. One task reads at a time, so messages are
        still handled one by one in order, and a turn starts without waiting a turn of
        the loop for a task of its own (spawning one per turn did). A reader whose turn
        is over parks until it is handed the mailbox again: a turn neither starts nor
        ends a task (each cost about 0.05 ms of the loop, in the turn's critical path).
        """
        closed = anyio.Event()
        async with anyio.create_task_group() as tg:
            self._tg = tg
            tg.start_soon(self._read, mailbox, closed)
            await closed.wait()
            tg.cancel_scope.cancel()

    async def _read(
        self, mailbox: MemoryObjectReceiveStream[Envelope[LLMMessage]], closed: anyio.Event
    ) -> None:
        """Handle messages until a ``StartTurn`` (run here, once the mailbox is handed to
        the next reader; then parked until handed it again) or the mailbox's end
        (``closed`` is set)."""
        while (turn := await self._next_turn(mailbox)) is not None:
            scope = self._cancellable(turn)
            self._hand_over(mailbox, closed)
            await self._run_turn(turn, scope)
            woken = asyncio.get_running_loop().create_future()
            self._parked.append(woken)
            await woken  # the actor's end cancels it
        closed.set()

    async def _next_turn(
        self, mailbox: MemoryObjectReceiveStream[Envelope[LLMMessage]]
    ) -> StartTurn | None:
        """Handle messages until a ``StartTurn`` (returned: the caller runs it) or the
        mailbox's end (None)."""
        while (envelope := await next_item(mailbox)) is not None:
            match envelope.message:
                case StartTurn() as turn:
                    return turn
                case message:
                    await self.answer(envelope, message)
        return None

    def _hand_over(
        self, mailbox: MemoryObjectReceiveStream[Envelope[LLMMessage]], closed: anyio.Event
    ) -> None:
        """The mailbox to the next reader: a parked one, else a new one."""
        while self._parked:
            woken = self._parked.popleft()
            if not woken.done():  # (one cancelled with the actor is not)
                woken.set_result(None)
                return
        assert self._tg is not None
        self._tg.start_soon(self._read, mailbox, closed)

    async def handle(self, message: LLMMessage) -> Any:
        match message:
            case StartTurn():  # the reader runs turns itself; handled here, one is spawned
                assert self._tg is not None
                self._tg.start_soon(self._run_turn, message, self._cancellable(message))
            case CancelTurn(turn_id, reply_to):
                running = self._scopes.get((reply_to, turn_id))
                if running is not None:
                    running.cancel()

    def _cancellable(self, turn: StartTurn) -> anyio.CancelScope:
        """The scope a ``CancelTurn`` of ``turn`` cancels, known before the turn starts."""
        scope = anyio.CancelScope()
        self._scopes[turn.reply_to, turn.turn_id] = scope
        return scope

    async def _agent(self, model: str) -> Agent[TurnDeps, str]:
        """The agent of ``model``, built once, in a worker thread: building one imports
        and constructs for a few hundred milliseconds, which must not stall the loop."""
        agent = self._agents.get(model)
        if agent is None:
            agent = await anyio.to_thread.run_sync(lambda: build_agent(resolve_model(model)))
            self._agents[model] = agent
            while len(self._agents) > self._agents_kept:
                self._agents.popitem(last=False)
        self._agents.move_to_end(model)
        return agent

    async def _run_turn(self, turn: StartTurn, scope: anyio.CancelScope) -> None:
        """Run ``turn`` and tell its terminal how it ended, once: a ``TurnDone`` with the
        reply text still held (cancelled if ``scope`` was cancelled before the end was
        told; an error if the actor itself stopped, by a crash or with the supervisor, so
        that the terminal is not left waiting for a reply no task runs any more)."""
        told = False
        deps = TurnDeps(
            turn.workspace, turn.resume_context, turn.notes, own_directories=self._own_directories
        )
        progress = _Progress()
        try:
            with scope:
                reply = ReplyForwarder(turn.reply_to, turn.turn_id)
                try:
                    done = await self._stream_turn(turn, reply, deps, progress)
                except NotDelivered:  # the supervisor stops: its tool does not run
                    log.info("turn %d: a tool call's line was not delivered", turn.turn_id)
                    kept = progress.kept(last_calls_run=False)
                    done = _unfinished(turn, deps, cancelled=True, kept=kept)
                except TerminalGone:
                    log.info("turn %d: its terminal went away before its tools ran", turn.turn_id)
                    kept = progress.kept(last_calls_run=False)
                    done = _unfinished(turn, deps, error=TERMINAL_GONE_LINE, kept=kept)
                except Stalled:
                    log.warning("turn %d: no answer from %s", turn.turn_id, turn.model)
                    line = self._stalled_line(turn)
                    done = _unfinished(turn, deps, error=line, kept=progress.kept())
                except Exception as exc:
                    secrets = await progress.secrets_of(turn)  # replaced before any cut
                    log.warning("turn %d failed: %s", turn.turn_id, _one_line(exc, secrets))
                    kept = progress.kept()
                    window = stated_context_window(exc)
                    line = explain_failure(
                        exc,
                        turn.model,
                        mid_reply=reply.had_text,
                        kept=bool(kept),
                        message_alone=_alone_over(turn, window),
                        known_secrets=secrets,
                    )
                    full = context_window_exceeded(exc)
                    done = _unfinished(
                        turn, deps, error=line, context_full=full, window=window, kept=kept
                    )
                finally:
                    reply.close()
                await _tell_done(turn, reply.finish, done)  # with the text held
                told = True
        finally:
            self._scopes.pop((turn.reply_to, turn.turn_id), None)
            if not told:
                end = (
                    _unfinished(turn, deps, cancelled=True, kept=progress.kept())
                    if scope.cancel_called
                    else _unfinished(turn, deps, error=STOPPED_LINE)
                )
                # At once if there is room: a task the stopping actor cancelled cannot wait.
                if not turn.reply_to.tell_nowait(end):
                    await _tell_done(turn, turn.reply_to.tell, end)

    def _stall_of(self, turn: StartTurn) -> float:
        return turn.stall_timeout_s or self._stall_timeout_s

    def _stalled_line(self, turn: StartTurn) -> str:
        return (
            f"the model sent nothing for {wait_words(self._stall_of(turn))}; the reply was stopped "
            "(the session is kept; AGENT_ASSIST_MODEL_TIMEOUT_S sets the wait)"
        )

    async def _stream_turn(
        self, turn: StartTurn, reply: ReplyForwarder, deps: TurnDeps, progress: _Progress
    ) -> TurnDone:
        deps.token_budget = turn.token_budget
        deps.before_first_write = partial(_checkpoint_before_write, turn, self._stall_of(turn))
        slot = Slot(self._limiter)
        await slot.take()
        try:
            agent = await self._agent(turn.model)
            with StallWatch(self._stall_of(turn)) as watch:
                return await self._iterate(agent, turn, reply, deps, watch, progress, slot)
        finally:
            slot.give_back()

    async def _iterate(
        self,
        agent: Agent[TurnDeps, str],
        turn: StartTurn,
        reply: ReplyForwarder,
        deps: TurnDeps,
        watch: StallWatch,
        progress: _Progress,
        slot: Slot,
    ) -> TurnDone:
        """The agent run; each node and each streamed event is progress for ``watch``,
        and the run and the text of the reply being written are kept in ``progress``.
        The run is left at the response that ends it (``ends_the_run``): pydantic-ai's
        steps after it add no message and cost a millisecond or so of the turn."""
        async with agent.iter(turn.prompt, message_history=list(turn.history), deps=deps) as run:
            progress.run = run
            async for node in run:
                watch.progress()
                if Agent.is_call_tools_node(node):
                    secrets = await progress.secrets_of(turn)
                    await _tell_tool_calls(
                        turn, reply, node.model_response.parts, watch, slot, secrets
                    )
                if not Agent.is_model_request_node(node):
                    continue
                returns = any(isinstance(p, ToolReturnPart) for p in node.request.parts)
                secrets = await progress.secrets_of(turn) if returns else ()
                refused = refused_calls(node.request, secrets)
                for line in refused:  # the tools' answers to the model
                    await reply.send_now(TurnToolCall(turn.turn_id, line, ()))
                progress.text.clear()  # a new response
                async with node.stream(run.ctx) as events:
                    async for event in events:
                        watch.progress()
                        text = _text_of(event)
                        if text:
                            reply.add(text)
                            progress.text.append(text)
                progress.text.clear()  # the response is whole: its text is in the run's
                so_far = run.new_messages()
                if so_far and ends_the_run(so_far[-1]):
                    new = tuple(so_far)
                    break  # what pydantic-ai does after it adds no message (ends_the_run)
            else:
                assert run.result is not None
                new = tuple(run.result.new_messages())
        return TurnDone(
            turn.turn_id,
            new,
            tuple(deps.decisions),
            tuple(sorted(deps.touched)),
            tuple(sorted(deps.written.items())),
            tuple(sorted(deps.read.items())),
            input_tokens=None if turn.model in BARE_NAMES else last_input_tokens(new),
            elided_chars=deps.elided_chars,
            phase=deps.phase,
        )


def ends_the_run(message: ModelMessage) -> bool:
    """Whether the agent's run ends with ``message``, a response just streamed: it is
    complete, with text and no tool call. The agent's output is plain text with no
    validator (``build_agent``), so pydantic-ai takes the text as it is and adds no
    message (``CallToolsNode._run_stream``); an empty or blank reply is retried by it."""
    return (
        isinstance(message, ModelResponse)
        and message.state == "complete"
        and not any(isinstance(part, ToolCallPart | NativeToolCallPart) for part in message.parts)
        and any(isinstance(part, TextPart) and part.content for part in message.parts)
    )


def _alone_over(turn: StartTurn, window: int | None) -> int | None:
    """The tokens of ``turn``'s message if it alone is over the token budget or over the
    ``window`` a refusal stated (None otherwise): no compaction can help it."""
    message = estimate_tokens(wire_chars(turn.prompt))
    if turn.message_over_budget or (window is not None and message >= window):
        return message
    return None


def _unfinished(
    turn: StartTurn,
    deps: TurnDeps,
    *,
    cancelled: bool = False,
    error: str | None = None,
    context_full: bool = False,
    window: int | None = None,
    kept: tuple[ModelMessage, ...] = (),
) -> TurnDone:
    """The end of a turn cut short: of the conversation only what it ``kept`` (a turn
    the user interrupted after a tool ran, ``session/interrupted.py``), with the
    decisions and phase its tools recorded then; the files its tools touched and wrote
    before in any case (they are on disk: tracked, and not changes from outside)."""
    return TurnDone(
        turn.turn_id,
        new_messages=kept,
        decisions=tuple(deps.decisions) if kept else (),
        touched=tuple(sorted(deps.touched)),
        written=tuple(sorted(deps.written.items())),
        read=tuple(sorted(deps.read.items())),
        cancelled=cancelled,
        error=error,
        context_full=context_full,
        context_window=window,
        phase=deps.phase if kept else None,
    )


INLINE_SCRUB_CHARS = 4096
"""A prompt scrubbed on the event loop at most (about 4 ms of CPU); a longer one in a
worker thread."""


@dataclass
class _Progress:
    """How far a turn's run got: the run, and the text of the response being written."""

    run: AgentRun[TurnDeps, str] | None = None
    text: list[str] = field(default_factory=list)
    secrets: tuple[str, ...] | None = None
    """The turn's known secrets and those its prompt reveals (``secrets_of``), once found."""

    async def secrets_of(self, turn: StartTurn) -> tuple[str, ...]:
        """What the lines of ``turn``'s tool calls are scrubbed of: the session's known
        secrets and the values its prompt reveals (``my password is X``, then a tool called
        with X), found once a turn, when a line is first told; off the event loop for a
        long prompt (200,000 characters of prose cost 0.2 s of CPU)."""
        if self.secrets is None:
            if len(turn.prompt) > INLINE_SCRUB_CHARS:
                self.secrets = await anyio.to_thread.run_sync(
                    with_revealed, turn.prompt, turn.known_secrets
                )
            else:
                self.secrets = with_revealed(turn.prompt, turn.known_secrets)
        return self.secrets

    def kept(self, *, last_calls_run: bool = True) -> tuple[ModelMessage, ...]:
        """What the turn keeps if the user interrupts it now (``last_calls_run`` False:
        the tools the last response calls were not run, and are dropped with it)."""
        if self.run is None:
            return ()
        try:
            messages = self.run.new_messages()
        except Exception:  # a run cut before it had any: nothing to keep
            log.exception("the messages of an interrupted run could not be read")
            return ()
        if not last_calls_run and messages and isinstance(messages[-1], ModelResponse):
            messages = [*messages[:-1], dataclasses.replace(messages[-1], state="interrupted")]
        return interrupted_turn(messages, "".join(self.text))


class Stalled(Exception):
    """The model sent nothing within the stall timeout."""


class TerminalGone(Exception):
    """The terminal went away before it had the lines of the tools a response calls."""


async def _tell_tool_calls(
    turn: StartTurn,
    reply: ReplyForwarder,
    parts: Sequence[ModelResponsePart],
    watch: StallWatch,
    slot: Slot,
    secrets: tuple[str, ...] = (),
) -> None:
    """Tell the terminal each tool the response calls (its line scrubbed of ``secrets``),
    and wait until it has the lines (they are written in order: the last one's delivery
    says all were delivered) before the tools run: the supervisor killed while one runs,
    the terminal knows a tool may have run, and does not have the turn run again (H111:
    it did, the tool ran twice). A wait beyond ``SLOT_KEPT_FOR_DELIVERY_S`` lends the
    turn's ``slot`` to other turns."""
    calls = [part for part in parts if isinstance(part, ToolCallPart)]
    delivered = Reply() if turn.tool_lines_delivered else None
    for index, part in enumerate(calls, 1):
        args = part.args_as_dict()
        line = describe_tool_call(part.tool_name, args, secrets)
        writes = written_paths(part.tool_name, args)
        last = delivered if index == len(calls) else None
        await reply.send_now(TurnToolCall(turn.turn_id, line, writes, last))
    if delivered is not None and calls:
        with watch.paused():  # a terminal stopped (Ctrl+Z) is no model that stalls
            with anyio.move_on_after(SLOT_KEPT_FOR_DELIVERY_S):
                if await delivered.wait() is False:
                    raise TerminalGone  # its tools do not run: nobody would see their lines
                return
            log.info("turn %d: its terminal reads nothing; its model slot is lent", turn.turn_id)
            async with slot.lent():
                if not await _until_delivered(delivered, turn.reply_to):
                    raise TerminalGone


async def _until_delivered(delivered: Reply, terminal: ActorRef[TerminalMessage]) -> bool:
    """Until ``delivered`` is set, or ``terminal`` stops (a line left in its mailbox is
    delivered by nobody): whether the terminal has the line (``delivered`` set False:
    it never will, it is gone); ``NotDelivered`` if the supervisor stops first."""
    while terminal.running:
        with anyio.move_on_after(DELIVERY_CHECK_S):
            return await delivered.wait() is not False
    return False


class Slot:
    """A turn's place among the LLMActor's concurrent turns (its ``CapacityLimiter``)."""

    def __init__(self, limiter: anyio.CapacityLimiter) -> None:
        self._limiter = limiter
        self._held = False

    async def take(self) -> None:
        try:
            self._limiter.acquire_nowait()  # a free one is taken without a turn of the loop
        except anyio.WouldBlock:
            await self._limiter.acquire()
        self._held = True

    def give_back(self) -> None:
        if self._held:
            self._held = False
            self._limiter.release()

    @contextlib.asynccontextmanager
    async def lent(self) -> AsyncIterator[None]:
        """Given back while in it (to other turns), taken again (waiting for a free one)
        at its end; a turn cancelled while it waits holds none."""
        self.give_back()
        try:
            yield
        finally:
            await self.take()


class StallWatch:
    """A cancel scope whose deadline moves forward with signs of progress; raises
    ``Stalled`` when it expires (a hung model call, not a slow one: a reply that keeps
    streaming never stalls). It fires between ``timeout_s`` and 1.1 x ``timeout_s``
    after the last progress: the deadline moves at most ten times per timeout, since
    moving it re-arms a timer and a turn streams many events."""

    def __init__(self, timeout_s: float) -> None:
        self._timeout_s = timeout_s
        self._step = timeout_s / 10
        self._moved = -math.inf
        self._scope = anyio.CancelScope()

    def progress(self) -> None:
        if time.monotonic() - self._moved >= self._step:  # cheaper than the loop's clock
            self._moved = time.monotonic()
            self._scope.deadline = anyio.current_time() + self._timeout_s + self._step

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """No stall while in it; the timeout counts again from its end."""
        self._scope.deadline = math.inf
        try:
            yield
        finally:
            self._moved = -math.inf
            self.progress()

    def __enter__(self) -> StallWatch:
        self.progress()
        self._scope.__enter__()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._scope.__exit__(*exc_info)  # suppresses only its own cancellation: a stall
        if self._scope.cancelled_caught:
            raise Stalled


def last_input_tokens(messages: tuple[ModelMessage, ...]) -> int | None:
    """The model's own count of the last request's input tokens, if it reported one."""
    for message in reversed(messages):
        if isinstance(message, ModelResponse):
            return message.usage.input_tokens or None
    return None


async def _tell_done(
    turn: StartTurn, send: Callable[[TurnDone], Awaitable[None]], done: TurnDone
) -> None:
    """``send(done)``, unless its terminal has gone (nobody to tell)."""
    try:
        await send(done)
    except DeadActor:
        log.info("turn %d finished after its terminal went away", turn.turn_id)


async def _checkpoint_before_write(
    turn: StartTurn, timeout_s: float, paths: tuple[str, ...]
) -> str | None:
    """The automatic checkpoint, taken by the terminal (which tells the user if it failed):
    None lets the write go ahead, else why it may not. The terminal bounds its own wait
    for the disk; ``timeout_s`` (the turn's stall timeout) is only a backstop, so the
    terminal's answer is the one heard."""
    try:
        return await turn.reply_to.ask(CheckpointBeforeWrite(turn.turn_id, paths), timeout_s)
    except Exception as exc:
        line = _one_line(exc, turn.known_secrets)
        log.warning("turn %d: checkpoint before write failed: %s", turn.turn_id, line)
        return checkpoint_failed(line)


def _text_of(event: object) -> str:
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        return event.part.content
    if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        return event.delta.content_delta
    return ""
