"""The summary model is given two prompts: the compaction's (``DEFAULT_PROMPT_TEMPLATE``)
and the session summary's (``SUMMARY_TEMPLATE``). An answer that echoes either is no
summary, whichever of the two it was sent."""

from __future__ import annotations

import pytest

from actors.compaction import SUMMARY_TEMPLATE
from session.compaction import (
    DEFAULT_PROMPT_TEMPLATE,
    PLACEHOLDER,
    EchoedSummary,
    LlmEventSummarizer,
)
from tests.conversations import answering, five_turns

pytestmark = pytest.mark.anyio

TEMPLATES = {"compaction": DEFAULT_PROMPT_TEMPLATE, "session summary": SUMMARY_TEMPLATE}


@pytest.mark.parametrize(
    ("sent", "echoed"), [("compaction", "session summary"), ("session summary", "compaction")]
)
async def test_an_answer_echoing_the_other_summary_prompt_is_refused(
    sent: str, echoed: str
) -> None:
    """A helper's report: only an echo of the prompt actually sent was detected; a
    compaction whose answer was the session summary's instructions (a model or proxy
    that answers from a cache, or mixes up two requests) became the narrative sent first
    in every request."""
    instructions = TEMPLATES[echoed].split(PLACEHOLDER)[0].strip()
    answer = f"Summary: {instructions}\nThe user designs a triage agent."
    summarizer = LlmEventSummarizer(answering(answer))
    summarizer = summarizer.with_prompt_template(TEMPLATES[sent])
    events = five_turns()
    with pytest.raises(EchoedSummary, match="answered with its instructions"):
        await summarizer.summarize_events(events)


async def test_a_sentence_of_the_session_summary_prompt_echoed_is_refused() -> None:
    """The session summary's prompt is one long line of sentences: an answer that repeats
    its second sentence alone is as much an echo as one that repeats its start."""
    summarizer = LlmEventSummarizer(
        answering(
            "Keep every file path, every decision and every rule the user set.\n"
            "The user designs a triage agent."
        )
    )
    events = five_turns()
    with pytest.raises(EchoedSummary, match="answered with its instructions"):
        await summarizer.summarize_events(events)
