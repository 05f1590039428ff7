"""A local OpenAI-compatible Chat Completions server for the tests (streaming and not).

It answers ``echo: <last user message>`` (or ``SUMMARY: ...`` for the model
``summary-model``) and records every request it receives. A last user message
``decide: TEXT`` is answered with a ``record_decision`` tool call (and the tool's
return with ``recorded``), as a real model using the assistant's tools would;
``read all: PATH PATH...`` with parallel ``read_file`` calls, one per path.
A last user message ``hang`` gets no answer at all, ``hang mid-reply`` one word and
then nothing, until the server stops (a hung model call); ``hang mid-reply once`` does
that the first time only, and is echoed when asked again. ``echo my key`` gets a
400 whose body holds the request's ``Authorization`` header, ``refuse: TEXT`` one whose
body holds the message (as a gateway's content filter may); ``cut mid-reply`` one
word, then the connection closes in the middle of a chunk; ``end mid-reply`` one word,
then the body ends cleanly, with neither a finish reason nor ``[DONE]`` (a proxy that
dropped the model's connection and closed ours); ``hit the limit`` a reply that stops at
the model's token limit (``finish_reason: length``); ``be filtered`` one the provider's
content filter stopped (``finish_reason: content_filter``); ``be rate limited`` a 429
asking to retry in 20 s (``Retry-After``), as a rate-limited endpoint answers.
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class ChatServer:
    def __init__(self, chunk_delay: float = 0.0, api_key: str | None = None) -> None:
        """With ``api_key``, a request without ``Authorization: Bearer <api_key>`` gets 401."""
        self.api_key = api_key
        self.requests: list[dict[str, Any]] = []
        self.body_bytes: list[int] = []
        self.answered: list[dict[str, Any]] = []
        """The requests whose answer has been written whole (or cut), in that order."""
        """The size of each request's body (of ``requests``, in the same order)."""
        self.headers: list[dict[str, str]] = []
        self.chunk_delay = chunk_delay
        self.released = threading.Event()
        """Set when the server stops: hung answers end then."""
        self._lock = threading.Lock()
        self._hung: set[str] = set()
        self.hang_summaries = False
        self.fail_summaries = False
        """Every request to ``summary-model`` gets a 400 error."""
        self.summary_error: str | None = None
        """Set: every request to ``summary-model`` gets a 400 whose message is this text."""
        self.rate_limit_summaries = False
        """Every request to ``summary-model`` gets a 429 asking to retry in 20 s
        (``Retry-After``), as a rate-limited endpoint answers."""
        self.server_error_summaries = False
        """Every request to ``summary-model`` gets a 500, as a server's blip answers."""
        self.summary_delay = 0.0
        """Seconds every request to ``summary-model`` waits before it is answered (or
        refused, with one of the failures above)."""
        self.summary_answer: str | None = None
        """Set: every request to ``summary-model`` is answered with this text, whatever it
        was given (an empty answer, a refusal, the prompt echoed back...)."""
        self.summary_names_last_turn = False
        """``summary-model`` answers ``SUMMARY up to: <the last user line it was given>``,
        so that a test tells a summary of every turn from one of the first turns."""
        self.context_window: int | None = None
        """Set: a chat request (not a summary's) whose body is longer than this many bytes
        gets OpenAI's 400 ``context_length_exceeded``, as a model with a small context
        window answers."""
        self.summary_window: int | None = None
        """Set: a request to ``summary-model`` whose body is longer than this many bytes
        gets the same 400 (a summary model with a small context window)."""
        self.summary_window_stated = True
        """False: that 400 states no window, as llama.cpp's server may word it."""
        self.fail_tool_returns = False
        """Set: a chat request whose last message is a tool's return gets a 500 (the model
        failed after the turn's tool ran)."""
        self.report_usage = False
        """Set: a streamed reply ends with the request's usage, its prompt tokens counted as
        the window counts them (a quarter of the body's bytes), as llama.cpp and vLLM do."""
        self.extra_prompt_tokens = 0
        """Tokens a request's usage counts beyond a quarter of its body's bytes (a chat
        template the server adds, a tokenizer counting more than the estimate); a window
        counts them too."""
        self.tool_returns_go = threading.Event()
        """Cleared: an answer to a tool's return waits until it is set again."""
        self.tool_returns_go.set()
        self.tool_calls_go = threading.Event()
        """Cleared: a tool call the model would send waits until it is set again."""
        self.tool_calls_go.set()
        self.reply_ends_go = threading.Event()
        """Cleared: a streamed reply to ``be thorough`` waits before its last word until it
        is set again."""
        self.reply_ends_go.set()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length))
                try:
                    self._answer(body, length)
                finally:
                    with server._lock:
                        server.answered.append(body)

            def _answer(self, body: dict[str, Any], length: int) -> None:
                self.prompt_tokens = length // 4 + server.extra_prompt_tokens
                with server._lock:
                    server.requests.append(body)
                    server.body_bytes.append(length)
                    server.headers.append({k.lower(): v for k, v in self.headers.items()})
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                if server.api_key and self.headers.get("Authorization") != (
                    f"Bearer {server.api_key}"
                ):
                    self._unauthorized()
                    return
                window = server.context_window
                if window is not None and body["model"] != "summary-model" and length > window:
                    self._context_length_exceeded(length, window)
                    return
                window = server.summary_window
                if window is not None and body["model"] == "summary-model" and length > window:
                    if server.summary_window_stated:
                        self._context_length_exceeded(length, window)
                    else:
                        self._bad_request("the request exceeds the available context size")
                    return
                if body["messages"][-1].get("content") == "cut mid-reply":
                    self._cut(body)
                    return
                if body["messages"][-1].get("content") == "end mid-reply":
                    self._end_early(body)
                    return
                if body["messages"][-1].get("content") == "be rate limited":
                    self._rate_limited()
                    return
                if body["messages"][-1].get("content") == "echo my key":
                    self._bad_request(f"bad request; you sent {self.headers.get('Authorization')}")
                    return
                if str(body["messages"][-1].get("content")).startswith("refuse: "):
                    self._bad_request(f"content refused: {body['messages'][-1]['content']}")
                    return
                if server.fail_tool_returns and body["messages"][-1]["role"] == "tool":
                    self._server_error()
                    return
                if body["model"] == "summary-model" and server.summary_delay:
                    server.released.wait(server.summary_delay)
                if body["model"] == "summary-model" and server.summary_error is not None:
                    self._bad_request(server.summary_error)
                    return
                if body["model"] == "summary-model" and server.fail_summaries:
                    self._bad_request("the summary model is down for maintenance")
                    return
                if body["model"] == "summary-model" and server.rate_limit_summaries:
                    self._rate_limited()
                    return
                if body["model"] == "summary-model" and server.server_error_summaries:
                    self._server_error()
                    return
                hang = server.hang_for(body)
                if hang is not None:
                    self._hang(body, hang)
                    return
                if body["messages"][-1]["role"] == "tool":
                    server.tool_returns_go.wait(60)
                calls = server.tool_calls_for(body)
                if calls:
                    server.tool_calls_go.wait(60)
                if calls and body.get("stream"):
                    self._stream_tool_calls(body, calls)
                    return
                text = server.reply_for(body)
                last = body["messages"][-1].get("content")
                if body.get("stream") and last == "hit the limit":
                    self._stream(body, "The design has three parts: first", finish="length")
                elif body.get("stream") and last == "be filtered":
                    self._stream(body, "partial answer, then", finish="content_filter")
                elif body.get("stream"):
                    self._stream(body, text)
                else:
                    self._json(body, text)

            def _json(self, body: dict[str, Any], text: str) -> None:
                payload = json.dumps(
                    {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "finish_reason": "stop",
                                "message": {"role": "assistant", "content": text},
                            }
                        ],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _cut(self, body: dict[str, Any]) -> None:
                """One word of a chunked stream, then the connection closed mid-chunk."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                chunk = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [
                        {"index": 0, "delta": {"content": "Thinking"}, "finish_reason": None}
                    ],
                }
                data = b"data: " + json.dumps(chunk).encode() + b"\n\n"
                self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
                self.wfile.write(b"ff\r\ndata: {\"cho")  # a chunk that never ends
                self.wfile.flush()
                self.close_connection = True

            def _end_early(self, body: dict[str, Any]) -> None:
                """One word, then the body's end (the connection closes: HTTP/1.0)."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self._event(body, {"role": "assistant", "content": "Thinking"}, None)
                self.close_connection = True

            def _bad_request(self, message: str) -> None:
                """400, its body echoing ``message`` (as some gateways echo a header)."""
                payload = json.dumps({"error": {"message": message}}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _rate_limited(self) -> None:
                payload = json.dumps(
                    {"error": {"message": "Rate limit reached", "type": "rate_limit_error"}}
                ).encode()
                self.send_response(429)
                self.send_header("Retry-After", "20")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _server_error(self) -> None:
                payload = json.dumps(
                    {"error": {"message": "internal error", "type": "server_error"}}
                ).encode()
                self.send_response(500)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _context_length_exceeded(self, length: int, window: int) -> None:
                error = {
                    "message": (
                        f"This model's maximum context length is {window // 4} "
                        f"tokens. However, your messages resulted in {length // 4} tokens. "
                        "Please reduce the length of the messages."
                    ),
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
                payload = json.dumps({"error": error}).encode()
                self.send_response(400)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _unauthorized(self) -> None:
                payload = json.dumps(
                    {
                        "error": {
                            "message": "Incorrect API key provided",
                            "type": "invalid_request_error",
                            "code": "invalid_api_key",
                        }
                    }
                ).encode()
                self.send_response(401)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _stream(self, body: dict[str, Any], text: str, finish: str = "stop") -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                words = text.split(" ")
                try:
                    for i, word in enumerate(words):
                        if i and i == len(words) - 1 and text == "echo: be thorough":
                            server.reply_ends_go.wait(60)
                        piece = word if i == 0 else " " + word
                        self._event(body, {"role": "assistant", "content": piece}, None)
                        if server.chunk_delay:
                            time.sleep(server.chunk_delay)
                    self._event(body, {}, finish, usage=server.report_usage)
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    return

            def _hang(self, body: dict[str, Any], mid_reply: bool) -> None:
                if mid_reply:
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    self._event(body, {"role": "assistant", "content": "Thinking"}, None)
                server.released.wait(120)

            def _stream_tool_calls(
                self, body: dict[str, Any], calls: list[tuple[str, str]]
            ) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                deltas = [
                    {
                        "index": k,
                        "id": f"call_{len(server.requests)}_{k}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                    for k, (name, arguments) in enumerate(calls)
                ]
                self._event(body, {"role": "assistant", "tool_calls": deltas}, None)
                self._event(body, {}, "tool_calls")
                self.wfile.write(b"data: [DONE]\n\n")
                self.wfile.flush()

            def _event(
                self,
                body: dict[str, Any],
                delta: dict[str, Any],
                finish: str | None,
                usage: bool = False,
            ) -> None:
                chunk: dict[str, Any] = {
                    "id": "chatcmpl-test",
                    "object": "chat.completion.chunk",
                    "created": int(time.time()),
                    "model": body["model"],
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
                if usage:
                    tokens = self.prompt_tokens
                    chunk["usage"] = {
                        "prompt_tokens": tokens,
                        "completion_tokens": 5,
                        "total_tokens": tokens + 5,
                    }
                self.wfile.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
                self.wfile.flush()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        # Polled every 10 ms (not 0.5 s): a test on an event loop leaves the server's
        # ``with`` inside the loop, and ``shutdown`` waits for the next poll.
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.01,), daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def hang_for(self, body: dict[str, Any]) -> bool | None:
        """None to answer; else whether to hang after the first word (True) or at once.
        ``hang_summaries``: every request to ``summary-model`` hangs."""
        if self.hang_summaries and body["model"] == "summary-model":
            return False
        last = body["messages"][-1]
        content = last.get("content")
        if last["role"] != "user" or not isinstance(content, str):
            return None
        if content == "hang":
            return False
        if content == "hang mid-reply once":
            with self._lock:
                first = content not in self._hung
                self._hung.add(content)
            return True if first else None
        return True if content == "hang mid-reply" else None

    def tool_calls_for(self, body: dict[str, Any]) -> list[tuple[str, str]]:
        """The calls of one reply: ``tool_call_for``'s, or for a last message ``read all:
        PATH PATH...`` from the user, one ``read_file`` per path (parallel calls)."""
        last = body["messages"][-1]
        content = last.get("content")
        if last["role"] == "user" and isinstance(content, str) and content.startswith("read all: "):
            paths = content.removeprefix("read all: ").split()
            return [("read_file", json.dumps({"path": path})) for path in paths]
        call = self.tool_call_for(body)
        return [] if call is None else [call]

    def tool_call_for(self, body: dict[str, Any]) -> tuple[str, str] | None:
        """``record_decision`` for a last message ``decide: TEXT`` from the user, and
        ``read_file`` for ``read: PATH``, ``write_file`` for ``write: PATH: TEXT``."""
        last = body["messages"][-1]
        content = last.get("content")
        if last["role"] == "user" and isinstance(content, str) and content.startswith("decide: "):
            return "record_decision", json.dumps({"decision": content.removeprefix("decide: ")})
        if last["role"] == "user" and isinstance(content, str) and content.startswith("read: "):
            return "read_file", json.dumps({"path": content.removeprefix("read: ")})
        if last["role"] == "user" and isinstance(content, str) and content.startswith("write: "):
            path, _, text = content.removeprefix("write: ").partition(": ")
            return "write_file", json.dumps({"path": path, "content": text + "\n"})
        return None

    def reply_for(self, body: dict[str, Any]) -> str:
        last_message = body["messages"][-1]
        if last_message["role"] == "tool":
            return "recorded"
        users = [m for m in body["messages"] if m["role"] == "user"]
        last = users[-1]["content"] if users else ""
        if isinstance(last, list):
            last = " ".join(p.get("text", "") for p in last if isinstance(p, dict))
        if body["model"] == "summary-model" and self.summary_answer is not None:
            return self.summary_answer
        if body["model"] == "summary-model" and self.summary_names_last_turn:
            given = [line for line in str(last).splitlines() if line.startswith("user: ")]
            return f"SUMMARY up to: {given[-1].removeprefix('user: ') if given else '-'}"
        if body["model"] == "summary-model":
            return "SUMMARY: the user designs a research agent; see agent_spec.md"
        if "slow" in last:
            return " ".join(f"word{i}" for i in range(200))
        return f"echo: {last}"

    def system_text(self, index: int = -1) -> str:
        """The system/developer text of a recorded chat request (not a summary request)."""
        chats = [r for r in self.requests if r["model"] != "summary-model"]
        return "\n".join(
            m["content"] if isinstance(m["content"], str) else json.dumps(m["content"])
            for m in chats[index]["messages"]
            if m["role"] in ("system", "developer")
        )

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.released.set()
        self._server.shutdown()
        self._server.server_close()
