"""DriftWatcherActor: tells a TerminalActor when one of its tracked files changes outside.

watchdog's observer thread puts the paths of raw events in a set and, when it was
empty, has the event loop take them (never waiting for it): the loop hands the actor
all the paths it finds at once, in one message. Bursts coalesce over ``SETTLE_S``, and a
settled burst's files are hashed in worker threads, up to ``HASH_BATCH`` files a call.
Observer methods are called from worker threads too (they take the lock watchdog holds
while it calls handlers). A tracked file's directory that is removed (its inotify watch
ends with it) or missing is followed from the nearest directory above it, and watched
again once it is back. Each directory newly watched has its tracked files compared: a
change made before its watch was in place gives no event.
"""

from __future__ import annotations

import errno
import logging
import os
import posixpath
import stat
import threading
from collections.abc import Callable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.lowlevel import EventLoopToken, current_token
from anyio.streams.memory import MemoryObjectReceiveStream
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    EventsLostEvent,
    FileAttribEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers.api import BaseObserver, ObservedWatch

from actors.base import Actor, ActorRef, DeadActor, Envelope, TellsInOrder
from actors.drift_layout import Layout
from actors.messages import (
    DriftMessage,
    FilesChanged,
    FsEvents,
    Settle,
    TerminalMessage,
    Unwatch,
    Watch,
    WatchUnavailable,
    Writing,
    Wrote,
)
from actors.observer import make_observer
from session.filesystem import inside_parts, safe_relative_paths, tracked_digests

log = logging.getLogger("agent_assist.drift")
SETTLE_S = 0.1
CHANGE_EVENTS = frozenset({"modified", "created", "deleted", "moved", "closed", "attrib"})
STRUCTURAL_EVENTS = frozenset({"created", "deleted", "moved"})
WATCHED_EVENTS: list[type[FileSystemEvent]] = [
    FileModifiedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileMovedEvent,
    FileAttribEvent,
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    EventsLostEvent,
]
"""What inotify is asked for: ``CHANGE_EVENTS`` (a directory's "modified" is ignored, see
``_Bridge``), a file's mode or owner changed (a ``chmod 000`` makes it unreadable: told;
one that leaves its content readable and the same changes no digest: not told, H152), and
word of events the kernel dropped. Opens and reads are not asked for:
``sed -i`` reading each file and our own hashing of it doubled the events watchdog sorts
in a flood."""
EVENTS_LOST = EventsLostEvent.event_type
REWATCH_ROUNDS = 8
"""A bound on watching anew while directories come and go under the watcher's feet."""
HASH_BATCH = 256
"""Files hashed in one worker-thread call (a thread hop per file cost more than hashing a
small one; a bounded batch keeps a stop from waiting on thousands)."""


@dataclass(frozen=True)
class _Entry:
    workspace: Path
    manifest: dict[str, str]
    notify: ActorRef[TerminalMessage]
    files: frozenset[str]
    """The tracked files' full paths (those that stay inside the workspace)."""
    directories: frozenset[str]
    """Each directory that holds one of them or leads to one (made by ``_entry``)."""
    relatives: dict[str, tuple[str, ...]]
    """Each tracked file's full path (inside the workspace or not), and the manifest's
    names for it: a settle looks up the paths that changed instead of joining every
    tracked file's path again (20,000 joins a settle, ten settles a second, in a flood)."""
    holders: frozenset[str] = frozenset()
    """The directories among ``directories`` to watch: the workspace and those below it
    (watchdog tells nothing when a watched directory itself is moved, its parent's watch
    does)."""


