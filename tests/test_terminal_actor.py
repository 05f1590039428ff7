"""TerminalActor with the real worker actors, in process: failure handling and reset ordering."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from actors.base import ActorRef, open_mailbox
from actors.messages import (
    AskUser,
    CommandOutput,
    ConfirmAnswer,
    Detach,
    OpenSession,
    RunCommand,
    TerminalOutput,
    TurnDone,
    TurnEnded,
    UserTurn,
)
from actors.terminal import TerminalActor, TerminalConfig
from session.history import warm_up
from session.paths import sessions_dir
from tests.conftest import blocking_calls
from tests.workers import start_peers

pytestmark = pytest.mark.anyio


class Unserializable:
    """Something a buggy tool could put in a message: pydantic cannot dump it."""


BROKEN_TURN = (
    ModelRequest(parts=[UserPromptPart("forged")]),
    ModelResponse(parts=[TextPart("x", provider_details={"bad": Unserializable()})]),
)


@dataclass
class Rig:
    terminal: ActorRef[Any]
    outputs: MemoryObjectReceiveStream[TerminalOutput]
    project: Path
    workspace: Path

    async def next_of(self, kind: type[Any]) -> Any:
        with anyio.fail_after(10):
            async for output in self.outputs:
                if isinstance(output, kind):
                    return output
        raise AssertionError(f"no {kind.__name__}")

    def session_files(self) -> list[Path]:
        return sorted(p for p in self.project.glob("*.json") if not p.name.startswith("active_"))


@pytest.fixture
async def rig(tmp_path: Path) -> AsyncIterator[Rig]:
    await anyio.to_thread.run_sync(warm_up)  # as the supervisor does, off its loop
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    async with anyio.create_task_group() as tg:
        peers = await start_peers(tg, home)
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
        actor = TerminalActor(ref, config, peers, send)
        tg.start_soon(actor.serve, mailbox)
        yield Rig(ref, receive, config.project, workspace)
        tg.cancel_scope.cancel()


async def test_turns_never_block_the_event_loop(rig: Rig) -> None:
    async with blocking_calls() as blocked:
        await anyio.lowlevel.checkpoint()
        await rig.terminal.ask(OpenSession("new", None))
        for text in ("first message, the agent is built now", "second message"):
            await rig.terminal.tell(UserTurn(text))
            assert (await rig.next_of(TurnEnded)).status == "ok"
        await rig.terminal.tell(Detach("exit"))
    assert blocked == []


async def test_a_failing_message_saves_what_the_actor_held_and_reports_it(rig: Rig) -> None:
    """(The failure is logged with its traceback, synchronously: no blocking guard here.)"""
    await rig.terminal.ask(OpenSession("new", None))
    await rig.terminal.tell(UserTurn("first message"))
    assert (await rig.next_of(TurnEnded)).status == "ok"
    (path,) = rig.session_files()
    saved_before = orjson.loads(path.read_bytes())

    # The second turn's result is broken: handling it raises inside the actor.
    assert rig.terminal.tell_nowait(UserTurn("second message"))
    assert rig.terminal.tell_nowait(TurnDone(turn_id=2, new_messages=BROKEN_TURN))
    ended = await rig.next_of(TurnEnded)  # the end the terminal waits for, not a notice
    assert ended.status == "error" and ended.error is not None
    assert ended.error.startswith("internal error (")
    assert ended.error.endswith("; session saved")
    saved_after = orjson.loads(path.read_bytes())
    assert saved_after["recent_messages"] == saved_before["recent_messages"]
    assert saved_after["updated_at"] > saved_before["updated_at"]

    # The actor lives on: the next turn works and is saved.
    await rig.terminal.tell(UserTurn("third message"))
    assert (await rig.next_of(TurnEnded)).status == "ok"
    assert "third message" in path.read_text()
    await rig.terminal.tell(Detach("exit"))


@pytest.mark.parametrize("command", ["save", "reset", "compact"])
async def test_a_command_that_changes_the_session_waits_for_the_reply(
    rig: Rig, command: str
) -> None:
    """The lifecycle's table refuses it in a turn; the actor says so in one line."""
    await rig.terminal.ask(OpenSession("new", None))
    # Both are queued before the model's answer can be: the command meets the turn in flight.
    assert rig.terminal.tell_nowait(UserTurn("a long answer please"))
    assert rig.terminal.tell_nowait(RunCommand(command, None))
    refused: CommandOutput = await rig.next_of(CommandOutput)
    assert refused.text == f"error: wait for the reply to finish before /{command}"
    assert (await rig.next_of(TurnEnded)).status == "ok"
    (path,) = rig.session_files()  # the turn was saved, the session not reset
    assert "a long answer please" in path.read_text()
    await rig.terminal.tell(Detach("exit"))


