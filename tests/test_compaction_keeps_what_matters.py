"""Many turns at a small token budget, summarized offline, over a strict Chat Completions
server that reports no usage (the estimate is all the budget has): what the model is sent
at the last turn still names the files and rules of the first, and no request's body is
over the budget (a quarter of its bytes, as the server counts tokens)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.assistant import agent_chars
from actors.base import ActorRef, open_mailbox
from actors.compaction import CompactionActor
from actors.messages import OpenSession, TerminalOutput, TurnEnded, UserTurn
from actors.terminal import TerminalActor, TerminalConfig
from session.compaction import EventsCompactionConfig
from session.history import warm_up
from session.lifecycle import PersistPolicy
from session.paths import sessions_dir
from session.settings import MIN_CONTEXT_TOKENS
from tests.e2e.openai_server import ChatServer
from tests.workers import local_models, start_peers

pytestmark = pytest.mark.anyio

FIRST = (
    "Hi! We are building a support-ticket triage agent for our helpdesk, about two "
    "thousand tickets a day in three languages. The spec lives in docs/agent_spec.md and "
    "the prompts in prompts/triage.txt. Type hints are mandatory."
)


def later(n: int) -> str:
    """A turn naming two files of its own (and every fifth a rule of its own)."""
    return (
        f"Turn {n}: look at src/module_{n}.py and notes/n{n}.md, and tell me how the triage "
        "agent should route tickets by product, urgency and plan, in some detail. "
        + (f"Always tag tickets of queue {n} with q{n}. " if n % 5 == 0 else "")
    ) * 2


Chat = Callable[[list[str]], Any]


async def chat(
    tmp_path: Path, server: ChatServer, budget: int, prompts: list[str]
) -> list[dict[str, Any]]:
    """``prompts`` sent one turn each (the offline summarizer, interval 3, overlap 1, the
    token budget ``budget``); the chat requests the server got, each with its body's size
    as ``"bytes"``."""
    await anyio.to_thread.run_sync(warm_up)  # off the loop, as the supervisor does
    async with anyio.create_task_group() as tg:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        home = tmp_path / "home"
        peers = await start_peers(tg, home, compaction=lambda ref: CompactionActor(ref))
        compaction = EventsCompactionConfig(
            3, 1, token_threshold=budget, event_retention_size=4
        )
        config = TerminalConfig(
            terminal_pid=4242,
            terminal_start_time=None,
            workspace=workspace,
            project=sessions_dir(workspace, home),
            model="openai-chat:test-model",
            policy=PersistPolicy(compaction=compaction, agent_chars=agent_chars()),
        )
        send, receive = anyio.create_memory_object_stream[TerminalOutput](1024)
        ref: ActorRef[Any]
        ref, mailbox = open_mailbox("terminal-4242")
        tg.start_soon(TerminalActor(ref, config, peers, send).serve, mailbox)
        await ref.ask(OpenSession("new", None))
        for prompt in prompts:
            await ref.tell(UserTurn(prompt))
            await turn_ended(receive)
        tg.cancel_scope.cancel()
    sizes = zip(server.requests, server.body_bytes, strict=True)
    return [{**body, "bytes": size} for body, size in sizes if body["model"] == "test-model"]


async def turn_ended(outputs: MemoryObjectReceiveStream[TerminalOutput]) -> None:
    with anyio.fail_after(30):
        async for output in outputs:
            if isinstance(output, TurnEnded):
                assert output.status == "ok", output
                return


@pytest.fixture
async def server(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ChatServer]:
    with local_models(monkeypatch) as chat_server:
        yield chat_server


def summary_sent(request: dict[str, Any]) -> str:
    texts = [str(m.get("content")) for m in request["messages"]]
    return next((t for t in texts if t.startswith("<pyai:conversation_summary>")), "")


async def test_the_first_turns_files_and_rules_are_sent_at_the_sixtieth(
    tmp_path: Path, server: ChatServer
) -> None:
    """H153: after many compactions at a small budget, the files of the first turn were
    left out of the summary the model is sent (only the newest of 116 fit), though the
    session file kept them; the first rules would follow them out likewise."""
    budget = MIN_CONTEXT_TOKENS
    requests = await chat(tmp_path, server, budget, [FIRST, *map(later, range(2, 61))])
    last = requests[-1]
    summary = summary_sent(last)
    assert "Conversation so far (turns 1-" in summary
    assert "- docs/agent_spec.md" in summary and "- prompts/triage.txt" in summary
    assert "- src/module_59.py" in summary or "src/module_59.py" in json.dumps(last)
    instructions = " ".join(
        str(m["content"]) for m in last["messages"] if m["role"] == "system"
    )
    assert "- Type hints are mandatory." in instructions
    assert "- Always tag tickets of queue 55 with q55." in instructions
    # the summary sent stays within the compaction's share of the budget, whatever the turn
    sizes = [len(summary_sent(r)) for r in requests]
    assert max(sizes) <= budget * 4 // 4 + 240
    assert [r["bytes"] // 4 for r in requests if r["bytes"] // 4 > budget] == []


UNICODE = "Ünïcödé façade, naïve café: 日本語のテキストと絵文字 😀🚀 — «quotes» and \"escapes\"\\. "
QUOTED = 'He said "route it" then\n\t"escalate"\n' * 40


async def test_requests_of_every_shape_stay_within_a_budget_the_estimate_alone_keeps(
    tmp_path: Path, server: ChatServer
) -> None:
    """H146 then H153: with no usage from the server, requests went 0.1-5% over the budget
    (the estimate counted characters, not what the wire carries: JSON escapes, UTF-8
    bytes, the summary's framing, each tool call's id and type). Plain text, text in other
    scripts, quotes and newlines, tool calls, long tool returns and writes."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "big.md").write_text((UNICODE + QUOTED) * 6, encoding="utf-8")
    (workspace / "plain.md").write_text("routing table line\n" * 300, encoding="utf-8")
    shapes = [
        FIRST,
        UNICODE * 12,
        "read: big.md",
        QUOTED * 2,
        "read: plain.md",
        "write: notes/" + "ü" * 8 + ".md: " + UNICODE * 6,
        "decide: route by product, then urgency 🚦",
        later(8),
        "read all: big.md plain.md",
    ]
    budget = MIN_CONTEXT_TOKENS  # the smallest the settings allow: requests work there
    requests = await chat(tmp_path, server, budget, shapes * 4)
    assert len(requests) >= len(shapes) * 4
    over = [(n, r["bytes"] // 4) for n, r in enumerate(requests) if r["bytes"] // 4 > budget]
    assert over == []
