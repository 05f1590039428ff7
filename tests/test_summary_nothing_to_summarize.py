"""A summary model's answer that only says there is nothing to summarize is no summary (the
offline summarizer writes in its place, as for the other answers that say nothing); a
short summary that names nothing in passing is one."""

from __future__ import annotations

import pytest

from session.compaction import LlmEventSummarizer, UnusableSummary
from tests.conversations import answering, five_turns

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "answer",
    [
        "There is nothing to summarize.",
        "There\u2019s nothing here to summarize yet.",
        "Summary: Nothing to summarize.",
        "**Summary:** there is no conversation to summarize",
        "I don't see any conversation to summarize.",
        "Nothing worth summarizing.",
        "The conversation is empty.",
        "No conversation was provided.",
        "No summary available.",
    ],
)
async def test_an_answer_that_there_is_nothing_to_summarize_is_no_summary(answer: str) -> None:
    """H112's find: "There is nothing to summarize." was kept as the compaction's narrative
    of five turns of work, sent first in every request and listed as the session's
    summary."""
    with pytest.raises(UnusableSummary, match="says nothing"):
        await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())


@pytest.mark.parametrize(
    "answer",
    [
        "The user greeted us; no decisions yet.",
        "No decisions were made; the user is exploring the routing table.",
        "Nothing was decided yet; the user asked about agent_spec.md.",
        "Greetings only.",
    ],
)
async def test_a_short_summary_that_names_nothing_in_passing_is_a_summary(answer: str) -> None:
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == answer


@pytest.mark.parametrize(
    "answer",
    [
        "There isn't anything to summarize.",
        "There is not anything to summarize yet.",
        "It appears there is nothing to summarize.",
        "It seems that there is nothing to summarize here.",
        "The conversation is empty, so there is nothing to summarize.",
    ],
)
async def test_nothing_to_summarize_said_otherwise_is_no_summary_either(answer: str) -> None:
    """Other words for the same answer were kept as the compaction's narrative: "anything"
    was not read as "any", nor a negated "there is", nor the answer's two halves together."""
    with pytest.raises(UnusableSummary, match="says nothing"):
        await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
