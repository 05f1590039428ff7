"""``agent-assist supervisor run``: one per user, guarded by an flock, stopped gracefully.

The process holds ``supervisor.lock`` for its whole life, so a second one
refuses to start and a crashed one leaves nothing that blocks the next.
SIGTERM, SIGINT and a ``stop`` request save every live session, then exit.
"""

from __future__ import annotations

import contextlib
import fcntl
import gc
import io
import logging
import logging.handlers
import os
import resource
import signal
import socket
import subprocess
import sys
import time
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskGroup

from actors.base import ActorRef, run_supervised
from actors.log_scrub import ScrubSecrets
from actors.messages import StorageMessage
from actors.storage import StorageActor, StorageMemory
from actors.supervision import Decision, RestartPolicy, decide
from session.paths import state_root
from session.redaction import secrets_from_environment
from session.settings import supervisor_settings
from supervisor.accept import MAX_CONNECTIONS, connection_cap
from supervisor.front import HELLO_TIMEOUT_S, FrontDoor
from supervisor.heir import forget_heir_pid, heir_enabled, spawn_heir, stop_heir
from supervisor.home import take_home_lock
from supervisor.identity import Identity
from supervisor.listening import keep_lock, serve_socket
from supervisor.loop_errors import quiet_loop_errors
from supervisor.runtime import (
    RuntimePaths,
    check_tuning,
    ensure_private_runtime_dir,
    number_from_env,
    runtime_paths,
    write_pid_file,
)
from supervisor.stack import load_model_stack
from supervisor.stopped import forget_stopped, mark_stopped

if TYPE_CHECKING:  # the model stack loads after the supervisor listens (supervisor/stack.py)
    from supervisor.registry import Registry
    from supervisor.server import Server, Settings

log = logging.getLogger("agent_assist.supervisor")
YOUNG_GC_THRESHOLD = 10_000
LOG_BYTES = 1024 * 1024
LOG_BACKUPS = 3
LOCK_WAIT_S = 1.0
TOKEN_RETENTION_EVENTS = 4
"""Messages kept whole when the token budget compacts (moved back to a turn start)."""
STOP_WAIT_S = 20.0
"""The stop's wait for the sessions' saves and the connections' ends, at most (each is
bounded on its own: ``DETACH_WAIT_S``, ``STOP_WRITE_GRACE_S``)."""
HEIR_RESTARTS = RestartPolicy(max_restarts=3, within_s=60.0)
"""Heirs started again after one died, at most (the actors' supervision decision)."""


class AlreadyRunning(Exception):
    pass


def settings_from_environment(paths: RuntimePaths, identity: Identity) -> Settings:
    """The supervisor's settings: ``<root>/config.toml`` overridden by its environment.

    Imports the model stack (call it once ``load_model_stack`` has run)."""
    from actors.assistant import agent_chars
    from actors.terminal import DETACH_FINISH_WAIT_S
    from session.compaction import EventsCompactionConfig
    from session.lifecycle import PersistPolicy
    from supervisor.server import Settings

    root = state_root().resolve()
    configured, _ = supervisor_settings(root, os.environ)  # problems: logged at the start
    compaction = EventsCompactionConfig(
        compaction_interval=configured.compaction_interval,
        overlap_size=configured.compaction_overlap,
        event_retention_size=TOKEN_RETENTION_EVENTS,
    )
    return Settings(
        root=root,
        socket=paths.socket,
        model=configured.model,
        policy=PersistPolicy(
            known_secrets=secrets_from_environment(),
            compaction=compaction,
            agent_chars=agent_chars(),
            max_file_bytes=file_cap(),
        ),
        identity=identity,
        hello_timeout_s=number_from_env("AGENT_ASSIST_HELLO_TIMEOUT_S", HELLO_TIMEOUT_S),
        context_tokens=configured.context_tokens,
        summary_model=configured.summary_model,
        model_timeout_s=configured.model_timeout,
        finish_wait_s=number_from_env("AGENT_ASSIST_FINISH_WAIT_S", DETACH_FINISH_WAIT_S),
    )


TEST_FILE_CAP_VARIABLE = "AGENT_ASSIST_TEST_SESSION_FILE_BYTES"
"""For tests only: a smaller cap for what a save writes (a real supervisor trimming a file
without writing 256 MiB); never above ``MAX_SESSION_BYTES``, which every read keeps."""


def file_cap() -> int:
    """The size the supervisor's saves keep a session file under."""
    from session.file_cap import MAX_SESSION_BYTES

    wanted = number_from_env(TEST_FILE_CAP_VARIABLE, MAX_SESSION_BYTES)
    return max(1, min(MAX_SESSION_BYTES, int(wanted)))