def _entry(workspace: Path, manifest: dict[str, str], notify: ActorRef[TerminalMessage]) -> _Entry:
    """An entry with its paths worked out once (a restructuring of the watches walked
    every terminal's paths again, checking each: 500 terminals leaving took 4 s)."""
    files: set[str] = set()
    directories: set[str] = set()
    relatives: dict[str, tuple[str, ...]] = {}
    safe = set(safe_relative_paths(workspace, manifest))  # each directory resolved once
    root = str(workspace).rstrip("/")  # "" for the root directory itself
    parents: set[str] = set()  # each directory's way up worked out once ("" is the root)
    for relative in manifest:
        parts = inside_parts(relative)
        # ``str(workspace / relative)``, without pathlib's cost (20,000 templates: 1.2 s)
        name = str(workspace / relative) if parts is None else "/".join((root, *parts))
        relatives[name] = (*relatives.get(name, ()), relative)
        if parts is None:
            continue
        files.add(name)
        if relative not in safe:  # a symlink on the way: watched up to it (never through
            directories.update(_up_to_a_symlink(workspace, Path(name)))  # it), and seen
            continue  # when it is a directory again
        parent = name.rpartition("/")[0]
        while parent not in parents:  # up to the root
            parents.add(parent)
            parent = parent.rpartition("/")[0]
    directories.update(parent or "/" for parent in parents)
    below = root + os.sep
    holders = frozenset(d for d in directories if d == str(workspace) or d.startswith(below))
    return _Entry(
        workspace,
        dict(manifest),
        notify,
        frozenset(files),
        frozenset(directories),
        relatives,
        holders,
    )


def _up_to_a_symlink(workspace: Path, full: Path) -> list[str]:
    """The directories on the way to ``full``: from the root down to the first that is not a
    plain directory (a symlink, or missing), that one included."""
    found = [str(directory) for directory in workspace.parents] + [str(workspace)]
    for directory in reversed(full.parents):
        if directory == workspace or workspace not in directory.parents:
            continue
        found.append(str(directory))
        if directory.is_symlink() or not directory.is_dir():
            break
    return found


@dataclass
class WatchedFiles:
    """What the DriftWatcherActor must not forget when it restarts: each terminal's tracked
    files and their last known digests (a crash used to end live drift notices silently
    for every session)."""

    entries: dict[int, _Entry] = field(default_factory=dict)


class _Bridge(FileSystemEventHandler):
    """Runs in the observer thread: collect the paths of events for interesting paths (the
    tracked files, and the directories on the way to them, whose removal or creation
    changes what must be watched), never wait for the event loop (watchdog holds its lock
    while it calls us: FACTS.md)."""

    def __init__(self, ref: ActorRef[DriftMessage], token: EventLoopToken) -> None:
        self._ref = ref
        self._token = token
        self.files: frozenset[str] = frozenset()
        self.directories: frozenset[str] = frozenset()
        self._wanted: frozenset[bytes] = frozenset()
        self.tasks: TaskGroup | None = None
        """Where the paths a full mailbox did not take are delivered from (the actor's)."""
        self._lock = threading.Lock()
        self._arrived: set[str] = set()
        """Paths the observer thread saw that the event loop has yet to take (under
        ``_lock``; it has been asked to take them, unless this and ``_lost`` are empty)."""
        self._lost = False
        """Whether the kernel dropped events since the loop last took what arrived."""
        self._waiting: set[str] = set()
        """Paths a full mailbox did not take (bounded by the tracked paths); touched on the
        event loop only."""
        self._waiting_lost = False
        self._delivering = False

    def track(self, files: frozenset[str], directories: frozenset[str]) -> None:
        """The paths whose events are wanted from now on."""
        self.files = files
        self.directories = directories
        self._wanted = frozenset(map(os.fsencode, files | directories))

    def wants(self, path: bytes) -> bool:
        """Whether a file's event at ``path`` may matter (the observer's reader thread asks,
        and drops the others before watchdog builds them: ``actors/observer.py``)."""
        return path in self._wanted

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type == EVENTS_LOST:  # the kernel's queue overflowed (a flood
            self._hand_over([], lost=True)  # while the machine is busy): events of every
            return  # watch were dropped, and their changes must not be
        if event.event_type not in CHANGE_EVENTS:
            return  # opens and reads (our own hashing among them) change nothing
        # A directory "modified" is a file made or removed in it: only its own coming and
        # going changes what must be watched.
        structural = event.event_type in STRUCTURAL_EVENTS
        found = []
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = os.fsdecode(raw)
            if path and (path in self.files or (structural and path in self.directories)):
                found.append(path)
        if found:
            self._hand_over(found)

    def _hand_over(self, paths: list[str], lost: bool = False) -> None:
        """Leave ``paths`` for the event loop; ask it to take them unless it was asked
        already. One call into the loop for all that arrives until it runs: a flood's
        events, one wait on the loop each, kept it busy with 20,000 wake-ups."""
        with self._lock:
            ask = not self._arrived and not self._lost
            self._arrived.update(paths)
            self._lost = self._lost or lost
        if ask:
            try:
                self._token.backend_class.run_sync_soon(
                    self._take_arrived, (), self._token.native_token
                )
            except Exception:  # the loop is gone: nothing left to tell
                return

    def _take_arrived(self) -> None:
        """On the event loop: offer what arrived to the actor, in one message. A full
        mailbox (while the actor hashes) keeps the paths, delivered as soon as there is
        room: dropped, their change was never told (``sed -i`` over 2,000 files told 1,380)."""
        with self._lock:
            arrived, self._arrived = self._arrived, set()
            lost, self._lost = self._lost, False
        if not arrived and not lost:
            return
        nothing_waits = not self._waiting and not self._waiting_lost
        if nothing_waits and self._ref.tell_nowait(FsEvents(frozenset(arrived), lost)):
            return
        if self.tasks is None:
            return
        self._waiting |= arrived
        self._waiting_lost = self._waiting_lost or lost
        if not self._delivering:
            self._delivering = True
            self.tasks.start_soon(self._deliver_waiting)

    async def _deliver_waiting(self) -> None:
        try:
            while self._waiting or self._waiting_lost:
                paths, self._waiting = frozenset(self._waiting), set()
                lost, self._waiting_lost = self._waiting_lost, False
                await self._ref.tell(FsEvents(paths, lost))
        except DeadActor:
            self._waiting.clear()
            self._waiting_lost = False
        finally:
            self._delivering = False


