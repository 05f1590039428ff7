"""The message shapes a listing knows without loading pydantic-ai are pydantic-ai's own."""

from __future__ import annotations

import typing

from pydantic_ai import messages

from session.message_shapes import REQUEST_PART_KINDS, RESPONSE_PART_KINDS, unknown_shape


def tags(union: object) -> set[str]:
    """The discriminator tags of a pydantic-ai part union (``Annotated[Union[...], ...]``)."""
    members = typing.get_args(typing.get_args(union)[0])
    found = set()
    for member in members:
        (tag,) = (meta.tag for meta in typing.get_args(member)[1:] if hasattr(meta, "tag"))
        found.add(tag)
    return {tag for tag in found if not tag.startswith("legacy-")}  # not stored: translated


def test_every_request_part_kind_pydantic_ai_reads_is_known() -> None:
    assert tags(messages.ModelRequestPart) <= REQUEST_PART_KINDS


def test_every_response_part_kind_pydantic_ai_reads_is_known() -> None:
    assert tags(messages.ModelResponsePart) <= RESPONSE_PART_KINDS


def test_the_messages_pydantic_ai_writes_are_of_a_known_shape() -> None:
    written = messages.ModelMessagesTypeAdapter.dump_python(
        [
            messages.ModelRequest(
                parts=[
                    messages.SystemPromptPart("be brief"),
                    messages.UserPromptPart("design it"),
                    messages.ToolReturnPart("read_file", "text", "call-1"),
                    messages.ToolReturnPart("read_file", "again", "call-0", outcome="retried"),
                ]
            ),
            messages.ModelResponse(
                parts=[
                    messages.TextPart("ok"),
                    messages.ThinkingPart("hmm"),
                    messages.ToolCallPart("read_file", {"path": "a"}, "call-2"),
                ]
            ),
        ],
        mode="json",
    )
    assert unknown_shape(written) is None
