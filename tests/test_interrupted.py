"""What a turn the user interrupted keeps: nothing before a tool ran; after, every call
with its return, ending with the text so far and the note that it was interrupted."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from session.interrupted import INTERRUPTED, interrupted_turn, without_secret_heads
from session.redaction import scrub_json
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


CUT_KEYS = [
    "sk-proj-Ab3dE5gH",
    "sk-ant-api03-Xy9Z",
    "github_pat_11ABCDEF0",
    "glpat-Ab3dE5gH7j",
    "AIzaSyAb3dE5gH7jK9",
    "hf_Ab3dE5gH7jK9",
    "xoxb-1234-5678",
]


@pytest.mark.parametrize("key", CUT_KEYS)
@pytest.mark.parametrize("held", [False, True])
def test_a_key_cut_at_the_replys_end_is_saved_without_what_came_of_it(
    key: str, held: bool
) -> None:
    """H188's leftover: a reply cut by Ctrl+C mid-key kept the part that came, too short
    for the token patterns, so the session file saved it. ``held``: pydantic-ai's record
    of the cut response holds the text, else the streamed text so far is given."""
    text = f"Set the variable to {key}"
    last = cut(TextPart(text)) if held else cut()
    kept = interrupted_turn([PROMPT, CALL, RETURN, last], text)
    saved = str(scrub_json(ModelMessagesTypeAdapter.dump_python(list(kept), mode="json")))
    assert key not in saved and key[:-3] not in saved, saved
    assert last_text(kept).startswith("Set the variable to [REDACTED]")


@pytest.mark.parametrize("end", ["see hf_hub", "install sk-learn", "call AKIA", "a plain end"])
def test_a_cut_reply_ending_in_a_word_like_a_prefix_keeps_it(end: str) -> None:
    kept = interrupted_turn([PROMPT, CALL, RETURN, cut()], end)
    assert last_text(kept) == f"{end}\n\n{INTERRUPTED}"


@pytest.mark.parametrize("pydantic_ai_kept_the_text", [False, True])
def test_a_reply_cut_in_a_known_secret_loses_its_head_in_either_shape(
    pydantic_ai_kept_the_text: bool,
) -> None:
    """The text so far is the note's part or a part of its own (pydantic-ai's record of
    the cut response): either way the head of a known secret at its end goes."""
    said = "Your password: tired ocean"
    last = cut(TextPart(said)) if pydantic_ai_kept_the_text else cut()
    kept = interrupted_turn([PROMPT, CALL, RETURN, last], said)
    cleaned = without_secret_heads(kept, ("tired ocean lamp",))
    assert last_text(tuple(cleaned)).startswith("Your password: [REDACTED]")
    assert INTERRUPTED in last_text(tuple(cleaned))
    assert without_secret_heads(kept, ("another secret",)) is kept
