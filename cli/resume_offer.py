"""The resume question's text (DESIGN 6): the offered session's context between its two
exact lines, and the project's other sessions to pick from, each line fit to the screen."""

from __future__ import annotations

from cli.console import other_choices
from cli.summaries import clip, columns, cut, listed_headline, summary_headline
from session.printable import printable
from supervisor.wire import Frame


def offer_text(offer: Frame, others: list[Frame], more: int = 0, width: int | None = None) -> str:
    """The resume question of DESIGN 6: the two exact lines with the session's context
    between them, and the project's other sessions to pick from by number, one line each
    that tells it from the others (id, turns, time, summary; cut to ``width`` columns so
    that it does not wrap), with how many ``more`` are on disk than are listed (below
    them where the line above them has no room)."""
    lines = [f"Previous session found (last active: {offer['last_active']})"]
    facts = []
    if offer.get("turns") is not None:
        facts.append(turns_text(offer["turns"]))
    if headline := summary_headline(offer.get("summary")):
        room = 70 if width is None else width - 1 - columns("  " + " · ".join(facts)) - 12
        facts.append(f"summary: {clip(headline, max(OTHER_SUMMARY_COLUMNS, min(70, room)))}")
    if facts:
        lines.append("  " + " · ".join(facts))
    drift = [f"{path}: modified" for path in offer.get("modified") or ()]
    drift += [f"{path}: deleted" for path in offer.get("deleted") or ()]
    if unchanged := offer.get("unchanged") or 0:
        drift.append(f"{unchanged} tracked file{'' if unchanged == 1 else 's'} unchanged")
    if drift:
        lines.append("  " + " · ".join(drift))
    if unanswered := offer.get("unanswered"):
        lines.append(unanswered_text(str(unanswered), width))
    if others:
        numbers = other_choices(len(others) + 1)
        older = f"{more} older: agent-assist sessions" if more else ""
        choose = f"  or resume another session of this project (answer {numbers}"
        below = bool(older) and width is not None and columns(f"{choose}; {older}):") >= width
        lines.append(f"{choose}):" if below or not older else f"{choose}; {older}):")
        year = str(offer["last_active"])[:5]
        lines += [
            other_line(number, other, year, width)
            for number, other in enumerate(others, start=2)
        ]
        if below:  # else cut in the middle of its count by the wrap (at 60 columns)
            lines.append(f"    ({older})")
    lines.append("Resume previous session? [Y/n]")
    return "\n".join(lines)


UNANSWERED_LEAD = '  last message unanswered: "'


def unanswered_text(message: str, width: int | None) -> str:
    """The offer's line for a session whose last message got no reply: its first words,
    cut so that the line does not wrap."""
    return f'{UNANSWERED_LEAD}{unanswered_words(message, width)}"'


def unanswered_words(message: str, width: int | None) -> str:
    """The first words of a message that got no reply as the offer shows them: on one
    line, cut to what its line leaves of ``width`` columns (80 where unknown)."""
    room = 80 if width is None else width - 1
    return clip(printable(message), max(12, room - columns(UNANSWERED_LEAD) - 1))


def turns_text(turns: int) -> str:
    return f"{turns} turn{'' if turns == 1 else 's'}"


OTHER_SUMMARY_COLUMNS = 12
"""The fewest columns of its summary an other session's line shows; with less room, the
line drops its time, then its summary (``other_line``)."""


def other_line(number: int, other: Frame, year: str, width: int | None) -> str:
    """One other session of the offer: ``2) ID · N turns · 12-05 11:23 · summary`` (the
    year only when it is not the offered session's), fitted to ``width`` columns: where
    the summary would get fewer than ``OTHER_SUMMARY_COLUMNS``, the time goes, then the
    summary (a line that wraps reads as two sessions)."""
    when = str(other["last_active"]).removesuffix(" UTC").removeprefix(year)
    facts = [str(other["session_id"])]
    if other.get("turns") is not None:
        facts.append(turns_text(other["turns"]))
    about = listed_headline(other.get("summary"), other.get("turns")) or "(no summary)"
    if width is None:
        return _other_start(number, [*facts, when]) + clip(about, 60)
    room = width - 1
    for shown in ([*facts, when], facts):
        start = _other_start(number, shown)
        if columns(start) + OTHER_SUMMARY_COLUMNS <= room:
            return start + clip(about, room - columns(start))
    return cut(f"    {number}) " + " · ".join(facts), max(room, 20))


def _other_start(number: int, facts: list[str]) -> str:
    return f"    {number}) " + " · ".join(facts) + " · "