def raise_descriptor_limit() -> None:
    """Use the hard limit of open files, so the connection cap can be generous."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, 65536), hard))


class PrivateRotatingLog(logging.handlers.RotatingFileHandler):
    """``supervisor.log``, rotated into ``.1`` .. ``.N``; every file it opens is 0600.

    A supervisor started in the background (and an heir) has the log as its stdout and
    stderr: what is written there (a failed start's ``error:`` line, which the starting
    terminal reads back from ``supervisor.log``; a traceback) follows the log to its new
    file at each rotation, rather than going to ``supervisor.log.1`` and, three rotations
    later, to a deleted file."""

    def _open(self) -> io.TextIOWrapper:
        stream = super()._open()
        os.chmod(self.baseFilename, 0o600)
        return stream

    def doRollover(self) -> None:
        before = _file_identity(self.baseFilename)
        super().doRollover()
        if self.stream is not None and before is not None:
            follow_the_log(before, self.stream.fileno())


def _file_identity(path: str | int) -> tuple[int, int] | None:
    try:
        info = os.stat(path) if isinstance(path, str) else os.fstat(path)
    except OSError:
        return None
    return info.st_dev, info.st_ino


def follow_the_log(old: tuple[int, int], log_fd: int) -> None:
    """Point stdout and stderr, where they are the log file ``old`` (device, inode), at the
    log now open as ``log_fd``."""
    for stream, fd in ((sys.stdout, 1), (sys.stderr, 2)):
        if _file_identity(fd) == old:
            with contextlib.suppress(OSError, ValueError, AttributeError):
                stream.flush()
            with contextlib.suppress(OSError):
                os.dup2(log_fd, fd)


def configure_logging(log_path: Path, max_bytes: int = LOG_BYTES) -> None:
    """Log to ``supervisor.log``, and to stderr too when someone reads it: a terminal
    (``supervisor run`` by hand) or systemd's journal (its ``JOURNAL_STREAM`` names the
    stream stderr still is). A supervisor started in the background has the log itself
    as stderr: it does not write each line twice."""
    handler = PrivateRotatingLog(log_path, maxBytes=max_bytes, backupCount=LOG_BACKUPS)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
    )
    handlers: list[logging.Handler] = [handler]
    if stderr_is_read():
        shown = logging.StreamHandler(sys.stderr)
        shown.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        handlers.append(shown)
    scrub = ScrubSecrets(secrets_from_environment())
    for each in handlers:
        each.addFilter(scrub)
    root = logging.getLogger()
    root.handlers[:] = handlers
    root.setLevel(logging.INFO)


def stderr_is_read() -> bool:
    """Whether stderr is a terminal or the journal stream systemd gave this service."""
    try:
        if os.isatty(2):
            return True
        info = os.fstat(2)
    except OSError:
        return False
    return os.environ.get("JOURNAL_STREAM") == f"{info.st_dev}:{info.st_ino}"


def take_lock(paths: RuntimePaths) -> int:
    """Hold ``supervisor.lock``. An offline ``sessions rm``/``prune`` holds it for a few
    milliseconds, so a held lock is tried again briefly before it means another supervisor."""
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() > deadline or _supervisor_answers(paths):
                os.close(fd)
                raise AlreadyRunning(_already_running(paths)) from None
            time.sleep(0.02)


def _already_running(paths: RuntimePaths) -> str:
    try:
        pid = f"pid {int(paths.pid_file.read_text())}, "
    except (OSError, ValueError):
        pid = ""
    return f"a supervisor is already running ({pid}socket {paths.socket})"


def _supervisor_answers(paths: RuntimePaths) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(0.5)
        try:
            probe.connect(str(paths.socket))
        except OSError:
            return False
    return True


def run_supervisor(paths: RuntimePaths | None = None) -> None:
    """Run in the foreground until stopped. Raises AlreadyRunning or RuntimeDirError."""
    paths = paths or runtime_paths()
    ensure_private_runtime_dir(paths.directory)
    supervise(paths, take_lock(paths))


def loop_options() -> dict[str, Any]:
    """anyio's backend options for the supervisor's event loop: uvloop where it is
    installed (its sockets, callbacks and thread wake-ups are C: a turn costs about
    0.4 ms less, see docs/PERFORMANCE.md), asyncio's own loop elsewhere."""
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return {}
    return {"use_uvloop": True}


def leave_the_working_directory() -> None:
    """Work in ``/``, as a daemon does: the directory a supervisor was started from (a
    workspace on a mount, say) is not held for as long as it runs. The paths the
    environment gives relative to it are made absolute first, so that they keep meaning
    what they meant to the terminal that started it."""
    for name in ("AGENT_ASSIST_HOME", "AGENT_ASSIST_RUNTIME_DIR"):
        value = os.environ.get(name)
        if value and not os.path.isabs(value) and not value.startswith("~"):
            os.environ[name] = os.path.abspath(value)
    os.chdir("/")


