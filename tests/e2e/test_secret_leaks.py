"""Secrets that reach agent-assist from outside the conversation (the endpoint's URL, its
error bodies) are written nowhere, end to end against a local Chat Completions server."""

from __future__ import annotations

import base64
import json

import pytest

from tests.e2e.conftest import ServeChat
from tests.e2e.harness import Env, all_text_under
from tests.e2e.openai_server import ChatServer

URL_PASSWORD = "Ba5eUrlPw0rd99"


@pytest.fixture
def server(serve_chat: ServeChat) -> ChatServer:
    """A local server reached through a base URL that holds a user and a password."""
    chat_server = ChatServer()
    authority = chat_server.base_url.removeprefix("http://")
    return serve_chat(
        chat_server, api_key="sk-local", OPENAI_BASE_URL=f"http://deploy:{URL_PASSWORD}@{authority}"
    )


def leaks(env: Env, *needles: str) -> list[str]:
    return [
        str(path)
        for path, data in all_text_under(env.home, env.runtime, env.workspace)
        for needle in needles
        if needle.encode() in data
    ]


def test_the_password_of_the_base_url_is_in_no_saved_reply(env: Env, server: ChatServer) -> None:
    """pydantic-ai records the endpoint's URL in every reply (``provider_url``), and the
    saved replies kept it with its password."""
    result = env.run(input="hello over http\n/save\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "echo: hello over http" in result.stdout
    assert env.session_ids()
    assert leaks(env, URL_PASSWORD) == []


def test_an_error_that_echoes_the_basic_credentials_of_the_url_shows_and_logs_none(
    env: Env, server: ChatServer
) -> None:
    """The HTTP client sends a URL's ``user:password`` as ``Authorization: Basic
    <base64>``; a gateway's 400 echoing that header put the password, base64-encoded,
    on the terminal and in supervisor.log."""
    encoded = base64.b64encode(f"deploy:{URL_PASSWORD}".encode()).decode()
    result = env.run(input="echo my key\n", terminal=env.terminal())
    assert result.returncode == 1
    assert "bad request; you sent Basic [REDACTED]" in result.stderr
    env.run("supervisor", "stop")
    log = (env.runtime / "supervisor.log").read_text()
    assert "turn 1 failed" in log
    assert encoded not in log and encoded not in result.stderr


@pytest.fixture
def summarizing(serve_chat: ServeChat) -> ChatServer:
    """A local server for the model and the summary model, and a credential-named
    variable whose value no pattern would take for a secret."""
    return serve_chat(
        ChatServer(),
        api_key="sk-local",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        DEPLOY_TOKEN=ENV_SECRET,
    )


ENV_SECRET = "plainwordyvaluekeepit"
FOUND_SECRET = "Zq9Xv7Lm2Pk4"


def sent(server: ChatServer, model: str) -> list[str]:
    return [json.dumps(r["messages"]) for r in server.requests if r["model"] == model]


def test_a_summary_model_is_sent_no_secret_the_session_scrubs(
    env: Env, summarizing: ChatServer
) -> None:
    """A compaction scrubbed the window with the patterns alone: the value of a secret
    variable, and a value found secret earlier and said again alone, went to the summary
    model (and, in its summary, into the model's next requests)."""
    script = (
        f"deploy with {ENV_SECRET}\nthe password for staging is {FOUND_SECRET}\n"
        f"use {FOUND_SECRET} again\n/compact\nafter the compaction\n"
    )
    result = env.run(input=script, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "echo: after the compaction" in result.stdout
    summaries = sent(summarizing, "summary-model")
    assert summaries, "the summary model was asked"
    assert [s for s in summaries if ENV_SECRET in s or FOUND_SECRET in s] == []
    last_request = sent(summarizing, "test-model")[-1]
    assert "after the compaction" in last_request
    assert ENV_SECRET not in last_request and FOUND_SECRET not in last_request


def test_the_offline_compaction_sent_to_the_model_holds_no_secret_the_session_scrubs(
    env: Env, summarizing: ChatServer
) -> None:
    env.extra["AGENT_ASSIST_SUMMARY_MODEL"] = "offline"
    script = (
        f"deploy with {ENV_SECRET}\nthe password for staging is {FOUND_SECRET}\n"
        f"use {FOUND_SECRET} again\n/compact\nafter the compaction\n"
    )
    result = env.run(input=script, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    last_request = sent(summarizing, "test-model")[-1]
    assert "after the compaction" in last_request and "compacted" in last_request
    assert ENV_SECRET not in last_request and FOUND_SECRET not in last_request


def test_an_error_echoing_a_chats_own_secret_is_logged_without_it(
    env: Env, summarizing: ChatServer
) -> None:
    """The log was scrubbed of the supervisor's environment's secrets only: a chat whose
    shell held another secret variable had its value written to supervisor.log in
    clear when an endpoint's error echoed it (the chat's own line was scrubbed)."""
    del env.extra["DEPLOY_TOKEN"]
    started = env.run(input="hello\n", terminal=env.terminal())  # the supervisor, without it
    assert started.returncode == 0, started.stderr
    result = env.run(
        "--new", input=f"refuse: deploy with {ENV_SECRET}\n", terminal=env.terminal(),
        DEPLOY_TOKEN=ENV_SECRET,
    )
    assert result.returncode == 1
    assert "content refused: refuse: deploy with [REDACTED]" in result.stderr
    env.run("supervisor", "stop")
    log = (env.runtime / "supervisor.log").read_text()
    assert "deploy with [REDACTED]" in log
    assert ENV_SECRET not in log


def test_a_key_cut_between_two_messages_is_in_no_file(env: Env) -> None:
    """A key pasted in two messages kept its second half in the session file (and in the
    checkpoints and the model's reply that echoed it)."""
    script = (
        "here is the first half of my key: sk-proj-SpLiTfIrStHaLf\n"
        "and the second half: 0123SeCoNdHaLfXyZ9876\n/save\n"
    )
    result = env.run(input=script, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "checkpoint 1" in result.stdout + result.stderr
    assert leaks(env, "SpLiTfIrStHaLf", "SeCoNdHaLfXyZ") == []


def test_a_key_cut_short_at_a_messages_end_is_in_no_file(env: Env) -> None:
    """A key's head too short for its pattern ending a message (``sk-proj-Ab3d``), its
    rest in the next: both halves were saved in clear (H204)."""
    script = "my key is sk-proj-Ab3d\nE5gH7jK9mN1pQ3rStU\n/save\n"
    result = env.run(input=script, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert leaks(env, "sk-proj-Ab3d", "E5gH7jK9mN1p") == []


def test_every_secret_variable_of_a_chats_shell_is_scrubbed(env: Env) -> None:
    """A hello carried 64 values at most: with the supervisor started from another
    environment, the values of a shell's 65th and later credential-named variables were
    saved in clear (H102)."""
    started = env.run("supervisor", "start")
    assert started.returncode == 0, started.stderr
    shell = {f"SERVICE{i:03d}_TOKEN": f"plainvalue{i:03d}word" for i in range(100)}
    said = " ".join(shell.values())
    env.extra.update(shell)
    result = env.run("--new", input=f"deploy with {said}\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "cannot be sent" not in result.stderr
    env.run("supervisor", "stop")
    assert leaks(env, *shell.values()) == []


def test_a_chat_says_which_secret_variables_the_supervisor_cannot_scrub(env: Env) -> None:
    result = env.run("--new", input="hello\n", terminal=env.terminal(), BIG_TOKEN="k" * 5000)
    assert result.returncode == 0, result.stderr
    assert (
        "warning: 1 value of this shell's credential-named variables cannot be sent to the "
        "supervisor (at most 4,096 characters each, 256 KiB in all): only the patterns "
        "scrub them from this session's files"
    ) in result.stderr


PASTED_KEY = "sk-proj-PaStEdKeY0123456789abcd"


@pytest.mark.parametrize(
    ("script", "line"),
    [  # H102: each error line printed the pasted key back in clear
        (f"/{PASTED_KEY}\n", "error: unknown command /[REDACTED] (try /help)"),
        (
            f"hello\n/checkpoint {PASTED_KEY}\n",
            "error: /checkpoint takes a checkpoint number (1, 2, ...), not '[REDACTED]'",
        ),
    ],
)
def test_a_key_pasted_as_a_command_is_not_printed_back(env: Env, script: str, line: str) -> None:
    result = env.run("--new", input=script, terminal=env.terminal())
    assert line in result.stderr
    assert "PaStEdKeY" not in result.stdout + result.stderr


def test_a_key_pasted_as_the_answer_to_a_question_is_not_printed_back(env: Env) -> None:
    terminal = env.terminal()
    assert env.run("--new", input="hello\n", terminal=terminal).returncode == 0
    terminal.close()  # its session is orphaned: the next tab is asked to resume it
    result = env.run(input=f"{PASTED_KEY}\n", terminal=env.terminal())
    assert result.returncode == 1
    assert "error: '[REDACTED]' is not an answer to 'Resume previous session?'" in result.stderr
    assert "PaStEdKeY" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "extra"),
    [
        (("--resume", PASTED_KEY), {}),
        (("sessions", "show", PASTED_KEY), {}),
        ((), {"AGENT_ASSIST_TERMINAL_PID": PASTED_KEY}),
    ],
)
def test_a_key_given_as_a_session_id_or_a_pid_is_not_printed_back(
    env: Env, args: tuple[str, ...], extra: dict[str, str]
) -> None:
    env.extra.update(extra)
    result = env.run(*args)
    assert result.returncode != 0
    assert "'[REDACTED]'" in result.stderr and "PaStEdKeY" not in result.stderr


def test_a_summary_echoing_the_api_key_is_not_sent_to_the_chat_model(
    env: Env, serve_chat: ServeChat
) -> None:
    """An attack (H156): a summary model that echoed the API key it was called with (a
    value no pattern takes for a secret) had it sent in clear in every next request of
    the chat model, though the session file's copy of the summary was scrubbed."""
    key = "plainlocalkeyvalue77"
    server = serve_chat(
        ChatServer(), api_key=key, AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model"
    )
    server.summary_answer = f"The user asked three things and logged in with {key}."
    script = "first thing\nsecond thing\nthird thing\n/compact\nafter the compaction\n"
    result = env.run(input=script, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    last_request = sent(server, "test-model")[-1]
    assert "logged in with [REDACTED]" in last_request
    assert key not in last_request


def test_a_summary_models_error_echoing_the_api_key_is_shown_without_it(
    env: Env, serve_chat: ServeChat
) -> None:
    """An attack (H156): a summary model's 400 whose message held the API key (a value no
    pattern takes for a key) was shown whole in the warning that the offline summarizer
    stands in, though a chat model's error is shown with the session's secrets replaced."""
    key = "plainlocalkeyvalue77"
    server = serve_chat(
        ChatServer(), api_key=key, AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model"
    )
    server.summary_error = f"the key {key} has no access to summary-model"
    script = "first thing\nsecond thing\n/compact\nafter the compaction\n"
    result = env.run(input=script, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "the key [REDACTED] has no access to summary-model" in result.stderr
    assert key not in result.stdout + result.stderr
    env.run("supervisor", "stop")
    assert leaks(env, key) == []


def test_a_reply_echoing_the_api_key_goes_back_scrubbed_in_a_live_session(
    env: Env, serve_chat: ServeChat
) -> None:
    """The live session's history kept the key the user typed, and the reply that echoed
    it, as typed: every later request sent it in clear, while the session file's copy was
    scrubbed and a resumed session sent ``[REDACTED]`` (H160)."""
    key = "plainlocalkeyvalue77"
    server = serve_chat(ChatServer(), api_key=key)
    result = env.run(input=f"log in with {key}\nwhat next?\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    last_request = sent(server, "test-model")[-1]
    assert "echo: log in with [REDACTED]" in last_request
    assert key not in last_request


def test_a_tool_call_line_shows_no_value_the_session_knows_is_secret(env: Env) -> None:
    """H188: a value found secret (``my password is X``) was shown in clear on the lines of
    the tool calls that carried it later: a decision's text, a path, a refused call's
    error (never written: the lines were the leak)."""
    value = "Zq9Xv7Lm2Pk4Qw"
    script = (
        f"my password is {value}\ndecide: use {value} for the vault\nread notes/{value}.md\n"
    )
    result = env.run("--new", input=script, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("  ")]
    assert '  record_decision "use [REDACTED] for the vault"' in lines
    assert "  read_file notes/[REDACTED].md" in lines
    assert all(value not in line for line in lines), lines
