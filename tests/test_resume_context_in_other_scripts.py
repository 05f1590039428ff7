"""A session whose decisions and turns are in another script (Chinese: three bytes a
character on the wire), resumed at a small token budget over the strict local server that
reports no usage: the first request after the resume stays within the budget."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.assistant import agent_chars
from actors.base import ActorRef, open_mailbox
from actors.compaction import CompactionActor
from actors.messages import OpenSession, TerminalOutput, UserTurn
from actors.terminal import TerminalActor, TerminalConfig
from session.compaction import EventsCompactionConfig
from session.history import warm_up
from session.lifecycle import PersistPolicy
from session.paths import sessions_dir
from session.settings import MIN_CONTEXT_TOKENS
from tests.e2e.openai_server import ChatServer
from tests.test_compaction_keeps_what_matters import server, turn_ended
from tests.workers import start_peers

pytestmark = pytest.mark.anyio

__all__ = ["server"]

CHINESE = "我们正在为客服中心构建一个工单分类代理, 每天处理大约两千张工单, 支持三种语言。"


def decision(n: int) -> str:
    return f"decide: 第{n}条规则: {CHINESE}所有紧急工单必须在一小时内转给值班工程师。"


async def session_turns(
    tmp_path: Path, budget: int, prompts: list[str], session_id: str | None
) -> str:
    """``prompts`` sent one turn each in a new session (``session_id`` None) or in
    ``session_id`` resumed, by a terminal of its own; the session's id."""
    await anyio.to_thread.run_sync(warm_up)  # off the loop, as the supervisor does
    async with anyio.create_task_group() as tg:
        workspace = tmp_path / "ws"
        workspace.mkdir(exist_ok=True)
        home = tmp_path / "home"
        peers = await start_peers(tg, home, compaction=lambda ref: CompactionActor(ref))
        compaction = EventsCompactionConfig(3, 1, token_threshold=budget, event_retention_size=4)
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
        if session_id is None:
            opened = await ref.ask(OpenSession("new", None))
        else:
            opened = await ref.ask(OpenSession("resume", session_id))
        for prompt in prompts:
            await ref.tell(UserTurn(prompt))
            await turn_ended(receive)
        tg.cancel_scope.cancel()
    return opened.session_id


async def test_a_resume_context_in_chinese_keeps_the_first_request_within_the_budget(
    tmp_path: Path, server: ChatServer
) -> None:
    """The resume context was held to its share of the budget in characters, and the
    resume weighed it in characters, while the request is held to the budget in the bytes
    the wire carries: a context in Chinese (a third of its weight counted) took the
    resumed session's first request over the budget."""
    budget = MIN_CONTEXT_TOKENS
    prompts = [decision(n) for n in range(1, 25)]
    session_id = await session_turns(tmp_path, budget, prompts, None)
    before = len(server.requests)
    await session_turns(tmp_path, budget, ["继续: " + CHINESE], session_id)
    sizes = zip(server.requests[before:], server.body_bytes[before:], strict=True)
    first = next(size for body, size in sizes if body["model"] == "test-model")
    assert first // 4 <= budget
