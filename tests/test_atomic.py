"""session/atomic.py: what the assistant's writes leave in the workspace."""

from __future__ import annotations

import os
import time
from pathlib import Path

from session.atomic import STALE_TEMP_S, replace_workspace_file
from session.filesystem import clear_leftover_temps


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


def test_a_file_whose_name_is_near_the_limit_can_be_written_and_its_temps_cleared(
    tmp_path: Path,
) -> None:
    """A helper's attack: names of 229-255 bytes could not be written (the temp's name
    passed 255 bytes), so a checkpoint held content it could never put back."""
    for name in ("L" * 250 + ".md", "é" * 126 + ".md"):  # 253 and 255 bytes
        target = tmp_path / name
        replace_workspace_file(target, b"first")
        replace_workspace_file(target, b"second")
        assert target.read_bytes() == b"second"
        stem = b"." + os.fsencode(name)[: 255 - 27]
        stale = tmp_path / os.fsdecode(stem + b".3b46d43b.agent-assist.tmp")
        stale.write_bytes(b"half a file")
        then = time.time() - STALE_TEMP_S - 5
        os.utime(stale, (then, then))
        replace_workspace_file(target, b"third")
        assert not stale.exists()
    assert sorted(os.listdir(tmp_path)) == sorted(["L" * 250 + ".md", "é" * 126 + ".md"])


def test_the_leftover_temps_of_thousands_of_files_in_one_directory_are_cleared_at_once(
    tmp_path: Path, directory_reads: list[str]
) -> None:
    """A helper's attack (H89): the resume's clearing read the directory once per tracked
    file; a session of 20,000 templates in one directory, re-attached after the
    supervisor was killed, burnt minutes of CPU before its changes were told."""
    templates = tmp_path / "templates"
    templates.mkdir()
    names = [f"t{n:05}.txt" for n in range(4000)]
    for name in names:
        (templates / name).write_text("a template\n")
    stale = left_by_a_killed_writer(
        templates, ".t00007.txt.3b46d43b.agent-assist.tmp", STALE_TEMP_S + 5
    )
    young = left_by_a_killed_writer(templates, ".t00008.txt.3b46d43c.agent-assist.tmp", 0)
    removed = clear_leftover_temps(tmp_path, [f"templates/{name}" for name in names])
    assert directory_reads == [str(templates)], "the directory is read once, not once for each file"
    assert removed == [stale.name]
    assert not stale.exists() and young.exists()
