"""Tool calls paired with their answers by position: a call id may be used again.

Providers are not bound to unique call ids (local servers often send ``call_0`` for
every call, the offline model ``offline-1``): an answer belongs to the earliest call
before it with its id that is not yet answered, never to any call with that id.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic_ai.messages import ModelMessage, RetryPromptPart, ToolCallPart, ToolReturnPart

Answer = ToolReturnPart | RetryPromptPart


@dataclass(frozen=True)
class Pair:
    """A call at message ``called_at`` and its answer at ``answered_at`` (None: none yet)."""

    call: ToolCallPart
    called_at: int
    answer: Answer | None
    answered_at: int | None


def answers_a_call(part: object) -> bool:
    """A tool's return, or a retry prompt sent back for a tool call (one for the output
    has no tool name and answers none)."""
    return isinstance(part, ToolReturnPart) or (
        isinstance(part, RetryPromptPart) and part.tool_name is not None
    )


def tool_pairs(messages: Sequence[ModelMessage]) -> list[Pair]:
    """Every tool call in ``messages``, in order, with the answer that follows it."""
    pairs: list[Pair] = []
    waiting: defaultdict[str, deque[int]] = defaultdict(deque)
    """The unanswered calls of each id (their index in ``pairs``), oldest first."""
    for at, message in enumerate(messages):
        for part in message.parts:
            if isinstance(part, ToolCallPart):
                waiting[part.tool_call_id].append(len(pairs))
                pairs.append(Pair(part, at, None, None))
            elif answers_a_call(part):
                assert isinstance(part, ToolReturnPart | RetryPromptPart)
                queue = waiting.get(part.tool_call_id)
                if queue:  # else it answers no call here (its call was cut off before)
                    index = queue.popleft()
                    pairs[index] = Pair(pairs[index].call, pairs[index].called_at, part, at)
    return pairs
