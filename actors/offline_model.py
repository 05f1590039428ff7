"""The built-in ``offline`` model: deterministic, labelled, no network.

It echoes what it was told and runs simple file commands through the real
tools, so every part of agent-assist works without an LLM:
``write PATH`` (content on the following lines, or after ``:``), ``read PATH``,
``list [DIR]``, ``decide TEXT``.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator

from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel

from session.compacted import compacted_turns, turn_again
from session.turns import stamped_turn

LABEL = "[offline model]"
_RESUMED_RE = re.compile(r"This is a resumed session \(ID: ([a-f0-9]{12})\)")
_CHANGED_RE = re.compile(r"changed outside the assistant since the last turn: (.*?)\. Read")
_WRITE_RE = re.compile(r"^write\s+(\S+?)(?::\s*|\s*\n)(.*)\Z", re.DOTALL)
_READ_RE = re.compile(r"^read\s+(\S+)\s*\Z")
_LIST_RE = re.compile(r"^list(?:\s+(\S+))?\s*\Z")
EMPTY_WRITE_HINT = (
    "Nothing to write to {}: put the text after the colon, or on the following lines "
    "(at a terminal prompt, Alt+Enter or Esc Enter starts a new line). The file was not changed."
)
_DECIDE_RE = re.compile(r"^decide(?::\s*|\s+)(.+)\Z", re.DOTALL)  # "decide: X" too
_PHASE_RE = re.compile(r"^phase\s+(design|code|deploy)\s*\Z")


def _last_prompt(messages: list[ModelMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, UserPromptPart) and isinstance(part.content, str):
                    return part.content
    return ""


def _tool_call(prompt: str) -> tuple[str, dict[str, str]] | None:
    text = prompt.strip()
    if m := _WRITE_RE.match(text):
        return "write_file", {"path": m[1], "content": m[2].strip("\n") + "\n"}
    if m := _READ_RE.match(text):
        return "read_file", {"path": m[1]}
    if m := _LIST_RE.match(text):
        return "list_files", {"directory": m[1] or "."}
    if m := _DECIDE_RE.match(text):
        return "record_decision", {"decision": m[1]}
    if m := _PHASE_RE.match(text):
        return "set_phase", {"phase": m[1]}
    return None


def _compacted_turns(messages: list[ModelMessage]) -> int:
    """The turns the history's compaction (its first request) took out of it, but the last
    when the request carries that one again after it (``turn_again``)."""
    for message in messages[:1]:
        for part in message.parts:
            if isinstance(part, CompactionPart):
                return compacted_turns(part.content) - turn_again(part.content)
    return 0


def _reply_text(messages: list[ModelMessage], info: AgentInfo) -> str:
    last = messages[-1]
    returns = (
        [p for p in last.parts if isinstance(p, ToolReturnPart)]
        if isinstance(last, ModelRequest)
        else []
    )
    if returns:
        body = "; ".join(f"{p.tool_name}: {str(p.content)[:2000]}" for p in returns)
        return f"{LABEL} {body}" + _changed_marker(info)
    prompt = _last_prompt(messages)
    # Turns before the request's: those its compaction covers, or with none those a tail
    # held to the token budget left out (its first turn's stamp says how many).
    before = _compacted_turns(messages) or (stamped_turn(messages) or 1) - 1
    turns = before + sum(
        1
        for m in messages
        if isinstance(m, ModelRequest) and any(isinstance(p, UserPromptPart) for p in m.parts)
    )
    text = (
        f'{LABEL} You said: "{" ".join(prompt.split())[:500]}". '
        f"(turn {turns} of this conversation; I am the built-in offline model: set "
        "--model or AGENT_ASSIST_MODEL to use a real LLM.)"
    )
    resumed = _RESUMED_RE.search(info.instructions or "")
    if resumed:
        text += f" [resume context: session {resumed[1]}]"
    return text + _changed_marker(info)


def _changed_marker(info: AgentInfo) -> str:
    """What ends every reply to a request that told of files changed outside, a turn that
    called a tool included: the marker says the model was told."""
    changed = _CHANGED_RE.search(info.instructions or "")
    return f" [changed outside: {changed[1]}]" if changed else ""


def _next_step(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1]
    if isinstance(last, ModelRequest) and any(isinstance(p, UserPromptPart) for p in last.parts):
        if (m := _WRITE_RE.match(_last_prompt(messages).strip())) and not m[2].strip():
            return ModelResponse(parts=[TextPart(f"{LABEL} {EMPTY_WRITE_HINT.format(m[1])}")])
        call = _tool_call(_last_prompt(messages))
        if call is not None:
            return ModelResponse(parts=[ToolCallPart(call[0], call[1], tool_call_id="offline-1")])
    return ModelResponse(parts=[TextPart(_reply_text(messages, info))])


def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    return _next_step(messages, info)


async def stream(
    messages: list[ModelMessage], info: AgentInfo
) -> AsyncIterator[str | DeltaToolCalls]:
    response = _next_step(messages, info)
    part = response.parts[0]
    if isinstance(part, ToolCallPart):
        args = part.args if isinstance(part.args, str) else json.dumps(part.args)
        yield {
            0: DeltaToolCall(name=part.tool_name, json_args=args, tool_call_id=part.tool_call_id)
        }
        return
    assert isinstance(part, TextPart)
    words = re.findall(r"\S+\s*", part.content)
    for start in range(0, len(words), 4):
        yield "".join(words[start : start + 4])


def offline_model() -> FunctionModel:
    return FunctionModel(respond, stream_function=stream, model_name="offline")
