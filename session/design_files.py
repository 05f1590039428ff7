"""What ``/reset`` may delete from the workspace: agent_spec.md and the tracked files of
the template directory, never what agent-assist did not track. Blocking IO."""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from session.checkpoints import named
from session.filesystem import held_as_asked, sha256_file
from session.tracked import AGENT_SPEC, TEMPLATE_DIR


@dataclass(frozen=True)
class DesignFiles:
    """What ``/reset`` may delete: agent_spec.md, and the files of the template directory
    agent-assist tracks; the template directory's other entries (files made by hand since
    the session last saved, symlinks, ...) it never tracked: they are left alone, named."""

    spec: bool
    tracked: tuple[str, ...] = ()
    """Files of the template directory this session tracks (its manifest, its tools')."""
    untracked: tuple[str, ...] = ()
    """The template directory's other entries (the directory itself, if a symlink)."""
    edited: tuple[str, ...] = ()
    """Those of the files above that changed outside agent-assist since its tools last wrote
    them (the user's work): named in the question, never only counted."""
    asked: Mapping[str, str | None] = dataclasses.field(default_factory=dict)
    """What each file to delete held when the question was asked (``sha256_file``): one
    that holds something else by the answer is not deleted (its change was never named)."""

    @property
    def question(self) -> str | None:
        """``Also delete agent_spec.md and templates/ (3 files)? [y/N]``, with ``, your
        changes to templates/a.md included`` before the ``?`` when a file to delete holds
        work done outside agent-assist; None: nothing to delete, nothing to ask."""
        what = [AGENT_SPEC] if self.spec else []
        if self.tracked:
            count = len(self.tracked)
            what.append(f"{TEMPLATE_DIR}/ ({count:,} file{'' if count == 1 else 's'})")
        if not what:
            return None
        edits = f", your changes to {named(self.edited)} included" if self.edited else ""
        return f"Also delete {' and '.join(what)}{edits}? [y/N]"

    @property
    def left_alone(self) -> str | None:
        """The line naming what a deletion leaves: the entries never tracked."""
        if not self.untracked:
            return None
        count = len(self.untracked)
        return (
            f"{TEMPLATE_DIR}/ holds {count:,} {'entry' if count == 1 else 'entries'} "
            f"agent-assist never tracked, left alone: {named(self.untracked)}"
        )


def design_files(
    workspace: Path,
    tracked: Set[str],
    ours: Mapping[str, str] | None = None,
    edited: Set[str] = frozenset(),
) -> DesignFiles:
    """agent_spec.md and the template directory's entries, told tracked (in ``tracked``, a
    regular file) or not, and which of them hold work done outside agent-assist: those in
    ``edited`` (seen changed outside since its tools last wrote them) and those whose
    content is not the digest in ``ours`` (what its tools wrote last, else what the session
    last recorded). Blocking: run it in a worker thread."""
    spec = workspace / AGENT_SPEC
    has_spec = spec.is_file() or spec.is_symlink()
    top = workspace / TEMPLATE_DIR
    if top.is_symlink():
        found = DesignFiles(has_spec, untracked=(f"{TEMPLATE_DIR}/ (a symlink)",))
    elif not top.is_dir():
        found = DesignFiles(has_spec)
    else:
        found = _template_files(workspace, has_spec, tracked)
    to_delete = ((AGENT_SPEC,) if has_spec else ()) + found.tracked
    known = ours or {}
    asked = {path: sha256_file(workspace / path) for path in to_delete}
    changed = tuple(
        path
        for path in to_delete
        if path in edited or (path in known and asked[path] != known[path])
    )
    return dataclasses.replace(found, edited=changed, asked=asked)


def _template_files(workspace: Path, has_spec: bool, tracked: Set[str]) -> DesignFiles:
    """The template directory's entries, tracked or not (see ``design_files``)."""
    top = workspace / TEMPLATE_DIR
    ours: list[str] = []
    others: list[str] = []
    for dirpath, dirnames, filenames in os.walk(top, followlinks=False):
        dirnames.sort()
        links = [d for d in dirnames if (Path(dirpath) / d).is_symlink()]
        for name in sorted([*filenames, *links]):
            full = Path(dirpath) / name
            relative = full.relative_to(workspace).as_posix()
            regular = full.is_file() and not full.is_symlink()
            (ours if regular and relative in tracked else others).append(relative)
    return DesignFiles(has_spec, tuple(ours), tuple(others))


def delete_design_files(
    workspace: Path, files: DesignFiles
) -> tuple[list[str], list[str], list[str]]:
    """Remove agent_spec.md and the tracked files of the template directory (never
    following symlinks), then the directories they leave empty: what was deleted, what
    could not be, each with why (the reset goes on either way), and what was not because
    it changed after the question (``DesignFiles.asked``). Whatever the template
    directory holds that was never tracked stays."""
    deleted: list[str] = []
    failed: list[str] = []
    changed: list[str] = []
    spec = workspace / AGENT_SPEC
    here = files.spec and (spec.is_file() or spec.is_symlink())
    if here and _as_asked(workspace, AGENT_SPEC, files, changed):
        _remove(AGENT_SPEC, spec.unlink, deleted, failed)
    gone: list[str] = []
    for path in files.tracked:
        if _as_asked(workspace, path, files, changed):
            _remove(path, (workspace / path).unlink, gone, failed)
    if gone:
        deleted.append(f"{len(gone):,} file{'' if len(gone) == 1 else 's'} of {TEMPLATE_DIR}/")
    _remove_emptied_directories(workspace, gone)
    return deleted, failed, changed


def _as_asked(workspace: Path, path: str, files: DesignFiles, changed: list[str]) -> bool:
    """Whether ``path`` holds what it held when the question was asked (else it joins
    ``changed``: gone meanwhile counts as unchanged, there is nothing to keep)."""
    if path not in files.asked:
        return True
    if held_as_asked(workspace / path, files.asked[path]):
        return True
    changed.append(path)
    return False


def _remove(name: str, remove: Callable[[], None], done: list[str], failed: list[str]) -> None:
    try:
        remove()
    except FileNotFoundError:
        pass  # gone meanwhile: nothing to delete
    except OSError as exc:
        failed.append(f"{name} ({exc.strerror or exc})")
    else:
        done.append(name)


def _remove_emptied_directories(workspace: Path, deleted: Iterable[str]) -> None:
    """The directories of the template directory that the ``deleted`` files leave empty,
    deepest first, up to the template directory itself; one that holds anything stays, and
    so does one that was empty before (made by hand: agent-assist never tracked it)."""
    emptied = {
        parent
        for path in deleted
        for parent in PurePosixPath(path).parents
        if parent.parts[:1] == (TEMPLATE_DIR,)
    }
    for directory in sorted(emptied, key=lambda d: -len(d.parts)):
        with contextlib.suppress(OSError):  # not empty, or not ours to remove
            os.rmdir(workspace / directory)

