"""DriftWatcherActor: tells a TerminalActor when one of its tracked files changes outside.

watchdog's observer thread hands raw events to this actor's mailbox through
anyio's thread bridge and never blocks on anything else; bursts coalesce over
``SETTLE_S`` and hashing runs in a worker thread. Observer methods are called
from worker threads too (they take the lock watchdog holds while it calls
handlers).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import TaskGroup
from anyio.lowlevel import EventLoopToken, current_token
from anyio.streams.memory import MemoryObjectReceiveStream
from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

from actors.base import Actor, ActorRef, DeadActor, Envelope
from actors.messages import (
    DriftMessage,
    FilesChanged,
    FsEvent,
    Settle,
    TerminalMessage,
    Unwatch,
    Watch,
    WatchUnavailable,
)
from session.filesystem import is_safe_relative_path, sha256_file

log = logging.getLogger("agent_assist.drift")
SETTLE_S = 0.1
CHANGE_EVENTS = frozenset({"modified", "created", "deleted", "moved", "closed"})


@dataclass(frozen=True)
class _Entry:
    workspace: Path
    manifest: dict[str, str]
    notify: ActorRef[TerminalMessage]


@dataclass
class WatchedFiles:
    """What the DriftWatcherActor must not forget when it restarts: each terminal's tracked
    files and their last known digests (a crash used to end live drift notices silently
    for every session)."""

    entries: dict[int, _Entry] = field(default_factory=dict)


class _Bridge(FileSystemEventHandler):
    """Runs in the observer thread: forward events for interesting paths, never wait long."""

    def __init__(self, ref: ActorRef[DriftMessage], token: EventLoopToken) -> None:
        self._ref = ref
        self._token = token
        self.interesting: frozenset[str] = frozenset()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in CHANGE_EVENTS:
            return  # opens and reads (our own hashing among them) change nothing
        for raw in (event.src_path, getattr(event, "dest_path", "")):
            path = os.fsdecode(raw)
            if path and path in self.interesting:
                try:
                    anyio.from_thread.run_sync(
                        self._ref.tell_nowait, FsEvent(path), token=self._token
                    )
                except Exception:  # the loop is gone: nothing left to tell
                    return


class DriftWatcherActor(Actor[DriftMessage]):
    name = "drift"

    def __init__(
        self,
        self_ref: ActorRef[DriftMessage],
        observer_factory: Callable[[], BaseObserver] = Observer,
        watched: WatchedFiles | None = None,
    ) -> None:
        """``watched`` outlives this incarnation: a restart watches those files again."""
        self._self = self_ref
        self._observer_factory = observer_factory
        """Makes the watchdog observer (a seam: tests hand in one that fails)."""
        self._entries = (WatchedFiles() if watched is None else watched).entries
        self._pending: set[str] = set()
        self._settling = False
        self._observer: BaseObserver | None = None
        self._bridge: _Bridge | None = None
        self._scheduled: dict[str, ObservedWatch] = {}
        self._tg: TaskGroup | None = None

    async def serve(self, mailbox: MemoryObjectReceiveStream[Envelope[DriftMessage]]) -> None:
        self._bridge = _Bridge(self._self, current_token())
        try:
            async with anyio.create_task_group() as tg:
                self._tg = tg
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
                self._entries[owner] = _Entry(workspace.resolve(), dict(manifest), notify)
                await self._reschedule()
            case Unwatch(owner):
                if self._entries.pop(owner, None) is not None:
                    await self._reschedule()
            case FsEvent(path):
                self._pending.add(path)
                if not self._settling and self._tg is not None:
                    self._settling = True
                    self._tg.start_soon(self._settle_later)
            case Settle():
                self._settling = False
                pending, self._pending = self._pending, set()
                await self._settle(pending)

    async def _settle_later(self) -> None:
        await anyio.sleep(SETTLE_S)
        await self._self.tell(Settle())

    async def _settle(self, paths: set[str]) -> None:
        for owner, entry in list(self._entries.items()):
            changed: dict[str, str] = {}
            for relative, digest in entry.manifest.items():
                if str(entry.workspace / relative) not in paths:
                    continue
                now = await anyio.to_thread.run_sync(sha256_file, entry.workspace / relative)
                if now != digest:
                    changed[relative] = now or ""
            if not changed:
                continue
            self._entries[owner] = replace(entry, manifest={**entry.manifest, **changed})
            try:
                await entry.notify.tell(FilesChanged(tuple(sorted(changed))))
            except DeadActor:
                self._entries.pop(owner, None)

    def _tracked_paths(self) -> set[str]:
        return {
            str(entry.workspace / relative)
            for entry in self._entries.values()
            for relative in entry.manifest
            if is_safe_relative_path(entry.workspace, relative)
        }

    async def _reschedule(self) -> None:
        """Watch the directories holding tracked files; stop watching the rest."""
        assert self._bridge is not None
        wanted: dict[str, None] = {}
        interesting: set[str] = set()
        for entry in self._entries.values():
            for relative in entry.manifest:
                if is_safe_relative_path(entry.workspace, relative):
                    full = entry.workspace / relative
                    interesting.add(str(full))
                    wanted.setdefault(str(full.parent), None)
        self._bridge.interesting = frozenset(interesting)
        if self._observer is None and wanted:
            try:
                started = self._observer_factory()
                await anyio.to_thread.run_sync(started.start)
            except (OSError, RuntimeError) as exc:
                log.warning("the file watcher cannot start: %s", exc)
                await self._unavailable(
                    list(self._entries), f"the file watcher cannot start: {exc}"
                )
                return
            self._observer = started
        observer = self._observer
        if observer is None:
            return
        for directory in [d for d in self._scheduled if d not in wanted]:
            watch = self._scheduled.pop(directory)
            await anyio.to_thread.run_sync(observer.unschedule, watch)
        for directory in [d for d in wanted if d not in self._scheduled]:
            if not await anyio.to_thread.run_sync(os.path.isdir, directory):
                continue
            try:
                self._scheduled[directory] = await anyio.to_thread.run_sync(
                    _schedule, observer, self._bridge, directory
                )
            except OSError as exc:
                log.warning("cannot watch %s: %s", directory, exc)
                owners = [
                    owner
                    for owner, entry in self._entries.items()
                    if any(str((entry.workspace / p).parent) == directory for p in entry.manifest)
                ]
                await self._unavailable(owners, f"cannot watch {directory}: {exc}")

    async def _unavailable(self, owners: list[int], reason: str) -> None:
        """Those owners must compare hashes at each turn instead (they say so once)."""
        for owner in owners:
            entry = self._entries.get(owner)
            if entry is None:
                continue
            try:
                await entry.notify.tell(WatchUnavailable(reason))
            except DeadActor:
                self._entries.pop(owner, None)


def _schedule(observer: BaseObserver, handler: _Bridge, directory: str) -> ObservedWatch:
    return observer.schedule(handler, directory, recursive=False)


def _stop_observer(observer: BaseObserver) -> None:
    observer.stop()
    observer.join(timeout=5)
