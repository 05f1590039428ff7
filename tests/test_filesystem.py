"""Workspace files: safe relative paths, manifests, and drift as the resume block reports it."""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

from session.filesystem import (
    FileDrift,
    build_file_manifest,
    detect_file_drift,
    file_modes,
    is_safe_relative_path,
    list_tree,
    sha256_file,
    tracked_digests,
)
from session.known_digests import KnownDigests


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    (ws / "templates").mkdir(parents=True)
    (ws / "agent_spec.md").write_text("# spec\n")
    (ws / "templates" / "tool.md").write_text("tool\n")
    (ws / "notes.md").write_text("notes\n")
    return ws


def test_sha256_matches_hashlib_and_refuses_symlinks(workspace: Path) -> None:
    path = workspace / "agent_spec.md"
    assert sha256_file(path) == hashlib.sha256(b"# spec\n").hexdigest()
    (workspace / "link.md").symlink_to(path)
    assert sha256_file(workspace / "link.md") is None
    assert sha256_file(workspace / "missing.md") is None
    assert sha256_file(workspace / "templates") is None


@pytest.mark.parametrize(
    "relative", ["agent_spec.md", "templates/tool.md", "new/dir/file.md", "./notes.md"]
)
def test_paths_inside_the_workspace_are_safe(workspace: Path, relative: str) -> None:
    assert is_safe_relative_path(workspace, relative)


@pytest.mark.parametrize(
    "relative",
    ["", ".", "/etc/passwd", "../outside.md", "templates/../../x", "~/x", "a\x00b", "a\\..\\b"],
)
def test_escaping_or_malformed_paths_are_unsafe(workspace: Path, relative: str) -> None:
    assert not is_safe_relative_path(workspace, relative)


