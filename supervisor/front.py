"""The front door: answers attaches with light modules while the model stack loads.

A new supervisor listens before it imports pydantic-ai (most of a second).
Until the stack is loaded, each connection is served here: a terminal gets its
welcome (with the resumption offer) and its ``open`` answered (the session is
claimed, and a resumed one read, through the StorageActor), so its prompt
shows at once; the connection is then handed to the real ``Server``, which
attaches a TerminalActor and opens the same session in it. A first message
typed before that waits for the stack; past ``MODEL_NOTICE_AFTER_S`` the
terminal is told, in one line, that the model is starting. Control requests
that need no model (listing, status, stop) are answered at once.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import anyio
from anyio.abc import SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from actors.base import ActorRef, DeadActor
from actors.messages import (
    Claim,
    ListSessions,
    LiveCount,
    LoadSession,
    LoadUnanswered,
    Release,
    StorageMessage,
)
from session.catalog import SessionListing
from session.errors import SessionError, SessionFileError, SessionLive
from session.filesystem import detect_file_drift
from session.models import new_session_id, validate_session_id
from session.paths import sessions_dir
from session.resume import drift_lines
from supervisor import protocol as p
from supervisor.greeting import (
    Hangup,
    busy_line,
    hello_workspace,
    read_frame,
    read_hello,
    refuse,
    send,
)
from supervisor.identity import Identity
from supervisor.stopped import mark_stopped
from supervisor.welcome import welcome
from supervisor.wire import ErrorCode

if TYPE_CHECKING:
    from supervisor.server import Server

log = logging.getLogger("agent_assist.front")
MODEL_NOTICE_AFTER_S = 0.3
MODEL_NOTICE = "starting the model..."
STORAGE_TIMEOUT_S = 30.0


HELLO_TIMEOUT_S = 10.0
"""A connection that says nothing for this long is closed, unless
``AGENT_ASSIST_HELLO_TIMEOUT_S`` says otherwise (a test and tuning knob)."""


@dataclass(frozen=True)
class Opening:
    """A session the front door opened for a terminal: the Server opens it again, for real."""

    mode: Literal["new", "resume"]
    session_id: str
    phase: str | None = None
    """The resumed session's phase of the work (for the terminal's toolbar)."""
    drift: tuple[str, ...] = ()
    """How the resumed session's tracked files changed (as ``Opened.drift`` says it)."""
    continuing: p.Continuing | None = None
    """The ``open`` frame's: a re-attach after the supervisor went away."""
    unanswered: str | None = None
    """The resumed session's last message if it got no reply (as ``Opened.unanswered``)."""
    taken_up: bool = False
    """The session's turn finishes for its terminal gone (the claim's ``Handover``): not
    told ``opened`` here; the TerminalActor's open waits for that turn and tells it."""


class ProtocolMisuse(Exception):
    """A well-formed frame sent where it has no meaning (answered ``invalid_request``)."""


def error_for(exc: BaseException) -> tuple[str, str]:
    """The error frame's code and line for a failed request (front door and server)."""
    if isinstance(exc, ProtocolMisuse):
        return ErrorCode.INVALID_REQUEST, str(exc)
    if isinstance(exc, SessionLive):
        return ErrorCode.SESSION_LIVE, str(exc)
    if isinstance(exc, FileNotFoundError):
        return ErrorCode.NOT_FOUND, "no such session"
    if isinstance(exc, SessionFileError):  # the request failed: an error, whatever the
        # problem's severity where the run goes on (a file moved aside is a warning there)
        return ErrorCode.SESSION_FILE, f"error: {exc}"
    if isinstance(exc, SessionError):
        return ErrorCode.INVALID_REQUEST, str(exc)
    if isinstance(exc, TimeoutError):
        return ErrorCode.BUSY, "the supervisor did not answer in time"
    if isinstance(exc, DeadActor):
        return ErrorCode.BUSY, "the supervisor is restarting a component; try again"
    if isinstance(exc, OSError):
        where = f" ({exc.filename})" if exc.filename else ""
        return ErrorCode.INTERNAL, f"{exc.strerror or exc}{where}"
    logging.getLogger("agent_assist.front").error("internal error", exc_info=exc)
    return ErrorCode.INTERNAL, "internal error in the supervisor (details in supervisor.log)"


