"""A summary model's answer made only of headings (Markdown ``#`` lines, bold or labelled
lines with nothing under them) says nothing: it is no summary."""

from __future__ import annotations

import pytest

from session.compaction import LlmEventSummarizer, UnusableSummary
from tests.conversations import answering, five_turns

pytestmark = pytest.mark.anyio



@pytest.mark.parametrize(
    "headings",
    [
        "# Summary\n## Decisions\n## Open questions\n## Files",
        "**Summary**\n\n**Decisions:**\n\n**Files:**",
        "## Narrative\n\nDecisions:\n-\nRules:\n---",
    ],
)
async def test_an_answer_of_headings_only_is_no_summary(headings: str) -> None:
    """A helper's attack: "# Summary / ## Decisions / ## Open questions / ## Files" was
    kept as the compaction's narrative, sent first in every request, and as the session's
    summary: the listing's SUMMARY column read "Decisions"."""
    with pytest.raises(UnusableSummary, match="says nothing"):
        await LlmEventSummarizer(answering(headings)).summarize_events(five_turns())


async def test_headings_with_words_under_them_are_a_summary() -> None:
    answer = "## Summary\nThe user designs a triage agent.\n## Decisions\n- Route by product."
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == answer
