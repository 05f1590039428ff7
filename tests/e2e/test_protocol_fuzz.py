"""Protocol fuzzer: thousands of crafted frames on many connections while a real terminal chats.

The supervisor must answer every frame or close the connection, never crash, never
answer ``internal``, and the legitimate conversation must go on untouched.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from supervisor.wire import PROTOCOL_VERSION
from tests.e2e.harness import Env

EXAMPLES = int(os.environ.get("AGENT_ASSIST_FUZZ_EXAMPLES", "1000"))
"""Per round (two rounds): 1,000 examples make about 10,000 frames in all."""
FRAME_TYPES = [
    "hello",
    "open",
    "user_message",
    "cancel",
    "command",
    "close",
    "confirm_reply",
    "list_sessions",
    "show_session",
    "remove_session",
    "prune_sessions",
    "status",
]  # "stop" is left out: it is obeyed, by design

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | st.text(max_size=30)
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)
field_names = st.sampled_from(
    [
        "protocol",
        "role",
        "client_pid",
        "terminal_pid",
        "workspace",
        "model",
        "mode",
        "session_id",
        "text",
        "id",
        "name",
        "arg",
        "answer",
        "all",
        "older_than_days",
        "dry_run",
    ]
)


def frames(workspace: str) -> st.SearchStrategy[bytes]:
    plausible = {
        "protocol": st.sampled_from([PROTOCOL_VERSION, 0, 2]) | values,
        "role": st.sampled_from(["terminal", "control"]) | values,
        "client_pid": st.integers(min_value=-1, max_value=2**40) | values,
        "terminal_pid": st.integers(min_value=-1, max_value=2**40) | values,
        "workspace": st.sampled_from([workspace, "/", "relative", "/nonexistent", ""]) | values,
        "mode": st.sampled_from(["new", "resume"]) | values,
        "session_id": st.sampled_from(["aaaaaaaaaaaa", "../x", ""]) | values,
        "text": st.text(max_size=50) | values,
        "name": st.sampled_from(["save", "reset", "checkpoint", "compact", "resume"]) | values,
    }

    @st.composite
    def one(draw: st.DrawFn) -> bytes:
        kind = draw(st.sampled_from(["typed", "typed", "typed", "json", "bytes"]))
        if kind == "bytes":
            return draw(st.binary(max_size=80)).replace(b"\n", b" ") + b"\n"
        if kind == "json":
            return json.dumps(draw(values)).encode() + b"\n"
        frame: dict[str, Any] = {"type": draw(st.sampled_from(FRAME_TYPES))}
        for name in draw(st.lists(field_names, max_size=5, unique=True)):
            frame[name] = draw(plausible.get(name, values))
        return json.dumps(frame).encode() + b"\n"

    return one()


def exchange(path: Path, payload: list[bytes]) -> list[dict[str, Any]]:
    """Send the frames, say end-of-stream, read until the supervisor closes (10 s at most)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(10)
        sock.connect(str(path))
        try:
            sock.sendall(b"".join(payload))
            sock.shutdown(socket.SHUT_WR)
        except (BrokenPipeError, ConnectionResetError):
            pass
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except ConnectionResetError:
                break
            if not chunk:
                break
            data += chunk
    return [json.loads(line) for line in data.splitlines() if line.strip()]


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


class Chatter(threading.Thread):
    """A legitimate terminal that keeps chatting while the fuzzer runs."""

    def __init__(self, env: Env) -> None:
        super().__init__(daemon=True)
        self.client = env.spawn("--new", terminal=env.terminal())
        self.stop = threading.Event()
        self.sent = 0
        self.answered = 0

    def run(self) -> None:
        while not self.stop.is_set():
            self.sent += 1
            self.client.send(f"legit {self.sent}")
            self.client.expect(f'You said: "legit {self.sent}"', timeout=60)
            self.answered += 1
            time.sleep(0.05)


@pytest.fixture
def running(env: Env) -> Env:
    assert env.run("supervisor", "start").returncode == 0
    return env


def test_crafted_frames_never_crash_the_supervisor_nor_disturb_a_chat(running: Env) -> None:
    env = running
    socket_path = env.runtime / "supervisor.sock"
    pid = env.supervisor_pid()
    assert pid is not None
    chatter = Chatter(env)
    chatter.start()
    counted = {"frames": 0, "internal": 0}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    @given(payload=st.lists(frames(str(env.workspace)), min_size=1, max_size=40))
    def abuse(payload: list[bytes]) -> None:
        counted["frames"] += len(payload)
        answers = exchange(socket_path, payload)
        internal = [a for a in answers if a.get("type") == "error" and a.get("code") == "internal"]
        counted["internal"] += len(internal)
        assert not internal, internal

    start = rss_kib(pid)
    abuse()  # a first round fills what is bounded (agents, caches, arenas)
    warmed = rss_kib(pid)
    abuse()  # a second round must not grow it further
    chatter.stop.set()
    chatter.join(60)
    after = rss_kib(pid)
    print(f"fuzz: {counted['frames']} frames, rss {start} -> {warmed} -> {after} KiB")
    assert after <= warmed * 1.10
    assert env.supervisor_pid() == pid and os.path.exists(f"/proc/{pid}")
    assert chatter.answered >= 1
    assert chatter.answered == chatter.sent or chatter.answered == chatter.sent - 1
    status = env.run("supervisor", "status", "--json")
    assert json.loads(status.stdout)["pid"] == pid
