"""CompactionActor: asks are answered at once; told requests of a burst make one summary."""

from __future__ import annotations

from functools import partial
from typing import Any

import anyio
import pytest

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.compaction import SUMMARY_DELAY_S, CompactionActor
from actors.messages import Summarize, SummaryReady
from tests.conversations import conversation, turn

pytestmark = pytest.mark.anyio


async def test_an_ask_is_answered_at_once_and_a_burst_makes_one_summary(
    no_blocking: None,
) -> None:
    async with anyio.create_task_group() as tg:
        compaction: ActorRef[Any] = await tg.start(
            partial(run_supervised, "compaction", lambda ref: CompactionActor(ref))
        )
        summary = await compaction.ask(
            Summarize("aaaaaaaaaaaa", tuple(turn(0)), (), None), timeout=1
        )
        assert summary is not None and 'first: "question 0"' in summary

        terminal: ActorRef[Any]
        terminal, inbox = open_mailbox("terminal")
        for n in range(1, 4):
            await compaction.tell(
                Summarize("aaaaaaaaaaaa", tuple(conversation(*([0] * n))), (), None, terminal)
            )
        with anyio.fail_after(SUMMARY_DELAY_S + 5):
            envelope = await inbox.receive()
        ready = envelope.message
        assert isinstance(ready, SummaryReady)
        assert ready.summary.startswith("3 recent request(s)"), "the latest request wins"
        with anyio.move_on_after(SUMMARY_DELAY_S + 0.5):
            await inbox.receive()
            pytest.fail("a burst must make one summary")
        tg.cancel_scope.cancel()