class DriftWatcherActor(Actor[DriftMessage]):
    name = "drift"

    def __init__(
        self,
        self_ref: ActorRef[DriftMessage],
        observer_factory: Callable[[], BaseObserver] = make_observer,
        watched: WatchedFiles | None = None,
    ) -> None:
        """``watched`` outlives this incarnation: a restart watches those files again."""
        self._self = self_ref
        self._observer_factory = observer_factory
        """Makes the watchdog observer (a seam: tests hand in one that fails)."""
        self._entries = (WatchedFiles() if watched is None else watched).entries
        self._layout = Layout()
        """What the owners' entries need watched, kept with them (``_put``, ``_drop``)."""
        for entry in self._entries.values():
            self._layout.add(entry.files, entry.directories, entry.holders)
        self._failed = False
        """Whether the last ``_reschedule`` could not make a watch it wanted."""
        self._pending: set[str] = set()
        self._settling = False
        self._restructured = False
        self._observer: BaseObserver | None = None
        self._bridge: _Bridge | None = None
        self._scheduled: dict[str, tuple[ObservedWatch, _Identity]] = {}
        """Each watched directory, and the identity it had when its watch was made: a
        directory removed (its watch dies with it) or replaced is watched anew."""
        self._directories: frozenset[str] = frozenset()
        """The directories on the way to tracked files (see ``_layout``)."""
        self._tg: TaskGroup | None = None
        self._writing: dict[str, tuple[int, str]] = {}
        """Each file a session's running turn is called to write (``Writing``): its owner
        and session id."""
        self._wrote: dict[str, tuple[str, int, str]] = {}
        """Each tracked file a session's turn wrote last (``Wrote``): the digest it wrote,
        its owner and session id."""
        self._tells = TellsInOrder()
        """What the owners are told: a terminal that reads nothing (stopped with Ctrl+Z,
        its mailbox full) holds up no other terminal's notices, nor this actor."""

    async def serve(self, mailbox: MemoryObjectReceiveStream[Envelope[DriftMessage]]) -> None:
        self._bridge = _Bridge(self._self, current_token())
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
                self._bridge.tasks = tg
                if self._entries:  # a restart: what changed while nobody watched is told too
                    await self._reschedule()
                    await self._settle(self._tracked_paths())
                await super().serve(mailbox)
                tg.cancel_scope.cancel()
        finally:
            if self._observer is not None:
                observer = self._observer
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(_stop_observer, observer)

    async def handle(self, message: DriftMessage) -> Any:
        match message:
            case Watch(owner, workspace, manifest, notify):
                before = self._entries.get(owner)
                entry = _entry(workspace.resolve(), dict(manifest), notify)
                self._put(owner, entry)
                compared = await self._rewatch() if self._must_rewatch() else set()
                # A file newly tracked, its directory already watched, may have changed
                # between the owner's hashing and now, when its events start being
                # forwarded (a file deleted as the prompt came back went untold): compared
                # once, as if an event had come.
                self._look_at(entry.files - (before.files if before else frozenset()) - compared)
            case Unwatch(owner):
                self._forget_writes_of(owner)
                if self._drop(owner) and self._must_rewatch():
                    await self._rewatch()
            case Writing(owner, session_id, workspace, paths):
                root = workspace.resolve()
                for path in paths:
                    self._writing[str(root / posixpath.normpath(path))] = (owner, session_id)
            case Wrote(owner, session_id, workspace, written):
                self._writing = {p: w for p, w in self._writing.items() if w[0] != owner}
                root = workspace.resolve()
                for path, digest in written.items():
                    self._wrote[str(root / path)] = (digest, owner, session_id)
            case FsEvents(paths, lost):
                if lost:  # any tracked file may have changed, any directory come or gone
                    # (one made again with the identity the old had keeps a dead watch,
                    # passing for it): every file compared, every watch made anew
                    self._restructured = True
                    paths = paths | self._tracked_paths() | self._scheduled.keys()
                self._look_at(paths)
            case Settle():
                self._settling = False
                pending, self._pending = self._pending, set()
                if self._restructured:  # a directory came or went: watch what is there now,
                    self._restructured = False  # and compare the files below it (some may
                    await self._retire(pending)  # have changed before their watch was in
                    compared = await self._rewatch()  # place)
                    moved = [d + os.sep for d in pending if d in self._directories]
                    pending |= {p for p in self._tracked_paths() if p.startswith(tuple(moved))}
                    pending -= compared
                if await self._settle(pending):
                    # A file gone may have gone with its directory, whose own removal is
                    # not always reported (the whole workspace, deleted): watch what is
                    # there now, so that its coming back is seen.
                    await self._rewatch()

    def _put(self, owner: int, entry: _Entry) -> None:
        """``owner`` watches ``entry`` now (instead of what it watched before: counted out
        after, so that a path kept is not taken for one gone and come back)."""
        self._layout.add(entry.files, entry.directories, entry.holders)
        self._drop(owner)
        self._entries[owner] = entry

    def _drop(self, owner: int) -> bool:
        """``owner`` watches nothing now; whether it watched something."""
        entry = self._entries.pop(owner, None)
        if entry is None:
            return False
        self._layout.remove(entry.files, entry.directories, entry.holders)
        return True

    def _must_rewatch(self) -> bool:
        """Whether a Watch or an Unwatch must look at the watches again: a path came or
        went, or the watcher could not start or watch a directory (the owner must be
        told). Else what is watched stays, and no thread is asked (500 terminals of one
        workspace leaving asked one each)."""
        return self._layout.changed or self._observer is None or self._failed

    def _forget_writes_of(self, owner: int) -> None:
        """``owner`` leaves: its claims end, and what it wrote is remembered only where a
        file is still tracked (the list stays as short as the tracked files)."""
        self._writing = {p: w for p, w in self._writing.items() if w[0] != owner}
        tracked = self._tracked_paths()
        self._wrote = {p: w for p, w in self._wrote.items() if p in tracked}

    def _writer(self, owner: int, path: str, digest: str) -> str:
        """The id of the other session that wrote ``path`` (full), found holding
        ``digest``: one whose running turn is writing it, or whose turn wrote that
        content there last; "" if none (it changed outside agent-assist)."""
        claim = self._writing.get(path)
        if claim is not None and claim[0] != owner:
            return claim[1]
        wrote = self._wrote.get(path)
        if wrote is not None and wrote[1] != owner and wrote[0] == digest:
            return wrote[2]
        return ""

    def _look_at(self, paths: AbstractSet[str]) -> None:
        """Compare ``paths`` at the end of the burst they are part of (``SETTLE_S``)."""
        if not paths:
            return
        self._pending |= paths
        if not self._restructured and not self._directories.isdisjoint(paths):
            self._restructured = True
        if not self._settling and self._tg is not None:
            self._settling = True
            self._tg.start_soon(self._settle_later)

    async def _retire(self, paths: set[str]) -> None:
        """Stop the watches of the watched directories among ``paths`` (each came, went or
        moved): a watch ends with its directory, and one made again at once has the same
        identity on ext4 (its inode is reused), so it would pass for the old one's."""
        if self._observer is None:
            return
        for directory in paths & self._scheduled.keys():
            watch, _ = self._scheduled.pop(directory)
            await anyio.to_thread.run_sync(_unschedule, self._observer, watch)

    async def _rewatch(self) -> set[str]:
        """Watch what must be watched now, and compare the tracked files below each
        directory newly watched: one changed (a directory made again, a file written)
        before its watch was in place gives no event, and was told by nothing. Returns
        the files compared."""
        compared: set[str] = set()
        for _ in range(REWATCH_ROUNDS):
            placed = await self._reschedule()
            if not placed:
                break
            below = tuple(directory + os.sep for directory in placed)
            now = {p for p in self._tracked_paths() if p.startswith(below)}
            compared |= now
            if not await self._settle(now):
                break  # nothing gone: what must be watched is what is watched
        return compared

    async def _settle_later(self) -> None:
        await anyio.sleep(SETTLE_S)
        await self._self.tell(Settle())

    async def _settle(self, paths: AbstractSet[str]) -> bool:
        """Tell each owner which of its files among ``paths`` changed; whether one of
        them is gone."""
        gone = False
        asked: dict[int, dict[str, str]] = {}
        for owner, entry in self._entries.items():
            fulls = {r: path for path in paths for r in entry.relatives.get(path, ())}
            if fulls:
                asked[owner] = fulls
        digests = await self._hash(
            {(self._entries[owner].workspace, r) for owner, fulls in asked.items() for r in fulls}
        )
        for owner, fulls in asked.items():
            entry = self._entries[owner]
            changed: dict[str, str] = {}
            by: dict[str, str] = {}
            for relative, full in fulls.items():
                now = digests[entry.workspace, relative]
                if (now or "") != entry.manifest[relative]:  # "": gone, told so already
                    changed[relative] = now or ""
                    by[relative] = self._writer(owner, full, now or "")
                    gone = gone or now is None
            if not changed:
                continue
            self._entries[owner] = replace(entry, manifest={**entry.manifest, **changed})
            told = tuple(sorted(changed))
            writers = tuple(by[p] for p in told) if any(by.values()) else ()
            seen = tuple(changed[p] for p in told)
            if not self._tells.tell(entry.notify, FilesChanged(told, seen, writers)):
                self._drop(owner)
        return gone

    async def _hash(
        self, files: AbstractSet[tuple[Path, str]]
    ) -> dict[tuple[Path, str], str | None]:
        """Each of ``files`` (a workspace, a tracked file in it) hashed once, whatever the
        number of owners tracking it (500 terminals of one workspace attaching hashed its
        files once per owner: 39,601 hops to a thread), up to ``HASH_BATCH`` a call."""
        by_workspace: dict[Path, list[str]] = {}
        for workspace, relative in sorted(files):
            by_workspace.setdefault(workspace, []).append(relative)
        digests: dict[tuple[Path, str], str | None] = {}
        for workspace, relatives in by_workspace.items():
            for start in range(0, len(relatives), HASH_BATCH):
                batch = relatives[start : start + HASH_BATCH]
                found = await anyio.to_thread.run_sync(_digests, workspace, batch)
                digests.update(((workspace, r), d) for r, d in zip(batch, found, strict=True))
        return digests

    def _tracked_paths(self) -> frozenset[str]:
        """The tracked files' paths, as the last ``_reschedule`` worked them out."""
        assert self._bridge is not None
        return self._bridge.files

    async def _reschedule(self) -> set[str]:
        """Watch the directories holding tracked files and those on the way to them from
        the workspace (the nearest existing one on the way to a file whose directory is
        missing, so that its making is seen); stop watching
        the rest, and watch anew a directory removed or replaced since its watch. Until
        what must be watched stands still: a directory made before the watch above it
        was in place gives no event. Returns the directories newly watched."""
        assert self._bridge is not None
        # The tracked files' paths, each directory that holds one or leads to one (the
        # workspace's own ancestors too: a workspace deleted and made again is seen coming
        # back), and every directory from a workspace down to its tracked files.
        files, self._directories, holders = self._layout.take()
        self._bridge.track(files, self._directories)
        placed: set[str] = set()
        failed: set[str] = set()
        for _ in range(REWATCH_ROUNDS):
            wanted = await anyio.to_thread.run_sync(_watch_targets, holders)
            watched = {d: identity for d, (_, identity) in self._scheduled.items()}
            if watched == {d: i for d, i in wanted.items() if d not in failed}:
                break
            if not await self._place(wanted, placed, failed):
                break
        self._failed = bool(failed)
        return placed

    async def _place(
        self, wanted: dict[str, _Identity], placed: set[str], failed: set[str]
    ) -> bool:
        """Make the watches ``wanted`` (adding those made to ``placed``, those that could
        not be made to ``failed``: tried once); whether to look again (a watch was made,
        after which a directory made below it gives no event, or a directory was gone).
        Unwatching alone needs no second look: 500 terminals leaving took twice as long."""
        assert self._bridge is not None
        if self._observer is None and wanted:
            try:
                started = self._observer_factory()
                await anyio.to_thread.run_sync(started.start)
            except (OSError, RuntimeError) as exc:
                log.warning("the file watcher cannot start: %s", exc)
                await self._unavailable(
                    list(self._entries), f"the file watcher cannot start: {exc}"
                )
                return False
            self._observer = started
        observer = self._observer
        if observer is None:
            return False
        again = False
        for directory, (watch, identity) in list(self._scheduled.items()):
            if wanted.get(directory) != identity:
                del self._scheduled[directory]
                await anyio.to_thread.run_sync(_unschedule, observer, watch)
        for directory, identity in wanted.items():
            if directory in self._scheduled or directory in failed:
                continue
            try:
                watch = await anyio.to_thread.run_sync(
                    _schedule, observer, self._bridge, directory
                )
            except OSError as exc:
                if exc.errno in (errno.ENOENT, errno.ENOTDIR):
                    again = True  # gone since it was looked at: the next round finds what is
                    continue
                log.warning("cannot watch %s: %s", directory, exc)
                owners = [
                    owner
                    for owner, entry in self._entries.items()
                    if any(
                        str(entry.workspace / p).startswith(directory + os.sep)
                        for p in entry.manifest
                    )
                ]
                await self._unavailable(owners, f"cannot watch {directory}: {exc}")
                failed.add(directory)
                continue
            self._scheduled[directory] = (watch, identity)
            placed.add(directory)
            again = True
        return again

    async def _unavailable(self, owners: list[int], reason: str) -> None:
        """Those owners must compare hashes at each turn instead (they say so once)."""
        for owner in owners:
            entry = self._entries.get(owner)
            if entry is None:
                continue
            if not self._tells.tell(entry.notify, WatchUnavailable(reason)):
                self._drop(owner)


