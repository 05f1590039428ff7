"""EncodedMessages: messages scrubbed and encoded once, kept in a few joined chunks."""

from __future__ import annotations

import orjson
import pytest

from session.encoded import MERGE_BELOW, EncodedMessages
from session.models import JsonDict

SECRET = "hunter2-hunter2"


def message(index: int, size: int = 10) -> JsonDict:
    return {"kind": "request", "parts": [{"content": f"{index}:" + "x" * size}]}


def turns(sizes: list[int]) -> EncodedMessages:
    """One append per turn of a request and a response, as a lifecycle makes them."""
    encoded = EncodedMessages()
    for index, size in enumerate(sizes):
        encoded += EncodedMessages.scrub([message(2 * index, size), message(2 * index + 1)], ())
    return encoded


def as_json(encoded: EncodedMessages) -> list[JsonDict]:
    decoded: list[JsonDict] = orjson.loads(b"[" + encoded.joined() + b"]")
    return decoded


def test_the_joined_chunks_are_the_messages_encoded_one_by_one() -> None:
    encoded = turns([10, MERGE_BELOW, 10, 10])
    assert encoded.joined() == b",".join(orjson.dumps(m) for m in encoded.json)
    assert list(encoded.encodings()) == [orjson.dumps(m) for m in encoded.json]


def test_small_turns_are_merged_into_one_chunk() -> None:
    assert len(turns([10] * 50).chunks) == 1


def test_a_chunk_over_the_merge_size_starts_the_next_one_apart() -> None:
    encoded = turns([MERGE_BELOW, 10, 10, MERGE_BELOW, 10])
    # [big, small] stays whole (big was appended to an empty value), the smalls and the
    # next big merge into the chunk after it, the last small gets its own chunk
    assert len(encoded.chunks) == 3
    assert as_json(encoded) == list(encoded.json)


@pytest.mark.parametrize("start", range(0, 11))
def test_every_slice_holds_exactly_its_messages(start: int) -> None:
    encoded = turns([10, MERGE_BELOW, 10, MERGE_BELOW, 10])
    for stop in range(start, 11):
        piece = encoded[start:stop]
        assert len(piece) == stop - start
        assert as_json(piece) == list(encoded.json[start:stop])
        assert list(piece.encodings()) == list(encoded.encodings())[start:stop]


def test_slices_take_no_step() -> None:
    with pytest.raises(ValueError, match="no step"):
        turns([10, 10])[::2]


def test_an_empty_value_encodes_an_empty_array() -> None:
    assert as_json(EncodedMessages()) == []
    assert as_json(turns([10, 10])[2:2]) == []
    assert as_json(EncodedMessages() + EncodedMessages()) == []


def test_messages_are_scrubbed_of_the_known_secrets_and_say_so() -> None:
    encoded = EncodedMessages.scrub([{"content": f"the key is {SECRET}"}], (SECRET,))
    assert SECRET.encode() not in encoded.joined()
    assert SECRET not in str(encoded.json)
    assert encoded.known_secrets == {SECRET}


def test_joining_keeps_only_the_secrets_both_parts_were_scrubbed_of() -> None:
    first = EncodedMessages.scrub([message(1)], (SECRET, "other-secret-value"))
    second = EncodedMessages.scrub([message(2)], (SECRET,))
    assert (first + second).known_secrets == {SECRET}
    assert (EncodedMessages() + first).known_secrets == first.known_secrets  # nothing to scrub
    assert (second + EncodedMessages()).known_secrets == second.known_secrets
