"""A session resumed before each of its turns sends the model what the same session sends
had it never left: the same messages, compaction and all (its instructions carry the
resume context besides), as a pydantic-ai FunctionModel receives them."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from actors.assistant import TurnDeps, build_agent
from session.compaction import (
    EventsCompactionConfig,
    OfflineEventSummarizer,
    SummaryTooLong,
    finish_compaction,
)
from session.filesystem import FileDrift
from session.lifecycle import PersistPolicy, SessionLifecycle

pytestmark = pytest.mark.anyio

T0 = datetime(2026, 3, 30, 10, 15, tzinfo=UTC)
LONG_REPLY = "The triage agent routes each ticket by product, urgency and plan. " * 20
SHORT_REPLY = "ok"


def sent_as(messages: list[ModelMessage]) -> list[list[tuple[str, str]]]:
    """What the model read: each message's parts, kind and words (no times, no ids)."""
    out = []
    for message in ModelMessagesTypeAdapter.dump_python(messages, mode="json"):
        parts = message["parts"]
        out.append([(p["part_kind"], str(p.get("content", p.get("args")))) for p in parts])
    return out


def recording_model(seen: list[list[list[tuple[str, str]]]]) -> FunctionModel:
    """Answers the third turn of every three at length, the others with a word (a
    compaction of such a window is not made smaller by sending its last turn again)."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(sent_as(messages))
        return ModelResponse(parts=[TextPart(LONG_REPLY if len(seen) % 3 == 0 else SHORT_REPLY)])

    return FunctionModel(answer)




def compacted(lc: SessionLifecycle, *, force: bool = False) -> SessionLifecycle:
    """``lc`` after the compaction due now (``force``: ``/compact``), if any. A failure
    does not back off (the back-off is the running session's, which a resume starts
    without)."""
    window = lc.compaction_due(force=force)
    if window is None:
        return lc
    lc = lc.begin_compaction(window)
    try:
        compaction = finish_compaction(window, OfflineEventSummarizer().summarize(window.events))
    except SummaryTooLong:  # no back-off: a resumed session tries again at once
        return lc.compaction_failed(lc.generation, back_off=False)
    assert compaction is not None
    done = lc.compacted(
        compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None, back_off=False
    )
    return done.lifecycle


async def run_turn(
    lc: SessionLifecycle, model: FunctionModel, prompt: str, workspace: Path
) -> SessionLifecycle:
    deps = TurnDeps(workspace, resume_context=lc.instructions())
    result = await build_agent(model).run(
        prompt, message_history=lc.request_history(), deps=deps
    )
    done = lc.begin_turn(0).complete_turn(
        result.new_messages(), now=T0, manifest={}, agent_spec_path=None
    )
    return compacted(done.lifecycle)


def resumed(lc: SessionLifecycle, policy: PersistPolicy) -> SessionLifecycle:
    saved = lc.write(T0, {}, None).state
    return SessionLifecycle(policy=policy).resume(saved, FileDrift()).lifecycle


@pytest.mark.parametrize(("interval", "overlap"), [(3, 1), (3, 2), (1, 1), (2, 2), (0, 0)])
async def test_a_session_resumed_at_every_turn_sends_what_the_live_one_sends(
    tmp_path: Path, interval: int, overlap: int
) -> None:
    policy = PersistPolicy(compaction=EventsCompactionConfig(interval, overlap))
    live_seen: list[Any] = []
    resumed_seen: list[Any] = []
    live_model, resumed_model = recording_model(live_seen), recording_model(resumed_seen)
    live = SessionLifecycle(policy=policy).start_fresh(T0).lifecycle
    again = SessionLifecycle(policy=policy).start_fresh(T0).lifecycle
    for number in range(1, 11):
        again = resumed(again, policy)
        if number in (4, 7) and interval == 0:  # /compact, compaction being off
            live, again = compacted(live, force=True), compacted(again, force=True)
        prompt = f"question {number} about the triage agent"
        live = await run_turn(live, live_model, prompt, tmp_path)
        again = await run_turn(again, resumed_model, prompt, tmp_path)
        assert resumed_seen[-1] == live_seen[-1], f"turn {number}"
    assert live.compaction is not None
