"""The user's rules and the paths they named, said in a long session's first turns, reach
the model after 60 turns of compactions and after a resume (the real supervisor and CLI,
the local OpenAI-compatible server as the model)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from session.lifecycle import RULES_HEADING
from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer

RULES = (
    "always use tabs",
    "never touch prod",
    "don't use emojis",
    "I prefer tabs over spaces",
    "please make sure every reply ends with a summary",
    "from now on answer in French",
    "use snake_case for all new files",
    "keep functions under 20 lines",
)
PATHS = (
    "src/app/main.py", "./run.sh", "~/notes.md", "/etc/hosts", "C:\\x\\y.py", "docs/", "Makefile"
)


def missing(body: dict[str, object]) -> list[str]:
    """The rules and paths a request's messages (instructions included) do not carry."""
    sent = json.dumps(body["messages"], ensure_ascii=False)
    return [text for text in (*RULES, *PATHS) if json.dumps(text)[1:-1] not in sent]


def compacted_then_resumed(
    env: Env, server: ChatServer, turns: list[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Pipes ``turns`` to a new chat (compacted on the way), then resumes it and asks once:
    the chat's last request and the resumed chat's first."""
    terminal = env.terminal()
    result = env.run(
        "--new", input="".join(t + "\n" for t in turns), terminal=terminal, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "note: compacted turns" in result.stderr
    last: dict[str, Any] = [r for r in server.requests if r["model"] == "test-model"][-1]
    sent_before = len(server.requests)
    resumed = env.run(input="y\nwhat are my rules?\n", terminal=terminal, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    first = next(r for r in server.requests[sent_before:] if r["model"] == "test-model")
    return last, first


@pytest.mark.parametrize("summary_model", [None, "openai-chat:summary-model"])
def test_rules_and_paths_of_the_first_turns_reach_the_model_after_60_turns_and_a_resume(
    env: Env, server: ChatServer, summary_model: str | None
) -> None:
    """H189: "I prefer tabs over spaces" and "keep functions under 20 lines" were dropped by
    the first compaction, and so never reached the model again."""
    if summary_model is not None:
        env.extra["AGENT_ASSIST_SUMMARY_MODEL"] = summary_model
    env.extra.update(AGENT_ASSIST_CONTEXT_TOKENS="4000", AGENT_ASSIST_COMPACTION_INTERVAL="3")
    turns = [*RULES, *(f"Please look at {path} for me" for path in PATHS)]
    turns += [f"question {n}: " + "more about the triage design " * (5 + n % 20) for n in range(60)]
    last, first = compacted_then_resumed(env, server, turns)
    assert missing(last) == []
    assert missing(first) == []


HOUSE_RULES = (
    "Be concise.",
    "Stop apologizing.",
    "Prefer f-strings.",
    "Indent with 2 spaces.",
    "Functions should be short.",
    "Tests go in tests/.",
    "Ask before deleting files.",
    "Please keep the tone formal.",
    "Log with structlog, not print.",
    "Please use tabs instead of spaces.",
    "Add a docstring to every function.",
    "Let's use tabs from now on.",
    "Our convention is tabs.",
    "Use only the standard library.",
    "Target Python 3.11.",
    "Dates in ISO 8601.",
)


def rules_told(body: dict[str, Any]) -> list[str]:
    """The rules a request's instructions give the model (``RULES_HEADING``'s list): the
    compaction's narrative may quote a short message too, but only as context."""
    for message in body["messages"]:
        content = message.get("content")
        if message["role"] == "system" and isinstance(content, str) and RULES_HEADING in content:
            listed = content.split(RULES_HEADING, 1)[1].split("\n\n", 1)[0]
            return [line[2:] for line in listed.splitlines() if line.startswith("- ")]
    return []


def test_house_rules_said_in_a_few_words_reach_the_model_after_offline_compactions(
    env: Env, server: ChatServer
) -> None:
    """H189: "Be concise.", "Tests go in tests/.", "Our convention is tabs." and the rest,
    said in the first turns, were dropped by the first offline compaction: not among the
    rules the model is told to follow, after it or after a resume."""
    env.extra.update(AGENT_ASSIST_CONTEXT_TOKENS="4000", AGENT_ASSIST_COMPACTION_INTERVAL="3")
    turns = [*HOUSE_RULES]
    turns += [f"question {n}: " + "more about the triage design " * (5 + n % 20) for n in range(24)]
    last, first = compacted_then_resumed(env, server, turns)
    assert [rule for rule in HOUSE_RULES if rule not in rules_told(last)] == []
    assert [rule for rule in HOUSE_RULES if rule not in rules_told(first)] == []
