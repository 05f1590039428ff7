"""Seeded interleavings of turns, /save, /reset, resume and disconnects: the CI mode, the
checker's own failures, and the defects the interleavings found."""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.streams.memory import MemoryObjectSendStream

from actors.base import ActorRef, Ask, Envelope, R, open_mailbox, run_supervised
from actors.messages import (
    Claim,
    CommandOutput,
    FindResumable,
    Finishing,
    Handover,
    LiveCount,
    OpenSession,
    RunCommand,
    SaveSession,
    TerminalOutput,
    TurnEnded,
    UserTurn,
)
from actors.storage import StorageActor
from actors.terminal import TerminalActor, TerminalConfig
from session.catalog import Resumable
from session.history import warm_up
from session.models import SessionState, utc_now
from session.paths import sessions_dir
from supervisor import daemon
from supervisor.front import FrontDoor
from supervisor.runtime import RuntimePaths
from tests.e2e.frames import RawClient, terminal_hello
from tests.interleavings import (
    Frame,
    Problems,
    Wire,
    check,
    control,
    run_campaign,
    supervisor_environment,
    wait_for_socket,
)
from tests.serial_model import Final, Kind, Op, SessionFile, linearize
from tests.workers import start_peers

CI_SEEDS = int(os.environ.get("AGENT_ASSIST_INTERLEAVINGS_SEEDS", "100"))
S1, S2, S3 = "aaaaaaaaaaa1", "aaaaaaaaaaa2", "aaaaaaaaaaa3"


@pytest.mark.anyio
async def test_every_seeded_interleaving_ends_in_the_state_of_a_serial_order(
    tmp_path: Path,
) -> None:
    campaign = await run_campaign(1, CI_SEEDS, tmp_path)
    reports = "\n\n".join(run.report() for run in campaign.failures[:3])
    assert not campaign.failures, reports
    assert campaign.seeds == CI_SEEDS
    # The runs really exercised what they claim to.
    assert campaign.acknowledged_turns > CI_SEEDS
    assert campaign.resets > CI_SEEDS // 2
    assert campaign.disconnects > CI_SEEDS
    assert campaign.refused_live > 0


# -- the checker refuses what no serial order explains ----------------------------------


def files(**sessions: tuple[str, ...]) -> Final:
    return Final(
        sessions={sid: SessionFile(msgs, 0) for sid, msgs in sessions.items()},
        checkpoints={},
        pointers={},
    )


def one_client_turn_then(end: Op) -> list[Op]:
    return [
        Op(0, "hello", None, 1, 2, ("welcome", None)),
        Op(0, "open_new", None, 3, 4, ("opened", S1)),
        Op(0, "turn", "m1", 5, 6, ("ok",)),
        end,
    ]


def checked(history: list[Op], final: Final, clients: int = 1) -> Problems:
    problems = Problems()
    check(history, clients, final, problems)
    return problems


def test_a_serial_history_with_its_own_outcome_is_accepted() -> None:
    history = one_client_turn_then(Op(0, "close", None, 7, 8, ("closed", True, S1)))
    final = Final({S1: SessionFile(("m1",), 0)}, {}, {0: S1})
    assert checked(history, final).clean


def test_a_reset_session_found_on_disk_is_a_resurrection() -> None:
    history = one_client_turn_then(Op(0, "reset", None, 7, 8, ("reset", S2)))
    problems = checked(history, files(**{S1: ("m1",)}))
    assert problems.resurrected and problems.not_serializable


def test_an_acknowledged_turn_missing_from_disk_is_lost() -> None:
    history = one_client_turn_then(Op(0, "close", None, 7, 8, ("closed", True, S1)))
    problems = checked(history, Final({S1: SessionFile((), 0)}, {}, {0: S1}))
    assert problems.lost and problems.not_serializable


def test_a_turn_stored_twice_is_duplicated() -> None:
    history = one_client_turn_then(Op(0, "close", None, 7, 8, ("closed", True, S1)))
    problems = checked(history, Final({S1: SessionFile(("m1", "m1"), 0)}, {}, {0: S1}))
    assert problems.duplicated and problems.not_serializable


def test_a_session_told_opened_to_two_clients_at_once_has_two_holders() -> None:
    history = [
        Op(0, "hello", None, 1, 2, ("welcome", None)),
        Op(0, "open_resume", S1, 3, 4, ("opened", S1)),
        Op(1, "hello", None, 5, 6, ("welcome", None)),
        Op(1, "open_resume", S1, 7, 8, ("opened", S1)),
    ]
    problems = checked(history, files(**{S1: ()}), clients=2)
    assert problems.two_holders and problems.not_serializable