_Identity = tuple[int, int]
"""A directory's device and inode."""


def _watch_targets(holders: AbstractSet[str]) -> dict[str, _Identity]:
    """The directories to watch, with their identities: each of ``holders`` that exists,
    else the nearest existing directory above it (above the workspace, if that is gone
    too). Blocking."""
    targets: dict[str, _Identity] = {}
    for holder in sorted(holders):
        path = Path(holder)
        while True:
            try:
                info = os.stat(path, follow_symlinks=False)
            except OSError:
                info = None
            if info is not None and stat.S_ISDIR(info.st_mode):
                targets[str(path)] = (info.st_dev, info.st_ino)
                break
            if path.parent == path:
                break
            path = path.parent
    return targets


def _digests(workspace: Path, relatives: list[str]) -> list[str | None]:
    """Each tracked file's digest now (None: gone), in one worker-thread call. Blocking."""
    return tracked_digests(workspace, relatives)


def _schedule(observer: BaseObserver, handler: _Bridge, directory: str) -> ObservedWatch:
    return observer.schedule(handler, directory, recursive=False, event_filter=WATCHED_EVENTS)


def _unschedule(observer: BaseObserver, watch: ObservedWatch) -> None:
    """Stop a watch, whose directory may be gone already (its watch ended with it)."""
    try:
        observer.unschedule(watch)
    except (KeyError, OSError) as exc:
        log.debug("unscheduling %s: %s", watch.path, exc)


def _stop_observer(observer: BaseObserver) -> None:
    observer.stop()
    observer.join(timeout=5)
