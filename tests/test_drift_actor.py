"""DriftWatcherActor: what it watches survives a restart of the actor."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.drift import DriftWatcherActor, WatchedFiles
from actors.messages import FilesChanged, Watch
from session.filesystem import sha256_file

pytestmark = pytest.mark.anyio


class Crashes(DriftWatcherActor):
    async def handle(self, message: Any) -> Any:
        if message == "crash":
            raise RuntimeError("a bug in the actor")
        return await super().handle(message)


async def test_a_restarted_watcher_watches_the_same_files_again(tmp_path: Path) -> None:
    """A crash ended live drift notices for every session, silently."""
    spec = tmp_path / "agent_spec.md"
    spec.write_text("v1\n")
    digest = sha256_file(spec)
    assert digest is not None
    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    watched = WatchedFiles()
    async with anyio.create_task_group() as tg:
        drift: ActorRef[Any] = await tg.start(
            partial(run_supervised, "drift", lambda ref: Crashes(ref, watched=watched))
        )
        await drift.tell(Watch(1, tmp_path, {"agent_spec.md": digest}, terminal))
        await drift.tell("crash")  # after the watch: the mailbox is taken in order
        await anyio.wait_all_tasks_blocked()
        spec.write_text("v2, by hand\n")
        with anyio.fail_after(10):
            told = (await inbox.receive()).message
        assert told == FilesChanged(("agent_spec.md",))
        tg.cancel_scope.cancel()
