"""A session summary as one short line for tables and the resume offer (no boilerplate)."""

from __future__ import annotations

import re

_REQUESTS = re.compile(r'^\d+ recent request(?:\(s\)|s)?; first: "(.*)"$')
"""``1 recent request``, ``3 recent requests``, and ``(s)`` as earlier versions wrote."""


def clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(width - 1, 0)] + "…"


def summary_headline(summary: str | None) -> str:
    """The first line of a summary; for the offline summarizer's own format, the first
    request it quotes (``3 recent requests; first: "..."`` becomes ``...``)."""
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
        if match := _REQUESTS.match(line):
            return match[1]
        return line
    return ""
