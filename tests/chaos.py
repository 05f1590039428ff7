"""The fault campaign: kill -9 of the terminal and of the supervisor at random points, then check.

After every cycle the checker reads every file under the state root: each must
parse, no file may have been moved aside as corrupt (a torn write), every turn
whose reply the terminal showed (acknowledged) must be on disk exactly once, and
no user message may be stored twice. At the end no temp file may be left.

Two kinds of cycle reuse a pid for real (root only, tests/e2e/pids.py):
``tab-reuse`` closes the tab with its agent-assist killed -9 and gives the
tab's pid to a new tab (no session may then be listed as held by that pid), and
``supervisor-reuse`` kills the terminal, the supervisor and its heir with -9 and
gives their pids to unrelated processes, which nothing may signal or wait for.
``tests/test_chaos.py`` runs a short campaign in CI; ``bench/chaos.py`` a long one.
"""

from __future__ import annotations

import json
import os
import queue
import random
import re
import signal
import subprocess
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from session.processes import process_alive
from tests.e2e.harness import AGENT_ASSIST, Client, Env, Terminal, running
from tests.e2e.pids import PidTaken, ReusedTerminal, stranger

PID_REUSE_KINDS = ("tab-reuse", "supervisor-reuse")

ACK_TIMEOUT_S = 30.0


WHOLE_REPLY = re.compile(r'You said: "(.*)"\. \(turn \d+ of this conversation; .*real LLM\.\)')
"""The offline model's whole reply to a message: a reply cut short by a kill -9 (its text
streamed, its turn never finished) ends its line when the terminal re-attaches, and must
not be taken for an acknowledgement."""


class WholeLinesClient(Client):
    """A terminal whose output lines count only once they are complete: a reply line ends
    when its turn has ended (after the save), or when the terminal re-attaches after a
    reply was cut short (see ``WHOLE_REPLY``)."""

    @staticmethod
    def _pump(stream: IO[str] | None, q: queue.Queue[str]) -> None:
        assert stream is not None
        for line in stream:
            if line.endswith("\n"):
                q.put(line[:-1])


@dataclass
class Report:
    cycles: int = 0
    kills: Counter[str] = field(default_factory=Counter)
    acknowledged: int = 0
    lost: list[str] = field(default_factory=list)
    duplicated: list[str] = field(default_factory=list)
    torn: list[str] = field(default_factory=list)
    unparsable: list[str] = field(default_factory=list)
    temps_left: list[str] = field(default_factory=list)
    crashes: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    misattributed: list[str] = field(default_factory=list)
    """A session held by a pid that a new process reused, or such a process signalled."""
    reuse_missed: int = 0
    """Pids another process on the machine took first (that cycle reused no pid)."""
    seconds: float = 0.0

    @property
    def clean(self) -> bool:
        return not (
            self.lost
            or self.duplicated
            or self.torn
            or self.unparsable
            or self.temps_left
            or self.crashes
            or self.hung
            or self.misattributed
        )

    def summary(self) -> dict[str, object]:
        return {
            "cycles": self.cycles,
            "kills": dict(self.kills),
            "acknowledged_turns": self.acknowledged,
            "lost": len(self.lost),
            "duplicated": len(self.duplicated),
            "torn": len(self.torn),
            "unparsable": len(self.unparsable),
            "temps_left": len(self.temps_left),
            "crashes": len(self.crashes),
            "hung": len(self.hung),
            "misattributed": len(self.misattributed),
            "reuse_missed": self.reuse_missed,
            "seconds": round(self.seconds, 1),
        }


def user_prompts(home: Path) -> Counter[str]:
    """How often each user message is stored, over every session file under ``home``."""
    counts: Counter[str] = Counter()
    for path in home.rglob("*.json"):
        if path.name.startswith(("active_", ".")) or path.parent.name != "sessions":
            continue
        try:
            data = json.loads(path.read_bytes())
        except (OSError, ValueError):
            continue
        for message in data.get("recent_messages", []):
            for part in message.get("parts", []):
                if part.get("part_kind") == "user-prompt" and isinstance(part.get("content"), str):
                    counts[part["content"]] += 1
    return counts


