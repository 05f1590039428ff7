"""A reply cut by the end of the chat (a supervisor stop, SIGTERM, SIGHUP) says so: its
partial text is not a reply (piped, stdout gets none of it), and the message was not
kept."""

from __future__ import annotations

import contextlib
import queue
import signal
import time

import pytest

from tests.e2e.harness import Client, Env, wait_for
from tests.e2e.openai_server import ChatServer

CUT_OFF = "[cut off: the chat ended before the reply did; this message was not kept]"


@pytest.fixture
def server(streaming_server: ChatServer) -> ChatServer:
    return streaming_server


def streaming(env: Env, server: ChatServer) -> Client:
    """A piped chat whose second message's reply is streaming."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect("echo: hello")
    client.send("be slow please")
    wait_for(
        lambda: any("slow" in str(r["messages"][-1]) for r in server.requests),
        what="the slow reply asked for",
    )
    time.sleep(0.3)  # a few words of it streamed (stdout shows them only at the line's end)
    return client


@pytest.mark.parametrize("how", ["stop", "SIGTERM", "SIGHUP"])
def test_a_reply_cut_by_the_end_of_the_chat_says_so(
    env: Env, server: ChatServer, how: str
) -> None:
    """A helper's report: the cut reply was left on stdout as if whole, and nothing said
    the message it answered was lost."""
    client = streaming(env, server)
    if how == "stop":
        assert env.run("supervisor", "stop").returncode == 0
    else:
        client.process.send_signal(getattr(signal, how))
    assert client.wait() != 0
    time.sleep(0.2)  # the reader threads take the last lines
    stderr = client.drain_stderr()
    assert CUT_OFF in stderr, stderr
    stdout = list(client.stdout_lines)
    with contextlib.suppress(queue.Empty):
        while True:
            stdout.append(client.out.get_nowait())
    assert stdout == ["echo: hello"], "stdout carries replies only: not a cut one's start"
    (session_id,) = env.session_ids()
    wait_for(lambda: "hello" in str(env.session(session_id)["recent_messages"]), what="saved")
    assert "be slow please" not in str(env.session(session_id)["recent_messages"])


def test_a_reply_cancelled_with_ctrl_c_leaves_none_of_its_text_on_stdout(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: piped, Ctrl+C while a reply streamed cancelled the turn (it is
    not kept) and put the reply's first words on stdout, as if they were a reply."""
    client = streaming(env, server)
    client.process.send_signal(signal.SIGINT)
    client.expect("[cancelled]", stderr=True)
    client.close_stdin()
    client.wait()
    time.sleep(0.2)  # the reader threads take the last lines
    stdout = list(client.stdout_lines)
    with contextlib.suppress(queue.Empty):
        while True:
            stdout.append(client.out.get_nowait())
    assert stdout == ["echo: hello"], "stdout carries whole replies only"
