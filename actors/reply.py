"""Reply text on its way from the LLMActor to a TerminalActor, batched like a screen refresh.

Text is sent at once when nothing was sent for ``FLUSH_INTERVAL_S`` (the turn's
start counts as a send); text that follows sooner is held until that long after
the last send and goes out together. A model that streams slower than 50 chunks
a second is forwarded chunk by chunk, its first text as soon as it comes (no
model answers over the network within 20 ms of the request; one that does has its
first text shown at most that much later); a fast one costs a few messages per
reply instead of one per token, and one that answers whole within the interval
(a local model, the offline one) costs none: its text goes with the turn's end.

Held text is sent by a timer of the event loop (asyncio's ``call_later``), not by
a task: a turn neither starts nor winds down a forwarding task, and its end
cancels the timer without a turn of the loop.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import replace

from actors.base import ActorRef, DeadActor
from actors.messages import TerminalMessage, TurnDelta, TurnDone

FLUSH_INTERVAL_S = 0.02


class ReplyForwarder:
    """``add`` text from the turn's task; ``send_now`` the held text, then a message (a
    tool call line, the turn's end); ``close`` when the turn is over.

    Nothing overtakes text: ``send_now`` sends the held text first, and a message
    that finds the mailbox full waits behind what already waits to go in (anyio
    serves waiting senders in order). Text still held at ``close`` goes out only
    with a ``send_now`` that follows (the turn's end); a cancelled turn drops it.
    A terminal that went away ends the forwarding; the turn itself goes on.
    """

    def __init__(
        self,
        reply_to: ActorRef[TerminalMessage],
        turn_id: int,
        interval: float = FLUSH_INTERVAL_S,
        clock: Callable[[], float] | None = None,
    ) -> None:
        """``clock``: what tells how long since the last send (the loop's time; a test's
        own, so that a loaded machine's pauses do not decide what is held)."""
        self._reply_to = reply_to
        self._turn_id = turn_id
        self._interval = interval
        self._retry = interval or FLUSH_INTERVAL_S
        """The pause before trying again when the mailbox is full."""
        self._loop = asyncio.get_running_loop()
        self._clock = clock or self._loop.time
        self._pending: list[str] = []
        self._last_sent = self._clock()
        """When text was last sent; the turn's start to begin with."""
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        self._gone = False
        self.had_text = False
        """Some of the reply's text was given (a failure then comes mid-reply)."""

    def add(self, text: str) -> None:
        self.had_text = True
        if self._gone:
            return
        self._pending.append(text)
        if self._timer is not None or self._closed:
            return  # it goes with the held text
        wait = self._last_sent + self._interval - self._clock()
        if wait > 0:
            self._arm(wait)
        elif not self._flush():
            self._arm(self._retry)

    async def send_now(self, message: TerminalMessage) -> None:
        """Send the text held so far, then ``message``, in that order."""
        self._disarm()
        if self._pending and not self._gone:
            delta = TurnDelta(self._turn_id, "".join(self._pending))
            self._pending.clear()
            await self._reply_to.tell(delta)
            self._last_sent = self._clock()
        await self._reply_to.tell(message)

    async def finish(self, done: TurnDone) -> None:
        """Send the turn's end ``done`` carrying the text held so far (see ``TurnDone.text``)."""
        self._disarm()
        held = "" if self._gone else "".join(self._pending)
        self._pending.clear()
        await self._reply_to.tell(replace(done, text=held) if held else done)

    def close(self) -> None:
        self._closed = True
        self._disarm()

    def _flush(self) -> bool:
        """Send the held text if the mailbox has room; False if it is full."""
        delta = TurnDelta(self._turn_id, "".join(self._pending))
        try:
            if not self._reply_to.offer(delta):
                return False
        except DeadActor:
            self._gone = True
        self._pending.clear()
        self._last_sent = self._clock()
        return True

    def _on_timer(self) -> None:
        self._timer = None
        if not self._closed and self._pending and not self._flush():
            self._arm(self._retry)

    def _arm(self, delay: float) -> None:
        self._timer = self._loop.call_later(delay, self._on_timer)

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
