"""Many owners of one workspace at the DriftWatcherActor: the work counted, not timed.

``--owners`` owners (terminals) watch the same workspace's tracked files, then all but one
leave. Printed: the actor's hops to a worker thread (``_watch_targets``: looking at the
watched directories; ``_digests``: hashing a batch of files) for the attaches and for the
leaving, and this process's CPU for each (in process: no supervisor, no socket).

Run:

    python -m bench.drift_owners [--owners N]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.drift import DriftWatcherActor
from actors.messages import Unwatch, Watch
from session.filesystem import sha256_file

TRACKED = ("agent_spec.md", "src/a.md", "src/b.md")


async def measure(owners: int) -> list[str]:
    hops: list[str] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        hops.append(func.__name__)
        return await run_sync(func, *args, **kwargs)

    anyio.to_thread.run_sync = counted  # type: ignore[assignment]
    lines = []
    with tempfile.TemporaryDirectory() as directory:
        workspace = Path(directory)
        (workspace / "src").mkdir()
        manifest: dict[str, str] = {}
        for relative in TRACKED:
            (workspace / relative).write_text(f"{relative}\n")
            manifest[relative] = sha256_file(workspace / relative) or ""
        terminal: ActorRef[Any]
        terminal, _ = open_mailbox("terminal")
        async with anyio.create_task_group() as tg:
            drift: ActorRef[Any] = await tg.start(
                partial(run_supervised, "drift", lambda ref: DriftWatcherActor(ref))
            )
            start = time.process_time()
            for owner in range(1, owners + 1):
                await drift.tell(Watch(owner, workspace, manifest, terminal))
            await drift.ask(Watch(owners, workspace, manifest, terminal))
            await anyio.sleep(0.5)  # the attaches' settles (SETTLE_S) end
            attached = time.process_time()
            lines.append(
                f"{owners} attaches: {hops.count('_watch_targets')} _watch_targets hops, "
                f"{hops.count('_digests')} _digests hops, CPU {attached - start:.3f} s"
            )
            hops.clear()
            for owner in range(2, owners + 1):
                await drift.tell(Unwatch(owner))
            await drift.ask(Watch(1, workspace, manifest, terminal))  # taken after them
            left = time.process_time()
            lines.append(
                f"{owners - 1} leaving: {len(hops)} thread hops "
                f"({hops.count('_watch_targets')} _watch_targets), CPU {left - attached:.3f} s"
            )
            tg.cancel_scope.cancel()
    anyio.to_thread.run_sync = run_sync
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--owners", type=int, default=500)
    args = parser.parse_args()
    for line in anyio.run(measure, args.owners):
        print(line)


if __name__ == "__main__":
    main()
