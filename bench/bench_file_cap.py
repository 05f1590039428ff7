"""A session whose saved tail would pass the file cap, saved under it (H169).

Turns that each read ``--files`` files of 250 KB, the sliding window on (interval 5) with
the largest overlap (50) at the largest budget (10M tokens), compacted offline as they
come due, through ``SessionLifecycle`` with the production cap (``MAX_SESSION_BYTES``).
Prints the line the first trimming save carries, the tail held in memory against the file
``SessionManager.save`` wrote and the CPU of reading it back, a turn's CPU (the save's
trim included) at the start and at the end, and the peak resident set; then (H173) how
much the resident set of a new process rises as it reads the file back, against the
file's size. No target: the file must stay under the cap, and this says what it costs.

    python -m bench.bench_file_cap [--turns 30] [--files 40]
"""

from __future__ import annotations

import argparse
import resource
import statistics
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from bench.common import peak_rise
from session.compaction import EventsCompactionConfig, OfflineEventSummarizer, finish_compaction
from session.file_cap import MAX_SESSION_BYTES
from session.lifecycle import PersistPolicy, SessionLifecycle, WriteSession
from session.manager import SessionManager
from session.settings import MAX_COMPACTION_OVERLAP, MAX_CONTEXT_TOKENS

T0 = datetime(2026, 12, 7, tzinfo=UTC)
BODY = ("the routing table of the triage agent, one queue a line " * 4 + "\n") * 1100


def read_turn(n: int, files: int) -> list[ModelMessage]:
    ids = [f"c{n}_{i}" for i in range(files)]
    return [
        ModelRequest(parts=[UserPromptPart(f"question {n}: read part{n}_*.md", timestamp=T0)]),
        ModelResponse(
            parts=[ToolCallPart("read_file", {"path": f"{i}.md"}, i) for i in ids], timestamp=T0
        ),
        ModelRequest(parts=[ToolReturnPart("read_file", BODY, i, timestamp=T0) for i in ids]),
        ModelResponse(parts=[TextPart(f"answer {n}")], timestamp=T0),
    ]


def compacted(lc: SessionLifecycle) -> tuple[SessionLifecycle, WriteSession | None]:
    window = lc.compaction_due()
    if window is None:
        return lc, None
    compaction = finish_compaction(window, OfflineEventSummarizer().summarize(window.events))
    assert compaction is not None
    lc = lc.begin_compaction(window)
    done = lc.compacted(compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None)
    return done.lifecycle, next((e for e in done.effects if isinstance(e, WriteSession)), None)



def read_back_peak(directory: Path, session_id: str) -> int:
    """Bytes the peak resident set of a new process rose by as it read the session back
    (``load_for_resume``, what a resume and a re-attach after a crash do). Linux only."""
    call = f"load_for_resume({session_id!r})"
    return peak_rise("session.manager", "SessionManager", call, directory)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--files", type=int, default=40)
    args = parser.parse_args()
    compaction = EventsCompactionConfig(
        5, MAX_COMPACTION_OVERLAP, token_threshold=MAX_CONTEXT_TOKENS, event_retention_size=2
    )
    lc = SessionLifecycle(policy=PersistPolicy(compaction=compaction)).start_fresh(T0).lifecycle
    cpu = []
    write: WriteSession | None = None
    for n in range(1, args.turns + 1):
        started = time.process_time()
        done = lc.begin_turn(0).complete_turn(
            read_turn(n, args.files), now=T0, manifest={}, agent_spec_path=None
        )
        cpu.append(time.process_time() - started)
        write = next(e for e in done.effects if isinstance(e, WriteSession))
        lc, later = compacted(done.lifecycle)
        write = later or write
        if write.told:
            print(f"turn {n}: {write.told}")
    assert write is not None
    with tempfile.TemporaryDirectory() as tmp:
        manager = SessionManager(Path(tmp))
        size = manager.save(write.state, write.encoded).path.stat().st_size
        started = time.process_time()
        manager.load_for_resume(write.state.session_id)
        load = time.process_time() - started
        peak = read_back_peak(Path(tmp), write.state.session_id)
    print(
        f"tail in memory: {lc.history_encoded.nbytes() / 2**20:.0f} MiB; file "
        f"{size / 2**20:.1f} MiB (cap {MAX_SESSION_BYTES / 2**20:.0f}); read back: {load:.2f} s CPU"
    )
    print(
        f"read back in a new process (a supervisor's resume): peak {peak / 2**20:.0f} MiB "
        f"resident over its start, {peak / size:.2f}x the file"
    )
    print(
        f"a turn's CPU: {statistics.median(cpu[:5]):.2f} s (first 5), "
        f"{statistics.median(cpu[-5:]):.2f} s (last 5)"
    )
    print(f"peak resident set: {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")


if __name__ == "__main__":
    main()
