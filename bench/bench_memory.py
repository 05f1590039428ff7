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

from bench.common import (
    FIRST_FAKE_PID,
    attach,
    close,
    private_supervisor,
    raise_descriptor_limit,
    settled_rss,
    turn,
)
from supervisor.runtime import RuntimePaths

TARGET_KB = 100.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=500)
    args = parser.parse_args()
    raise_descriptor_limit(args.terminals)
    with private_supervisor() as (_env, workspace, runtime):
        paths = RuntimePaths(runtime)
        pid = int(paths.pid_file.read_text())
        first, _ = attach(paths.socket, FIRST_FAKE_PID - 1, workspace)
        turn(first, "load the model")
        close(first)
        empty = settled_rss(pid)
        terminals = [
            attach(paths.socket, FIRST_FAKE_PID + number, workspace)[0]
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