def test_a_symlinked_directory_is_unsafe_even_when_the_string_looks_inside(
    workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("s")
    (workspace / "sneaky").symlink_to(outside)
    assert not is_safe_relative_path(workspace, "sneaky/secret.md")
    (workspace / "inner").symlink_to(workspace / "templates")
    assert not is_safe_relative_path(workspace, "inner/tool.md")


def test_manifest_hashes_regular_files_and_skips_the_rest(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "outside.md").write_text("x")
    (workspace / "link.md").symlink_to(workspace / "notes.md")
    manifest = build_file_manifest(
        workspace, ["agent_spec.md", "templates/tool.md", "link.md", "missing.md", "../outside.md"]
    )
    assert sorted(manifest) == ["agent_spec.md", "templates/tool.md"]
    assert manifest["agent_spec.md"] == hashlib.sha256(b"# spec\n").hexdigest()


def test_list_tree_lists_regular_files_without_following_links(workspace: Path) -> None:
    (workspace / "templates" / "alias.md").symlink_to(workspace / "notes.md")
    assert list_tree(workspace, "templates") == ["templates/tool.md"]
    assert list_tree(workspace, "../") == []


def test_list_tree_lists_each_directory_s_files_before_its_subdirectories(
    workspace: Path,
) -> None:
    """Sorted; hidden directories, our own temps, symlinks (to files or directories),
    FIFOs and what is not there are left out; hidden files are listed."""
    t = workspace / "templates"
    for directory in ("a/b", "B", ".hidden", "a/.git"):
        (t / directory).mkdir(parents=True)
    temp = "a/.x.0123abcd.agent-assist.tmp"  # a killed write's
    for name in ("a/1", "a/b/2", "B/3", ".hidden/4", "a/.git/5", ".dot", temp):
        (t / name).write_text(name)
    (t / "to_a").symlink_to(t / "a")
    (t / "to_tool.md").symlink_to(t / "tool.md")
    (t / "dangling").symlink_to(t / "nowhere")
    os.mkfifo(t / "fifo")
    assert list_tree(workspace, "templates") == [
        "templates/.dot",
        "templates/tool.md",
        "templates/B/3",
        "templates/a/1",
        "templates/a/b/2",
    ]
    assert list_tree(workspace, "notes.md") == list_tree(workspace, "gone") == []


def test_list_tree_takes_the_kinds_from_the_directory_not_a_stat_a_file(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """20,000 templates: two ``stat``s a file made each manifest 0.75 s longer."""
    for n in range(50):
        (workspace / "templates" / f"t{n}.md").write_text("x")
    looked_at: list[str] = []
    for name in ("stat", "lstat"):
        real = getattr(os, name)

        def counted(path: Any, *args: Any, _real: Any = real, **kwargs: Any) -> Any:
            looked_at.append(os.fsdecode(path))
            return _real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, counted)
    assert len(list_tree(workspace, "templates")) == 51
    assert [p for p in looked_at if Path(p).parent == workspace / "templates"] == []


def test_drift_reports_unchanged_modified_and_deleted(workspace: Path) -> None:
    manifest = build_file_manifest(workspace, ["agent_spec.md", "templates/tool.md", "notes.md"])
    (workspace / "agent_spec.md").write_text("# spec v2\n")
    (workspace / "notes.md").unlink()
    (workspace / "untracked.md").write_text("new")
    drift = detect_file_drift(workspace, manifest)
    assert drift == FileDrift(
        unchanged=("templates/tool.md",), modified=("agent_spec.md",), deleted=("notes.md",)
    )
    assert drift.changed


def test_the_drift_keeps_what_each_file_held_when_compared(workspace: Path) -> None:
    """A helper's attack (H89): a re-attach compared the files, then hashed them again for
    the watcher; a file changed between the two was in neither (731 of a 20,000-file
    flood untold). The watcher is given what the comparison found."""
    manifest = build_file_manifest(workspace, ["agent_spec.md", "templates/tool.md", "notes.md"])
    (workspace / "agent_spec.md").write_text("# spec v2\n")
    (workspace / "notes.md").unlink()
    drift = detect_file_drift(workspace, manifest)
    (workspace / "agent_spec.md").write_text("# spec v3, after the comparison\n")
    assert drift.as_compared(manifest) == {
        "agent_spec.md": hashlib.sha256(b"# spec v2\n").hexdigest(),
        "templates/tool.md": manifest["templates/tool.md"],
        "notes.md": "",
    }


def test_a_tracked_file_replaced_by_a_symlink_reads_as_deleted(workspace: Path) -> None:
    manifest = build_file_manifest(workspace, ["notes.md"])
    content = (workspace / "notes.md").read_bytes()
    (workspace / "notes.md").unlink()
    (workspace / "copy.md").write_bytes(content)
    (workspace / "notes.md").symlink_to(workspace / "copy.md")
    assert detect_file_drift(workspace, manifest).deleted == ("notes.md",)


def test_a_tracked_file_whose_directory_became_a_symlink_reads_as_deleted(
    workspace: Path, tmp_path: Path
) -> None:
    """A helper's report: the file was skipped, as if its path escaped the workspace, and
    dropped from the manifest without a word."""
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep.md").write_text("d1\n")
    manifest = build_file_manifest(workspace, ["notes.md", "sub/deep.md"])
    (workspace / "sub").rename(tmp_path / "elsewhere")
    (workspace / "sub").symlink_to(tmp_path / "elsewhere")
    drift = detect_file_drift(workspace, manifest)
    assert drift.deleted == ("sub/deep.md",)
    assert drift.unchanged == ("notes.md",) and drift.skipped == ()


def test_manifest_keys_that_escape_the_workspace_are_skipped(workspace: Path) -> None:
    manifest = {"../etc.md": "0" * 64, "/etc/passwd": "0" * 64, "notes.md": "0" * 64}
    drift = detect_file_drift(workspace, manifest)
    assert drift.modified == ("notes.md",)
    assert drift.deleted == () and drift.unchanged == ()
    assert sorted(drift.skipped) == ["../etc.md", "/etc/passwd"]


def test_tracked_digests_are_in_order_none_for_gone_or_behind_a_symlink(
    workspace: Path, tmp_path: Path
) -> None:
    (workspace / "sub").mkdir()
    (workspace / "sub" / "deep.md").write_text("d1\n")
    (workspace / "sub").rename(tmp_path / "elsewhere")
    (workspace / "sub").symlink_to(tmp_path / "elsewhere")
    digests = tracked_digests(workspace, ["notes.md", "sub/deep.md", "gone.md", "agent_spec.md"])
    assert digests == [
        hashlib.sha256(b"notes\n").hexdigest(),
        None,
        None,
        hashlib.sha256(b"# spec\n").hexdigest(),
    ]


@pytest.fixture
def resolved(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The paths ``os.path.realpath`` resolves from now on."""
    calls: list[str] = []
    real = os.path.realpath

    def counted(path: str, *args: object, **kwargs: object) -> str:
        calls.append(os.fspath(path))
        return real(path)

    monkeypatch.setattr(os.path, "realpath", counted)
    return calls


def test_many_files_of_one_directory_resolve_it_once(workspace: Path, resolved: list[str]) -> None:
    """A ``sed -i`` over 20,000 tracked templates: the drift watcher hashed each changed file
    after resolving its directory (and the workspace) anew, seconds of the supervisor's
    CPU; the manifest and the modes did likewise."""
    paths = [f"templates/t{n}.md" for n in range(50)]
    for relative in paths:
        (workspace / relative).write_text(relative)
    assert None not in tracked_digests(workspace, paths)
    assert len(build_file_manifest(workspace, paths)) == len(file_modes(workspace, paths)) == 50
    assert len(resolved) == 3 * 2  # the workspace and templates/, once a call


def settled_reader() -> KnownDigests:
    """Files read ten seconds after their last change, on a local disk."""
    return KnownDigests(clock=lambda: time.time_ns() + 10 * 10**9, stamping=lambda d: True)


def test_a_manifest_reads_no_file_unchanged_since_it_was_read(
    workspace: Path, files_opened: list[str]
) -> None:
    """A turn that writes one file rebuilt the manifest by reading every template again."""
    paths = ["agent_spec.md", "notes.md", "templates/tool.md"]
    known = settled_reader()
    first = build_file_manifest(workspace, paths, known)
    files_opened.clear()
    assert build_file_manifest(workspace, paths, known) == first
    assert files_opened == []


def test_a_manifest_reads_again_a_file_changed_since_even_with_its_mtime_put_back(
    workspace: Path,
) -> None:
    known = settled_reader()
    notes = workspace / "notes.md"
    build_file_manifest(workspace, ["notes.md"], known)
    info = notes.stat()
    time.sleep(0.02)  # a tick of the file system's clock later (else a racy case, read again)
    notes.write_text("NOTES\n")
    os.utime(notes, ns=(info.st_atime_ns, info.st_mtime_ns))
    manifest = build_file_manifest(workspace, ["notes.md"], known)
    assert manifest == {"notes.md": hashlib.sha256(b"NOTES\n").hexdigest()}


def test_a_manifest_leaves_out_a_known_file_replaced_by_a_symlink(
    workspace: Path, tmp_path: Path
) -> None:
    known = settled_reader()
    build_file_manifest(workspace, ["notes.md"], known)
    (tmp_path / "elsewhere.md").write_text("notes\n")
    (workspace / "notes.md").unlink()
    (workspace / "notes.md").symlink_to(tmp_path / "elsewhere.md")
    assert build_file_manifest(workspace, ["notes.md"], known) == {}
