"""The thin client's side of the socket: connect, start the supervisor once, exchange frames.

Standard library only (no anyio, no pydantic): the terminal must start fast.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import select
import socket
import sys
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from session.waits import wait_words
from supervisor.identity import DETACHED_VARIABLE
from supervisor.runtime import (
    HOME_HELD_EXIT,
    RuntimeDirError,
    RuntimePaths,
    check_socket_path,
    ensure_private_runtime_dir,
    number_from_env,
)

if TYPE_CHECKING:
    import subprocess  # at run time only where a supervisor is started: it is slow to import
from supervisor.wire import (
    MAX_HELLO_SECRET_BYTES,
    MAX_HELLO_SECRETS,
    MAX_SECRET_CHARS,
    MAX_SERVER_FRAME_BYTES,
    MIN_SECRET_CHARS,
    PROTOCOL_VERSION,
    ErrorCode,
    Frame,
    FrameError,
    LineBuffer,
    decode_frame,
    encode_frame,
)

START_TIMEOUT_S = 20.0
START_POLL_S = 0.003
HEIR_WAIT_S = 2.0
"""How often a starting supervisor is tried (a connect attempt costs microseconds)."""
PID_MAX = 2**31 - 1


class SupervisorUnavailable(Exception):
    """No supervisor could be reached or started."""


class SupervisorBusy(SupervisorUnavailable):
    """The supervisor is at its cap of connections (it answered ``busy``)."""

    def __init__(self) -> None:
        super().__init__("the supervisor is busy (too many connections); try again shortly")


class ConnectionLost(Exception):
    """The supervisor closed the connection (it stopped or crashed)."""


class RemoteError(Exception):
    """The supervisor answered with an ``error`` frame."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class Connection:
    """A blocking, framed connection to the supervisor."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lines = LineBuffer(MAX_SERVER_FRAME_BYTES)
        self._pending: deque[bytes] = deque()
        self._returned: deque[Frame] = deque()
        """Frames read and given back (``put_back``), received again first."""

    @classmethod
    def open(cls, path: Path, timeout: float | None = 5.0) -> Connection:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(timeout)
        try:
            sock.connect(str(path))
        except BaseException:
            sock.close()
            raise
        sock.settimeout(None)
        return cls(sock)

    def send(self, frame: Frame) -> None:
        try:
            self.sock.sendall(encode_frame(frame))
        except OSError as exc:
            raise ConnectionLost(str(exc)) from exc

    def readable(self, timeout: float | None = 0.0) -> bool:
        """Whether a frame (or the end of the stream) is waiting, within ``timeout`` s
        (None: waits for one)."""
        if self._pending or self._returned:
            return True
        ready, _, _ = select.select([self.sock], [], [], timeout)
        return bool(ready)

    def receive(self) -> Frame:
        """The next frame; ConnectionLost at end of stream."""
        if self._returned:
            return self._returned.popleft()
        while not self._pending:
            try:
                data = self.sock.recv(65536)
            except (ConnectionResetError, BrokenPipeError) as exc:
                raise ConnectionLost(str(exc)) from exc
            if not data:
                raise ConnectionLost("the supervisor closed the connection")
            self._pending.extend(self._lines.feed(data))
        return decode_frame(self._pending.popleft())

    def put_back(self, frame: Frame) -> None:
        """Give back a frame read too soon (by a watch that only shows notices): the next
        ``receive`` returns it."""
        self._returned.appendleft(frame)

    def request(self, frame: Frame) -> Frame:
        """Send one frame and return the reply; RemoteError for an ``error`` reply."""
        self.send(frame)
        reply = self.receive()
        if reply["type"] == "error":
            raise RemoteError(reply.get("code", ErrorCode.INTERNAL), reply.get("message", ""))
        return reply

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def hello(
    role: str,
    *,
    terminal_pid: int | None = None,
    workspace: str | None = None,
    model: str | None = None,
    settings: dict[str, object] | None = None,
    secrets: tuple[str, ...] = (),
    state_root: Path | None = None,
) -> Frame:
    frame: Frame = {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "role": role,
        "client_pid": os.getpid(),
        "terminal_pid": terminal_pid,
        "workspace": workspace,
        "model": model,
    }
    if settings is not None:
        frame["settings"] = settings
    if state_root is not None:
        frame["state_root"] = str(state_root)
    sendable = sendable_secrets(secrets)
    if sendable:
        frame["secrets"] = sendable
    return frame


def sendable_secrets(secrets: tuple[str, ...]) -> list[str]:
    """The secret values a hello carries: within the supervisor's limits of count and
    length, UTF-8 (an environment's bytes that are not arrive as lone surrogates and
    cannot be sent), and together well inside a frame."""
    sendable: list[str] = []
    budget = MAX_HELLO_SECRET_BYTES
    for value in secrets:
        if not MIN_SECRET_CHARS <= len(value) <= MAX_SECRET_CHARS:
            continue
        try:
            size = len(json.dumps(value, ensure_ascii=False).encode("utf-8"))
        except UnicodeEncodeError:
            continue
        if len(sendable) == MAX_HELLO_SECRETS:
            break
        if size > budget:
            continue
        budget -= size
        sendable.append(value)
    return sendable


def unsent_secrets_warning(secrets: tuple[str, ...]) -> str | None:
    """The one line telling that some of ``secrets`` (UTF-8 ones, of at least
    ``MIN_SECRET_CHARS``) do not fit in a hello, so the supervisor cannot scrub them
    unless its own environment has them; None when every one is sent."""
    sent = set(sendable_secrets(secrets))
    left = [
        value
        for value in secrets
        if len(value) >= MIN_SECRET_CHARS and value not in sent and _encodable(value)
    ]
    if not left:
        return None
    values = "value" if len(left) == 1 else "values"
    return (
        f"warning: {len(left)} {values} of this shell's credential-named variables "
        f"cannot be sent to the supervisor (at most {MAX_SECRET_CHARS:,} characters each, "
        f"{MAX_HELLO_SECRET_BYTES // 1024} KiB in all): only the patterns scrub them "
        "from this session's files"
    )


def _encodable(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


CONTROL_TIMEOUT_S = 10.0


def control_timeout() -> float:
    """How long a control request (status, listing, stop) may go unanswered before the
    supervisor is said to be hung or stopped (SIGSTOP), or something else to listen on its
    socket: ``AGENT_ASSIST_CONTROL_TIMEOUT_S``, else ``CONTROL_TIMEOUT_S`` (TuningError for
    a bad value)."""
    return number_from_env("AGENT_ASSIST_CONTROL_TIMEOUT_S", CONTROL_TIMEOUT_S)


def not_answering(paths: RuntimePaths) -> SupervisorUnavailable:
    """The one line for a supervisor that takes connections but does not answer them."""
    try:
        pid = int(paths.pid_file.read_text())
    except (OSError, ValueError):
        return SupervisorUnavailable(
            f"the supervisor's socket {paths.socket} takes connections but nothing answers "
            f"within {wait_words(control_timeout())}"
        )
    return SupervisorUnavailable(
        f"the supervisor (pid {pid}) does not answer within {wait_words(control_timeout())}: it is "
        f"stopped or hung (kill -CONT {pid} resumes a stopped one; kill {pid} ends it)"
    )


def control_hello(conn: Connection, frame: Frame) -> Frame:
    """Send a control ``hello`` (``frame``); the welcome. A supervisor at its cap of
    connections answers ``busy`` and hangs up, maybe before the hello is sent:
    SupervisorBusy then; TimeoutError if nothing answers."""
    try:
        return conn.request(frame)
    except ConnectionLost:
        try:
            reply = conn.receive()  # the ``busy`` sent before it hung up, if any
        except (ConnectionLost, OSError):
            raise SupervisorBusy from None
        if reply.get("code") == ErrorCode.BUSY:
            raise SupervisorBusy from None
        raise
    except RemoteError as exc:
        if exc.code == ErrorCode.BUSY:
            raise SupervisorBusy from None
        raise


def control_connection(paths: RuntimePaths) -> Connection | None:
    """A connection to the running supervisor for control requests, whose every receive
    gives up after ``control_timeout()`` (TimeoutError); None when none runs."""
    timeout = control_timeout()  # a bad value is told whether a supervisor runs or not
    conn = try_connect(paths)
    if conn is None:
        return None
    conn.sock.settimeout(timeout)
    return conn


def ask_status(conn: Connection) -> dict[str, Any]:
    """The supervisor's status, asked on ``conn``, a control connection just opened
    (``control_hello``'s errors, and TimeoutError if it does not answer)."""
    control_hello(conn, hello("control"))
    data: dict[str, Any] = conn.request({"type": "status"})["data"]
    return data


def asked_status(paths: RuntimePaths) -> tuple[Connection, dict[str, Any]] | None:
    """The running supervisor's status, asked on a control connection left open (the
    caller's to close) so that what follows is said to the supervisor judged, not to one
    started since; None when none runs. ``not_answering`` if it does not answer in time,
    ``ask_status``'s other errors as they are (the connection closed)."""
    conn = control_connection(paths)
    if conn is None:
        return None
    try:
        return conn, ask_status(conn)
    except TimeoutError:
        conn.close()
        raise not_answering(paths) from None
    except BaseException:
        conn.close()
        raise


def supervisor_answers(paths: RuntimePaths) -> bool:
    """Whether the supervisor answers a control ``status`` within ``control_timeout()``
    (a terminal's connection kept waiting is then not a hung supervisor's)."""
    conn = control_connection(paths)
    if conn is None:
        return False
    with conn:
        try:
            ask_status(conn)
        except (TimeoutError, ConnectionLost, RemoteError, SupervisorBusy, OSError):
            return False
    return True


def try_connect(paths: RuntimePaths) -> Connection | None:
    """A connection to a running supervisor, or None when none answers."""
    check_socket_path(paths.directory)
    try:
        return Connection.open(paths.socket)
    except (FileNotFoundError, ConnectionRefusedError):
        return None
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.ECONNREFUSED, errno.ENOTSOCK):
            return None
        if exc.errno == errno.ENOTDIR:
            raise RuntimeDirError(
                f"runtime directory {paths.directory} is not a directory (or is under a file)"
            ) from exc
        raise


