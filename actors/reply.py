"""Reply text on its way from the LLMActor to a TerminalActor, batched like a screen refresh.

Text is sent at once when the line has been quiet for ``FLUSH_INTERVAL_S``;
text that follows sooner waits at most that long and goes out together. A
model that streams slower than 50 chunks a second is forwarded chunk by
chunk; a fast one costs a few messages per reply instead of one per token.
"""

from __future__ import annotations

import contextlib

import anyio

from actors.base import ActorRef, DeadActor
from actors.messages import TerminalMessage, TurnDelta

FLUSH_INTERVAL_S = 0.02


class ReplyForwarder:
    """``add`` text from the turn's task; ``forward`` runs beside it until ``close``.

    ``send_now`` sends the text waiting, then its message, from the turn's own
    task: the turn's ``TurnDone`` goes that way, without waiting for ``forward``
    to wind down. Nothing overtakes text: a delta ``forward`` is still sending
    into a full mailbox is ahead of it (waiting senders are served in order),
    and after ``close`` ``forward`` only sends text left waiting.
    """

    def __init__(
        self,
        reply_to: ActorRef[TerminalMessage],
        turn_id: int,
        interval: float = FLUSH_INTERVAL_S,
    ) -> None:
        self._reply_to = reply_to
        self._turn_id = turn_id
        self._interval = interval
        self._pending: list[str] = []
        self._wake = anyio.Event()
        self._closed = anyio.Event()

    def add(self, text: str) -> None:
        self._pending.append(text)
        self._wake.set()

    async def send_now(self, message: TerminalMessage) -> None:
        """Send the text waiting so far, then ``message`` (a tool call line, the turn's
        end), in that order."""
        await self._send_pending()
        await self._reply_to.tell(message)

    def close(self) -> None:
        self._closed.set()
        self._wake.set()

    async def forward(self) -> None:
        """Send, then pause ``interval`` (cut short by ``close``), until closed.

        A terminal that went away ends the forwarding; the turn itself goes on.
        """
        with contextlib.suppress(DeadActor):
            while True:
                await self._wake.wait()
                self._wake = anyio.Event()
                await self._send_pending()
                if self._closed.is_set():
                    await self._send_pending()
                    return
                with anyio.move_on_after(self._interval):
                    await self._closed.wait()

    async def _send_pending(self) -> None:
        if not self._pending:
            return
        delta = TurnDelta(self._turn_id, "".join(self._pending))
        self._pending.clear()
        if not self._reply_to.tell_nowait(delta):
            await self._reply_to.tell(delta)
