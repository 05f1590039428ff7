"""Message history as pure list-to-list functions: persist, trim at user turns, reconstruct.

A *turn* starts at a ``ModelRequest`` that carries a ``UserPromptPart`` and runs
up to the next one; tool calls and their returns always live inside one turn,
so cutting only at turn starts never separates a call from its return.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from collections.abc import Iterable, Sequence
from functools import cache
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
    repair_messages,
    sanitize_messages,
)
from pydantic_core import SchemaSerializer
from pydantic_core.core_schema import CoreConfig

from session.models import JsonDict
from session.redaction import scrub_json
from session.wire import wire_chars, wire_head

DEFAULT_MAX_TURNS = 20
DEFAULT_MAX_CHARS = 200_000


def is_turn_start(message: ModelMessage) -> bool:
    """A request carrying the user's prompt. (A plain loop: this runs over the history
    several times per turn.)"""
    if isinstance(message, ModelRequest):
        for part in message.parts:
            if isinstance(part, UserPromptPart):
                return True
    return False


def turn_starts(messages: Sequence[ModelMessage]) -> list[int]:
    return [i for i, message in enumerate(messages) if is_turn_start(message)]


def count_turns(messages: Sequence[ModelMessage]) -> int:
    return len(turn_starts(messages))


def dump_messages(
    messages: Sequence[ModelMessage], known_secrets: Iterable[str] = ()
) -> list[JsonDict]:
    """JSON-ready, credential-scrubbed form of ``messages`` for the session file."""
    scrubbed: list[JsonDict] = scrub_json(plain_messages(messages), known_secrets)
    return scrubbed


def plain_messages(messages: Sequence[ModelMessage]) -> list[JsonDict]:
    """JSON-ready form of ``messages``, not yet scrubbed (``EncodedMessages.scrub`` does).

    The instructions each request recorded are dropped: they are recomputed on
    every run, and keeping them would persist old resume contexts.
    """
    serializers = _serializers()
    raw: list[JsonDict] = []
    for message in messages:
        serializer = serializers.get(type(message))
        if serializer is None:  # a subclass: the adapter's union dumps it as it does
            dumped: JsonDict = ModelMessagesTypeAdapter.dump_python([message], mode="json")[0]
        else:
            dumped = serializer.to_python(message, mode="json")
        if dumped.get("kind") == "request":
            dumped["instructions"] = None
        raw.append(dumped)
    return raw


@cache
def _serializers() -> dict[type, SchemaSerializer]:
    """Each message class's own serializer, with ``ModelMessagesTypeAdapter``'s bytes
    encoding: the adapter's output (``test_history``) without the cost of its call over a
    list and tagged union (a turn's dump right after the agent's run: 150 -> 138 us; H194,
    docs/PERFORMANCE.md). Built at the first dump (``warm_up``), not at import."""
    config = CoreConfig(ser_json_bytes="base64")
    return {
        kind: SchemaSerializer(TypeAdapter(kind).core_schema, config)
        for kind in (ModelRequest, ModelResponse)
    }


def warm_up() -> None:
    """Build pydantic-ai's message serializers now (the first dump takes ~0.1 s).

    Long-running processes call this at start-up, so that the first turn does
    not spend that time inside the event loop.
    """
    sample: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("warm up")]),
        ModelResponse(parts=[TextPart("ok"), ToolCallPart("read_file", {"path": "x"}, "c")]),
        ModelRequest(parts=[ToolReturnPart("read_file", "x", tool_call_id="c")]),
        ModelResponse(parts=[TextPart("done")]),
    ]
    load_messages(dump_messages(sample))


def load_messages(raw: Sequence[JsonDict]) -> list[ModelMessage]:
    """Validate persisted messages back into pydantic-ai messages (exact round trip)."""
    return ModelMessagesTypeAdapter.validate_python(list(raw))


def messages_readable(raw: Sequence[JsonDict]) -> bool:
    """Whether persisted messages are ones this agent-assist reads (``load_messages``)."""
    try:
        load_messages(raw)
    except ValidationError:
        return False
    return True


_PART_OVERHEAD = 40
_TOOL_PART_OVERHEAD = 50
"""A tool call's or return's framing beyond ``_PART_OVERHEAD``: its id (twice: call and
return), its type and role."""
SUMMARY_FRAMING_CHARS = 240
"""What pydantic-ai wraps a ``CompactionPart`` in on the wire (``<pyai:conversation_summary>``
tags and a line saying a summarization model wrote it: 218 bytes in 2.68): counted against
the budget (``framing_chars``), not in ``message_chars``, so that whether a compaction
makes the request smaller compares the summary with what it replaces."""


def framing_chars(messages: Sequence[ModelMessage]) -> int:
    """What the wire adds to ``messages`` beyond ``message_chars``: a compaction's framing."""
    head = messages[0] if messages else None
    if head is not None and any(isinstance(p, CompactionPart) for p in head.parts):
        return SUMMARY_FRAMING_CHARS
    return 0


