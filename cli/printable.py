"""Text shown on the terminal as it streams in: ``printable`` (``session/printable.py``)
over chunks, a sequence split between two of them dropped whole."""

from __future__ import annotations

import re

from session.printable import printable

__all__ = ["StreamPrintable", "json_printable", "printable"]

_RAW_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
"""What ``json.dumps`` leaves raw that a terminal acts on: DEL, C1 (``\x9b`` is a CSI),
bidi embeddings, overrides and isolates."""


def json_printable(text: str) -> str:
    """JSON text (``json.dumps`` of it) with those escaped as ``\\u009b``: the same
    value for a JSON reader, nothing a terminal acts on (JSON's syntax is ASCII, so they
    can stand only inside its strings)."""
    return _RAW_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)

_UNFINISHED = re.compile(
    r"\x1b(?:\[[0-?]*[ -/]*|[\]PX^_](?:(?!\x07|\x1b\\).)*\x1b?|[ -/]*)\Z", re.DOTALL
)
"""An escape sequence begun at the end of a chunk and not finished in it."""


class StreamPrintable:
    """``printable`` over a stream of chunks: a sequence split between two chunks (a
    model's reply arrives in pieces) is dropped whole, not shown half (``[31m``)."""

    def __init__(self) -> None:
        self._tail = ""

    def feed(self, chunk: str) -> str:
        text = self._tail + chunk
        unfinished = _UNFINISHED.search(text)
        cut = unfinished.start() if unfinished else len(text)
        self._tail = text[cut:]
        return printable(text[:cut])

    def flush(self) -> str:
        """What a sequence left unfinished at the end held (printable drops it)."""
        tail, self._tail = self._tail, ""
        return printable(tail)
