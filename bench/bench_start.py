"""Cold start and re-attach after a supervisor crash, as a user at a terminal feels them.

Cold start: the time from running ``agent-assist --new`` in a pseudo-terminal
to its prompt (``> `` drawn by prompt_toolkit) with no supervisor running,
against the warm start (the same command, the supervisor already running),
measured in pairs in the same run. Target: within 3x.

Re-attach: a piped ``agent-assist`` converses; the supervisor is killed with
SIGKILL; the clock starts at the kill, the next message is sent at once, and
it stops when the reply's line arrives (the terminal noticed, started a new
supervisor, re-attached, restored the session and the turn was answered).
Target: p99 under 1 s over ``--kills`` kills. With the heir on, each kill
waits until the heir is loaded and waiting (``heir.pid``: a fresh heir imports
the model stack for about a second after each takeover); the heir's and the
supervisor's resident memory are read then.

    python -m bench.bench_start [--rounds N] [--kills N] [--no-heir]
"""

from __future__ import annotations

import argparse
import contextlib
import os
import pty
import select
import shutil
import signal
import statistics
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from bench.common import AGENT_ASSIST, median_ms

START_TARGET_RATIO = 3.0
REATTACH_TARGET_S = 1.0
PROMPT = b">"  # prompt_toolkit draws "> " with attributes between
TIMEOUT_S = 30.0


EXTRA_ENV: dict[str, str] = {}
"""Set from the command line (``--no-heir``)."""


@contextlib.contextmanager
def private_environment() -> Iterator[tuple[dict[str, str], Path, Path]]:
    """(environment, workspace, runtime dir) with no supervisor yet; any started is stopped."""
    base = Path(tempfile.mkdtemp(prefix="aa-bench-start-"))
    workspace = base / "ws"
    workspace.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("AGENT_ASSIST_")}
    env.update(
        AGENT_ASSIST_HOME=str(base / "home"),
        AGENT_ASSIST_RUNTIME_DIR=str(base / "run"),
        TERM="xterm",
        PROMPT_TOOLKIT_NO_CPR="1",
    )
    env.update(EXTRA_ENV)
    try:
        yield env, workspace, base / "run"
    finally:
        stop_supervisor(env, base / "run")
        shutil.rmtree(base, ignore_errors=True)


