"""A checkpoint's line names the last message even after a summary model's compaction
took the whole tail: a TerminalActor with the real worker actors, in process, and a
summary model served by the local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pydantic_ai.models
import pytest

from actors.base import ActorRef, open_mailbox
from actors.compaction import CompactionActor
from actors.messages import (
    CommandOutput,
    Detach,
    OpenSession,
    RunCommand,
    TerminalOutput,
    TurnEnded,
    UserTurn,
)
from actors.terminal import TerminalActor, TerminalConfig
from session.checkpoints import CHECKPOINT_FORMAT
from session.compaction import EventsCompactionConfig
from session.history import warm_up
from session.lifecycle import PersistPolicy
from session.manager import CheckpointStore
from session.paths import sessions_dir
from tests.e2e.openai_server import ChatServer
from tests.workers import start_peers

pytestmark = pytest.mark.anyio

SUMMARY_MODEL = "openai-chat:summary-model"
TOPIC = "and please keep the routing table, the classifier prompt and the evaluation in mind"


class Chat:
    def __init__(self, terminal: ActorRef[Any], outputs: Any, project: Path) -> None:
        self.terminal = terminal
        self.outputs = outputs
        self.project = project

    async def next_of(self, kind: type[Any]) -> Any:
        with anyio.fail_after(20):
            async for output in self.outputs:
                if isinstance(output, kind):
                    return output
        raise AssertionError(f"no {kind.__name__}")

    async def turn(self, text: str) -> None:
        await self.terminal.tell(UserTurn(text))
        assert (await self.next_of(TurnEnded)).status == "ok"

    async def command(self, name: str, arg: str | None = None) -> str:
        await self.terminal.tell(RunCommand(name, arg))
        output: CommandOutput = await self.next_of(CommandOutput)
        return output.text


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as chat_server:
        monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        yield chat_server


@pytest.fixture
async def chat(tmp_path: Path, server: ChatServer) -> AsyncIterator[Chat]:
    warm_up()
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    async with anyio.create_task_group() as tg:
        peers = await start_peers(
            tg,
            home,
            compaction=lambda ref: CompactionActor(
                ref, summary_model=SUMMARY_MODEL, llm_timeouts=(5.0, 5.0)
            ),
        )
        config = TerminalConfig(
            terminal_pid=4242,
            terminal_start_time=None,
            workspace=workspace,
            project=sessions_dir(workspace, home),
            model="openai-chat:test-model",  # it answers "echo: <the message>"
            policy=PersistPolicy(compaction=EventsCompactionConfig(0, 0)),
            summary_model=SUMMARY_MODEL,
        )
        send, receive = anyio.create_memory_object_stream[TerminalOutput](256)
        ref: ActorRef[Any]
        ref, mailbox = open_mailbox("terminal-4242")
        tg.start_soon(TerminalActor(ref, config, peers, send).serve, mailbox)
        await ref.ask(OpenSession("new", None))
        yield Chat(ref, receive, config.project)
        await ref.ask(Detach("exit"))
        server.released.set()
        tg.cancel_scope.cancel()


async def test_a_save_after_a_summary_models_whole_compaction_names_the_last_message(
    chat: Chat,
) -> None:
    """A trial's find (H112): the summary model's narrative names no request, the tail was
    empty, and the checkpoint's line (``/checkpoint``, ``sessions show``) had no last
    words; only the offline summarizer's narrative gave them back."""
    await chat.turn(f"design the router {TOPIC}")
    await chat.turn(f"add the evaluation set {TOPIC}")
    compacted = await chat.command("compact")
    assert compacted.startswith("Compacted turns 1-2: "), compacted  # the summary model's
    assert (await chat.command("save")).endswith("checkpoint 1.")
    listed = await chat.command("checkpoint")
    assert "  2 turns  " in listed
    assert listed.endswith("'add the evaluation set and please keep the ...'"), listed


async def test_an_entry_names_its_last_message_only_when_its_tail_has_none(
    chat: Chat,
) -> None:
    """The words are kept in the entry only when its state cannot give them: an entry
    of a tail with a message stays of the format older versions read."""
    await chat.turn(f"design the router {TOPIC}")
    await chat.command("save")
    await chat.command("compact")
    await chat.command("save")
    store = CheckpointStore(chat.project.parent)
    session_id = store.session_ids()[0]
    first, second = store.listing(session_id).checkpoints
    assert (first.format, first.last_request) == (2, "")
    assert second.format == CHECKPOINT_FORMAT
    assert second.last_request.startswith("design the router")
