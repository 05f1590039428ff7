"""Paths as the OS gives them, checked for what agent-assist can carry (UTF-8), with no
import beyond the standard library's core: the terminal's quick paths use it too."""

from __future__ import annotations


def is_utf8(text: str) -> bool:
    """Whether ``text`` (a path from the OS) is UTF-8: bytes that are not arrive as lone
    surrogates, which no frame to the supervisor and no JSON file can carry."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_path(text: str) -> str:
    """A path for a message: bytes that are not UTF-8 shown as \\xNN escapes."""
    raw = text.encode("utf-8", "surrogateescape")
    return raw.decode("utf-8", "backslashreplace")
