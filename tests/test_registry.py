"""The registry of attached terminals: one attach at a time per terminal pid."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.base import ActorRef
from actors.messages import TerminalOutput
from actors.terminal import TerminalConfig
from session.paths import sessions_dir
from supervisor.registry import Registry, TerminalBusy
from tests.workers import start_peers

pytestmark = pytest.mark.anyio


async def test_two_connections_of_one_pid_cannot_both_attach(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    config = TerminalConfig(
        terminal_pid=4242,
        terminal_start_time=None,
        workspace=workspace,
        project=sessions_dir(workspace, home),
        model="offline",
    )
    async with anyio.create_task_group() as tg:
        peers = await start_peers(tg, home)
        registry = Registry(tg, peers)
        first = await registry.attach(
            config, anyio.create_memory_object_stream[TerminalOutput](64)[0]
        )
        await registry.detach(4242, first, "exit")  # that terminal leaves; a new one comes

        outcomes: list[ActorRef[Any] | str] = []
        refusals: list[str] = []

        async def attach() -> None:
            send, _ = anyio.create_memory_object_stream[TerminalOutput](64)
            try:
                outcomes.append(await registry.attach(config, send))
            except TerminalBusy as busy:
                outcomes.append("busy")
                refusals.append(str(busy))

        async with anyio.create_task_group() as racing:
            racing.start_soon(attach)
            racing.start_soon(attach)
        assert sorted(o if isinstance(o, str) else "attached" for o in outcomes) == [
            "attached",
            "busy",
        ]
        assert registry.attached == 1
        (refusal,) = refusals  # H49: the variable was set already, to this very number
        assert refusal.endswith(
            "set AGENT_ASSIST_TERMINAL_PID to another number to run a second one"
        )
        tg.cancel_scope.cancel()
