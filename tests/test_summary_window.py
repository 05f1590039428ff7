"""What summary models' refusals as over their window teach, and for how long."""

from __future__ import annotations

from session.summary_window import WINDOW_LESSON_S, SummaryWindows


def test_a_refusal_holds_the_models_requests_to_three_quarters_of_the_refused_one() -> None:
    windows = SummaryWindows().refused("m", 40_000, None, now=100.0)
    assert windows.held_to("m", 60_000, now=100.0) == 30_000
    assert windows.held_to("m", 20_000, now=100.0) == 20_000, "the chat's budget, if smaller"
    assert windows.held_to("other", None, now=100.0) is None


def test_a_stated_window_holds_them_to_three_quarters_of_it_if_smaller() -> None:
    windows = SummaryWindows().refused("m", 40_000, 2_000, now=0.0)
    assert windows.held_to("m", None, now=0.0) == 6_000


def test_a_refused_retry_teaches_a_smaller_window() -> None:
    windows = SummaryWindows().refused("m", 40_000, None, now=0.0)
    windows = windows.refused("m", 30_000, None, now=1.0)
    assert windows.held_to("m", None, now=1.0) == 22_500


def test_a_lesson_is_forgotten_a_while_after_the_last_refusal() -> None:
    """A lesson held for the supervisor's life: a model given a larger window behind the
    same name (or a proxy's limit lifted) was held small until the supervisor stopped."""
    windows = SummaryWindows().refused("m", 40_000, None, now=0.0)
    windows = windows.refused("m", 30_000, None, now=600.0)
    assert windows.held_to("m", None, now=600.0 + WINDOW_LESSON_S - 1) == 22_500
    assert windows.held_to("m", 60_000, now=600.0 + WINDOW_LESSON_S) == 60_000
    relearned = windows.refused("m", 50_000, None, now=600.0 + WINDOW_LESSON_S)
    assert relearned.held_to("m", None, now=600.0 + WINDOW_LESSON_S) == 37_500
