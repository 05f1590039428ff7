"""The token budget that triggers compaction: configured, or a share of the model's
context window. Light (no model stack): ``config show`` tells it too."""

from __future__ import annotations

from typing import Final

# Context windows of well-known models, in tokens (prefix match on the model's name).
_CONTEXT_WINDOWS: Final = (
    ("gpt-4.1", 1_047_576),
    ("gpt-5", 400_000),
    ("gpt-4o", 128_000),
    ("o1", 200_000),
    ("o3", 200_000),
    ("o4", 200_000),
    ("claude", 200_000),
    ("gemini", 1_048_576),
    ("llama", 128_000),
    ("qwen", 32_768),
    ("mistral", 32_768),
)
DEFAULT_CONTEXT_WINDOW: Final = 32_768
OFFLINE_CONTEXT_WINDOW: Final = 16_384
BUDGET_SHARE: Final = 0.75
"""Compaction starts when a request reaches this share of the window: headroom for
the reply, the tools' output within the turn, and the estimate's error."""


def context_window(model: str) -> int:
    """The model's context window in tokens (a conservative default if unknown)."""
    return known_context_window(model) or DEFAULT_CONTEXT_WINDOW


def known_context_window(model: str) -> int | None:
    """The model's context window in tokens, if this table knows it (None: unknown)."""
    if model == "offline":
        return OFFLINE_CONTEXT_WINDOW
    name = model.split(":", 1)[-1].rsplit("/", 1)[-1].lower()
    return next((w for prefix, w in _CONTEXT_WINDOWS if name.startswith(prefix)), None)


def context_budget(model: str, configured: int | None = None) -> int:
    """The request size (tokens) that triggers compaction: ``configured`` if set, else
    ``BUDGET_SHARE`` of the model's context window."""
    if configured is not None:
        return configured
    return int(context_window(model) * BUDGET_SHARE)
