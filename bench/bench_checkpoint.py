"""Checkpoint and restore of 200 tracked files of 16 KB against copying the same bytes durably.

The limit, measured in the same run: copy each file (read it, write the copy,
fsync it) and fsync the directory once. A checkpoint reads and hashes the
files, writes each new content as a blob (temp file, fsync, rename), syncs the
blob directory once, then writes its entry durably; a restore checks each blob
against its name and replaces each file atomically. A second checkpoint with
nothing changed writes no blob. This is ``CheckpointStore``, the code the
StorageActor runs in a worker thread. Run:

    python -m bench.bench_checkpoint [--rounds N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from bench.common import timed
from session.manager import CheckpointStore
from session.models import SessionState

FILES = 200
FILE_BYTES = 16 * 1024
TARGET_RATIO = 2.0
TARGET_UNCHANGED = 0.10
CAP = 10**12
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def make_workspace(base: Path, generation: int) -> tuple[Path, list[str]]:
    """200 files of 16 KB under ``templates/``, with contents unique to ``generation``."""
    workspace = base / f"ws{generation}"
    (workspace / "templates").mkdir(parents=True)
    paths = []
    for n in range(FILES):
        relative = f"templates/t{n:03}.md"
        seed = f"generation {generation} file {n}\n".encode()
        (workspace / relative).write_bytes((seed * (FILE_BYTES // len(seed) + 1))[:FILE_BYTES])
        paths.append(relative)
    return workspace, paths


def copy_durably(workspace: Path, paths: list[str], target: Path) -> None:
    """The physical limit: the same bytes read, written and fsynced, one directory sync."""
    target.mkdir()
    for relative in paths:
        data = (workspace / relative).read_bytes()
        fd = os.open(target / relative.replace("/", "_"), os.O_WRONLY | os.O_CREAT, 0o600)
        os.write(fd, data)
        os.fsync(fd)
        os.close(fd)
    dfd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)


def measure_round(base: Path, generation: int) -> tuple[float, float, float, float]:
    """Seconds for: the durable copy, the first checkpoint, a second one with nothing
    changed, and the restore of every file after the user changed them all."""
    workspace, paths = make_workspace(base, generation)
    store = CheckpointStore(base / f"project{generation}")
    state = SessionState.new(NOW, f"{generation:012x}")
    copy = timed(lambda: copy_durably(workspace, paths, base / f"copy{generation}"))

    def checkpoint() -> object:
        return store.write(state, workspace, paths, reason="save", cap=CAP, now=NOW)

    first = timed(checkpoint)
    unchanged = timed(checkpoint)
    assert len(os.listdir(store.blobs_dir)) == FILES
    saved = store.load(state.session_id, 1)
    for relative in paths:  # the user changed every file since
        (workspace / relative).write_bytes(b"changed\n")
    restore = timed(lambda: store.restore_files(workspace, saved, paths))
    assert (workspace / paths[0]).read_bytes() == store.read_blob(saved.files[paths[0]])
    return copy, first, unchanged, restore


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    copy_s: list[float] = []
    first_s: list[float] = []
    unchanged_s: list[float] = []
    restore_s: list[float] = []
    base = Path(tempfile.mkdtemp(prefix="aa-bench-ckpt-"))
    try:
        for generation in range(args.rounds):
            one = measure_round(base, generation)
            for samples, value in zip((copy_s, first_s, unchanged_s, restore_s), one, strict=True):
                samples.append(value)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    copy = statistics.median(copy_s)
    first = statistics.median(first_s)
    unchanged = statistics.median(unchanged_s)
    restore = statistics.median(restore_s)
    size_mb = FILES * FILE_BYTES / 1e6
    print(f"{FILES} files of {FILE_BYTES // 1024} KB ({size_mb:.1f} MB), median of {args.rounds}")
    print(f"  copy with fsync (limit)     {copy * 1000:8.1f} ms")
    print(f"  first checkpoint            {first * 1000:8.1f} ms  {first / copy:5.2f}x the copy")
    print(
        f"  restore of every file       {restore * 1000:8.1f} ms  {restore / copy:5.2f}x the copy"
    )
    print(
        f"  checkpoint, nothing changed {unchanged * 1000:8.1f} ms  "
        f"{unchanged / first:6.1%} of the first (target < {TARGET_UNCHANGED:.0%})"
    )
    worst = max(first, restore) / copy
    ok = worst <= TARGET_RATIO and unchanged / first < TARGET_UNCHANGED
    print(
        f"worst ratio {worst:.2f}x (target <= {TARGET_RATIO}x), unchanged "
        f"{unchanged / first:.1%} (target < {TARGET_UNCHANGED:.0%}): "
        f"{'within' if ok else 'OVER'} target"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
