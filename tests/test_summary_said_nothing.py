"""A summary model's answer that only refuses, in whatever language the conversation was
in, or only announces a summary that never follows, is no summary."""

from __future__ import annotations

import pytest

from session.compaction import LlmEventSummarizer, UnusableSummary
from tests.conversations import answering, five_turns

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "answer",
    [
        "Lo siento, no puedo resumir esta conversación.",
        "No puedo ayudar con eso.",
        "Je suis désolé, mais je ne peux pas résumer cette conversation.",
        "Désolé, je ne peux pas faire cela.",
        "Es tut mir leid, aber ich kann diese Unterhaltung nicht zusammenfassen.",
        "Leider kann ich das nicht zusammenfassen.",
        "Desculpe, não posso ajudar com isso.",
        "Mi dispiace, non posso riassumere questa conversazione.",
        "抱歉，我无法总结这段对话。",  # noqa: RUF001
        "很抱歉，我不能帮助你。",  # noqa: RUF001
        "申し訳ありませんが、この会話を要約することはできません。",
        "Извините, я не могу помочь с этим.",  # noqa: RUF001
    ],
)
async def test_a_refusal_in_another_language_is_no_summary(answer: str) -> None:
    """An attack (H156): a refusal was told from the English words alone; in the user's
    language (a summary model often answers in the conversation's), it was kept as the
    compaction's narrative, sent first in every request, and as the session's summary."""
    with pytest.raises(UnusableSummary, match="refused"):
        await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())


@pytest.mark.parametrize(
    "answer",
    [
        "Sure! Here is the summary.",
        "Here's a concise summary of the conversation.",
        "I have summarized the conversation.",
        "Okay.",
        "Done!",
        "Certainly. Below is a summary of our discussion so far.",
    ],
)
async def test_an_answer_announcing_a_summary_that_never_follows_is_no_summary(
    answer: str,
) -> None:
    """An attack (H156): "Sure! Here is the summary." (no colon, so not taken for a lone
    heading) was kept as the narrative of the turns it replaced."""
    with pytest.raises(UnusableSummary, match="says nothing"):
        await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())


@pytest.mark.parametrize(
    "answer",
    [
        "Leider scheiterte der Build; der Nutzer will ihn in CI wiederholen.",
        "Sure enough, the user chose queue 2 for billing tickets.",
        "The user could not decide; I cannot see a decision yet on the billing queue.",
        "Here is the plan: billing tickets go to queue 2, refunds to queue 3.",
    ],
)
async def test_a_summary_that_begins_like_those_is_kept(answer: str) -> None:
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == answer
