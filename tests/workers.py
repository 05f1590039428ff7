"""The four worker actors a TerminalActor talks to, and a TerminalActor with them, started
for in-process tests."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pydantic_ai.models
import pytest
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.compaction import CompactionActor
from actors.drift import DriftWatcherActor
from actors.llm import LLMActor
from actors.messages import OpenSession, TerminalOutput
from actors.storage import StorageActor
from actors.terminal import Peers, TerminalActor, TerminalConfig
from session.compaction import EventsCompactionConfig
from session.history import warm_up
from session.lifecycle import PersistPolicy
from session.paths import sessions_dir
from tests.e2e.openai_server import ChatServer


async def start_peers(
    tg: TaskGroup,
    home: Path,
    *,
    compaction: Callable[[ActorRef[Any]], CompactionActor] = CompactionActor,
    drift: Callable[[ActorRef[Any]], DriftWatcherActor] = DriftWatcherActor,
) -> Peers:
    """Storage, LLM, compaction and drift actors, each supervised in ``tg``, as the
    supervisor starts them; ``compaction`` and ``drift`` build those actors."""
    return Peers(
        storage=await tg.start(partial(run_supervised, "storage", lambda _: StorageActor(home))),
        llm=await tg.start(partial(run_supervised, "llm", lambda _: LLMActor())),
        compaction=await tg.start(partial(run_supervised, "compaction", compaction)),
        drift=await tg.start(partial(run_supervised, "drift", drift)),
    )


SUMMARY_MODEL = "openai-chat:summary-model"
"""The local server's summary model (``tests/e2e/openai_server.py``)."""


@contextmanager
def local_models(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    """The local OpenAI-compatible server, which the environment points the models at."""
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as chat_server:
        monkeypatch.setenv("OPENAI_BASE_URL", chat_server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        yield chat_server


async def summary_model_terminal(
    tg: TaskGroup, root: Path, llm_timeout: float, policy: PersistPolicy | None = None
) -> tuple[ActorRef[Any], MemoryObjectReceiveStream[TerminalOutput], Path]:
    """A TerminalActor with a new session, in ``root``, whose chat and summary models are
    the local server's (by default compaction only when asked: ``/compact``, and no token
    budget; else ``policy``'s), with the real worker actors in ``tg``; the terminal, what
    it tells its terminal, and its project."""
    await anyio.to_thread.run_sync(warm_up)  # as a supervisor does, off its loop
    workspace = root / "ws"
    workspace.mkdir()
    home = root / "home"
    peers = await start_peers(
        tg,
        home,
        compaction=lambda ref: CompactionActor(
            ref, summary_model=SUMMARY_MODEL, llm_timeouts=(llm_timeout, llm_timeout)
        ),
    )
    config = TerminalConfig(
        terminal_pid=4242,
        terminal_start_time=None,
        workspace=workspace,
        project=sessions_dir(workspace, home),
        model="openai-chat:test-model",  # it answers "echo: <the message>"
        policy=policy or PersistPolicy(compaction=EventsCompactionConfig(0, 0)),
        summary_model=SUMMARY_MODEL,
    )
    send, receive = anyio.create_memory_object_stream[TerminalOutput](256)
    ref: ActorRef[Any]
    ref, mailbox = open_mailbox("terminal-4242")
    tg.start_soon(TerminalActor(ref, config, peers, send).serve, mailbox)
    await ref.ask(OpenSession("new", None))
    return ref, receive, config.project
