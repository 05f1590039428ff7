"""A reply cut by the end of the chat (a supervisor stop, SIGTERM) says so: its partial
text is not a reply (piped, stdout gets none of it), and the message is kept, marked
unanswered (H125: it was lost). SIGHUP (the window closed) does not cut it: the
supervisor finishes and keeps it."""

from __future__ import annotations

import contextlib
import os
import queue
import signal
import time

import pytest

from session.interrupted import INTERRUPTED
from session.unanswered import NO_REPLY_PREFIX
from tests.e2e.harness import Client, Env, wait_for
from tests.e2e.openai_server import ChatServer

CUT_OFF = "[cut off: the chat ended before the reply did; the message is kept, marked unanswered]"
"""README's line: the reply had called no tool (H72: it said "unless a tool of its reply
had run: then as far as it got" of a reply that had called none)."""
CUT_OFF_AFTER_TOOLS = (
    "[cut off: the chat ended before the reply did; the message is kept as far as it got "
    "if a tool of its reply had run, else marked unanswered]"
)


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


@pytest.mark.parametrize("how", ["stop", "SIGTERM"])
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
    client.read_to_the_end()
    stderr = client.drain_stderr()
    assert CUT_OFF in stderr, stderr
    stdout = list(client.stdout_lines)
    with contextlib.suppress(queue.Empty):
        while True:
            stdout.append(client.out.get_nowait())
    assert stdout == ["echo: hello"], "stdout carries replies only: not a cut one's start"
    (session_id,) = env.session_ids()
    wait_for(lambda: "hello" in str(env.session(session_id)["recent_messages"]), what="saved")
    saved = env.session(session_id)["recent_messages"]
    assert saved[-2]["parts"][0]["content"] == "be slow please"
    assert saved[-1]["parts"][0]["content"].startswith(NO_REPLY_PREFIX), saved[-1]


def test_a_reply_whose_window_closed_is_finished_and_kept(env: Env, server: ChatServer) -> None:
    """SIGHUP (a closed window, a dropped SSH) is no request to stop the reply: the chat
    leaves without a ``close``, and the supervisor lets the turn finish and saves it."""
    client = streaming(env, server)
    client.process.send_signal(signal.SIGHUP)
    assert client.wait() != 0
    wait_for(lambda: env.session_ids(), what="the session saved")
    (session_id,) = env.session_ids()
    wait_for(
        lambda: "word199" in str(env.session(session_id)["recent_messages"]),
        what="the whole reply saved",
        timeout=60,
    )


def waiting_after_a_tool(env: Env, server: ChatServer) -> Client:
    """A chat whose reply has run its tool (a decision recorded) and waits for the
    model's answer to the tool's return (until ``server.tool_returns_go`` is set)."""
    client = env.spawn("--new", terminal=env.terminal())
    server.tool_returns_go.clear()
    client.send("decide: Route tickets by urgency")
    wait_for(
        lambda: any(r["messages"][-1]["role"] == "tool" for r in server.requests),
        what="the tool's return at the model",
    )
    return client


def test_a_reply_cut_by_the_end_of_the_chat_after_a_tool_call_says_it_may_be_kept(
    env: Env, server: ChatServer
) -> None:
    client = waiting_after_a_tool(env, server)
    assert env.run("supervisor", "stop").returncode == 0
    server.tool_returns_go.set()
    assert client.wait() != 0
    client.read_to_the_end()
    stderr = client.drain_stderr()
    assert CUT_OFF_AFTER_TOOLS in stderr, stderr
    assert CUT_OFF not in stderr


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
    client.read_to_the_end()
    stdout = list(client.stdout_lines)
    with contextlib.suppress(queue.Empty):
        while True:
            stdout.append(client.out.get_nowait())
    assert stdout == ["echo: hello"], "stdout carries whole replies only"


def test_a_turn_interrupted_after_its_tool_ran_keeps_what_the_tool_did(
    env: Env, server: ChatServer
) -> None:
    """A helper's report (H54): Ctrl+C after tools had run dropped the whole turn: the
    next request told the model nothing of the decision it had recorded (the user saw
    it), and the session kept no decision. The turn is kept as far as it got: the call,
    its return, and a note that the user interrupted the reply."""
    client = waiting_after_a_tool(env, server)
    client.process.send_signal(signal.SIGINT)
    client.expect("[cancelled]", stderr=True)
    server.tool_returns_go.set()
    client.send("what happened?")
    client.expect("echo: what happened?")
    client.close_stdin()
    assert client.wait() == 1  # piped: a cancelled message fails the run
    sent = server.requests[-1]["messages"]
    roles = [m["role"] for m in sent if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "assistant", "user"], roles
    assert any("the reply is kept as far as it got" in line for line in client.drain_stderr())
    assert sent[-3]["content"] == "recorded decision: Route tickets by urgency"
    assert INTERRUPTED in sent[-2]["content"]
    (session_id,) = env.session_ids()
    assert env.session(session_id)["decisions"] == ["Route tickets by urgency"]


