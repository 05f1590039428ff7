"""The header of a compacted summary: how a session file says which turns its
compaction covers, and a session's turn count from it and the saved tail. Light (no
model stack): the welcome and ``sessions show`` read it."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, Final

COMPACTION_HEADER_START: Final = "Conversation so far (turns "
"""How a compaction's text begins (``session/compaction.py``), boilerplate in a summary."""
HEADER_RE: Final = re.compile(
    r"^Conversation so far \(turns ([0-9]{1,12})-([0-9]{1,12}), compacted\)"
)


STARTED_WITH: Final = "Started with: "
"""How an offline narrative names the conversation's first request."""
OFFLINE_REQUESTS_RE: Final = re.compile(r'^[0-9]+ recent request(?:\(s\)|s)?; first: "(.*?)"?$')
"""The offline session summary's first line when nothing came before its requests
(``3 recent requests; first: "..."``; ``(s)`` as earlier versions wrote): it quotes
the conversation's first request (its closing quote lost where a line quoting it was
clipped)."""

LAST_TURN_AGAIN: Final = "Turn {number}, the last of these, follows again word for word."
"""Ends a compaction's text in a request that carries its last turn again, whole (no turn
follows its boundary yet): the model is told the exchange after it is no new one."""
LAST_TURN_AGAIN_RE: Final = re.compile(
    r"^Turn ([0-9]{1,12}), the last of these, follows again word for word\.$", re.MULTILINE
)

TURN_NUMBER_KEY: Final = "turn"
"""The key of a turn's number in the metadata of its first request (``session/turns.py``)."""

LATEST_REQUESTS_START: Final = "Latest requests ("
"""How the offline narrative's line naming the last compacted requests begins."""
_LATEST_REQUESTS_RE: Final = re.compile(
    rf"^{re.escape(LATEST_REQUESTS_START)}turns? [\d-]+\): (.*?)\.?$", re.MULTILINE
)


def last_compacted_request(text: str | None) -> str:
    """The last request an offline narrative in ``text`` names ("" if none does)."""
    latest = _LATEST_REQUESTS_RE.search(text or "")
    return latest[1].split("; ")[-1] if latest else ""


def compacted_turns(text: str | None) -> int:
    """How many turns the compacted summary ``text`` covers (its last turn's number; the
    turns after it are kept whole); 0 without a summary or with one of another form."""
    header = HEADER_RE.match(text or "")
    return int(header[2]) if header else 0


def tail_prompts(messages: Sequence[Mapping[str, Any]]) -> list[str]:
    """The user prompt of each request of serialized messages that carries one (a turn).

    The messages may not be validated yet (a listing counts the turns of files it does
    not open): a message of another shape is no turn, never an error."""
    prompts = []
    for message in messages:
        if message.get("kind") == "request" and (prompt := _prompt_of(message)) is not None:
            prompts.append(prompt)
    return prompts


def _prompt_of(request: Mapping[str, Any]) -> str | None:
    parts = request.get("parts")
    for part in parts if isinstance(parts, list) else ():
        if isinstance(part, Mapping) and part.get("part_kind") == "user-prompt":
            content = part.get("content")
            return content if isinstance(content, str) else str(content)
    return None


def session_turns(
    compacted_history_summary: str | None, messages: Sequence[Mapping[str, Any]]
) -> int:
    """A saved session's turns: those its compaction covers and those of its tail (with
    no compaction, counted from the number the tail's first turn was stamped with: the
    turns a tail held to the token budget left out are counted too)."""
    covered = compacted_turns(compacted_history_summary)
    if not covered:
        covered = (first_turn_number(messages) or 1) - 1
    return covered + turns_after(covered, messages)


def turns_missing(
    compacted_history_summary: str | None, messages: Sequence[Mapping[str, Any]]
) -> range:
    """The turns of a saved session that neither its compaction covers nor its tail holds:
    those after the boundary and before the tail's first turn, by its stamp (moved beside
    the session file by its cap, ``MovedTurn``, and not named by a checkpoint written
    before ``moved``; or left out by a resume's tail limits). Empty when none are, or the
    tail is not stamped."""
    covered = compacted_turns(compacted_history_summary)
    first = first_turn_number(messages)
    return range(0) if first is None else range(covered + 1, max(first, covered + 1))


def turns_after(covered: int, messages: Sequence[Mapping[str, Any]]) -> int:
    """The turns of serialized messages after turn ``covered``: a tail keeps the compacted
    turns the next compaction reads again before its boundary, stamped with their numbers
    (an unstamped turn, saved before turns were numbered, is one after it)."""
    count = 0
    for message in messages:
        if message.get("kind") == "request" and _prompt_of(message) is not None:
            number = _turn_number(message)
            count += number is None or number > covered
    return count


def first_turn_number(messages: Sequence[Mapping[str, Any]]) -> int | None:
    """The number the first turn of serialized messages was stamped with (its request's
    metadata), or None: no turn, or one saved before turns were numbered."""
    for message in messages:
        if message.get("kind") == "request" and _prompt_of(message) is not None:
            return _turn_number(message)
    return None


def _turn_number(request: Mapping[str, Any]) -> int | None:
    """The number a turn's first request was stamped with, or None."""
    metadata = request.get("metadata")
    number = metadata.get(TURN_NUMBER_KEY) if isinstance(metadata, Mapping) else None
    valid = isinstance(number, int) and not isinstance(number, bool) and number >= 1
    return number if valid else None


def turn_again(text: str | None) -> bool:
    """Whether the compaction ``text`` says its last turn follows it again, whole."""
    return LAST_TURN_AGAIN_RE.search(text or "") is not None
