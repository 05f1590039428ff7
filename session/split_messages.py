"""A session file's JSON parsed a message at a time: parsed whole, orjson held the file's
bytes, its own copy of them and the objects at once (three times the file, H173)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

WINDOW = 8 << 20
"""Bytes looked at at once for the file's brackets."""
_KEY = b'"recent_messages":'


def _brackets(data: bytes) -> Iterator[tuple[int, int]]:
    """The position and byte of each bracket of JSON text ``data`` outside its strings.

    In a window that ends after a byte other than a backslash, taking out the escaped
    backslashes, then the escaped quotes (each replaced by as many bytes) leaves only the
    quotes that open or close a string: the pieces between them alternate, outside and
    inside strings."""
    inside = False
    start = 0
    while start < len(data):
        end = min(start + WINDOW, len(data))
        while end < len(data) and data[end - 1] == 0x5C:  # a backslash: its pair is next
            end += 1
        plain = data[start:end].replace(b"\\\\", b"__").replace(b'\\"', b"__")
        pieces = plain.split(b'"')
        first = 0 if inside else 1  # the pieces inside strings start at this one
        pieces[first::2] = [bytes(len(piece)) for piece in pieces[first::2]]
        masked = b'"'.join(pieces)
        found = [(at, byte) for byte in b"[]{}" for at in _positions(masked, byte)]
        for at, byte in sorted(found):
            yield start + at, byte
        inside ^= len(pieces) % 2 == 0  # an odd number of quotes
        start = end


def _positions(data: bytes, byte: int) -> Iterator[int]:
    """Where ``byte`` is in ``data`` (each found by ``find``: a bracket is rare in text
    outside strings)."""
    needle = bytes((byte,))
    at = data.find(needle)
    while at >= 0:
        yield at
        at = data.find(needle, at + 1)


def parsed_by_message(
    data: bytes, within: str | None = None
) -> tuple[dict[str, Any], int] | None:
    """``orjson.loads(data)`` and how deep its containers nest, the ``recent_messages``
    array of the top-level object (or of its ``within`` object: a checkpoint's ``state``)
    parsed one message at a time; None when the text is not laid out as this version
    writes it (the caller parses it whole, and says what is wrong)."""
    level = 1 if within is None else 2  # the depth of the object that holds the key
    depth = deepest = 0
    array = message = -1
    spans: list[tuple[int, int]] = []
    end = -1
    for at, byte in _brackets(data):
        if byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
            if depth == level + 1 and byte == 0x5B and at > len(_KEY) and data[
                at - len(_KEY) - 1 : at
            ] in (b"," + _KEY, b"{" + _KEY):
                if array >= 0:
                    return None  # the key twice
                array = at
            elif depth == level + 2 and array >= 0 and end < 0:
                message = at
        else:
            if depth == level + 2 and array >= 0 and end < 0 and byte == 0x7D:
                spans.append((message, at + 1))
            elif depth == level + 1 and array >= 0 and end < 0:
                end = at
            depth -= 1
    if array < 0 or end < 0 or deepest > 1024:
        return None
    gaps = zip([array + 1, *(e for _, e in spans)], [*(s for s, _ in spans), end], strict=True)
    for index, (after, before) in enumerate(gaps):  # a comma between messages, nothing else
        if data[after:before] != (b"," if 0 < index < len(spans) else b""):
            return None
    view = memoryview(data)
    try:
        outer = orjson.loads(data[: array + 1] + data[end:])
        messages = [orjson.loads(view[s:e]) for s, e in spans]
    except orjson.JSONDecodeError:
        return None
    if not isinstance(outer, dict):
        return None
    holder = outer if within is None else outer.get(within)
    if not isinstance(holder, dict) or holder.get("recent_messages") != []:
        return None
    holder["recent_messages"] = messages
    return outer, deepest
