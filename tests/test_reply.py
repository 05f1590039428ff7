"""Reply text from the LLMActor to a TerminalActor: at once when quiet, batched when fast."""

from __future__ import annotations

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.base import ActorRef, Envelope, open_mailbox
from actors.messages import TerminalMessage, TurnDelta, TurnDone
from actors.reply import ReplyForwarder

pytestmark = pytest.mark.anyio

LONG = 60.0  # an interval no test waits out


async def next_text(mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]]) -> str:
    with anyio.fail_after(5):
        envelope = await mailbox.receive()
    assert isinstance(envelope.message, TurnDelta) and envelope.message.turn_id == 7
    return envelope.message.text


def mailbox_for_a_terminal(
    size: int = 16,
) -> tuple[ActorRef[TerminalMessage], MemoryObjectReceiveStream[Envelope[TerminalMessage]]]:
    return open_mailbox("terminal", size)


def waiting(mailbox: MemoryObjectReceiveStream[Envelope[TerminalMessage]]) -> int:
    return mailbox.statistics().current_buffer_used


async def test_the_first_text_goes_out_at_once() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply.forward)
        reply.add("Hello")
        assert await next_text(mailbox) == "Hello"
        reply.close()


async def test_text_that_follows_quickly_waits_and_goes_out_together_on_close() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply.forward)
        reply.add("Hello")
        assert await next_text(mailbox) == "Hello"
        reply.add(", wor")
        reply.add("ld")
        await anyio.wait_all_tasks_blocked()
        assert waiting(mailbox) == 0
        reply.close()
    assert await next_text(mailbox) == ", world"
    assert waiting(mailbox) == 0


async def test_held_text_goes_out_after_the_interval_without_more_text() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=0.01)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply.forward)
        reply.add("one ")
        assert await next_text(mailbox) == "one "
        reply.add("two")
        assert await next_text(mailbox) == "two"
        reply.close()


async def test_close_with_nothing_pending_sends_nothing() -> None:
    ref, mailbox = mailbox_for_a_terminal()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply.forward)
        reply.close()
    assert waiting(mailbox) == 0


async def test_a_terminal_that_went_away_ends_the_forwarding_quietly() -> None:
    ref, mailbox = mailbox_for_a_terminal(size=1)
    mailbox.close()
    reply = ReplyForwarder(ref, 7, interval=LONG)
    with anyio.fail_after(5):
        async with anyio.create_task_group() as tg:
            tg.start_soon(reply.forward)
            reply.add("nobody reads this")
            await anyio.wait_all_tasks_blocked()
            reply.add("nor this")
            reply.close()


async def test_a_message_sent_now_comes_after_text_still_on_its_way_into_a_full_mailbox() -> None:
    ref, mailbox = mailbox_for_a_terminal(size=1)
    reply = ReplyForwarder(ref, 7, interval=0)  # forward sends each text as it comes
    async with anyio.create_task_group() as tg:
        tg.start_soon(reply.forward)
        reply.add("first")
        assert await next_text(mailbox) == "first"
        assert ref.tell_nowait(TurnDelta(7, "filler"))  # the mailbox is full now
        reply.add("second")
        await anyio.wait_all_tasks_blocked()  # forward is waiting to send "second"
        reply.add(" and third")
        reply.close()
        tg.start_soon(reply.send_now, TurnDone(7))
        await anyio.wait_all_tasks_blocked()
        received = [await next_text(mailbox) for _ in range(3)]
        with anyio.fail_after(5):
            last = (await mailbox.receive()).message
    assert received == ["filler", "second", " and third"]
    assert last == TurnDone(7)
