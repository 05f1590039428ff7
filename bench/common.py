"""Shared pieces of the benchmarks: a private supervisor environment and medians."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

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
