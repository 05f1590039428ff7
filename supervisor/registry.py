"""The registry of attached terminals: one TerminalActor per terminal pid, in one task group."""

from __future__ import annotations

import contextlib
import logging
from dataclasses import dataclass, field

import anyio
from anyio.abc import TaskGroup, TaskStatus
from anyio.streams.memory import MemoryObjectSendStream

from actors.base import ActorRef, DeadActor, close_mailbox, open_mailbox
from actors.messages import Detach, TerminalMessage, TerminalOutput
from actors.terminal import Peers, TerminalActor, TerminalConfig
from supervisor.greeting import busy_line

log = logging.getLogger("agent_assist.registry")
DETACH_WAIT_S = 15.0


class TerminalBusy(Exception):
    """Another live connection is attached for this terminal pid."""


@dataclass(eq=False)
class _Attached:
    ref: ActorRef[TerminalMessage]
    released: anyio.Event
    finishing: anyio.Event
    """Its terminal left while its turn finishes: the session is another's to take up."""
    connected: bool = True
    finished: anyio.Event = field(default_factory=anyio.Event)


class Registry:
    def __init__(self, tg: TaskGroup, peers: Peers) -> None:
        self._tg = tg
        self._peers = peers
        self._terminals: dict[int, _Attached] = {}
        self._attaching: set[int] = set()
        """Pids between the check and the actor's start: a second attach is refused."""
        self._held: set[int] = set()
        """Tabs the front door welcomed before the model stack loaded and has not handed
        over yet (their terminal still choosing what to open): the front door's rule, one
        connection per tab, is kept here from the hand-over on."""
        self._finishing: set[_Attached] = set()
        """Actors whose terminal attached again while their turn finished (still saving)."""

    @property
    def attached(self) -> int:
        return sum(1 for t in self._terminals.values() if t.connected)

    @property
    def busy_terminals(self) -> int:
        """Tabs attached, attaching, or held by the front door (``stop``'s ``if_idle``)."""
        return self.attached + len(self._attaching | self._held)

    def busy(self, pid: int) -> bool:
        """Whether a connection holds the tab ``pid``: attached, attaching, or the front
        door's."""
        previous = self._terminals.get(pid)
        return (
            pid in self._attaching
            or pid in self._held
            or (previous is not None and previous.connected)
        )

    def hold(self, pid: int) -> None:
        """The front door's connection for tab ``pid``, not attached yet, holds it."""
        self._held.add(pid)

    def let_go(self, pid: int) -> None:
        """The front door's connection for tab ``pid`` ended without being attached."""
        self._held.discard(pid)

    async def attach(
        self,
        config: TerminalConfig,
        outbox: MemoryObjectSendStream[TerminalOutput],
        *,
        held: bool = False,
    ) -> ActorRef[TerminalMessage]:
        """Start the TerminalActor of ``config.terminal_pid``; ``held``: for the front
        door's connection that holds that tab.

        A previous actor of the same pid that is still saving is waited for, unless its
        turn finishes for its terminal gone: the session is then taken up by an open that
        waits for that turn (the StorageActor hands it over); one that is still connected
        makes this raise TerminalBusy.
        """
        pid = config.terminal_pid
        previous = self._terminals.get(pid)
        if held:
            self._held.discard(pid)
        if self.busy(pid):
            raise TerminalBusy(busy_line(pid))
        # Check and reservation happen with no await in between: one step per pid.
        self._attaching.add(pid)
        try:
            if previous is not None:
                with anyio.move_on_after(DETACH_WAIT_S):
                    await _first(previous.released, previous.finishing)
                if not previous.released.is_set():
                    self._finishing.add(previous)
            ref: ActorRef[TerminalMessage] = await self._tg.start(self._run, config, outbox)
        finally:
            self._attaching.discard(pid)
        return ref

    async def detach(self, terminal_pid: int, ref: ActorRef[TerminalMessage], reason: str) -> None:
        """The terminal's connection ended (or the supervisor stops): its actor runs the
        exit path. Told once: a second ``Detach`` (the stop's, after the terminal left
        mid-turn; the connection's end after the stop's) would make it leave at once,
        without the turn it cut and waits for. (``detach_all`` tells an actor whose turn
        was let finish for its terminal gone again, on purpose: the stop cuts that turn;
        one whose turn is already cut, by its finish wait or a tab that stopped waiting
        for it, waits for that cut's end as it would have: ``AwaitCut``.)"""
        entry = self._terminals.get(terminal_pid)
        if entry is not None and entry.ref is ref:
            if not entry.connected:
                return
            entry.connected = False
        with contextlib.suppress(DeadActor):
            await ref.tell(Detach(reason))

    async def detach_all(self, reason: str, timeout: float = DETACH_WAIT_S) -> None:
        """Save every attached session (supervisor stop or SIGTERM). An actor whose turn
        finishes for its terminal gone is told too: its turn is cut (its message kept,
        marked unanswered), as at the end of its finish wait; the stop waited for the
        model, then left the turn to the actor's last save, which lacked its message."""
        entries = list(self._terminals.items())
        for pid, entry in entries:
            await self.detach(pid, entry.ref, reason)
        for entry in [*(e for _, e in entries), *self._finishing]:
            if entry.finishing.is_set() and not entry.released.is_set():
                with contextlib.suppress(DeadActor):
                    await entry.ref.tell(Detach(reason))
        with anyio.move_on_after(timeout):
            for entry in [*(e for _, e in entries), *self._finishing]:
                await entry.released.wait()

    async def _run(
        self,
        config: TerminalConfig,
        outbox: MemoryObjectSendStream[TerminalOutput],
        *,
        task_status: TaskStatus[ActorRef[TerminalMessage]],
    ) -> None:
        name = f"terminal-{config.terminal_pid}"
        ref: ActorRef[TerminalMessage]
        ref, mailbox = open_mailbox(name)
        actor = TerminalActor(ref, config, self._peers, outbox)
        entry = _Attached(ref, actor.released, actor.finishing)
        self._terminals[config.terminal_pid] = entry
        task_status.started(ref)
        try:
            await actor.serve(mailbox)
        except Exception:
            log.exception("%s stopped with an error", name)
        finally:
            close_mailbox(mailbox, name)
            outbox.close()
            entry.finished.set()
            self._finishing.discard(entry)
            if self._terminals.get(config.terminal_pid) is entry:
                del self._terminals[config.terminal_pid]


async def _first(*events: anyio.Event) -> None:
    """Wait until one of ``events`` is set."""
    async with anyio.create_task_group() as tg:

        async def wait(event: anyio.Event) -> None:
            await event.wait()
            tg.cancel_scope.cancel()

        for event in events:
            tg.start_soon(wait, event)
