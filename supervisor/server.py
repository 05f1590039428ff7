"""The connection handler: checks the peer, reads frames, and translates them to actor messages.

Each connection starts with ``hello``. A ``terminal`` connection gets a
TerminalActor and carries a conversation; a ``control`` connection answers
requests (sessions, status, stop). A malformed, oversized or unknown frame
gets one error frame and the connection is closed; nothing else is affected.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import socket
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import anyio
from anyio.abc import SocketStream, TaskGroup
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from actors.base import ActorRef, DeadActor, Reply, next_item
from actors.compaction import OFFLINE
from actors.log_scrub import scrub_logs_of
from actors.messages import (
    AskUser,
    CancelCurrentTurn,
    Closed,
    CommandOutput,
    ConfirmAnswer,
    Failure,
    Info,
    ListCheckpoints,
    ListSessions,
    LiveCount,
    LoadShown,
    NotDelivered,
    Opened,
    OpenSession,
    PruneSessions,
    Release,
    RemoveSession,
    ReplyText,
    RunCommand,
    StorageMessage,
    TerminalMessage,
    TerminalOutput,
    ToolCallLine,
    TurnEnded,
    UserTurn,
)
from actors.terminal import DETACH_FINISH_WAIT_S, TerminalConfig
from actors.turn_lines import error_words
from session.budget import context_budget
from session.catalog import Pruned, SessionListing
from session.checkpoints import listing_items, megabytes_in_bytes
from session.errors import InvalidSessionId
from session.leaving import CLOSED_BY_CHAT
from session.lifecycle import PersistPolicy
from session.manager import ListedCheckpoints
from session.models import is_session_id
from session.paths import is_project_name, projects_dir, sessions_dir
from session.processes import process_start_time
from session.redaction import with_secrets
from supervisor import accept, front
from supervisor import protocol as p
from supervisor.front import Opening, ProtocolMisuse, error_for
from supervisor.greeting import (
    Hangup,
    hello_workspace,
    next_frame,
    raw_socket,
    read_hello,
    refuse,
    send,
    unsent,
)
from supervisor.identity import Identity
from supervisor.registry import Registry, TerminalBusy
from supervisor.stopped import mark_stopped
from supervisor.welcome import welcome
from supervisor.wire import TEXT_FRAME_CHARS, ErrorCode, FrameError

log = logging.getLogger("agent_assist.server")
OPEN_TIMEOUT_S = 60.0
OUTBOX_SIZE = 256
HELLO_TIMEOUT_S = front.HELLO_TIMEOUT_S
STOP_WRITE_GRACE_S = 0.5
"""Once the supervisor stops, how long a write to a terminal may wait for room in its
socket: a terminal that takes none of it in that time (stopped with Ctrl+Z) is given up."""
MAX_CONNECTIONS = accept.MAX_CONNECTIONS


@dataclass(frozen=True)
class Settings:
    root: Path
    socket: Path
    model: str
    policy: PersistPolicy
    identity: Identity
    hello_timeout_s: float = HELLO_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS
    context_tokens: int | None = None
    summary_model: str | None = None
    model_timeout_s: float = 300.0
    finish_wait_s: float = DETACH_FINISH_WAIT_S
    """How long the turn of a terminal gone runs on (``AGENT_ASSIST_FINISH_WAIT_S``)."""

    def policy_for(self, model: str, chat: p.ChatSettings | None = None) -> PersistPolicy:
        """The policy of a terminal using ``model`` (its token budget depends on it), with
        the terminal's own compaction settings if it sent them."""
        compaction = self.policy.compaction
        context_tokens = self.context_tokens
        if chat is not None:
            compaction = dataclasses.replace(
                compaction,
                compaction_interval=chat.compaction_interval,
                overlap_size=chat.compaction_overlap,
            )
            context_tokens = chat.context_tokens
        budget = context_budget(model, context_tokens)
        compaction = dataclasses.replace(compaction, token_threshold=budget)
        return dataclasses.replace(self.policy, compaction=compaction)

    def policy_of(self, hello: p.Hello, model: str) -> PersistPolicy:
        """``policy_for`` the terminal's model and settings, scrubbing its secrets too."""
        policy = self.policy_for(model, hello.settings)
        secrets = with_secrets(policy.known_secrets, tuple(hello.secrets))
        return dataclasses.replace(policy, known_secrets=secrets)

    def terminal_config(
        self, hello: p.Hello, terminal_pid: int, start_time: float | None, workspace: Path
    ) -> TerminalConfig:
        """What a terminal's actor runs with: the supervisor's settings, overridden by the
        ones the terminal resolved and sent (``config show`` in its shell tells them)."""
        model = hello.model or self.model
        chat = hello.settings
        return TerminalConfig(
            terminal_pid=terminal_pid,
            terminal_start_time=start_time,
            workspace=workspace,
            project=sessions_dir(workspace, self.root),
            model=model,
            policy=self.policy_of(hello, model),
            summary_model=(chat.summary_model or OFFLINE) if chat else self.summary_model,
            stall_timeout_s=chat.model_timeout if chat else None,
            checkpoint_cap=megabytes_in_bytes(chat.checkpoint_max_mb) if chat else None,
            acknowledges_tool_lines=True,  # the connection's writer does (``_pump``)
            finish_wait_s=self.finish_wait_s,
        )