def supervisor_command() -> list[str]:
    """``-P``: ``-m`` would put the directory the chat runs in first on ``sys.path``, and a
    workspace's own ``cli.py`` (or ``session/``, ``actors/``...) was run in our place."""
    return [sys.executable, "-P", "-m", "cli", "supervisor", "run"]


_spawned: list[subprocess.Popen[bytes]] = []
"""The supervisors this process started (kept so they are not reported as leaked)."""
SPAWN_ATTEMPTS = 3
"""Supervisors started in a row when each dies by a signal before it listens."""


def spawn_detached(paths: RuntimePaths) -> None:
    """Start ``agent-assist supervisor run`` detached: a new session (no terminal, no signals
    from this tab), stdin from /dev/null, output to the log. ``Popen`` execs at once, so no
    copy of this process (and of any thread it holds) runs supervisor code. It is told it
    was (``DETACHED_VARIABLE``): a terminal of another version may stop it to switch."""
    import subprocess  # only here: the terminal must start fast

    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        _spawned.append(
            subprocess.Popen(
                supervisor_command(),
                stdin=subprocess.DEVNULL,
                stdout=log_fd,
                stderr=log_fd,
                start_new_session=True,
                close_fds=True,
                env={**os.environ, DETACHED_VARIABLE: "1"},
            )
        )
    finally:
        os.close(log_fd)


