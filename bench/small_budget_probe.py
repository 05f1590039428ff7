"""Probe: 40 varied turns (tests/e2e/test_small_budget.py) through the real supervisor, each
request's size (its body / 4, what the model reads / 4) against small token budgets.

Run: ``python -m bench.small_budget_probe [BUDGET ...]`` (default 2000 3000 4000)."""

from __future__ import annotations

import statistics
import sys
from typing import Any

from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer
from tests.e2e.test_small_budget import content_tokens, conversation

TOLD = ("warning", "error", "note")


def probe(budget: int, usage: bool) -> dict[str, Any]:
    """One chat of the 40 turns; ``usage``: the server reports its count (body bytes / 4)."""
    env = Env.create()
    try:
        with ChatServer() as server:
            server.report_usage = usage
            env.extra.update(
                OPENAI_BASE_URL=server.base_url,
                OPENAI_API_KEY="sk-test",
                AGENT_ASSIST_MODEL="openai-chat:test-model",
                AGENT_ASSIST_CONTEXT_TOKENS=str(budget),
            )
            turns = conversation(env)
            result = env.run(
                "--new",
                input="".join(t + "\n" for t in turns),
                terminal=env.terminal(),
                timeout=600,
            )
            chats = [
                (body, size)
                for body, size in zip(server.requests, server.body_bytes, strict=True)
                if body["model"] == "test-model"
            ]
            return {
                "rc": result.returncode,
                "told": [line for line in result.stderr.splitlines() if line.startswith(TOLD)],
                "body": [size // 4 for _, size in chats],
                "content": [content_tokens(body) for body, _ in chats],
            }
    finally:
        env.cleanup()


def describe(name: str, sizes: list[int], budget: int) -> str:
    over = [s for s in sizes if s > budget]
    worst = f" (worst +{max(over) - budget}, {max(over) / budget - 1:.0%})" if over else ""
    return (
        f"  {name:9} max {max(sizes)} ({max(sizes) / budget:.0%}) "
        f"p50 {statistics.median(sizes):.0f} p90 {statistics.quantiles(sizes, n=10)[-1]:.0f}; "
        f"over: {len(over)}/{len(sizes)}{worst}"
    )


def main(budgets: list[int]) -> None:
    for usage in (False, True):
        for budget in budgets:
            r = probe(budget, usage)
            print(f"budget {budget} usage={usage} rc={r['rc']} requests={len(r['body'])}")
            print(describe("body/4", r["body"], budget))
            print(describe("content/4", r["content"], budget))
            for line in sorted(set(r["told"])):
                print(f"    {r['told'].count(line)} x {line[:150]}")
            sys.stdout.flush()


if __name__ == "__main__":
    main([int(a) for a in sys.argv[1:]] or [2000, 3000, 4000])
