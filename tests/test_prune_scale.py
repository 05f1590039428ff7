"""``sessions prune`` of many sessions reads each pointer file a bounded number of times:
each removed session read every pointer of its directory again, so a prune of hundreds
of sessions took seconds (7.5 s for 323) and grew with the square of their number, with
every save of every terminal waiting behind it in the StorageActor. And the pointers of
gone terminals that an attach removes are made durable with one fsync of their
directory, not one each."""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from session.catalog import SessionCatalog
from session.models import SessionState

OPENED: Counter[str] = Counter()
"""Opens of pointer files, and of the sessions directory (to fsync it), by name."""
COUNTING: list[bool] = []


def _count_opens(event: str, args: tuple[object, ...]) -> None:
    if COUNTING and event == "open" and isinstance(args[0], str | Path):
        name = Path(args[0]).name
        if name.startswith("active_") or name == "sessions":  # a directory's: its fsync
            OPENED[name] += 1


sys.addaudithook(_count_opens)


@pytest.fixture
def pointer_opens() -> Iterator[Counter[str]]:
    """How many times each pointer file is opened meanwhile."""
    OPENED.clear()
    COUNTING.append(True)
    try:
        yield OPENED
    finally:
        COUNTING.clear()


def old_orphans(project: Path, count: int) -> None:
    """``count`` old sessions, each pointed to by a terminal that is gone."""
    project.mkdir(parents=True)
    for number in range(count):
        session_id = f"{number:012x}"
        state = SessionState.new(datetime(2026, 1, 1, tzinfo=UTC), session_id)
        (project / f"{session_id}.json").write_text(state.model_dump_json())
        pid = 4_000_000 + number  # over any pid a process has here
        pointer = {"session_id": session_id, "pid": pid, "pid_start_time": 1.0,
                   "updated_at": "2026-01-01T00:00:00Z"}
        (project / f"active_{pid}.json").write_text(json.dumps(pointer))


def test_prune_reads_each_pointer_a_few_times_whatever_the_number_of_sessions(
    tmp_path: Path, pointer_opens: Counter[str]
) -> None:
    project = tmp_path / "projects" / "ws_12345678" / "sessions"
    old_orphans(project, 60)
    pruned = SessionCatalog(tmp_path).prune(None, 30, False, {})
    assert len(pruned.sessions.rows) == 60
    assert list(project.glob("active_*.json")) == [], "their pointers went with them"
    assert max(n for name, n in pointer_opens.items() if name.startswith("active_")) <= 4
    assert pointer_opens["sessions"] <= 60, "one fsync of the directory per session removed"


def test_the_pointers_of_gone_terminals_are_removed_with_one_fsync_of_their_directory(
    tmp_path: Path, pointer_opens: Counter[str]
) -> None:
    project = tmp_path / "projects" / "ws_12345678" / "sessions"
    old_orphans(project, 60)
    removed, problems = SessionCatalog(tmp_path).remove_gone_pointers(project, ())
    assert (len(removed), problems) == (60, ())
    assert list(project.glob("active_*.json")) == []
    assert pointer_opens["sessions"] == 1
