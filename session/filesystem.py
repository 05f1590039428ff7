"""Workspace files: safe relative paths, hashing without following symlinks, manifest and drift."""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from session.known_digests import Known, KnownDigests
from session.os_paths import is_utf8

_HASH_CHUNK = 1 << 20
WORKSPACE_GONE = "the workspace is not there any more (moved or deleted)"
"""Why a file is not written into a workspace that is gone: its directories are not made
again (a deleted one would be made anew holding that file alone, a moved one a stray copy
at its old path)."""


def is_safe_relative_path(workspace: Path, relative: str) -> bool:
    """Whether ``relative`` names a path inside ``workspace`` reached without symlinks.

    Refuses empty, absolute, ``~`` and ``..`` paths, control characters and backslashes,
    and paths whose directories, resolved on disk, are not where the string
    says (a symlinked directory anywhere below the workspace). The last
    component is not resolved: callers open it with ``O_NOFOLLOW``.
    """
    return bool(safe_relative_paths(workspace, (relative,)))


def in_git_directory(relative: str) -> bool:
    """Whether ``relative`` is a ``.git`` directory or file (a worktree's pointer to its
    repository), or lies in one, in any case (some file systems ignore it): git runs
    the hooks and reads the config found there."""
    return any(part.casefold() == ".git" for part in PurePosixPath(relative).parts)


def _is_control(char: str) -> bool:
    return ord(char) < 32 or 127 <= ord(char) < 160


def is_inside(relative: str) -> bool:
    """Whether ``relative`` names a path inside the workspace as written (whatever is on
    disk: a directory on its way may be a symlink now, and a directory again later)."""
    return inside_parts(relative) is not None


def inside_parts(relative: str) -> list[str] | None:
    """The parts of ``relative`` if it names a path inside the workspace as written (not
    empty, absolute, ``~`` or ``..``, no backslash and no control character: a newline or
    an escape in a name forges lines on the terminal that shows it; UTF-8: a name the OS
    gives with bytes that are not holds lone surrogates, which no session file and no
    frame can carry), else None."""
    if not relative or "\\" in relative or relative[0] in "~/":
        return None
    if not relative.isprintable() and any(_is_control(c) for c in relative):
        return None
    if not relative.isascii() and not is_utf8(relative):
        return None
    parts = [part for part in relative.split("/") if part not in ("", ".")]
    return parts if parts and ".." not in parts else None


def safe_relative_paths(workspace: Path, relative_paths: Iterable[str]) -> list[str]:
    """The paths among ``relative_paths`` that ``is_safe_relative_path`` accepts, in order;
    each directory is resolved on disk once, however many files it holds."""
    root = os.path.realpath(workspace)
    verdicts: dict[str, bool] = {}
    safe: list[str] = []
    for relative in relative_paths:
        parts = inside_parts(relative)
        if parts is None:
            continue
        parent = "/".join((root, *parts[:-1]))
        verdict = verdicts.get(parent)
        if verdict is None:
            verdict = verdicts[parent] = os.path.realpath(parent) == parent
        if verdict:
            safe.append(relative)
    return safe


def sha256_file(path: str | Path) -> str | None:
    """Hex SHA-256 of a regular file, or None if it is missing, a symlink or not a file."""
    found = _sha256_and_fstat(path)
    return None if found is None else found[0]


def held_as_asked(path: str | Path, asked: str | None) -> bool:
    """Whether ``path`` holds what it held when a question about it was asked (``asked``:
    its ``sha256_file`` then): an answer acts only on what its question named. Gone
    meanwhile counts as unchanged: there is nothing to keep."""
    return sha256_file(path) == asked or not os.path.lexists(path)


