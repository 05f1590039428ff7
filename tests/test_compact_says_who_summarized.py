"""What ``/compact`` tells the user when the summary model did not write the summary: a
TerminalActor with the real worker actors, in process, and a summary model served by the
local OpenAI-compatible server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.base import ActorRef
from actors.messages import (
    CommandOutput,
    Detach,
    Info,
    RunCommand,
    TerminalOutput,
    TurnEnded,
    UserTurn,
)
from session.compaction import EventsCompactionConfig
from session.lifecycle import PersistPolicy
from tests.e2e.openai_server import ChatServer
from tests.workers import local_models, summary_model_terminal

pytestmark = pytest.mark.anyio

LONG = (
    "Please think about the classifier prompt and the routing table for tickets of every "
    "kind, and how we evaluate it. "
) * 6


@dataclass
class Chat:
    terminal: ActorRef[Any]
    outputs: anyio.abc.ObjectReceiveStream[TerminalOutput]
    seen: list[TerminalOutput]

    async def next_of(self, kind: type[Any]) -> Any:
        with anyio.fail_after(20):
            async for output in self.outputs:
                self.seen.append(output)
                if isinstance(output, kind):
                    return output
        raise AssertionError(f"no {kind.__name__}")

    async def turn(self, text: str) -> None:
        await self.terminal.tell(UserTurn(text))
        assert (await self.next_of(TurnEnded)).status == "ok"

    async def compact(self) -> list[str]:
        """``/compact``'s answer: the lines told from the command to its output, in order."""
        start = len(self.seen)
        await self.terminal.tell(RunCommand("compact", None))
        await self.next_of(CommandOutput)
        return [
            o.text for o in self.seen[start:] if isinstance(o, Info | CommandOutput)
        ]


ChatFactory = Callable[[], Any]


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    with local_models(monkeypatch) as chat_server:
        yield chat_server


@pytest.fixture
async def make_chat(tmp_path: Path, server: ChatServer) -> AsyncIterator[ChatFactory]:
    async with anyio.create_task_group() as tg:

        async def make() -> Chat:
            ref, receive, _ = await summary_model_terminal(tg, tmp_path, 1.0)
            return Chat(ref, receive, [])

        yield make
        server.released.set()  # a hung summary request ends
        tg.cancel_scope.cancel()


async def test_compact_not_done_after_the_summary_model_timed_out_says_it_timed_out(
    make_chat: ChatFactory, server: ChatServer
) -> None:
    """A helper's report: the summary model gave no answer in time, the offline summary
    was no shorter than the one short turn, and /compact said only "Not compacted: a
    summary would not be shorter"; the summary model's warning came later, with some
    other compaction."""
    server.hang_summaries = True
    chat: Chat = await make_chat()
    await chat.turn("hi")
    lines = await chat.compact()
    assert lines[-1].startswith(
        "Not compacted: a summary by the offline summarizer would not be shorter"
    ), lines
    (warning,) = [line for line in lines if line.startswith("warning:")]
    assert warning.startswith("warning: the summary model at http")
    assert "TimeoutError: no answer in time" in warning
    await chat.terminal.tell(Detach("exit"))


async def test_compact_written_offline_after_an_answer_no_shorter_says_so(
    make_chat: ChatFactory, server: ChatServer
) -> None:
    """A helper's report: the summary model's answer was refused as no shorter than the
    conversation it was given, the offline summarizer wrote the compaction, and /compact
    said "Compacted turn 1: ..." as if the summary model had written it. The model did
    not fail (it is asked again next time): no warning."""
    server.summary_answer = "The user and the assistant discussed the triage agent. " * 30
    chat: Chat = await make_chat()
    await chat.turn(LONG)
    lines = await chat.compact()
    assert lines[-1].startswith("Compacted turn 1 by the offline summarizer: ~"), lines
    assert not [line for line in lines if line.startswith("warning:")], lines
    await chat.terminal.tell(Detach("exit"))


async def test_a_failing_summary_model_is_told_once_across_an_offline_compaction(
    tmp_path: Path, server: ChatServer
) -> None:
    """H142: with the summary model failing, a message over the token budget alone had its
    compaction asked of the offline summarizer; that compaction's answer, naming no failure,
    was taken as the model writing again, and the next compaction (offline, the model
    still down) told the same warning a second time."""
    server.fail_summaries = True
    policy = PersistPolicy(compaction=EventsCompactionConfig(3, 0, token_threshold=1000))
    async with anyio.create_task_group() as tg:
        ref, receive, _ = await summary_model_terminal(tg, tmp_path, 1.0, policy)
        chat = Chat(ref, receive, [])
        for text in ("first", "second", "third"):  # the window's compaction: the model fails
            await chat.turn(text)
        while not any(
            isinstance(o, Info) and o.text.startswith("warning: the summary model")
            for o in chat.seen
        ):
            await chat.next_of(Info)
        await chat.turn("fourth")
        await chat.turn("word " * 1500)  # over the budget alone: compacted offline first
        lines = await chat.compact()  # the model still down: offline again
        assert lines[-1].startswith("Compacted turn"), lines
        warnings = [
            o.text for o in chat.seen if isinstance(o, Info) and o.text.startswith("warning: the")
        ]
        assert len(warnings) == 1, warnings
        await chat.terminal.tell(Detach("exit"))
        server.released.set()
        tg.cancel_scope.cancel()


async def test_compact_again_of_a_window_no_summary_shortens_asks_no_summarizer(
    make_chat: ChatFactory, server: ChatServer
) -> None:
    """H189: ``/compact`` repeated on an unchanged window whose summary was no shorter asked
    the summary model each time (21 requests for 21 ``/compact``s). The answer for it
    stands while the window is unchanged; a new turn changes it, and the model is asked."""
    server.summary_answer = "The user and the assistant discussed the triage agent. " * 30
    chat: Chat = await make_chat()
    await chat.turn("hi")

    def asked() -> int:
        return sum(1 for r in server.requests if r["model"] == "summary-model")

    first = await chat.compact()
    assert first[-1].startswith("Not compacted: a summary"), first
    after_first = asked()
    assert after_first >= 1
    again = await chat.compact()
    assert asked() == after_first
    assert again[-1].startswith("Not compacted: a summary would not be shorter"), again
    assert again[-1].endswith("nothing changed since the last try"), again
    await chat.turn("and one more thing about the routing table")
    await chat.compact()
    assert asked() > after_first
    await chat.terminal.tell(Detach("exit"))
