"""Frames the supervisor sends stay within what a client accepts: a long reply read late, a
listing of thousands of sessions (found by trying a slow reader and a big project)."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from datetime import UTC, datetime
from typing import Any

import pytest

from session.manager import SessionManager
from session.models import SessionState
from supervisor.wire import TEXT_FRAME_CHARS
from tests.e2e.conftest import ServeChat
from tests.e2e.frames import RawClient, terminal_hello
from tests.e2e.harness import AGENT_ASSIST, Env
from tests.e2e.openai_server import ChatServer

WORDS, WIDTH = 2000, 2000  # a 4 MB reply, streamed 2 KB a chunk
READS_LATE_S = 4.0  # the terminal stops reading (a pager, Ctrl+S, a slow link)


def long_reply() -> str:
    return " ".join(f"{i:08d}" + "x" * (WIDTH - 8) for i in range(WORDS))


class LongReplies(ChatServer):
    def reply_for(self, body: dict[str, Any]) -> str:
        last = body["messages"][-1]
        if last["role"] == "user" and last.get("content") == "long":
            return long_reply()
        return super().reply_for(body)


@pytest.fixture
def server(serve_chat: ServeChat) -> LongReplies:
    return serve_chat(LongReplies(), api_key="sk-test-" + "0" * 32)


def test_a_long_reply_read_late_comes_whole_in_text_frames_of_bounded_size(
    env: Env, server: LongReplies
) -> None:
    assert env.run("supervisor", "start").returncode == 0
    term = env.terminal()
    client = RawClient(env.runtime / "supervisor.sock", timeout=60)
    client.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    client.send(terminal_hello(term.pid, env.workspace, "openai-chat:test-model"))
    client.until("welcome")
    client.send({"type": "open", "mode": "new", "session_id": None})
    client.until("opened")
    client.send({"type": "user_message", "text": "long"})
    time.sleep(READS_LATE_S)
    frames = client.until("turn_end")
    client.close()
    texts = [frame["text"] for frame in frames if frame["type"] == "text_delta"]
    assert "".join(texts) == long_reply()
    assert max(len(text) for text in texts) <= TEXT_FRAME_CHARS
    assert frames[-1]["status"] == "ok"


def test_the_real_client_shows_a_long_reply_it_reads_late_and_goes_on(
    env: Env, server: LongReplies
) -> None:
    term = env.terminal()
    chat = subprocess.Popen(
        [AGENT_ASSIST, "--new"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=env.workspace,
        env=env.environ(term),
    )
    try:
        assert chat.stdin is not None
        chat.stdin.write(b"long\nsay hi\n")
        chat.stdin.flush()
        time.sleep(READS_LATE_S)  # nobody reads its stdout: it stops reading the socket
        out, err = chat.communicate(input=b"", timeout=120)
    finally:
        if chat.poll() is None:
            chat.kill()
            chat.wait()
    assert chat.returncode == 0, err.decode()[-500:]
    assert long_reply().encode() in out
    assert b"echo: say hi" in out


def test_a_listing_over_a_mebibyte_comes_whole_from_a_running_supervisor(env: Env) -> None:
    manager = SessionManager(env.project)
    summary = "Designing a support-ticket triage agent; " * 25  # about 1 KB a session
    ids = set()
    for _ in range(1500):
        state = SessionState.new(datetime.now(UTC)).model_copy(update={"summary": summary})
        manager.save(state)
        ids.add(state.session_id)
    assert env.run("supervisor", "start").returncode == 0
    for flags in ((), ("--all",)):
        result = env.run("sessions", "--json", *flags)
        assert result.returncode == 0, result.stderr
        assert len(result.stdout) > 1024 * 1024
        assert {row["session_id"] for row in json.loads(result.stdout)} == ids
    table = env.run("sessions")
    assert table.returncode == 0, table.stderr
    assert len(table.stdout.splitlines()) == 1 + len(ids)
