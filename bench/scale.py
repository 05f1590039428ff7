"""500 attached terminals: memory per idle terminal, turns under load, all saved on stop.

One private supervisor (``bench.common.private_supervisor``: the real process, the
default instant ``offline`` model, the real Unix socket). One client process holds
every terminal's socket (a selector, no threads): each terminal is a distinct fake
terminal pid that says hello and opens a new session, as ``bench_memory`` does.

1. **Baseline, first**: one terminal alone, nothing else happening, runs
   ``--baseline-turns`` turns one after the other (after a warm-up turn that waits
   for the model stack, and once the supervisor's heir has loaded and gone quiet).
   A turn's time is from sending ``user_message`` to reading its ``turn_end``
   (the reply streamed and the session durably saved). That terminal then leaves.
2. **Memory**: the supervisor's settled resident set (the empty supervisor, model
   stack loaded), then with ``--terminals`` terminals attached and idle. The figure
   is the growth divided by the number of terminals. Target: under 100 KB each.
3. **Turns under load**: ``--rounds`` rounds; in each, ``--active`` of the attached
   terminals (the next ones in turn, so every terminal gets turns) send a message
   at once, and each turn is timed as above while the other 450 stay attached.
   *Overhead* here is a turn's time under load minus the single-terminal baseline's
   median: the time the turn lost to sharing the supervisor. (Pairing each loaded turn
   with "the same turn alone" is not possible: a turn runs once; the baseline's turns
   carry the same kind of message to the same offline model.) The bench prints the
   raw p50/p99 under load next to the baseline's p50/p99, then the overhead p50/p99
   against the target: p99 under 20 ms. It also prints the supervisor's work per
   turn under load (a round's span divided by its turns) against the baseline's
   median, and the supervisor's CPU time per turn (``/proc``), alone and under load:
   when these are close, the overhead is waiting in line behind the other turns of
   the burst on one event loop, not work that grows with the terminals. The queueing
   floor printed with them is each place of a burst served one turn after the other
   at the one-terminal median.
4. **All saved on stop**: the time from sending the ``stop`` request that
   ``agent-assist supervisor stop`` sends (over an already open control connection,
   so the command's own start-up is not counted) to the supervisor process's exit
   (a pidfd), then every terminal's session file must parse as a session and hold
   each of its messages exactly once, with no temp file or file moved aside left and
   no error in ``supervisor.log``. Target: under 2 s. Beside it, the disk's part: the
   same files' bytes written durably again by a bare loop (write, fsync, rename,
   directory fsync), one after the other; and the work's part: the supervisor's CPU
   (all its threads) from the stop to the last session saved.

Each figure is printed with its target and ``within target`` / ``OVER target``; the
last line is the overall verdict.

    python -m bench.scale [--terminals 500] [--active 50] [--rounds 20] [--baseline-turns 100]
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import selectors
import statistics
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench.bench_save import raw_durable_write
from bench.common import (
    FIRST_FAKE_PID,
    attach,
    close,
    private_supervisor,
    raise_descriptor_limit,
    settled_rss,
    turn,
)
from session.models import SessionState
from supervisor.client import Connection, ConnectionLost, hello
from supervisor.heir import heir_enabled
from supervisor.runtime import RuntimePaths
from supervisor.wire import LineBuffer, decode_frame

RSS_TARGET_KB = 100.0
OVERHEAD_P99_TARGET_MS = 20.0
STOP_TARGET_S = 2.0
TURN_TIMEOUT_S = 120.0
HEIR_WAIT_S = 60.0


@dataclass
class Terminal:
    """One attached terminal: its socket, its session and the messages it sent."""

    pid: int
    conn: Connection
    session_id: str
    lines: LineBuffer = field(default_factory=LineBuffer)
    sent: list[str] = field(default_factory=list)


@dataclass
class ScaleResult:
    """What one run measured (times in seconds, memory in KB)."""

    terminals: int
    active: int
    rounds: int
    baseline: list[float]
    loaded: list[float]
    first_frames: list[float]
    round_spans: list[float]
    cpu_alone: float
    """The supervisor's CPU seconds per turn with one terminal alone."""
    cpu_loaded: float
    """The same, per turn of the rounds under load."""
    empty_kb: int
    attached_kb: int
    stop: Stop
    raw_writes_s: float
    """The limit of the stop: the same files written durably by a bare loop."""
    saved: int
    problems: list[str]

    @property
    def per_terminal_kb(self) -> float:
        return (self.attached_kb - self.empty_kb) / self.terminals

    @property
    def overhead(self) -> list[float]:
        alone = statistics.median(self.baseline)
        return [seconds - alone for seconds in self.loaded]

    @property
    def queue_floor(self) -> list[float]:
        """Each place in a burst served one turn after the other at the one-terminal median:
        the least a turn waits on one event loop if no two turns' work overlapped."""
        alone = statistics.median(self.baseline)
        return [place * alone for place in range(1, self.active + 1)]

    @property
    def work_per_turn(self) -> float:
        """The median round's span divided by its turns."""
        return statistics.median(self.round_spans) / self.active


