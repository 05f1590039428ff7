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


@pytest.mark.parametrize(
    "answer",
    [
        "Sorry, the user said, was the word the bot overused; they chose queue 2 for billing.",
        "Lo siento, el usuario decidió usar la cola 2 para la facturación.",
        "Désolé, l'utilisateur a choisi la file 2 pour la facturation.",
        "Es tut mir leid, sagte der Nutzer, und wählte Warteschlange 2 für Rechnungen.",
        "Desculpe, o usuário escolheu a fila 2 para cobrança.",
        "Mi dispiace, l'utente ha scelto la coda 2 per la fatturazione.",
        "Извините — так пользователь начал; он выбрал очередь 2 для счетов.",
        "抱歉开头的消息之后，用户选择了队列 2 来处理账单。",  # noqa: RUF001
        "抱歉的话题之后，用户选了队列 2。",  # noqa: RUF001
    ],
)
async def test_a_short_summary_that_begins_with_an_apology_word_is_kept(answer: str) -> None:
    """H159: a real summary that opens with an apology word ("Sorry, the user...", "Lo
    siento, el usuario...") was taken for a refusal and thrown away: the word alone is no
    refusal, only with the model's own inability or its "but"."""
    event = await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == answer


@pytest.mark.parametrize(
    "answer",
    [
        "Sorry, I can't help with that.",
        "Sorry, but I cannot summarize this conversation.",
        "I'm sorry, but I can only help with agent design.",
        "I apologize, but this request goes against my guidelines.",
        "Sorry, that's not something I can do.",
        "Sorry.",
        "I'm sorry.",
        "I cannot help with that.",
        "Unfortunately, I am not able to summarize this.",
        "As an AI, I do not summarize private conversations.",
        "Lo siento, pero no puedo ayudar con eso.",
        "Lo siento, no es algo que pueda hacer.",
        "Lo siento.",
        "Désolé, mais ce n'est pas possible.",
        "Es tut mir leid, aber das kann ich nicht tun.",
        "申し訳ありませんが、この会話を要約することはできません。",
        "对不起。",
    ],
)
async def test_a_refusal_that_begins_with_an_apology_is_no_summary(answer: str) -> None:
    with pytest.raises(UnusableSummary, match="refused"):
        await LlmEventSummarizer(answering(answer)).summarize_events(five_turns())