def test_a_turn_interrupted_before_any_tool_ran_is_not_kept(
    env: Env, server: ChatServer
) -> None:
    client = streaming(env, server)
    client.process.send_signal(signal.SIGINT)
    client.expect("[cancelled]", stderr=True)
    client.send("and now?")
    client.expect("echo: and now?")
    client.close_stdin()
    assert client.wait() == 1  # piped: a cancelled message fails the run
    sent = [m["content"] for m in server.requests[-1]["messages"] if m["role"] != "system"]
    assert sent == ["hello", "echo: hello", "and now?"]


def test_a_turn_whose_terminal_was_killed_after_its_tool_ran_keeps_what_the_tool_did(
    env: Env, server: ChatServer
) -> None:
    """A helper's report (H58): kill -9 of the terminal after a tool of the turn had run
    (a decision recorded, a file written) dropped the whole turn from the session. The
    turn is now let finish (H125), and kept whole."""
    client = env.spawn("--new", terminal=env.terminal())
    server.tool_returns_go.clear()  # the model's answer to the tool's return waits
    client.send("decide: Escalate angry customers")
    wait_for(
        lambda: any(r["messages"][-1]["role"] == "tool" for r in server.requests),
        what="the tool's return at the model",
    )
    client.kill9()
    server.tool_returns_go.set()
    wait_for(lambda: env.session_ids(), what="the session saved")
    (session_id,) = env.session_ids()
    wait_for(
        lambda: env.session(session_id)["decisions"] == ["Escalate angry customers"],
        what="the decision kept",
    )
    saved = env.session(session_id)["recent_messages"]
    assert "record_decision" in str(saved) and INTERRUPTED not in str(saved)
    assert saved[-1]["parts"][-1]["content"] == "recorded"


def test_a_turn_whose_model_failed_after_its_tool_ran_keeps_what_the_tool_did(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H88): the model's answer to a tool's return failed (a 500, a
    dropped connection, a context window the return overflowed) and the whole turn was
    dropped: the decision the user saw recorded was in neither the session nor the next
    request. The turn is kept as far as it got, as after a Ctrl+C, and the error told."""
    server.fail_tool_returns = True
    client = env.spawn("--new", terminal=env.terminal())
    client.send("decide: Route tickets by urgency")
    client.expect("error: 500", stderr=True)
    server.fail_tool_returns = False
    client.send("what happened?")
    client.expect("echo: what happened?")
    client.close_stdin()
    assert client.wait() == 1  # piped: a failed turn fails the run
    sent = server.requests[-1]["messages"]
    roles = [m["role"] for m in sent if m["role"] != "system"]
    assert roles == ["user", "assistant", "tool", "assistant", "user"], roles
    assert sent[-3]["content"] == "recorded decision: Route tickets by urgency"
    assert any("the reply is kept as far as it got" in line for line in client.drain_stderr())
    (session_id,) = env.session_ids()
    assert env.session(session_id)["decisions"] == ["Route tickets by urgency"]


NOT_RUN_AGAIN = (
    "error: the supervisor stopped after this reply's tools ran, before the reply was saved; "
    "the message was not sent again, so its tools do not run twice (what they wrote is on "
    "disk): send it again to have it redone"
)


def test_a_reply_whose_tools_ran_is_not_run_again_after_the_supervisor_died(
    env: Env, server: ChatServer
) -> None:
    """H98's find: kill -9 of the supervisor after a reply's tool ran made the terminal
    send the message again to the heir, which ran the turn, and its tools, a second time
    (a file written twice). The retry now only asks for the turn if it was saved."""
    client = waiting_after_a_tool(env, server)
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    client.expect(NOT_RUN_AGAIN, stderr=True)
    server.tool_returns_go.set()
    client.send("hello")  # the chat goes on with the same session
    client.expect("echo: hello")
    client.close_stdin()
    assert client.wait() == 1  # piped, a message not answered fails the run
    asked = [r for r in server.requests if "decide:" in str(r["messages"][-1])]
    assert len(asked) == 1, "the model was asked the message once"
