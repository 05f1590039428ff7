"""The openai-chat: path end to end against a local Chat Completions server."""

from __future__ import annotations

import os
import secrets
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.conftest import ServeChat
from tests.e2e.frames import open_terminal
from tests.e2e.harness import AGENT_ASSIST, Env, all_text_under, wait_for
from tests.e2e.openai_server import ChatServer

API_KEY = "sk-test-" + secrets.token_hex(16)


@pytest.fixture
def server(serve_chat: ServeChat) -> ChatServer:
    return serve_chat(
        ChatServer(), api_key=API_KEY, AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model"
    )


def test_replies_stream_from_the_endpoint_with_the_key(env: Env, server: ChatServer) -> None:
    result = env.run(input="hello over http\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "echo: hello over http" in result.stdout
    chat = [r for r in server.requests if r["model"] == "test-model"]
    assert chat and chat[0]["stream"] is True
    assert server.headers[0]["authorization"] == f"Bearer {API_KEY}"


def test_the_resume_block_reaches_the_model_after_resume_and_not_after_reset(
    env: Env, server: ChatServer
) -> None:
    term = env.terminal()
    env.run(input="write the spec please\n", terminal=term)
    (session_id,) = env.session_ids()
    assert "Resumed Session Context" not in server.system_text()
    resumed = env.run(input="y\nsecond turn\n", terminal=term)
    assert "echo: second turn" in resumed.stdout
    system = server.system_text()
    assert "# Resumed Session Context" in system
    assert f"This is a resumed session (ID: {session_id})." in system
    assert "You are agent-assist" in system
    after_reset = env.run(input="y\n/reset\nthird turn\n", terminal=term)
    assert "echo: third turn" in after_reset.stdout
    assert "Resumed Session Context" not in server.system_text()
    assert "You are agent-assist" in server.system_text()


def test_the_summary_comes_from_the_summary_model(env: Env, server: ChatServer) -> None:
    env.run(input="design a research agent\n", terminal=env.terminal())
    (session_id,) = env.session_ids()
    # Durability does not wait for the summarizer: the exit writes the offline summary,
    # and the summary model's follows in a second write.
    expected = "SUMMARY: the user designs a research agent; see agent_spec.md"
    wait_for(lambda: env.session(session_id)["summary"] == expected, what="the model's summary")


def test_a_summary_asked_before_the_exit_does_not_replace_the_one_of_every_turn(
    env: Env, server: ChatServer
) -> None:
    """A helper's find: the summary model's answer for turn 1, asked in a pause before
    the last turn, came after the exit and was written over the summary of every turn
    (the resume offer said "3 turns · summary:" of the first one only)."""
    server.summary_delay = 3.0
    server.summary_names_last_turn = True
    client = env.spawn("--new", terminal=env.terminal())
    client.send("alpha one")
    client.expect("echo: alpha one")
    wait_for(  # a pause in the turns: the summary of turn 1 is asked for
        lambda: summaries(server.requests), what="the summary of turn 1 asked for"
    )
    client.send("beta two")
    client.expect("echo: beta two")
    client.close_stdin()
    assert client.wait() == 0
    (session_id,) = env.session_ids()
    wait_for(
        lambda: env.session(session_id)["summary"] == "SUMMARY up to: beta two",
        what="the exit's summary of every turn written",
    )
    wait_for(lambda: len(summaries(server.answered)) >= 2, what="turn 1's summary answered")
    assert env.run("supervisor", "stop").returncode == 0  # its answer has been dealt with
    assert env.session(session_id)["summary"] == "SUMMARY up to: beta two"


def summaries(requests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The requests for a session's summary among ``requests``."""
    return [r for r in requests if r["model"] == "summary-model"]


def test_the_api_key_is_never_written_to_any_file(env: Env, server: ChatServer) -> None:
    term = env.terminal()
    script = f"my key is {API_KEY}, remember it\nAuthorization: Bearer {API_KEY}\n"
    result = env.run(input=script, terminal=term)
    assert result.returncode == 0, result.stderr
    env.run(input="y\n/save\n", terminal=term)
    assert env.session_ids()
    written = list(all_text_under(env.home, env.runtime, env.workspace))
    assert written
    leaks = [str(path) for path, data in written if API_KEY.encode() in data]
    assert leaks == []


def test_an_error_that_echoes_the_key_is_told_and_logged_without_it(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack: a gateway's 400 echoing the request's Authorization header put
    the API key on the terminal and in supervisor.log."""
    result = env.run(input="echo my key\n", terminal=env.terminal())
    assert result.returncode == 1
    assert "error: 400 from http" in result.stderr
    assert "bad request; you sent Bearer [REDACTED]" in result.stderr
    assert API_KEY not in result.stderr
    env.run("supervisor", "stop")
    log = (env.runtime / "supervisor.log").read_text()
    assert "turn 1 failed" in log and API_KEY not in log


def test_a_rate_limited_turn_ends_at_once_telling_the_wait_the_endpoint_asks(
    env: Env, server: ChatServer
) -> None:
    """H160: a 429 asking to wait 20 s was waited unseen by the HTTP client, twice (40 s
    with nothing on the terminal), then told "after retries" without the wait. Asked
    once, it ends the turn with the wait; the message is kept unanswered, the session
    goes on."""
    result = env.run(input="be rate limited\nhello\n", terminal=env.terminal())
    assert result.returncode == 1
    assert "error: 429 from http" in result.stderr
    assert "(rate limited, it asks to wait 20 s): Rate limit reached" in result.stderr
    assert "send it again in 20 s" in result.stderr
    asked = [r["messages"][-1]["content"] for r in server.requests if r["model"] == "test-model"]
    assert asked == ["be rate limited", "hello"]  # not asked again unseen
    assert result.stdout.strip().endswith("echo: hello")
    (session_id,) = env.session_ids()
    saved = str(env.session(session_id)["recent_messages"])
    assert "'be rate limited'" in saved and "[no reply: 429 from" in saved


def test_a_connection_dropped_mid_reply_is_told_as_a_drop_not_as_no_server(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack: a stream cut mid-reply said "cannot connect ... is the server
    up?", with a hint to restart the supervisor."""
    result = env.run(input="cut mid-reply\nhello\n", terminal=env.terminal())
    assert result.returncode == 1
    assert "dropped mid-reply; the reply is not kept: send it again" in result.stderr
    assert "cannot connect" not in result.stderr
    assert result.stdout.strip().endswith("echo: hello")  # the session goes on


def test_a_stream_that_ends_without_its_finish_is_a_cut_reply_not_a_kept_one(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack: a stream whose body ended after one word, with no finish reason
    and no ``[DONE]`` (a proxy dropping the model's connection), was kept as the whole
    reply, with exit status 0."""
    result = env.run(input="end mid-reply\nhello\n", terminal=env.terminal())
    assert result.returncode == 1
    assert "the reply is not kept: send it again" in result.stderr
    assert result.stdout.strip() == "echo: hello"  # none of the cut reply, the session goes on
    (session_id,) = env.session_ids()
    saved = env.session(session_id)["recent_messages"]
    assert saved[0]["parts"][0]["content"] == "end mid-reply"  # the message only (H125)
    assert saved[1]["parts"][0]["content"].startswith("[no reply: ")


def test_a_reply_stopped_at_the_models_token_limit_is_kept_and_says_so(
    env: Env, server: ChatServer
) -> None:
    """A helper's find: a reply the model's token limit cut mid-sentence was kept with no
    word of it: it is the model's whole answer (kept), but the user is told where it stopped."""
    result = env.run(input="hit the limit\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "The design has three parts: first"
    assert (
        "note: the reply stopped at the model's output token limit; ask it to go on"
        in result.stderr.splitlines()
    )


def test_where_the_model_stopped_comes_with_the_turns_end_after_the_reply(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H62): a colour terminal drew the token-limit note above the
    reply's last paragraph: it came as a notice while the reply was still being drawn.
    It now comes with the turn's end, which the terminal shows below the reply."""
    assert env.run("supervisor", "start").returncode == 0
    raw, _ = open_terminal(env.runtime / "supervisor.sock", env.terminal().pid, env.workspace)
    raw.send({"type": "user_message", "text": "hit the limit", "id": "limit1"})
    frames = raw.until("turn_end")
    raw.close()
    assert not [f for f in frames if f["type"] == "notice" and "token limit" in f["text"]]
    assert frames[-1]["notes"] == [
        "note: the reply stopped at the model's output token limit; ask it to go on"
    ]


@pytest.mark.parametrize("hang", ["hang", "hang mid-reply"])
def test_a_hung_model_call_times_out_and_the_session_lives(
    env: Env, server: ChatServer, hang: str
) -> None:
    env.extra.update(AGENT_ASSIST_MODEL_TIMEOUT_S="1")
    result = env.run(input=f"before\n{hang}\nafter the hang\n", terminal=env.terminal())
    assert result.stdout.split() == ["echo:", "before", "echo:", "after", "the", "hang"]
    assert "the model sent nothing for 1 s; the reply was stopped" in result.stderr
    assert result.returncode == 1  # piped, a failed turn makes the status 1, later turns or not
    (session_id,) = env.session_ids()
    saved = str(env.session(session_id)["recent_messages"])
    assert "before" in saved and "after the hang" in saved
    assert f"'{hang}'" in saved and "[no reply: the model sent nothing" in saved  # H125
    assert env.supervisor_pid() is not None


def test_a_piped_reply_cut_by_the_supervisors_death_is_on_stdout_once_whole(
    env: Env, server: ChatServer, tmp_path: Path
) -> None:
    """The cut text used to run on into the retried reply (``Thinkingecho: ...``), then
    kept a line of its own: a helper's script got the reply twice, once cut. A piped
    run holds a reply's text until it ends."""
    out = tmp_path / "stdout"
    with out.open("w") as stdout:
        chat = subprocess.Popen(
            [AGENT_ASSIST],
            stdin=subprocess.PIPE,
            stdout=stdout,
            stderr=subprocess.PIPE,
            text=True,
            cwd=env.workspace,
            env=env.environ(env.terminal()),
        )
        assert chat.stdin is not None
        chat.stdin.write("hello\n")
        chat.stdin.flush()
        wait_for(lambda: "echo: hello" in out.read_text(), what="the first reply")
        wait_for(env.heir_pid, what="the supervisor's heir")  # it takes over, warm
        chat.stdin.write("hang mid-reply once\n")
        chat.stdin.flush()
        hanging = "hang mid-reply once"
        wait_for(
            lambda: any(r["messages"][-1]["content"] == hanging for r in server.requests),
            what="the request whose reply hangs after its first word",
        )
        assert "Thinking" not in out.read_text()  # held until the reply ends
        supervisor = env.supervisor_pid()
        assert supervisor is not None
        os.kill(supervisor, signal.SIGKILL)  # its heir takes over, the model already loaded
        wait_for(lambda: "echo: hang mid-reply once" in out.read_text(), what="the retried reply")
        _, stderr = chat.communicate(timeout=60)  # closes stdin: the chat ends
    assert out.read_text().splitlines() == ["echo: hello", "echo: hang mid-reply once"]
    assert "the supervisor went away" in stderr
    assert chat.returncode == 0


def test_a_replys_escape_sequences_never_reach_a_pipe(env: Env, server: ChatServer) -> None:
    """A helper's find (H50): piped stdout got a model's title, clear-screen and hyperlink
    sequences as sent, which a later `cat` of the log runs (the README said none)."""
    message = "say \x1b[31mRED\x1b[0m and \x1b]0;PWNED\x07 and \x1b[2J"
    result = env.run("--new", input=message + "\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "RED" in result.stdout
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout


def test_a_reply_the_providers_content_filter_stopped_is_kept_with_a_note(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H50): a reply ended by ``finish_reason: content_filter`` was kept
    as the model's whole answer, with no word that it had been stopped."""
    result = env.run(input="be filtered\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "partial answer, then"
    assert (
        "note: the provider's content filter stopped the reply; it may be incomplete"
        in result.stderr.splitlines()
    )


def test_a_shell_whose_url_is_not_the_supervisors_is_refused_before_any_prompt(
    env: Env, server: ChatServer
) -> None:
    """H108's find: a supervisor started from another environment sends the model
    requests elsewhere than the shell's OPENAI_BASE_URL; the chat warned (H66, H67) and
    went on, its messages going to an endpoint the shell did not name (or failing). Now
    one `error:` line says where the requests go and what to do, and the chat exits 1
    before anything is asked or sent."""
    first = env.run(input="hello\n", terminal=env.terminal())
    assert first.returncode == 0, first.stderr
    assert "not to this shell's" not in first.stderr
    elsewhere = "http://127.0.0.1:9/v1"
    other = env.run(input="y\nhi\n", terminal=env.terminal(), OPENAI_BASE_URL=elsewhere)
    assert other.returncode == 1
    assert other.stdout == ""
    (line,) = other.stderr.splitlines()
    assert line.startswith(
        f"error: the running supervisor sends model requests to {server.base_url}, not to "
        f"this shell's OPENAI_BASE_URL {elsewhere} (it was started from another environment)"
    ), line
    assert "agent-assist supervisor stop" in line
    sent = [m.get("content") for r in server.requests for m in r["messages"]]
    assert "hi" not in sent, "nothing was sent"
    assert env.run(input="again\n", terminal=env.terminal()).returncode == 0


def test_a_summary_model_at_another_url_than_the_supervisors_is_refused_too(
    env: Env, server: ChatServer
) -> None:
    """The chat's own model is offline; its summaries would go to the supervisor's URL."""
    assert env.run("supervisor", "start").returncode == 0
    other = env.run(
        "--new", input="hi\n", terminal=env.terminal(),
        AGENT_ASSIST_MODEL="offline", OPENAI_BASE_URL="http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert other.returncode == 1
    assert other.stderr.startswith("error: the running supervisor sends model requests to ")
    offline = env.run(
        "--new", input="hi\n", terminal=env.terminal(), AGENT_ASSIST_MODEL="offline",
        AGENT_ASSIST_SUMMARY_MODEL="", OPENAI_BASE_URL="http://127.0.0.1:9/v1",
    )  # fmt: skip
    assert offline.returncode == 0, offline.stderr


def test_the_refusal_for_another_url_shows_no_password_of_either_url(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H78): the warning printed the shell's OPENAI_BASE_URL with its
    password (`http://user:PASSWORD@host/v1`), on a terminal or a CI log, while the
    connection error about the same URL showed `user:[REDACTED]@`."""
    env.run(input="hello\n", terminal=env.terminal())  # the supervisor, with server's URL
    elsewhere = "http://deploy:Hunter2Secret9@127.0.0.1:9/v1"
    other = env.run("--new", input="hi\n", terminal=env.terminal(), OPENAI_BASE_URL=elsewhere)
    assert other.returncode == 1
    assert "not to this shell's OPENAI_BASE_URL http://deploy:[REDACTED]@127.0.0.1:9/v1" in (
        other.stderr
    )
    assert "Hunter2Secret9" not in other.stderr


def test_the_refusal_for_another_url_shows_no_control_character_of_it(
    env: Env, server: ChatServer
) -> None:
    """H186's leftover: the shell's OPENAI_BASE_URL was quoted as it was, so an escape
    sequence in it (a title, a colour, a C1 CSI, a bidi override) reached the terminal."""
    env.run(input="hello\n", terminal=env.terminal())  # the supervisor, with server's URL
    elsewhere = "http://127.0.0.1:9/x\x1b]0;PWNED\x07\x1b[31m\x9by\u202ez"
    other = env.run("--new", input="hi\n", terminal=env.terminal(), OPENAI_BASE_URL=elsewhere)
    assert other.returncode == 1
    assert "not to this shell's OPENAI_BASE_URL http://127.0.0.1:9/x" in other.stderr
    for control in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert control not in other.stderr, repr(other.stderr)


def test_a_chat_whose_supervisor_died_is_refused_by_one_another_shell_started_elsewhere(
    env: Env, server: ChatServer
) -> None:
    """A supervisor killed with its heir, then started by a shell with another
    OPENAI_BASE_URL before this chat's next message: the chat re-attached to it without
    the check of its start, and its next message went to an endpoint its shell did not
    name. It is refused as at the start: one error: line, exit 1, nothing sent."""
    chat = env.spawn("--new", terminal=env.terminal())
    chat.send("first")
    chat.expect("echo: first")
    env.kill_supervisor_and_heir()
    with ChatServer() as other_server:
        started = env.run("supervisor", "start", OPENAI_BASE_URL=other_server.base_url)
        assert started.returncode == 0, started.stderr
        chat.send("second")
        chat.expect(
            f"error: the running supervisor sends model requests to {other_server.base_url}, "
            f"not to this shell's OPENAI_BASE_URL {server.base_url}",
            stderr=True,
        )
        chat.close_stdin()
        assert chat.wait() == 1
        assert other_server.requests == [], "nothing went to the other shell's endpoint"
    sent = [m.get("content") for r in server.requests for m in r["messages"]]
    assert "second" not in sent
