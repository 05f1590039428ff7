"""Shared fixtures: the anyio backend, a guard against blocking the event loop, no real LLM."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import inspect
import math
import os
import sys
import threading
import time
import traceback
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pydantic_ai.models
import pytest

from tests import leftovers

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False
leftovers.mark_this_run()

SLOW_STEP_S = 0.05


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def no_processes_left(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a test that leaves a process it started running (a supervisor, its heir, a
    chat...) once its fixtures are torn down, naming each; they are stopped first.

    First set up, so torn down last: after ``env``'s cleanup and every other fixture."""
    yield
    left = leftovers.started_by(request.node.nodeid)
    if left:
        unkilled = leftovers.stop(left, request.node.nodeid)
        pytest.fail(
            "left running after the test (now stopped): "
            + "; ".join(map(str, left))
            + (f"; could not be killed: {'; '.join(map(str, unkilled))}" if unkilled else ""),
            pytrace=False,
        )


class _HeldSteps:
    """Times each step the loop's thread runs, net of the time the machine kept the
    process's threads waiting for a CPU (their run-queue waits in
    ``/proc/self/task/TID/schedstat``).

    A step that sleeps in a blocking call, or computes for long, holds the loop; a step
    that only waited for a CPU on a busy machine (CI's two cores) does not: asyncio's own
    slow-callback timing counted both, and failed tests for the machine's load. The other
    threads' waits count too: the loop's thread waits for the interpreter's lock while a
    worker thread holding it waits for a CPU. On a quiet machine nothing waits, and a step
    is timed whole.
    """

    def __init__(self) -> None:
        self.thread = threading.get_ident()
        self.held: list[str] = []
        self._loop_tid = threading.get_native_id()
        self._stats: dict[int, int] = {}  # native thread id: its open schedstat file
        self._threads = -1  # how many threads the stat files were opened for
        self.started = 0  # when the step running now began (perf_counter_ns), or 0
        self.where: list[str] = []  # where the step running now was, seen by the sampler

    def _queued_ns(self) -> dict[int, int]:
        """How long, in all, the machine has kept each thread waiting for a CPU."""
        if threading.active_count() != self._threads:
            self._follow_threads()
        queued = {}
        for tid, fd in self._stats.items():
            with contextlib.suppress(OSError):  # a thread that ended
                queued[tid] = int(os.pread(fd, 64, 0).split()[1])
        return queued

    def _follow_threads(self) -> None:
        self._threads = threading.active_count()
        now = {t.native_id for t in threading.enumerate() if t.native_id is not None}
        now.discard(_sampler().native_id)  # the guard's, not the code's: never netted
        now.add(self._loop_tid)
        for tid in set(self._stats) - now:
            os.close(self._stats.pop(tid))
        for tid in now - set(self._stats):
            with contextlib.suppress(OSError):  # not Linux: steps count whole
                self._stats[tid] = os.open(f"/proc/self/task/{tid}/schedstat", os.O_RDONLY)

    def close(self) -> None:
        """Stop timing (the step closing it is not timed) and let go of the stat files."""
        for fd in self._stats.values():
            os.close(fd)
        self._stats, self.thread = {}, -1

    def run(self, run: Callable[[asyncio.Handle], None], handle: asyncio.Handle) -> None:
        """``run(handle)``, timed if it runs on the loop's thread."""
        if threading.get_ident() != self.thread:
            return run(handle)
        before, cpu = self._queued_ns(), time.thread_time_ns()
        self.where = []
        start = self.started = time.perf_counter_ns()
        try:
            return run(handle)
        finally:
            self.started = 0
            if self.thread != -1:
                wall, cpu = time.perf_counter_ns() - start, time.thread_time_ns() - cpu
                self._count(handle, wall, cpu, before)

    def _count(self, handle: asyncio.Handle, wall: int, cpu: int, before: dict[int, int]) -> None:
        if wall < SLOW_STEP_S * 1e9:
            return
        after = self._queued_ns()
        queued = sum(max(0, n - before.get(tid, 0)) for tid, n in after.items())
        held = wall - queued
        if held >= SLOW_STEP_S * 1e9:
            self.held.append(
                f"{handle!r} held the loop for {held / 1e9:.3f} s"
                f" ({wall / 1e9:.3f} s with the waits of its process's threads for a CPU,"
                f" {cpu / 1e9:.3f} s of its thread's CPU time); it was at:\n"
                + "\n".join(dict.fromkeys(self.where))
            )


_collecting: list[_HeldSteps] = []  # the open ``blocking_calls``, innermost last


def _sample() -> None:
    """Every 20 ms, note where the loop's thread is if its step has run for 40 ms (at most
    three places a step), for the report of a step that held the loop."""
    while True:
        time.sleep(0.02)
        steps = _collecting[-1] if _collecting else None
        if steps is None or not steps.started:
            continue
        started, where = steps.started, steps.where
        if time.perf_counter_ns() - started > 40e6 and len(where) < 3:
            frame = sys._current_frames().get(steps.thread)
            if frame is not None and steps.started == started:
                where.append(_where(traceback.extract_stack(frame)))


_OURS = str(Path(__file__).resolve().parent.parent) + os.sep
_NOT_OURS = (os.sep + ".venv" + os.sep, os.sep + "site-packages" + os.sep, "conftest.py")


def _where(stack: traceback.StackSummary) -> str:
    """A stack as the report shows it: the frames of the project's code and tests, then
    the last four frames (what it was doing in them)."""
    ours = [
        f for f in stack[:-4]
        if f.filename.startswith(_OURS) and not any(n in f.filename for n in _NOT_OURS)
    ]
    return "".join(traceback.format_list([*ours, *stack[-4:]]))


