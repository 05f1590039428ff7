"""Per-turn overhead through the supervisor against the same agent run in-process.

With the instant ``offline`` model, one turn through the supervisor (socket,
connection handler, TerminalActor, LLMActor, the durable save of the session
after the turn, the reply streamed back) is compared with the same pydantic-ai
agent, same tools and same growing history, run in this process (the limit:
the agent's own cost). Target: within 1.5x.

    python -m bench.bench_turn [--turns N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import anyio

from actors.assistant import TurnDeps, build_agent
from actors.offline_model import offline_model
from bench.common import median_ms, private_supervisor
from supervisor.client import Connection, hello
from supervisor.runtime import RuntimePaths

TARGET_RATIO = 1.5


def through_supervisor(runtime: Path, workspace: Path, turns: int) -> list[float]:
    conn = Connection.open(RuntimePaths(runtime).socket)
    conn.request(hello("terminal", terminal_pid=os.getpid(), workspace=str(workspace)))
    conn.send({"type": "open", "mode": "new", "session_id": None})
    while conn.receive()["type"] != "opened":
        pass
    samples = []
    for n in range(turns):
        start = time.perf_counter()
        conn.send({"type": "user_message", "text": f"message number {n}"})
        while conn.receive()["type"] != "turn_end":
            pass
        samples.append(time.perf_counter() - start)
    conn.send({"type": "close"})
    while conn.receive()["type"] != "closed":
        pass
    conn.close()
    return samples


async def in_process(workspace: Path, turns: int) -> list[float]:
    agent = build_agent(offline_model())
    history: list = []  # type: ignore[type-arg]
    samples = []
    for n in range(turns):
        start = time.perf_counter()
        deps = TurnDeps(workspace)
        async with agent.iter(f"message number {n}", message_history=history, deps=deps) as run:
            async for node in run:
                if agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as events:
                        async for _ in events:
                            pass
        assert run.result is not None
        history = run.result.all_messages()
        samples.append(time.perf_counter() - start)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=100)
    args = parser.parse_args()
    with private_supervisor() as (_, workspace, runtime):
        through_supervisor(runtime, workspace, 5)  # warm up the supervisor's agent
        ours = through_supervisor(runtime, workspace, args.turns)
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(in_process, Path(tmp), 5)
        limit = anyio.run(in_process, Path(tmp), args.turns)
    ratio = median_ms(ours) / median_ms(limit)
    print(f"agent turn in-process (limit)   {median_ms(limit):7.2f} ms")
    print(f"turn through the supervisor     {median_ms(ours):7.2f} ms")
    print(
        f"ratio {ratio:.2f}x (target <= {TARGET_RATIO}x): "
        f"{'within' if ratio <= TARGET_RATIO else 'OVER'} target"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
