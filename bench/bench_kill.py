"""Time from ``kill -9`` of a terminal to its durable session file.

A real ``agent-assist`` process converses one turn; the clock starts when it
is killed with SIGKILL and stops when the supervisor's exit autosave has
replaced the session file (its inode changes: the atomic rename is the last
step before the directory fsync returns). Target: under 50 ms median.

    python -m bench.bench_kill [--repeat N]
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import time
from pathlib import Path

from bench.common import AGENT_ASSIST, median_ms, private_supervisor
from session.paths import sessions_dir

TARGET_MS = 50.0
POLL_S = 0.0002


def session_files(project: Path) -> set[Path]:
    return {p for p in project.glob("*.json") if not p.name.startswith("active_")}


def one_kill(env: dict[str, str], workspace: Path, terminal: int) -> float:
    project = sessions_dir(workspace, Path(env["AGENT_ASSIST_HOME"]))
    before = session_files(project)
    process = subprocess.Popen(
        [AGENT_ASSIST, "--new"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=workspace,
        env={**env, "AGENT_ASSIST_TERMINAL_PID": str(terminal)},
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write("a turn to keep\n")
    process.stdin.flush()
    process.stdout.readline()
    (path,) = session_files(project) - before  # this round's session (each round is --new)
    inode = path.stat().st_ino
    start = time.perf_counter()
    os.kill(process.pid, signal.SIGKILL)
    while path.stat().st_ino == inode:
        if time.perf_counter() - start > 10:
            raise RuntimeError("the session was not saved within 10 s")
        time.sleep(POLL_S)
    elapsed = time.perf_counter() - start
    process.wait()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    terminal = subprocess.Popen(["sleep", "3600"])
    try:
        with private_supervisor() as (env, workspace, _):
            samples = [one_kill(env, workspace, terminal.pid) for _ in range(args.repeat)]
    finally:
        terminal.kill()
        terminal.wait()
    median = median_ms(samples)
    print(
        f"kill -9 to durable session file: median {median:.1f} ms, "
        f"max {max(samples) * 1000:.1f} ms over {len(samples)} kills"
    )
    print(f"target < {TARGET_MS:.0f} ms: {'within' if median < TARGET_MS else 'OVER'} target")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