@contextlib.contextmanager
def _start_lock(paths: RuntimePaths, timeout: float) -> Iterator[int]:
    fd = os.open(paths.start_lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise SupervisorUnavailable(
                        "timed out waiting for another client to start the supervisor"
                    ) from None
                time.sleep(0.01)
        yield fd
    finally:
        os.close(fd)


def heir_waiting(paths: RuntimePaths) -> bool:
    """Whether ``heir.pid`` names a living heir. The heir of a supervisor killed with it
    leaves the file behind, and its number may since name an unrelated process: where
    /proc tells a process's command line, only a ``python -m supervisor.heir`` counts
    (elsewhere any living process does, and is at worst waited for ``HEIR_WAIT_S``)."""
    from supervisor.heir import HEIR_MODULE  # only here: on the start path, not the fast one

    try:
        pid = int(paths.heir_pid_file.read_text())
    except (OSError, ValueError):
        return False
    if not 0 < pid <= PID_MAX:
        return False
    try:
        os.kill(pid, 0)
    except PermissionError:
        pass
    except OSError:
        return False
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except FileNotFoundError:
        return not Path("/proc/self").exists()  # gone (or a system without /proc)
    except OSError:
        return True
    return HEIR_MODULE.encode() in argv


def _wait_for_heir(paths: RuntimePaths) -> Connection | None:
    """After a supervisor died, its heir (supervisor/heir.py) takes over within
    milliseconds: connect to it rather than start another (None if there is no heir,
    or it does not answer within ``HEIR_WAIT_S``)."""
    deadline = time.monotonic() + HEIR_WAIT_S
    while heir_waiting(paths):
        conn = try_connect(paths)
        if conn is not None or time.monotonic() > deadline:
            return conn
        time.sleep(START_POLL_S)
    return try_connect(paths)


def _last_error(log: Path) -> str:
    """The last ``error:`` line of the supervisor's log (what a failed start said)."""
    try:
        with open(log, "rb") as file:
            file.seek(max(0, os.fstat(file.fileno()).st_size - 8192))
            lines = file.read().decode("utf-8", "replace").splitlines()
    except OSError:
        lines = []
    said = [line for line in lines if line.startswith("error: ")]
    return said[-1].removeprefix("error: ") if said else f"the supervisor did not start; see {log}"


def _killed_before_listening() -> bool:
    """Whether the supervisor this process started last died by a signal (the OOM killer, a
    kill) before anything answered. One that exits by itself (another supervisor, or the
    heir, holds the lock) leaves the socket to that one."""
    returncode = _spawned[-1].poll() if _spawned else None
    return returncode is not None and returncode < 0


def connect_or_start(
    paths: RuntimePaths, timeout: float = START_TIMEOUT_S
) -> tuple[Connection, bool]:
    """A connection to the supervisor, starting it first if none runs; (connection, started).

    Many clients at once make one supervisor: each takes the start lock, tries
    to connect again, and only the one that still finds nothing starts it.
    """
    for process in _spawned[:-1]:  # reap supervisors of ours that died: no zombies
        if process.poll() is not None:
            _spawned.remove(process)
    if _spawned:
        _spawned[-1].poll()  # reaped if dead; kept for ``_killed_before_listening``
    conn = try_connect(paths)
    if conn is not None:
        return conn, False
    ensure_private_runtime_dir(paths.directory)
    with _start_lock(paths, timeout):
        conn = try_connect(paths) or _wait_for_heir(paths)
        if conn is not None:
            return conn, False
        spawn_detached(paths)
        spawned = 1
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            conn = try_connect(paths)
            if conn is not None:
                return conn, True
            if _spawned and _spawned[-1].poll() == HOME_HELD_EXIT:
                raise SupervisorUnavailable(_last_error(paths.log))
            if _killed_before_listening() and spawned < SPAWN_ATTEMPTS:
                spawn_detached(paths)  # nothing else would ever answer: start another
                spawned += 1
            time.sleep(START_POLL_S)
    raise SupervisorUnavailable(f"the supervisor did not start; see {paths.log}")


__all__ = [
    "Connection",
    "ConnectionLost",
    "FrameError",
    "RemoteError",
    "SupervisorBusy",
    "SupervisorUnavailable",
    "connect_or_start",
    "hello",
    "spawn_detached",
    "try_connect",
]