class Campaign:
    def __init__(self, env: Env, seed: int, weights: dict[str, float]) -> None:
        # Compaction moves older turns out of recent_messages into a summary, where the
        # checker cannot count them: the campaign checks turns, so compaction is off.
        env.extra["AGENT_ASSIST_COMPACTION_INTERVAL"] = "0"
        self.env = env
        self.rng = random.Random(seed)
        self.weights = weights
        self.report = Report()
        self.tab: Terminal = env.terminal()
        self.client: Client | None = None
        self.acked: set[str] = set()
        self.unverified: set[str] = set()
        self.missing_once: set[str] = set()
        self._supervisors_seen: set[int] = set()
        self.strangers: list[subprocess.Popen[bytes]] = []

    # -- the terminal -----------------------------------------------------

    def _spawn(self) -> Client:
        process = subprocess.Popen(
            [AGENT_ASSIST, "--yes"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            cwd=self.env.workspace,
            env=self.env.environ(self.tab),
        )
        client = WholeLinesClient(process)
        self.env.clients.append(client)
        return client

    def _drain_acks(self, client: Client, wait_for: str | None = None) -> None:
        """Read the reply lines printed so far (and until ``wait_for`` is acknowledged)."""
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while True:
            timeout = deadline - time.monotonic() if wait_for and wait_for not in self.acked else 0
            try:
                line = (
                    client.out.get(timeout=max(timeout, 0))
                    if timeout > 0
                    else client.out.get_nowait()
                )
            except queue.Empty:
                if wait_for and wait_for not in self.acked and time.monotonic() < deadline:
                    continue
                if wait_for and wait_for not in self.acked and client.process.poll() is None:
                    self.report.hung.append(f"no reply to {wait_for}")
                return
            reply = WHOLE_REPLY.search(line)
            if reply is not None:
                text = reply[1]
                if text not in self.acked:
                    self.acked.add(text)
                    self.unverified.add(text)
                    self.report.acknowledged += 1

    def _check_exit(self, client: Client, killed: bool) -> None:
        code = client.process.poll()
        errors = "\n".join(client.drain_stderr())
        if "Traceback" in errors:
            self.report.crashes.append(f"terminal traceback: {errors[-500:]}")
        if code not in (None, 0, -signal.SIGKILL) and not killed:
            self.report.crashes.append(f"terminal exited {code}: {errors[-300:]}")

    # -- the supervisor -----------------------------------------------------

    def _kill_supervisor(self) -> None:
        pid = self.env.supervisor_pid()
        if pid is None or not process_alive(pid) or not self.env.ours(pid):
            return
        os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 10
        while process_alive(pid):
            if time.monotonic() > deadline:
                self.report.hung.append(f"supervisor {pid} survived SIGKILL")
                return
            time.sleep(0.005)

    # -- pid reuse ------------------------------------------------------------

    def _reuse_tab_pid(self) -> None:
        """The tab closes (its agent-assist was killed -9); a new tab gets the tab's pid and
        becomes the campaign's tab. The closed tab's session is no longer held by that pid:
        neither idle there nor offered as this new tab's own (it is the newest orphan)."""
        pid = self.tab.pid
        self.tab.close()
        try:
            self.tab = ReusedTerminal(pid)
        except PidTaken:
            self.report.reuse_missed += 1
            self.tab = Terminal()
        self.env.terminals.append(self.tab)
        listed = self.env.run("sessions", "--json")
        if listed.returncode != 0:
            self.report.crashes.append(f"sessions --json: {listed.stderr.strip()}")
            return
        for row in json.loads(listed.stdout):
            if row["state"] == "idle" and row["terminal_pid"] == pid:
                self.report.misattributed.append(f"{row['session_id']} idle in new tab {pid}")

    def _reuse_supervisor_pids(self) -> None:
        """Kill the supervisor and its heir with -9 and give their pids to strangers; the
        next terminal finds pid files that name them."""
        env = self.env
        pids = [
            p for p in (env.supervisor_pid(), env.heir_pid()) if p and running(p) and env.ours(p)
        ]
        env.kill_supervisor_and_heir()
        for pid in pids:
            try:
                self.strangers.append(stranger(pid))
            except PidTaken:
                self.report.reuse_missed += 1

    def _check_strangers(self) -> None:
        for process in self.strangers:
            if process.poll() is not None:
                self.report.misattributed.append(f"stranger {process.pid} was signalled")
        self.strangers = [p for p in self.strangers if p.poll() is None]

    def _wait_for_retry(self, client: Client, text: str) -> None:
        """After the supervisor alone was killed: until ``text`` is on disk. A reply cut
        short by the kill still ends its line (before the notice that follows it), so the
        line can come before the terminal's re-sent message has landed; a kill of the
        terminal in the next cycle would then cut that retry short as an in-flight turn and
        the checker would count a turn that was never saved as lost."""
        deadline = time.monotonic() + ACK_TIMEOUT_S
        while user_prompts(self.env.home)[text] == 0:
            if client.process.poll() is not None or time.monotonic() > deadline:
                return  # the checks that follow tell a crash or a lost turn
            time.sleep(0.01)

    # -- the checker ----------------------------------------------------------

    def check(self, final: bool = False) -> None:
        home = self.env.home
        for path in home.rglob("*"):
            if ".corrupt-" in path.name:
                self.report.torn.append(str(path))
            elif path.suffix == ".json" and path.is_file():
                try:
                    json.loads(path.read_bytes())
                except ValueError:
                    self.report.unparsable.append(str(path))
            elif final and path.name.endswith(".tmp"):
                self.report.temps_left.append(str(path))
        counts = user_prompts(home)
        for text in sorted(self.unverified):
            if counts[text] == 0 and (final or text in self.missing_once):
                self.report.lost.append(text)
            elif counts[text] == 0:
                # A reply cut short by a supervisor's death still ends its line (before
                # the notice that follows it); the terminal then re-sends the message and
                # its turn lands a moment later. Missing at two checks in a row is lost.
                self.missing_once.add(text)
                continue
            self.missing_once.discard(text)
            self.unverified.discard(text)
        for text, count in counts.items():
            if count > 1 and text not in self.report.duplicated:
                self.report.duplicated.append(text)

    # -- the run ----------------------------------------------------------------

    def cycle(self, n: int) -> None:
        if self.client is None or self.client.process.poll() is not None:
            if self.client is not None:
                self._check_exit(self.client, killed=False)
            self.client = self._spawn()
        client = self.client
        text = f"m{n:05d}"
        client.send(text)
        action = self.rng.choices(list(self.weights), weights=list(self.weights.values()))[0]
        self.report.kills[action] += 1
        if action == "none":
            self._drain_acks(client, wait_for=text)
        else:
            # Half the kills land within the few milliseconds a turn takes (the window
            # between "saved" and "acknowledged"), half anywhere in a quarter second.
            short = self.rng.random() < 0.5
            time.sleep(self.rng.uniform(0, 0.012 if short else 0.25))
            if action in ("terminal", "both", *PID_REUSE_KINDS):
                client.kill9()
            if action in ("supervisor", "both"):
                self._kill_supervisor()
            if action == "supervisor-reuse":
                self._reuse_supervisor_pids()
            if action == "tab-reuse":
                self._reuse_tab_pid()
            if action in ("terminal", "both", *PID_REUSE_KINDS):
                time.sleep(0.05)  # the pump threads hand over what was printed
                self._drain_acks(client)
                self._check_exit(client, killed=True)
                self.client = None
            else:
                self._drain_acks(client, wait_for=text)  # re-attaches, then answers
                self._wait_for_retry(client, text)
        self.check()
        self._check_strangers()
        self.report.cycles += 1

    def finish(self) -> Report:
        if self.client is not None and self.client.process.poll() is None:
            self.client.close_stdin()
            try:
                self.client.wait(60)
            except Exception:
                self.report.hung.append("the last terminal did not exit")
            self._drain_acks(self.client)
            self._check_exit(self.client, killed=False)
        stop = self.env.run("supervisor", "stop")
        if stop.returncode != 0:
            self.report.crashes.append(f"supervisor stop: {stop.stderr.strip()}")
        # Consume any temp left by a kill: the next write of each file reuses its name.
        final = self.env.run("--yes", input="final\n", terminal=self.tab)
        if final.returncode != 0:
            self.report.crashes.append(f"final run exited {final.returncode}: {final.stderr}")
        self.env.run("supervisor", "stop")
        self.check(final=True)
        self._check_strangers()
        return self.report


def run_campaign(env: Env, cycles: int, seed: int, weights: dict[str, float]) -> Report:
    started = time.monotonic()
    campaign = Campaign(env, seed, weights)
    try:
        for n in range(cycles):
            campaign.cycle(n)
        report = campaign.finish()
    finally:
        for process in campaign.strangers:
            process.kill()
            process.wait()
    report.seconds = time.monotonic() - started
    return report
