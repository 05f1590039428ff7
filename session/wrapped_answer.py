"""A summary model's answer without the markup it may wrap its words in: a code fence, a
JSON object with a ``summary`` field (its other fields kept after it), a ``<summary>`` tag,
brackets around a placeholder."""

from __future__ import annotations

import json
import re
from typing import Final

_FENCE_RE: Final = re.compile(r"```[\w+.-]*[ \t]*\n(.*?)\n?[ \t]*```", re.DOTALL)
_TAG_RE: Final = re.compile(
    r"<(summary|narrative|recap|answer|output|response)>(.*?)</\1>", re.DOTALL | re.IGNORECASE
)
_CLOSING: Final = {"(": ")", "[": "]"}
SUMMARY_FIELDS: Final = ("summary", "narrative", "recap")
"""The fields of a JSON answer that hold the summary (the first one present)."""
MAX_WRAPPINGS: Final = 3
"""Wrappings taken off one inside another (a fence around JSON, a tag around a fence)."""


def unwrapped(answer: str, room: int | None = None) -> str:
    """``answer`` stripped, without the wrappings around all of it: what they wrap (for a
    JSON ``summary``, its text then the object's other fields with content, as ``fields``
    words them, held to what the summary leaves of ``room`` characters; empty when none
    holds any). An answer wrapped in nothing, one that opens
    and ends with two wrappings (two fences, two tags), or JSON with no summary text (no
    such field, or one holding a list: the model's own structure), is returned as it is."""
    text = answer.strip()
    for _ in range(MAX_WRAPPINGS):
        inner = _inner(text, room)
        if inner is None:
            return text
        text = inner.strip()
    return text


def _inner(text: str, room: int | None) -> str | None:
    """What one wrapping around all of ``text`` holds; None if it has none."""
    if (fence := _FENCE_RE.fullmatch(text)) and "```" not in fence[1]:
        return fence[1]
    if (tag := _TAG_RE.fullmatch(text)) and f"</{tag[1].lower()}>" not in tag[2].lower():
        return tag[2]
    opening = text[:1]
    if opening in _CLOSING and text.endswith(_CLOSING[opening]) and text.count(opening) == 1:
        return text[1:-1]
    if not (text.startswith("{") and text.endswith("}")):
        return None
    try:
        value = json.loads(text)
    except ValueError:
        return None
    if not isinstance(value, dict):
        return None
    for name in SUMMARY_FIELDS:
        if name in value:
            field = value[name]
            if field and not isinstance(field, str):
                return None  # a list of points, an object: the model's own structure, kept
            others = {key: item for key, item in value.items() if key != name}
            said = (field or "").strip()  # null, "": nothing
            left = None if room is None else room - len(said) - 1
            return "\n".join(filter(None, [said, fields(others, left)]))
    return None


def fields(value: dict[str, object], room: int | None = None) -> str:
    """A JSON answer's fields besides its summary (``decisions``, ``open_questions``), as a
    summary in prose words them: the prompt asks for decisions and questions, and an answer
    giving them a field of their own lost them (H166). Fields holding nothing, or a number or
    a boolean (the model's metadata), are left out;
    with ``room``, only the lines that fit in it (a summary within the cap is not made
    a runaway by its fields)."""
    lines: list[str] = []
    for key, item in value.items():
        label = " ".join(key.replace("_", " ").split()).capitalize() or "Other"
        if isinstance(item, list) and (items := [_said(i) for i in item if _said(i)]):
            lines += [f"{label}:", *(f"- {i}" for i in items)]
        elif not isinstance(item, int | float) and (said := _said(item)):
            lines.append(f"{label}: {said}")  # a number (``confidence``) is no content
    if room is None:
        return "\n".join(lines)
    kept: list[str] = []
    for line in lines:
        if len("\n".join([*kept, line])) > room:
            break
        kept.append(line)
    if kept and kept[-1].endswith(":"):
        kept.pop()  # a label whose first item did not fit
    return "\n".join(kept)


def _said(item: object) -> str:
    """A field's value on one line: a text as it is, anything else as compact JSON; empty
    for null, ``""``, ``[]``, ``{}``."""
    if item is None or item == "" or item == [] or item == {}:
        return ""
    text = item if isinstance(item, str) else json.dumps(item, ensure_ascii=False)
    return " ".join(text.split())
