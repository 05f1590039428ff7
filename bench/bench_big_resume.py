"""The resume of a long uncompacted session file: its offer, its load and its resume's CPU.

A file of ``--turns`` turns (a prompt and a reply of ``--chars`` characters naming a path,
stamped as this version stamps them) is written by the project's own writer
(``SessionManager.save``) with no compaction in it, as an older version or a session kept
with compaction off would leave it; then it is read as a resume reads it
(``load_for_resume``) and resumed by ``SessionLifecycle`` with the sliding window on and
the offline model's budget (16,384 tokens): the tail over the budget is compacted offline
at once (``_compacted_at_resume``). CPU time of the process (``time.process_time``), the
best of ``--repeat`` rounds, and the peak resident set. No target: a resume must not hang,
and this says what it costs.

    python -m bench.bench_big_resume [--turns 5000] [--chars 1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from pydantic_ai.messages import ModelMessage

from session.compaction import EventsCompactionConfig
from session.history import dump_messages
from session.lifecycle import PersistPolicy, SessionLifecycle
from session.manager import SessionManager
from session.models import SessionState
from session.turns import stamp_turn
from tests.conversations import turn

T0 = datetime(2026, 12, 1, tzinfo=UTC)
SESSION_ID = "a1b2c3d4e5f6"
BUDGET = 16_384


def write_session(directory: Path, turns: int, chars: int) -> Path:
    """A session file of ``turns`` turns, written by ``SessionManager.save``."""
    text = ("We route every ticket by intent and priority; see docs/spec.md. " * chars)[:chars]
    messages: list[ModelMessage] = []
    for index in range(turns):
        messages += stamp_turn(turn(index, text=f"turn {index}: {text}"), index + 1, None)
    state = SessionState(
        session_id=SESSION_ID,
        created_at=T0,
        updated_at=T0,
        summary="A long session",
        recent_messages=tuple(dump_messages(messages)),
    )
    manager = SessionManager(directory)
    manager.save(state)
    return manager.session_path(SESSION_ID)


def resume_cpu(directory: Path) -> tuple[float, float]:
    """CPU seconds of the load and of the resume."""
    manager = SessionManager(directory)
    started = time.process_time()
    stored = manager.load_for_resume(SESSION_ID)
    loaded = time.process_time()
    compaction = EventsCompactionConfig(10, 2, token_threshold=BUDGET, event_retention_size=4)
    SessionLifecycle(policy=PersistPolicy(compaction=compaction)).resume(stored, None)
    return loaded - started, time.process_time() - loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--chars", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = write_session(Path(tmp), args.turns, args.chars)
        print(f"session file: {args.turns:,} turns, {path.stat().st_size / 1e6:.1f} MB")
        rounds = [resume_cpu(Path(tmp)) for _ in range(args.repeat)]
    load = min(r[0] for r in rounds)
    resume = min(r[1] for r in rounds)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"load for resume: {load:.2f} s CPU; resume (compacting the tail): {resume:.2f} s CPU")
    print(f"peak resident set: {peak:.0f} MB")


if __name__ == "__main__":
    main()
