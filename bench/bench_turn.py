"""Per-turn overhead through the supervisor against the same agent run in-process.

With the instant ``offline`` model, one turn through the supervisor (socket,
connection handler, TerminalActor, LLMActor, the durable save of the session
after the turn, the reply streamed back) is compared with the same pydantic-ai
agent, same tools, same streaming and the same 20-turn history window, run in
this process: the limit is the agent's own cost. The two take turns, one turn
each, so that the machine's changes of speed (this is a shared VM) hit both
alike; measuring them in blocks made the ratio swing by 0.3 between blocks.
Target: within 1.5x.

    python -m bench.bench_turn [--turns N]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import anyio
from pydantic_ai.messages import ModelMessage

from actors.assistant import TurnDeps, build_agent
from actors.offline_model import offline_model
from bench.common import median_ms, private_supervisor
from supervisor.client import Connection, hello
from supervisor.runtime import RuntimePaths

TARGET_RATIO = 1.5
WINDOW_MESSAGES = 40  # 20 offline turns of a request and a response, as the supervisor keeps


class ThroughSupervisor:
    def __init__(self, runtime: Path, workspace: Path) -> None:
        self.conn = Connection.open(RuntimePaths(runtime).socket)
        self.conn.request(hello("terminal", terminal_pid=os.getpid(), workspace=str(workspace)))
        self.conn.send({"type": "open", "mode": "new", "session_id": None})
        while self.conn.receive()["type"] != "opened":
            pass
        self.count = 0

    def turn(self) -> float:
        self.count += 1
        start = time.perf_counter()
        self.conn.send({"type": "user_message", "text": f"message number {self.count}"})
        while (frame := self.conn.receive())["type"] != "turn_end":
            pass
        elapsed = time.perf_counter() - start
        if frame["status"] != "ok" or frame.get("error"):
            raise SystemExit(f"a turn through the supervisor failed: {frame}")
        return elapsed

    def close(self) -> None:
        self.conn.send({"type": "close"})
        while self.conn.receive()["type"] != "closed":
            pass
        self.conn.close()


class InProcess:
    def __init__(self, workspace: Path) -> None:
        self.agent = build_agent(offline_model())
        self.workspace = workspace
        self.history: list[ModelMessage] = []
        self.count = 0

    async def turn(self) -> float:
        self.count += 1
        start = time.perf_counter()
        deps = TurnDeps(self.workspace)
        prompt = f"message number {self.count}"
        async with self.agent.iter(prompt, message_history=self.history, deps=deps) as run:
            async for node in run:
                if self.agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as events:
                        async for _ in events:
                            pass
        assert run.result is not None
        self.history = run.result.all_messages()[-WINDOW_MESSAGES:]
        return time.perf_counter() - start


async def measure(runtime: Path, workspace: Path, turns: int) -> tuple[list[float], list[float]]:
    """Samples of both, one turn of each in turn."""
    ours, limit = ThroughSupervisor(runtime, workspace), InProcess(workspace)
    for _ in range(5):  # warm both up
        ours.turn()
        await limit.turn()
    ours_samples: list[float] = []
    limit_samples: list[float] = []
    for _ in range(turns):
        ours_samples.append(ours.turn())
        limit_samples.append(await limit.turn())
    ours.close()
    return ours_samples, limit_samples


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with private_supervisor() as (_, _workspace, runtime), tempfile.TemporaryDirectory() as tmp:
        ours, limit = anyio.run(measure, runtime, Path(tmp), args.turns)
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