def test_turns_stored_out_of_their_real_time_order_are_not_serializable() -> None:
    """Nothing lost, nothing twice: only the serial search sees that m1, acknowledged
    before m2 was sent, cannot come after it."""
    history = [
        *one_client_turn_then(Op(0, "close", None, 7, 8, ("closed", True, S1))),
        Op(1, "hello", None, 9, 10, ("welcome", S1)),
        Op(1, "open_resume", S1, 11, 12, ("opened", S1)),
        Op(1, "turn", "m2", 13, 14, ("ok",)),
        Op(1, "close", None, 15, 16, ("closed", True, S1)),
    ]
    final = Final({S1: SessionFile(("m2", "m1"), 0)}, {}, {0: S1, 1: S1})
    problems = checked(history, final, clients=2)
    assert problems.not_serializable
    assert not (problems.lost or problems.duplicated or problems.resurrected)
    right = Final({S1: SessionFile(("m1", "m2"), 0)}, {}, {0: S1, 1: S1})
    assert checked(history, right, clients=2).clean


def test_a_turn_cut_by_a_disconnect_may_or_may_not_be_stored() -> None:
    history = [
        Op(0, "hello", None, 1, 2, ("welcome", None)),
        Op(0, "open_new", None, 3, 4, ("opened", S1)),
        Op(0, "turn", "m1", 5),
        Op(0, "disconnect", None, 6),
    ]
    assert checked(history, Final({S1: SessionFile(("m1",), 0)}, {}, {0: S1})).clean
    assert checked(history, Final({}, {}, {})).clean
    # ... but a session whose turn was never stored is not written at exit.
    assert checked(history, Final({S1: SessionFile((), 0)}, {}, {0: S1})).not_serializable


def test_a_resume_told_live_while_nobody_held_the_session_is_refused() -> None:
    history = [
        Op(0, "hello", None, 1, 2, ("welcome", None)),
        Op(0, "open_resume", S3, 3, 4, ("error", "session_live")),
    ]
    assert not linearize(history, 1, Final({}, {}, {})).serializable


def test_the_checkpoint_numbers_told_must_follow_the_serial_order() -> None:
    history = [
        Op(0, "hello", None, 1, 2, ("welcome", None)),
        Op(0, "open_new", None, 3, 4, ("opened", S1)),
        Op(0, "save", None, 5, 6, ("saved", 1)),
        Op(0, "turn", "m1", 7, 8, ("ok",)),
        Op(0, "save", None, 9, 10, ("saved", 1)),
    ]
    final = Final({S1: SessionFile(("m1",), 1)}, {S1: (1,)}, {0: S1})
    assert not linearize(history, 1, final).serializable


def saves(*steps: tuple[Kind, tuple[object, ...]]) -> list[Op]:
    """A new session S1 of client 0, then ``steps``: ``("turn", ("ok",))`` is a turn (its
    message named by its place), ``("save", told)`` a ``/save`` and what it told."""
    history = [
        Op(0, "hello", None, 1, 2, ("welcome", None)),
        Op(0, "open_new", None, 3, 4, ("opened", S1)),
    ]
    for n, (kind, told) in enumerate(steps):
        tick = 5 + 2 * n
        arg = f"m{n}" if kind == "turn" else None
        history.append(Op(0, kind, arg, tick, tick + 1, told))
    return history


def test_a_save_with_nothing_changed_since_the_latest_checkpoint_is_told_so() -> None:
    history = saves(("turn", ("ok",)), ("save", ("saved", 1)), ("save", ("unchanged", 1)))
    final = Final({S1: SessionFile(("m0",), 1)}, {S1: (1,)}, {0: S1})
    assert linearize(history, 1, final).serializable


def test_a_save_with_nothing_changed_that_wrote_a_checkpoint_is_refused() -> None:
    history = saves(("turn", ("ok",)), ("save", ("saved", 1)), ("save", ("saved", 2)))
    final = Final({S1: SessionFile(("m0",), 2)}, {S1: (1, 2)}, {0: S1})
    assert not linearize(history, 1, final).serializable


def test_a_save_after_a_turn_told_unchanged_is_refused() -> None:
    history = saves(
        ("turn", ("ok",)), ("save", ("saved", 1)), ("turn", ("ok",)), ("save", ("unchanged", 1))
    )
    final = Final({S1: SessionFile(("m0", "m2"), 1)}, {S1: (1,)}, {0: S1})
    assert not linearize(history, 1, final).serializable


# -- defects the interleavings found ----------------------------------------------------


