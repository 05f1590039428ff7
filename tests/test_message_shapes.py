"""The message shapes a listing knows without loading pydantic-ai are pydantic-ai's own."""

from __future__ import annotations

import importlib.metadata
import typing

import pytest
from pydantic_ai import messages

from session.message_shapes import (
    KNOWN_UP_TO,
    REQUEST_PART_KINDS,
    RESPONSE_PART_KINDS,
    newer_than_known,
    unknown_shape,
)


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


def test_the_kinds_are_those_of_the_installed_pydantic_ai_version() -> None:
    """Upgrading pydantic-ai here fails this test until the lists are read again and
    ``KNOWN_UP_TO`` moved: a newer one's kinds would otherwise not be judged at all."""
    assert not newer_than_known(importlib.metadata.version("pydantic-ai-slim"))
    installed = importlib.metadata.version("pydantic-ai-slim").split(".")[:2]
    assert tuple(int(n) for n in installed) == KNOWN_UP_TO


@pytest.mark.parametrize(
    ("version", "newer"),
    [("2.78.0", False), ("2.78.9", False), ("2.68.1", False), ("2.79.0", True), ("3.0.0b1", True)],
)
def test_a_newer_pydantic_ai_is_told_by_its_major_and_minor_version(
    version: str, newer: bool
) -> None:
    """With a newer one installed, a kind these lists do not know may be one it knows: no
    session is then listed as unreadable for it (nor left out of the offer)."""
    assert newer_than_known(version) is newer
