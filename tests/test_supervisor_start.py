"""A starting supervisor answers attaches before the model stack loads; the first turn waits."""

from __future__ import annotations

import contextlib
import logging
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pydantic_ai.models
import pytest

from actors.base import run_supervised
from actors.storage import StorageActor, StorageMemory
from session.history import dump_messages
from session.manager import SessionManager
from session.models import SessionState, utc_now
from session.paths import sessions_dir
from supervisor import daemon
from supervisor.client import Connection, RemoteError, hello
from supervisor.front import MODEL_NOTICE, FrontDoor
from supervisor.identity import CAPABILITIES, Identity
from supervisor.runtime import RuntimePaths
from supervisor.stack import HEAVY_MODULES
from supervisor.wire import Frame
from tests.conversations import conversation
from tests.e2e.test_tools_run_once import TextThenToolCall

TIMEOUT_S = 20.0


def test_the_supervisor_and_its_front_door_import_no_model_stack() -> None:
    code = (
        "import sys, supervisor.daemon, supervisor.front, cli.entry\n"
        "heavy = set(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.startswith('pydantic_ai') or m in heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, *HEAVY_MODULES], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


@dataclass
class Starting:
    """A supervisor that listens through its front door; ``load`` loads the model stack."""

    root: Path
    workspace: Path
    socket: Path
    load: Callable[[], Awaitable[None]]
    running: daemon._Running
    """The real Server and Registry, once ``load`` has run."""

    async def connect(self) -> Connection:
        conn = await anyio.to_thread.run_sync(Connection.open, self.socket)
        conn.sock.settimeout(TIMEOUT_S)
        return conn


async def call(fn: Callable[..., Any], *args: Any) -> Any:
    return await anyio.to_thread.run_sync(fn, *args)


async def until(conn: Connection, kind: str) -> list[Frame]:
    """Frames up to and including the first of type ``kind``."""
    frames: list[Frame] = []
    while not frames or frames[-1]["type"] != kind:
        frames.append(await call(conn.receive))
    return frames


@pytest.fixture
async def starting(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Starting]:
    root = tmp_path / "home"
    monkeypatch.setenv("AGENT_ASSIST_HOME", str(root))
    monkeypatch.delenv("AGENT_ASSIST_MODEL", raising=False)
    (tmp_path / "run").mkdir(mode=0o700)
    paths = RuntimePaths(tmp_path / "run")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    shutdown = anyio.Event()
    running = daemon._Running()
    memory = StorageMemory()
    async with anyio.create_task_group() as workers:
        storage = await workers.start(
            partial(run_supervised, "storage", lambda ref: StorageActor(root, memory))
        )
        front = FrontDoor(root, paths.socket, storage, shutdown)
        async with anyio.create_task_group() as terminals:
            listener = await anyio.create_unix_listener(paths.socket, mode=0o600)
            async with anyio.create_task_group() as connections:
                connections.start_soon(
                    partial(listener.serve, front.handle, task_group=connections)
                )
                yield Starting(
                    root,
                    workspace,
                    paths.socket,
                    partial(
                        daemon.start_model_stack,
                        paths,
                        workers,
                        terminals,
                        storage,
                        front,
                        shutdown,
                        running,
                    ),
                    running,
                )
                if running.registry is not None:
                    await running.registry.detach_all("shutdown")
                connections.cancel_scope.cancel()
            await listener.aclose()
            terminals.cancel_scope.cancel()
        workers.cancel_scope.cancel()


@pytest.mark.anyio
async def test_a_terminal_is_opened_before_the_model_loads_and_its_first_turn_waits(
    starting: Starting,
) -> None:
    conn = await starting.connect()
    with contextlib.closing(conn):
        welcome = await call(
            conn.request,
            hello("terminal", terminal_pid=os.getpid(), workspace=str(starting.workspace)),
        )
        assert welcome["type"] == "welcome"
        await call(conn.send, {"type": "open", "mode": "new", "session_id": None})
        opened = await call(conn.receive)
        assert opened["type"] == "opened" and opened["resumed"] is False
        await call(conn.send, {"type": "user_message", "text": "are you there"})
        assert await call(conn.receive) == {"type": "notice", "text": MODEL_NOTICE}
        await starting.load()
        frames = await until(conn, "turn_end")
        assert frames[-1]["status"] == "ok"
        reply = "".join(f["text"] for f in frames if f["type"] == "text_delta")
        assert 'You said: "are you there"' in reply
        assert not any(f["type"] == "opened" for f in frames)  # told once, by the front door
        await call(conn.send, {"type": "close"})
        closed = (await until(conn, "closed"))[-1]
        assert closed["saved"] is True and closed["session_id"] == opened["session_id"]


@pytest.mark.anyio
async def test_a_session_resumed_before_the_model_loads_keeps_its_history(
    starting: Starting,
) -> None:
    state = SessionState.new(utc_now()).model_copy(
        update={"recent_messages": tuple(dump_messages(conversation(0, 0)))}
    )
    SessionManager(sessions_dir(starting.workspace.resolve(), starting.root)).save(state)
    conn = await starting.connect()
    with contextlib.closing(conn):
        welcome = await call(
            conn.request,
            hello("terminal", terminal_pid=os.getpid(), workspace=str(starting.workspace)),
        )
        assert welcome["offer"]["session_id"] == state.session_id
        await call(conn.send, {"type": "open", "mode": "resume", "session_id": state.session_id})
        opened = await call(conn.receive)
        assert opened["type"] == "opened" and opened["resumed"] is True
        assert opened["session_id"] == state.session_id
        await call(conn.send, {"type": "user_message", "text": "where were we"})
        await starting.load()
        frames = await until(conn, "turn_end")
        reply = "".join(f["text"] for f in frames if f["type"] == "text_delta")
        assert "(turn 3 of this conversation" in reply
        await call(conn.send, {"type": "close"})
        await until(conn, "closed")


@pytest.mark.anyio
async def test_a_session_live_elsewhere_is_refused_before_the_model_loads(
    starting: Starting,
) -> None:
    state = SessionState.new(utc_now())
    SessionManager(sessions_dir(starting.workspace.resolve(), starting.root)).save(state)
    first, second = await starting.connect(), await starting.connect()
    with contextlib.closing(first), contextlib.closing(second):
        for conn, pid in ((first, os.getpid()), (second, os.getppid())):
            await call(
                conn.request,
                hello("terminal", terminal_pid=pid, workspace=str(starting.workspace)),
            )
            await call(
                conn.send, {"type": "open", "mode": "resume", "session_id": state.session_id}
            )
        assert (await call(first.receive))["type"] == "opened"
        refused = await call(second.receive)
        assert refused["type"] == "error" and refused["code"] == "session_live"
        await call(second.send, {"type": "open", "mode": "new", "session_id": None})
        assert (await call(second.receive))["type"] == "opened"


@pytest.mark.anyio
async def test_listing_and_status_are_answered_before_the_model_loads_and_say_so(
    starting: Starting,
) -> None:
    conn = await starting.connect()
    with contextlib.closing(conn):
        await call(conn.request, hello("control"))
        listing = await call(
            conn.request,
            {"type": "list_sessions", "workspace": str(starting.workspace), "all": False},
        )
        assert listing["data"] == {"sessions": [], "warnings": [], "incomplete": False}
        status = await call(conn.request, {"type": "status"})
        assert status["data"]["running"] is True and status["data"]["terminals"] == 0
        assert status["data"]["model_loaded"] is False
        await starting.load()
        status = await call(conn.request, {"type": "status"})
        assert status["data"]["model_loaded"] is True


@pytest.mark.anyio
async def test_a_stop_gives_up_on_a_terminal_that_reads_nothing_and_saves_its_turn(
    starting: Starting, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A terminal stopped (Ctrl+Z) while a long reply streams, its socket full: the stop
    waited 5 s for its connection, and the turn, whose tool waited for its line to reach
    that terminal, was saved only within that wait. The stop gives the connection up: the
    tool does not run, the turn ends as interrupted and is saved, the connection ends."""
    server = TextThenToolCall()
    server.answer.set()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    caplog.set_level(logging.INFO, logger="agent_assist.llm")
    await starting.load()
    conn = await starting.connect()
    try:
        terminal = hello(
            "terminal",
            terminal_pid=os.getpid(),
            workspace=str(starting.workspace),
            model="openai-chat:test-model",
        )
        await call(conn.request, terminal)
        await call(conn.send, {"type": "open", "mode": "new", "session_id": None})
        session_id = (await call(conn.receive))["session_id"]
        await call(conn.send, {"type": "user_message", "text": "go"})
        assert (await until(conn, "turn_end"))[-1]["status"] == "ok"  # its tool ran
        await call(conn.send, {"type": "user_message", "text": "go"})  # read no more
        with anyio.fail_after(TIMEOUT_S):  # its tool waits for its line (the socket is full)
            while not any("slot is lent" in r.getMessage() for r in caplog.records):  # noqa: ASYNC110
                await anyio.sleep(0.01)  # another task's log, polled
        assert starting.running.server is not None
        with anyio.fail_after(TIMEOUT_S):
            await starting.running.server.stop()
    finally:
        conn.close()
        server.close()
    assert server.tool_returns == 1, "the second turn's tool did not run"
    assert (starting.workspace / "notes.md").read_text() == "x\n"
    saved = SessionManager(sessions_dir(starting.workspace.resolve(), starting.root))
    # (off the loop: the turn's long tool output is scrubbed as it loads)
    messages = (await anyio.to_thread.run_sync(saved.load, session_id)).recent_messages
    assert len(messages) == 8, "both turns are kept, the second as far as it got"
    assert "[interrupted: this reply was stopped before its end]" in str(messages[-1])


@pytest.mark.anyio
async def test_a_tab_welcomed_before_the_model_loads_stays_its_own_after_it_loads(
    starting: Starting,
) -> None:
    """H164's find: a terminal welcomed by the front door that had not opened its session
    when the model stack loaded (its user reading the resumption offer) was not known to
    the server; a second agent-assist of the same tab was welcomed there, and the first,
    answering its offer, was then refused as busy. The second is refused, the first goes
    on as the tab's."""
    first = await starting.connect()
    with contextlib.closing(first):
        tab = hello("terminal", terminal_pid=os.getpid(), workspace=str(starting.workspace))
        assert (await call(first.request, tab))["type"] == "welcome"
        await starting.load()
        second = await starting.connect()
        with contextlib.closing(second), pytest.raises(RemoteError) as refused:
            await call(second.request, tab)
        assert refused.value.code == "busy"
        await call(first.send, {"type": "open", "mode": "new", "session_id": None})
        assert (await call(first.receive))["type"] == "opened"
        await call(first.send, {"type": "user_message", "text": "still mine"})
        assert (await until(first, "turn_end"))[-1]["status"] == "ok"
        await call(first.send, {"type": "close"})
        assert (await until(first, "closed"))[-1]["saved"] is True


@pytest.mark.parametrize("leaving", ["close", "hangup"])
@pytest.mark.anyio
async def test_a_tab_welcomed_before_the_model_loads_is_free_again_once_it_leaves_after(
    starting: Starting, leaving: str
) -> None:
    """The tab the front door held for its terminal is let go when that terminal leaves
    before opening anything, whether the stack loaded meanwhile or not: never busy for
    good."""
    tab = hello("terminal", terminal_pid=os.getpid(), workspace=str(starting.workspace))
    first = await starting.connect()
    with contextlib.closing(first):
        assert (await call(first.request, tab))["type"] == "welcome"
        await starting.load()
        if leaving == "close":
            await call(first.send, {"type": "close"})
            assert (await until(first, "closed"))[-1]["saved"] is False
    with anyio.fail_after(TIMEOUT_S):
        answer = await answer_to(starting, tab)
        while answer == "busy" and leaving == "hangup":  # not read by the front door yet
            answer = await answer_to(starting, tab)
    assert answer == "welcome"


async def answer_to(starting: Starting, hello: Frame) -> str:
    """The type of the answer to ``hello`` on a new connection, or its error's code."""
    conn = await starting.connect()
    with contextlib.closing(conn):
        try:
            return str((await call(conn.request, hello))["type"])
        except RemoteError as refused:
            return refused.code


@pytest.mark.anyio
async def test_welcomes_and_status_say_what_the_supervisor_is_before_and_after_the_model_loads(
    starting: Starting,
) -> None:
    identity = Identity.of_this_process().as_fields()
    said: list[dict[str, object]] = []
    for loaded in (False, True):
        if loaded:
            await starting.load()
        for role in ("terminal", "control"):
            conn = await starting.connect()
            with contextlib.closing(conn):
                greeting = hello(role, terminal_pid=os.getpid(), workspace=str(starting.workspace))
                said.append(await call(conn.request, greeting))
                if role == "control":
                    said.append((await call(conn.request, {"type": "status"}))["data"])
    for answer in said:
        assert {key: answer[key] for key in identity} == identity
    assert identity["capabilities"] == list(CAPABILITIES)


@pytest.mark.anyio
@pytest.mark.parametrize("loaded", [False, True], ids=["front door", "server"])
async def test_a_stop_if_idle_is_refused_while_a_terminal_is_attached(
    starting: Starting, loaded: bool
) -> None:
    if loaded:
        await starting.load()
    tab, control = await starting.connect(), await starting.connect()
    with contextlib.closing(tab), contextlib.closing(control):
        greeting = hello("terminal", terminal_pid=os.getpid(), workspace=str(starting.workspace))
        await call(tab.request, greeting)
        await call(control.request, hello("control"))
        refused = await call(control.request, {"type": "stop", "if_idle": True})
        assert refused["data"] == {"stopping": False, "terminals": 1, "live_sessions": 0}
        status = await call(control.request, {"type": "status"})  # still served
        assert status["data"]["running"] is True


@pytest.mark.anyio
@pytest.mark.parametrize("loaded", [False, True], ids=["front door", "server"])
async def test_a_stop_if_idle_is_refused_while_a_session_is_open(
    starting: Starting, loaded: bool
) -> None:
    """A session still open with no terminal attached is a turn finishing for its terminal
    gone (or its exit's save): a stop would cut it."""
    if loaded:
        await starting.load()
    tab, control = await starting.connect(), await starting.connect()
    with contextlib.closing(tab), contextlib.closing(control):
        greeting = hello("terminal", terminal_pid=os.getpid(), workspace=str(starting.workspace))
        await call(tab.request, greeting)
        await call(tab.send, {"type": "open", "mode": "new", "session_id": None})
        assert (await until(tab, "opened"))[-1]["type"] == "opened"
        await call(control.request, hello("control"))
        refused = await call(control.request, {"type": "stop", "if_idle": True})
        assert refused["data"]["stopping"] is False
        assert refused["data"]["live_sessions"] == 1


@pytest.mark.anyio
async def test_a_stop_if_idle_stops_a_supervisor_nobody_uses(starting: Starting) -> None:
    await starting.load()
    control = await starting.connect()
    with contextlib.closing(control):
        await call(control.request, hello("control"))
        stopped = await call(control.request, {"type": "stop", "if_idle": True})
        assert stopped["data"] == {"stopping": True}
