"""Drives the real ``agent-assist`` command and the real supervisor in private directories."""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from session.models import is_session_id
from session.paths import sessions_dir

AGENT_ASSIST = str(Path(sys.executable).with_name("agent-assist"))
PATH_WITH_AGENT_ASSIST = f"{os.path.dirname(AGENT_ASSIST)}{os.pathsep}{os.environ['PATH']}"
"""``PATH`` with this installation's ``agent-assist`` first: what a shell's script runs."""
HEIR = "supervisor.heir"
DEFAULT_TIMEOUT = 30.0


def running(pid: int) -> bool:
    """Whether ``pid`` is a process that has not exited (zombies have)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            return stat.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except (OSError, IndexError):
        return False


def wait_for(predicate: Callable[[], Any], timeout: float = DEFAULT_TIMEOUT, what: str = "") -> Any:
    """Poll ``predicate`` until it returns something truthy (for outside processes only)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        time.sleep(0.01)


class Terminal:
    """A stand-in for a terminal tab's shell: a process whose pid identifies the terminal."""

    def __init__(self) -> None:
        self.process = subprocess.Popen(["sleep", "3600"])
        self.pid = self.process.pid

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()


class Client:
    """A running ``agent-assist`` with piped stdin; stdout and stderr are read by threads."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.out: queue.Queue[str] = queue.Queue()
        self.err: queue.Queue[str] = queue.Queue()
        self.stdout_lines: list[str] = []
        self.stderr_lines: list[str] = []
        self._pumps = [
            threading.Thread(target=self._pump, args=(stream, q), daemon=True)
            for stream, q in ((process.stdout, self.out), (process.stderr, self.err))
        ]
        for pump in self._pumps:
            pump.start()

    @staticmethod
    def _pump(stream: IO[str] | None, q: queue.Queue[str]) -> None:
        assert stream is not None
        for line in stream:
            q.put(line.rstrip("\n"))

    def send(self, line: str) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()

    def expect(self, needle: str, timeout: float = DEFAULT_TIMEOUT, stderr: bool = False) -> str:
        q, seen = (self.err, self.stderr_lines) if stderr else (self.out, self.stdout_lines)
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                other = self.drain_stderr() if not stderr else self.stdout_lines
                raise AssertionError(
                    f"did not see {needle!r}; saw {seen[-10:]}; the other stream's last lines:"
                    f" {other[-10:]}; exit status {self.process.poll()}"
                )
            try:
                line = q.get(timeout=remaining)
            except queue.Empty:
                continue
            seen.append(line)
            if needle in line:
                return line

    def close_stdin(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()

    def wait(self, timeout: float = DEFAULT_TIMEOUT) -> int:
        return self.process.wait(timeout)

    def kill9(self) -> None:
        self.process.send_signal(signal.SIGKILL)
        self.process.wait()

    def read_to_the_end(self, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Wait until the reader threads have taken every line the process printed (its
        stdout and stderr closed: it has exited); a pause after the exit let a loaded
        machine's threads fall behind."""
        deadline = time.monotonic() + timeout
        for pump in self._pumps:
            pump.join(max(0.0, deadline - time.monotonic()))
            if pump.is_alive():
                raise AssertionError("the process's output did not end")

    def drain_stderr(self) -> list[str]:
        with contextlib.suppress(queue.Empty):
            while True:
                self.stderr_lines.append(self.err.get_nowait())
        return self.stderr_lines


