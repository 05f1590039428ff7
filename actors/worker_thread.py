"""``WorkerThread``: one thread that runs an actor's blocking calls one at a time, in the
order they were given, at the cost of one wake-up each way.

It stands where a one-worker ``ThreadPoolExecutor`` with ``run_in_executor`` stood on
the StorageActor's save path. That path built, for every call, a concurrent future
with its condition and lock, checked the executor's thread count and chained the two
futures: about 0.05-0.09 ms of interpreter time after a turn's agent run, before the
thread could take the interpreter and begin the write (temporary timestamps in the
supervisor, docs/PERFORMANCE.md). Here a call is a C queue's ``put`` on the loop and
a ``call_soon_threadsafe`` back.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import queue
import threading
from collections.abc import Callable
from typing import Any, TypeVar

import anyio

T = TypeVar("T")
_Job = tuple[Callable[[], Any], asyncio.Future[Any], asyncio.AbstractEventLoop, bool]


class WorkerThread:
    """``await run(fn)`` runs ``fn()`` in this object's thread and returns its result (or
    raises its exception). The wait is shielded: a call that began always ends before
    the awaiting task goes on, cancelled or not. ``stop()`` lets the calls already
    given finish, then ends the thread; a call given after it is refused
    (``RuntimeError``). The interpreter's exit stops every worker thread still running
    and waits for it, so a write that began is never cut off (and one whose owner
    never stopped it does not hold the exit up forever)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._stopped = False

    async def run(self, fn: Callable[[], T], *, behind: bool = False) -> T:
        """``behind``: the caller resumes a turn of the loop later, behind what ``fn``
        woke on the loop itself and what those tasks tell at once (a save that answers
        its asker from the thread: the asker goes on, and the connection's writer writes
        the turn's end, before the StorageActor resumes to wait for its next message)."""
        if self._stopped:
            raise RuntimeError(f"the {self._name} thread was stopped")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        if self._thread is None:
            thread = threading.Thread(
                target=_work, args=(self._jobs,), name=self._name, daemon=True
            )
            thread.start()  # if it cannot start, the next call tries again
            self._thread = thread
            _running[thread] = self._jobs
        self._jobs.put((fn, future, loop, behind))
        with anyio.CancelScope(shield=True):
            result = await future
        return result

    def stop(self) -> None:
        """End the thread once the calls already given are done (without waiting)."""
        if not self._stopped:
            self._stopped = True
            self._jobs.put(None)


def _work(jobs: queue.SimpleQueue[_Job | None]) -> None:
    try:
        while (job := jobs.get()) is not None:
            fn, future, loop, behind = job
            try:
                result = fn()
            except BaseException as exc:  # the caller's to handle, as if it had called fn
                _tell(loop, _fail, future, exc, behind)
            else:
                _tell(loop, _succeed, future, result, behind)
    finally:
        _running.pop(threading.current_thread(), None)


_running: dict[threading.Thread, queue.SimpleQueue[_Job | None]] = {}
"""The worker threads that have not ended, and their queues."""


@atexit.register
def _finish_all() -> None:
    """At exit: every worker thread finishes the calls it was given, then ends."""
    running = list(_running.items())
    for _, jobs in running:
        jobs.put(None)
    for thread, _ in running:
        thread.join()


def _tell(
    loop: asyncio.AbstractEventLoop,
    settle: Callable[[asyncio.Future[Any], Any], None],
    future: asyncio.Future[Any],
    value: Any,
    behind: bool = False,
) -> None:
    with contextlib.suppress(RuntimeError):  # the loop has closed: nobody waits any more
        if behind:
            loop.call_soon_threadsafe(loop.call_soon, settle, future, value)
        else:
            loop.call_soon_threadsafe(settle, future, value)


def _succeed(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():
        future.set_result(result)


def _fail(future: asyncio.Future[Any], error: BaseException) -> None:
    if isinstance(error, StopIteration):  # a future refuses it (and would never settle)
        wrapped = RuntimeError(f"the call raised StopIteration: {error}")
        wrapped.__cause__ = error
        error = wrapped
    if not future.done():
        future.set_exception(error)
