"""The notices of changes outside: one line per file, until a flood (session/notices.py)."""

from __future__ import annotations

from session.notices import FLOOD_FILES, FLOOD_S, NoticeFlood, flood_line


def test_the_first_files_of_a_flood_get_a_line_each_and_the_rest_wait_for_one() -> None:
    flood = NoticeFlood()
    each = [flood.one_line_each(0.01 * n) for n in range(FLOOD_FILES + 3)]
    assert each == [True] * FLOOD_FILES + [False] * 3


def test_only_the_first_held_change_asks_for_the_floods_line() -> None:
    flood = NoticeFlood()
    assert [flood.hold(f"t/f{n}.md", "changed") for n in range(3)] == [True, False, False]
    assert flood.take() == {"t/f0.md": "changed", "t/f1.md": "changed", "t/f2.md": "changed"}
    assert flood.take() == {}


def test_while_changes_are_held_a_new_one_joins_them() -> None:
    """Even once the flood's first lines are older than FLOOD_S: the held line is next."""
    flood = NoticeFlood()
    for _ in range(FLOOD_FILES):
        flood.one_line_each(0.0)
    flood.hold("a.md", "changed")
    assert not flood.one_line_each(FLOOD_S + 1)


def test_after_a_flood_a_change_gets_its_own_line_again() -> None:
    flood = NoticeFlood()
    for n in range(FLOOD_FILES + 1):
        if not flood.one_line_each(0.0):
            flood.hold(f"f{n}.md", "changed")
    flood.take()
    assert flood.one_line_each(FLOOD_S)


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