@dataclass
class Env:
    base: Path
    home: Path
    runtime: Path
    workspace: Path
    extra: dict[str, str] = field(default_factory=dict)
    terminals: list[Terminal] = field(default_factory=list)
    clients: list[Client] = field(default_factory=list)

    @classmethod
    def create(cls) -> Env:
        base = Path(tempfile.mkdtemp(prefix="aa-"))
        env = cls(base, base / "home", base / "run", base / "ws")
        env.workspace.mkdir()
        return env

    def environ(self, terminal: Terminal | None = None, **extra: str) -> dict[str, str]:
        environ = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("AGENT_ASSIST_", "OPENAI_")) and k != "XDG_RUNTIME_DIR"
        }
        environ.update(AGENT_ASSIST_HOME=str(self.home), AGENT_ASSIST_RUNTIME_DIR=str(self.runtime))
        environ.update(self.extra)
        if terminal is not None:
            environ["AGENT_ASSIST_TERMINAL_PID"] = str(terminal.pid)
        environ.update(extra)
        return environ

    def terminal(self) -> Terminal:
        term = Terminal()
        self.terminals.append(term)
        return term

    def run(
        self,
        *args: str,
        input: str | None = None,
        terminal: Terminal | None = None,
        timeout: float = 60,
        cwd: Path | None = None,
        **extra: str,
    ) -> subprocess.CompletedProcess[str]:
        """``agent-assist ARGS`` in the workspace (or ``cwd``), with ``extra`` variables."""
        return subprocess.run(
            [AGENT_ASSIST, *args],
            input=input if input is not None else "",
            text=True,
            capture_output=True,
            cwd=cwd or self.workspace,
            env=self.environ(terminal, **extra),
            timeout=timeout,
            check=False,
        )

    def shell(self, *argv: str, **extra: str) -> subprocess.CompletedProcess[str]:
        """The shell command ``argv`` (one running the completion script the product emits)
        in the workspace, ``PATH_WITH_AGENT_ASSIST``, with ``extra`` variables; its failure
        fails the test."""
        return subprocess.run(
            argv,
            capture_output=True,
            text=True,
            cwd=self.workspace,
            env=self.environ(None, PATH=PATH_WITH_AGENT_ASSIST, **extra),
            timeout=60,
            check=True,
        )

    def faults(self) -> Path:
        """The faults file (``AGENT_ASSIST_FAULT_FILE``) the processes started from now on
        read (not made yet)."""
        fault_file = self.base / "faults"
        self.extra["AGENT_ASSIST_FAULT_FILE"] = str(fault_file)
        return fault_file

    def spawn(self, *args: str, terminal: Terminal | None = None, **extra: str) -> Client:
        process = subprocess.Popen(
            [AGENT_ASSIST, *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            bufsize=1,
            cwd=self.workspace,
            env=self.environ(terminal, **extra),
        )
        client = Client(process)
        self.clients.append(client)
        return client

    @property
    def project(self) -> Path:
        return sessions_dir(self.workspace, self.home)

    def session_ids(self) -> list[str]:
        if not self.project.is_dir():
            return []
        return sorted(p.stem for p in self.project.glob("*.json") if is_session_id(p.stem))

    def session(self, session_id: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.project / f"{session_id}.json").read_bytes())
        return data

    def settled(self, session_id: str) -> Path:
        """The session's file once the summary written after its terminal left has
        landed: a test that edits the file must not race that second write."""
        wait_for(lambda: self.session(session_id).get("summary"), what="the summary write")
        return self.project / f"{session_id}.json"

    def sessions_json(self, *flags: str) -> list[dict[str, Any]]:
        result = self.run("sessions", "--json", *flags)
        assert result.returncode == 0, result.stderr
        rows: list[dict[str, Any]] = json.loads(result.stdout)
        return rows

    def supervisor_pid(self) -> int | None:
        try:
            return int((self.runtime / "supervisor.pid").read_text())
        except (OSError, ValueError):
            return None

    def heir_pid(self) -> int | None:
        try:
            return int((self.runtime / "heir.pid").read_text())
        except (OSError, ValueError):
            return None

    def watching(self, directory: Path) -> bool:
        """Whether the supervisor has an inotify watch on ``directory`` as it is now (its
        device and inode, in ``/proc/PID/fdinfo``): the moment an edit there gives the file
        watcher an event, instead of a pause that a loaded machine outlasts."""
        pid = self.supervisor_pid()
        try:
            info = directory.stat()
        except OSError:
            return False
        if pid is None:
            return False
        device = (os.major(info.st_dev) << 20) | os.minor(info.st_dev)  # the kernel's form
        wanted = f" ino:{info.st_ino:x} sdev:{device:x} "
        try:
            fds = list(Path(f"/proc/{pid}/fd").iterdir())
        except OSError:
            return False
        for fd in fds:
            with contextlib.suppress(OSError):
                if os.readlink(fd) == "anon_inode:inotify" and wanted in (
                    Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text()
                ):
                    return True
        return False

    def ours(self, pid: int) -> bool:
        """Whether ``pid`` runs with this environment's runtime directory: a pid file left by a
        killed supervisor may name an unrelated process that reused the number, never to be
        signalled (where /proc cannot tell, the pid is trusted)."""
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except FileNotFoundError:
            return False
        except OSError:
            return True
        return f"AGENT_ASSIST_RUNTIME_DIR={self.runtime}".encode() in environ

    def kill_supervisor_and_heir(self) -> None:
        """SIGKILL the supervisor and its heir (which would otherwise take over): their
        process group when it is their own, and each by pid until none is left."""
        pid = self.supervisor_pid()
        with contextlib.suppress(ProcessLookupError):
            if pid is not None and self.ours(pid) and os.getpgid(pid) != os.getpgrp():
                os.killpg(os.getpgid(pid), signal.SIGKILL)
        deadline = time.monotonic() + DEFAULT_TIMEOUT
        while time.monotonic() < deadline:
            alive = [
                p
                for p in (self.heir_pid(), self.supervisor_pid())
                if p and running(p) and self.ours(p)
            ]
            if not alive:
                return
            for pid in alive:  # the heir first
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)

    def processes(self) -> dict[int, tuple[str, ...]]:
        """Every process running with this environment's runtime directory: its argv.

        A process whose memory is gone (a zombie, or one exiting) has an empty
        command line and runs no more code: it is left out. The command line is
        read first, so a process that exits between the two reads is left out too
        rather than listed with no argv (CI once failed a test on ``17258 ()``: a
        process of the environment exiting during the teardown's scan)."""
        mark = f"AGENT_ASSIST_RUNTIME_DIR={self.runtime}".encode()
        found = {}
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == os.getpid():
                continue
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            except OSError:  # gone, or not ours to read
                continue
            if mark in environ and any(argv):
                found[int(entry)] = tuple(os.fsdecode(arg) for arg in argv if arg)
        return found

    def left_running(self) -> list[str]:
        """The processes of this environment the test left running that its cleanup does
        not stop on purpose (its supervisors and heirs, its terminals, the clients it
        spawned): a chat left running outlives its supervisor's kill by a moment, and
        starts a new one that the cleanup may miss (H185: two were found after a suite)."""
        known = {t.pid for t in self.terminals} | {c.process.pid for c in self.clients}
        return [
            f"{pid} ({' '.join(argv)})"
            for pid, argv in self.processes().items()
            if pid not in known and argv[-2:] != ("supervisor", "run") and HEIR not in argv
        ]

    def kill_the_rest(self) -> None:
        """SIGKILL every other process running with this environment's runtime directory,
        scanning ``/proc`` again until none is left: one that a process killed in a scan
        started meanwhile (a chat starting a supervisor it found gone) is in the next."""
        deadline = time.monotonic() + DEFAULT_TIMEOUT
        while (rest := self.processes()) and time.monotonic() < deadline:
            for pid in rest:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)

    def cleanup(self) -> list[str]:
        """Stop every process of this environment and remove its directories; what
        ``left_running`` found before, for the test to fail with."""
        for client in self.clients:
            if client.process.poll() is None:
                client.process.kill()
                client.process.wait()
        left = self.left_running()
        self.kill_supervisor_and_heir()
        self.kill_the_rest()
        for term in self.terminals:
            term.close()
        shutil.rmtree(self.base, ignore_errors=True)
        return left


