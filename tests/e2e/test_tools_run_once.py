"""A tool runs once, whenever the supervisor dies: the terminal learns that a tool of the
turn may run before the tool starts, so a message re-sent after a ``kill -9`` is never
run again once a tool of its reply may have run."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.e2e.harness import Env, wait_for

TEXT_BEFORE_THE_CALL = 600_000
"""Bytes of reply text before the tool call: more than a Unix socket's buffer holds, so
that the line of the tool call waits in the supervisor while the terminal reads nothing."""


class TextThenToolCall:
    """A Chat Completions server: ``go`` is answered, once ``answer`` is set, with a long
    text and then a ``write_file`` call; a tool's return with ``done``. It counts what it
    is asked."""

    def __init__(self) -> None:
        self.answer = threading.Event()
        self.asked = 0
        self.tool_returns = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                if body["messages"][-1]["role"] == "tool":
                    server.tool_returns += 1
                    self._event(body, {"role": "assistant", "content": "done"}, None)
                    self._event(body, {}, "stop")
                else:
                    server.asked += 1
                    server.answer.wait(60)
                    self._text_then_call(body)
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _text_then_call(self, body: dict[str, Any]) -> None:
                piece = ("lorem ipsum " * 700)[:8000]
                for _ in range(TEXT_BEFORE_THE_CALL // len(piece)):
                    self._event(body, {"role": "assistant", "content": piece}, None)
                arguments = json.dumps({"path": "notes.md", "content": "x\n"})
                call = {
                    "index": 0,
                    "id": f"call_{server.asked}",
                    "type": "function",
                    "function": {"name": "write_file", "arguments": arguments},
                }
                self._event(body, {"tool_calls": [call]}, None)
                self._event(body, {}, "tool_calls")

            def _event(self, body: dict[str, Any], delta: dict[str, Any], end: str | None) -> None:
                chunk = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [{"index": 0, "delta": delta, "finish_reason": end}],
                }
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Polled every 10 ms: ``close`` (inside a test's event loop) waits for the next poll.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.01,), daemon=True
        )
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def close(self) -> None:
        self.answer.set()
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def server(env: Env) -> Iterator[TextThenToolCall]:
    chat_server = TextThenToolCall()
    env.extra.update(
        OPENAI_BASE_URL=chat_server.base_url,
        OPENAI_API_KEY="sk-local",
        AGENT_ASSIST_MODEL="openai-chat:test-model",
    )
    try:
        yield chat_server
    finally:
        chat_server.close()


def test_a_tool_runs_once_when_the_supervisor_dies_before_the_terminal_read_its_line(
    env: Env, server: TextThenToolCall
) -> None:
    """H111's find: the line of a tool call went to the terminal's socket from another
    task than the tool's, which did not wait for it; with the terminal reading late (a
    Ctrl+Z, a busy machine) the tool ran while its line still waited in the supervisor, a
    ``kill -9`` then left a terminal that knew of no tool, and it sent the message again:
    the new supervisor ran the tool a second time. A tool now starts only once its line
    is written to the terminal's socket."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("go")
    wait_for(lambda: server.asked == 1, what="the message at the model")
    os.kill(client.process.pid, signal.SIGSTOP)  # the terminal reads nothing now
    try:
        server.answer.set()
        # A moment for a tool that would not wait for its line to run (it did at once).
        deadline = time.monotonic() + 2.0
        while server.tool_returns == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        env.kill_supervisor_and_heir()
    finally:
        os.kill(client.process.pid, signal.SIGCONT)
    client.expect("done")  # the message sent again, to a new supervisor
    client.close_stdin()
    client.wait()
    assert server.asked == 2, "the message was sent again: no tool of it had run"
    assert server.tool_returns == 1, "the tool ran once"
    assert (env.workspace / "notes.md").read_text() == "x\n"


def test_a_stop_saves_a_stopped_terminals_session_and_that_terminal_starts_no_supervisor(
    env: Env, server: TextThenToolCall
) -> None:
    """H118: `supervisor stop` with a terminal stopped by Ctrl+Z (its socket full of a
    reply it does not read) could not write it its last frame; continued, the terminal
    took the cut for a crash and started a supervisor behind the back of the user who had
    just stopped it. It learns from the runtime directory that the stop was deliberate."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("go")
    wait_for(lambda: server.asked == 1, what="the message at the model")
    os.kill(client.process.pid, signal.SIGSTOP)  # the terminal reads nothing now
    try:
        server.answer.set()
        stopped = env.run("supervisor", "stop")
    finally:
        os.kill(client.process.pid, signal.SIGCONT)
    assert stopped.returncode == 0, stopped.stderr
    # Its only turn was cut by the stop and kept (H125): its message marked unanswered. In
    # one CI run (and 1 of 10 local runs, before session 31's changes too) the turn was
    # kept with a reply instead, not seen in detail: the stop gives a pending write a
    # moment, and a terminal continued within it reads the reply, so its turn may run on.
    client.expect("the supervisor was stopped; session", stderr=True)
    (session_id,) = env.session_ids()
    recent = str(env.session(session_id)["recent_messages"])
    assert "'content': 'go'" in recent
    assert "[no reply: " in recent or "lorem ipsum" in recent
    assert client.wait() == 1  # piped: the run stopped before the end of its input
    assert env.supervisor_pid() is None, "the continued terminal started no supervisor"