async def test_an_answer_that_arrives_during_a_turn_changes_nothing(rig: Rig) -> None:
    await rig.terminal.ask(OpenSession("new", None))
    await rig.terminal.tell(UserTurn("first message"))
    assert (await rig.next_of(TurnEnded)).status == "ok"
    (rig.workspace / "agent_spec.md").write_text("# spec\n")
    await rig.terminal.tell(RunCommand("reset", None))
    question: AskUser = await rig.next_of(AskUser)  # also delete agent_spec.md?
    assert rig.terminal.tell_nowait(UserTurn("second message"))
    assert rig.terminal.tell_nowait(ConfirmAnswer(question.id, True))
    refused: CommandOutput = await rig.next_of(CommandOutput)
    assert refused.text == "error: a reply is running; nothing was changed"
    assert (await rig.next_of(TurnEnded)).status == "ok"
    (path,) = rig.session_files()
    assert "first message" in path.read_text() and "second message" in path.read_text()
    assert (rig.workspace / "agent_spec.md").exists()
    await rig.terminal.tell(Detach("exit"))


async def test_the_offline_model_s_turns_end_with_the_request_s_estimated_size(rig: Rig) -> None:
    """The offline model counts no tokens: pydantic-ai's stand-in said 50 at every turn, so
    the toolbar's count never moved. The turn's end now carries the request's estimate."""
    await rig.terminal.ask(OpenSession("new", None))
    sizes = []
    for n in range(3):
        await rig.terminal.tell(UserTurn(f"message {n}: " + "many words here " * 100))
        ended = await rig.next_of(TurnEnded)
        assert ended.status == "ok"
        sizes.append(ended.input_tokens)
    assert sizes[0] > 50 and sizes[0] < sizes[1] < sizes[2], sizes


async def test_resuming_a_session_of_long_turns_does_not_block_the_event_loop(
    tmp_path: Path,
) -> None:
    """A helper's attack (H78): resuming a session file of long turns read, checked and
    encoded its messages again on the supervisor's event loop, and every other terminal
    waited for it (seconds for a 30 MB file). The lifecycle's resume is pure: it runs
    off the loop (and so does what the exit does with such a session)."""
    from datetime import UTC, datetime

    from session.compaction import EventsCompactionConfig
    from session.history import plain_messages
    from session.lifecycle import PersistPolicy
    from session.models import SessionState
    from tests.conversations import turn

    await anyio.to_thread.run_sync(warm_up)  # off the loop, as the supervisor does
    workspace = tmp_path / "ws"
    workspace.mkdir()
    project = sessions_dir(workspace, tmp_path / "home")
    report = "The key decision: the triage agent routes tickets by their token count. " * 1_500
    long_turns = [m for index in range(20) for m in turn(index, text=report)]
    stored = SessionState.new(datetime.now(UTC), "a1b2c3d4e5f6")
    stored = stored.model_copy(update={"recent_messages": tuple(plain_messages(long_turns))})
    project.mkdir(parents=True)
    (project / "a1b2c3d4e5f6.json").write_bytes(orjson.dumps(stored.model_dump(mode="json")))
    window = PersistPolicy(compaction=EventsCompactionConfig(100, 2))  # the whole tail is kept
    async with anyio.create_task_group() as tg:
        peers = await start_peers(tg, tmp_path / "home")
        config = TerminalConfig(4242, None, workspace, project, "offline", policy=window)
        send, _ = anyio.create_memory_object_stream[TerminalOutput](256)
        terminal: ActorRef[Any]
        terminal, mailbox = open_mailbox("terminal-4242")
        tg.start_soon(TerminalActor(terminal, config, peers, send).serve, mailbox)
        async with blocking_calls() as blocked:
            await anyio.lowlevel.checkpoint()
            opened = await terminal.ask(OpenSession("resume", "a1b2c3d4e5f6"), timeout=60)
            assert opened.resumed
            await terminal.ask(Detach("exit"), timeout=60)
        assert blocked == []
        tg.cancel_scope.cancel()