@functools.cache
def _sampler() -> threading.Thread:
    """The one thread that samples where long steps are (started with the first guard)."""
    thread = threading.Thread(target=_sample, name="blocking-guard", daemon=True)
    thread.start()
    return thread


def _timed_runs(run: Callable[[asyncio.Handle], None]) -> Callable[[asyncio.Handle], None]:
    """``Handle._run`` timed for the innermost open ``blocking_calls`` (one nested in
    another, a test's own around the guard every test on a loop has, takes its steps)."""

    def run_timed(handle: asyncio.Handle) -> None:
        if not _collecting:
            return run(handle)
        return _collecting[-1].run(run, handle)

    return run_timed


@contextlib.asynccontextmanager
async def blocking_calls() -> AsyncIterator[list[str]]:
    """Collect every step of the running event loop that held it for more than 50 ms.

    Blocking file or socket IO made inside the loop (instead of in a worker thread), or a
    long computation, shows up here; time the machine kept the loop's thread from running
    does not. asyncio's debug mode stays on for its other checks (a loop call from
    another thread raises).
    """
    loop = asyncio.get_running_loop()
    previous = loop.get_debug(), loop.slow_callback_duration
    # A garbage collection of the whole test process is not a blocking call of the
    # code under test: collect now, and keep the collector out of the measured steps.
    if not _collecting:  # (an outer one did, and keeps it out)
        gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    steps = _HeldSteps()
    run = asyncio.Handle._run
    if not _collecting:
        asyncio.Handle._run = _timed_runs(run)  # type: ignore[method-assign,assignment]
    _collecting.append(steps)
    outermost = len(_collecting) == 1
    if outermost:
        # asyncio's debug checks (a loop call from another thread raises, and so does a
        # blocking socket given to its sock_ methods: what ``call_soon`` and those check),
        # without debug mode's traceback of where each handle, future and task was made
        # (what they ask ``get_debug`` for): that walk of the whole stack for each cost the
        # unit suite about half its CPU time again. The report's samples say where instead.
        loop._debug = True  # type: ignore[attr-defined]
        loop.get_debug = lambda: False  # type: ignore[method-assign]
        loop.slow_callback_duration = math.inf  # timed above, net of the machine's load
    try:
        yield steps.held
    finally:
        _collecting.remove(steps)
        asyncio.Handle._run = run  # type: ignore[method-assign]
        steps.close()
        if was_enabled:
            gc.enable()
        if outermost:
            del loop.get_debug
            loop._debug = previous[0]  # type: ignore[attr-defined]
            loop.slow_callback_duration = previous[1]


@pytest.fixture
async def no_blocking() -> AsyncIterator[None]:
    """Fail the test if the event loop was blocked for more than 50 ms at a time."""
    async with blocking_calls() as blocked:
        yield
    assert blocked == [], "the event loop was blocked:\n" + "\n".join(blocked)


@pytest.fixture(scope="session")
def model_stack_loaded() -> None:
    """The model stack loaded and its serializers built once, off any loop, as the
    supervisor does before its first turn (``load_model_stack``): a test's first turn
    then pays nothing the product's first turn does not."""
    from supervisor.stack import load_model_stack

    load_model_stack()


@pytest.fixture(autouse=True)
def loop_never_blocked(request: pytest.FixtureRequest) -> None:
    """Every test on an event loop (an ``async def`` test marked ``anyio``) runs under
    ``no_blocking``, from before its other fixtures are set up to after they are torn
    down (see docs/decisions.md, H195), on the model stack loaded as the supervisor
    loads it (alone, a file's first turn built the message serializers on its loop)."""
    test = getattr(request.node, "function", None)
    if inspect.iscoroutinefunction(test) and "anyio_backend" in request.fixturenames:
        request.getfixturevalue("model_stack_loaded")
        request.getfixturevalue("no_blocking")


@pytest.fixture
def directory_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories ``os.scandir`` reads from now on, in order."""
    read: list[str] = []
    scandir = os.scandir

    def counted(path: Any) -> Any:
        read.append(os.fsdecode(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counted)
    return read



@pytest.fixture
def scrubbed_messages(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many session messages each scrub of messages (a session file's, as loaded, or a
    history's, as encoded) went over from now on, in order."""
    import session.encoded
    import session.manager

    counts: list[int] = []
    for module in (session.encoded, session.manager):
        scrub_json = module.scrub_json

        def counted(value: Any, known_secrets: Any = (), _scrub: Any = scrub_json) -> Any:
            if isinstance(value, list) and value and all("kind" in m for m in value):
                counts.append(len(value))
            return _scrub(value, known_secrets)

        monkeypatch.setattr(module, "scrub_json", counted)
    return counts


@pytest.fixture
def scrubbed_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts compaction (``session.compaction``) scrubs from now on, in order."""
    import session.compaction

    texts: list[str] = []
    scrub_text = session.compaction.scrub_text  # type: ignore[attr-defined]

    def counted(text: str, known_secrets: Any = ()) -> str:
        texts.append(text)
        return scrub_text(text, known_secrets)

    monkeypatch.setattr(session.compaction, "scrub_text", counted)
    return texts


@pytest.fixture
def files_opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files ``os.open`` opens from now on, in order."""
    opened: list[str] = []
    real_open = os.open

    def counted(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted)
    return opened
