"""Listing a project's sessions, cold and warm, against the file system's own cost.

A project with ``--sessions`` sessions of 20 turns each. A cold listing (a
fresh ``SessionManager``, as in a new supervisor or the CLI without one) finds
the headers of unchanged files in ``headers.index`` (checked against a stat of
every file, never trusted over it) and reads in full only the files that
changed: its limit is reading every file's bytes. Target: within 2x. Also
shown: the cold listing with no index (every file parsed, the index rebuilt)
and the warm listing (the supervisor's, on every attach and ``sessions``
request), whose limit is listing the directory and a stat of each file.

The index is written where the product writes it: by a chat's start, whose listing
(``set_aside="move"``) may change files; ``sessions`` and the other read-only
commands write none (H123). Until 2026-12-06 this bench built it by a read-only
listing, which since H123 writes no index, so its "cold listing" read every file in
full (21x) like the "no index" row.

    python -m bench.bench_list [--sessions N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

from bench.common import median_ms, ratio_verdict, timed
from session.header_index import INDEX_NAME
from session.history import dump_messages
from session.manager import SessionManager
from session.models import SessionState, utc_now
from tests.conversations import conversation

REPEAT = 15
TARGET_RATIO = 2.0


def make_project(directory: Path, sessions: int) -> None:
    manager = SessionManager(directory)
    messages = tuple(dump_messages(conversation(0, 20, 1)))
    for number in range(sessions):
        state = SessionState.new(utc_now()).model_copy(
            update={"recent_messages": messages, "summary": f"session {number}"}
        )
        manager.save(state)


def read_every_file(directory: Path) -> None:
    for name in os.listdir(directory):
        (directory / name).read_bytes()


def stat_every_file(directory: Path) -> None:
    for name in os.listdir(directory):
        os.stat(directory / name, follow_symlinks=False)


def as_a_chat_starts(directory: Path) -> None:
    """A chat's start lists the project as it does: writing ``headers.index``."""
    SessionManager(directory).list_sessions(set_aside="move")


def without_index(directory: Path) -> None:
    (directory / INDEX_NAME).unlink(missing_ok=True)
    as_a_chat_starts(directory)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp) / "sessions"
        make_project(directory, args.sessions)
        as_a_chat_starts(directory)
        cold, rebuild, read_limit, warm, stat_limit = [], [], [], [], []
        warm_manager = SessionManager(directory)
        warm_manager.list_sessions()
        for _ in range(REPEAT):
            read_limit.append(timed(lambda: read_every_file(directory)))
            cold.append(timed(SessionManager(directory).list_sessions))
            rebuild.append(timed(lambda: without_index(directory)))
            warm.append(timed(warm_manager.list_sessions))
            stat_limit.append(timed(lambda: stat_every_file(directory)))
    print(f"{args.sessions} sessions of 20 turns")
    for label, ours, limit_label, limit in (
        ("cold listing", cold, "reading every file", read_limit),
        ("cold, no index", rebuild, "reading every file", read_limit),
        ("warm listing", warm, "a stat of every file", stat_limit),
    ):
        print(
            f"{label:15} {median_ms(ours):7.1f} ms   {limit_label:20} {median_ms(limit):6.1f} ms"
            f"   ratio {median_ms(ours) / median_ms(limit):4.1f}x"
        )
    print("cold listing: " + ratio_verdict(median_ms(cold) / median_ms(read_limit), TARGET_RATIO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
