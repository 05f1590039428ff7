"""Texts held to a share of the token budget: of a list, the newest items that fit (or the
oldest few and the newest), with a line that counts the others; of a text, its first lines
(the session file keeps all). Sizes are what the wire carries (``wire_chars``)."""

from __future__ import annotations

from typing import Final

from session.wire import wire_chars, wire_head

EARLIER: Final = "- ({} earlier, kept in the session file, left out here for the token budget)"
BETWEEN: Final = "- ({} more, kept in the session file, left out here for the token budget)"


def newest_within(lines: list[str], chars: int) -> list[str]:
    """The newest of ``lines`` (``- item`` lines) that fit in ``chars`` (with their
    newlines), after a line that counts the earlier ones; ``lines`` itself if all fit."""
    if line_chars(lines) <= chars:
        return lines
    kept: list[str] = []
    used = _weight(EARLIER.format(len(lines)))
    for line in reversed(lines):
        if used + _weight(line) > chars:
            break
        kept.append(line)
        used += _weight(line)
    return [EARLIER.format(len(lines) - len(kept)), *reversed(kept)]


def ends_within(lines: list[str], chars: int, first: int) -> list[str]:
    """The first ``first`` of ``lines`` (the oldest: what the user set out with stays) and
    the newest that fit in ``chars`` after them, with a line between that counts the others;
    ``lines`` itself if all fit. The first ones go last: of them, those that fit."""
    if line_chars(lines) <= chars:
        return lines
    used = _weight(BETWEEN.format(len(lines)))
    head: list[str] = []
    for line in lines[:first]:
        if used + _weight(line) > chars:
            break
        head.append(line)
        used += _weight(line)
    tail: list[str] = []
    for line in reversed(lines[len(head) :]):
        if used + _weight(line) > chars:
            break
        tail.append(line)
        used += _weight(line)
    return [*head, BETWEEN.format(len(lines) - len(head) - len(tail)), *reversed(tail)]


def line_chars(lines: list[str]) -> int:
    """What ``lines`` joined weigh on the wire, each with its newline (``_weight``)."""
    return sum(_weight(line) for line in lines)


def _weight(line: str) -> int:
    """What ``line`` and its newline weigh on the wire (``wire_chars``): a character
    count undercounted a line in Chinese by two thirds."""
    return wire_chars(line) + NEWLINE_WIRE_CHARS


NEWLINE_WIRE_CHARS: Final = 2
"""A newline in a JSON string: ``\\n``."""


def first_lines_within(text: str, limit: int) -> str:
    """``text``'s first whole lines that fit in ``limit`` (as the wire carries them, then
    ``…``), or its first line cut there if even that one does not fit."""
    if wire_chars(text) <= limit:
        return text
    kept: list[str] = []
    used = wire_chars("…")
    for line in text.splitlines():
        if used + _weight(line) > limit:
            break
        kept.append(line)
        used += _weight(line)
    return "\n".join([*kept, "…"]) if kept else wire_head(text.splitlines()[0], limit - used) + "…"
