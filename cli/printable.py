"""Text shown on the terminal as it streams in: ``printable`` (``session/printable.py``)
over chunks, a sequence split between two of them dropped whole."""

from __future__ import annotations

import re

from session.printable import printable

__all__ = ["StreamPrintable", "printable"]

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
