"""The small actor kit: a bounded mailbox, tell/ask references, and the serve loop.

Failure rules (after pykka): an exception raised while answering an *ask* goes
back to the caller and the actor lives on; an exception while handling a
*tell* crashes the actor, and its supervisor decides (see ``supervision.py``).
Asks still queued when an actor stops for good fail with ``DeadActor``.
"""

from __future__ import annotations

import asyncio
import logging
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import anyio
from anyio.abc import TaskStatus
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.supervision import Decision, RestartPolicy, decide
from session.waits import wait_words

log = logging.getLogger("agent_assist.actors")

M = TypeVar("M")
T = TypeVar("T")
R = TypeVar("R")
R_co = TypeVar("R_co", covariant=True)
DEFAULT_MAILBOX = 64
DEFAULT_ASK_TIMEOUT_S = 30.0
DEFAULT_POLICY = RestartPolicy()


class ActorError(Exception):
    """Base of the actor kit's own errors."""


class DeadActor(ActorError):
    """The actor stopped before it could take or answer the message."""


class Ask(Generic[R_co]):
    """Base of a message that is asked, not told: ``ref.ask(message)`` returns an ``R``.

    (A message class says ``class LoadSession(Ask[SessionState])``; mypy then types the
    answer of every ask of it.)"""

    __slots__ = ()


@dataclass(eq=False)
class Reply:
    """A one-shot answer slot for an ask."""

    _done: anyio.Event = field(default_factory=anyio.Event)
    _value: Any = None
    _error: BaseException | None = None

    def set(self, value: Any) -> None:
        if not self._done.is_set():
            self._value = value
            self._done.set()

    def fail(self, error: BaseException) -> None:
        if not self._done.is_set():
            self._error = error
            self._done.set()

    async def wait(self) -> Any:
        await self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


@dataclass(frozen=True, eq=False)
class Envelope(Generic[M]):
    message: M
    reply: Reply | None = None


class ActorRef(Generic[M]):
    """The only handle other code has on an actor: its mailbox's sending end."""

    def __init__(self, name: str, send: MemoryObjectSendStream[Envelope[M]]) -> None:
        self.name = name
        self._send = send

    async def tell(self, message: M) -> None:
        """Queue ``message`` (waits while the mailbox is full); DeadActor if it is closed."""
        await self._post(Envelope(message))

    async def _post(self, envelope: Envelope[Any]) -> None:
        """Queue ``envelope``: at once when the mailbox has room (anyio's ``send`` would
        first yield to the loop, one more turn of it on every hop), else waiting for room."""
        try:
            try:
                self._send.send_nowait(envelope)
            except anyio.WouldBlock:
                await self._send.send(envelope)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise DeadActor(f"{self.name} is not running") from exc

    def tell_nowait(self, message: M) -> bool:
        """Queue without waiting; False if the mailbox is full or closed."""
        try:
            return self.offer(message)
        except DeadActor:
            return False

    def tell_when_room(self, message: M, retry_s: float = 0.05) -> None:
        """Queue ``message`` from where nothing can wait (a loop callback, a cancelled
        task): now if there is room, else again every ``retry_s`` until there is, or the
        actor is gone. Never dropped for a full mailbox (``tell_nowait`` is)."""
        try:
            if self.offer(message):
                return
        except DeadActor:
            return
        asyncio.get_running_loop().call_later(retry_s, self.tell_when_room, message, retry_s)

    def offer(self, message: M) -> bool:
        """Queue without waiting; False if the mailbox is full, DeadActor if it is closed."""
        try:
            self._send.send_nowait(Envelope(message))
        except anyio.WouldBlock:
            return False
        except (anyio.ClosedResourceError, anyio.BrokenResourceError) as exc:
            raise DeadActor(f"{self.name} is not running") from exc
        return True

    async def ask(self, message: Ask[R], timeout: float = DEFAULT_ASK_TIMEOUT_S) -> R:
        """Send ``message`` and wait for its answer, an ``R`` (TimeoutError after ``timeout`` s).

        Only ``Ask`` messages can be asked; that the message is also one of this actor's
        (an ``M``) is checked at run time by the actor's ``handle``."""
        reply = Reply()
        with anyio.move_on_after(timeout):
            await self._post(Envelope(message, reply))
            answer: R = await reply.wait()
            return answer
        # Said in words: an error line names what did not answer (an empty
        # TimeoutError printed "error: " and nothing more).
        raise TimeoutError(f"the {self.name} actor did not answer within {wait_words(timeout)}")

    async def post(self, message: Ask[Any]) -> Reply:
        """Queue ``message`` now and return the slot its answer comes in (the caller waits
        for it when it will: what it tells meanwhile comes after this message)."""
        reply = Reply()
        await self._post(Envelope(message, reply))
        return reply

    def close(self) -> None:
        """Stop the actor once its queued messages are handled."""
        self._send.close()

    @property
    def running(self) -> bool:
        """Whether the actor still takes messages (its mailbox is open)."""
        return self._send.statistics().open_receive_streams > 0


