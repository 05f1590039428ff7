"""A summary model's answer wrapped in markup (a code fence, a JSON object, a tag, brackets)
is read for what it wraps: wrapping nothing, it is no summary; wrapping a summary, the
summary is kept without the wrapping."""

from __future__ import annotations

import json

import pytest

from session.compaction import (
    MAX_LLM_NARRATIVE_CHARS,
    LlmEventSummarizer,
    UnusableSummary,
    events_from_messages,
)
from tests.conversations import answering, five_turns, turn

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "answer",
    [
        '{"summary": null}',
        '{"summary": []}',
        '{"summary": "", "files": [], "decisions": []}',
        '```json\n{"summary": ""}\n```',
        "```\nnull\n```",
        "<summary></summary>",
        "<summary>\n</summary>",
        "(no summary)",
        "[No content]",
        "Summary: (empty)",
    ],
)
async def test_markup_wrapping_nothing_is_no_summary(answer: str) -> None:
    """An attack (H156): these were kept as the compaction's narrative, sent first in every
    request in place of the turns they replaced, and as the session's summary."""
    with pytest.raises(UnusableSummary, match="says nothing"):
        await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())


SAID = "The user designs a triage agent; billing tickets go to queue 2."


@pytest.mark.parametrize(
    "answer",
    [
        f"```\n{SAID}\n```",
        f"```markdown\n{SAID}\n```",
        f'{{"summary": "{SAID}"}}',
        f'```json\n{{"summary": "{SAID}", "decisions": []}}\n```',
        f"<summary>\n{SAID}\n</summary>",
    ],
)
async def test_a_wrapped_summary_is_kept_without_its_wrapping(answer: str) -> None:
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == SAID


async def test_json_that_is_not_a_wrapping_is_kept_as_it_is() -> None:
    """A summary that is JSON of its own (no ``summary`` field) is the model's words."""
    answer = '{"decisions": ["billing tickets go to queue 2"], "files": ["triage.md"]}'
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == answer


async def test_a_summary_field_that_is_not_a_text_is_kept_as_the_model_wrote_it() -> None:
    """A list of points under ``summary`` is a summary: it was taken for an empty one,
    and the model's answer thrown away."""
    answer = '{"summary": ["The user designs a triage agent", "billing goes to queue 2"]}'
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == answer


@pytest.mark.parametrize(
    "answer",
    [
        f"```python\nroute(ticket)\n```\n{SAID}\n```bash\npytest -q\n```",
        f"<summary>{SAID}</summary>\nLater: <summary>kept short</summary>",
    ],
)
async def test_an_answer_that_opens_and_ends_with_two_wrappings_is_kept_whole(answer: str) -> None:
    """Its first opening and last closing are not one wrapping: taking them off turned
    its code into text and its text into code."""
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == answer


async def test_the_other_fields_of_a_json_summary_are_kept_with_it() -> None:
    """H156 left them out: a model that answers the prompt's "every decision made" and
    "open questions" in fields of their own had them dropped, though the same answer in
    prose kept them in the narrative; the decisions a model reads in prose ("billing goes
    to queue 2, then") are in no ``Decision:`` line the turns' own extraction finds."""
    answer = (
        '{"summary": "The user designs a triage agent.", '
        '"decisions": ["billing tickets go to queue 2", "escalate after 2 hours"], '
        '"open_questions": ["which SLA for VIP customers?"], "files": [], "confidence": 0.9, '
        '"complete": true}'
    )
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == (
        "The user designs a triage agent.\n"
        "Decisions:\n- billing tickets go to queue 2\n- escalate after 2 hours\n"
        "Open questions:\n- which SLA for VIP customers?"
    )


async def test_a_json_answer_whose_summary_is_empty_keeps_its_decisions() -> None:
    answer = '{"summary": "", "decisions": ["billing tickets go to queue 2"]}'
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == "Decisions:\n- billing tickets go to queue 2"


async def test_the_other_fields_of_a_json_summary_never_make_it_a_runaway() -> None:
    """Kept whole, fields beside a summary within the cap made the answer a runaway: not
    used, and the summary model set aside for minutes for a summary it had made well."""
    said = "The user designs a triage agent. " * 30  # ~1,000 characters
    decisions = [f"queue {n} takes the tickets of product {n}" for n in range(60)]
    answer = json.dumps({"summary": said, "decisions": decisions})
    turns = [e for n in range(1, 31) for e in events_from_messages(turn(n, text=said), n)]
    event = await LlmEventSummarizer(answering(answer)).summarize_events(turns)
    assert event is not None and event.compaction is not None
    kept = event.compaction.compacted_content
    assert kept.startswith(said.strip() + "\nDecisions:\n- queue 0 takes")
    assert len(kept) <= MAX_LLM_NARRATIVE_CHARS
