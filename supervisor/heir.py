"""The heir: a spawned process, model stack loaded, that takes over when the supervisor dies.

A supervisor that dies hard (SIGKILL, the OOM killer, a crash of the
interpreter) cannot save anything, and a new one started by the next terminal
message must import the model stack again: most of a second, more on a busy
machine. So once its model stack is loaded, the supervisor starts an heir: a
fresh interpreter (``python -m supervisor.heir``, never a fork of the
threaded supervisor) that imports the model stack itself, writes ``heir.pid``
and blocks on ``supervisor.lock``, which the supervisor holds for its whole
life. When the supervisor dies, the kernel releases the lock, the heir wakes
and becomes the supervisor (listening within milliseconds, nothing to
import), then starts its own heir. Terminals re-attach to it and restore
their sessions from disk exactly as they would to a newly started one.

The heir serves only once it holds the lock, and only if the supervisor that
released it was its own and died without stopping (``supervisor.pid`` still
names it): a supervisor that stops on purpose (``supervisor stop``, SIGTERM,
an error) kills its heir first and removes ``supervisor.pid`` before it lets
the lock go, so nothing takes over; an heir left over from another
supervisor exits instead of serving. ``AGENT_ASSIST_HEIR=0`` turns the heir
off (a new supervisor is then started by the next terminal message).
"""

from __future__ import annotations

import contextlib
import fcntl
import importlib
import os
import signal
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from session.settings import SettingsError, heir_wanted
from supervisor.runtime import RuntimePaths, write_pid_file

HEIR_MODULE = "supervisor.heir"


def heir_enabled(environ: Mapping[str, str]) -> bool:
    """``heir_wanted``; a bad value (checked with the settings at the start) is no heir."""
    try:
        return heir_wanted(environ)
    except SettingsError:
        return False


def forget_heir_pid(paths: RuntimePaths, pid: int) -> None:
    """Remove ``heir.pid`` if it names ``pid``."""
    with contextlib.suppress(OSError, ValueError):
        if int(paths.heir_pid_file.read_text()) == pid:
            paths.heir_pid_file.unlink()


def spawn_heir(paths: RuntimePaths) -> subprocess.Popen[bytes]:
    """Start the heir of this supervisor (blocking for a few ms: call it in a worker thread).

    It stays in the supervisor's session and process group, so a signal to the
    group (Ctrl+C at a terminal running ``supervisor run``, a kill of the
    group) ends both; its output goes to the log.
    """
    log_fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    try:
        return subprocess.Popen(
            # -P: no working directory on sys.path (see supervisor_command)
            [sys.executable, "-P", "-m", HEIR_MODULE, str(paths.directory), str(os.getpid())],
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            close_fds=True,
        )
    finally:
        os.close(log_fd)


def stop_heir(paths: RuntimePaths, heir: subprocess.Popen[bytes]) -> None:
    """Kill the heir (before the supervisor releases its lock) and reap it."""
    with contextlib.suppress(ProcessLookupError):
        heir.kill()
    heir.wait()
    forget_heir_pid(paths, heir.pid)


def _supervisor_pid(paths: RuntimePaths) -> int | None:
    try:
        return int(paths.pid_file.read_text())
    except (OSError, ValueError):
        return None


def wait_to_take_over(paths: RuntimePaths, parent: int) -> int | None:
    """Block until ``supervisor.lock`` is free; the lock's descriptor, held, if this heir is
    to take over (its ``parent`` died without stopping), else None (the lock let go).

    An heir whose parent died while it was loading writes no ``heir.pid`` and
    does not wait: it takes over only if no other supervisor started meanwhile.
    """
    orphaned = os.getppid() != parent
    if not orphaned:
        write_pid_file(paths.heir_pid_file)
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if orphaned else 0))
    except BlockingIOError:
        os.close(fd)
        return None
    if _supervisor_pid(paths) == parent:
        return fd  # heir.pid stays until the heir listens: terminals wait for it, not start one
    os.close(fd)
    forget_heir_pid(paths, os.getpid())
    return None


def _output_to_the_log(paths: RuntimePaths) -> None:
    """Point stdout and stderr (the log file as it was when this heir started) at
    ``supervisor.log`` as it is now: rotated meanwhile, it is another file."""
    with contextlib.suppress(OSError):
        fd = os.open(paths.log, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
        try:
            for stream, target in ((sys.stdout, 1), (sys.stderr, 2)):
                stream.flush()
                os.dup2(fd, target)
        finally:
            os.close(fd)


def main(argv: list[str] | None = None) -> int:
    """``python -m supervisor.heir RUNTIME_DIR SUPERVISOR_PID``: load, wait, take over."""
    import argparse  # not on the supervisor's light path

    parser = argparse.ArgumentParser(prog=f"python -m {HEIR_MODULE}")
    parser.add_argument("runtime_dir", type=Path)
    parser.add_argument("supervisor_pid", type=int)
    args = parser.parse_args(argv)
    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_DFL)  # a stop ends the heir at once
    paths = RuntimePaths(args.runtime_dir)
    from supervisor.daemon import supervise  # imports the light path
    from supervisor.identity import Identity
    from supervisor.stack import load_model_stack

    identity = Identity.of_this_process()  # of the code it loads now, not when it takes over
    load_model_stack()  # everything a supervisor needs to serve a turn at once
    importlib.import_module("anyio._backends._asyncio")  # what anyio.run imports
    with contextlib.suppress(ImportError):
        importlib.import_module("uvloop")  # what loop_options picks
    lock_fd = wait_to_take_over(paths, args.supervisor_pid)
    if lock_fd is None:
        return 0
    _output_to_the_log(paths)  # the log may have rotated since the heir was started
    supervise(paths, lock_fd, took_over_from=args.supervisor_pid, identity=identity)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
