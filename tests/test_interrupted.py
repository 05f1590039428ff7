"""What a turn the user interrupted keeps: nothing before a tool ran; after, every call
with its return, ending with the text so far and the note that it was interrupted."""

from __future__ import annotations

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from session.interrupted import INTERRUPTED, interrupted_turn
from tests.test_history import pairing_problems

PROMPT = ModelRequest(parts=[UserPromptPart("write the spec")])
CALL = ModelResponse(parts=[ToolCallPart("write_file", {"path": "a.md", "content": "x"}, "c1")])
RETURN = ModelRequest(parts=[ToolReturnPart("write_file", "wrote a.md (1 bytes)", "c1")])


def cut(*parts: TextPart | ToolCallPart) -> ModelResponse:
    """The response pydantic-ai was reading when the run was cancelled."""
    return ModelResponse(parts=list(parts), state="interrupted")


def last_text(kept: tuple[ModelMessage, ...]) -> str:
    last = kept[-1]
    assert isinstance(last, ModelResponse)
    return "".join(part.content for part in last.parts if isinstance(part, TextPart))


def test_a_turn_cut_before_any_tool_ran_keeps_nothing() -> None:
    assert interrupted_turn([PROMPT], "") == ()
    assert interrupted_turn([PROMPT, cut(TextPart("Let me"))], "Let me") == ()


def test_a_call_cut_in_its_arguments_never_ran_and_keeps_nothing() -> None:
    half = ToolCallPart("write_file", '{"path": "a.m', "c1")
    assert interrupted_turn([PROMPT, cut(half)], "") == ()


def test_cut_while_the_answer_to_a_tools_return_streams_keeps_the_text_so_far() -> None:
    kept = interrupted_turn([PROMPT, CALL, RETURN, cut()], "I wrote the spec and")
    assert kept[:3] == (PROMPT, CALL, RETURN)
    assert last_text(kept) == f"I wrote the spec and\n\n{INTERRUPTED}"
    assert pairing_problems(list(kept)) == []


def test_cut_while_the_tool_runs_gives_the_call_a_return() -> None:
    kept = interrupted_turn([PROMPT, CALL], "")
    assert kept[:2] == (PROMPT, CALL)
    assert pairing_problems(list(kept)) == []
    assert last_text(kept) == INTERRUPTED


def test_text_pydantic_ai_kept_of_the_cut_response_is_not_said_twice() -> None:
    kept = interrupted_turn([PROMPT, CALL, RETURN, cut(TextPart("Done so"))], "Done so")
    assert last_text(kept) == f"Done so{INTERRUPTED}"
