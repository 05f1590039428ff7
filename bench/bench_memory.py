"""Supervisor memory per attached idle terminal.

The empty supervisor (the model stack loaded, one turn run and its terminal
gone) is measured first; then ``--terminals`` terminals attach (hello, a new
session opened, nothing typed) and stay. The figure is the growth of the
supervisor's resident set divided by the number of terminals. Target: under
100 KB per terminal.

    python -m bench.bench_memory [--terminals N]
"""

from __future__ import annotations

import argparse
import resource
import time
from pathlib import Path

from bench.common import private_supervisor
from supervisor.client import Connection, hello
from supervisor.runtime import RuntimePaths

TARGET_KB = 100.0
FIRST_FAKE_PID = 3_000_000
"""Terminal pids no process has: each connection is a terminal of its own."""


def rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def attach(socket: Path, terminal_pid: int, workspace: Path) -> Connection:
    conn = Connection.open(socket, timeout=30)
    conn.sock.settimeout(60)
    conn.request(hello("terminal", terminal_pid=terminal_pid, workspace=str(workspace)))
    conn.send({"type": "open", "mode": "new", "session_id": None})
    while conn.receive()["type"] != "opened":
        pass
    return conn


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=500)
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(
        resource.RLIMIT_NOFILE, (min(hard, max(soft, 2 * args.terminals + 64)), hard)
    )
    with private_supervisor() as (_env, workspace, runtime):
        paths = RuntimePaths(runtime)
        pid = int(paths.pid_file.read_text())
        first = attach(paths.socket, FIRST_FAKE_PID - 1, workspace)
        first.send({"type": "user_message", "text": "load the model"})
        while first.receive()["type"] != "turn_end":
            pass
        first.send({"type": "close"})
        while first.receive()["type"] != "closed":
            pass
        first.close()
        empty = settled_rss(pid)
        terminals = [
            attach(paths.socket, FIRST_FAKE_PID + number, workspace)
            for number in range(args.terminals)
        ]
        loaded = settled_rss(pid)
        for conn in terminals:
            conn.close()
    per_terminal = (loaded - empty) / args.terminals
    print(f"empty supervisor (the limit's base)  {empty / 1024:7.1f} MB")
    print(f"with {args.terminals} idle terminals        {loaded / 1024:7.1f} MB")
    verdict = "within" if per_terminal < TARGET_KB else "OVER"
    print(
        f"{per_terminal:.1f} KB per attached idle terminal (target < {TARGET_KB:.0f} KB): "
        f"{verdict} target"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
