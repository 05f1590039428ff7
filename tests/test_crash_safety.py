"""A writer killed with SIGKILL at any moment never leaves a torn or foreign session file."""

from __future__ import annotations

import os
import random
import signal
import time
from datetime import UTC, datetime
from pathlib import Path

import orjson

from session.history import dump_messages
from session.manager import SessionManager
from session.models import SessionState
from tests.conversations import conversation

SID = "c0ffee000001"
KILLS = 100
BASE = SessionState(
    session_id=SID,
    created_at=datetime(2026, 11, 29, tzinfo=UTC),
    updated_at=datetime(2026, 11, 29, tzinfo=UTC),
    recent_messages=tuple(dump_messages(conversation(*([2] * 40)))),
)


def version(n: int) -> SessionState:
    return BASE.model_copy(update={"summary": f"version {n}", "checkpoint_count": n})


def save_forever(manager: SessionManager, first: int) -> None:
    n = first
    while True:
        manager.save(version(n))
        n += 1


def temp_files(directory: Path) -> list[str]:
    return [name for name in os.listdir(directory) if name.endswith(".tmp")]


def wait_for_a_save(manager: SessionManager, first: int) -> None:
    """Until the child has saved a version of its own (numbered ``first`` or after)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        raw = orjson.loads(manager.session_path(SID).read_bytes())
        if raw["checkpoint_count"] >= first:
            return
        time.sleep(0.001)
    raise AssertionError("the child saved nothing in 30 s")


def test_sigkill_during_saves_never_tears_the_file(tmp_path: Path) -> None:
    manager = SessionManager(tmp_path / "sessions")
    manager.save(version(0))
    size = manager.session_path(SID).stat().st_size
    assert size > 64 * 1024
    rng = random.Random(1234)
    seen: set[int] = set()
    mid_write_kills = 0
    first = 1
    for _ in range(KILLS):
        pid = os.fork()
        if pid == 0:  # the child saves until it is killed
            try:
                save_forever(manager, first)
            finally:
                os._exit(1)
        wait_for_a_save(manager, first)  # a loaded machine may not run the child at once
        time.sleep(rng.uniform(0.001, 0.03))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        raw = orjson.loads(manager.session_path(SID).read_bytes())
        state = SessionState.model_validate(raw)
        n = state.checkpoint_count
        assert state == version(n), "the file must be exactly one written version"
        seen.add(n)
        strays = len(temp_files(manager.directory))
        assert strays <= 1
        mid_write_kills += strays
        first = n + 1_000_000
    assert len(seen) > KILLS // 4, "kills should land at many different versions"
    assert mid_write_kills > 0, "some kills should land in the middle of a write"
    manager.save(version(7))
    assert temp_files(manager.directory) == []
    assert manager.load(SID) == version(7)
