"""A small token budget (a local model of a 2k-4k context) holds for every request: 40 varied
turns (short questions, pasted text, tool calls) through the real supervisor and terminal,
each request's size measured from the body the local OpenAI-compatible server received."""

from __future__ import annotations

import json
import subprocess
from typing import Any

import pytest

from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer

WORDS = (
    "triage", "agent", "ticket", "route", "classify",
    "escalate", "queue", "priority", "customer", "reply",
)


def paste(n: int, size: int) -> str:
    """About ``size`` characters of text to paste, varied by ``n``."""
    text = " ".join(WORDS[(n * 7 + i) % len(WORDS)] + str(i % 13) for i in range(size // 8))
    return f"paste {n}: " + text[:size]


def conversation(env: Env) -> list[str]:
    """40 turns: questions, 1-2 KB pastes, decisions (a tool call), file reads (another)."""
    for k in range(4):
        (env.workspace / f"notes{k}.md").write_text(paste(100 + k, 600 + 500 * k) + "\n")
    kinds = (
        lambda n: paste(n, 1000 + 100 * (n % 11)),
        lambda n: f"question {n}: which queue gets billing tickets?",
        lambda n: f"decide: queue {n} handles priority {n % 4} tickets",
        lambda n: f"read: notes{n % 4}.md",
        lambda n: paste(n, 1500 + 60 * (n % 9)),
    )
    return [kinds[n % 5](n) for n in range(1, 41)]


def content_tokens(body: dict[str, Any]) -> int:
    """A request's size by the characters-per-token estimate: what the model reads of it
    (the messages' text, the tool calls' arguments, the tool definitions)."""
    chars = len(json.dumps(body.get("tools", [])))
    for message in body["messages"]:
        content = message.get("content")
        chars += len(content) if isinstance(content, str) else len(json.dumps(content or ""))
        for call in message.get("tool_calls") or ():
            chars += len(call["function"]["name"]) + len(call["function"]["arguments"])
    return chars // 4


@pytest.mark.parametrize(("budget", "usage"), [(2000, False), (3000, True)])
def test_over_40_varied_turns_no_request_exceeds_a_small_token_budget(
    env: Env, server: ChatServer, budget: int, usage: bool
) -> None:
    """Reported (H135): with a budget of 1,000-3,000 tokens requests went 10-30% over it.
    The agent's own part (base instructions and tool definitions, ~540 tokens) was not
    counted, and within a turn a tool's return grew the request past the budget checked
    before it. ``usage``: the server reports its count (the body's bytes / 4), the ground
    truth then; without it, the estimate of what the model reads."""
    server.report_usage = usage
    env.extra["AGENT_ASSIST_CONTEXT_TOKENS"] = str(budget)
    turns = conversation(env)
    result = env.run(
        "--new", input="".join(t + "\n" for t in turns), terminal=env.terminal(), timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert len(result.stdout.splitlines()) == len(turns), "every message answered"
    sizes = [
        size // 4 if usage else content_tokens(body)
        for body, size in zip(server.requests, server.body_bytes, strict=True)
        if body["model"] == "test-model"
    ]
    assert len(sizes) > len(turns), "the tool calls' round trips are measured too"
    assert [(n, size) for n, size in enumerate(sizes) if size > budget] == []
    assert "over the token budget" not in result.stderr, result.stderr


def test_a_turn_after_one_whose_last_request_elided_a_tool_return_is_compacted_first(
    env: Env, server: ChatServer
) -> None:
    """H142: a turn whose last request elided an earlier turn's file read to stay within
    the budget was counted by the model at that elided size; the next turn's first request
    carries the read whole again, yet the budget took the elided count for its size and
    sent it over the budget uncompacted (3,073 tokens by the model's count, budget 3,000)."""
    server.report_usage = True
    for k in range(1, 4):
        (env.workspace / f"notes{k}.md").write_text(f"content of file {k} " * 50 + "\n")
    turns = [
        f"read: notes{1 + n % 3}.md" if n % 2 else f"question {n}: which queue gets billing?"
        for n in range(1, 31)
    ]
    result = env.run(
        "--new",
        input="".join(t + "\n" for t in turns),
        terminal=env.terminal(),
        AGENT_ASSIST_CONTEXT_TOKENS="3000",
        AGENT_ASSIST_COMPACTION_INTERVAL="100",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    firsts = [  # each turn's first request: the budget compacts before it if need be
        size // 4
        for body, size in zip(server.requests, server.body_bytes, strict=True)
        if body["model"] == "test-model" and body["messages"][-1]["role"] == "user"
    ]
    assert len(firsts) == len(turns)
    assert "note: compacted turns" in result.stderr, "the budget compacted"
    assert [(n, size) for n, size in enumerate(firsts) if size > 3000] == []


def test_parallel_reads_of_large_files_stay_within_a_small_token_budget(
    env: Env, server: ChatServer
) -> None:
    """H146: one reply calling ``read_file`` on two large files in parallel sent their two
    returns, each up to half the budget, after the instructions and the tool definitions:
    a fresh session's second request was ~2,800 tokens for a budget of 2,500, and the model
    refused it (a strict server's context window), ending the turn in an error."""
    server.report_usage = True
    server.context_window = 2500 * 4
    for k in range(2):
        (env.workspace / f"big{k}.md").write_text(f"section {k} about triage queues. " * 400)
    result = env.run(
        "--new",
        input="read all: big0.md big1.md\n",
        terminal=env.terminal(),
        AGENT_ASSIST_CONTEXT_TOKENS="2500",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == ["recorded"]
    sizes = [size // 4 for size in server.body_bytes]
    assert len(sizes) == 2, "the calls' request and their returns' request"
    assert [size for size in sizes if size > 2500] == []


def _compacted_at_2500_tokens(env: Env) -> subprocess.CompletedProcess[str]:
    """Seven turns (pastes and reads of three 4,000-character files) at a budget of 2,500
    tokens, then ``/compact`` with the summary model; the run, which ended well."""
    for k in range(3):
        (env.workspace / f"notes{k}.md").write_text(paste(k, 4000) + "\n")
    turns = [f"read: notes{n % 3}.md" if n % 2 else paste(n, 1200) for n in range(1, 8)]
    result = env.run(
        "--new",
        input="".join(t + "\n" for t in [*turns, "/compact"]),
        terminal=env.terminal(),
        AGENT_ASSIST_CONTEXT_TOKENS="2500",
        AGENT_ASSIST_COMPACTION_INTERVAL="100",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    return result


def test_a_summary_request_stays_within_a_small_token_budget(
    env: Env, server: ChatServer
) -> None:
    """H146: with a budget of 2,500 tokens, ``/compact`` sent the summary model the whole
    window, up to 60,000 characters (the files read, ~3,900 tokens in all): a summary
    model with the chat model's window refused it (400), and was then not asked for 5
    minutes."""
    server.summary_window = 2500 * 4
    result = _compacted_at_2500_tokens(env)
    summaries = [
        size // 4
        for body, size in zip(server.requests, server.body_bytes, strict=True)
        if body["model"] == "summary-model"
    ]
    assert summaries, "the summary model was asked"
    assert [size for size in summaries if size > 2500] == []
    assert "failed" not in result.stderr, result.stderr
    assert "by the offline summarizer" not in result.stderr, result.stderr


def test_a_summary_request_is_held_to_the_budget_a_model_counting_more_leaves(
    env: Env, server: ChatServer
) -> None:
    """H149: the chat requests were held to the budget less what the model counted beyond
    the estimate (``token_overhead``), the summary model's to the whole budget: with a
    model counting 1,000 tokens more (a chat template), a summary asked for sent the summary
    model more than its window, the chat model's (400), and it was then not asked for 5
    minutes."""
    server.report_usage = True
    server.extra_prompt_tokens = 1000
    server.summary_window = (2500 - 1000) * 4
    result = _compacted_at_2500_tokens(env)
    summaries = [
        size // 4 + 1000
        for body, size in zip(server.requests, server.body_bytes, strict=True)
        if body["model"] == "summary-model"
    ]
    assert summaries, "the summary model was asked"
    assert [size for size in summaries if size > 2500] == []
    assert "failed" not in result.stderr, result.stderr


def chinese_paste(n: int, size: int) -> str:
    """``size`` characters of Chinese text (three UTF-8 bytes each), varied by ``n``."""
    words = "设计代理工具模型记忆评估部署队列工单优先级客户账单"
    return f"paste {n}: " + "".join(words[(n * 7 + i) % len(words)] for i in range(size))


def test_a_summary_request_in_another_script_stays_within_a_small_budget(
    env: Env, server: ChatServer
) -> None:
    """An attack (H156): the summarizer's input was held to the budget in characters, the
    chat requests in what the wire carries: after a Chinese paste over the budget, the
    summary request was twice the budget (5,428 tokens of 2,500), a summary model with the
    chat model's window refused it (400), and it was then not asked for 5 minutes."""
    server.summary_window = 2500 * 4
    turns = ["question 1", chinese_paste(2, 3500), "question 3", "/compact"]
    result = env.run(
        "--new",
        input="".join(t + "\n" for t in turns),
        terminal=env.terminal(),
        AGENT_ASSIST_CONTEXT_TOKENS="2500",
        AGENT_ASSIST_COMPACTION_INTERVAL="100",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    summaries = [
        size // 4
        for body, size in zip(server.requests, server.body_bytes, strict=True)
        if body["model"] == "summary-model"
    ]
    assert summaries, "the summary model was asked"
    assert [size for size in summaries if size > 2500] == []
    assert "failed" not in result.stderr, result.stderr
    assert "by the offline summarizer" not in result.stderr, result.stderr


def test_a_summary_model_with_a_smaller_window_than_the_chat_models_is_asked_within_it(
    env: Env, server: ChatServer
) -> None:
    """An attack (H177): a summary model whose context window is smaller than the chat
    model's (a small, cheap model for summaries) was sent the summary of the chat's budget,
    refused it (400 ``context_length_exceeded``), and was then not asked for 5 minutes,
    again and again: its summaries were never used. Its refusal teaches its window, and
    it is asked again at once within it."""
    server.summary_window = 1000 * 4
    turns = [paste(n, 1500) for n in range(1, 7)]
    result = env.run(
        "--new",
        input="".join(t + "\n" for t in [*turns, "/compact", "/resume"]),
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="100",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    assert "failed" not in result.stderr, result.stderr
    assert "by the offline summarizer" not in result.stderr, result.stderr
    assert "SUMMARY: the user designs a research agent" in result.stderr, result.stderr
    summaries = [
        size
        for body, size in zip(server.requests, server.body_bytes, strict=True)
        if body["model"] == "summary-model"
    ]
    learned = next(n for n, size in enumerate(summaries) if size <= 1000 * 4)
    assert [size for size in summaries[learned:] if size > 1000 * 4] == [], summaries


def test_the_turn_after_one_whose_own_reads_were_cut_reads_its_file_whole(
    env: Env, server: ChatServer
) -> None:
    """H189: a turn whose own parallel reads were cut to fit the budget is saved as it was
    sent, yet the characters cut were counted as coming back with the next request: the
    next turn took its request for ~7,300 tokens (it was ~800 of 4,000), warned so,
    compacted turns it did not need to, and held its own requests to what that phantom
    left, so that the small file it read reached the model cut."""
    server.report_usage = True
    for k in range(1, 4):
        (env.workspace / f"big{k}.txt").write_text(f"file {k} line\n" * 2000)
    small = "small file line\n" * 150
    (env.workspace / "small.txt").write_text(small)
    turns = ["hello", "read all: big1.txt big2.txt big3.txt", "read: small.txt"]
    result = env.run(
        "--new",
        input="".join(t + "\n" for t in turns),
        terminal=env.terminal(),
        AGENT_ASSIST_CONTEXT_TOKENS="4000",
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert "over the token budget" not in result.stderr
    assert "compacted" not in result.stderr, "turns of ~3,600 tokens are within 4,000"
    small_read = server.requests[-1]["messages"][-1]
    assert small_read["role"] == "tool" and small_read["content"] == small
