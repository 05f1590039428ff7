"""A model whose context window is smaller than the token budget: it refuses a request
as over its window (OpenAI's 400 ``context_length_exceeded``), through the real
supervisor and terminal and a local OpenAI-compatible server."""

from __future__ import annotations

from typing import Any

import pytest

from tests.e2e.conftest import ServeChat
from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer

PARAGRAPH = "The triage agent reads each ticket, classifies it and routes it. " * 24
"""About 1,550 characters: a few of these fill the test model's small window."""


@pytest.fixture
def server(serve_chat: ServeChat) -> ChatServer:
    chat_server = serve_chat(ChatServer())
    chat_server.context_window = 9_000
    return chat_server


def sent(server: ChatServer, message: str) -> list[dict[str, Any]]:
    """The chat requests whose last message is the user's ``message``."""
    return [
        r
        for r in server.requests
        if r["model"] == "test-model" and r["messages"][-1].get("content") == message
    ]


def test_a_conversation_that_outgrows_the_models_window_is_compacted_and_goes_on(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack (H77): the budget (32,768 tokens for an unknown model) was far
    above the model's real window, so once the conversation filled it every message was
    refused with the same 400 and nothing was ever compacted: the session was stuck."""
    messages = [f"question {n}: {PARAGRAPH}" for n in range(1, 9)]
    result = env.run("--new", input="".join(m + "\n" for m in messages), terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert [line[:12] for line in result.stdout.splitlines()] == [
        f"echo: {m[:6]}" for m in messages
    ], "every message answered"
    refused = [m for m in messages if len(sent(server, m)) > 1]
    assert len(refused) == 1, "refused once, sent again after the compaction, then never again"
    assert result.stderr.count("refused it as over its context window") == 1
    assert "error:" not in result.stderr


def test_a_message_over_the_window_alone_is_refused_once_and_the_chat_goes_on(
    env: Env, server: ChatServer
) -> None:
    """Nothing to compact (the message alone outweighs the window): the refusal is told with
    what to do, the message is not sent again and again, and the next message is answered."""
    huge = "paste: " + PARAGRAPH * 7
    result = env.run("--new", input=f"{huge}\nshort one\n", terminal=env.terminal())
    assert result.returncode == 1  # the refused message
    assert len(sent(server, huge)) == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "over the model's context window" in errors[0], result.stderr
    assert errors[0].endswith("is over it; send a part or a file path"), errors[0]
    assert "/compact" not in errors[0]  # no compaction brings it under (H166)
    assert result.stdout.splitlines() == ["echo: short one"]


def test_a_message_over_the_token_budget_alone_is_told_so_once_though_sent_again(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H88): a message over the token budget by itself, refused by the
    model and sent again after the compaction, was told as "this message alone is ..."
    twice, once for each time it went out."""
    env.extra["AGENT_ASSIST_CONTEXT_TOKENS"] = "2000"
    huge = "paste: " + PARAGRAPH * 7  # about 2,700 tokens: over the budget and the window
    result = env.run("--new", input=f"{huge}\n", terminal=env.terminal())
    assert len(sent(server, huge)) == 1, "not sent again: it alone is over the window"
    assert result.stderr.count("warning: this message (~") == 1, result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].endswith("send a part or a file path"), errors


def test_a_refusal_far_over_the_window_learns_a_budget_under_the_window_it_states(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H88): the budget learned from a refusal was three quarters of the
    refused request, which, for a request a third or more over the window, is still over
    it: a later request between the window and that budget was refused again (and, had a
    tool of its turn run, lost). The window the refusal states (OpenAI's "maximum context
    length is N tokens") bounds the learned budget too."""
    first = "question 1: " + PARAGRAPH + PARAGRAPH[:850]
    far_over = "question 2: " + PARAGRAPH * 3 + PARAGRAPH[:1150]  # the request: ~13 KB
    later = [f"question {n}: {PARAGRAPH[:700]}" for n in range(3, 12)]
    messages = [first, far_over, *later]
    result = env.run("--new", input="".join(m + "\n" for m in messages), terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    refused = [m[:11] for m in messages if len(sent(server, m)) > 1]
    assert refused == ["question 2:"], result.stderr
    assert result.stderr.count("refused it as over its context window") == 1


def test_a_window_under_the_lowest_learned_budget_is_kept_under_all_the_same(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H91): the budget a refusal teaches is never under 1,024 tokens,
    and that floor won over the window the refusal stated: a model of a 900-token window
    (llama.cpp run with a small n_ctx) was given a budget over its window, nothing was
    ever compacted, and every message from then on was refused."""
    server.context_window = 3_600  # "maximum context length is 900 tokens"
    server.report_usage = True  # the request's tokens as the window counts them
    messages = [f"question {n}: {PARAGRAPH[:300]}" for n in range(1, 9)]
    result = env.run("--new", input="".join(m + "\n" for m in messages), terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(messages), "every message answered"


def test_a_turn_kept_after_its_tools_return_overflowed_the_window_teaches_the_budget(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H91): a turn whose tool's return made the next request too big for
    the model's window is kept as far as it got, but taught the chat no budget: the next
    message went out with that return still in the history, and was refused once more
    before it was compacted and sent again."""
    (env.workspace / "big.md").write_text(PARAGRAPH * 6)  # about 9 KB: its return overflows
    result = env.run(
        "--new", input="read: big.md\nshort one\n", terminal=env.terminal()
    )
    assert any(r["messages"][-1]["role"] == "tool" for r in server.requests), "the tool ran"
    assert "the reply is kept as far as it got" in result.stderr, result.stderr
    assert len(sent(server, "short one")) == 1, "sent once: compacted before, not refused"
    assert result.stdout.splitlines()[-1] == "echo: short one"
