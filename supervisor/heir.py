"""The heir: a forked copy of the loaded supervisor that takes over the moment it dies.

A supervisor that dies hard (SIGKILL, the OOM killer, a crash of the
interpreter) cannot save anything, and a new one started by the next terminal
message must import the model stack again: most of a second, more on a busy
machine. So once its model stack is loaded, the supervisor forks an heir. The
heir shares the loaded modules (copy-on-write), closes every descriptor it
inherited (client connections, the listening socket, the event loop's), and
blocks on ``supervisor.lock``, which the supervisor holds for its whole life.
When the supervisor dies, the kernel releases the lock, the heir wakes, starts
a fresh supervisor in its own process (listening within milliseconds, nothing
to import) and forks its own heir. Terminals re-attach to it and restore their
sessions from disk exactly as they would to a newly started one.

A supervisor that stops on purpose (``supervisor stop``, SIGTERM, an error)
kills its heir first, so nothing takes over. ``AGENT_ASSIST_HEIR=0`` turns the
heir off (a new supervisor is then started by the next terminal message).
The heir's pid is in ``heir.pid`` in the runtime directory.
"""

from __future__ import annotations

import _imp
import contextlib
import fcntl
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import NoReturn

from supervisor.runtime import RuntimePaths

HEIR_ENV = "AGENT_ASSIST_HEIR"
TakeOver = Callable[[int, int], None]
"""``take_over(lock_fd, heir)``: a supervisor's life, holding the lock, with its own heir."""
IMPORT_WAIT_S = 0.005


def heir_enabled(environ: Mapping[str, str]) -> bool:
    return environ.get(HEIR_ENV, "1").strip() != "0"


def _write_pid(paths: RuntimePaths) -> None:
    temp = paths.heir_pid_file.with_name(f".heir.pid.{os.getpid()}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, f"{os.getpid()}\n".encode())
    finally:
        os.close(fd)
    os.replace(temp, paths.heir_pid_file)


def forget_heir_pid(paths: RuntimePaths, pid: int) -> None:
    """Remove ``heir.pid`` if it names ``pid``."""
    with contextlib.suppress(OSError, ValueError):
        if int(paths.heir_pid_file.read_text()) == pid:
            paths.heir_pid_file.unlink()


def _drop_inherited_descriptors() -> None:
    """Point every inherited descriptor above stderr at /dev/null.

    The supervisor's connections must end when it dies (so its terminals
    notice), its lock must be its alone, its event loop is not ours. They are
    replaced rather than closed so that their numbers stay taken: a Python
    object of the supervisor's that still owns one may close it one day, and
    must never close a descriptor the heir opened later under the same number.
    """
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd != null:
            with contextlib.suppress(OSError):
                os.dup2(null, fd)


def _wait_for_the_lock(paths: RuntimePaths) -> int:
    """In the heir: drop what the supervisor holds, then block until its lock is free."""
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)  # a stop ends the heir at once
    _drop_inherited_descriptors()
    _write_pid(paths)
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return fd  # heir.pid stays until the heir listens: terminals wait for it, not start one


def fork_heir(paths: RuntimePaths, take_over: TakeOver) -> int:
    """Fork the heir; its pid (in the supervisor). Blocking: call it in a worker thread.

    The fork happens in a thread of its own, so the heir keeps only that thread
    (its main thread from then on), with no event loop and no context of the
    supervisor's in it. In the heir, the forking thread never returns.
    """
    forked: list[int] = []
    thread = threading.Thread(target=_fork, args=(paths, take_over, forked), name="fork-heir")
    thread.start()
    thread.join()
    return forked[0]


def _importing() -> bool:
    """Whether some module is being imported (by another thread) right now."""
    return any(
        getattr(getattr(module, "__spec__", None), "_initializing", False)
        for module in list(sys.modules.values())
    )


def fork_when_no_import_runs() -> int:
    """``os.fork()``, at a moment no thread is inside an import.

    A child forked while another thread executes a module's body keeps that
    module half initialized for good (its next use fails). Holding the import
    lock, no import can start; the fork waits until none is running.
    """
    while True:
        _imp.acquire_lock()
        try:
            if not _importing():
                return os.fork()
        finally:
            _imp.release_lock()
        time.sleep(IMPORT_WAIT_S)


def _fork(paths: RuntimePaths, take_over: TakeOver, forked: list[int]) -> None:
    pid = fork_when_no_import_runs()
    if pid != 0:
        forked.append(pid)
        return
    _heir_life(paths, take_over)


def _heir_life(paths: RuntimePaths, take_over: TakeOver) -> NoReturn:
    """Wait for the lock; then fork the next heir at once (one thread, everything loaded,
    no import running: the safest moment there is) and run ``take_over(lock_fd, heir)``."""
    code = 1
    try:
        lock_fd = _wait_for_the_lock(paths)
        heir = os.fork()
        if heir == 0:
            _heir_life(paths, take_over)
        take_over(lock_fd, heir)
        code = 0
    except BaseException:  # pragma: no cover - reported in the log (stderr is the log)
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def stop_heir(paths: RuntimePaths, pid: int) -> None:
    """Kill the heir (before the supervisor releases its lock) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, 0)
    forget_heir_pid(paths, pid)
