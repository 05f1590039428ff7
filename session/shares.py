"""Texts held to a share of the token budget: of a list, the newest items that fit, after
a line that counts the others; of a text, its first lines (the session file keeps all)."""

from __future__ import annotations

from typing import Final

EARLIER: Final = "- ({} earlier, kept in the session file, left out here for the token budget)"


def newest_within(lines: list[str], chars: int) -> list[str]:
    """The newest of ``lines`` (``- item`` lines) that fit in ``chars`` (with their
    newlines), after a line that counts the earlier ones; ``lines`` itself if all fit."""
    if line_chars(lines) <= chars:
        return lines
    kept: list[str] = []
    used = len(EARLIER.format(len(lines))) + 1
    for line in reversed(lines):
        if used + len(line) + 1 > chars:
            break
        kept.append(line)
        used += len(line) + 1
    return [EARLIER.format(len(lines) - len(kept)), *reversed(kept)]


def line_chars(lines: list[str]) -> int:
    """The characters of ``lines`` joined, each with its newline."""
    return sum(len(line) + 1 for line in lines)


def first_lines_within(text: str, limit: int) -> str:
    """``text``'s first whole lines that fit in ``limit`` characters (then ``…``), or its
    first line cut there if even that one does not fit."""
    if len(text) <= limit:
        return text
    kept: list[str] = []
    used = 1  # the ellipsis
    for line in text.splitlines():
        if used + len(line) + 1 > limit:
            break
        kept.append(line)
        used += len(line) + 1
    return "\n".join([*kept, "…"]) if kept else text.splitlines()[0][: limit - 1] + "…"
