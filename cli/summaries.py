"""A session summary as one short line for tables and the resume offer (no boilerplate)."""

from __future__ import annotations

import re

from session.compacted import OFFLINE_REQUESTS_RE

_MARK = re.compile(r"^(?:#{1,6}|[-*+])\s+")
"""A Markdown heading's hashes, or a list item's mark."""
_EMPHASIS = re.compile(r"^(\*{1,3}|_{1,3})(\S|\S.*?\S)\1(:?)$")
"""A line emphasized as a whole (``**Summary:**``, ``**Summary**:``)."""
_LABEL_ONLY = re.compile(
    r"^(?:(?:conversation|session|chat|brief)\s+)?(?:summary|overview|recap|tl;?dr)\s*:?$",
    re.IGNORECASE,
)
"""A summary model's title line that says nothing of the session (``## Summary``)."""
EMPTY_SESSION = "(no turn yet)"
"""What stands for the summary of a session saved before its first turn (a ``/save`` after
``/reset``), in the ``sessions`` table and the resume offer alike."""


def columns(text: str) -> int:
    """The screen columns ``text`` takes: a CJK character or an emoji takes two."""
    from wcwidth import wcswidth

    width = wcswidth(text)
    return width if width >= 0 else len(text)  # a control character: counted as one


def clip(text: str, width: int) -> str:
    """``text`` on one line, cut to ``width`` screen columns with an ellipsis."""
    return cut(" ".join(text.split()), width)


def cut(line: str, width: int) -> str:
    """``line`` as it is if it fits in ``width`` screen columns, else its first columns
    and an ellipsis."""
    if (len(line) <= width and line.isascii()) or columns(line) <= width:
        return line
    from wcwidth import wcwidth

    kept, used = [], 0
    for char in line:
        used += max(wcwidth(char), 0)
        if used > width - 1:
            break
        kept.append(char)
    return "".join(kept) + "…"


def pad(text: str, width: int) -> str:
    """``text`` followed by spaces to ``width`` screen columns (``ljust`` counts
    characters)."""
    return text + " " * max(width - columns(text), 0)


def summary_headline(summary: str | None) -> str:
    """The first line of a summary that says something; for the offline summarizer's own
    format, the first request it quotes (``3 recent requests; first: "..."`` becomes
    ``...``); a summary model's title line (``## Summary``) is skipped, and Markdown
    heading marks and emphasis are dropped."""
    if not summary:
        return ""
    for line in summary.splitlines():
        line = line.strip()
        if not line:
            continue
        line = line.removeprefix("Earlier: ")
        if line.startswith("Conversation so far (turns "):  # a compaction's header
            continue
        line = line.removeprefix("Started with: ")
        if match := OFFLINE_REQUESTS_RE.match(line):
            return match[1]
        line = _MARK.sub("", line)
        line = _EMPHASIS.sub(r"\2\3", line).strip()
        if not line or _LABEL_ONLY.match(line):
            continue  # a summary model's title: its next line says what the session is
        return line
    return ""


def listed_headline(summary: str | None, turns: int | None) -> str:
    """A session's summary as a listing shows it: its headline; ``EMPTY_SESSION`` for one
    with no turn yet; else empty (turns, no summary yet)."""
    headline = summary_headline(summary)
    return EMPTY_SESSION if not headline and turns == 0 else headline
