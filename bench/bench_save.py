"""Durable session save against the raw limit measured in the same run.

The limit is what the disk asks for the same bytes: write a temp file, fsync,
rename over the target, fsync the directory. Two saves are timed:

* the turn's save, as the TerminalActor asks for it after every turn: each
  message was scrubbed and encoded once, when its turn joined the history
  (``SessionLifecycle`` keeps them in ``EncodedMessages``), so the save encodes
  the other fields and writes the messages' chunks as they are, with one
  ``writev``. Target: within 1.2x.

The three are timed one after the other, round after round, and each is the
median of its rounds: the disk's speed drifts on this shared VM, and blocks of
one kind after the other swung the ratio by 0.2 between runs.
* the whole save, encoding every message again (``SessionManager.save(state)``,
  as a resume or ``/save`` without kept encodings would), shown for scale.

    python -m bench.bench_save [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from bench.common import ratio_verdict
from session.encoded import EncodedMessages
from session.manager import SessionManager, encode_state
from session.models import SessionState

SIZES = {"4 KB": 4 * 1024, "64 KB": 64 * 1024, "1 MB": 1024 * 1024}
TARGET_RATIO = 1.2


def state_of_size(target: int) -> SessionState:
    """A session whose file is about ``target`` bytes, made of realistic message dicts."""
    now = datetime(2026, 11, 29, tzinfo=UTC)
    message: dict[str, object] = {
        "kind": "request",
        "parts": [{"part_kind": "user-prompt", "content": "x" * 200, "timestamp": now.isoformat()}],
    }
    base = SessionState.new(now, "be0c4be0c4be")
    messages: list[dict[str, object]] = []
    while len(encode_state(base.model_copy(update={"recent_messages": tuple(messages)}))) < target:
        messages.append(message)
    return base.model_copy(update={"recent_messages": tuple(messages)})


def as_the_turns_kept_it(state: SessionState) -> EncodedMessages:
    """``state``'s messages encoded as a ``SessionLifecycle`` keeps them: each turn's
    (here a request and its response) appended when the turn completed."""
    encoded = EncodedMessages()
    messages = state.recent_messages
    for start in range(0, len(messages), 2):
        encoded += EncodedMessages.scrub(messages[start : start + 2], ())
    return encoded


def raw_durable_write(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".raw-tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.write(fd, data)
    os.fsync(fd)
    os.close(fd)
    os.replace(tmp, path)
    dfd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
    os.fsync(dfd)
    os.close(dfd)


def timed_ms(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=300)
    args = parser.parse_args()
    print(
        f"{'size':>6} {'raw ms':>8} {'turn ms':>8} {'ratio':>6} {'whole ms':>9} {'ratio':>6}"
        f"  (target <= {TARGET_RATIO}x, the turn's save)"
    )
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        manager = SessionManager(Path(tmp) / "sessions")
        for label, size in SIZES.items():
            state = state_of_size(size)
            data = encode_state(state)
            encoded = as_the_turns_kept_it(state)
            assert encode_state(state, encoded) == data
            raw_path = Path(tmp) / "raw.json"
            manager.save(state)
            raw_ms: list[float] = []
            turn_ms: list[float] = []
            whole_ms: list[float] = []
            for _ in range(args.repeat):  # one of each in turn, so drift hits all alike
                raw_ms.append(timed_ms(partial(raw_durable_write, raw_path, data)))
                turn_ms.append(timed_ms(partial(manager.save, state, encoded)))
                whole_ms.append(timed_ms(partial(manager.save, state)))
            raw = statistics.median(raw_ms)
            turn, whole = statistics.median(turn_ms), statistics.median(whole_ms)
            worst = max(worst, turn / raw)
            print(
                f"{label:>6} {raw:8.3f} {turn:8.3f} {turn / raw:5.2f}x {whole:9.3f} "
                f"{whole / raw:5.2f}x  ({len(data)} bytes)"
            )
    print(f"worst ratio of the turn's save {worst:.2f}x: " + ratio_verdict(worst, TARGET_RATIO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
