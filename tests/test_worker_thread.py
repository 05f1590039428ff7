"""WorkerThread: an actor's blocking calls, one at a time, in order, never cut off."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import anyio
import pytest

from actors.worker_thread import WorkerThread

pytestmark = pytest.mark.anyio


async def test_a_call_runs_in_the_worker_thread_and_returns_its_result() -> None:
    worker = WorkerThread("test-worker")
    try:
        name = await worker.run(lambda: threading.current_thread().name)
    finally:
        worker.stop()
    assert name == "test-worker"


async def test_a_call_that_raises_raises_in_its_caller() -> None:
    worker = WorkerThread("test-worker")

    def fails() -> None:
        raise OSError(28, "No space left on device")

    try:
        with pytest.raises(OSError, match="No space left"):
            await worker.run(fails)
        assert await worker.run(lambda: "still working") == "still working"
    finally:
        worker.stop()


async def test_calls_run_one_at_a_time_in_the_order_given() -> None:
    worker = WorkerThread("test-worker")
    order: list[int] = []
    running = threading.Lock()

    def call(n: int) -> None:
        assert running.acquire(blocking=False), "two calls at once"
        try:
            order.append(n)
        finally:
            running.release()

    try:
        async with anyio.create_task_group() as tg:
            for n in range(50):
                tg.start_soon(worker.run, lambda n=n: call(n))
                await anyio.lowlevel.checkpoint()  # each task puts its call in turn
    finally:
        worker.stop()
    assert order == list(range(50))


async def test_a_cancelled_caller_waits_for_the_call_that_began() -> None:
    worker = WorkerThread("test-worker")
    began, release = threading.Event(), threading.Event()
    finished: list[str] = []

    def slow() -> None:
        began.set()
        release.wait(10)
        finished.append("written")

    async def caller(scope: anyio.CancelScope) -> None:
        with scope:
            await worker.run(slow)
        finished.append("caller went on")

    try:
        scope = anyio.CancelScope()
        async with anyio.create_task_group() as tg:
            tg.start_soon(caller, scope)
            await anyio.to_thread.run_sync(began.wait, 10)
            scope.cancel()
            await anyio.sleep(0.05)
            assert finished == [], "the caller may not go on before the call ends"
            release.set()
    finally:
        worker.stop()
    assert finished == ["written", "caller went on"]


async def test_a_call_after_stop_is_refused_and_the_calls_before_it_finish() -> None:
    """A new thread after ``stop`` ran beside the old one, which still had calls queued:
    two calls at once, out of order."""
    worker = WorkerThread("test-worker")
    release = threading.Event()
    order: list[str] = []

    def slow_first() -> None:
        release.wait(10)
        order.append("first")

    async def first() -> None:
        await worker.run(slow_first)

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        await anyio.lowlevel.checkpoint()  # the first call is given
        worker.stop()
        with pytest.raises(RuntimeError, match="test-worker thread was stopped"):
            await worker.run(lambda: order.append("after stop"))
        release.set()
    assert order == ["first"]


async def test_a_thread_that_could_not_start_is_started_again_by_the_next_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A failed start (no threads left) left every later call waiting forever."""
    real_start = threading.Thread.start
    failures = [RuntimeError("can't start new thread")]

    def start_once_failing(thread: threading.Thread) -> None:
        if failures:
            raise failures.pop()
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_once_failing)
    worker = WorkerThread("test-worker")
    try:
        with pytest.raises(RuntimeError, match="can't start new thread"):
            await worker.run(lambda: "first")
        with anyio.fail_after(5):
            assert await worker.run(lambda: "second") == "second"
    finally:
        worker.stop()


async def test_a_call_that_raises_stop_iteration_fails_instead_of_hanging() -> None:
    worker = WorkerThread("test-worker")
    try:
        with anyio.fail_after(5), pytest.raises(RuntimeError, match="StopIteration"):
            await worker.run(lambda: next(iter(())))
    finally:
        worker.stop()


def test_the_interpreter_exit_waits_for_a_call_that_began(tmp_path: Path) -> None:
    """A write in flight when the process ends is finished, not cut off (the thread is a
    daemon: the exit stops it after its calls, even if its owner never did)."""
    done = tmp_path / "done"
    script = textwrap.dedent(
        f"""
        import asyncio, threading, time
        from pathlib import Path
        from actors.worker_thread import WorkerThread

        worker = WorkerThread("exit-test")
        began = threading.Event()

        def slow():
            began.set()
            time.sleep(0.3)
            Path({str(done)!r}).write_text("written")

        async def main():
            asyncio.get_running_loop().call_soon(asyncio.ensure_future, worker.run(slow))
            while not began.is_set():
                await asyncio.sleep(0.01)
            # the loop ends here, with the call in flight and the worker never stopped

        asyncio.run(main())
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", script],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert done.read_text() == "written"


async def test_a_call_given_behind_resumes_its_caller_after_what_its_answer_woke() -> None:
    """The StorageActor's save answers its asker from the thread: the asker goes on, tells
    the connection's writer the turn's end, and the writer writes it before the actor
    itself resumes to wait for its next message (which held up every turn's end by a
    turn of the loop, H192)."""
    worker = WorkerThread("test-worker")
    order: list[str] = []
    answered, told = anyio.Event(), anyio.Event()
    loop = asyncio.get_running_loop()
    both_given = threading.Event()

    async def asker() -> None:
        await answered.wait()
        order.append("asker")
        told.set()

    async def writer() -> None:
        await told.wait()
        order.append("writer")

    def save() -> None:  # answers its asker from the thread, as ``StorageActor.answer``
        loop.call_soon_threadsafe(answered.set)

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(asker)
            tg.start_soon(writer)
            await anyio.wait_all_tasks_blocked()
            # The loop is held until the thread has answered and ended the call (the next
            # call runs after): as in a supervisor, whose loop wakes after both. That call
            # is given first (before the hold, behind ``save``): given after, the hold ran
            # out its 10 s (as the blocking guard told).
            tg.start_soon(worker.run, both_given.set)
            loop.call_soon(both_given.wait, 10)
            await worker.run(save, behind=True)
            order.append("actor")
    finally:
        worker.stop()
    assert order == ["asker", "writer", "actor"]
