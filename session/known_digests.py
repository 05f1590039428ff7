"""Digests of workspace files read before, known again by ``lstat`` while a file stays as
it was: a checkpoint with nothing changed does not read and hash every tracked file again.

A file's identity is what ``lstat`` says of it: device, inode, mode, size, mtime and
ctime. A ``write``, a ``chmod``, a rename over it or a ``touch`` moves its ctime, which,
unlike the mtime, no tool sets back. But the stamp comes from a clock that ticks (a
jiffy, 1-10 ms, on Linux; a second or two on old file systems) and lags
``time.time_ns()`` by up to a jiffy, so a write just after the read can get the stamp
of the file's last change, when that change was recent: the digest of a file whose
ctime is within ``margin_ns`` (a stamp's tick plus that lag) of the moment before it
was opened is not kept, and it is read again next time (git's "racy" entries).

As for git, what no stamp shows is not seen: writes through a shared ``mmap`` (only the
first to a page moves the ctime until the page is written back, which on tmpfs is
never). Files are known only on the local file systems whose ctime is the kernel's own
stamp of every change (``STAMPING_FILE_SYSTEMS``, told by ``/proc/self/mountinfo``): not
on a network one (its ``stat`` can be cached for seconds while another machine writes),
a FUSE one, or FAT (whose ctime is only the mtime); nor where there is no mountinfo.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

FileIdentity = tuple[int, int, int, int, int, int]
"""``lstat``'s device, inode, mode, size, mtime and ctime (in ns) of a file."""

FINE_MARGIN_NS: Final = 50_000_000
"""A file system with sub-millisecond stamps: Linux's coarse clock ticks every 1-10 ms."""
COARSE_MARGIN_NS: Final = 2_000_000_000 + FINE_MARGIN_NS
"""A file system whose stamps are whole milliseconds or coarser: FAT's 2 s, and the
tick the stamping clock can lag by."""
STAMPING_FILE_SYSTEMS: Final = frozenset(
    {"ext2", "ext3", "ext4", "xfs", "btrfs", "tmpfs", "f2fs", "zfs", "bcachefs", "overlay"}
)
"""Local file systems whose ctime moves with every change made on this machine."""
MOUNTINFO: Final = "/proc/self/mountinfo"
MAX_KNOWN: Final = 100_000
"""Files remembered at most (about 200 bytes each); the oldest are forgotten first."""


def identity(info: os.stat_result) -> FileIdentity:
    return (
        info.st_dev,
        info.st_ino,
        info.st_mode,
        info.st_size,
        info.st_mtime_ns,
        info.st_ctime_ns,
    )


def margin_ns(ctime_ns: int) -> int:
    """How long a change can go unseen in a ctime like this one: stamps that are whole
    milliseconds tell a file system that ticks slowly."""
    return COARSE_MARGIN_NS if ctime_ns % 1_000_000 == 0 else FINE_MARGIN_NS


def settled(info: os.stat_result, opened_at_ns: int) -> bool:
    """Whether any change after ``opened_at_ns`` (``time.time_ns()`` before the file was
    opened, then ``fstat``ed) would show in its ctime: its ctime is at least a tick of the
    file system's clock older."""
    return info.st_ctime_ns + margin_ns(info.st_ctime_ns) < opened_at_ns


def file_systems(mountinfo: str) -> dict[int, str]:
    """The file system type of each mounted device (``st_dev``), from the text of
    ``/proc/<pid>/mountinfo``: its third field is ``major:minor``, and the type is the
    first field after the lone ``-`` (optional fields stand between)."""
    types: dict[int, str] = {}
    for line in mountinfo.splitlines():
        fields = line.split(" ")
        try:
            major, minor = fields[2].split(":")
            kind = fields[fields.index("-", 6) + 1]
            types[os.makedev(int(major), int(minor))] = kind
        except (IndexError, ValueError):
            continue  # not a mount line as the kernel writes them
    return types


class StampingDevices:
    """Whether a device's file system stamps every change (``STAMPING_FILE_SYSTEMS``); the
    mounts read again when a device not seen before comes (mounted since)."""

    def __init__(self, mountinfo: str = MOUNTINFO) -> None:
        self._mountinfo = mountinfo
        self._verdicts: dict[int, bool] = {}

    def __call__(self, device: int) -> bool:
        verdict = self._verdicts.get(device)
        if verdict is None:
            try:
                with open(self._mountinfo, encoding="utf-8", errors="replace") as mounts:
                    types = file_systems(mounts.read())
            except OSError:  # not Linux, or no /proc: nothing is known
                types = {}
            self._verdicts.update({d: t in STAMPING_FILE_SYSTEMS for d, t in types.items()})
            verdict = self._verdicts.setdefault(device, False)
        return verdict


@dataclass(frozen=True, slots=True)
class Known:
    """A file as it was when its digest was taken."""

    digest: str
    mode: int
    """Its permission bits (``stat.S_IMODE``)."""
    size: int


class KnownDigests:
    """The digests of files by absolute path, each with the identity it had when read."""

    def __init__(
        self,
        limit: int = MAX_KNOWN,
        clock: Callable[[], int] = time.time_ns,
        stamping: Callable[[int], bool] | None = None,
    ) -> None:
        """``clock``: the time now, in ns since the epoch, as file systems stamp changes;
        ``stamping``: whether the file system of a device stamps every change."""
        self._limit = limit
        self._known: dict[str, tuple[FileIdentity, Known]] = {}
        self._lock = threading.Lock()  # worker threads may share it
        self.clock = clock
        self._stamping = StampingDevices() if stamping is None else stamping

    def __len__(self) -> int:
        return len(self._known)

    def lookup(self, path: str) -> Known | None:
        """What ``path`` held when it was read, if ``lstat`` shows it unchanged since (a
        symlink put in its place is not followed: it is a change)."""
        entry = self._known.get(path)
        if entry is None:
            return None
        try:
            info = os.lstat(path)
        except OSError:
            return None
        if identity(info) != entry[0]:
            return None
        return entry[1]

    def remember(self, path: str, info: os.stat_result, known: Known, opened_at_ns: int) -> None:
        """``path``, whose ``fstat`` gave ``info``, held ``known`` when read after
        ``opened_at_ns`` (``clock()`` before it was opened): kept unless it changed too
        recently to tell a later change, or its file system does not stamp every change."""
        keep = settled(info, opened_at_ns) and self._stamping(info.st_dev)
        with self._lock:
            self._known.pop(path, None)
            if keep:
                self._known[path] = (identity(info), known)
                if len(self._known) > self._limit:
                    del self._known[next(iter(self._known))]
