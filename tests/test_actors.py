"""The actor kit's failure rules and the one supervision decision, in process."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from actors.base import (
    Actor,
    ActorRef,
    Ask,
    DeadActor,
    TellsInOrder,
    close_mailbox,
    open_mailbox,
    run_supervised,
)
from actors.supervision import Decision, RestartPolicy, decide

pytestmark = pytest.mark.anyio


@dataclass(frozen=True)
class Add(Ask[int]):
    n: int


@dataclass(frozen=True)
class Boom(Ask[None]):
    pass


@dataclass(frozen=True)
class Get(Ask[int]):
    pass


class Counter(Actor[Add | Boom | Get]):
    starts = 0

    def __init__(self) -> None:
        Counter.starts += 1
        self.total = 0

    async def handle(self, message: Add | Boom | Get) -> Any:
        match message:
            case Add(n):
                self.total += n
                return self.total
            case Boom():
                raise ValueError("boom")
            case Get():
                return self.total


@pytest.fixture(autouse=True)
def reset_starts() -> None:
    Counter.starts = 0


def test_restart_within_the_budget_then_escalate() -> None:
    policy = RestartPolicy(max_restarts=2, within_s=10)
    d1, f = decide(policy, (), 100.0)
    d2, f = decide(policy, f, 101.0)
    d3, f = decide(policy, f, 102.0)
    assert (d1, d2, d3) == (Decision.RESTART, Decision.RESTART, Decision.ESCALATE)


def test_old_failures_leave_the_window() -> None:
    policy = RestartPolicy(max_restarts=1, within_s=10)
    _, failures = decide(policy, (), 0.0)
    decision, failures = decide(policy, failures, 20.0)
    assert decision is Decision.RESTART
    assert failures == (20.0,)


async def test_an_error_answering_an_ask_goes_to_the_caller_and_the_actor_lives(
    no_blocking: None,
) -> None:
    async with anyio.create_task_group() as tg:
        ref: ActorRef[Any] = await tg.start(partial(run_supervised, "counter", lambda _: Counter()))
        assert await ref.ask(Add(2)) == 2
        with pytest.raises(ValueError, match="boom"):
            await ref.ask(Boom())
        assert await ref.ask(Add(3)) == 5, "same incarnation: state kept"
        assert Counter.starts == 1
        ref.close()


async def test_a_crash_on_a_tell_restarts_the_actor_with_fresh_state() -> None:
    # (No blocking guard: a crash is logged with its traceback, synchronously, by design.)
    async with anyio.create_task_group() as tg:
        ref: ActorRef[Any] = await tg.start(partial(run_supervised, "counter", lambda _: Counter()))
        await ref.ask(Add(7))
        await ref.tell(Boom())
        assert await ref.ask(Get()) == 0, "restarted: the same reference reaches a new actor"
        assert Counter.starts == 2
        ref.close()


async def test_beyond_the_budget_the_failure_escalates() -> None:
    # (No blocking guard: a crash is logged with its traceback, synchronously, by design.)
    policy = RestartPolicy(max_restarts=1, within_s=60)

    async def crash_twice() -> None:
        async with anyio.create_task_group() as tg:
            ref: ActorRef[Any] = await tg.start(
                partial(run_supervised, "counter", lambda _: Counter(), policy=policy)
            )
            await ref.tell(Boom())
            await ref.tell(Boom())
            await anyio.sleep_forever()

    with pytest.raises(ExceptionGroup) as caught:
        await crash_twice()
    assert caught.group_contains(ValueError, match="boom")
    assert Counter.starts == 2


async def test_asks_pending_when_an_actor_stops_fail_with_dead_actor(no_blocking: None) -> None:
    ref: ActorRef[Add | Boom | Get]
    ref, mailbox = open_mailbox("nobody-home", size=4)
    async with anyio.create_task_group() as tg:
        results: list[BaseException] = []

        async def asker() -> None:
            try:
                await ref.ask(Get(), timeout=5)
            except DeadActor as exc:
                results.append(exc)

        tg.start_soon(asker)
        await anyio.wait_all_tasks_blocked()

        close_mailbox(mailbox, "nobody-home")
    assert len(results) == 1
    with pytest.raises(DeadActor):
        await ref.tell(Get())


async def test_an_ask_times_out(no_blocking: None) -> None:
    class Slow(Actor[Get]):
        async def handle(self, message: Get) -> Any:
            await anyio.sleep(10)

    async with anyio.create_task_group() as tg:
        ref: ActorRef[Any] = await tg.start(partial(run_supervised, "slow", lambda _: Slow()))
        with pytest.raises(TimeoutError, match=r"^the slow actor did not answer within 1 s$"):
            await ref.ask(Get(), timeout=0.05)
        tg.cancel_scope.cancel()


async def test_the_blocking_guard_sees_a_blocking_call() -> None:
    import time

    from tests.conftest import blocking_calls

    async with blocking_calls() as blocked:
        await anyio.lowlevel.checkpoint()  # the timing starts with the next step of the loop
        time.sleep(0.1)  # noqa: ASYNC251  (deliberately blocking, to prove the guard works)
        await anyio.lowlevel.checkpoint()
    assert len(blocked) == 1 and "held the loop for 0.1" in blocked[0]


async def test_the_blocking_guard_sees_a_long_computation() -> None:
    import time

    from tests.conftest import blocking_calls

    async with blocking_calls() as blocked:
        await anyio.lowlevel.checkpoint()
        start = time.thread_time()
        while time.thread_time() - start < 0.08:
            pass
        await anyio.lowlevel.checkpoint()
    assert len(blocked) == 1 and "held the loop" in blocked[0]


AN_ASYNC_TEST_THAT_BLOCKS = """
import time