class _Errors(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
async def front_door(tmp_path: Path) -> AsyncIterator[tuple[Path, ActorRef[Any], anyio.Event]]:
    """A starting supervisor's front door (the model stack never loads); the event is set
    when a connection's handling has ended."""
    (tmp_path / "run").mkdir(mode=0o700)
    paths = RuntimePaths(tmp_path / "run")
    ended = anyio.Event()
    async with anyio.create_task_group() as tg:
        storage: ActorRef[Any] = await tg.start(
            partial(run_supervised, "storage", lambda _: StorageActor(tmp_path / "home"))
        )
        front = FrontDoor(tmp_path / "home", paths.socket, storage, anyio.Event())

        async def handle(stream: Any) -> None:
            try:
                await front.handle(stream)
            finally:
                ended.set()

        listener = await anyio.create_unix_listener(paths.socket, mode=0o600)
        tg.start_soon(partial(listener.serve, handle, task_group=tg))
        yield paths.socket, storage, ended
        tg.cancel_scope.cancel()


def hang_up_after_open(socket_path: Path, workspace: Path) -> None:
    """Say hello, read the welcome, send ``open`` and hang up at once (blocking)."""
    client = RawClient(socket_path)
    client.send(terminal_hello(4242, workspace))
    assert client.receive()["type"] == "welcome"
    client.sock.sendall(b'{"type": "open", "mode": "new"}\n')
    client.sock.shutdown(socket.SHUT_RDWR)
    client.close()


@pytest.mark.anyio
async def test_a_terminal_gone_before_it_is_told_opened_holds_no_session(
    front_door: tuple[Path, ActorRef[Any], anyio.Event], tmp_path: Path
) -> None:
    """Before the fix the front door's claim stayed for the supervisor's life: nobody could
    resume that session, and it was logged as a failed connection."""
    socket_path, storage, ended = front_door
    workspace = tmp_path / "ws"
    workspace.mkdir()
    errors = _Errors()
    logging.getLogger().addHandler(errors)
    try:
        await anyio.to_thread.run_sync(hang_up_after_open, socket_path, workspace)
        with anyio.fail_after(10):
            await ended.wait()
    finally:
        logging.getLogger().removeHandler(errors)
    assert await storage.ask(LiveCount()) == 0
    assert errors.messages == []


def hang_up_after_hello(socket_path: Path) -> None:
    client = RawClient(socket_path)
    client.send(terminal_hello(4242, socket_path.parent))
    client.sock.shutdown(socket.SHUT_RDWR)
    client.close()


@pytest.mark.anyio
async def test_a_terminal_gone_before_its_welcome_is_not_an_internal_error(
    tmp_path: Path,
) -> None:
    """The real supervisor (model stack loaded): each hang-up is followed by a chat in the
    same tab, which is told ``busy`` until the hung-up connection was detached."""
    (tmp_path / "run").mkdir(mode=0o700)
    paths = RuntimePaths(tmp_path / "run")
    errors = _Errors()
    lock_fd = await anyio.to_thread.run_sync(daemon.take_lock, paths)
    with supervisor_environment(tmp_path / "home"), contextlib.closing(os.fdopen(lock_fd)):
        async with anyio.create_task_group() as tg:
            tg.start_soon(daemon.serve, paths, tmp_path / "home", lock_fd)
            await wait_for_socket(paths.socket)
            with anyio.fail_after(20):
                while not await model_loaded(paths.socket):  # noqa: ASYNC110 (polls a status)
                    await anyio.sleep(0.01)
            logging.getLogger().addHandler(errors)
            try:
                for _ in range(10):
                    await anyio.to_thread.run_sync(hang_up_after_hello, paths.socket)
                    await chat_in_the_same_tab(paths.socket)
            finally:
                logging.getLogger().removeHandler(errors)
            await control(paths.socket, {"type": "stop"})
    assert errors.messages == []


async def model_loaded(socket_path: Path) -> bool:
    status = await control(socket_path, {"type": "status"})
    return bool(status["data"]["model_loaded"])


async def chat_in_the_same_tab(socket_path: Path) -> None:
    with anyio.fail_after(20):
        while True:
            async with await anyio.connect_unix(socket_path) as stream:
                wire = Wire(stream)
                await wire.send(terminal_hello(4242, socket_path.parent))
                if (await wire.answer("welcome"))["type"] == "welcome":
                    await wire.send({"type": "close"})
                    assert (await wire.answer("closed"))["type"] == "closed"
                    return
            await anyio.sleep(0.005)


class ProbingStorage(ActorRef[Any]):
    """The real StorageActor's mailbox; while ``probing``, after each message a terminal
    asks of it, what another terminal would be offered is noted."""

    def __init__(self, send: MemoryObjectSendStream[Envelope[Any]], project: Path) -> None:
        super().__init__("storage", send)
        self.project = project
        self.probing = False
        self.offers: list[str | None] = []

    async def ask(self, message: Ask[R], timeout: float = 30.0) -> R:
        answer = await super().ask(message, timeout)
        if self.probing:
            found: Resumable = await super().ask(FindResumable(self.project, 999_999))
            self.offers.append(found.offer.session_id if found.offer else None)
        return answer


@pytest.mark.anyio
async def test_a_session_being_reset_is_never_offered_to_another_terminal(
    tmp_path: Path,
) -> None:
    """Found by the interleavings: /reset released the session before deleting it, and a
    terminal starting in between was offered (and could resume) the session being reset."""
    await anyio.to_thread.run_sync(warm_up)  # off the loop, as the supervisor does
    workspace = tmp_path / "ws"
    workspace.mkdir()
    home = tmp_path / "home"
    project = sessions_dir(workspace, home)
    async with anyio.create_task_group() as tg:
        peers = await start_peers(tg, home)
        send, receive = anyio.create_memory_object_stream[Envelope[Any]](64)
        storage = ProbingStorage(send, project)
        tg.start_soon(StorageActor(home).serve, receive)
        config = TerminalConfig(4242, None, workspace, project, "offline")
        out, outputs = anyio.create_memory_object_stream[TerminalOutput](256)
        ref: ActorRef[Any]
        ref, mailbox = open_mailbox("terminal-4242")
        tg.start_soon(
            TerminalActor(ref, config, replace(peers, storage=storage), out).serve, mailbox
        )

        async def next_of(kind: type[Any]) -> Any:
            with anyio.fail_after(10):
                async for output in outputs:
                    if isinstance(output, kind):
                        return output
            raise AssertionError(kind)

        opened = await ref.ask(OpenSession("new", None))
        await ref.tell(UserTurn("a turn, so the session is on disk"))
        assert (await next_of(TurnEnded)).status == "ok"
        storage.probing = True
        await ref.tell(RunCommand("reset", None))
        assert "Session reset" in (await next_of(CommandOutput)).text
        storage.probing = False
        tg.cancel_scope.cancel()
    assert len(storage.offers) >= 3  # a probe after each step of the reset
    assert opened.session_id not in storage.offers


def resume_and_stop_sending(socket_path: Path, workspace: Path, session_id: str) -> list[Frame]:
    """Say hello, read the welcome, resume ``session_id`` and close the sending side: every
    frame the front door sent after the welcome, until it closed the connection."""
    client = RawClient(socket_path)
    client.send(terminal_hello(4242, workspace))
    assert client.receive()["type"] == "welcome"
    client.send({"type": "open", "mode": "resume", "session_id": session_id})
    client.sock.shutdown(socket.SHUT_WR)
    frames: list[Frame] = []
    with contextlib.suppress(EOFError):
        while True:
            frames.append(client.receive())
    client.close()
    return frames


@pytest.mark.anyio
async def test_the_front_door_does_not_tell_opened_a_session_whose_last_reply_finishes(
    front_door: tuple[Path, ActorRef[Any], anyio.Event], tmp_path: Path
) -> None:
    """Found by the interleavings (seed 32, loaded machine): a connection the front door
    welcomed before the model stack loaded resumed a session whose turn finished for a
    terminal gone; the front door ignored the claim's Handover and told ``opened`` at once,
    before that reply ended (the TerminalActor tells it, with the reply, once it ends). A
    terminal that leaves meanwhile lets the session go to the next claim."""
    socket_path, storage, ended = front_door
    workspace = tmp_path / "ws"
    workspace.mkdir()
    project = sessions_dir(workspace, tmp_path / "home")
    sid = "aaaaaaaaaaaa"
    saved = SessionState(session_id=sid, created_at=utc_now(), updated_at=utc_now())
    await storage.ask(SaveSession(project, saved, writer=100, token=1))
    await storage.ask(Claim(sid, 100, token=1))
    holder, _ = open_mailbox("holder")
    await storage.ask(Finishing(sid, 1, holder))
    frames = await anyio.to_thread.run_sync(resume_and_stop_sending, socket_path, workspace, sid)
    with anyio.fail_after(10):
        await ended.wait()
    assert [frame["type"] for frame in frames] == []
    assert isinstance(await storage.ask(Claim(sid, 300, token=3)), Handover)
