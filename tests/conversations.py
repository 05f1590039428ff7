"""Builders of realistic pydantic-ai conversations for the tests."""

from __future__ import annotations

from datetime import UTC, datetime

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from session.compaction import Event, events_from_messages

T0 = datetime(2026, 3, 30, 10, 15, tzinfo=UTC)


def turn(index: int, tool_calls: int = 0, text: str | None = None) -> list[ModelMessage]:
    """One user turn: the prompt, ``tool_calls`` call/return rounds, and a final text reply."""
    messages: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(content=f"question {index}", timestamp=T0)])
    ]
    for call in range(tool_calls):
        call_id = f"call_{index}_{call}"
        messages.append(
            ModelResponse(
                parts=[
                    ToolCallPart("read_file", {"path": f"notes/{call}.md"}, tool_call_id=call_id)
                ],
                timestamp=T0,
            )
        )
        messages.append(
            ModelRequest(
                parts=[
                    ToolReturnPart(
                        "read_file", f"content {call}", tool_call_id=call_id, timestamp=T0
                    )
                ]
            )
        )
    messages.append(ModelResponse(parts=[TextPart(text or f"answer {index}")], timestamp=T0))
    return messages


def conversation(*tool_calls_per_turn: int) -> list[ModelMessage]:
    out: list[ModelMessage] = []
    for index, calls in enumerate(tool_calls_per_turn):
        out.extend(turn(index, calls))
    return out


TRIAGE_REPLY = "The triage agent routes each ticket by product, urgency and the customer's plan."


def five_turns() -> list[Event]:
    """Five turns of a triage agent's design, as a summarizer is given them."""
    return [e for n in range(1, 6) for e in events_from_messages(turn(n, text=TRIAGE_REPLY), n)]


def answering(text: str) -> FunctionModel:
    """A summary model that answers ``text`` to anything."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(answer)
