"""Project directories: <root>/projects/<name>_<hash8>/sessions/ from a workspace."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from session.paths import is_project_name, project_name, sessions_dir, state_root


def test_project_name_is_base_name_and_hash_of_the_resolved_path(tmp_path: Path) -> None:
    workspace = tmp_path / "my-agent"
    workspace.mkdir()
    digest = hashlib.sha256(str(workspace.resolve()).encode("utf-8")).hexdigest()[:8]
    assert project_name(workspace) == f"my-agent_{digest}"


def test_a_symlink_to_the_workspace_names_the_same_project(tmp_path: Path) -> None:
    workspace = tmp_path / "real"
    workspace.mkdir()
    link = tmp_path / "link"
    link.symlink_to(workspace)
    assert project_name(link) == project_name(workspace)


def test_root_comes_from_agent_assist_home(tmp_path: Path) -> None:
    assert state_root({"AGENT_ASSIST_HOME": str(tmp_path)}) == tmp_path
    workspace = tmp_path / "ws"
    workspace.mkdir()
    expected = tmp_path / "projects" / project_name(workspace) / "sessions"
    assert sessions_dir(workspace, tmp_path) == expected


def test_default_root_is_the_user_config_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    assert state_root({}) == tmp_path / "cfg" / "agent-assist"


def test_a_workspace_name_that_is_not_utf8_has_a_printable_project_name(tmp_path: Path) -> None:
    raw = os.fsencode(tmp_path) + b"/caf\xe9\nname"
    os.mkdir(raw)
    workspace = Path(os.fsdecode(raw))
    name = project_name(workspace)
    assert name.startswith("caf_")
    assert name.isprintable()
    name.encode("utf-8")
    assert len(name.rsplit("_", 1)[1]) == 8


@pytest.mark.parametrize("name", ["M" * 255, "é" * 127, "M" * 246, "M" * 247])
def test_a_long_workspace_name_makes_a_project_directory_name_that_fits(
    tmp_path: Path, name: str
) -> None:
    """A 255-byte workspace name made a 264-byte directory name: no session was saved."""
    workspace = tmp_path / name
    workspace.mkdir()
    project = project_name(workspace)
    assert len(os.fsencode(project)) <= 255
    assert name.startswith(project.rsplit("_", 1)[0])
    (tmp_path / "projects" / project).mkdir(parents=True)  # the file system takes it


def test_a_workspace_name_that_fits_is_kept_whole(tmp_path: Path) -> None:
    workspace = tmp_path / ("M" * 246)
    workspace.mkdir()
    assert project_name(workspace).rsplit("_", 1)[0] == "M" * 246


@pytest.mark.parametrize(
    ("name", "valid"),
    [
        ("ws_33df9f5d", True),
        ("my agent ü_0a1b2c3d", True),
        (".._0a1b2c3d", True),  # a directory of that name, inside the projects directory
        ("../x_0a1b2c3d", False),
        ("a/b_0a1b2c3d", False),
        ("ws_33df9f5", False),
        ("ws_33DF9F5D", False),
        ("ws\x00_33df9f5d", False),
        ("x" * 247 + "_33df9f5d", False),
    ],
)
def test_a_project_name_from_a_client_cannot_lead_out_of_the_projects_directory(
    name: str, valid: bool
) -> None:
    assert is_project_name(name) is valid
