"""What a text weighs in a Chat Completions request body, as the token budget counts it.
Light (no model stack): the resume context's shares are measured with it."""

from __future__ import annotations


def wire_chars(text: str) -> int:
    """What ``text`` weighs in a Chat Completions request body: its UTF-8 bytes, and one
    more for each character JSON escapes with a backslash (newline, tab, return, quote,
    backslash). Counting characters alone undercounted a request by up to 5% (a summary
    of many short lines) and by 15% for text in other scripts (H153)."""
    size = len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))
    for escaped in '\n"\\\t\r':
        size += text.count(escaped)
    return size


def wire_head(text: str, limit: int) -> str:
    """``text``'s start that weighs at most ``limit`` as the wire carries it."""
    while wire_chars(text) > limit:
        text = text[: max(0, len(text) * limit // wire_chars(text) - 1)]
    return text
