"""Continuity across compaction: what of a long design conversation still reaches the model.

A scripted 100-turn agent-design conversation plants 22 decisions (12 stated by
the user, "Decision: ..." or "We decided ...", 10 recorded by the model with its
``record_decision`` tool) and 10 file paths (some only mentioned by the user),
each at its own turn. It runs through the real supervisor and terminal with the
offline summarizer, interval 10 and overlap 2, against a local Chat Completions
server that records every request, so "what the model is sent" is the request
itself (instructions and messages). It prints the share of decisions and of
paths present in the request of turn 100, and again in the first request after
a supervisor restart and a resume; and the request size in tokens (characters
/ 4) at turns 10, 50 and 100.

The model's replies are ``--reply-chars`` long (default 1,500, a typical design
answer; the test server's bare echo is ~250): the retained decisions and paths
are a fixed cost of about 600 tokens at turn 100, so the spread depends on how
much a window of turns weighs beside them.

Targets: at least 95% of decisions, 100% of paths; sizes within 10% of each
other (the spread is (max - min) / min).

    python -m bench.continuity [--reply-chars N]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench.common import AGENT_ASSIST
from tests.e2e.openai_server import ChatServer

TURNS = 100
DECISION_TARGET = 0.95
PATH_TARGET = 1.0
SIZE_SPREAD_TARGET = 0.10

# (turn, what the user types, the words that must reach the model)
STATED_DECISIONS = [
    (
        3,
        "Decision: the agent triages support tickets for the billing team first.",
        "triages support tickets for the billing team",
    ),
    (
        9,
        "We decided that urgent tickets page the on-call engineer.",
        "urgent tickets page the on-call engineer",
    ),
    (
        14,
        "Decision: classification uses gpt-4.1-mini with temperature 0.",
        "gpt-4.1-mini with temperature 0",
    ),
    (
        22,
        "We decided to keep a human in the loop for refunds above 100 EUR.",
        "human in the loop for refunds above 100 EUR",
    ),
    (
        27,
        "Decision: the routing table lives in config/routing.yaml.",
        "routing table lives in config/routing.yaml",
    ),
    (
        35,
        "We agreed that every answer cites the ticket id it used.",
        "every answer cites the ticket id",
    ),
    (
        41,
        "Decision: memory is a per-customer summary, never raw transcripts.",
        "per-customer summary, never raw transcripts",
    ),
    (
        48,
        "We decided on a nightly eval run over 500 labelled tickets.",
        "nightly eval run over 500 labelled tickets",
    ),
    (
        56,
        "Decision: tool errors are retried twice, then escalated.",
        "retried twice, then escalated",
    ),
    (
        63,
        "We decided the agent answers in the customer's language.",
        "answers in the customer's language",
    ),
    (
        71,
        "Decision: deploy behind the existing helpdesk webhook.",
        "behind the existing helpdesk webhook",
    ),
    (88, "We decided to log prompts with PII masked.", "log prompts with PII masked"),
]
TOOL_DECISIONS = [
    (
        6,
        "decide: Use a three-way classifier: billing, technical, account.",
        "three-way classifier: billing, technical, account",
    ),
    (18, "decide: Escalation threshold is a confidence below 0.6.", "confidence below 0.6"),
    (
        25,
        "decide: The spec is the single source of truth for prompts.",
        "single source of truth for prompts",
    ),
    (
        33,
        "decide: Store embeddings of resolved tickets for retrieval.",
        "embeddings of resolved tickets",
    ),
    (
        44,
        "decide: Weekly review of misrouted tickets with the team lead.",
        "misrouted tickets with the team lead",
    ),
    (52, "decide: Rate-limit outbound emails to 5 per ticket.", "5 per ticket"),
    (
        67,
        "decide: Summaries of long threads before classification.",
        "long threads before classification",
    ),
    (76, "decide: Canary 10 percent of traffic for a week.", "Canary 10 percent of traffic"),
    (83, "decide: Alert when the escalation rate doubles.", "escalation rate doubles"),
    (94, "decide: Freeze the prompt set before the audit.", "Freeze the prompt set"),
]
PATHS = [
    (2, "The spec goes in agent_spec.md as usual.", "agent_spec.md"),
    (11, "Example tickets are in data/tickets/sample.jsonl for now.", "data/tickets/sample.jsonl"),
    (16, "The classifier prompt draft sits in prompts/classifier.md.", "prompts/classifier.md"),
    (27, "", "config/routing.yaml"),  # named inside a stated decision above
    (30, "Tool schemas will go to tools/schemas.json.", "tools/schemas.json"),
    (38, "See docs/escalation-policy.md for the escalation policy.", "docs/escalation-policy.md"),
    (46, "Eval labels are kept in eval/labels.csv.", "eval/labels.csv"),
    (59, "The webhook handler is src/webhook/handler.py.", "src/webhook/handler.py"),
    (73, "Deployment settings: deploy/helm/values.yaml.", "deploy/helm/values.yaml"),
    (91, "The audit checklist is in compliance/audit.md.", "compliance/audit.md"),
]
FILLER = (
    "Let us keep refining the triage agent: think about the tone of replies, the edge cases of "
    "multi-topic tickets, what the dashboard should show and how we measure success over time."
)


def script() -> list[str]:
    planted: dict[int, list[str]] = {}
    for turn, text, _ in [*STATED_DECISIONS, *TOOL_DECISIONS, *PATHS]:
        if text:
            planted.setdefault(turn, []).append(text)
    lines = []
    for turn in range(1, TURNS + 1):
        texts = planted.get(turn, [])
        tool = [t for t in texts if t.startswith("decide: ")]
        if tool:
            lines.append(tool[0])  # the model records it with its tool
        else:
            lines.append(f"({turn}) " + " ".join([*texts, FILLER]))
    return lines


ANSWER = (
    "Here is how I would take that into the design: the classifier, the routing, the "
    "escalation path and the evaluation all need to agree, so I restate the relevant part "
    "of the spec, list the trade-offs and propose the next step for you to confirm. "
)


class DesignServer(ChatServer):
    """Replies of ``reply_chars``: the echo, then a design answer's worth of text."""

    def __init__(self, reply_chars: int) -> None:
        super().__init__()
        self.reply_chars = reply_chars

    def reply_for(self, body: dict[str, Any]) -> str:
        text = super().reply_for(body)
        if text == "recorded" or len(text) >= self.reply_chars:
            return text
        padding = ANSWER * (self.reply_chars // len(ANSWER) + 1)
        return (text + " " + padding)[: self.reply_chars]


def request_text(request: dict[str, Any]) -> str:
    return "\n".join(
        m["content"] if isinstance(m.get("content"), str) else json.dumps(m)
        for m in request["messages"]
    )


def tokens(request: dict[str, Any]) -> int:
    return len(request_text(request)) // 4


def summary_tokens(request: dict[str, Any]) -> int:
    """The compaction's part of a request (pydantic-ai sends it as a summary-tagged user
    message)."""
    return sum(
        len(m["content"]) // 4
        for m in request["messages"]
        if isinstance(m.get("content"), str) and "<pyai:conversation_summary>" in m["content"]
    )


def share(text: str, wanted: list[str]) -> tuple[float, list[str]]:
    missing = [w for w in wanted if w not in text]
    return 1 - len(missing) / len(wanted), missing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reply-chars", type=int, default=1500)
    reply_chars = parser.parse_args().reply_chars
    base = Path(tempfile.mkdtemp(prefix="aa-continuity-"))
    workspace = base / "ws"
    workspace.mkdir()
    terminal = subprocess.Popen(["sleep", "3600"])
    decisions = [w for _, _, w in STATED_DECISIONS + TOOL_DECISIONS]
    paths = [w for _, _, w in PATHS]
    try:
        with DesignServer(reply_chars) as server:
            env = {
                k: v
                for k, v in os.environ.items()
                if not k.startswith(("AGENT_ASSIST_", "OPENAI_"))
            }
            env.update(
                AGENT_ASSIST_HOME=str(base / "home"),
                AGENT_ASSIST_RUNTIME_DIR=str(base / "run"),
                AGENT_ASSIST_TERMINAL_PID=str(terminal.pid),
                AGENT_ASSIST_MODEL="openai-chat:bench-model",
                AGENT_ASSIST_COMPACTION_INTERVAL="10",
                AGENT_ASSIST_COMPACTION_OVERLAP="2",
                OPENAI_BASE_URL=server.base_url,
                OPENAI_API_KEY="sk-bench-not-a-key",
            )

            def run(*args: str, text: str = "") -> subprocess.CompletedProcess[str]:
                return subprocess.run(
                    [AGENT_ASSIST, *args],
                    input=text,
                    text=True,
                    capture_output=True,
                    cwd=workspace,
                    env=env,
                    timeout=600,
                    check=False,
                )

            lines = script()
            done = run("--new", text="\n".join(lines) + "\n")
            if done.returncode != 0:
                raise SystemExit(f"the conversation failed: {done.stderr[-2000:]}")
            chats = [r for r in server.requests if r["model"] == "bench-model"]
            # The first request of each turn ends with that turn's user message.
            firsts = [r for r in chats if r["messages"][-1]["role"] == "user"]
            if len(firsts) != TURNS:
                raise SystemExit(f"expected {TURNS} turns, the model saw {len(firsts)}")
            compactions = done.stdout.count("note: compacted") + done.stderr.count(
                "note: compacted"
            )

            run("supervisor", "stop")
            resumed = run("--yes", text="(101) Where were we with the triage agent?\n")
            if resumed.returncode != 0:
                raise SystemExit(f"the resume failed: {resumed.stderr[-2000:]}")
            after = [r for r in server.requests if r["model"] == "bench-model"][-1]
    finally:
        subprocess.run(
            [AGENT_ASSIST, "supervisor", "stop"], env=env, capture_output=True, check=False
        )
        terminal.kill()
        terminal.wait()
        shutil.rmtree(base, ignore_errors=True)

    print(
        f"{TURNS} turns, replies of {reply_chars} characters, interval 10, overlap 2, "
        f"offline summarizer: {compactions} compactions"
    )
    verdicts = []
    for label, request in (("turn 100", firsts[-1]), ("after resume", after)):
        text = request_text(request)
        d_share, d_missing = share(text, decisions)
        p_share, p_missing = share(text, paths)
        print(
            f"{label:>13}: decisions {d_share:.0%} of {len(decisions)}, "
            f"file paths {p_share:.0%} of {len(paths)}"
            + (f"; missing {d_missing + p_missing}" if d_missing or p_missing else "")
        )
        verdicts += [d_share >= DECISION_TARGET, p_share >= PATH_TARGET]
    sizes = {n: tokens(firsts[n - 1]) for n in (10, 50, 100)}
    spread = (max(sizes.values()) - min(sizes.values())) / min(sizes.values())
    print(
        "request size (tokens, chars/4): "
        + ", ".join(f"turn {n} {size:,}" for n, size in sizes.items())
        + f"; spread {spread:.0%} (target <= {SIZE_SPREAD_TARGET:.0%}); "
        + f"turns 50 to 100: {(sizes[100] - sizes[50]) / sizes[50]:+.0%}"
    )
    summaries = {n: summary_tokens(firsts[n - 1]) for n in (10, 50, 100)}
    print(
        "of which the compaction (decisions, paths, narrative): "
        + ", ".join(f"turn {n} {size:,}" for n, size in summaries.items())
        + "; the turns after it: "
        + ", ".join(f"turn {n} {sizes[n] - summaries[n]:,}" for n in sizes)
    )
    verdicts.append(spread <= SIZE_SPREAD_TARGET)
    print(
        f"targets: decisions >= {DECISION_TARGET:.0%}, paths {PATH_TARGET:.0%}, "
        f"size spread <= {SIZE_SPREAD_TARGET:.0%}: "
        + ("within target" if all(verdicts) else "OVER target")
    )


if __name__ == "__main__":
    main()
