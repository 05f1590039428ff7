"""Texts held to a share of the token budget: of a list, the newest items that fit (or the
oldest few and the newest), with a line that counts the others; of a text, its first lines
(the session file keeps all)."""

from __future__ import annotations

from typing import Final

EARLIER: Final = "- ({} earlier, kept in the session file, left out here for the token budget)"
BETWEEN: Final = "- ({} more, kept in the session file, left out here for the token budget)"


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


def ends_within(lines: list[str], chars: int, first: int) -> list[str]:
    """The first ``first`` of ``lines`` (the oldest: what the user set out with stays) and
    the newest that fit in ``chars`` after them, with a line between that counts the others;
    ``lines`` itself if all fit. The first ones go last: of them, those that fit."""
    if line_chars(lines) <= chars:
        return lines
    used = len(BETWEEN.format(len(lines))) + 1
    head: list[str] = []
    for line in lines[:first]:
        if used + len(line) + 1 > chars:
            break
        head.append(line)
        used += len(line) + 1
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if used + len(line) + 1 > chars:
            break
        tail.append(line)
        used += len(line) + 1
    return [*head, BETWEEN.format(len(lines) - len(head) - len(tail)), *reversed(tail)]


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