def supervisor_pid(runtime: Path) -> int | None:
    try:
        return int((runtime / "supervisor.pid").read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    """Running: not gone, and not a zombie its parent (the chat that started it, which
    reaps it when it next connects) has yet to reap."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def wait_gone(pid: int) -> None:
    deadline = time.monotonic() + TIMEOUT_S
    while alive(pid):
        if time.monotonic() > deadline:
            raise RuntimeError(f"process {pid} did not exit")
        time.sleep(0.002)


def stop_supervisor(env: dict[str, str], runtime: Path) -> None:
    pid = supervisor_pid(runtime)
    subprocess.run([AGENT_ASSIST, "supervisor", "stop"], env=env, capture_output=True, check=False)
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            wait_gone(pid)


def time_to_prompt(env: dict[str, str], workspace: Path) -> float:
    """Seconds from exec of ``agent-assist --new`` in a pty to its prompt; then Ctrl+D."""
    start = time.perf_counter()
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - the child
        os.chdir(workspace)
        os.execve(AGENT_ASSIST, [AGENT_ASSIST, "--new"], env)
    seen = b""
    elapsed = 0.0
    try:
        while True:
            ready, _, _ = select.select([fd], [], [], TIMEOUT_S)
            if not ready:
                raise RuntimeError(f"no prompt within {TIMEOUT_S} s; saw {seen[-300:]!r}")
            try:
                chunk = os.read(fd, 4096)
            except OSError as exc:
                raise RuntimeError(f"agent-assist ended before its prompt: {seen!r}") from exc
            seen += chunk
            if b"New session" in seen and PROMPT in seen.split(b"New session", 1)[1]:
                elapsed = time.perf_counter() - start
                break
        os.write(fd, b"\x04")
        deadline = time.monotonic() + TIMEOUT_S
        while time.monotonic() < deadline:  # drain until it exits
            ready, _, _ = select.select([fd], [], [], 0.1)
            if ready:
                try:
                    if not os.read(fd, 4096):
                        break
                except OSError:
                    break
            elif os.waitpid(pid, os.WNOHANG)[0]:
                pid = 0
                break
    finally:
        os.close(fd)
        if pid:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)
    return elapsed


def measure_start(rounds: int) -> tuple[list[float], list[float]]:
    cold: list[float] = []
    warm: list[float] = []
    with private_environment() as (env, workspace, runtime):
        time_to_prompt(env, workspace)  # page cache, .pyc files
        stop_supervisor(env, runtime)
        for _ in range(rounds):
            cold.append(time_to_prompt(env, workspace))
            warm.append(time_to_prompt(env, workspace))
            stop_supervisor(env, runtime)
    return cold, warm


def read_reply(process: subprocess.Popen[bytes]) -> bytes:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], TIMEOUT_S)
    if not ready:
        raise RuntimeError(f"no reply within {TIMEOUT_S} s")
    line = process.stdout.readline()
    if not line:
        raise RuntimeError("agent-assist ended instead of answering")
    return line


def heir_pid(runtime: Path) -> int | None:
    try:
        return int((runtime / "heir.pid").read_text())
    except (OSError, ValueError):
        return None


def wait_for_heir(runtime: Path) -> int:
    """The pid of the heir once it is loaded and waiting on the lock."""
    deadline = time.monotonic() + TIMEOUT_S
    while (pid := heir_pid(runtime)) is None or not alive(pid):
        if time.monotonic() > deadline:
            raise RuntimeError("no heir is waiting")
        time.sleep(0.002)
    return pid


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


RSS: dict[str, list[float]] = {"supervisor": [], "heir": []}
"""Resident memory (MB) of the supervisor and of its waiting heir, read before each kill."""


def measure_reattach(kills: int) -> list[float]:
    samples: list[float] = []
    with private_environment() as (env, workspace, runtime):
        process = subprocess.Popen(
            [AGENT_ASSIST, "--new"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=workspace,
            env=env,
        )
        assert process.stdin is not None
        try:
            process.stdin.write(b"the first message\n")
            process.stdin.flush()
            read_reply(process)
            for number in range(kills):
                pid = supervisor_pid(runtime)
                assert pid is not None
                if "AGENT_ASSIST_HEIR" not in EXTRA_ENV:
                    RSS["heir"].append(rss_mb(wait_for_heir(runtime)))
                    RSS["supervisor"].append(rss_mb(pid))
                start = time.perf_counter()
                os.kill(pid, signal.SIGKILL)
                process.stdin.write(f"message {number} after a crash\n".encode())
                process.stdin.flush()
                reply = read_reply(process)
                samples.append(time.perf_counter() - start)
                if b"[offline model]" not in reply:
                    raise RuntimeError(f"unexpected reply: {reply!r}")
                wait_gone(pid)
        finally:
            process.stdin.close()
            process.wait(TIMEOUT_S)
    return samples


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--kills", type=int, default=50)
    parser.add_argument(
        "--no-heir", action="store_true", help="AGENT_ASSIST_HEIR=0: a crash starts a new one"
    )
    args = parser.parse_args()
    if args.no_heir:
        EXTRA_ENV["AGENT_ASSIST_HEIR"] = "0"
    cold, warm = measure_start(args.rounds)
    reattach = measure_reattach(args.kills)
    ratio = median_ms(cold) / median_ms(warm)
    p99 = percentile(reattach, 0.99)
    print(f"warm start to prompt (limit)  {median_ms(warm):7.1f} ms   ({args.rounds} rounds)")
    print(f"cold start to prompt          {median_ms(cold):7.1f} ms")
    print(
        f"re-attach, kill -9 to the next reply: median {statistics.median(reattach) * 1000:.0f} ms,"
        f" p99 {p99 * 1000:.0f} ms, max {max(reattach) * 1000:.0f} ms over {len(reattach)} kills"
        f" (target p99 < {REATTACH_TARGET_S * 1000:.0f} ms:"
        f" {'within' if p99 < REATTACH_TARGET_S else 'OVER'} target)"
    )
    if RSS["heir"]:
        print(
            f"resident memory: supervisor median {statistics.median(RSS['supervisor']):.0f} MB,"
            f" its waiting heir median {statistics.median(RSS['heir']):.0f} MB"
            f" (max {max(RSS['heir']):.0f} MB)"
        )
    verdict = "within" if ratio <= START_TARGET_RATIO and p99 < REATTACH_TARGET_S else "OVER"
    print(
        f"cold/warm ratio {ratio:.2f}x (target <= {START_TARGET_RATIO}x), "
        f"re-attach p99 {p99 * 1000:.0f} ms (target < {REATTACH_TARGET_S * 1000:.0f} ms): "
        f"{verdict} target"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
