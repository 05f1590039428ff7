"""The user's rules and the paths they named, said in a long session's first turns, reach
the model after 60 turns of compactions and after a resume (the real supervisor and CLI,
the local OpenAI-compatible server as the model)."""

from __future__ import annotations

import json

import pytest

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
    terminal = env.terminal()
    result = env.run(
        "--new", input="".join(t + "\n" for t in turns), terminal=terminal, timeout=600
    )
    assert result.returncode == 0, result.stderr
    assert "note: compacted turns" in result.stderr
    chats = [r for r in server.requests if r["model"] == "test-model"]
    assert missing(chats[-1]) == []
    sent_before = len(server.requests)
    resumed = env.run(input="y\nwhat are my rules?\n", terminal=terminal, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    first = next(r for r in server.requests[sent_before:] if r["model"] == "test-model")
    assert missing(first) == []
