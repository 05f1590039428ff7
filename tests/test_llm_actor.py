"""LLMActor: the agents it keeps built are bounded, least recently used dropped first."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pydantic_ai.models
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.llm import AGENTS_KEPT, STOPPED_LINE, LLMActor
from actors.messages import CancelTurn, StartTurn, TurnDelta, TurnDone
from tests.e2e.openai_server import ChatServer

pytestmark = pytest.mark.anyio


async def test_many_model_names_keep_a_bounded_number_of_agents(tmp_path: Path) -> None:
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    reply_to: ActorRef[Any]
    reply_to, replies = open_mailbox("terminal")
    names = [f"openai-chat:model-{i}" for i in range(3 * AGENTS_KEPT)] + ["offline"]
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        for turn_id, name in enumerate(names, 1):
            await llm.tell(StartTurn(turn_id, name, "hi", (), tmp_path, "", "", reply_to))
            with anyio.fail_after(30):
                while not isinstance((await replies.receive()).message, TurnDone):
                    pass
            assert len(actor.agents_kept) <= AGENTS_KEPT
        llm.close()
    assert actor.agents_kept[-1] == "offline"
    assert len(actor.agents_kept) == AGENTS_KEPT


async def test_a_cancel_stops_only_the_turn_of_the_terminal_that_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two terminals each run their turn 1 (turn ids are counted per terminal): a terminal
    leaving mid-reply used to cancel the other's reply instead of its own."""
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminals: list[tuple[ActorRef[Any], MemoryObjectReceiveStream[Any]]] = [
        open_mailbox("terminal-a"),
        open_mailbox("terminal-b"),
    ]
    with ChatServer(chunk_delay=0.01) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.serve, llm_mailbox)
            for ref, _ in terminals:
                turn = StartTurn(1, "openai-chat:m", "slow", (), tmp_path, "", "", ref)
                await llm.tell(turn)
            for _, replies in terminals:  # both replies stream
                with anyio.fail_after(30):
                    while not isinstance((await replies.receive()).message, TurnDelta):
                        pass
            await llm.tell(CancelTurn(1, terminals[0][0]))
            ends = []
            for _, replies in terminals:
                with anyio.fail_after(30):
                    while not isinstance(message := (await replies.receive()).message, TurnDone):
                        pass
                ends.append(message)
            llm.close()
    assert [end.cancelled for end in ends] == [True, False]
    assert ends[1].error is None


async def test_messages_are_taken_in_order_while_turns_run(tmp_path: Path) -> None:
    """The task that takes a turn runs it and another reads on: a turn of one terminal does
    not hold up the next terminal's, and the actor stops when its mailbox closes."""
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminals: list[tuple[ActorRef[Any], MemoryObjectReceiveStream[Any]]] = [
        open_mailbox(f"terminal-{i}") for i in range(3)
    ]
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        for ref, _ in terminals:
            await llm.tell(StartTurn(1, "offline", "hi", (), tmp_path, "", "", ref))
        for _, replies in terminals:
            with anyio.fail_after(30):
                while not isinstance(message := (await replies.receive()).message, TurnDone):
                    pass
            assert message.error is None and not message.cancelled
            assert message.new_messages
        llm.close()  # serve returns: the task group ends


async def test_a_turn_cut_by_a_crash_of_the_actor_is_told_and_later_turns_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash cancelled the running turns without a word: their terminals waited for a
    reply no task ran any more ("a reply is already running" from then on)."""

    class Crashes(LLMActor):
        async def handle(self, message: Any) -> Any:
            if message == "crash":
                raise RuntimeError("a bug in the actor")
            return await super().handle(message)

    llm: ActorRef[Any]
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")
    with ChatServer(chunk_delay=0.01) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
        async with anyio.create_task_group() as tg:
            llm = await tg.start(partial(run_supervised, "llm", lambda _: Crashes()))
            await llm.tell(StartTurn(1, "openai-chat:m", "slow", (), tmp_path, "", "", terminal))
            with anyio.fail_after(30):
                while not isinstance((await replies.receive()).message, TurnDelta):
                    pass
            await llm.tell("crash")
            with anyio.fail_after(30):
                while not isinstance(cut := (await replies.receive()).message, TurnDone):
                    pass
            assert cut.turn_id == 1 and not cut.cancelled
            assert cut.error == STOPPED_LINE
            await llm.tell(StartTurn(2, "offline", "again", (), tmp_path, "", "", terminal))
            with anyio.fail_after(30):
                while not isinstance(after := (await replies.receive()).message, TurnDone):
                    pass
            assert after.turn_id == 2 and after.error is None
            llm.close()