class TellsInOrder:
    """Tells that never make the teller wait: to each actor in the order told, at once
    while its mailbox has room, else held and tried again every ``retry_s`` (a timer of
    the loop) until it has room; dropped when it stops (nobody to tell). For an actor
    that serves many others, whom one of them, stuck (its terminal stopped with Ctrl+Z
    and its mailbox full), must not hold up."""

    def __init__(self, retry_s: float = 0.05) -> None:
        self._retry_s = retry_s
        self._held: dict[ActorRef[Any], deque[Any]] = {}

    def tell(self, ref: ActorRef[M], message: M) -> bool:
        """Queue ``message`` for ``ref``; False if ``ref`` has stopped."""
        held = self._held.get(ref)
        if held is not None:
            held.append(message)
            return ref.running
        try:
            if ref.offer(message):
                return True
        except DeadActor:
            return False
        self._held[ref] = deque([message])
        asyncio.get_running_loop().call_later(self._retry_s, self._again, ref)
        return True

    def held(self, ref: ActorRef[Any]) -> int:
        """How many messages wait for room in ``ref``'s mailbox."""
        return len(self._held.get(ref, ()))

    def _again(self, ref: ActorRef[Any]) -> None:
        held = self._held[ref]
        try:
            while held and ref.offer(held[0]):
                held.popleft()
        except DeadActor:
            held.clear()
        if held:
            asyncio.get_running_loop().call_later(self._retry_s, self._again, ref)
        else:
            del self._held[ref]


class Actor(ABC, Generic[M]):
    """Subclasses own their state and implement ``handle``; the return value answers an ask."""

    name: str = "actor"

    @abstractmethod
    async def handle(self, message: M) -> Any: ...

    async def serve(self, mailbox: MemoryObjectReceiveStream[Envelope[M]]) -> None:
        """Handle messages one at a time until the mailbox closes."""
        while (envelope := await next_item(mailbox)) is not None:
            await self.answer(envelope, envelope.message)

    async def answer(self, envelope: Envelope[M], message: M) -> None:
        """Handle ``message`` (the envelope's); an ask gets the result or the error."""
        if envelope.reply is None:
            await self.handle(message)
            return
        try:
            envelope.reply.set(await self.handle(message))
        except Exception as exc:  # the caller gets it; the actor lives on
            envelope.reply.fail(exc)


async def next_item(stream: MemoryObjectReceiveStream[T]) -> T | None:
    """The next item (a mailbox's message, an outbox's output), None once the stream is
    closed and empty. One already waiting is taken without yielding to the loop first
    (anyio's ``receive`` would: a turn of the loop on every hop)."""
    try:
        return stream.receive_nowait()
    except anyio.WouldBlock:
        try:
            return await stream.receive()
        except anyio.EndOfStream:
            return None
    except anyio.EndOfStream:
        return None


def close_mailbox(mailbox: MemoryObjectReceiveStream[Envelope[M]], name: str) -> None:
    """Fail every queued ask with DeadActor, then close (no await in between: nothing slips in)."""
    while True:
        try:
            envelope = mailbox.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            break
        if envelope.reply is not None:
            envelope.reply.fail(DeadActor(f"{name} stopped"))
    mailbox.close()


def open_mailbox(
    name: str, size: int = DEFAULT_MAILBOX
) -> tuple[ActorRef[M], MemoryObjectReceiveStream[Envelope[M]]]:
    send, receive = anyio.create_memory_object_stream[Envelope[M]](size)
    return ActorRef(name, send), receive


async def run_supervised(
    name: str,
    factory: Callable[[ActorRef[Any]], Actor[Any]],
    *,
    policy: RestartPolicy = DEFAULT_POLICY,
    mailbox_size: int = DEFAULT_MAILBOX,
    task_status: TaskStatus[ActorRef[Any]] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Run the actor made by ``factory(ref)``, restarting it one-for-one within ``policy``.

    The mailbox outlives each incarnation, so references stay valid across
    restarts. Beyond the restart budget the failure escalates (re-raised).
    """
    ref: ActorRef[Any]
    mailbox: MemoryObjectReceiveStream[Envelope[Any]]
    ref, mailbox = open_mailbox(name, mailbox_size)
    failures: tuple[float, ...] = ()
    task_status.started(ref)
    try:
        while True:
            actor = factory(ref)
            try:
                await actor.serve(mailbox)
                return
            except Exception:
                decision, failures = decide(policy, failures, anyio.current_time())
                if decision is Decision.ESCALATE:
                    log.exception("%s crashed; restart budget exhausted, escalating", name)
                    raise
                log.exception("%s crashed; restarting (%d in window)", name, len(failures))
    finally:
        close_mailbox(mailbox, name)
