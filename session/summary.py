"""The offline summarizer: extractive, deterministic, bounded in size, no network."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ToolReturnPart,
    UserPromptPart,
)

from session.compacted import COMPACTION_HEADER_START, OFFLINE_REQUESTS_RE, STARTED_WITH
from session.resume import DECISIONS_PREFIX
from session.tool_pairs import tool_pairs

MAX_SUMMARY_CHARS = 1500
_PROMPT_CHARS = 160
EARLIER = "Earlier: "
LATEST_REQUESTS = "Latest requests:"
"""After what came first, the newest requests (listed below it) without a count."""


def _clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def user_prompts(messages: Sequence[ModelMessage]) -> list[str]:
    return [
        part.content
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, UserPromptPart) and isinstance(part.content, str)
    ]


def touched_paths(messages: Sequence[ModelMessage]) -> list[str]:
    """Workspace paths named by file tool calls, first mention first (not the calls the
    tools refused, such as a path outside the workspace)."""
    seen: dict[str, None] = {}
    for pair in tool_pairs(messages):
        refused = isinstance(pair.answer, ToolReturnPart) and str(
            pair.answer.content
        ).startswith("error:")
        if pair.call.tool_name in ("read_file", "write_file") and not refused:
            path = pair.call.args_as_dict().get("path")
            if isinstance(path, str):
                seen.setdefault(path, None)
    return list(seen)


def offline_summary(
    messages: Sequence[ModelMessage], decisions: Sequence[str] = (), previous: str | None = None
) -> str | None:
    """A short summary that keeps the requests, the file paths and the decisions.

    The previous summary's first line is kept so older context is not lost;
    the whole text never exceeds ``MAX_SUMMARY_CHARS``.
    """
    prompts = user_prompts(messages)
    if not prompts and not previous:
        return None
    lines: list[str] = []
    opening = _opening_line(previous)
    if opening:
        lines.append(opening)
    if prompts and opening:  # the turns in memory may overlap what came before: no count
        lines.append(LATEST_REQUESTS)
        lines += [f'- "{_clip(p, _PROMPT_CHARS)}"' for p in prompts[-3:]]
    elif prompts:
        requests = f"{len(prompts)} recent request{'' if len(prompts) == 1 else 's'}"
        lines.append(f'{requests}; first: "{_clip(prompts[0], _PROMPT_CHARS)}"')
        latest = prompts[max(1, len(prompts) - 3) :]  # the first is said on the line above
        lines += [f'- "{_clip(p, _PROMPT_CHARS)}"' for p in latest]
    paths = touched_paths(messages)
    if paths:
        lines.append("Files: " + ", ".join(paths[:20]))
    if decisions:
        lines.append(DECISIONS_PREFIX + "; ".join(_clip(d, 120) for d in decisions[-10:]))
    return _clip_block("\n".join(lines), MAX_SUMMARY_CHARS)


def _opening_line(previous: str | None) -> str:
    """How what came before opens, as the summary's first line: the first line of
    ``previous`` that says something (a compaction's header is skipped for its
    narrative), said as "Started with" when it names the first request (a compaction's
    ``Started with: ...``, an earlier session summary's ``N recent requests; first:
    "..."``), else as what came "Earlier"; never "Earlier: Started with: ..."."""
    for line in (previous or "").splitlines():
        line = line.strip()
        if not line or line.startswith(COMPACTION_HEADER_START):
            continue
        line = line.removeprefix(EARLIER)  # an earlier summary's own earlier words
        if line.startswith(STARTED_WITH):
            return _clip(line, 300)
        if quoted := OFFLINE_REQUESTS_RE.match(line):
            return STARTED_WITH + _clip(quoted[1], 300)
        return EARLIER + _clip(line, 300)
    return ""


def _clip_block(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
