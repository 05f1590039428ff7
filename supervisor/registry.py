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

log = logging.getLogger("agent_assist.registry")
DETACH_WAIT_S = 15.0


class TerminalBusy(Exception):
    """Another live connection is attached for this terminal pid."""


@dataclass
class _Attached:
    ref: ActorRef[TerminalMessage]
    released: anyio.Event
    connected: bool = True
    finished: anyio.Event = field(default_factory=anyio.Event)


class Registry:
    def __init__(self, tg: TaskGroup, peers: Peers) -> None:
        self._tg = tg
        self._peers = peers
        self._terminals: dict[int, _Attached] = {}
        self._attaching: set[int] = set()
        """Pids between the check and the actor's start: a second attach is refused."""

    @property
    def attached(self) -> int:
        return sum(1 for t in self._terminals.values() if t.connected)

    async def attach(
        self, config: TerminalConfig, outbox: MemoryObjectSendStream[TerminalOutput]
    ) -> ActorRef[TerminalMessage]:
        """Start the TerminalActor of ``config.terminal_pid``.

        A previous actor of the same pid that is still saving is waited for;
        one that is still connected makes this raise TerminalBusy.
        """
        pid = config.terminal_pid
        previous = self._terminals.get(pid)
        if pid in self._attaching or (previous is not None and previous.connected):
            raise TerminalBusy(
                f"another agent-assist is attached for terminal {pid}; "
                "set AGENT_ASSIST_TERMINAL_PID to another number to run a second one"
            )
        # Check and reservation happen with no await in between: one step per pid.
        self._attaching.add(pid)
        try:
            if previous is not None:
                if not previous.released.is_set():  # finishing a turn of its terminal gone:
                    with contextlib.suppress(DeadActor):  # cut it, saved before we resume
                        await previous.ref.tell(Detach("reattached"))
                with anyio.move_on_after(DETACH_WAIT_S):
                    await previous.released.wait()
            ref: ActorRef[TerminalMessage] = await self._tg.start(self._run, config, outbox)
        finally:
            self._attaching.discard(pid)
        return ref

    async def detach(self, terminal_pid: int, ref: ActorRef[TerminalMessage], reason: str) -> None:
        """The terminal's connection ended (or the supervisor stops): its actor runs the
        exit path. Told once: a second ``Detach`` (the stop's, after the terminal left
        mid-turn; the connection's end after the stop's) would make it leave at once,
        without the turn it cut and waits for."""
        entry = self._terminals.get(terminal_pid)
        if entry is not None and entry.ref is ref:
            if not entry.connected:
                return
            entry.connected = False
        with contextlib.suppress(DeadActor):
            await ref.tell(Detach(reason))

    async def detach_all(self, reason: str, timeout: float = DETACH_WAIT_S) -> None:
        """Save every attached session (supervisor stop or SIGTERM)."""
        entries = list(self._terminals.items())
        for pid, entry in entries:
            await self.detach(pid, entry.ref, reason)
        with anyio.move_on_after(timeout):
            for _, entry in entries:
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
        entry = _Attached(ref, actor.released)
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
            if self._terminals.get(config.terminal_pid) is entry:
                del self._terminals[config.terminal_pid]
