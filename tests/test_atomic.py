"""session/atomic.py: what the assistant's writes leave in the workspace."""

from __future__ import annotations

import os
import time
from pathlib import Path

from session.atomic import STALE_TEMP_S, replace_workspace_file


def left_by_a_killed_writer(workspace: Path, name: str, age_s: float) -> Path:
    temp = workspace / name
    temp.write_bytes(b"half a file")
    then = time.time() - age_s
    os.utime(temp, (then, then))
    return temp


def test_a_temp_a_killed_writer_left_is_removed_by_the_next_write_of_that_file(
    tmp_path: Path,
) -> None:
    stale = left_by_a_killed_writer(
        tmp_path, ".notes.md.3b46d43b.agent-assist.tmp", STALE_TEMP_S + 5
    )
    replace_workspace_file(tmp_path / "notes.md", b"whole")
    assert not stale.exists()
    assert sorted(os.listdir(tmp_path)) == ["notes.md"]


def test_only_old_temps_of_that_file_named_exactly_so_are_removed(tmp_path: Path) -> None:
    old = STALE_TEMP_S + 5
    kept = [
        left_by_a_killed_writer(tmp_path, ".notes.md.3b46d43b.agent-assist.tmp", 1),  # in flight
        left_by_a_killed_writer(tmp_path, ".spec.md.3b46d43b.agent-assist.tmp", old),
        left_by_a_killed_writer(tmp_path, ".notes.md.mine.agent-assist.tmp", old),
        left_by_a_killed_writer(tmp_path, ".notes.md.3b46d43b.tmp", old),
    ]
    replace_workspace_file(tmp_path / "notes.md", b"whole")
    assert all(path.exists() for path in kept)
