"""CompactionActor: summarizes off the turn's critical path; failures never break a session.

With ``AGENT_ASSIST_SUMMARY_MODEL`` set, an LLM writes the summary (bounded by
a timeout) and the offline summarizer is the fallback; without it, the
offline summarizer alone. The sliding-window compaction of DESIGN.md section 7
will hook in here.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Any

import anyio
from pydantic_ai import Agent

from actors.assistant import resolve_model
from actors.base import Actor, DeadActor
from actors.messages import CompactionMessage, Summarize, SummaryReady
from session.history import dump_messages
from session.summary import MAX_SUMMARY_CHARS, offline_summary

log = logging.getLogger("agent_assist.compaction")
LLM_SUMMARY_TIMEOUT_S = 30.0

SUMMARY_PROMPT = (
    "Summarize this agent-design conversation in at most 8 short lines for resuming it later. "
    "Keep every file path, every decision and every rule the user set. Conversation (JSON):\n"
)


class CompactionActor(Actor[CompactionMessage]):
    name = "compaction"

    def __init__(self, summary_model: str | None = None) -> None:
        self._summary_model = summary_model
        self._agent: Agent[None, str] | None = None

    async def handle(self, message: CompactionMessage) -> Any:
        summary = await self._summarize(message)
        if message.reply_to is not None and summary:
            with contextlib.suppress(DeadActor):
                await message.reply_to.tell(SummaryReady(message.session_id, summary))
        return summary

    async def _summarize(self, message: Summarize) -> str | None:
        if self._summary_model:
            try:
                with anyio.fail_after(LLM_SUMMARY_TIMEOUT_S):
                    return await self._llm_summary(message)
            except Exception as exc:
                log.warning("LLM summary failed, using the offline summarizer: %s", exc)
        return offline_summary(message.messages, message.decisions, message.previous)

    async def _llm_summary(self, message: Summarize) -> str:
        if self._agent is None:
            assert self._summary_model is not None
            self._agent = Agent(resolve_model(self._summary_model), output_type=str)
        import orjson

        body = orjson.dumps(dump_messages(message.messages)).decode()[-60_000:]
        result = await self._agent.run(SUMMARY_PROMPT + body)
        return result.output.strip()[:MAX_SUMMARY_CHARS]
