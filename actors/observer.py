"""The watchdog observer the DriftWatcherActor uses: watchdog's own, with its inotify rename
matching made linear.

watchdog (7.1) holds each watch's inotify events in a queue for half a second so that a
rename's two halves (``IN_MOVED_FROM``, ``IN_MOVED_TO``) become one moved event, and finds
a rename's first half by scanning that queue from its oldest event, twice per rename. In a
flood the queue backs up (thousands of events: its reader sleeps half a second whenever an
unpaired first half is at its head), and the first half is almost always the newest event:
``sed -i`` over 20,000 files (each a temp file renamed over the original) made 70 million
comparisons, and watchdog alone took 18 s of CPU after sed had ended, whatever its handler
did. The queue here is searched from its newest event: the same answer (a rename's cookie
is unique; watchdog's other searches ask only whether something is there, or remove every
match), found after a few comparisons.

Its watches also drop, as they are read, the events of files their handler does not
want (``wants``, if the handler has one): ``sed -i`` makes six events a file, four of them
its temp file's (made, written, its mode set, closed), which watchdog queued, built into
event objects and dispatched for the handler to throw away. Kept whatever their path: a
directory's events, a watch's own, and both halves of a rename (paired, one event that
names both paths; a half alone is searched for in the whole queue).

Anything that does not look like the watchdog this was written against (another platform,
another version) gets watchdog's observer unchanged: slower in a flood, never wrong.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any, TypeVar, cast

from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

log = logging.getLogger("agent_assist.drift")
T = TypeVar("T")


def make_observer() -> BaseObserver:
    """A watchdog observer (not started)."""
    if _Observer is None:
        return Observer()
    return _Observer()


_Observer: Callable[[], BaseObserver] | None = None

try:  # Linux, and watchdog's inotify internals as this module knows them
    from watchdog.observers.inotify import InotifyEmitter, InotifyObserver, InotifyWatchGroup
    from watchdog.observers.inotify_c import InotifyConstants, InotifyEvent
    from watchdog.utils.delayed_queue import DelayedQueue
except ImportError:  # pragma: no cover - another platform
    pass
else:
    if hasattr(DelayedQueue, "_index_and_item") and hasattr(InotifyWatchGroup, "on_event"):

        _ALWAYS_KEPT = (
            InotifyConstants.IN_ISDIR
            | InotifyConstants.IN_MOVE
            | InotifyConstants.IN_DELETE_SELF
            | InotifyConstants.IN_MOVE_SELF
            | InotifyConstants.IN_Q_OVERFLOW
            | InotifyConstants.IN_IGNORED
        )
        """A directory's events, a rename's halves, a watch's own: kept whatever their path."""

        class _WantingGroup(InotifyWatchGroup):
            """watchdog's watch group, dropping a file's events its handler does not want
            (no state of its own but ``wants``: an existing group takes this class in
            place)."""

            wants: Callable[[bytes], bool]
            prefix: bytes
            """The watched directory's path and a separator (as ``os.path.join`` puts it)."""

            def on_event(self, event: InotifyEvent) -> None:
                if (
                    event.mask & _ALWAYS_KEPT
                    or not event.name
                    or self.wants(self.prefix + event.name)
                ):
                    super().on_event(event)

        class _NewestFirstQueue(DelayedQueue[T]):
            """watchdog's delayed queue, searched from its newest element (no state of its
            own: an existing queue takes this class in place)."""

            def _index_and_item(self, predicate: Callable[[T], bool]) -> tuple[int, T] | None:
                queue = self._queue
                last = len(queue) - 1
                for back, (element, *_) in enumerate(reversed(queue)):
                    if predicate(element):
                        return last - back, element
                return None

        class _Emitter(InotifyEmitter):
            def __init__(
                self, *args: Any, wants: Callable[[bytes], bool] | None = None, **kwargs: Any
            ) -> None:
                super().__init__(*args, **kwargs)
                self._wants = wants

            def on_thread_start(self) -> None:
                super().on_thread_start()
                _search_newest_first(self)
                _drop_unwanted(self, self._wants)

        class _FastObserver(InotifyObserver):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs)
                self._ours = getattr(self, "_emitter_class", None) is InotifyEmitter and hasattr(
                    self, "_emitter_kwargs"
                )
                if self._ours:
                    self._emitter_class = _Emitter

            def schedule(self, event_handler: Any, path: Any, **kwargs: Any) -> Any:
                """A new watch drops the events its handler does not want (a watch of
                several handlers: those the first does not want)."""
                if not self._ours:
                    return super().schedule(event_handler, path, **kwargs)
                with self._lock:  # taken by watchdog's own schedule too (reentrant)
                    self._emitter_kwargs["wants"] = getattr(event_handler, "wants", None)
                    try:
                        return super().schedule(event_handler, path, **kwargs)
                    finally:
                        self._emitter_kwargs.pop("wants", None)

        def _search_newest_first(emitter: Any) -> None:
            """Give the emitter's rename queue the newest-first search. Its watch may be
            live already: events queued so far stay where they are."""
            grouper = getattr(getattr(emitter, "_inotify", None), "_move_event_grouper", None)
            queue = getattr(grouper, "_queue", None)
            if type(queue) is DelayedQueue:
                queue.__class__ = _NewestFirstQueue
            else:
                log.debug("watchdog's rename queue not found: it is searched as it is")

        def _drop_unwanted(emitter: Any, wants: Callable[[bytes], bool] | None) -> None:
            """Have the emitter's watch group drop the events ``wants`` refuses (a recursive
            watch keeps all: its group follows the files below it)."""
            group = getattr(emitter, "_inotify", None)
            if wants is None or emitter.watch.is_recursive:
                return
            if type(group) is InotifyWatchGroup:
                wanting = cast(_WantingGroup, group)  # before its class: the reader thread
                wanting.wants = wants  # may be in it
                wanting.prefix = os.path.join(group.path, b"")
                group.__class__ = _WantingGroup
            else:
                log.debug("watchdog's watch group not found: every event is read")

        _Observer = _FastObserver