import anyio.lowlevel
import pytest

pytestmark = pytest.mark.anyio


async def test_blocks() -> None:
    await anyio.lowlevel.checkpoint()
    time.sleep(0.1)
    await anyio.lowlevel.checkpoint()
"""


def test_an_async_test_that_blocks_the_loop_fails_without_asking_for_the_guard(
    tmp_path: Path,
) -> None:
    """Every ``async def`` test marked ``anyio`` runs under ``no_blocking`` (autouse), and
    the report says where the loop was held."""
    import subprocess
    import sys

    (tmp_path / "test_blocks.py").write_text(AN_ASYNC_TEST_THAT_BLOCKS)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "tests.conftest", "-p", "no:randomly",
         "-p", "no:cacheprovider", str(tmp_path / "test_blocks.py")],
        capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent.parent,
    )
    assert "1 passed, 1 error" in done.stdout, done.stdout
    assert "the event loop was blocked" in done.stdout
    assert "held the loop for 0.1" in done.stdout
    assert "time.sleep(0.1)" in done.stdout, "where it was held"


GUARD_ON_A_BUSY_CPU = """
import json, os, sys, threading, time
import anyio
from tests.conftest import blocking_calls

def spin(seconds: float) -> None:
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass

async def main() -> None:
    os.sched_setaffinity(0, {int(sys.argv[1])})
    async with blocking_calls() as blocked:
        await anyio.lowlevel.checkpoint()
        os.nice(19)  # from now on, the hog on the same CPU gets nearly all of it
        if sys.argv[2] == "beside a worker":  # which holds the interpreter's lock by turns
            threading.Thread(target=spin, args=(0.01,), daemon=True).start()
        wall, cpu = time.perf_counter(), time.thread_time()
        while time.perf_counter() - wall < 0.2 and time.thread_time() - cpu < 0.01:
            pass
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        await anyio.lowlevel.checkpoint()
    print(json.dumps({"wall": wall, "cpu": cpu, "blocked": blocked}), flush=True)
    os._exit(0)  # at once: an exit at nice 19 beside the hog would take seconds

anyio.run(main)
"""


@pytest.mark.parametrize("threads", ["alone", "beside a worker"])
def test_the_blocking_guard_does_not_count_the_time_a_busy_machine_kept_the_loop_waiting(
    threads: str,
) -> None:
    """CI's failure (an ERROR of ``test_a_session_deleted_by_reset_is_never_written_again``:
    a fixture's step "took 0.168 seconds" on a loaded two-core machine): a step that
    computes for a few milliseconds while another process has the CPU is not a blocking
    call, however long it waited for the CPU, alone or for a worker thread of its process
    that held the interpreter's lock while it waited for the CPU (H164's reading)."""
    import json
    import subprocess
    import sys

    cpu = min(os.sched_getaffinity(0))
    spin = f"import os\nos.sched_setaffinity(0, {{{cpu}}})\nprint(flush=True)\nwhile True: pass"
    hog = subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE)
    try:
        assert hog.stdout is not None and hog.stdout.readline() == b"\n"
        done = subprocess.run(
            [sys.executable, "-c", GUARD_ON_A_BUSY_CPU, str(cpu), threads],
            capture_output=True, check=True, timeout=120, cwd=Path(__file__).parent.parent,
        )
    finally:
        hog.kill()
        hog.wait()
    step = json.loads(done.stdout)
    assert step["wall"] > 0.1 and step["cpu"] < 0.02  # the machine kept the step waiting
    assert step["blocked"] == []


async def test_a_message_told_when_there_is_room_waits_for_room_and_is_never_dropped(
    no_blocking: None,
) -> None:
    """H79's reading: the TerminalActor's fallback ``Detach`` (a loop callback) and a
    stopped compaction's answer (a cancelled task) were told with ``tell_nowait``, which
    drops a message a full mailbox does not take: the session then waited for good."""
    ref: ActorRef[str]
    ref, mailbox = open_mailbox("small", size=1)
    assert ref.tell_nowait("first")
    ref.tell_when_room("second")  # no room now
    assert (await mailbox.receive()).message == "first"
    with anyio.fail_after(5):
        assert (await mailbox.receive()).message == "second"
    close_mailbox(mailbox, "small")
    ref.tell_when_room("to nobody")  # an actor gone: nothing to do, nothing raised


async def test_tells_in_order_wait_for_room_without_making_the_teller_wait() -> None:
    """What one actor tells a stuck one (its mailbox full) is held, in order, and goes in
    as room comes; telling never waits; a stopped one is told nothing more."""
    ref: ActorRef[str]
    ref, mailbox = open_mailbox("stuck", 1)
    tells = TellsInOrder(retry_s=0.001)
    assert tells.tell(ref, "first")
    assert tells.tell(ref, "second")
    assert tells.tell(ref, "third")
    assert tells.held(ref) == 2
    received = [mailbox.receive_nowait().message]
    with anyio.fail_after(5):
        while len(received) < 3:
            received.append((await mailbox.receive()).message)
    assert received == ["first", "second", "third"]
    assert tells.held(ref) == 0
    mailbox.close()
    assert not tells.tell(ref, "to nobody")
