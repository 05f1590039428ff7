"""The supervisor's frames on the wire: what it does with one a client could not accept."""

from __future__ import annotations

import orjson
import pytest
from pydantic import ValidationError

from supervisor import protocol as p
from supervisor.client import hello
from supervisor.wire import MAX_FRAME_BYTES, MAX_SERVER_FRAME_BYTES, ErrorCode, encode_frame


def decoded(data: bytes) -> dict[str, object]:
    assert data.endswith(b"\n") and data.count(b"\n") == 1
    assert len(data) <= MAX_SERVER_FRAME_BYTES
    frame: dict[str, object] = orjson.loads(data)
    return frame


def test_a_frame_within_the_cap_is_sent_as_it_is() -> None:
    frame = decoded(p.encode_server_frame(p.CommandResult(text="Saved: checkpoint 3")))
    assert frame == {
        "type": "command_result",
        "text": "Saved: checkpoint 3",
        "phase": None,
        "input_tokens": None,
    }


def test_a_text_over_the_cap_keeps_its_head_and_says_the_rest_was_not_sent() -> None:
    text = "0123456789" * (MAX_SERVER_FRAME_BYTES // 10 + 1)
    frame = decoded(p.encode_server_frame(p.CommandResult(text=text)))
    assert frame["type"] == "command_result"  # the command still ends
    shown = str(frame["text"])
    assert text.startswith(shown.split("\n[... ")[0])
    assert shown.endswith("over the 67,108,864-byte cap; the rest was not sent]")


def test_an_answer_over_the_cap_with_no_text_to_cut_becomes_an_error_frame() -> None:
    rows = [{"session_id": f"{i:012x}", "summary": "x" * 1000} for i in range(70_000)]
    frame = decoded(p.encode_server_frame(p.Result(data={"sessions": rows, "warnings": []})))
    assert frame["type"] == "error" and frame["code"] == ErrorCode.ANSWER_TOO_LARGE
    assert "result frame of" in str(frame["message"])


def test_a_hello_carries_only_secrets_the_supervisor_accepts() -> None:
    values = ("short", "s" * 8, "l" * 5000, *(f"v{i:07d}" for i in range(80)))
    frame = hello("terminal", secrets=values)
    assert frame["secrets"][0] == "s" * 8
    assert len(frame["secrets"]) == 81
    assert all(8 <= len(value) <= 4096 for value in frame["secrets"])
    assert p.Hello.model_validate({**frame, "client_pid": 1}).secrets == frame["secrets"]
    with pytest.raises(ValidationError):
        p.Hello.model_validate({**frame, "client_pid": 1, "secrets": ["x" * 7]})


def test_a_hello_carries_every_secret_its_byte_budget_holds() -> None:
    """A hello carried 64 values at most: a shell with more credential-named variables
    had the rest of their values saved in clear (H102)."""
    from supervisor.wire import MAX_HELLO_SECRET_BYTES

    values = tuple(f"value-{i:06d}" for i in range(30_000))
    frame = hello("terminal", secrets=values)
    size = sum(len(value) + 2 for value in frame["secrets"])
    assert MAX_HELLO_SECRET_BYTES - 14 < size <= MAX_HELLO_SECRET_BYTES
    assert p.Hello.model_validate({**frame, "client_pid": 1}).secrets == frame["secrets"]


def test_secrets_that_cannot_be_sent_are_left_out_and_the_hello_stays_small() -> None:
    """An environment's non-UTF-8 bytes arrive as lone surrogates (the hello could not be
    encoded: the chat died with a traceback); 64 long values of wide characters passed
    the frame cap."""
    undecodable = b"\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8".decode("utf-8", "surrogateescape")
    wide = tuple(chr(0x1F600 + i) * 4096 for i in range(64))
    frame = hello("terminal", secrets=(undecodable, "plain-secret-1", *wide))
    assert undecodable not in frame["secrets"]
    assert "plain-secret-1" in frame["secrets"]
    assert len(encode_frame(frame)) < MAX_FRAME_BYTES


def test_a_message_within_the_character_limit_fits_in_a_frame_whatever_its_characters() -> None:
    """A helper's attack: 190,000 control characters (6 bytes each as escapes) made a
    frame over the cap, refused as "190,000 characters is over the limit of 200,000"."""
    from supervisor.wire import MAX_MESSAGE_CHARS, encode_frame

    for worst in ("\x01", '"', "\U0001f600", "\u2028"):
        encode_frame({"type": "user_message", "text": worst * MAX_MESSAGE_CHARS, "id": "x" * 16})


def test_an_opened_frame_carries_a_last_reply_only_after_a_wait_for_it() -> None:
    """An older client reads the frame as before; a newer one gets the reply it waited
    for (H143)."""
    plain = decoded(p.encode_server_frame(p.Opened(session_id="0a1b2c3d4e5f", resumed=True)))
    assert "last_reply" not in plain
    waited = p.Opened(
        session_id="0a1b2c3d4e5f", resumed=True, last_reply=p.LastReply(text="echo: hi")
    )
    assert decoded(p.encode_server_frame(waited))["last_reply"] == {
        "text": "echo: hi",
        "note": None,
    }
