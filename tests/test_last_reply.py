"""What a chat that took a session up shows of the turn it waited for (H143), read from
the session's messages as saved: the reply, or one line for a turn unanswered or cut."""

from __future__ import annotations

from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    TextPart,
)

from session.interrupted import interrupted_turn, unanswered_turn
from session.last_reply import CUT_LINE, SHOWN_CHARS, LastReply, last_reply
from tests.test_interrupted import CALL, PROMPT, RETURN  # the same turn's pieces


def saved(*messages: ModelMessage) -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(
        list(messages), mode="json"
    )
    return data


def test_an_answered_turn_shows_its_final_text() -> None:
    reply = ModelResponse(parts=[TextPart("Done: "), TextPart("a.md written.")])
    assert last_reply(saved(PROMPT, CALL, RETURN, reply)) == LastReply("Done: a.md written.")


def test_an_unanswered_turn_is_one_line_with_its_reason() -> None:
    turn = unanswered_turn("write the spec", "the chat ended before the reply")
    shown = last_reply(saved(*turn))
    assert shown is not None and not shown.text
    assert shown.note == (
        "note: the last reply did not come (the chat ended before the reply); the message "
        "is kept in the session, marked unanswered"
    )


def test_a_turn_cut_after_a_tool_ran_is_one_line() -> None:
    turn = interrupted_turn([PROMPT, CALL, RETURN], "I wrote a.md and")
    assert last_reply(saved(*turn)) == LastReply(note=CUT_LINE)


def test_messages_ending_with_no_reply_text_show_nothing() -> None:
    assert last_reply([]) is None
    assert last_reply(saved(PROMPT)) is None
    assert last_reply(saved(PROMPT, CALL)) is None


def test_a_reply_over_the_shown_length_shows_its_head() -> None:
    reply = ModelResponse(parts=[TextPart("x" * (SHOWN_CHARS + 5))])
    shown = last_reply(saved(PROMPT, reply))
    assert shown is not None
    assert shown.text == "x" * SHOWN_CHARS  # stdout gets only the reply's own text (H145)
    assert shown.note == (
        f"note: the last reply is {SHOWN_CHARS + 5:,} characters long; its first "
        f"{SHOWN_CHARS:,} are shown (it is whole in the session)"
    )