def files_holding(env: Env, needle: str) -> list[str]:
    """Every file under the state root and the runtime directory that holds ``needle``, by
    its path under the environment's base."""
    return [
        str(path.relative_to(env.base))
        for path, data in all_text_under(env.home, env.runtime)
        if needle.encode() in data
    ]


LONG = "lorem ipsum dolor sit amet " * 200
"""About 5,400 characters: fifteen turns of it are over a 4,000-token budget."""


def uncompacted_session(env: Env, first: str = "") -> str:
    """A session whose file holds ``first`` (a line, if given) then 15 long turns, none
    compacted (made with compaction off and a large budget, as an older version or a
    larger budget before would); the supervisor is stopped after it, so the next chat's
    settings are its own."""
    lines = first + "".join(f"turn {n}: Always cite docs/t{n}.md. {LONG}\n" for n in range(1, 16))
    result = env.run(
        "--new",
        input=lines,
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
        AGENT_ASSIST_CONTEXT_TOKENS="1000000",
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert env.session(session_id)["compacted_history_summary"] is None
    assert env.run("supervisor", "stop").returncode == 0
    return session_id


def all_text_under(*roots: Path) -> Iterator[tuple[Path, bytes]]:
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink() and not path.is_socket():
                yield path, path.read_bytes()


def outside_notices(client: Client, what: str, listed: str, how: str = "changed") -> None:
    """Wait for a new notice of an outside change naming ``what`` (``how``: changed or
    deleted; piped, a notice comes out with the next command's answer: ``/checkpoint``'s,
    which shows ``listed``). One told before the call does not count: a second wait for
    the same file passed at once on the first one's notice (H79)."""
    notice = f"note: {what} {how} outside agent-assist"
    before = client.drain_stderr().count(notice)

    def noticed() -> bool:
        client.send("/checkpoint")
        client.expect(listed, stderr=True)
        return client.drain_stderr().count(notice) > before

    wait_for(noticed, what=f"the notice of {what}")
