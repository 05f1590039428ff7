"""A raw framed client for tests that speak the wire protocol themselves."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

from supervisor.wire import PROTOCOL_VERSION

Frame = dict[str, Any]


class RawClient:
    def __init__(self, socket_path: Path, timeout: float = 30.0) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(str(socket_path))
        self._buffer = b""

    def send(self, frame: Frame) -> None:
        self.sock.sendall(json.dumps(frame).encode() + b"\n")

    def receive(self) -> Frame:
        while b"\n" not in self._buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("the supervisor closed the connection")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        frame: Frame = json.loads(line)
        return frame

    def until(self, kind: str) -> list[Frame]:
        """Frames up to and including the first of type ``kind``."""
        frames = [self.receive()]
        while frames[-1]["type"] != kind:
            frames.append(self.receive())
        return frames

    def close(self) -> None:
        self.sock.close()


def terminal_hello(terminal_pid: int, workspace: Path, model: str | None = None) -> Frame:
    return {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "role": "terminal",
        "client_pid": terminal_pid,
        "terminal_pid": terminal_pid,
        "workspace": str(workspace),
        "model": model,
    }


def control_hello() -> Frame:
    return {"type": "hello", "protocol": PROTOCOL_VERSION, "role": "control", "client_pid": 1}


def open_terminal(
    socket_path: Path, terminal_pid: int, workspace: Path, session_id: str | None = None
) -> tuple[RawClient, Frame]:
    """A terminal connection that said hello and opened a session: a new one, or
    ``session_id`` resumed; with the ``opened`` frame."""
    client = RawClient(socket_path)
    client.send(terminal_hello(terminal_pid, workspace))
    client.until("welcome")
    mode = "new" if session_id is None else "resume"
    client.send({"type": "open", "mode": mode, "session_id": session_id})
    return client, client.until("opened")[-1]
