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
import time
from functools import partial
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import anyio

from actors.base import run_supervised
from actors.compaction import CompactionActor
from actors.drift import DriftWatcherActor
from actors.llm import LLMActor
from actors.storage import StorageActor, StorageMemory
from actors.terminal import Peers
from session.compaction import EventsCompactionConfig
from session.history import warm_up
from session.lifecycle import PersistPolicy
from session.paths import state_root
from session.redaction import secrets_from_environment
from session.settings import load_settings
from supervisor.registry import Registry
from supervisor.runtime import RuntimePaths, ensure_private_runtime_dir, runtime_paths
from supervisor.server import HELLO_TIMEOUT_S, MAX_CONNECTIONS, Server, Settings

log = logging.getLogger("agent_assist.supervisor")
YOUNG_GC_THRESHOLD = 10_000
LOG_BYTES = 1024 * 1024
LOG_BACKUPS = 3
LOCK_WAIT_S = 1.0
TOKEN_RETENTION_EVENTS = 4
"""Messages kept whole when the token budget compacts (moved back to a turn start)."""


class AlreadyRunning(Exception):
    pass


def _version() -> str:
    try:
        return version("agent-assist")
    except PackageNotFoundError:
        return "unknown"


def _number_from_env(name: str, default: float) -> float:
    """A test and tuning knob; a bad value is ignored (the default is used)."""
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if 0 < value < 1e9 else default


def settings_from_environment(paths: RuntimePaths) -> Settings:
    """The supervisor's settings: ``<root>/config.toml`` overridden by its environment."""
    root = state_root()
    configured = load_settings(root, os.environ)
    compaction = EventsCompactionConfig(
        compaction_interval=configured.compaction_interval,
        overlap_size=configured.compaction_overlap,
        event_retention_size=TOKEN_RETENTION_EVENTS,
    )
    return Settings(
        root=root,
        socket=paths.socket,
        model=configured.model,
        policy=PersistPolicy(known_secrets=secrets_from_environment(), compaction=compaction),
        version=_version(),
        hello_timeout_s=_number_from_env("AGENT_ASSIST_HELLO_TIMEOUT_S", HELLO_TIMEOUT_S),
        max_connections=int(_number_from_env("AGENT_ASSIST_MAX_CONNECTIONS", MAX_CONNECTIONS)),
        context_tokens=configured.context_tokens,
        summary_model=configured.summary_model,
    )


def raise_descriptor_limit() -> None:
    """Use the hard limit of open files, so the connection cap can be generous."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = hard if hard != resource.RLIM_INFINITY else 65536
    if soft != resource.RLIM_INFINITY and soft < wanted:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, 65536), hard))


class PrivateRotatingLog(logging.handlers.RotatingFileHandler):
    """``supervisor.log``, rotated into ``.1`` .. ``.N``; every file it opens is 0600."""

    def _open(self) -> io.TextIOWrapper:
        stream = super()._open()
        os.chmod(self.baseFilename, 0o600)
        return stream


def configure_logging(log_path: Path, max_bytes: int = LOG_BYTES) -> None:
    handler = PrivateRotatingLog(log_path, maxBytes=max_bytes, backupCount=LOG_BACKUPS)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(process)d %(name)s %(levelname)s %(message)s")
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)


def _take_lock(paths: RuntimePaths) -> int:
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
                raise AlreadyRunning("a supervisor is already running") from None
            time.sleep(0.02)


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
    lock_fd = _take_lock(paths)
    try:
        configure_logging(paths.log)
        raise_descriptor_limit()
        paths.pid_file.write_text(f"{os.getpid()}\n")
        settings = settings_from_environment(paths)
        log.info("supervisor %d starting (state root %s)", os.getpid(), settings.root)
        warm_up()  # build the message serializers before the first turn needs them
        gc.freeze()  # the imported modules never die: keep them out of every collection
        # A turn's objects die by reference counting; at the default threshold (700) the
        # young generation was still collected once per turn (0.4 ms of ~20 ms), at this
        # one about once per hundred turns.
        gc.set_threshold(YOUNG_GC_THRESHOLD, *gc.get_threshold()[1:])
        anyio.run(serve, paths, settings)
        log.info("supervisor %d stopped", os.getpid())
    finally:
        with contextlib.suppress(OSError):
            paths.pid_file.unlink()
        with contextlib.suppress(OSError):
            paths.socket.unlink()
        os.close(lock_fd)


async def _watch_signals(shutdown: anyio.Event) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
        async for signum in signals:
            log.info("received signal %d; stopping", signum)
            shutdown.set()
            return


async def serve(paths: RuntimePaths, settings: Settings) -> None:
    shutdown = anyio.Event()
    memory = StorageMemory()  # claims and /reset tombstones outlive the actor's restarts
    secrets = settings.policy.known_secrets
    async with anyio.create_task_group() as workers:
        storage = await workers.start(
            partial(
                run_supervised,
                "storage",
                lambda ref: StorageActor(settings.root, memory, known_secrets=secrets),
            )
        )
        llm = await workers.start(partial(run_supervised, "llm", lambda ref: LLMActor()))
        summary_model = settings.summary_model
        compaction = await workers.start(
            partial(run_supervised, "compaction", lambda ref: CompactionActor(ref, summary_model))
        )
        drift = await workers.start(
            partial(run_supervised, "drift", lambda ref: DriftWatcherActor(ref))
        )
        peers = Peers(storage=storage, llm=llm, compaction=compaction, drift=drift)
        async with anyio.create_task_group() as terminals:
            registry = Registry(terminals, peers)
            server = Server(settings, registry, storage, shutdown)
            listener = await anyio.create_unix_listener(paths.socket, mode=0o600)
            log.info("listening on %s", paths.socket)
            async with anyio.create_task_group() as connections:
                connections.start_soon(_watch_signals, shutdown)
                connections.start_soon(server.serve, listener, connections)
                await shutdown.wait()
                log.info("saving %d attached session(s) before stopping", registry.attached)
                await registry.detach_all("shutdown")
                with anyio.move_on_after(5):
                    await server.wait_closed()
                connections.cancel_scope.cancel()
            await listener.aclose()
            terminals.cancel_scope.cancel()
        workers.cancel_scope.cancel()