def _sha256_and_fstat(path: str | Path) -> tuple[str, os.stat_result] | None:
    """``sha256_file``, and what ``fstat`` said of the file before it was read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        digest = hashlib.sha256(os.read(fd, min(info.st_size + 1, _HASH_CHUNK)))
        while chunk := os.read(fd, _HASH_CHUNK):
            digest.update(chunk)
        return digest.hexdigest(), info
    finally:
        os.close(fd)


def known_sha256(path: str, known: KnownDigests) -> str | None:
    """``sha256_file`` of ``path``, taken from ``known`` while ``lstat`` shows the file as it
    was when last read (and remembered for next time when it was read now)."""
    if (same := known.lookup(path)) is not None:
        return same.digest
    opened_at = known.clock()
    found = _sha256_and_fstat(path)
    if found is None:
        return None
    digest, info = found
    known.remember(path, info, Known(digest, stat.S_IMODE(info.st_mode), info.st_size), opened_at)
    return digest


def tracked_digests(workspace: Path, relatives: Sequence[str]) -> list[str | None]:
    """``sha256_file`` of each tracked file of ``relatives``, in order, reached without
    symlinks; None where it is gone, not a regular file, or its directory is now a symlink
    (the file is not where it was). Each directory is resolved once: once per file, a
    ``sed -i`` over 20,000 tracked files cost the supervisor seconds of resolving."""
    reachable = set(safe_relative_paths(workspace, relatives))
    root = os.fspath(workspace)  # joined as strings: a Path a file cost a third of it
    return [
        sha256_file(os.path.join(root, relative)) if relative in reachable else None
        for relative in relatives
    ]


def build_file_manifest(
    workspace: Path, relative_paths: Iterable[str], known: KnownDigests | None = None
) -> dict[str, str]:
    """``{relative_path: sha256}`` of the safe, existing, regular files among
    ``relative_paths``; a file ``known`` shows unchanged since it was read is not read."""
    manifest: dict[str, str] = {}
    root = os.fspath(workspace)
    for relative in safe_relative_paths(workspace, sorted(set(relative_paths))):
        path = os.path.join(root, relative)
        digest = sha256_file(path) if known is None else known_sha256(path, known)
        if digest is not None:
            manifest[relative] = digest
    return manifest


def file_modes(workspace: Path, relative_paths: Iterable[str]) -> dict[str, int]:
    """``{relative_path: permission bits}`` of the safe, existing, regular files among
    ``relative_paths`` (a symlink is not followed)."""
    modes: dict[str, int] = {}
    for relative in safe_relative_paths(workspace, sorted(set(relative_paths))):
        try:
            info = os.lstat(workspace / relative)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            modes[relative] = stat.S_IMODE(info.st_mode)
    return modes


WORKSPACE_TEMP_SUFFIX = ".agent-assist.tmp"
_WORKSPACE_TEMP = re.compile(rf"(?s)\.(.+)\.[0-9a-f]{{8}}{re.escape(WORKSPACE_TEMP_SUFFIX)}")
"""A workspace temp's name; its group is the stem of the file it was to replace."""


def is_workspace_temp(name: str) -> bool:
    """Whether ``name`` is a temp of ``session.atomic.replace_workspace_file``: a write in
    flight, or one a killed write left behind; never a file of the user's to track."""
    return workspace_temp_stem(name) is not None


def workspace_temp_stem(name: str) -> str | None:
    """The stem of the file ``name`` is a workspace temp of (``_temp_stem`` in
    ``session.atomic``), or None if it is none."""
    match = _WORKSPACE_TEMP.fullmatch(name)
    return None if match is None else match[1]


def list_tree(workspace: Path, directory: str) -> list[str]:
    """Relative paths of the regular files under ``directory`` (symlinks not followed; our
    own temps, which a killed write may have left there, are not the user's files; nor
    hidden directories), each directory's files (sorted) before its subdirectories'
    (sorted). The kinds come from the directory's entries: no ``stat`` a file, on file
    systems that say them (20,000 templates cost two ``stat``s each at every manifest)."""
    top = workspace / directory
    if not is_safe_relative_path(workspace, directory) or top.is_symlink():
        return []
    found: list[str] = []
    prefix = top.relative_to(workspace).as_posix()
    to_list = [(os.fspath(top), prefix)]
    while to_list:
        path, relative = to_list.pop()
        try:
            with os.scandir(path) as listing:
                entries = list(listing)
        except OSError:  # gone, or not a directory (any more)
            continue
        files = sorted(
            entry.name
            for entry in entries
            if entry.is_file(follow_symlinks=False) and not is_workspace_temp(entry.name)
        )
        found.extend(f"{relative}/{name}" for name in files)
        directories = sorted(
            (entry.name for entry in entries if entry.is_dir(follow_symlinks=False)),
            reverse=True,  # the first is listed first
        )
        to_list.extend(
            (os.path.join(path, name), f"{relative}/{name}")
            for name in directories
            if not name.startswith(".")
        )
    return found


@dataclass(frozen=True)
class FileDrift:
    """How tracked files changed since the manifest was taken."""

    unchanged: tuple[str, ...] = ()
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    skipped: tuple[str, ...] = field(default=())
    found: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)
    """The digest each modified file had when compared."""

    @property
    def changed(self) -> bool:
        return bool(self.modified or self.deleted)

    def as_compared(self, manifest: Mapping[str, str]) -> dict[str, str]:
        """What the compared files held when compared (``manifest`` was compared): a
        watch given these digests tells a change made since, even one made before its
        own hashing (a flood during a re-attach left 731 of 20,000 files untold)."""
        held = {path: manifest[path] for path in self.unchanged if path in manifest}
        held.update({path: self.found.get(path, "") for path in self.modified})
        held.update(dict.fromkeys(self.deleted, ""))
        return held


