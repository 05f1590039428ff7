"""Per-turn overhead through the supervisor against the same agent run in-process.

With the instant ``offline`` model, one turn through the supervisor (socket,
connection handler, TerminalActor, LLMActor, the durable save of the session
after the turn, the reply streamed back) is compared with the same pydantic-ai
agent, same tools and same streaming, run in this process, on the same event loop
as the supervisor's (``loop_options``: uvloop where it is installed): the limit is
the agent's own cost. Both carry the same request history: the in-process agent's
comes from the project's own ``SessionLifecycle`` with the supervisor's default
compaction (the sliding window with the offline summarizer, compacting as soon as
a window is due), kept outside the timed part. An agent run's cost grows with the
history it is given: a longer one than the supervisor sends (the fixed 40-message
window this bench used until 2026-12-03, against the 3 to 21 messages a supervisor
with default compaction sends) makes the limit slower and the ratio look better
than it is. Both leave the run at the response that ends it, as the LLMActor does
(``ends_the_run``: pydantic-ai's steps after it add nothing), so that what the
supervisor saves by it is not counted as its own. It prints the median size of the
requests each side sent, in tokens as the budget counts them (the supervisor's from its
``turn_end`` frames, the in-process agent's from its lifecycle), and the number of turns
whose two sizes differ: what tells whether both sides send the same requests. The two take
turns, one turn each, so that the machine's changes of speed (this is a shared VM)
hit both alike; measuring them in blocks made the ratio swing by 0.3 between blocks.

It also prints the CPU time per turn of the supervisor's process (every thread:
the loop, the disk's thread) and of the in-process agent's runs: what the
supervisor adds in work, which the machine's changes of speed move less than
the wall times.

For scale it also times, after each turn, a raw durable write (temp file,
fsync, rename, directory fsync) of as many bytes as the session file has:
the disk's part of a turn that is saved before it ends, which the design asks
for and the in-process agent does not do. The second ratio is against the
agent plus that write.

    python -m bench.bench_turn [--turns N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import anyio
from pydantic_ai.messages import ModelMessage

from actors.assistant import TurnDeps, agent_chars, build_agent
from actors.llm import ends_the_run
from actors.offline_model import offline_model
from bench.bench_save import raw_durable_write
from bench.common import median_ms, private_supervisor, ratio_verdict
from session.budget import context_budget
from session.compaction import EventsCompactionConfig, OfflineEventSummarizer, finish_compaction
from session.lifecycle import PersistPolicy, SessionLifecycle
from session.models import utc_now
from session.settings import DEFAULT_COMPACTION_INTERVAL, DEFAULT_COMPACTION_OVERLAP
from session.wire import wire_chars
from supervisor.client import Connection, hello
from supervisor.daemon import TOKEN_RETENTION_EVENTS, loop_options
from supervisor.runtime import RuntimePaths

TARGET_RATIO = 1.15
"""Against the agent run in process plus one durable write of the session file."""
BUDGET = context_budget("offline")
"""The token budget the supervisor gives the offline model's turns (``policy_for``)."""
POLICY = PersistPolicy(
    compaction=EventsCompactionConfig(
        DEFAULT_COMPACTION_INTERVAL,
        DEFAULT_COMPACTION_OVERLAP,
        event_retention_size=TOKEN_RETENTION_EVENTS,
        token_threshold=BUDGET,
    ),
    agent_chars=agent_chars(),
)
"""The supervisor's policy with no settings, for the offline model (``policy_for``)."""


class ThroughSupervisor:
    def __init__(self, runtime: Path, workspace: Path) -> None:
        self.conn = Connection.open(RuntimePaths(runtime).socket)
        self.conn.request(hello("terminal", terminal_pid=os.getpid(), workspace=str(workspace)))
        self.conn.send({"type": "open", "mode": "new", "session_id": None})
        while self.conn.receive()["type"] != "opened":
            pass
        self.count = 0

        self.sent: list[int] = []
        """The size in tokens of each request, as its ``turn_end`` frame gives it."""

    def turn(self) -> float:
        self.count += 1
        start = time.perf_counter()
        self.conn.send({"type": "user_message", "text": f"message number {self.count}"})
        while (frame := self.conn.receive())["type"] != "turn_end":
            pass
        elapsed = time.perf_counter() - start
        if frame["status"] != "ok" or frame.get("error"):
            raise SystemExit(f"a turn through the supervisor failed: {frame}")
        self.sent.append(frame["input_tokens"])
        return elapsed

    def close(self) -> None:
        self.conn.send({"type": "close"})
        while self.conn.receive()["type"] != "closed":
            pass
        self.conn.close()


