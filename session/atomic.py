"""Atomic, durable file replacement: a temp file beside the target, fsync, rename, fsync of
the directory; a crash leaves the old file or the new one, whole.

The temp file is always created afresh (``O_CREAT | O_EXCL | O_NOFOLLOW``), so
whatever sits at its name (a temp left by a writer killed mid-write, a symlink,
a hard link to another file, a fifo) is never written through: it is cleared
first (``clear_stale_temp``) and the temp created again.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import secrets
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from datetime import datetime
from functools import lru_cache, partial
from pathlib import Path

from session.faults import inject
from session.filesystem import WORKSPACE_TEMP_SUFFIX, workspace_temp_stem
from session.models import utc_now

log = logging.getLogger("agent_assist.storage")
FILE_MODE = 0o600
DIR_MODE = 0o700
IOV_MAX = max(16, os.sysconf("SC_IOV_MAX"))
"""Buffers one ``writev`` takes (1024 on Linux)."""
STALE_TEMP_S = 60.0
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW


def ensure_private_dir(path: Path) -> None:
    """Create ``path`` and each missing parent with mode 0700 (umask notwithstanding)."""
    missing: list[Path] = []
    probe = path
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIR_MODE)
        except FileExistsError:
            continue
        os.chmod(directory, DIR_MODE)


def check_private_dir(path: Path) -> None:
    """OSError unless ``path`` is a real directory (not a symlink) of this user that no one
    else may use (for a place in a shared directory such as /tmp)."""
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        raise OSError(errno.EPERM, f"{path} is not a private directory of this user")


def fsync_dir(directory: str | Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@lru_cache(maxsize=4096)
def temp_path(path: Path) -> Path:
    """Where ``atomic_write`` stages ``path``: one fixed name per file, so a temp file
    left by a writer killed mid-write is cleared by the next write."""
    return path.with_name(f".{path.name}.tmp")


def clear_stale_temp(tmp: Path) -> None:
    """Clear a temp name that something already holds: a file, a symlink or a special
    file is unlinked (never followed or written: a hard link's other names keep their
    content), a directory is moved aside (never deleted)."""
    try:
        info = os.lstat(tmp)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(info.st_mode):
        stamp = utc_now().strftime("%Y%m%dT%H%M%S%fZ")
        os.rename(tmp, tmp.with_name(f"{tmp.name}.stale-{stamp}"))
    else:
        tmp.unlink()


def aside_name(path: Path, tag: str, now: datetime) -> Path:
    """A free name beside ``path`` for a copy of it set aside: ``<name><tag><timestamp>``,
    ``-1``, ``-2`` ... after it while one is taken (by anything, a dangling symlink too)."""
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    target = path.with_name(f"{path.name}{tag}{stamp}")
    suffix = 1
    while os.path.lexists(target):
        target = path.with_name(f"{path.name}{tag}{stamp}-{suffix}")
        suffix += 1
    return target


CORRUPT_SUFFIX = ".corrupt-"
"""``<name>.corrupt-<timestamp>``: a file that did not parse, moved aside (``quarantine``)."""


def quarantine(path: Path, now: datetime) -> Path | None:
    """Move ``path`` aside to ``<name>.corrupt-<timestamp>``; never deletes. None if it failed."""
    target = aside_name(path, CORRUPT_SUFFIX, now)
    try:
        os.rename(path, target)
    except OSError:
        return None
    return target


UNCOMPACTED_SUFFIX = ".uncompacted-"
"""``<id>.json.uncompacted-<time>``: a session file as it was before a resume compacted
turns it held in full (``keep_aside``)."""


def keep_aside(path: Path, now: datetime) -> Path:
    """Keep ``path``'s content as it is now at ``<name>.uncompacted-<timestamp>`` (beside
    it, named as ``quarantine`` names a corrupt file), the file itself staying: a hard link,
    so a 29 MB file costs no copy, and the next atomic save, which renames a new file over
    the name, leaves it whole. A name that already holds this very file is kept as it is
    (a resume of the same file again). Raises OSError if it cannot be kept."""
    for kept in sorted(path.parent.glob(f"{path.name}{UNCOMPACTED_SUFFIX}*")):
        with contextlib.suppress(OSError):
            if os.path.samefile(kept, path):
                return kept
    target = aside_name(path, UNCOMPACTED_SUFFIX, now)
    try:
        os.link(path, target, follow_symlinks=False)
    except OSError:  # a file system without hard links: a copy, as private as the file
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as out, open(path, "rb") as source:
            shutil.copyfileobj(source, out, 1 << 20)
            out.flush()
            os.fsync(out.fileno())
    fsync_dir(path.parent)
    return target


def atomic_write(
    path: Path,
    data: bytes | Sequence[bytes],
    *,
    sync_dir: bool = True,
    durable: bool = True,
    tmp: Path | None = None,
) -> Path | None:
    """Replace ``path`` with ``data`` (bytes, or buffers written one after the other),
    mode 0600 whatever the umask; returns where a directory found at ``path`` was moved
    aside (None: there was none), for the caller to tell.

    Each file has a single writer (the StorageActor), so the fixed temp name
    (``tmp``, default ``temp_path(path)``) never races. Raises FileNotFoundError
    when the directory is missing. ``sync_dir=False`` leaves the fsync of the
    directory to the caller (who writes several files into it and syncs it once);
    ``durable=False`` makes no fsync at all (for caches, which may be lost). A
    failed write leaves no temp.
    """
    staging = temp_path(path) if tmp is None else tmp
    return _replace(
        path, staging, data, FILE_MODE, sync_dir and durable, durable, clear_stale=True
    )


def replace_workspace_file(
    path: Path,
    data: bytes,
    *,
    mode: int | None = None,
    sync_dir: bool = True,
    clear_temps: bool = True,
) -> None:
    """Atomically and durably replace a user's file: temp file in the same directory, fsync,
    rename, fsync of the directory (unless ``sync_dir`` is False: the caller syncs it once
    for several files); the file gets ``mode`` (permission bits, whatever the umask: a
    restore's), else keeps its own (a new file gets 0666 less the umask). Never follows a
    symlink: one at ``path`` is refused (OSError ELOOP). Then the temps a killed write of
    it left are cleared (unless ``clear_temps`` is False: the caller clears them for
    several files at once, ``clear_stale_workspace_temps_of``)."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        pass  # a new file: ``mode``, or the default
    else:
        if stat.S_ISLNK(info.st_mode):
            raise OSError(errno.ELOOP, "is a symlink; not following it", str(path))
        if not stat.S_ISREG(info.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        mode = stat.S_IMODE(info.st_mode) if mode is None else mode
    tmp = path.with_name(f".{_temp_stem(path.name)}.{secrets.token_hex(4)}{WORKSPACE_TEMP_SUFFIX}")
    _replace(path, tmp, data, mode, sync_dir, durable=True)
    if clear_temps:
        clear_stale_workspace_temps(path)


NAME_MAX = 255
_TEMP_EXTRA = len(f"..{'0' * 8}{WORKSPACE_TEMP_SUFFIX}")


def _temp_stem(name: str) -> str:
    """``name`` as a workspace temp's name holds it: its bytes cut so that the temp's name
    stays within ``NAME_MAX`` bytes (a file whose own name was that long could be neither
    written nor restored). A cut mid-character is fine: a name is bytes to the kernel."""
    raw = os.fsencode(name)
    if len(raw) + _TEMP_EXTRA <= NAME_MAX:
        return name
    return os.fsdecode(raw[: NAME_MAX - _TEMP_EXTRA])


def clear_stale_workspace_temps(path: Path, now: float | None = None) -> list[str]:
    """Remove the temps of ``path`` that a writer killed mid-write left behind (their
    names are random, so no later write reuses them); see ``clear_stale_temps``."""
    return clear_stale_workspace_temps_of([path], now)


def clear_stale_workspace_temps_of(paths: Iterable[Path], now: float | None = None) -> list[str]:
    """``clear_stale_workspace_temps`` of each of ``paths``, each directory read once (read
    once a file, a resume of 20,000 templates in one directory took minutes of CPU)."""
    stems: dict[Path, set[str]] = {}
    for path in paths:
        stems.setdefault(path.parent, set()).add(_temp_stem(path.name))
    removed: list[str] = []
    for directory, names in stems.items():
        removed += clear_stale_temps(directory, partial(_is_temp_of, names), now)
    return removed


def _is_temp_of(stems: AbstractSet[str], name: str) -> bool:
    """Whether ``name`` is a workspace temp of a file whose stem is among ``stems``."""
    return workspace_temp_stem(name) in stems


def clear_stale_temps(
    directory: Path, names: re.Pattern[str] | Callable[[str], bool], now: float | None = None
) -> list[str]:
    """Remove the regular files of ``directory`` whose whole name matches ``names`` (or
    that ``names`` accepts) and
    that are older than ``STALE_TEMP_S`` (a younger one may be another writer's, in
    flight): temps with names of their own (random, per process) that a writer killed
    mid-write left. The names of those removed (best effort: an error leaves them)."""
    removed: list[str] = []
    moment = time.time() if now is None else now
    accepts = names.fullmatch if isinstance(names, re.Pattern) else names
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if not accepts(entry.name):
                    continue
                info = entry.stat(follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and moment - info.st_mtime > STALE_TEMP_S:
                    os.unlink(entry.path)
                    removed.append(entry.name)
    except OSError:
        pass
    return removed


def write_creating_directories(path: Path, data: bytes | Sequence[bytes]) -> Path | None:
    """``atomic_write``, creating the private directories first if they are missing."""
    try:
        return atomic_write(path, data)
    except FileNotFoundError:
        ensure_private_dir(path.parent)
        return atomic_write(path, data)


def _replace(
    path: Path,
    tmp: Path,
    data: bytes | Sequence[bytes],
    mode: int | None,
    sync_dir: bool,
    durable: bool,
    *,
    clear_stale: bool = False,
) -> Path | None:
    """Create ``tmp``, write it, fsync it, rename it over ``path``, fsync the directory.
    The temp file gets ``mode``; None: 0666 less the umask, as a new file. Each step
    passes the fault-injection seam (``session/faults.py``). Returns where a directory
    at ``path`` was moved aside (``clear_stale`` only), else None."""
    aside: Path | None = None
    inject("open", path)
    fd = _create(tmp, 0o666 if mode is None else mode, clear_stale)
    try:
        if mode is not None:
            os.fchmod(fd, mode)  # not less the umask
        inject("write", path)
        _write_all(fd, [data] if isinstance(data, bytes) else data)
        if durable:
            inject("fsync", path)
            os.fsync(fd)
        os.close(fd)
        fd = -1
        inject("rename", path)
        try:
            os.replace(tmp, path)
        except IsADirectoryError:
            if not clear_stale:  # a user's file: never moved
                raise
            aside = quarantine(path, utc_now())  # a directory at our file's name, by hand
            if aside is None:
                raise
            log.warning("a directory was at %s; moved aside to %s", path, aside.name)
            os.replace(tmp, path)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(OSError):
            if os.path.isfile(tmp) and not os.path.islink(tmp):
                tmp.unlink()
        raise
    if sync_dir:
        inject("dirsync", path)
        fsync_dir(os.path.dirname(path))
    return aside


def _create(tmp: Path, mode: int, clear_stale: bool) -> int:
    """``tmp`` created afresh for writing (surely a new regular file of ours); with
    ``clear_stale``, whatever holds the name is cleared first."""
    try:
        return os.open(tmp, _CREATE, mode)
    except FileExistsError:
        if not clear_stale:
            raise
    clear_stale_temp(tmp)
    return os.open(tmp, _CREATE, mode)


def _write_all(fd: int, parts: Sequence[bytes]) -> None:
    """Write ``parts`` one after the other with ``writev``, resuming after short writes."""
    pending = [memoryview(part) for part in parts if part]
    at = 0
    while at < len(pending):
        written = os.writev(fd, pending[at : at + IOV_MAX])
        if not written:
            raise OSError(errno.EIO, "the file took no bytes")
        while written:
            if written >= len(pending[at]):
                written -= len(pending[at])
                at += 1
            else:
                pending[at] = pending[at][written:]
                written = 0
