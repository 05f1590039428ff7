"""Checkpoint and restore of 200 tracked files of 16 KB against copying the same bytes durably.

The limit, measured in the same run: copy each file (read it, write the copy,
fsync it) and fsync the directory once. A checkpoint reads and hashes the
files, writes each new content as a blob (temp file, fsync, rename), syncs the
blob directory once, then writes its entry durably; a restore checks each blob
against its name and replaces each file atomically. A second checkpoint with
nothing changed writes no blob. This is ``CheckpointStore``, the code the
StorageActor runs in a worker thread.

The big session (H172): ``--big-turns`` turns that each read 40 files of 250 KB (7: a
70 MB conversation), built by ``SessionLifecycle`` as a chat builds it, checkpointed as
``/save`` and the automatic checkpoint order it (the save's scrubbed encoding spliced):
the first checkpoint, one with nothing changed, and one after a small turn, against a
durable write of the same bytes (the entry). Then (H173) the first entry read back by a
new store (a restore after a supervisor restart) and the three listed (``/checkpoint``),
against ``orjson.loads`` of the entry's bytes, and how much the resident set of a new
process rises as it reads the entry back, against the entry's size. Wall and CPU time,
median of ``--rounds``.
Run:

    python -m bench.bench_checkpoint [--rounds N] [--big-turns 7]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import orjson

from bench.bench_file_cap import read_turn
from bench.common import peak_rise, timed
from session.checkpoints import Reason, entry_name
from session.lifecycle import PersistPolicy, SessionLifecycle, WriteSession
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


def big_session(turns: int) -> tuple[WriteSession, WriteSession]:
    """What ``/save`` of a session of ``turns`` turns of 40 files of 250 KB writes, and what
    it writes after one more small turn."""
    policy = PersistPolicy(max_turns=None, max_chars=None)
    lc = SessionLifecycle(policy=policy).start_fresh(NOW).lifecycle
    for n in range(1, turns + 1):
        done = lc.begin_turn(0).complete_turn(
            read_turn(n, 40), now=NOW, manifest={}, agent_spec_path=None
        )
        lc = done.lifecycle
    before = lc.write(NOW, {}, None)
    done = lc.begin_turn(0).complete_turn(
        read_turn(turns + 1, 1), now=NOW, manifest={}, agent_spec_path=None
    )
    return before, done.lifecycle.write(NOW, {}, None)


def cpu_and_wall(fn: Callable[[], object]) -> tuple[float, float]:
    cpu, wall = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - cpu, time.perf_counter() - wall


def measure_big(base: Path, turns: int, generation: int) -> dict[str, tuple[float, float]]:
    """(CPU, wall) seconds of: the durable copy of the first entry's bytes, the first
    checkpoint, one with nothing changed, one after a small turn."""
    workspace = base / f"big{generation}"
    workspace.mkdir()
    (workspace / "agent_spec.md").write_text("# spec\n")
    store = CheckpointStore(base / f"big-project{generation}")
    first, later = big_session(turns)

    def checkpoint(write: WriteSession, reason: Reason) -> object:
        return store.write_unless_unchanged(
            write.state, workspace, ["agent_spec.md"], reason=reason, cap=CAP, now=NOW,
            encoded=write.encoded,
        )

    out = {"first": cpu_and_wall(lambda: checkpoint(first, "save"))}
    out["unchanged"] = cpu_and_wall(lambda: checkpoint(first, "auto"))
    out["after a turn"] = cpu_and_wall(lambda: checkpoint(later, "auto"))
    entry = (store.session_dir(first.state.session_id) / entry_name(1)).read_bytes()
    out["copy"] = cpu_and_wall(lambda: durable_write(base / f"big-copy{generation}", entry))
    project, session_id = base / f"big-project{generation}", first.state.session_id
    out["parse"] = cpu_and_wall(lambda: orjson.loads(entry))
    out["read back"] = cpu_and_wall(lambda: CheckpointStore(project).load(session_id, 1))
    out["listing"] = cpu_and_wall(lambda: CheckpointStore(project).listed(session_id))
    out["peak"] = (read_back_peak(project, session_id) / len(entry), 0.0)
    return out



def read_back_peak(project: Path, session_id: str) -> int:
    """Bytes the peak resident set of a new process rose by as it read entry 1 back (a
    restore after a supervisor restart). Linux only."""
    return peak_rise("session.manager", "CheckpointStore", f"load({session_id!r}, 1)", project)


def durable_write(path: Path, data: bytes) -> None:
    """The limit: the bytes written, fsynced, and the directory synced."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)


def report_big(rounds: list[dict[str, tuple[float, float]]], turns: int) -> None:
    def median(row: str, which: int) -> float:
        return statistics.median(r[row][which] for r in rounds)

    copy = median("copy", 1)
    print(f"big session: {turns} turns of 40 files of 250 KB, median of {len(rounds)}")
    print(f"  durable write of the entry (limit) {copy * 1000:8.1f} ms wall")
    for row in ("first", "unchanged", "after a turn"):
        wall, cpu = median(row, 1), median(row, 0)
        print(
            f"  checkpoint, {row:<13} {wall * 1000:8.1f} ms wall {cpu * 1000:8.1f} ms CPU"
            f"  {wall / copy:5.2f}x the copy"
        )
    parse = median("parse", 0)
    print(f"  orjson.loads of the entry (limit) {parse * 1000:8.1f} ms CPU")
    for row in ("read back", "listing"):
        cpu = median(row, 0)
        label = f"{row}, a new store"
        print(f"  {label:<28} {cpu * 1000:8.1f} ms CPU  {cpu / parse:5.2f}x the parse")
    print(f"  read back in a new process: peak resident set {median('peak', 0):.2f}x the entry")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--big-turns", type=int, default=7, help="0: no big session")
    parser.add_argument("--big-rounds", type=int, default=3)
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
        rounds = args.big_rounds if args.big_turns > 0 else 0
        big = [measure_big(base, args.big_turns, g) for g in range(rounds)]
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
    if big:
        report_big(big, args.big_turns)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