def supervise(
    paths: RuntimePaths,
    lock_fd: int,
    took_over_from: int | None = None,
    identity: Identity | None = None,
) -> None:
    """A supervisor's life, holding ``supervisor.lock`` (``lock_fd``, closed at the end);
    ``took_over_from``: the pid of the supervisor an heir takes over from, ``identity`` what
    it is (taken when it loaded its code: this one's, now)."""
    identity = identity or Identity.of_this_process()
    try:
        leave_the_working_directory()
        configure_logging(paths.log)
        if took_over_from is not None:
            log.info("heir %d takes over from supervisor %d", os.getpid(), took_over_from)
        raise_descriptor_limit()
        write_pid_file(paths.pid_file)
        root = state_root().resolve()
        for problem in supervisor_settings(root, os.environ)[1]:  # the chats refuse it
            log.warning("%s", problem)
        check_tuning()  # and so does a bad tuning variable
        log.info("supervisor %d starting (state root %s)", os.getpid(), root)
        home_fd = take_home_lock(root, paths.directory)  # HomeHeld: another one keeps it
        # A turn's objects die by reference counting; at the default threshold (700) the
        # young generation was still collected once per turn (0.4 ms of ~20 ms), at this
        # one about once per hundred turns.
        gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
        gc.enable()  # the quick entry (cli/entry.py) imports with it paused
        try:
            anyio.run(
                serve, paths, root, lock_fd, home_fd, identity, backend_options=loop_options()
            )
        finally:
            if home_fd is not None:
                os.close(home_fd)
        log.info("supervisor %d stopped", os.getpid())
    finally:
        with contextlib.suppress(OSError):  # the socket first: no pid file, no socket
            paths.socket.unlink()
        with contextlib.suppress(OSError):
            paths.pid_file.unlink()
        os.close(lock_fd)


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


async def _watch_signals(
    paths: RuntimePaths,
    shutdown: anyio.Event,
    *,
    task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
) -> None:
    """The first signal stops the supervisor; the next ones, until it has exited, are told
    in the log and change nothing: the stop saves every session within its bounded wait
    (a second SIGTERM or Ctrl+C, taken by their default action, killed it mid-save). Once
    the receiver closes for the exit, they are ignored to the end: one then killed it
    before it removed its socket and stopped its heir (CI's flaky second-stop test)."""
    try:
        with anyio.open_signal_receiver(*STOP_SIGNALS) as signals:
            task_status.started()
            async for signum in signals:
                if shutdown.is_set():
                    log.info(
                        "received signal %d; already stopping (at most %g s)", signum, STOP_WAIT_S
                    )
                    continue
                log.info("received signal %d; stopping", signum)
                mark_stopped(paths.directory, os.getpid())
                shutdown.set()
    finally:
        if shutdown.is_set():  # the exit's last steps
            for signum in STOP_SIGNALS:
                signal.signal(signum, signal.SIG_IGN)


class _Running:
    """What the model stack's loading started, for the shutdown."""

    registry: Registry | None = None
    server: Server | None = None
    heir: subprocess.Popen[bytes] | None = None
    with_heir: bool = False


async def start_model_stack(
    paths: RuntimePaths,
    workers: TaskGroup,
    terminals: TaskGroup,
    storage: ActorRef[StorageMessage],
    front: FrontDoor,
    shutdown: anyio.Event,
    running: _Running,
) -> None:
    """Import pydantic-ai and the actors that need it (in a worker thread: the loop keeps
    answering), start those actors, and hand the connections over to the real Server."""
    await anyio.to_thread.run_sync(load_model_stack, abandon_on_cancel=True)
    from actors.compaction import CompactionActor
    from actors.drift import DriftWatcherActor, WatchedFiles
    from actors.llm import LLMActor
    from actors.terminal import Peers
    from supervisor.registry import Registry
    from supervisor.server import Server

    settings = settings_from_environment(paths, front.identity)
    stall_s = settings.model_timeout_s
    own = (state_root(), paths.directory)  # never written by the assistant's tools
    llm = await workers.start(
        partial(
            run_supervised,
            "llm",
            lambda ref: LLMActor(stall_timeout_s=stall_s, own_directories=own),
        )
    )
    summary_model = settings.summary_model
    compaction = await workers.start(
        partial(run_supervised, "compaction", lambda ref: CompactionActor(ref, summary_model))
    )
    watched = WatchedFiles()  # outlives a restart of the actor
    drift = await workers.start(
        partial(run_supervised, "drift", lambda ref: DriftWatcherActor(ref, watched=watched))
    )
    peers = Peers(storage=storage, llm=llm, compaction=compaction, drift=drift)
    running.registry = Registry(terminals, peers)
    running.server = Server(settings, running.registry, storage, shutdown)
    front.hand_over(running.server)
    log.info("model stack loaded")
    if running.with_heir:
        await keep_an_heir(paths, running, shutdown)


