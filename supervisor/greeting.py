"""A connection's framing and its hello, shared by the front door and the server.

Light (no model stack): the front door uses it before pydantic-ai is imported.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
from pathlib import Path
from typing import NoReturn

import anyio
from anyio.abc import SocketAttribute, SocketStream
from anyio.streams.buffered import BufferedByteReceiveStream

from session.waits import wait_words
from supervisor import protocol as p
from supervisor.runtime import peer_credentials
from supervisor.wire import MAX_FRAME_BYTES, PROTOCOL_VERSION, ErrorCode, FrameError

log = logging.getLogger("agent_assist.server")


class Hangup(Exception):
    """The connection is to be closed (the error frame, if any, was sent)."""


async def send(stream: SocketStream, frame: p.ServerFrame) -> None:
    await stream.send(p.encode_server_frame(frame))


def unsent(sock: socket.socket, data: bytes) -> bytes:
    """For a connection's single writer, ``sock`` being the stream's socket
    (``raw_socket(stream)``, looked up once: anyio builds its attribute table at every
    lookup): write what the socket takes of ``data`` at once (anyio's ``send`` first
    yields to the loop, one more turn of it before every reply's end reaches the
    terminal) and return the rest, which the socket has no room for yet (empty: all
    written), for ``stream.send``. BrokenResourceError if the peer went away."""
    try:
        sent = sock.send(data)
    except BlockingIOError:
        sent = 0
    except OSError as exc:  # closed, or the peer went away
        raise anyio.BrokenResourceError from exc
    return data[sent:] if sent < len(data) else b""


def raw_socket(stream: SocketStream) -> socket.socket:
    return stream.extra(SocketAttribute.raw_socket)


async def refuse(stream: SocketStream, code: str, message: str) -> NoReturn:
    """Send an error frame (if the peer still listens) and end the connection."""
    with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
        await send(stream, p.ErrorFrame(code=code, message=message))
    raise Hangup(message)


async def hello_workspace(stream: SocketStream, hello: p.Hello) -> Path:
    """The workspace a terminal's ``hello`` names, resolved; a name that is not an
    absolute path to an existing directory is refused (``refuse``)."""
    workspace = Path(hello.workspace or "")
    usable = workspace.is_absolute() and await anyio.to_thread.run_sync(workspace.is_dir)
    if not hello.workspace or not usable:
        await refuse(
            stream,
            ErrorCode.INVALID_REQUEST,
            f"workspace {hello.workspace!r} is not an existing directory",
        )
    return await anyio.to_thread.run_sync(workspace.resolve)

async def next_frame(reader: BufferedByteReceiveStream) -> p.ClientFrame | None:
    """The next frame, None at end of stream; FrameError for a frame to refuse."""
    try:
        line = await reader.receive_until(b"\n", MAX_FRAME_BYTES)
    except anyio.DelimiterNotFound as exc:
        raise FrameError(ErrorCode.FRAME_TOO_LARGE, f"frame over {MAX_FRAME_BYTES} bytes") from exc
    except (
        anyio.IncompleteRead,
        anyio.EndOfStream,
        anyio.BrokenResourceError,
        anyio.ClosedResourceError,
        OSError,
    ):
        return None
    return p.parse_client_frame(line)


async def read_frame(reader: BufferedByteReceiveStream, stream: SocketStream) -> p.ClientFrame:
    """The next frame. Hangup at end of stream or after refusing a bad frame."""
    try:
        frame = await next_frame(reader)
    except FrameError as exc:
        await refuse(stream, exc.code, str(exc))
    if frame is None:
        raise Hangup("end of stream")
    return frame


async def read_hello(
    stream: SocketStream, reader: BufferedByteReceiveStream, timeout_s: float, root: Path
) -> p.Hello:
    """The connection's hello, from this user, in this protocol, within ``timeout_s``, from
    a client that keeps its sessions where this supervisor does (``root``, resolved);
    anything else is refused (Hangup)."""
    peer_pid, peer_uid, _ = peer_credentials(raw_socket(stream))
    if peer_uid != os.getuid():
        log.warning("refused a connection from uid %d (pid %d)", peer_uid, peer_pid)
        await refuse(
            stream,
            ErrorCode.NOT_ALLOWED,
            "connections from other users are not accepted",
        )
    hello: p.ClientFrame | None = None
    with anyio.move_on_after(timeout_s):
        hello = await read_frame(reader, stream)
    if hello is None:
        await refuse(stream, ErrorCode.HELLO_REQUIRED, f"no hello within {wait_words(timeout_s)}")
    if not isinstance(hello, p.Hello):
        await refuse(stream, ErrorCode.HELLO_REQUIRED, "the first frame must be hello")
    if hello.protocol != PROTOCOL_VERSION:
        await refuse(
            stream,
            ErrorCode.PROTOCOL_VERSION,
            f"protocol {hello.protocol} is not supported "
            f"(this supervisor speaks {PROTOCOL_VERSION})",
        )
    if hello.state_root is not None and hello.state_root != str(root):
        await refuse(
            stream,
            ErrorCode.OTHER_STATE_ROOT,
            f"the running supervisor keeps sessions in {root}, not in {hello.state_root} "
            "(AGENT_ASSIST_HOME): stop it first (agent-assist supervisor stop), or give "
            "this one its own AGENT_ASSIST_RUNTIME_DIR",
        )
    return hello


def busy_line(terminal_pid: int) -> str:
    """Why a chat's hello is refused: another agent-assist is attached for its terminal
    identity, which is the asking chat's own tab (not another terminal)."""
    return (
        f"another agent-assist is attached for this tab (terminal {terminal_pid}); "
        "set AGENT_ASSIST_TERMINAL_PID to another number to run a second one"
    )
