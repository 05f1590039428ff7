"""The running supervisor's place in the runtime directory, kept: its socket, lock and pid
file are put back when a temp-dir cleaner or a user's ``rm`` takes them away.

Without this, a supervisor whose socket went on running unreachable, and every
terminal after it waited for a start that its lock refused (tmux re-creates its
socket on SIGUSR1; this supervisor looks every ``CHECK_INTERVAL_S``). A lock file
removed is taken anew at its path; if another supervisor took it first, this one
stops (saving its sessions), so two never serve the same user for long.
Standard library and anyio only: it runs before the model stack loads.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import logging
import os
import socket
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from anyio.abc import SocketListener, SocketStream, TaskGroup, TaskStatus

from supervisor.accept import accept_forever
from supervisor.home import HOME_LOCK_NAME, HomeHeld, take_home_lock
from supervisor.runtime import (
    RuntimeDirError,
    RuntimePaths,
    ensure_private_runtime_dir,
    write_pid_file,
)

log = logging.getLogger("agent_assist.supervisor")
CHECK_INTERVAL_S = 1.0


def listening_socket(path: Path, backlog: int = 4096) -> tuple[socket.socket, int]:
    """A socket already listening when it appears at ``path``, and the inode of its file.

    It is bound and put to listen under a temporary name, then renamed into
    place: a client that sees the file can always connect (binding at the
    final name would leave it refusing connections until ``listen``).
    """
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    with contextlib.suppress(FileNotFoundError):
        temporary.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(temporary))
        os.chmod(temporary, 0o600)
        sock.listen(backlog)
        inode = os.stat(temporary).st_ino
        os.replace(temporary, path)
    except BaseException:
        sock.close()
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
    sock.setblocking(False)
    return sock, inode


def _inode(path: Path) -> int | None:
    try:
        return os.stat(path).st_ino
    except OSError:
        return None


async def _until_replaced(path: Path, inode: int) -> None:
    """Return once the file at ``path`` is no longer ``inode`` (polled: inotify would
    cost a watch and a thread for what a stat a second does)."""
    while True:
        await anyio.sleep(CHECK_INTERVAL_S)
        if await anyio.to_thread.run_sync(_inode, path) != inode:
            return


async def serve_socket(
    paths: RuntimePaths,
    handle: Callable[[SocketStream], Awaitable[None]],
    connections: TaskGroup,
    cap: int,
    *,
    task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """Listen at ``paths.socket`` and accept (connections run in ``connections``) until
    cancelled; ready once listening. When the socket's file is removed or replaced,
    listen again there: the connections already open go on."""
    ready = False
    while True:
        try:
            if ready:
                await anyio.to_thread.run_sync(ensure_private_runtime_dir, paths.directory)
            sock, inode = await anyio.to_thread.run_sync(listening_socket, paths.socket)
        except (OSError, RuntimeDirError) as exc:
            if not ready:
                raise
            log.warning("cannot listen at %s again (%s); trying again", paths.socket, exc)
            await anyio.sleep(CHECK_INTERVAL_S)
            continue
        listener = await SocketListener.from_socket(sock)
        if ready:
            log.warning("the socket %s was removed or replaced; listening again", paths.socket)
        else:
            ready = True
            task_status.started()
        async with listener, anyio.create_task_group() as accepting:
            accepting.start_soon(accept_forever, listener, handle, connections, cap)
            await _until_replaced(paths.socket, inode)
            accepting.cancel_scope.cancel()


def _reopen_log_files() -> None:
    """Write the log at its path again (its file may have gone with the directory): a
    file handler whose stream is None opens its file at the next record."""
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.FileHandler):
            with handler.lock or contextlib.nullcontext():
                stream, handler.stream = handler.stream, None
                if stream is not None:
                    stream.close()


def hold_lock(paths: RuntimePaths, lock_fd: int) -> int | None:
    """``lock_fd`` while ``supervisor.lock`` is still the file it locks; else a lock on the
    file now at that path, taken anew (the directory made again if it went), or None
    when another supervisor holds that one. The pid file is put back if it went."""
    held = os.fstat(lock_fd).st_ino
    if _inode(paths.lock) != held:
        ensure_private_runtime_dir(paths.directory)
        fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                return None
            raise
        lock_fd = fd  # the old descriptor stays open: it locks a file nobody can find
        _reopen_log_files()
        log.warning("%s was removed or replaced; took it again", paths.lock)
    try:
        if int(paths.pid_file.read_text()) == os.getpid():
            return lock_fd
    except (OSError, ValueError):
        pass
    write_pid_file(paths.pid_file)
    return lock_fd


def hold_home_lock(root: Path, runtime_dir: Path, home_fd: int) -> int | None:
    """``home_fd`` while ``<root>/.supervisor.lock`` is still the file it locks; else that
    lock taken anew at its path, or None when another supervisor took it first."""
    if _inode(root / HOME_LOCK_NAME) == os.fstat(home_fd).st_ino:
        return home_fd
    try:
        fd = take_home_lock(root, runtime_dir)
    except HomeHeld:
        return None
    if fd is None:  # the root cannot hold one now: keep what we hold
        return home_fd
    log.warning("%s was removed or replaced; took it again", root / HOME_LOCK_NAME)
    return fd


async def keep_lock(
    paths: RuntimePaths,
    lock_fd: int,
    shutdown: anyio.Event,
    home: tuple[Path, int] | None = None,
) -> None:
    """Hold ``supervisor.lock``, the pid file and the state root's lock (``home``: the root
    and the lock's descriptor) in place; stop the supervisor (``shutdown``) if another
    one took either lock's path."""
    while True:
        try:
            held = await anyio.to_thread.run_sync(hold_lock, paths, lock_fd)
            if held is not None and home is not None:
                root, home_fd = home
                kept = await anyio.to_thread.run_sync(
                    hold_home_lock, root, paths.directory, home_fd
                )
                if kept is None:
                    log.warning("another supervisor keeps the sessions in %s now; stopping", root)
                    shutdown.set()
                    return
                home = (root, kept)
        except (OSError, RuntimeDirError) as exc:
            log.warning("cannot check %s (%s); trying again", paths.lock, exc)
        else:
            if held is None:
                log.warning("another supervisor holds %s now; stopping", paths.lock)
                shutdown.set()
                return
            lock_fd = held
        await anyio.sleep(CHECK_INTERVAL_S)
