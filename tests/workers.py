"""The four worker actors a TerminalActor talks to, started for in-process tests."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from anyio.abc import TaskGroup

from actors.base import ActorRef, run_supervised
from actors.compaction import CompactionActor
from actors.drift import DriftWatcherActor
from actors.llm import LLMActor
from actors.storage import StorageActor
from actors.terminal import Peers


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
