"""What a summary model reads names each turn by its number in the session, and the turns
an earlier summary already covers (the overlap a window reads again, the compacted turns
memory keeps) as such: unnumbered, the overlap read as turns after that summary."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import partial
from typing import Any

import anyio
import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from actors.base import ActorRef, run_supervised
from actors.compaction import CompactionActor
from actors.messages import Summarize
from session.compaction import (
    EventsCompactionConfig,
    LlmEventSummarizer,
    OfflineEventSummarizer,
    finish_compaction,
)
from session.lifecycle import PersistPolicy, SessionLifecycle
from tests.conversations import turn
from tests.workers import SUMMARY_MODEL, local_models

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 3, 30, 10, 15, tzinfo=UTC)
REPLY = "The triage agent routes each ticket by product, urgency and the customer's plan. " * 2
HEADING_RE = re.compile(r"^\[turn (\d+)(, already in the earlier summary[^\]]*)?\]$", re.MULTILINE)


def headings(prompt: str) -> list[tuple[int, bool]]:
    """Each turn heading of a summarizer's input: its number, and whether it is said to be
    one the earlier summary covers."""
    return [(int(m[1]), m[2] is not None) for m in HEADING_RE.finditer(prompt)]


def after_turn(lc: SessionLifecycle, number: int) -> SessionLifecycle:
    done = lc.begin_turn(0).complete_turn(
        turn(number, text=REPLY), now=T0, manifest={}, agent_spec_path=None
    )
    return done.lifecycle


async def test_the_compaction_prompt_numbers_the_overlap_as_the_turns_it_is() -> None:
    prompts: list[str] = []

    def summary_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        prompts.extend(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        return ModelResponse(parts=[TextPart(f"Summary {len(prompts)}: the triage design.")])

    summarizer = LlmEventSummarizer(FunctionModel(summary_model))
    policy = PersistPolicy(compaction=EventsCompactionConfig(3, 2))
    lc = SessionLifecycle(policy=policy).start_fresh(T0).lifecycle
    for number in range(1, 10):
        lc = after_turn(lc, number)
        window = lc.compaction_due()
        if window is not None:
            lc = lc.begin_compaction(window)
            compaction = finish_compaction(window, await summarizer.summarize_events(window.events))
            assert compaction is not None
            lc = lc.compacted(
                compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None
            ).lifecycle
    assert len(prompts) == 3
    assert headings(prompts[0]) == [(1, False), (2, False), (3, False)]
    assert "(turns 1-3, compacted)" in prompts[1]
    assert headings(prompts[1]) == [(2, True), (3, True), (4, False), (5, False), (6, False)]
    assert "(turns 1-6, compacted)" in prompts[2]
    assert headings(prompts[2]) == [(5, True), (6, True), (7, False), (8, False), (9, False)]
    # each heading comes right before its turn's own words
    assert "[turn 5, already in the earlier summary" in prompts[2].split("question 5")[0]
    assert prompts[2].split("question 7")[0].endswith("[turn 7]\nuser: ")


async def test_the_session_summary_numbers_the_compacted_turns_memory_keeps(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session summary is asked of the history in memory, which keeps the compacted
    turns the next window reads again: they were numbered as the turns after the earlier
    summary (turns 7 and 8 of a compaction of 1-6)."""
    policy = PersistPolicy(compaction=EventsCompactionConfig(3, 2))
    lc = SessionLifecycle(policy=policy).start_fresh(T0).lifecycle
    for number in range(1, 7):
        lc = after_turn(lc, number)
        window = lc.compaction_due()
        if window is not None:
            lc = lc.begin_compaction(window)
            summarized = OfflineEventSummarizer().summarize(window.events)
            compaction = finish_compaction(window, summarized)
            assert compaction is not None
            lc = lc.compacted(
                compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None
            ).lifecycle
    lc = after_turn(lc, 7)
    assert lc.compaction is not None and lc.compaction.end_invocation == 6
    with local_models(monkeypatch) as chat_server:
        async with anyio.create_task_group() as tg:
            compaction_actor: ActorRef[Any] = await tg.start(
                partial(
                    run_supervised,
                    "compaction",
                    lambda ref: CompactionActor(ref, summary_model=SUMMARY_MODEL),
                )
            )
            state = lc.state
            assert state is not None
            request = Summarize(
                state.session_id, lc.history, state.decisions, lc.earlier_summary()
            )
            await compaction_actor.ask(request, timeout=10)
            tg.cancel_scope.cancel()
    (sent,) = [r for r in chat_server.requests if r["model"] == "summary-model"]
    prompt = "\n".join(str(m["content"]) for m in sent["messages"] if m["role"] == "user")
    assert "(turns 1-6, compacted)" in prompt
    assert headings(prompt) == [(5, True), (6, True), (7, False)]