def message_chars(message: ModelMessage) -> int:
    """Approximate size of one message in characters, as the wire carries it
    (``wire_chars``): its text, arguments and returns, and each part's framing.

    Cheap enough to run over the whole history every turn (serializing every
    message to measure it is not).
    """
    return sum(part_chars(part) for part in message.parts)


def part_chars(part: Any) -> int:
    """``message_chars`` of one part: what eliding it saves is measured alike."""
    total = _PART_OVERHEAD
    if isinstance(part, ToolCallPart | ToolReturnPart):
        total += _TOOL_PART_OVERHEAD + len(part.tool_name)
    for attribute in ("content", "args"):
        value = getattr(part, attribute, None)
        if isinstance(value, dict):  # arguments go as a JSON string, escaped again
            value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if value is not None:
            total += wire_chars(value if isinstance(value, str) else str(value))
    return total


ELIDED_TOOL_OUTPUT = (
    "[{chars:,} characters of tool output elided to keep the request within the token "
    "budget; call the tool again if you need them]"
)


WIRE_HEADROOM = 10
"""What the wire adds to a request's texts (JSON quoting, roles, call ids) is taken to
be within a tenth of the budget: a request cut to fit the estimate keeps that room."""

CUT_TOOL_OUTPUT = (
    "[cut here, of {chars:,} characters, to keep the request within the token budget, "
    "which this reply's other tool outputs share]"
)
CUT_TOOL_OUTPUT_SHORT = "[cut: {chars:,} characters, over the token budget]"
"""``CUT_TOOL_OUTPUT`` for a share too small to hold it (many parallel returns)."""


ELIDED_WRITE = "[{chars:,} characters written to the file, elided from the request]"

ELIDED_EARLIER = (
    "[{chars:,} characters of an earlier turn, elided to keep the request within the "
    "token budget]"
)


def fit_tool_returns(messages: Sequence[ModelMessage], max_chars: int) -> list[ModelMessage]:
    """``messages`` within ``max_chars`` by eliding, oldest first, the content of tool
    returns and the content the model's ``write_file`` calls wrote: what runs between
    turns (compaction) cannot shrink one turn that reads or writes many large files.
    The last request's returns (what the model is about to read) are kept, and so is
    a text less than twice the note that would replace it (a short one was replaced
    by a note about as long); only contents change, so every call keeps its return
    and the history its shape."""
    total = sum(message_chars(m) for m in messages)
    if total <= max_chars:
        return list(messages)
    fitted = list(messages)
    for index, message in enumerate(messages[:-1]):
        if total <= max_chars:
            break
        parts = list(message.parts)
        for k, part in enumerate(parts):
            if total <= max_chars:
                break
            shorter = _elided(part)
            if shorter is not None:
                parts[k], saved = shorter
                total -= saved
        fitted[index] = dataclasses.replace(message, parts=parts)  # type: ignore[arg-type]
    return fitted