def _frame_for(output: TerminalOutput) -> p.ServerFrame:
    match output:
        case Opened(session_id, resumed, drift, phase, last_reply, unanswered):
            return p.Opened(
                session_id=session_id,
                resumed=resumed,
                drift=drift,
                phase=phase,
                last_reply=p.LastReply(
                    text=last_reply.text, note=last_reply.note, heading=last_reply.heading
                )
                if last_reply is not None
                else None,
                unanswered=unanswered,
            )
        case ToolCallLine(text, _):
            return p.ToolCall(text=text)
        case ReplyText(text):
            return p.TextDelta(text=text)
        case TurnEnded(status, error, input_tokens, phase, notes, learned):
            return p.TurnEnd(
                status=status,
                error=error,
                input_tokens=input_tokens,
                phase=phase,
                notes=notes,
                secrets=learned,
            )
        case Info(text, at_reattach, files):
            return p.Notice(text=text, at_reattach=at_reattach, files=files)
        case AskUser(confirm_id, question):
            return p.Confirm(id=confirm_id, question=question)
        case CommandOutput(text, phase, input_tokens):
            return p.CommandResult(text=text, phase=phase, input_tokens=input_tokens)
        case Closed(session_id, saved, reason, unsaved, kept_at, told):
            return p.ClosedFrame(
                session_id=session_id,
                saved=saved,
                reason=reason,
                unsaved=unsaved,
                kept_at=kept_at,
                told=told,
            )
        case Failure(code, message, _, open_refused):
            return p.ErrorFrame(code=code, message=message, open_refused=open_refused)


def _without_front_doors_opened(
    batch: list[TerminalOutput],
) -> tuple[list[TerminalOutput], bool]:
    """``batch`` without the actor's ``Opened`` of the session the front door told opened
    already, and whether one is still to come: not after the refusal of that open (the
    next ``Opened`` answers the terminal's next open)."""
    for index, output in enumerate(batch):
        if isinstance(output, Failure) and output.open_refused:
            return batch, False
        if isinstance(output, Opened):
            return batch[:index] + batch[index + 1 :], False
    return batch, True


def _waiting(outputs: MemoryObjectReceiveStream[TerminalOutput]) -> list[TerminalOutput]:
    """What is already queued, without waiting; stops after a Closed or fatal Failure."""
    waiting: list[TerminalOutput] = []
    while len(waiting) < OUTBOX_SIZE:
        try:
            output = outputs.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            break
        waiting.append(output)
        if _ends_connection(output):
            break
    return waiting