async def serve_control(
    reader: BufferedByteReceiveStream,
    stream: SocketStream,
    answer: Callable[[p.ClientFrame], Awaitable[object]],
    stop: Callable[[], None],
) -> None:
    """A control connection (the front door's, the server's): each request answered, a
    failure with an error frame, until a ``Stop`` that stops (``stopping``), answered, then
    ``stop()``."""
    while True:
        frame = await read_frame(reader, stream)
        try:
            data = await answer(frame)
        except Exception as exc:
            code, message = error_for(exc)
            await send(stream, p.ErrorFrame(code=code, message=message))
            continue
        await send(stream, p.Result(data=data))
        if isinstance(frame, p.Stop) and stopping(data):
            stop()
            return  # hang up: the stop must not wait for this client to hang up first


def stopping(answer: object) -> bool:
    """Whether a ``stop``'s answer is to stop (one ``if_idle`` may be refused)."""
    return isinstance(answer, dict) and answer.get("stopping") is True


def idle_or_not(terminals: int, live_sessions: int, if_idle: bool) -> dict[str, object]:
    """A ``stop``'s answer: stopping, unless ``if_idle`` and a terminal is attached (or
    attaching) or a session still open (a turn finishing for its terminal gone)."""
    if if_idle and (terminals or live_sessions):
        return {"stopping": False, "terminals": terminals, "live_sessions": live_sessions}
    return {"stopping": True}


async def _tell_stopped(stream: SocketStream) -> None:
    """The ``closed`` frame of a stop, to a terminal whose session had no turn yet (the chat
    says the supervisor was stopped, not that it went away)."""
    gone = (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)
    with anyio.CancelScope(shield=True), anyio.move_on_after(1), contextlib.suppress(*gone):
        await send(stream, p.ClosedFrame(session_id=None, saved=False, reason="shutdown"))


