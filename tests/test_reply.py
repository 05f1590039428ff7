"""Reply text from the LLMActor to a TerminalActor: at once when quiet, batched when fast,
and with the turn's end when the whole reply comes within an interval of its start."""

from __future__ import annotations

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.base import ActorRef, DeadActor, Envelope, open_mailbox
from actors.messages import TerminalMessage, TurnDelta, TurnDone
from actors.reply import ReplyForwarder

pytestmark = pytest.mark.anyio

LONG = 60.0  # an interval no test waits out
SHORT = 0.01


class Clock:
    """The forwarder's clock, moved by the test alone: how long passed between two calls
    is what the test says, not what a loaded machine's pauses made it (a test holding
    text for 10 ms failed when its thread was kept off the CPU that long)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> Clock:
    return Clock()


async def next_message(mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]]) -> object:
    with anyio.fail_after(5):
        envelope = await mailbox.receive()
    return envelope.message


async def next_text(mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]]) -> str:
    message = await next_message(mailbox)
    assert isinstance(message, TurnDelta) and message.turn_id == 7
    return message.text


def mailbox_for_a_terminal(
    size: int = 16,
) -> tuple[ActorRef[TerminalMessage], MemoryObjectReceiveStream[Envelope[TerminalMessage]]]:
    return open_mailbox("terminal", size)


def waiting(mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]]) -> int:
    return mailbox.statistics().current_buffer_used


async def test_the_first_text_goes_out_at_once_when_it_comes_an_interval_after_the_start(
    clock: Clock,
) -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=SHORT, clock=clock)
    clock.advance(3 * SHORT)  # the model takes a while to answer
    reply.add("Hello")
    assert waiting(mailbox) == 1
    assert await next_text(mailbox) == "Hello"
    reply.close()


async def test_text_that_follows_quickly_is_held_and_goes_out_together_before_the_end() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    reply.add("Hello")
    reply.add(", wor")
    reply.add("ld")
    await anyio.wait_all_tasks_blocked()
    assert waiting(mailbox) == 0
    reply.close()
    await reply.send_now(TurnDone(7))
    assert await next_text(mailbox) == "Hello, world"
    assert await next_message(mailbox) == TurnDone(7)
    assert waiting(mailbox) == 0


async def test_held_text_goes_out_after_the_interval_without_more_text(clock: Clock) -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=SHORT, clock=clock)  # each text within it
    reply.add("one ")
    assert waiting(mailbox) == 0
    assert await next_text(mailbox) == "one "
    reply.add("two")
    assert waiting(mailbox) == 0
    assert await next_text(mailbox) == "two"
    reply.close()


async def test_text_after_a_quiet_interval_goes_out_at_once(clock: Clock) -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=SHORT, clock=clock)
    reply.add("one")
    assert await next_text(mailbox) == "one"
    clock.advance(3 * SHORT)  # the line goes quiet
    reply.add("two")
    assert waiting(mailbox) == 1
    reply.close()


async def test_close_with_nothing_held_sends_nothing() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    reply.close()
    await anyio.wait_all_tasks_blocked()
    assert waiting(mailbox) == 0


async def test_text_held_when_a_turn_is_cancelled_is_dropped(clock: Clock) -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=SHORT, clock=clock)  # each text within it
    reply.add("kept")
    assert await next_text(mailbox) == "kept"  # once the interval passed
    reply.add(" dropped")
    reply.close()  # no send_now follows: the turn was cancelled
    await anyio.sleep(5 * SHORT)  # well past the moment the held text was due
    assert waiting(mailbox) == 0


async def test_held_text_waits_for_room_in_a_full_mailbox() -> None:
    ref, mailbox = mailbox_for_a_terminal(size=1)
    reply = ReplyForwarder(ref, 7, interval=0)  # every text is due at once
    assert ref.tell_nowait(TurnDelta(7, "filler"))  # the mailbox is full now
    reply.add("second")
    reply.add(" and third")
    assert await next_text(mailbox) == "filler"
    assert await next_text(mailbox) == "second and third"
    reply.close()


async def test_a_message_sent_now_comes_after_the_text_before_it_into_a_full_mailbox() -> None:
    ref, mailbox = mailbox_for_a_terminal(size=1)
    reply = ReplyForwarder(ref, 7, interval=0)
    assert ref.tell_nowait(TurnDelta(7, "filler"))
    reply.add("second")
    reply.close()
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply.send_now, TurnDone(7))
        await anyio.wait_all_tasks_blocked()  # send_now waits for room
        received = [await next_message(mailbox) for _ in range(3)]
    assert received == [TurnDelta(7, "filler"), TurnDelta(7, "second"), TurnDone(7)]


async def test_a_terminal_that_went_away_ends_the_forwarding_quietly() -> None:
    ref, mailbox = mailbox_for_a_terminal(size=1)
    mailbox.close()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    reply.add("nobody reads this")
    reply.add("nor this")
    reply.close()
    with pytest.raises(DeadActor):  # the turn's end has nobody to go to either
        await reply.send_now(TurnDone(7))


async def test_a_reply_that_comes_whole_within_an_interval_goes_out_with_the_turns_end() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    reply.add("Hello")
    reply.add(", wor")
    reply.add("ld")
    await anyio.wait_all_tasks_blocked()
    assert waiting(mailbox) == 0
    reply.close()
    await reply.finish(TurnDone(7))
    assert await next_message(mailbox) == TurnDone(7, text="Hello, world")
    assert waiting(mailbox) == 0


async def test_a_turns_end_with_no_text_held_carries_none() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=SHORT)
    reply.add("all of it")
    assert await next_text(mailbox) == "all of it"
    await reply.finish(TurnDone(7))
    assert await next_message(mailbox) == TurnDone(7)
