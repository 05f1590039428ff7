"""What a supervisor is: its build changes with its code; its capabilities, with its version."""

from __future__ import annotations

import os
from pathlib import Path

from supervisor.identity import CAPABILITIES, PACKAGES, SOURCE, Identity, knows, source_build


def installed(tmp_path: Path) -> Path:
    """A copy of the project's package layout: one module in each package."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    return tmp_path


def test_a_module_changed_added_or_only_touched_changes_the_build(tmp_path: Path) -> None:
    source = str(installed(tmp_path))
    builds = [source_build(source)]
    (tmp_path / "session" / "__init__.py").write_text("VERSION = 2\n")
    builds.append(source_build(source))
    (tmp_path / "cli" / "upgrade.py").write_text("")
    builds.append(source_build(source))
    os.utime(tmp_path / "actors" / "__init__.py", ns=(0, 0))
    builds.append(source_build(source))
    assert len(set(builds)) == len(builds)


def test_the_same_code_has_the_same_build(tmp_path: Path) -> None:
    source = str(installed(tmp_path))
    (tmp_path / "cli" / "notes.txt").write_text("not a module")
    assert source_build(source) == source_build(source)
    assert source_build() == source_build(SOURCE)


def test_a_welcome_without_a_version_knows_no_capability() -> None:
    """The version before this one told nothing of itself, and knew none of them."""
    previous = {"type": "welcome", "supervisor_pid": 42, "offer": None}
    current = {**previous, **Identity("0.1.0", "5a34dafdab14").as_fields()}
    assert [knows(previous, name) for name in CAPABILITIES] == [False] * len(CAPABILITIES)
    assert [knows(current, name) for name in CAPABILITIES] == [True] * len(CAPABILITIES)