class InProcess:
    """The agent alone, given the history a supervisor with default settings sends."""

    def __init__(self, workspace: Path) -> None:
        self.agent = build_agent(offline_model())
        self.workspace = workspace
        self.lifecycle = SessionLifecycle(policy=POLICY).start_fresh(utc_now()).lifecycle
        self.count = 0
        self.sent: list[int] = []
        """The size in tokens of each request, as the supervisor counts it (the offline
        model reports none: ``request_tokens`` of the message about to be sent)."""
        self.cpu = 0.0
        """CPU seconds of the timed runs (this process's, which runs nothing else then)."""

    async def turn(self) -> float:
        self.count += 1
        prompt = f"message number {self.count}"
        history = self.lifecycle.request_history(len(prompt))
        self.sent.append(self.lifecycle.request_tokens(wire_chars(prompt)))
        cpu = time.process_time()
        start = time.perf_counter()
        deps = TurnDeps(self.workspace, token_budget=BUDGET)  # as the supervisor's turns
        new: list[ModelMessage] = []
        async with self.agent.iter(prompt, message_history=history, deps=deps) as run:
            async for node in run:
                if self.agent.is_model_request_node(node):
                    async with node.stream(run.ctx) as events:
                        async for _ in events:
                            pass
                    new = run.new_messages()
                    if ends_the_run(new[-1]):
                        break  # as the LLMActor does: pydantic-ai's steps after it add nothing
        elapsed = time.perf_counter() - start
        self.cpu += time.process_time() - cpu
        self._keep(new)
        return elapsed

    def _keep(self, new: list[ModelMessage]) -> None:
        """What the supervisor does with a finished turn that decides the next request's
        history: keep the turn, and compact when a window is due (untimed)."""
        lc = self.lifecycle.begin_turn(self.count)
        lc = lc.complete_turn(new, now=utc_now(), manifest={}, agent_spec_path=None).lifecycle
        window = lc.compaction_due()
        if window is not None:
            lc = lc.begin_compaction(window)
            summary = OfflineEventSummarizer().summarize(window.events)
            compaction = finish_compaction(window, summary)
            assert compaction is not None
            kept = lc.compacted(
                compaction, lc.generation, now=utc_now(), manifest={}, agent_spec_path=None
            )
            lc = kept.lifecycle
        self.lifecycle = lc


class RawSave:
    """A raw durable write of as many bytes as ``session_file`` has now."""

    def __init__(self, session_file: Path, scratch: Path) -> None:
        self.session_file = session_file
        self.target = scratch / "session.json"

    def save(self) -> float:
        data = b"x" * self.session_file.stat().st_size
        start = time.perf_counter()
        raw_durable_write(self.target, data)
        return time.perf_counter() - start


def the_session_file(home: Path) -> Path:
    (session_file,) = (
        path
        for path in home.glob("projects/*/sessions/*.json")
        if not path.name.startswith("active_")
    )
    return session_file


def cpu_seconds(pid: int) -> float:
    """The CPU time (user and system, every thread) process ``pid`` has used."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


Samples = tuple[list[float], list[float], list[float]]


@dataclass
class Measured:
    samples: Samples
    sent: tuple[list[int], list[int]]
    """The size in tokens of each side's timed requests (ours, the limit's)."""
    cpu: tuple[float, float]
    """CPU seconds per turn: the supervisor's process, the in-process agent."""


async def measure(
    home: Path, runtime: Path, workspace: Path, scratch: Path, turns: int
) -> Measured:
    """Samples of ours, the in-process agent and the raw save, one of each in turn."""
    ours, limit = ThroughSupervisor(runtime, workspace), InProcess(workspace)
    for _ in range(5):  # warm both up
        ours.turn()
        await limit.turn()
    session_file = the_session_file(home)
    raw = RawSave(session_file, scratch)
    samples: Samples = ([], [], [])
    supervisor = int(RuntimePaths(runtime).pid_file.read_text())
    used, limit.cpu = cpu_seconds(supervisor), 0.0
    for _ in range(turns):
        samples[0].append(ours.turn())
        samples[1].append(await limit.turn())
        samples[2].append(raw.save())
    used = cpu_seconds(supervisor) - used
    ours.close()
    sent = (ours.sent[-turns:], limit.sent[-turns:])
    return Measured(samples, sent, (used / turns, limit.cpu / turns))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=200)
    args = parser.parse_args()
    with (
        private_supervisor() as (env, _workspace, runtime),
        tempfile.TemporaryDirectory() as workspace,
        tempfile.TemporaryDirectory() as scratch,
    ):
        home = Path(env["AGENT_ASSIST_HOME"])
        measured = anyio.run(
            measure,
            home,
            runtime,
            Path(workspace),
            Path(scratch),
            args.turns,
            backend_options=loop_options(),
        )
    ours, limit, raw = measured.samples
    ours_sent, limit_sent = measured.sent
    differing = sum(1 for a, b in zip(ours_sent, limit_sent, strict=True) if a != b)
    print(
        "request size in tokens, median: through the supervisor "
        f"{statistics.median(ours_sent):g}, in process {statistics.median(limit_sent):g}; "
        f"turns whose two sizes differ: {differing} of {len(ours_sent)}"
    )
    supervisor_cpu, agent_cpu = measured.cpu
    print(
        f"CPU per turn: the supervisor's process {supervisor_cpu * 1000:.2f} ms (every thread), "
        f"the in-process agent {agent_cpu * 1000:.2f} ms"
    )
    ratio = median_ms(ours) / median_ms(limit)
    with_save = median_ms(ours) / (median_ms(limit) + median_ms(raw))
    print(f"agent turn in-process (limit)   {median_ms(limit):7.2f} ms")
    print(f"raw durable write of the file   {median_ms(raw):7.2f} ms")
    print(f"turn through the supervisor     {median_ms(ours):7.2f} ms")
    print(f"ratio to the bare agent {ratio:.2f}x")
    print("against the agent plus the write: " + ratio_verdict(with_save, TARGET_RATIO))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
