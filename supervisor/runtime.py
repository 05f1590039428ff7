"""Where the supervisor's socket, locks, pid and log live, and the checks that keep them private.

Standard library only (and ``session.os_paths``, which is too): the thin client uses it.
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from session.os_paths import is_utf8, shown_path

SOCKET_NAME = "supervisor.sock"
HOME_HELD_EXIT = 4
"""``supervisor run``'s exit status when another supervisor keeps its state root
(supervisor/home.py): a starting client then says why at once instead of waiting
for a socket that never comes."""


class RuntimeDirError(Exception):
    """The runtime directory is not private to this user; nothing is started in it."""


def default_runtime_dir(environ: dict[str, str] | os._Environ[str] | None = None) -> Path:
    """``AGENT_ASSIST_RUNTIME_DIR`` (a relative one made absolute: every message then names
    the directory meant, whichever directory the command runs in), else
    ``$XDG_RUNTIME_DIR/agent-assist`` (a relative ``XDG_RUNTIME_DIR`` is ignored, as the XDG
    base directory specification asks), else a private directory under the temp dir."""
    env = os.environ if environ is None else environ
    explicit = env.get("AGENT_ASSIST_RUNTIME_DIR")
    if explicit:
        return Path(os.path.abspath(explicit))
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "agent-assist"
    import tempfile  # only here: it is slow to import and the terminal must start fast

    return Path(tempfile.gettempdir()) / f"agent-assist-{os.getuid()}"


class RuntimePaths(NamedTuple):
    directory: Path

    @property
    def socket(self) -> Path:
        return self.directory / SOCKET_NAME

    @property
    def lock(self) -> Path:
        """Held (flock) by the running supervisor for its whole life."""
        return self.directory / "supervisor.lock"

    @property
    def start_lock(self) -> Path:
        """Held by a client while it checks for and starts a supervisor."""
        return self.directory / "start.lock"

    @property
    def pid_file(self) -> Path:
        return self.directory / "supervisor.pid"

    @property
    def log(self) -> Path:
        return self.directory / "supervisor.log"

    @property
    def heir_pid_file(self) -> Path:
        """The pid of the supervisor's heir, waiting to take over (supervisor/heir.py)."""
        return self.directory / "heir.pid"


class TuningError(Exception):
    """A tuning variable (``TUNING_VARIABLES``) set to a value that cannot be used."""


TUNING_VARIABLES = (
    "AGENT_ASSIST_CONTROL_TIMEOUT_S",
    "AGENT_ASSIST_FINISH_WAIT_S",
    "AGENT_ASSIST_HELLO_TIMEOUT_S",
    "AGENT_ASSIST_MAX_CONNECTIONS",
    "AGENT_ASSIST_TEST_SESSION_FILE_BYTES",
)
"""Test and tuning knobs, read where they are used; ``check_tuning`` checks them all."""
MAX_TUNING_VALUE = 1e9


def number_from_env(
    name: str, default: float, environ: Mapping[str, str] | None = None
) -> float:
    """The positive number ``name`` is set to (seconds, or a count), else ``default``;
    TuningError, one line naming the variable and its value, for anything else (``abc``,
    ``-1``, ``nan``, ``inf``: they were ignored silently)."""
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw) if len(raw) <= 32 else -1.0
    except ValueError:
        value = -1.0
    if not 0 < value < MAX_TUNING_VALUE:  # also refuses nan and inf
        from session.redaction import shown_input  # only on this error's path: it costs

        raise TuningError(  # scrubbed, then cut: cut first, a key was no longer whole
            f"bad {name} {shown_input(raw, 40)}: must be a number > 0 and "
            f"< {MAX_TUNING_VALUE:,.0f}"
        )
    return value


def check_tuning(environ: Mapping[str, str] | None = None) -> None:
    """TuningError if a tuning variable is set to a bad value: a command that may start a
    supervisor says it at once, rather than a detached supervisor in its log."""
    for name in TUNING_VARIABLES:
        number_from_env(name, 1.0, environ)


def runtime_paths(environ: dict[str, str] | os._Environ[str] | None = None) -> RuntimePaths:
    return RuntimePaths(default_runtime_dir(environ))


MAX_SOCKET_PATH_BYTES = 107
"""A Unix socket's path, in bytes (Linux: ``sun_path`` holds 108 with its NUL)."""


def check_socket_path(directory: Path) -> None:
    """RuntimeDirError if the socket in ``directory`` would have too long a path, or one
    that is not UTF-8 (the supervisor names its socket in frames, which carry UTF-8 only)."""
    if not is_utf8(str(directory)):
        raise RuntimeDirError(
            f"runtime directory {shown_path(str(directory))} is not a UTF-8 path, which "
            "agent-assist cannot use; set AGENT_ASSIST_RUNTIME_DIR to a directory whose path "
            "is UTF-8"
        )
    size = len(os.fsencode(directory / SOCKET_NAME))
    if size > MAX_SOCKET_PATH_BYTES:
        raise RuntimeDirError(
            f"runtime directory {directory} is too long for the supervisor's socket "
            f"({size} bytes with {SOCKET_NAME}, at most {MAX_SOCKET_PATH_BYTES}); set "
            "AGENT_ASSIST_RUNTIME_DIR to a shorter directory"
        )


def ensure_private_runtime_dir(directory: Path) -> None:
    """Create the directory 0700, or check an existing one: ours, a directory, not a symlink.

    Raises RuntimeDirError when the directory cannot be trusted (or its socket's path
    would be too long).
    """
    check_socket_path(directory)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        directory.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.mkdir(directory, 0o700)
    info = os.lstat(directory)
    if stat.S_ISLNK(info.st_mode):
        raise RuntimeDirError(f"runtime directory {directory} is a symlink; refusing to use it")
    if not stat.S_ISDIR(info.st_mode):
        raise RuntimeDirError(f"runtime directory {directory} is not a directory")
    if info.st_uid != os.getuid():
        raise RuntimeDirError(f"runtime directory {directory} is owned by uid {info.st_uid}")
    if stat.S_IMODE(info.st_mode) & 0o077:
        raise RuntimeDirError(
            f"runtime directory {directory} has mode {stat.S_IMODE(info.st_mode):o}, not 700 "
            f"(others could reach the supervisor's socket): chmod 700 {directory}, or set "
            "AGENT_ASSIST_RUNTIME_DIR to a directory of your own"
        )


def write_pid_file(path: Path) -> None:
    """Write this process's pid to ``path`` whole (temp, then rename): never read half-written."""
    temp = path.with_name(f".{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(temp)  # a stale one (or a link someone put there) is never written through
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    os.replace(temp, path)


def peer_credentials(sock: socket.socket) -> tuple[int, int, int]:
    """(pid, uid, gid) of the process at the other end of a Unix socket (SO_PEERCRED)."""
    raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    pid, uid, gid = struct.unpack("3i", raw)
    return pid, uid, gid
