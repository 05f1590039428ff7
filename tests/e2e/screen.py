"""The real ``agent-assist`` in a pty (pexpect), read like a screen with escape codes removed."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pexpect

from tests.e2e.harness import AGENT_ASSIST, Env, Terminal

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]|\r|\x08")
CTRL_C = "\x03"
CTRL_D = "\x04"
ALT_ENTER = "\x1b\r"
UP = "\x1b[A"


class Screen:
    """``expect`` waits for text after the previous match, ignoring escape codes."""

    def __init__(
        self,
        env: Env,
        terminal: Terminal,
        *args: str,
        cpr: bool = False,
        extra: dict[str, str] | None = None,
        stdout_to: Path | None = None,
    ) -> None:
        """With ``cpr`` the screen answers cursor position requests, as a real terminal
        does (prompt_toolkit then draws its bottom toolbar). With ``stdout_to`` the
        program's stdout goes to that file (stdin and stderr stay on the screen)."""
        environ = env.environ(terminal, TERM="xterm", COLUMNS="120", LINES="40")
        if not cpr:
            environ["PROMPT_TOOLKIT_NO_CPR"] = "1"
        self.cpr = cpr
        environ.update(extra or {})
        command, argv = AGENT_ASSIST, list(args)
        if stdout_to is not None:
            command, argv = "/bin/sh", ["-c", 'exec "$0" "$@" > "$OUT"', AGENT_ASSIST, *args]
            environ["OUT"] = str(stdout_to)
        self.child = pexpect.spawn(
            command,
            argv,
            cwd=str(env.workspace),
            env=environ,
            dimensions=(40, 120),
            encoding="utf-8",
            codec_errors="replace",
        )
        self.raw = ""
        self.position = 0

    @property
    def text(self) -> str:
        return ANSI.sub("", self.raw)

    def expect(self, needle: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while (found := self.text.find(needle, self.position)) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(f"did not see {needle!r} in {self.text[-800:]!r}")
            try:
                chunk = self.child.read_nonblocking(65536, timeout=min(remaining, 1.0))
            except pexpect.TIMEOUT:
                continue
            except pexpect.EOF:
                raise AssertionError(
                    f"the program ended before {needle!r}: {self.text[-800:]!r}"
                ) from None
            self.raw += chunk
            if self.cpr:
                for _ in range(chunk.count("\x1b[6n")):
                    self.child.send("\x1b[1;1R")
        self.position = found + len(needle)

    def expect_prompt(self) -> None:
        self.expect(">")

    def type(self, keys: str) -> None:
        self.child.send(keys)

    def wait(self, timeout: float = 30.0) -> int:
        """Read to the end and return the exit status."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.raw += self.child.read_nonblocking(65536, timeout=1.0)
            except pexpect.TIMEOUT:
                if time.monotonic() > deadline:
                    raise AssertionError(f"still running: {self.text[-800:]!r}") from None
            except pexpect.EOF:
                break
        self.child.wait()
        status = self.child.exitstatus
        assert status is not None, f"killed by signal {self.child.signalstatus}"
        return int(status)

    def close(self) -> None:
        if self.child.isalive():
            self.child.terminate(force=True)
