"""A checkpoint's line names the last message even after a summary model's compaction
took the whole tail: a TerminalActor with the real worker actors, in process, and a
summary model served by the local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.base import ActorRef
from actors.messages import (
    CommandOutput,
    Detach,
    RunCommand,
    TurnEnded,
    UserTurn,
)
from session.manager import CheckpointStore
from tests.e2e.openai_server import ChatServer
from tests.workers import local_models, summary_model_terminal

pytestmark = pytest.mark.anyio

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
    with local_models(monkeypatch) as chat_server:
        yield chat_server


@pytest.fixture
async def chat(tmp_path: Path, server: ChatServer) -> AsyncIterator[Chat]:
    async with anyio.create_task_group() as tg:
        ref, receive, project = await summary_model_terminal(tg, tmp_path, 5.0)
        yield Chat(ref, receive, project)
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


async def test_an_entry_after_a_whole_compaction_of_one_turn_names_it_from_memory(
    chat: Chat,
) -> None:
    """A compaction of one turn, which the request would not carry again (the request
    would not be smaller with it), leaves the tail empty: the entry keeps the last
    message's words itself (format 4); the one before the compaction reads them from its
    tail and stays of the format older versions read."""
    await chat.turn(f"design the router {TOPIC}")
    await chat.command("save")
    await chat.command("compact")
    await chat.command("save")
    store = CheckpointStore(chat.project.parent)
    session_id = store.session_ids()[0]
    first, second = store.listing(session_id).checkpoints
    assert (first.format, first.last_request) == (2, "")
    assert second.format == 4 and second.last_request.startswith("design the router")
    assert second.state.recent_messages == ()
