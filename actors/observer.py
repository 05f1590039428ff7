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

Anything that does not look like the watchdog this was written against (another platform,
another version) gets watchdog's observer unchanged: slower in a flood, never wrong.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, TypeVar

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
    from watchdog.observers.inotify import InotifyEmitter, InotifyObserver
    from watchdog.utils.delayed_queue import DelayedQueue
except ImportError:  # pragma: no cover - another platform
    pass
else:
    if hasattr(DelayedQueue, "_index_and_item"):

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
            def on_thread_start(self) -> None:
                super().on_thread_start()
                _search_newest_first(self)

        class _FastObserver(InotifyObserver):
            def __init__(self, **kwargs: Any) -> None:
                super().__init__(**kwargs)
                if getattr(self, "_emitter_class", None) is InotifyEmitter:
                    self._emitter_class = _Emitter

        def _search_newest_first(emitter: Any) -> None:
            """Give the emitter's rename queue the newest-first search. Its watch may be
            live already: events queued so far stay where they are."""
            grouper = getattr(getattr(emitter, "_inotify", None), "_move_event_grouper", None)
            queue = getattr(grouper, "_queue", None)
            if type(queue) is DelayedQueue:
                queue.__class__ = _NewestFirstQueue
            else:
                log.debug("watchdog's rename queue not found: it is searched as it is")

        _Observer = _FastObserver
