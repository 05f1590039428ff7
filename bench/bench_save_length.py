"""The save after turn 500 against the save after turn 5, compaction on (the defaults).

One session runs through ``SessionLifecycle`` as the TerminalActor drives it:
each turn is completed (two tool calls and a reply of a few hundred
characters), the sliding window's compaction is applied when it is due
(interval 10, overlap 2, summarized by the offline summarizer, as the
CompactionActor does without a summary model), and the turn's durable save
(``SessionManager.save`` of the turn's ``WriteSession``: encoding, write,
fsync, rename, directory fsync) is timed at turn 5 and at turn 500. With
compaction the file holds a bounded tail and one compaction, so the late save
should cost about what the early one does. Target: within 1.2x.

    python -m bench.bench_save_length [--turns N] [--repeat N]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import ratio_verdict
from session.compaction import EventsCompactionConfig, OfflineEventSummarizer, finish_compaction
from session.lifecycle import PersistPolicy, SessionLifecycle, WriteSession
from session.manager import SessionManager
from tests.conversations import turn

TARGET_RATIO = 1.2
EARLY_TURN = 5
DEFAULT_INTERVAL = 10
DEFAULT_OVERLAP = 2
RETENTION_EVENTS = 4
T0 = datetime(2026, 12, 1, tzinfo=UTC)
ROUNDS = 5


def reply(index: int) -> str:
    return f"answer {index}: " + "the agent reads the ticket, picks a queue and explains why. " * 5


def median_save_ms(manager: SessionManager, effect: WriteSession, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        manager.save(effect.state, effect.encoded)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def session_saves(turns: int, directory: Path) -> dict[int, WriteSession]:
    """The WriteSession of every turn of one session, compacting as the defaults do."""
    manager = SessionManager(directory)
    config = EventsCompactionConfig(
        DEFAULT_INTERVAL, DEFAULT_OVERLAP, event_retention_size=RETENTION_EVENTS
    )
    lc = SessionLifecycle(policy=PersistPolicy(compaction=config))
    lc = lc.start_fresh(T0).lifecycle
    summarizer = OfflineEventSummarizer()
    saves: dict[int, WriteSession] = {}
    for index in range(1, turns + 1):
        now = T0 + timedelta(minutes=index)
        transition = lc.begin_turn(0).complete_turn(
            turn(index, 2, reply(index)), now=now, manifest={}, agent_spec_path=None
        )
        lc = transition.lifecycle
        (saves[index],) = [e for e in transition.effects if isinstance(e, WriteSession)]
        manager.save(saves[index].state, saves[index].encoded)
        window = lc.compaction_due()
        if window is not None:
            lc = lc.begin_compaction(window)
            compaction = finish_compaction(window, summarizer.summarize(window.events))
            assert compaction is not None
            lc = lc.compacted(
                compaction, lc.generation, now=now, manifest={}, agent_spec_path=None
            ).lifecycle
    return saves


def run(turns: int, repeat: int, directory: Path) -> tuple[float, float, int, int]:
    """Median save ms at turn 5 and at the last turn, and the file's bytes at each.
    The two take turns in rounds, so that a busy disk (a shared machine) hits both alike."""
    saves = session_saves(turns, directory)
    manager = SessionManager(directory)
    early: list[float] = []
    late: list[float] = []
    sizes = {}
    for _ in range(ROUNDS):
        for index, samples in ((EARLY_TURN, early), (turns, late)):
            samples.append(median_save_ms(manager, saves[index], repeat // ROUNDS))
            sizes[index] = manager.session_path(saves[index].state.session_id).stat().st_size
    return statistics.median(early), statistics.median(late), sizes[EARLY_TURN], sizes[turns]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=100)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        early, late, early_size, late_size = run(args.turns, args.repeat, Path(tmp) / "sessions")
    print(f"save after turn {EARLY_TURN} (limit)   {early:7.3f} ms   ({early_size} bytes)")
    print(f"save after turn {args.turns}         {late:7.3f} ms   ({late_size} bytes)")
    print(ratio_verdict(late / early, TARGET_RATIO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