def clear_leftover_temps(workspace: Path, relative_paths: Iterable[str]) -> list[str]:
    """Remove the temps a write killed mid-way left beside these workspace files, once
    they are old enough (``session.atomic.clear_stale_workspace_temps``); their names."""
    from session.atomic import clear_stale_workspace_temps_of

    safe = safe_relative_paths(workspace, relative_paths)
    return clear_stale_workspace_temps_of(workspace / relative for relative in safe)


def detect_file_drift(workspace: Path, manifest: Mapping[str, str]) -> FileDrift:
    """Compare the workspace against ``manifest``.

    Files not in the manifest are not reported; a tracked file that is now a
    symlink, or whose directory is, reads as deleted; keys escaping the workspace
    (as written: ``..``, absolute) are skipped.
    """
    unchanged: list[str] = []
    modified: list[str] = []
    deleted: list[str] = []
    found: dict[str, str] = {}
    inside = [relative for relative in sorted(manifest) if inside_parts(relative) is not None]
    skipped = [relative for relative in sorted(manifest) if inside_parts(relative) is None]
    for relative, digest in zip(inside, tracked_digests(workspace, inside), strict=True):
        if digest is None:
            deleted.append(relative)
        elif digest != manifest[relative]:
            modified.append(relative)
            found[relative] = digest
        else:
            unchanged.append(relative)
    return FileDrift(tuple(unchanged), tuple(modified), tuple(deleted), tuple(skipped), found)


def unseen_changes(
    watched: Mapping[str, str] | None,
    manifest: Mapping[str, str],
    tracked: Callable[[str], bool],
    ours: Iterable[str] = (),
) -> tuple[list[str], frozenset[str]]:
    """The files ``manifest`` (hashed just now) finds changed since the watcher was given
    ``watched`` (None: not known), but ``ours``, and which of them are gone: an edit made
    just before a ``/save`` or a turn's end, whose event the watcher had not settled, is
    taken in by that manifest, and the watch given it would see nothing. A watched file
    missing from ``manifest`` is gone if it is still ``tracked`` (else it is not looked at)."""
    if not watched:
        return [], frozenset()
    skip = set(ours)
    changed = [
        path
        for path, digest in watched.items()
        if path not in skip
        and is_inside(path)
        and manifest.get(path, "") != digest
        and (path in manifest or tracked(path))
    ]
    return changed, frozenset(path for path in changed if path not in manifest)


def what_is_at(workspace: Path, paths: Iterable[str]) -> dict[str, str]:
    """For each of ``paths`` (inside ``workspace``) where a file cannot be put back as it
    is: what stands in the way, in words (``a symlink is there now``, ``a file is at sub
    now``): something not a regular file at its place (a tracked file replaced by a
    symlink reads as deleted), or at the place of one of its directories; or a regular
    file that cannot be read (it reads as deleted too, and what cannot be read cannot be
    kept by the checkpoint that would undo writing over it)."""
    found: dict[str, str] = {}
    for path in paths:
        parts = Path(path).parts
        for depth in range(1, len(parts) + 1):
            here = Path(*parts[:depth])
            try:
                info = os.lstat(workspace / here)
            except OSError:
                break  # missing: nothing in the way from here down
            last = depth == len(parts)
            what = _kind_in_the_way(info.st_mode, last)
            if what is None and last and unreadable(workspace, str(here)) is not None:
                what = "a file agent-assist cannot read"
            if what is not None:
                found[path] = f"{what} is there now" if last else f"{what} is at {here} now"
                break
    return found


def unreadable(workspace: Path, relative: str) -> str | None:
    """Why the regular file at ``relative`` cannot be read (None if it can, or if no
    regular file is there). The caller checked the path is safe."""
    path = os.path.join(workspace, relative)
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return None
        os.close(os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK))
    except FileNotFoundError:
        return None
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


def unreadable_of(workspace: Path, relatives: Iterable[str]) -> frozenset[str]:
    """Those of ``relatives`` (safe paths) where a regular file is that cannot be read:
    its digest is gone as a deleted file's is, but it is there. Blocking."""
    return frozenset(r for r in relatives if unreadable(workspace, r) is not None)


def _kind_in_the_way(mode: int, last: bool) -> str | None:
    if stat.S_ISLNK(mode):
        return "a symlink"
    if last:
        if stat.S_ISDIR(mode):
            return "a directory"
        return None if stat.S_ISREG(mode) else "a special file"
    return None if stat.S_ISDIR(mode) else "a file"