def fit_earlier_turns(messages: Sequence[ModelMessage], max_chars: int) -> list[ModelMessage]:
    """``messages`` within ``max_chars`` by eliding, oldest first, the text of the turns
    before the last one (the user's prompts and the model's replies): a turn whose tool
    returns outgrow the budget the request had at its start (checked before its first
    request: a compaction cannot run mid-turn) leaves the earlier turns out of its later
    requests rather than exceed the budget. The compaction and the last turn are kept;
    so is a text less than twice its note. Only contents change (``fit_tool_returns``)."""
    total = sum(message_chars(m) for m in messages)
    starts = turn_starts(messages)
    if total <= max_chars or not starts:
        return list(messages)
    fitted = list(messages)
    for index, message in enumerate(messages[: starts[-1]]):
        if total <= max_chars:
            break
        parts = list(message.parts)
        for k, part in enumerate(parts):
            shorter = _earlier_text_elided(part)
            if shorter is not None and total > max_chars:
                parts[k], saved = shorter
                total -= saved
        fitted[index] = dataclasses.replace(message, parts=parts)  # type: ignore[arg-type]
    return fitted


def fit_last_returns(messages: Sequence[ModelMessage], max_chars: int) -> list[ModelMessage]:
    """``messages`` within ``max_chars`` by cutting the tool returns of the last request
    (what the model is about to read), the last resort after ``fit_tool_returns`` and
    ``fit_earlier_turns``: one reply's parallel reads, each within its own limit, add up
    past the budget together. Each return longer than an even share of the room left
    keeps its head and a note; every call keeps its return. The cut leaves the wire's
    share of the budget (``WIRE_HEADROOM``)."""
    last = messages[-1] if messages else None
    if not isinstance(last, ModelRequest):
        return list(messages)
    parts = list(last.parts)
    returns: dict[int, ToolReturnPart[Any]] = {
        k: p for k, p in enumerate(parts) if type(p) is ToolReturnPart
    }
    total = sum(message_chars(m) for m in messages) if returns else 0
    if total <= max_chars:  # no return to cut (a turn's first request), or within
        return list(messages)
    sizes = {k: wire_chars(str(p.content)) for k, p in returns.items()}
    room = max_chars - max_chars // WIRE_HEADROOM - (total - sum(sizes.values()))
    for n, k in enumerate(sorted(returns, key=sizes.__getitem__)):  # the short ones first
        cut = _cut_return(returns[k], max(0, room) // (len(returns) - n))
        parts[k] = cut
        room -= wire_chars(str(cut.content))
    return [*messages[:-1], dataclasses.replace(last, parts=parts)]


def _cut_return(part: ToolReturnPart[Any], chars: int) -> ToolReturnPart[Any]:
    """``part`` within ``chars`` as the wire carries it (``wire_chars``): its head and a
    note (cut to a share in characters, a return in Chinese kept three times its share)."""
    content = str(part.content)
    if wire_chars(content) <= chars:
        return part
    note = CUT_TOOL_OUTPUT.format(chars=len(content))
    if len(note) > chars:  # its share holds no more than a short note
        note = CUT_TOOL_OUTPUT_SHORT.format(chars=len(content))
    head = wire_head(content, max(0, chars - len(note) - 2))
    return dataclasses.replace(part, content=f"{head}\n{note}" if head else note)


def _earlier_text_elided(part: Any) -> tuple[Any, int] | None:
    """``part``, a user prompt or a reply's text, with its text replaced by a note, and
    what that saves on the wire; None for any other part or too short a text."""
    if not isinstance(part, UserPromptPart | TextPart) or not isinstance(part.content, str):
        return None
    size = len(part.content)
    note = ELIDED_EARLIER.format(chars=size)
    if size < 2 * len(note):
        return None
    shorter = dataclasses.replace(part, content=note)
    return shorter, part_chars(part) - part_chars(shorter)


def _elided(part: Any) -> tuple[Any, int] | None:
    """``part`` with its tool output or written content replaced by a note, and the
    wire chars that saves; None if it has neither, or too short a one to replace."""
    if type(part) is ToolReturnPart:  # not a structured return (tool search)
        content = part.content
        size = len(content) if isinstance(content, str) else len(str(content))
        note = ELIDED_TOOL_OUTPUT.format(chars=size)
        if size < 2 * len(note):
            return None  # it would save little, and lose what the model was told
        plain: ToolReturnPart[Any] = part
        elided = dataclasses.replace(plain, content=note)
        return elided, part_chars(part) - part_chars(elided)
    if isinstance(part, ToolCallPart) and part.tool_name == "write_file":
        try:
            args = part.args_as_dict()
        except ValueError:
            return None  # arguments that are not JSON: the call was refused
        content = args.get("content")
        if not isinstance(content, str):
            return None
        note = ELIDED_WRITE.format(chars=len(content))
        if len(content) < 2 * len(note):
            return None
        shorter = dataclasses.replace(part, args={**args, "content": note})
        return shorter, part_chars(part) - part_chars(shorter)
    return None


def recent_start(
    messages: Sequence[ModelMessage],
    *,
    max_turns: int | None = DEFAULT_MAX_TURNS,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> int:
    """Where the longest tail of whole turns within both budgets starts.

    Never less than the last turn; ``len(messages)`` when there is no user turn.
    Walks back from the end and stops at the budget, so its cost is the size
    of the window, not of the whole history.
    """
    cut = len(messages)
    kept_chars = 0
    kept_turns = 0
    turn_chars = 0
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if max_chars is not None:
            turn_chars += message_chars(message)
        if not is_turn_start(message):
            continue
        within_turns = max_turns is None or kept_turns < max_turns
        within_chars = max_chars is None or kept_chars + turn_chars <= max_chars
        if kept_turns and not (within_turns and within_chars):
            break
        cut = index
        kept_chars += turn_chars
        kept_turns += 1
        turn_chars = 0
    return cut


def last_turns_start(starts: Sequence[int], length: int, max_turns: int | None) -> int:
    """``recent_start`` without a character budget, from the turn starts already found
    (``turn_starts``) in a history of ``length`` messages."""
    if not starts:
        return length
    kept = len(starts) if max_turns is None else max(1, min(max_turns, len(starts)))
    return starts[-kept]


def trim_to_recent(
    messages: Sequence[ModelMessage],
    *,
    max_turns: int | None = DEFAULT_MAX_TURNS,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> list[ModelMessage]:
    """The longest tail of whole turns within both budgets (never less than the last turn).

    Anything before the first turn start (an orphan tool return, a leading
    model response) is dropped.
    """
    return list(messages[recent_start(messages, max_turns=max_turns, max_chars=max_chars) :])


def reconstruct_history(
    messages: Sequence[ModelMessage],
    *,
    max_turns: int | None = DEFAULT_MAX_TURNS,
    max_chars: int | None = DEFAULT_MAX_CHARS,
) -> list[ModelMessage]:
    """A valid ``message_history`` from a persisted tail.

    Starts at a user turn and keeps whole turns within the budgets. A session
    file is data from disk, so pydantic-ai's ``sanitize_messages`` drops what
    only the running agent may supply (system prompts, recorded instructions,
    non-HTTP file URLs, a trailing unresolved call), and ``repair_messages``
    closes any dangling tool call and drops orphan returns, so the result is
    accepted by the next agent run.
    """
    tail = trim_to_recent(messages, max_turns=max_turns, max_chars=max_chars)
    if not tail:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # it warns about what it strips: expected here
        cleaned = sanitize_messages(tail, strip_workspace_refs=True)
    repaired = repair_messages(cleaned)
    start = next((i for i, m in enumerate(repaired) if is_turn_start(m)), len(repaired))
    return repaired[start:]