def _left_unwritten(outputs: MemoryObjectReceiveStream[TerminalOutput]) -> list[TerminalOutput]:
    """Every output still queued, taken without waiting."""
    left: list[TerminalOutput] = []
    while True:
        try:
            left.append(outputs.receive_nowait())
        except (anyio.WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
            return left


def _delivered(batch: list[TerminalOutput], written: bool) -> None:
    """Tell the tools that wait for their lines (``ToolCallLine.delivered``) whether those
    are ``written`` to the terminal's socket (a supervisor killed from now on leaves a
    terminal that read them, even if it reads them after the kill), or never will be (the
    terminal is gone: the tools do not run)."""
    for output in batch:
        if isinstance(output, ToolCallLine) and output.delivered is not None:
            output.delivered.set(written)


def _not_delivered(batch: list[TerminalOutput]) -> None:
    """Tell the tools that wait for these lines that the terminal will not have them: the
    supervisor stops and gave up on a terminal that reads nothing. The tools do not run."""
    for output in batch:
        if isinstance(output, ToolCallLine) and output.delivered is not None:
            output.delivered.fail(NotDelivered())


async def _not_delivered_until_closed(outputs: MemoryObjectReceiveStream[TerminalOutput]) -> None:
    """Take the outputs of a connection given up on, unwritten, until its end (the actor's
    ``Closed``): its actor never waits for room, and no tool of it runs."""
    while (output := await next_item(outputs)) is not None:
        _not_delivered([output])
        if _ends_connection(output):
            return


def _ends_connection(output: TerminalOutput) -> bool:
    return isinstance(output, Closed) or (isinstance(output, Failure) and output.fatal)


def _merge_text(batch: list[TerminalOutput]) -> list[TerminalOutput]:
    """Adjacent ReplyText outputs become one, cut in pieces of at most ``TEXT_FRAME_CHARS``
    (a long reply to a terminal that reads late is waiting whole)."""
    merged: list[TerminalOutput] = []
    for output in batch:
        previous = merged[-1] if merged else None
        if isinstance(output, ReplyText) and isinstance(previous, ReplyText):
            merged[-1] = ReplyText(previous.text + output.text)
        else:
            merged.append(output)
    if all(not isinstance(o, ReplyText) or len(o.text) <= TEXT_FRAME_CHARS for o in merged):
        return merged
    pieces: list[TerminalOutput] = []
    for output in merged:
        if isinstance(output, ReplyText) and len(output.text) > TEXT_FRAME_CHARS:
            text = output.text
            pieces += (
                ReplyText(text[at : at + TEXT_FRAME_CHARS])
                for at in range(0, len(text), TEXT_FRAME_CHARS)
            )
        else:
            pieces.append(output)
    return pieces


class Server:
    def __init__(
        self,
        settings: Settings,
        registry: Registry,
        storage: ActorRef[StorageMessage],
        shutdown: anyio.Event,
    ) -> None:
        self._settings = settings
        self._registry = registry
        self._storage = storage
        self._shutdown = shutdown
        self._started = time.monotonic()
        self._open_connections = 0
        self._all_closed = anyio.Event()
        self._give_up_at: float | None = None
        """When a write that waits for room in a terminal's socket is given up (the stop)."""
        self._writes: set[anyio.CancelScope] = set()
        """The writes to terminals under way."""

    async def stop(self) -> None:
        """Save every attached session, then wait for every connection to end. A terminal
        that reads nothing (stopped with Ctrl+Z, its socket full) is given up on after
        ``STOP_WRITE_GRACE_S``: its tool lines not delivered, its turn ends as interrupted
        and is saved, and its connection is closed."""
        self._give_up_at = anyio.current_time() + STOP_WRITE_GRACE_S
        for write in self._writes:
            write.deadline = min(write.deadline, self._give_up_at)
        log.info("saving %d attached session(s) before stopping", self._registry.attached)
        await self._registry.detach_all("shutdown")
        await self.wait_closed()

    async def wait_closed(self) -> None:
        """Until every connection has ended (after a shutdown told them to)."""
        if self._open_connections:
            await self._all_closed.wait()

    # -- connections --------------------------------------------------------

    async def handle(self, stream: SocketStream) -> None:
        await self._serve(stream, lambda: self._handle(stream))

    async def adopt(
        self,
        hello: p.Hello,
        reader: BufferedByteReceiveStream,
        stream: SocketStream,
        opening: Opening,
    ) -> None:
        """A terminal connection the front door welcomed and opened before the model stack
        loaded: attach its TerminalActor and open the same session in it, then converse."""
        await self._serve(stream, lambda: self._terminal(hello, reader, stream, opening))

    async def _serve(self, stream: SocketStream, serve: Callable[[], Awaitable[None]]) -> None:
        """Run ``serve``, counted among the open connections; a hangup ends it quietly."""
        self._open_connections += 1
        try:
            async with stream:
                try:
                    await serve()
                except (Hangup, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # the peer went away (before its answer, too): not an error
                except Exception:
                    log.exception("connection failed")
        finally:
            self._open_connections -= 1
            if not self._open_connections:
                self._all_closed.set()
                self._all_closed = anyio.Event()

    @property
    def registry(self) -> Registry:
        """Who holds which tab: the front door keeps its rule there once the stack loaded."""
        return self._registry

    async def answer(self, frame: p.ClientFrame) -> object:
        """A control request's answer (for connections the front door welcomed)."""
        return await self._answer(frame)

    async def _handle(self, stream: SocketStream) -> None:
        reader = BufferedByteReceiveStream(stream)
        hello = await read_hello(
            stream, reader, self._settings.hello_timeout_s, self._settings.root
        )
        if hello.role == "control":
            identity = self._settings.identity.as_fields()
            await send(stream, p.Welcome(supervisor_pid=os.getpid(), **identity))
            await front.serve_control(reader, stream, self._answer, self._stop)
        else:
            await self._terminal(hello, reader, stream)

    # -- terminal connections -----------------------------------------------

    async def _terminal(
        self,
        hello: p.Hello,
        reader: BufferedByteReceiveStream,
        stream: SocketStream,
        opening: Opening | None = None,
    ) -> None:
        workspace = await hello_workspace(stream, hello)
        terminal_pid = hello.terminal_pid or hello.client_pid
        start_time = await anyio.to_thread.run_sync(process_start_time, terminal_pid)
        config = self._settings.terminal_config(hello, terminal_pid, start_time, workspace)
        scrub_logs_of(hello.secrets)  # an endpoint's error about its turns may echo them
        send_out, receive_out = anyio.create_memory_object_stream[TerminalOutput](OUTBOX_SIZE)
        handler_out = send_out.clone()
        try:
            ref = await self._registry.attach(config, send_out, held=opening is not None)
        except TerminalBusy as exc:
            log.info(
                "terminal %d: agent-assist pid %d refused: %s", terminal_pid, hello.client_pid, exc
            )
            for end in (send_out, handler_out, receive_out):
                end.close()
            if opening is not None:  # the front door's claim: nobody will hold it now
                with anyio.CancelScope(shield=True):
                    await self._storage.ask(Release(opening.session_id, terminal_pid))
            await refuse(stream, ErrorCode.BUSY, str(exc))
            raise AssertionError("unreachable") from exc
        # From here on the terminal is attached: whatever happens (the terminal goes
        # away before the welcome, the offer cannot be read), it is detached again.
        reason = "disconnected"
        detached = False

        async def detach() -> None:
            nonlocal detached
            if not detached:
                detached = True
                handler_out.close()
                with anyio.CancelScope(shield=True):
                    await self._registry.detach(terminal_pid, ref, reason)

        try:
            async with anyio.create_task_group() as tg:
                told = opening is not None and not opening.taken_up
                tg.start_soon(self._pump, receive_out, stream, told)
                try:
                    if opening is None:
                        await send(
                            stream,
                            await welcome(
                                self._storage,
                                config.project,
                                terminal_pid,
                                workspace,
                                self._settings.identity,
                            ),
                        )
                    elif told:
                        await self._reopen(ref, opening, handler_out)
                    taking_up = None if told else opening
                    reason = await self._converse(reader, stream, ref, handler_out, taking_up)
                except (Hangup, anyio.BrokenResourceError, anyio.ClosedResourceError):
                    pass  # the terminal went away (before its welcome, say): not an error
                except Exception as exc:
                    log.warning(  # one line, not repr's escapes of a message of several
                        "terminal %d: connection ended: %s: %s",
                        terminal_pid,
                        type(exc).__name__,
                        error_words(exc),
                    )
                    code, message = error_for(exc)
                    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await handler_out.send(Failure(code, message, fatal=True))
                finally:
                    await detach()
        finally:
            await detach()

    async def _reopen(
        self,
        ref: ActorRef[TerminalMessage],
        opening: Opening,
        out: MemoryObjectSendStream[TerminalOutput],
    ) -> None:
        """Open in the TerminalActor the session the front door already opened. If it
        cannot be (the resume refused), the terminal is told it as its open's refusal: it
        says so as it would have had the supervisor been running already."""
        try:
            opened = OpenSession(opening.mode, opening.session_id, opening.continuing)
            await ref.ask(opened, OPEN_TIMEOUT_S)
        except Exception as exc:
            code, message = error_for(exc)
            await out.send(Failure(code, message, open_refused=True))

    async def _pump(
        self,
        outputs: MemoryObjectReceiveStream[TerminalOutput],
        stream: SocketStream,
        opened_already: bool = False,
    ) -> None:
        """The connection's single writer: actor outputs become frames, until Closed.

        Outputs already waiting are written together, and reply text that is
        already waiting is merged into one delta, so a fast model does not cost
        a socket write per token. ``opened_already``: the front door sent the
        terminal its ``opened``; the actor's is not sent again (unless that open was
        refused: the ``opened`` of the terminal's next open is its own).
        """
        sock = raw_socket(stream)
        async with outputs:
            try:
                while (first := await next_item(outputs)) is not None:
                    batch = [first] if _ends_connection(first) else [first, *_waiting(outputs)]
                    if opened_already:
                        batch, opened_already = _without_front_doors_opened(batch)
                        if not batch:
                            continue
                    frames = (p.encode_server_frame(_frame_for(o)) for o in _merge_text(batch))
                    try:
                        written = await self._write(stream, sock, b"".join(frames))
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        _delivered(batch, False)  # never to be: their tools do not run
                        return
                    if not written:  # the supervisor stops; the terminal reads nothing
                        _not_delivered(batch)
                        await stream.aclose()
                        await _not_delivered_until_closed(outputs)
                        return
                    _delivered(batch, True)
                    if _ends_connection(batch[-1]):
                        await stream.aclose()
                        return
            finally:
                _delivered(_left_unwritten(outputs), False)  # nobody will read them now

    async def _write(self, stream: SocketStream, sock: socket.socket, data: bytes) -> bool:
        """``data`` to the terminal; False if it was given up (see ``stop``). What the
        socket takes at once (most writes) waits for nothing: only a rest it has no room
        for gets the cancel scope a stop gives up (entering and leaving one cost about
        0.02 ms before a turn's end went out)."""
        rest = unsent(sock, data)
        if not rest:
            return True
        with anyio.CancelScope() as write:
            if self._give_up_at is not None:
                write.deadline = self._give_up_at
            self._writes.add(write)
            try:
                await stream.send(rest)
            finally:
                self._writes.discard(write)
        return not write.cancelled_caught

    async def _converse(
        self,
        reader: BufferedByteReceiveStream,
        stream: SocketStream,
        ref: ActorRef[TerminalMessage],
        out: MemoryObjectSendStream[TerminalOutput],
        taking_up: Opening | None = None,
    ) -> str:
        """Read the terminal's frames until it leaves; returns the detach reason. An open is
        answered while frames go on being read: it may wait for the last reply of the
        session's terminal gone, and a Ctrl+C (``cancel``) or the terminal leaving ends
        that wait. ``taking_up``: the front door's open of such a session, not told yet:
        opened here as the terminal's own open would be."""
        async with anyio.create_task_group() as opens:
            try:
                if taking_up is not None:
                    opening = taking_up
                    open_it = OpenSession(opening.mode, opening.session_id, opening.continuing)
                    await self._post_open(ref, open_it, out, opens)
                reason = await self._frames(reader, stream, ref, out, opens)
            finally:
                opens.cancel_scope.cancel()
        return reason

    async def _post_open(
        self,
        ref: ActorRef[TerminalMessage],
        opening: OpenSession,
        out: MemoryObjectSendStream[TerminalOutput],
        opens: TaskGroup,
    ) -> None:
        """Post an open to the actor; its answer (``_answer_open``) comes while frames are
        read."""
        try:
            reply = await ref.post(opening)
        except DeadActor as exc:
            code, message = error_for(exc)
            await out.send(Failure(code, message))
        else:
            opens.start_soon(self._answer_open, reply, out)

    async def _answer_open(self, reply: Reply, out: MemoryObjectSendStream[TerminalOutput]) -> None:
        """A refused open's error frame (the actor sent its ``opened`` itself)."""
        try:
            with anyio.fail_after(OPEN_TIMEOUT_S + self._settings.finish_wait_s):
                await reply.wait()
        except Exception as exc:
            code, message = error_for(exc)
            await out.send(Failure(code, message))

    async def _frames(
        self,
        reader: BufferedByteReceiveStream,
        stream: SocketStream,
        ref: ActorRef[TerminalMessage],
        out: MemoryObjectSendStream[TerminalOutput],
        opens: TaskGroup,
    ) -> str:
        while True:
            try:
                frame = await next_frame(reader)
            except FrameError as exc:
                # A whole line that is JSON but not a valid frame leaves the stream in step:
                # refuse that frame and carry on; anything else ends the connection.
                fatal = exc.code != ErrorCode.INVALID_REQUEST
                await out.send(Failure(exc.code, str(exc), fatal=fatal))
                if fatal:
                    return "disconnected"
                continue
            if frame is None:
                return "disconnected"
            match frame:
                case p.Open(mode=mode, session_id=session_id, continuing=continuing):
                    if mode == "new":  # a new session's id is the supervisor's to choose
                        session_id = None
                    opening = OpenSession(mode, session_id, continuing)
                    await self._post_open(ref, opening, out, opens)
                case p.UserMessage(text=text, id=message_id, saved_only=saved_only):
                    await ref.tell(UserTurn(text, message_id, saved_only))
                case p.Cancel():
                    await ref.tell(CancelCurrentTurn())
                case p.Command(name=name, arg=arg):
                    await ref.tell(RunCommand(name, arg))
                case p.ConfirmReply(id=confirm_id, answer=answer, cancel=cancel):
                    await ref.tell(ConfirmAnswer(confirm_id, answer, cancel))
                case p.Close():
                    return CLOSED_BY_CHAT
                case _:
                    await out.send(
                        Failure(
                            ErrorCode.INVALID_REQUEST,
                            f"{frame.type} is not valid on a terminal connection",
                        )
                    )

    # -- control connections ------------------------------------------------

    def _stop(self) -> None:
        mark_stopped(self._settings.socket.parent, os.getpid())
        self._shutdown.set()

    def _projects(self, workspace: str | None, every: bool) -> tuple[Path, ...] | None:
        if every:
            return None
        if not workspace or not Path(workspace).is_absolute() or "\0" in workspace:
            raise ProtocolMisuse("a workspace (absolute path) is required")
        return (sessions_dir(Path(workspace), self._settings.root),)

    async def _answer(self, frame: p.ClientFrame) -> object:
        match frame:
            case p.ListSessions(workspace=workspace, all=every, terminal_pid=pid):
                listing: SessionListing = await self._storage.ask(
                    ListSessions(self._projects(workspace, every), pid)
                )
                return listing.to_json()
            case p.ShowSession(workspace=workspace, session_id=session_id, project=name):
                return await self._show(self._project(workspace, name), session_id)
            case p.RemoveSession(
                workspace=workspace,
                session_id=session_id,
                project=name,
                force=force,
                terminal_pid=pid,
            ):
                return await self._remove(self._project(workspace, name), session_id, force, pid)
            case p.PruneSessions(
                workspace=workspace,
                all=every,
                older_than_days=days,
                dry_run=dry_run,
                terminal_pid=pid,
            ):
                pruned: Pruned = await self._storage.ask(
                    PruneSessions(self._projects(workspace, every), days, dry_run, pid)
                )
                return pruned.to_json(dry_run)
            case p.Status():
                return {
                    "running": True,
                    "pid": os.getpid(),
                    "socket": str(self._settings.socket),
                    "terminals": self._registry.attached,
                    "live_sessions": await self._storage.ask(LiveCount()),
                    "uptime_s": round(time.monotonic() - self._started, 1),
                    **self._settings.identity.as_fields(),
                    "state_root": str(self._settings.root),
                    "model_loaded": True,
                }
            case p.Stop(if_idle=if_idle):
                live = await self._storage.ask(LiveCount()) if if_idle else 0
                return front.idle_or_not(self._registry.busy_terminals, live, if_idle)
        raise ProtocolMisuse(f"{frame.type} is not valid on a control connection")

    async def _row(self, project: Path, session_id: str) -> dict[str, object] | None:
        listing: SessionListing = await self._storage.ask(ListSessions((project,)))
        return next((r.to_json() for r in listing.rows if r.session_id == session_id), None)

    def _project(self, workspace: str | None, name: str | None) -> Path:
        """The sessions directory of ``workspace``'s project, or of the project ``name``."""
        if name is None:
            projects = self._projects(workspace, False)
            assert projects is not None
            return projects[0]
        if not is_project_name(name):
            raise ProtocolMisuse(f"not a project name: {name[:80]!r}")
        return projects_dir(self._settings.root) / name / "sessions"

    async def _show(self, project: Path, session_id: str) -> object:
        if not is_session_id(session_id):
            raise InvalidSessionId(session_id)
        row = await self._row(project, session_id)  # first: the headers it reads are the show's
        shown = await self._storage.ask(LoadShown(project, session_id))
        checkpoints: ListedCheckpoints = await self._storage.ask(
            ListCheckpoints(project, session_id)
        )
        return {
            "row": row,
            "session": shown,
            "checkpoints": listing_items(checkpoints.checkpoints),
            "warnings": list(checkpoints.problems),
        }

    async def _remove(
        self, project: Path, session_id: str, force: bool, terminal_pid: int | None
    ) -> object:
        if not is_session_id(session_id):
            raise InvalidSessionId(session_id)
        removed = await self._storage.ask(
            RemoveSession(
                project, session_id, unless_live=True, force=force, terminal_pid=terminal_pid
            )
        )
        if not removed:
            raise FileNotFoundError(session_id)
        return {"removed": True, "session_id": session_id}
