"""The assistant's tools stay inside the workspace; the offline model drives them for real."""

from __future__ import annotations

from pathlib import Path

import pytest

from actors.assistant import TurnDeps, build_agent
from actors.offline_model import LABEL, offline_model


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    return ws


def run(workspace: Path, prompt: str, resume_context: str = "") -> tuple[str, TurnDeps]:
    deps = TurnDeps(workspace, resume_context=resume_context)
    result = build_agent(offline_model()).run_sync(prompt, deps=deps)
    return result.output, deps


def test_write_and_read_a_workspace_file(workspace: Path) -> None:
    output, deps = run(workspace, "write specs/agent_spec.md: # Agent")
    assert output == f"{LABEL} write_file: wrote specs/agent_spec.md (8 bytes)"
    assert (workspace / "specs" / "agent_spec.md").read_text() == "# Agent\n"
    assert deps.touched == {"specs/agent_spec.md"}
    output, _ = run(workspace, "read specs/agent_spec.md")
    assert "# Agent" in output


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "specs/../../secret.txt"])
def test_paths_outside_the_workspace_are_refused(workspace: Path, path: str) -> None:
    output, deps = run(workspace, f"read {path}")
    assert "is not a path inside the workspace" in output
    assert "outside" not in output
    assert deps.touched == set()
    output, _ = run(workspace, f"write {path}: x")
    assert "is not a path inside the workspace" in output


def test_symlinks_are_refused_for_reading_and_writing(workspace: Path) -> None:
    (workspace / "link.txt").symlink_to(workspace.parent / "secret.txt")
    (workspace / "dir").symlink_to(workspace.parent)
    output, _ = run(workspace, "read link.txt")
    assert output.startswith(f"{LABEL} read_file: error: cannot read link.txt")
    output, _ = run(workspace, "write link.txt: overwritten")
    assert "error: cannot write link.txt" in output
    assert (workspace.parent / "secret.txt").read_text() == "outside"
    output, _ = run(workspace, "read dir/secret.txt")
    assert "is not a path inside the workspace" in output


def test_listing_and_decisions(workspace: Path) -> None:
    (workspace / "a.md").write_text("a")
    (workspace / "sub").mkdir()
    output, _ = run(workspace, "list")
    assert output == f"{LABEL} list_files: a.md\nsub/"
    output, deps = run(workspace, "decide Use Chat Completions everywhere")
    assert deps.decisions == ["Use Chat Completions everywhere"]
    assert "recorded decision" in output


def test_the_resume_context_reaches_the_model_as_instructions(workspace: Path) -> None:
    context = "# Resumed Session Context\nThis is a resumed session (ID: a1b2c3d4e5f6)."
    output, _ = run(workspace, "hello", resume_context=context)
    assert output.endswith("[resume context: session a1b2c3d4e5f6]")
    output, _ = run(workspace, "hello")
    assert "resume context" not in output
