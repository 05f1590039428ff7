"""What summary models' refusals as over their context window taught: the request size
(as the wire carries it) each is held to, for a while."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from session.compaction import CHARS_PER_TOKEN

WINDOW_LESSON_S: Final = 1800.0
"""How long a lesson holds a summary model's requests after its last refusal; then the
model is asked within the chat's budget again (a model behind the same name given a
larger window, a proxy's limit lifted), which costs one refused request if not."""
WINDOW_TRIES: Final = 4
"""Requests one summary makes of a model that refuses each as over its window, each
smaller than the one before (three quarters of it, or of the window it states)."""


def summary_window_chars(refused_chars: int, stated_window: int | None) -> int:
    """The request size a summary model's refusal of ``refused_chars`` as over its context
    window holds its requests to: three quarters of the refused request, and of the
    window it stated (in tokens)."""
    chars = refused_chars * 3 // 4
    return chars if stated_window is None else min(chars, stated_window * CHARS_PER_TOKEN * 3 // 4)


@dataclass(frozen=True)
class _Lesson:
    chars: int
    until: float


@dataclass(frozen=True)
class SummaryWindows:
    """Per summary model, the request size its refusals taught and until when it holds."""

    lessons: Mapping[str, _Lesson] = field(default_factory=dict)

    def held_to(self, model: str, max_chars: int | None, now: float) -> int | None:
        """The request size a summary of ``model`` is held to at ``now``: the chat's budget
        (``max_chars``), and the lesson of its refusals while it holds; None: no bound."""
        lesson = self.lessons.get(model)
        learned = lesson.chars if lesson is not None and now < lesson.until else None
        limits = [c for c in (max_chars, learned) if c is not None]
        return min(limits) if limits else None

    def refused(
        self, model: str, sent_chars: int, stated_window: int | None, now: float
    ) -> SummaryWindows:
        """These lessons after ``model`` refused a request of ``sent_chars`` at ``now``."""
        chars = summary_window_chars(sent_chars, stated_window)
        held = self.held_to(model, None, now)
        lesson = _Lesson(chars if held is None else min(chars, held), now + WINDOW_LESSON_S)
        return SummaryWindows({**self.lessons, model: lesson})
