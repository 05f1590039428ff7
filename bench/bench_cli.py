"""Warm ``agent-assist sessions --json`` start-to-exit against a bare Python client.

The bare client is the physical limit: a Python process that opens the same
socket with the standard library, says hello, asks for the same listing and
prints it. Both run against the same warm supervisor. Target: within 1.25x.

    python -m bench.bench_cli [--repeat N]
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from bench.common import AGENT_ASSIST, median_ms, private_supervisor, ratio_verdict, timed

TARGET_RATIO = 1.25

BARE_CLIENT = r"""
import json, os, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(os.environ["AGENT_ASSIST_RUNTIME_DIR"] + "/supervisor.sock")
f = s.makefile("rwb")
def ask(frame):
    f.write(json.dumps(frame).encode() + b"\n"); f.flush()
    return json.loads(f.readline())
ask({"type": "hello", "protocol": 1, "role": "control", "client_pid": os.getpid()})
reply = ask({"type": "list_sessions", "workspace": os.getcwd(), "all": False})
print(json.dumps(reply["data"]["sessions"]))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    with private_supervisor() as (env, workspace, _):
        subprocess.run(
            [AGENT_ASSIST, "--new"],
            input="hello\n",
            text=True,
            env=env,
            cwd=workspace,
            capture_output=True,
            check=True,
        )
        ours_cmd = [AGENT_ASSIST, "sessions", "--json"]
        bare_cmd = [sys.executable, "-c", BARE_CLIENT]

        def run(cmd: list[str]) -> None:
            subprocess.run(cmd, env=env, cwd=workspace, capture_output=True, check=True)

        for _ in range(3):  # warm the page cache and the supervisor
            run(ours_cmd)
            run(bare_cmd)
        ours: list[float] = []
        bare: list[float] = []
        for _ in range(args.repeat):
            bare.append(timed(lambda: run(bare_cmd)))
            ours.append(timed(lambda: run(ours_cmd)))
    ratio = median_ms(ours) / median_ms(bare)
    print(f"bare client (limit)      {median_ms(bare):7.1f} ms")
    print(f"agent-assist sessions    {median_ms(ours):7.1f} ms")
    print(ratio_verdict(ratio, TARGET_RATIO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
