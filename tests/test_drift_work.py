"""DriftWatcherActor: the work many owners of one workspace cost is counted, not timed."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.drift import DriftWatcherActor
from actors.messages import Settle, Unwatch, Watch
from session.filesystem import sha256_file

pytestmark = pytest.mark.anyio
OWNERS = 20


def written(path: Path, text: str) -> str:
    path.write_text(text)
    digest = sha256_file(path)
    assert digest is not None
    return digest


class CountsSettles(DriftWatcherActor):
    settles = 0

    async def handle(self, message: Any) -> Any:
        if isinstance(message, Settle):
            CountsSettles.settles += 1
        return await super().handle(message)


def counting_hops(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the functions the actor runs in worker threads, in order."""
    hops: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        hops.append(getattr(func, "__name__", repr(func)))
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    return hops


async def test_an_unwatch_that_leaves_the_watches_as_they_were_makes_no_thread_hop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """500 terminals of one workspace leaving worked out every remaining owner's layout
    again and looked at the disk in a thread, each of them: the stop's quadratic part."""
    (tmp_path / "sub").mkdir()
    manifest = {"agent_spec.md": written(tmp_path / "agent_spec.md", "s\n")}
    manifest["sub/f.md"] = written(tmp_path / "sub" / "f.md", "f\n")
    terminal: ActorRef[Any]
    terminal, _ = open_mailbox("terminal")
    async with anyio.create_task_group() as tg:
        drift: ActorRef[Any] = await tg.start(
            partial(run_supervised, "drift", lambda ref: DriftWatcherActor(ref))
        )
        for owner in range(1, OWNERS + 1):
            await drift.ask(Watch(owner, tmp_path, manifest, terminal))
        hops = counting_hops(monkeypatch)
        for owner in range(2, OWNERS + 1):
            await drift.tell(Unwatch(owner))
        await drift.ask(Watch(1, tmp_path, manifest, terminal))  # taken after them
        assert hops == [], "owner 1 still watches the same directories"
        tg.cancel_scope.cancel()


async def test_owners_of_one_workspace_have_its_changed_file_hashed_once_a_settle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At attach, each settle hashed the workspace's tracked files once per owner: 500
    terminals of one workspace made 39,601 hash hops in their 500 attaches."""
    spec = tmp_path / "agent_spec.md"
    manifest = {"agent_spec.md": written(spec, "v1\n")}
    CountsSettles.settles = 0
    async with anyio.create_task_group() as tg:
        drift: ActorRef[Any] = await tg.start(
            partial(run_supervised, "drift", lambda ref: CountsSettles(ref))
        )
        hops = counting_hops(monkeypatch)
        inboxes = []
        for owner in range(1, OWNERS + 1):
            terminal: ActorRef[Any]
            terminal, inbox = open_mailbox("terminal")
            inboxes.append(inbox)
            await drift.ask(Watch(owner, tmp_path, manifest, terminal))
        spec.write_text("v2, by hand\n")
        with anyio.fail_after(10):
            for inbox in inboxes:
                assert (await inbox.receive()).message.paths == ("agent_spec.md",)
        hashes = hops.count("_digests")
        assert hashes <= CountsSettles.settles + 1, f"{hashes} hash hops"
        tg.cancel_scope.cancel()
