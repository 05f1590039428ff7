"""Shared pieces of the benchmarks: a private supervisor, attached terminals, medians."""

from __future__ import annotations

import contextlib
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from supervisor.client import Connection, hello

AGENT_ASSIST = str(Path(sys.executable).with_name("agent-assist"))


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def ratio_verdict(ratio: float, target: float) -> str:
    """``ratio 1.43x (target <= 1.5x): within target`` (or ``OVER target``)."""
    verdict = "within" if ratio <= target else "OVER"
    return f"ratio {ratio:.2f}x (target <= {target}x): {verdict} target"


def timed(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


@contextlib.contextmanager
def private_supervisor() -> Iterator[tuple[dict[str, str], Path, Path]]:
    """(environment, workspace, runtime dir) with a running supervisor; stopped afterwards."""
    base = Path(tempfile.mkdtemp(prefix="aa-bench-"))
    workspace = base / "ws"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ASSIST_")}
    env.update(AGENT_ASSIST_HOME=str(base / "home"), AGENT_ASSIST_RUNTIME_DIR=str(base / "run"))
    subprocess.run([AGENT_ASSIST, "supervisor", "start"], env=env, check=True, capture_output=True)
    try:
        yield env, workspace, base / "run"
    finally:
        subprocess.run(
            [AGENT_ASSIST, "supervisor", "stop"], env=env, capture_output=True, check=False
        )
        for name in ("heir.pid", "supervisor.pid"):  # the heir first, else it takes over
            pid_file = base / "run" / name
            if pid_file.exists():
                with contextlib.suppress(ProcessLookupError, ValueError):
                    os.kill(int(pid_file.read_text()), signal.SIGKILL)
        shutil.rmtree(base, ignore_errors=True)


FIRST_FAKE_PID = 3_000_000
"""Terminal pids no process has: each connection is a terminal of its own."""


def raise_descriptor_limit(connections: int) -> None:
    """Let this process hold ``connections`` sockets (and some files) at once."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = max(soft, 2 * connections + 64)
    if hard != resource.RLIM_INFINITY:
        wanted = min(hard, wanted)
    resource.setrlimit(resource.RLIMIT_NOFILE, (wanted, hard))


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def settled_rss(pid: int) -> int:
    """The resident set once it stops moving (freed memory is not returned at once)."""
    previous = rss_kb(pid)
    for _ in range(20):
        time.sleep(0.25)
        now = rss_kb(pid)
        if abs(now - previous) < 64:
            return now
        previous = now
    return previous


def attach(socket: Path, terminal_pid: int, workspace: Path) -> tuple[Connection, str]:
    """A terminal attached as ``terminal_pid`` with a new session open; (connection, its id)."""
    conn = Connection.open(socket, timeout=30)
    conn.sock.settimeout(60)
    conn.request(hello("terminal", terminal_pid=terminal_pid, workspace=str(workspace)))
    conn.send({"type": "open", "mode": "new", "session_id": None})
    while (frame := conn.receive())["type"] != "opened":
        pass
    return conn, str(frame["session_id"])


def turn(conn: Connection, text: str, message_id: str | None = None) -> None:
    """Send one message and read until its ``turn_end``."""
    conn.send({"type": "user_message", "text": text, "id": message_id})
    while conn.receive()["type"] != "turn_end":
        pass


def close(conn: Connection) -> None:
    """Leave as a terminal does (the session saved, ``closed`` answered), then hang up."""
    conn.send({"type": "close"})
    while conn.receive()["type"] != "closed":
        pass
    conn.close()


PEAK_RISE = """
import sys
from pathlib import Path
from {module} import {cls}
def kib(key):
    return next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith(key))
reader = {cls}(Path(sys.argv[1]))
before = kib("VmRSS:")
open("/proc/self/clear_refs", "w").write("5")
reader.{call}
print((kib("VmHWM:") - before) * 1024)
"""


def peak_rise(module: str, cls: str, call: str, directory: Path) -> int:
    """Bytes the peak resident set of a new process rose by as ``cls(directory).call``
    ran (``clear_refs`` resets the peak after the imports). Linux only."""
    code = PEAK_RISE.format(module=module, cls=cls, call=call)
    out = subprocess.run(
        [sys.executable, "-c", code, str(directory)],
        check=True, capture_output=True, text=True, cwd=Path(__file__).parent.parent,
    )
    return int(out.stdout)