class FrontDoor:
    def __init__(
        self,
        root: Path,
        socket: Path,
        storage: ActorRef[StorageMessage],
        shutdown: anyio.Event,
        hello_timeout_s: float = HELLO_TIMEOUT_S,
        identity: Identity | None = None,
    ) -> None:
        self._root = root
        self.identity = identity or Identity.of_this_process()
        """What this supervisor is (its welcomes say it)."""
        self._hello_timeout_s = hello_timeout_s
        self._socket = socket
        self._storage = storage
        self._shutdown = shutdown
        self._server: Server | None = None
        self._ready = anyio.Event()
        self._terminals: set[int] = set()
        self._started = time.monotonic()

    def hand_over(self, server: Server) -> None:
        """The model stack is loaded: from now on ``server`` serves every connection, and
        its registry holds the tabs of the terminals welcomed here (one connection per tab
        still), until each is handed over or leaves."""
        for terminal_pid in self._terminals:
            server.registry.hold(terminal_pid)
        self._server = server
        self._ready.set()

    async def _server_ready(self) -> Server:
        await self._ready.wait()
        assert self._server is not None
        return self._server

    async def handle(self, stream: SocketStream) -> None:
        if self._server is not None:
            await self._server.handle(stream)
            return
        handed_over = False
        try:
            handed_over = await self._handle(stream)
        except (Hangup, anyio.BrokenResourceError, anyio.ClosedResourceError):
            pass  # the terminal went away: not an error
        except Exception:
            log.exception("connection failed")
        finally:
            if not handed_over:
                await stream.aclose()

    # -- connections --------------------------------------------------------

    async def _handle(self, stream: SocketStream) -> bool:
        """Serve a connection until it can be handed over; True once handed over."""
        reader = BufferedByteReceiveStream(stream)
        hello = await read_hello(stream, reader, self._hello_timeout_s, self._root)
        if hello.role == "control":
            await send(stream, p.Welcome(supervisor_pid=os.getpid(), **self.identity.as_fields()))
            await serve_control(reader, stream, self._answer, self._stop)
            return False
        terminal_pid = hello.terminal_pid or hello.client_pid
        server = self._server  # the stack loaded while this hello was read: its registry
        if terminal_pid in self._terminals or (
            server is not None and server.registry.busy(terminal_pid)
        ):
            busy = busy_line(terminal_pid)
            log.info(
                "terminal %d: agent-assist pid %d refused: %s", terminal_pid, hello.client_pid, busy
            )
            await refuse(stream, ErrorCode.BUSY, busy)
        self._terminals.add(terminal_pid)
        if server is not None:
            server.registry.hold(terminal_pid)
        try:
            return await self._terminal(hello, terminal_pid, reader, stream)
        finally:
            self._terminals.discard(terminal_pid)
            if self._server is not None:  # handed over, it is attached (or left): no-op
                self._server.registry.let_go(terminal_pid)

    async def _terminal(
        self,
        hello: p.Hello,
        terminal_pid: int,
        reader: BufferedByteReceiveStream,
        stream: SocketStream,
    ) -> bool:
        workspace = await hello_workspace(stream, hello)
        project = sessions_dir(workspace, self._root)
        said = await welcome(self._storage, project, terminal_pid, workspace, self.identity)
        await send(stream, said)
        opening = await self._open(reader, stream, project, terminal_pid, workspace)
        if opening is None:
            return False
        try:
            if not await self._wait_for_model(reader, stream):
                raise Hangup("the terminal went away")
            server = await self._server_ready()
        except BaseException:  # the claim is the Server's to keep only once it adopts it
            await self._release(opening.session_id, terminal_pid)
            if self._shutdown.is_set():  # stopped before the stack loaded: nothing was saved
                await _tell_stopped(stream)
            raise
        await server.adopt(hello, reader, stream, opening)
        return True

    async def _open(
        self,
        reader: BufferedByteReceiveStream,
        stream: SocketStream,
        project: Path,
        terminal_pid: int,
        workspace: Path,
    ) -> Opening | None:
        """Answer ``open`` frames until one succeeds; None if the terminal leaves first."""
        while True:
            frame = await read_frame(reader, stream)
            if isinstance(frame, p.Close):
                await send(stream, p.ClosedFrame(session_id=None, saved=False, reason="exit"))
                return None
            if not isinstance(frame, p.Open):
                await send(
                    stream,
                    p.ErrorFrame(code=ErrorCode.INVALID_REQUEST, message="open a session first"),
                )
                continue
            try:
                opening = await self._claim(frame, project, terminal_pid, workspace)
            except Exception as exc:
                code, message = error_for(exc)
                await send(stream, p.ErrorFrame(code=code, message=message))
                continue
            if opening.taken_up:  # told by the TerminalActor once the last reply ended
                return opening
            try:
                await send(
                    stream,
                    p.Opened(
                        session_id=opening.session_id,
                        resumed=opening.mode == "resume",
                        drift=opening.drift,
                        phase=opening.phase,
                        unanswered=opening.unanswered,
                    ),
                )
            except BaseException:  # gone before it was told: nobody holds the session
                await self._release(opening.session_id, terminal_pid)
                raise
            return opening

    async def _release(self, session_id: str, terminal_pid: int) -> None:
        with anyio.CancelScope(shield=True):
            await self._storage.ask(Release(session_id, terminal_pid), STORAGE_TIMEOUT_S)

    async def _claim(
        self, frame: p.Open, project: Path, terminal_pid: int, workspace: Path
    ) -> Opening:
        if frame.mode == "new":
            session_id = new_session_id()
            claim = Claim(session_id, terminal_pid, new_in=project)  # listed before a turn
            await self._storage.ask(claim, STORAGE_TIMEOUT_S)
            return Opening("new", session_id)
        session_id = validate_session_id(frame.session_id or "")
        claim = Claim(session_id, terminal_pid, stored_in=project)
        handover = await self._storage.ask(claim, STORAGE_TIMEOUT_S)
        try:  # the file must be there and readable now, as the real open will find it
            stored = await self._storage.ask(
                LoadSession(project, session_id, messages="none", set_aside="move"),
                STORAGE_TIMEOUT_S,
            )
            drift = await anyio.to_thread.run_sync(
                detect_file_drift, workspace, stored.file_manifest
            )
            unanswered = None
            if frame.continuing is None:  # a chat that never left knows its last turn
                ask = LoadUnanswered(project, session_id)
                unanswered = await self._storage.ask(ask, STORAGE_TIMEOUT_S)
        except BaseException:
            await self._release(session_id, terminal_pid)
            raise
        drifted = tuple(drift_lines(drift))
        return Opening(
            "resume",
            session_id,
            stored.phase,
            drifted,
            frame.continuing,
            unanswered,
            taken_up=handover is not None,
        )

    async def _wait_for_model(
        self, reader: BufferedByteReceiveStream, stream: SocketStream
    ) -> bool:
        """Until the stack is loaded, keeping what the terminal sends meanwhile in ``reader``
        (in order) and telling it once if a message of its waits over the notice delay.
        False if the terminal went away."""
        if self._ready.is_set():
            return True
        gone = False
        noticed = False
        waiting_since: float | None = None

        async def read_ahead() -> None:
            nonlocal gone, waiting_since
            while True:
                try:
                    chunk = await stream.receive()
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    gone = True
                    tg.cancel_scope.cancel()
                    return
                reader.feed_data(chunk)
                if waiting_since is None and b'"user_message"' in reader.buffer:
                    waiting_since = anyio.current_time()

        async with anyio.create_task_group() as tg:
            tg.start_soon(read_ahead)
            while not self._ready.is_set():
                with anyio.move_on_after(0.05):
                    await self._ready.wait()
                late = waiting_since is not None and (
                    anyio.current_time() - waiting_since > MODEL_NOTICE_AFTER_S
                )
                if late and not noticed and not self._ready.is_set():
                    noticed = True
                    await send(stream, p.Notice(text=MODEL_NOTICE))
            tg.cancel_scope.cancel()
        return not gone

    # -- control connections --------------------------------------------------

    def _stop(self) -> None:
        mark_stopped(self._socket.parent, os.getpid())
        self._shutdown.set()

    async def _answer(self, frame: p.ClientFrame) -> object:
        if self._server is not None:
            return await self._server.answer(frame)
        match frame:
            case p.ListSessions(workspace=workspace, all=every, terminal_pid=pid):
                projects = None
                if not every:
                    if not workspace or not Path(workspace).is_absolute():
                        raise SessionError("a workspace (absolute path) is required")
                    projects = (sessions_dir(Path(workspace), self._root),)
                listing: SessionListing = await self._storage.ask(ListSessions(projects, pid))
                return listing.to_json()
            case p.Status():
                return {
                    "running": True,
                    "pid": os.getpid(),
                    "socket": str(self._socket),
                    "terminals": len(self._terminals),
                    "live_sessions": await self._storage.ask(LiveCount()),
                    "uptime_s": round(time.monotonic() - self._started, 1),
                    **self.identity.as_fields(),
                    "state_root": str(self._root),
                    "model_loaded": False,  # the model stack is still loading
                }
            case p.Stop(if_idle=if_idle):
                live = await self._storage.ask(LiveCount()) if if_idle else 0
                return idle_or_not(len(self._terminals), live, if_idle)
        server = await self._server_ready()
        return await server.answer(frame)
