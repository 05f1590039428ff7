"""Ctrl+L in a real tmux: the screen is cleared and what tmux keeps of it in its scrollback
is the conversation, no stale toolbar."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import AGENT_ASSIST, Env, running, wait_for

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


class Tmux:
    """A tmux server of the test's own (its socket in a private directory)."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket

    def __call__(self, *args: str) -> str:
        command = ["tmux", "-S", str(self.socket), *args]
        return subprocess.run(command, capture_output=True, text=True, check=True).stdout

    def scrollback(self) -> str:
        return self("capture-pane", "-p", "-S", "-200", "-t", "chat")

    def cleared(self) -> bool:
        """The screen (not its scrollback) holds the prompt and its toolbar alone."""
        rows = [row for row in self("capture-pane", "-p", "-t", "chat").splitlines() if row]
        return len(rows) == 2 and rows[0].startswith(">") and rows[1].endswith("(/help)")

    def shows(self, text: str) -> bool:
        return text in self.scrollback()

    def answered(self, text: str) -> None:
        """Send ``text`` and wait for the offline model's reply to it."""
        self("send-keys", "-t", "chat", text, "Enter")
        wait_for(lambda: self.shows(f'You said: "{text}"'), what="the reply")


@pytest.fixture
def tmux(env: Env) -> Iterator[Tmux]:
    """A tmux server, killed at the end with the programs of its panes: a chat left saving
    after its pane's hang-up outlived its supervisor's kill and started another (H185)."""
    server = Tmux(env.base / "tmux.sock")
    yield server
    command = ["tmux", "-S", str(server.socket), "list-panes", "-a", "-F", "#{pane_pid}"]
    listed = subprocess.run(command, capture_output=True, text=True, check=False)
    pids = [int(pid) for pid in listed.stdout.split()]  # none if gone already
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(map(running, pids)), what="the panes' programs to end")
    command = ["tmux", "-S", str(server.socket), "kill-server"]
    subprocess.run(command, capture_output=True, check=False)  # gone already: nothing to do


def test_ctrl_l_leaves_no_stale_toolbar_in_tmux_s_scrollback(env: Env, tmux: Tmux) -> None:
    """H108's find: after Ctrl+L the prompt was drawn on the first row, and each redraw of
    it began with an erase down from the top-left corner, which tmux takes for a clear
    screen and keeps in its scrollback, toolbar and blank rows included."""
    environ = env.environ(env.terminal()).items()
    assigned = " ".join(f"{k}='{v}'" for k, v in environ if k.startswith(("AGENT_", "PATH")))
    chat = f"env {assigned} {AGENT_ASSIST} --new"
    tmux("-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "15", "-s", "chat")
    tmux("respawn-pane", "-k", "-t", "chat", "-c", str(env.workspace), chat)
    wait_for(lambda: tmux.shows("(/help)"), what="the chat's prompt")
    tmux.answered("first message")
    tmux.answered("second message")
    for text in ("after one clear", "after two clears"):
        tmux("send-keys", "-t", "chat", "C-l")
        wait_for(tmux.cleared, what="the screen cleared")
        tmux.answered(text)
    wait_for(lambda: tmux.scrollback().rstrip().endswith("(/help)"), what="the toolbar")
    kept = tmux.scrollback().rstrip()
    assert kept.count("(/help)") == 1, kept  # the toolbar of the prompt on the screen