def percentile(samples: list[float], fraction: float) -> float:
    """The nearest-rank percentile (p99 of 1,000 samples is the 990th smallest)."""
    ordered = sorted(samples)
    rank = max(1, math.ceil(fraction * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time the process has used so far (all its threads)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for_quiet_heir(env: dict[str, str], runtime: Path) -> None:
    """Wait until the supervisor's heir (if it runs one) has loaded and waits on the lock."""
    if not heir_enabled(env):
        return
    heir_file = RuntimePaths(runtime).heir_pid_file
    deadline = time.monotonic() + HEIR_WAIT_S
    while True:
        try:
            os.kill(int(heir_file.read_text()), 0)
            return
        except (OSError, ValueError):
            if time.monotonic() > deadline:
                raise TimeoutError("the supervisor's heir did not load") from None
            time.sleep(0.01)


@dataclass
class Round:
    """One burst: each turn's time to its first frame and to its ``turn_end``, the span."""

    first_frame: list[float]
    turns: list[float]
    span: float


def concurrent_turns(terminals: list[Terminal], label: str) -> Round:
    """Each terminal sends one message at once; each turn timed by its frames."""
    selector = selectors.DefaultSelector()
    started: dict[int, float] = {}
    first_frame: dict[int, float] = {}
    times: dict[int, float] = {}
    for index, terminal in enumerate(terminals):
        selector.register(terminal.conn.sock, selectors.EVENT_READ, index)
    first = time.perf_counter()
    for index, terminal in enumerate(terminals):
        text = f"terminal {terminal.pid} {label}"
        message_id = f"{terminal.pid}-{len(terminal.sent)}"
        terminal.sent.append(text)
        started[index] = time.perf_counter()
        terminal.conn.send({"type": "user_message", "text": text, "id": message_id})
    while len(times) < len(terminals):
        events = selector.select(TURN_TIMEOUT_S)
        if not events:
            raise TimeoutError(f"{len(terminals) - len(times)} turns did not end")
        now = time.perf_counter()
        for key, _ in events:
            index = key.data
            terminal = terminals[index]
            data = terminal.conn.sock.recv(65536)
            if not data:
                raise ConnectionLost(f"terminal {terminal.pid} lost the supervisor")
            first_frame.setdefault(index, now - started[index])
            for line in terminal.lines.feed(data):
                frame = decode_frame(line)
                if frame["type"] == "error":
                    raise RuntimeError(f"terminal {terminal.pid}: {frame.get('message')}")
                if frame["type"] == "turn_end":
                    if frame.get("status") != "ok":
                        raise RuntimeError(f"terminal {terminal.pid}: turn ended {frame}")
                    times[index] = now - started[index]
                    selector.unregister(terminal.conn.sock)
    selector.close()
    order = range(len(terminals))
    return Round(
        [first_frame[index] for index in order],
        [times[index] for index in order],
        time.perf_counter() - first,
    )


@dataclass
class Stop:
    """A stop, timed by frames: each terminal's ``closed`` frame, then the process's exit."""

    exit_s: float
    closed_s: list[float]
    """Seconds from the stop request to each ``closed`` frame saying the session was saved."""
    cpu_s: float
    """The supervisor's CPU seconds (all its threads) from the stop request to the last
    ``closed`` frame: a stop that takes about this long is bound by work, not the disk."""


def stop_and_wait(runtime: Path, pid: int, terminals: list[Terminal]) -> Stop:
    """Send ``stop`` as ``agent-assist supervisor stop`` does; time the saves and the exit."""
    pidfd = os.pidfd_open(pid)
    selector = selectors.DefaultSelector()
    closed: list[float] = []
    cpu_s = math.nan
    try:
        selector.register(pidfd, selectors.EVENT_READ, None)
        for terminal in terminals:
            selector.register(terminal.conn.sock, selectors.EVENT_READ, terminal)
        with Connection.open(RuntimePaths(runtime).socket) as control:
            control.request(hello("control"))
            cpu_before = cpu_seconds(pid)
            start = time.perf_counter()
            control.request({"type": "stop"})  # then hang up, as the command does
        while True:
            events = selector.select(60)
            if not events:
                raise TimeoutError("the supervisor did not exit within 60 s")
            now = time.perf_counter() - start
            for key, _ in events:
                terminal = key.data
                if terminal is None:
                    return Stop(now, closed, cpu_s)
                data = terminal.conn.sock.recv(65536)
                if not data:
                    selector.unregister(terminal.conn.sock)
                    continue
                for line in terminal.lines.feed(data):
                    frame = decode_frame(line)
                    if frame["type"] == "closed" and frame.get("saved"):
                        closed.append(now)
                        if len(closed) == len(terminals):  # read while the process lives
                            with contextlib.suppress(OSError):
                                cpu_s = cpu_seconds(pid) - cpu_before
    finally:
        selector.close()
        os.close(pidfd)


def leftovers(home: Path, log: Path) -> list[str]:
    """What a clean run leaves none of: temps, files moved aside, errors in the log."""
    found = [
        f"left on disk: {path.name}"
        for pattern in ("projects/*/sessions/.*.tmp", "projects/*/sessions/*.corrupt-*")
        for path in home.glob(pattern)
    ]
    lines = log.read_text(errors="replace").splitlines() if log.exists() else []
    found.extend(
        f"supervisor.log: {line}"
        for line in lines
        if " ERROR " in line or " CRITICAL " in line or line.startswith("Traceback")
    )
    return found


def raw_writes(home: Path) -> float:
    """Seconds to write every session file's bytes again, durably, one after the other
    (write, fsync, rename, directory fsync): what saving them all costs the disk."""
    files = sorted(home.glob("projects/*/sessions/*.json"))
    contents = [path.read_bytes() for path in files]
    scratch = home / "raw-writes"
    scratch.mkdir()
    start = time.perf_counter()
    for path, data in zip(files, contents, strict=True):
        raw_durable_write(scratch / path.name, data)
    return time.perf_counter() - start


def check_saved(home: Path, terminals: list[Terminal]) -> tuple[int, list[str]]:
    """How many sessions' files parse and hold each of their messages exactly once."""
    files = {path.stem: path for path in home.glob("projects/*/sessions/*.json")}
    problems: list[str] = []
    saved = 0
    for terminal in terminals:
        path = files.get(terminal.session_id)
        if path is None:
            problems.append(f"session {terminal.session_id} (terminal {terminal.pid}): no file")
            continue
        try:
            state = SessionState.model_validate_json(path.read_bytes())
        except ValueError as exc:
            problems.append(f"{path.name}: does not parse ({str(exc).splitlines()[0]})")
            continue
        prompts = [
            part.get("content")
            for message in state.recent_messages
            for part in message.get("parts", ())
            if part.get("part_kind") == "user-prompt"
        ]
        if sorted(prompts) != sorted(terminal.sent):
            problems.append(f"{path.name}: holds {prompts!r}, sent {terminal.sent!r}")
            continue
        saved += 1
    return saved, problems


def run(
    terminals: int,
    active: int,
    rounds: int,
    baseline_turns: int,
) -> ScaleResult:
    """The whole measurement against a private supervisor."""
    if active > terminals or rounds * active < terminals:
        raise ValueError("every terminal needs a turn: active <= terminals <= rounds * active")
    raise_descriptor_limit(terminals + 16)
    with private_supervisor() as (env, workspace, runtime):
        paths = RuntimePaths(runtime)
        pid = int(paths.pid_file.read_text())
        alone, _ = attach(paths.socket, FIRST_FAKE_PID - 1, workspace)
        turn(alone, "load the model")
        wait_for_quiet_heir(env, runtime)
        baseline: list[float] = []
        cpu_before = cpu_seconds(pid)
        for number in range(baseline_turns):
            start = time.perf_counter()
            turn(alone, f"terminal alone turn {number}", f"alone-{number}")
            baseline.append(time.perf_counter() - start)
        cpu_alone = (cpu_seconds(pid) - cpu_before) / baseline_turns
        close(alone)
        empty_kb = settled_rss(pid)
        attached: list[Terminal] = []
        for number in range(terminals):
            conn, session_id = attach(paths.socket, FIRST_FAKE_PID + number, workspace)
            attached.append(Terminal(FIRST_FAKE_PID + number, conn, session_id))
        attached_kb = settled_rss(pid)
        loaded: list[float] = []
        first_frames: list[float] = []
        spans: list[float] = []
        cpu_before = cpu_seconds(pid)
        for number in range(rounds):
            first = number * active % terminals
            group = [attached[(first + k) % terminals] for k in range(active)]
            burst = concurrent_turns(group, f"round {number}")
            loaded.extend(burst.turns)
            first_frames.extend(burst.first_frame)
            spans.append(burst.span)
        cpu_loaded = (cpu_seconds(pid) - cpu_before) / len(loaded)
        stop = stop_and_wait(runtime, pid, attached)
        for terminal in attached:
            terminal.conn.close()
        saved, problems = check_saved(Path(env["AGENT_ASSIST_HOME"]), attached)
        problems.extend(leftovers(Path(env["AGENT_ASSIST_HOME"]), RuntimePaths(runtime).log))
        raw_s = raw_writes(Path(env["AGENT_ASSIST_HOME"]))
    return ScaleResult(
        terminals=terminals,
        active=active,
        rounds=rounds,
        baseline=baseline,
        loaded=loaded,
        first_frames=first_frames,
        round_spans=spans,
        cpu_alone=cpu_alone,
        cpu_loaded=cpu_loaded,
        empty_kb=empty_kb,
        attached_kb=attached_kb,
        stop=stop,
        raw_writes_s=raw_s,
        saved=saved,
        problems=problems,
    )


def _verdict(ok: bool) -> str:
    return "within target" if ok else "OVER target"


def report(result: ScaleResult) -> list[str]:
    """The printed lines; the last one is the overall verdict."""
    ms = 1000.0
    memory_ok = result.per_terminal_kb < RSS_TARGET_KB
    overhead_p99 = percentile(result.overhead, 0.99) * ms
    turns_ok = overhead_p99 < OVERHEAD_P99_TARGET_MS
    stop_s = result.stop.exit_s
    stop_ok = stop_s < STOP_TARGET_S and result.saved == result.terminals
    closed = sorted(result.stop.closed_s) or [math.nan]
    lines = [
        f"empty supervisor (model stack loaded)   {result.empty_kb / 1024:8.1f} MB",
        f"with {result.terminals} idle terminals attached  {result.attached_kb / 1024:8.1f} MB",
        f"memory: {result.per_terminal_kb:.1f} KB per attached idle terminal "
        f"(target < {RSS_TARGET_KB:.0f} KB): {_verdict(memory_ok)}",
        f"one terminal alone, {len(result.baseline)} turns: "
        f"p50 {percentile(result.baseline, 0.5) * ms:.2f} ms, "
        f"p99 {percentile(result.baseline, 0.99) * ms:.2f} ms",
        f"{result.active} at once of {result.terminals}, {result.rounds} rounds "
        f"({len(result.loaded)} turns): p50 {percentile(result.loaded, 0.5) * ms:.2f} ms, "
        f"p99 {percentile(result.loaded, 0.99) * ms:.2f} ms",
        f"  to the first frame: p50 {percentile(result.first_frames, 0.5) * ms:.2f} ms, "
        f"p99 {percentile(result.first_frames, 0.99) * ms:.2f} ms",
        f"  one turn after the other at the one-terminal median, a burst of {result.active} "
        f"would end at p50 {percentile(result.queue_floor, 0.5) * ms:.1f} ms, "
        f"p99 {percentile(result.queue_floor, 0.99) * ms:.1f} ms",
        f"supervisor work per turn under load (round span / {result.active}): "
        f"{result.work_per_turn * ms:.2f} ms against {statistics.median(result.baseline) * ms:.2f}"
        " ms alone",
        f"supervisor CPU per turn (all its threads): {result.cpu_loaded * ms:.2f} ms under load, "
        f"{result.cpu_alone * ms:.2f} ms alone",
        f"turn overhead over the one-terminal median: "
        f"p50 {percentile(result.overhead, 0.5) * ms:.2f} ms, p99 {overhead_p99:.2f} ms "
        f"(target p99 < {OVERHEAD_P99_TARGET_MS:.0f} ms): {_verdict(turns_ok)}",
        f"after stop: {len(result.stop.closed_s)} terminals told their session was saved, "
        f"the first at {closed[0] * ms:.0f} ms, the median at {percentile(closed, 0.5) * ms:.0f}"
        f" ms, the last at {closed[-1] * ms:.0f} ms",
        f"the supervisor's CPU (all its threads) from the stop to the last session saved: "
        f"{result.stop.cpu_s:.3f} s",
        f"the same {result.terminals} files written durably by a bare loop (the disk's part): "
        f"{result.raw_writes_s:.3f} s",
        f"stop to exit with {result.saved} of {result.terminals} sessions saved whole: "
        f"{stop_s:.3f} s (target < {STOP_TARGET_S:.0f} s, all saved): {_verdict(stop_ok)}",
    ]
    lines.extend(f"  not saved: {problem}" for problem in result.problems[:10])
    over = [
        name
        for name, ok in (("memory", memory_ok), ("turn overhead", turns_ok), ("stop", stop_ok))
        if not ok
    ]
    lines.append(
        "overall: within target" if not over else f"overall: OVER target ({', '.join(over)})"
    )
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--terminals", type=int, default=500)
    parser.add_argument("--active", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--baseline-turns", type=int, default=100)
    args = parser.parse_args()
    result = run(args.terminals, args.active, args.rounds, args.baseline_turns)
    for line in report(result):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
