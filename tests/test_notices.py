"""The notices of changes outside: one line per file, until a flood (session/notices.py)."""

from __future__ import annotations

from session.notices import FLOOD_FILES, FLOOD_S, HOLD_S, MAX_HOLD_S, NoticeFlood, flood_line


def flooded(at: float = 0.0) -> NoticeFlood:
    """A flood whose first FLOOD_FILES changes got their lines at ``at``."""
    flood = NoticeFlood()
    for _ in range(FLOOD_FILES):
        assert flood.one_line_each(at)
    return flood


def test_the_first_files_of_a_flood_get_a_line_each_and_the_rest_are_held() -> None:
    flood = NoticeFlood()
    each = [flood.one_line_each(0.01 * n) for n in range(FLOOD_FILES + 3)]
    assert each == [True] * FLOOD_FILES + [False] * 3


def test_only_the_first_held_change_asks_for_the_floods_line() -> None:
    flood = flooded()
    assert [flood.hold(f"t/f{n}.md", "changed", 0.1) for n in range(3)] == [HOLD_S, None, None]
    assert flood.take() == {"t/f0.md": "changed", "t/f1.md": "changed", "t/f2.md": "changed"}
    assert flood.take() == {}


def test_a_flood_that_goes_on_is_held_and_told_less_and_less_often() -> None:
    """H84's find: a sed -i whose changes came over 30 s told its first twenty files a
    line each in every second of it, and a count between: 79 lines."""
    flood = flooded()
    delays = []
    for n in range(20):  # a change held every 0.9 s: the flood never goes quiet
        now = 0.1 + 0.9 * n
        assert not flood.one_line_each(now)
        delays.append(flood.hold(f"f{n}.md", "changed", now))
        flood.take()
    assert delays[:4] == [HOLD_S, 2 * HOLD_S, 4 * HOLD_S, MAX_HOLD_S]
    assert set(delays[4:]) == {MAX_HOLD_S}


def test_after_a_quiet_second_a_change_gets_its_own_line_again() -> None:
    flood = flooded()
    flood.hold("late.md", "changed", 0.5)
    flood.take()
    assert not flood.one_line_each(0.5 + FLOOD_S / 2), "the flood goes on"
    assert flood.one_line_each(0.5 + FLOOD_S)
    flood = flooded(10.0)
    assert not flood.one_line_each(10.5)
    assert flood.hold("next.md", "changed", 10.5) == HOLD_S, "a new flood starts afresh"


def test_the_floods_line_counts_the_files_and_names_where_they_are() -> None:
    held = {f"templates/t{n}.md": "changed" for n in range(1990)}
    held.update({"src/app.py": "deleted", "notes.md": "changed"})
    assert flood_line(held) == (
        "note: 1,992 more tracked files changed outside agent-assist, 1 of them deleted "
        "(under src/, templates/)"
    )


def test_a_flood_of_deletions_says_deleted() -> None:
    held = {f"d{n}/x.md": "deleted" for n in range(7)}
    assert flood_line(held) == (
        "note: 7 more tracked files deleted outside agent-assist "
        "(under d0/, d1/, d2/, d3/, d4/ and 2 more)"
    )
    one = flood_line({"a.md": "changed"})
    assert one == "note: 1 more tracked file changed outside agent-assist"


def test_a_flood_quiet_for_a_second_is_over_and_what_it_holds_is_due() -> None:
    """The last line of a sed -i came up to 4 s (its hold) after its last change."""
    flood = flooded()
    assert flood.hold("a.md", "changed", 0.1) == HOLD_S
    assert flood.check_the_end()
    assert flood.over_in(0.5) == 0.1 + FLOOD_S - 0.5
    flood.hold("b.md", "changed", 0.9)
    assert flood.over_in(1.1) == 0.9 + FLOOD_S - 1.1, "a change held since puts the end off"
    assert flood.over_in(0.9 + FLOOD_S) == 0.0
    assert flood.take() == {"a.md": "changed", "b.md": "changed"}


def test_one_check_for_the_end_at_a_time() -> None:
    flood = flooded()
    flood.hold("a.md", "changed", 0.1)
    assert flood.check_the_end()
    flood.hold("b.md", "changed", 0.2)
    assert not flood.check_the_end(), "the one under way sees b.md too"


def test_the_check_ends_once_a_line_took_what_was_held() -> None:
    flood = flooded()
    flood.hold("a.md", "changed", 0.1)
    assert flood.check_the_end()
    flood.take()  # the line due after HOLD_S
    assert flood.over_in(0.1 + FLOOD_S) is None
    flood.hold("b.md", "changed", 0.7)
    assert flood.check_the_end(), "the next held change starts a check of its own"


def test_nothing_held_needs_no_check() -> None:
    assert not flooded().check_the_end()
