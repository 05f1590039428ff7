"""A turn's end told ahead (``TurnDone(ahead=True)``): saved at once, told to the terminal
only when the turn's own ``TurnDone`` confirms it; a turn that ends otherwise ends as it
ended. The model's side is played by the test through the LLM actor's messages."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from actors.base import ActorRef, Envelope, open_mailbox
from actors.messages import (
    Detach,
    OpenSession,
    ReplyText,
    RunCommand,
    StartTurn,
    TerminalOutput,
    TurnDone,
    TurnEnded,
    UserTurn,
)
from actors.terminal import Peers, TerminalActor, TerminalConfig
from session.history import warm_up
from session.paths import sessions_dir
from tests.workers import start_peers

pytestmark = pytest.mark.anyio


@dataclass
class Rig:
    terminal: ActorRef[Any]
    llm: MemoryObjectReceiveStream[Envelope[Any]]
    outputs: MemoryObjectReceiveStream[TerminalOutput]
    project: Path

    async def start_turn(self, text: str) -> StartTurn:
        await self.terminal.tell(UserTurn(text))
        with anyio.fail_after(10):
            while True:
                message = (await self.llm.receive()).message
                if isinstance(message, StartTurn):
                    return message

    async def first_turn(self) -> None:
        """A turn ended the usual way: the session is on disk (a session never saved is
        not saved ahead)."""
        turn = await self.start_turn("a first message")
        await self.terminal.tell(TurnDone(turn.turn_id, answered(turn, "a first reply")))
        await self.settled()
        assert "a first reply" in self.saved_text()
        self.told()

    async def settled(self) -> None:
        """A round trip: the terminal has handled what it was told before."""
        await self.terminal.ask(RunCommand("help", None))

    def told(self) -> list[TerminalOutput]:
        out = []
        while True:
            try:
                out.append(self.outputs.receive_nowait())
            except anyio.WouldBlock:
                return out

    def saved_text(self) -> str:
        (path,) = [p for p in self.project.glob("*.json") if not p.name.startswith("active_")]
        return path.read_text()


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    warm_up()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    async with anyio.create_task_group() as tg:
        real = await start_peers(tg, home)
        llm: ActorRef[Any]
        llm, llm_mailbox = open_mailbox("llm")
        config = TerminalConfig(
            terminal_pid=4242,
            terminal_start_time=None,
            workspace=workspace,
            project=sessions_dir(workspace, home),
            model="offline",
        )
        send, receive = anyio.create_memory_object_stream[TerminalOutput](256)
        ref: ActorRef[Any]
        ref, mailbox = open_mailbox("terminal-4242")
        peers = dataclasses.replace(real, llm=llm)
        assert isinstance(peers, Peers)
        tg.start_soon(TerminalActor(ref, config, peers, send).serve, mailbox)
        await ref.ask(OpenSession("new", None))
        rig = Rig(ref, llm_mailbox, receive, config.project)
        await rig.first_turn()
        yield rig
        await ref.tell(Detach("exit"))
        tg.cancel_scope.cancel()


def answered(turn: StartTurn, reply: str) -> tuple[ModelRequest | ModelResponse, ...]:
    return (
        ModelRequest(parts=[UserPromptPart(turn.prompt)]),
        ModelResponse(parts=[TextPart(reply)]),
    )


async def test_an_end_told_ahead_is_saved_at_once_and_told_when_confirmed(rig: Rig) -> None:
    turn = await rig.start_turn("second message")
    new = answered(turn, "the whole reply")
    await rig.terminal.tell(TurnDone(turn.turn_id, new, ahead=True))
    await rig.settled()
    assert "the whole reply" in rig.saved_text()  # saved before the turn's end
    assert not [o for o in rig.told() if isinstance(o, TurnEnded)]  # not told yet
    await rig.terminal.tell(TurnDone(turn.turn_id, new, text="reply"))
    await rig.settled()
    told = rig.told()
    assert [o for o in told if isinstance(o, ReplyText)] == [ReplyText("reply")]
    (ended,) = [o for o in told if isinstance(o, TurnEnded)]
    assert ended.status == "ok" and ended.error is None


async def test_a_turn_that_fails_after_its_end_was_saved_ahead_is_not_kept(rig: Rig) -> None:
    turn = await rig.start_turn("second message")
    await rig.terminal.tell(TurnDone(turn.turn_id, answered(turn, "kept reply"), ahead=True))
    await rig.settled()
    assert "kept reply" in rig.saved_text()
    await rig.terminal.tell(TurnDone(turn.turn_id, error="the model failed at the end"))
    await rig.settled()
    (ended,) = [o for o in rig.told() if isinstance(o, TurnEnded)]
    assert ended.status == "error" and ended.error == "the model failed at the end"
    assert "kept reply" not in rig.saved_text()  # saved again, without the turn


async def test_the_first_turn_of_a_session_never_saved_is_not_saved_ahead(rig: Rig) -> None:
    await rig.terminal.ask(RunCommand("reset", None))  # nothing on disk until a reply
    turn = await rig.start_turn("after the reset")
    await rig.terminal.tell(TurnDone(turn.turn_id, answered(turn, "told ahead"), ahead=True))
    await rig.settled()
    assert not [p for p in rig.project.glob("*.json") if not p.name.startswith("active_")]
    await rig.terminal.tell(TurnDone(turn.turn_id, error="it failed"))
    await rig.settled()
    assert not [p for p in rig.project.glob("*.json") if not p.name.startswith("active_")]


async def test_a_turn_that_ends_with_other_messages_keeps_those(rig: Rig) -> None:
    turn = await rig.start_turn("second message")
    await rig.terminal.tell(TurnDone(turn.turn_id, answered(turn, "told ahead"), ahead=True))
    await rig.settled()
    await rig.terminal.tell(TurnDone(turn.turn_id, answered(turn, "what it ended with")))
    await rig.settled()
    (ended,) = [o for o in rig.told() if isinstance(o, TurnEnded)]
    assert ended.status == "ok"
    saved = rig.saved_text()
    assert "what it ended with" in saved and "told ahead" not in saved