async def start_heir(paths: RuntimePaths, running: _Running) -> subprocess.Popen[bytes] | None:
    """Spawn the heir and keep it in ``running`` (for the stop to kill); None if it could
    not be started."""
    with anyio.CancelScope(shield=True):  # a stop meanwhile must find it to kill it
        try:
            heir = running.heir = await anyio.to_thread.run_sync(spawn_heir, paths)
        except OSError as exc:  # the runtime directory removed meanwhile, say
            log.warning("no heir started (%s); a new supervisor would start instead", exc)
            return None
    log.info("heir %d started: it loads the model stack, then waits to take over", heir.pid)
    return heir


async def keep_an_heir(paths: RuntimePaths, running: _Running, shutdown: anyio.Event) -> None:
    """Start the heir, and a new one whenever it dies while this supervisor runs (it holds
    a second model stack: the OOM killer's first pick), at most three times a minute
    (``HEIR_RESTARTS``). Cancelled by the stop, which kills the heir itself (a
    signal to the process group ends the heir first: no new one then)."""
    deaths: tuple[float, ...] = ()
    while (heir := await start_heir(paths, running)) is not None:
        status = await anyio.to_thread.run_sync(heir.wait, abandon_on_cancel=True)
        running.heir = None
        forget_heir_pid(paths, heir.pid)
        if shutdown.is_set():
            return
        decision, deaths = decide(HEIR_RESTARTS, deaths, time.monotonic())
        if decision is Decision.ESCALATE:
            log.warning(
                "heir %d exited (status %d), %d heirs in %g s; no new heir: a new supervisor "
                "would start instead",
                heir.pid,
                status,
                len(deaths),
                HEIR_RESTARTS.within_s,
            )
            return
        log.warning("heir %d exited (status %d); starting a new one", heir.pid, status)


async def serve(
    paths: RuntimePaths,
    root: Path,
    lock_fd: int,
    home_fd: int | None = None,
    identity: Identity | None = None,
) -> None:
    """Listen at once (the front door answers attaches), load the model stack meanwhile."""
    running = _Running()
    running.with_heir = heir_enabled(os.environ)
    try:
        await _serve(paths, root, lock_fd, home_fd, running, identity)
    finally:
        if running.heir is not None:  # a stop on purpose: nothing is to take over
            stop_heir(paths, running.heir)


async def _serve(
    paths: RuntimePaths,
    root: Path,
    lock_fd: int,
    home_fd: int | None,
    running: _Running,
    identity: Identity | None,
) -> None:
    quiet_loop_errors()
    shutdown = anyio.Event()
    memory = StorageMemory()  # claims and /reset tombstones outlive the actor's restarts
    secrets = secrets_from_environment()
    async with anyio.create_task_group() as workers:
        storage = await workers.start(
            partial(
                run_supervised,
                "storage",
                lambda ref: StorageActor(root, memory, known_secrets=secrets),
            )
        )
        hello_timeout_s = number_from_env("AGENT_ASSIST_HELLO_TIMEOUT_S", HELLO_TIMEOUT_S)
        front = FrontDoor(root, paths.socket, storage, shutdown, hello_timeout_s, identity)
        async with anyio.create_task_group() as terminals:
            async with anyio.create_task_group() as connections:
                cap = connection_cap(
                    int(number_from_env("AGENT_ASSIST_MAX_CONNECTIONS", MAX_CONNECTIONS))
                )
                forget_stopped(paths.directory, os.getpid())
                # to the very end, from before the socket answers (a stop from then on is one)
                await workers.start(_watch_signals, paths, shutdown)
                await connections.start(serve_socket, paths, front.handle, connections, cap)
                log.info("listening on %s", paths.socket)
                forget_heir_pid(paths, os.getpid())  # if this supervisor was an heir, it took over
                home = (root, home_fd) if home_fd is not None else None
                connections.start_soon(keep_lock, paths, lock_fd, shutdown, home)
                connections.start_soon(
                    start_model_stack,
                    paths,
                    workers,
                    terminals,
                    storage,
                    front,
                    shutdown,
                    running,
                )
                await shutdown.wait()
                if running.server is not None:
                    with anyio.move_on_after(STOP_WAIT_S):
                        await running.server.stop()
                connections.cancel_scope.cancel()
            terminals.cancel_scope.cancel()
        workers.cancel_scope.cancel()
