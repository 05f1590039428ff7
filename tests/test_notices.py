"""The notices of changes outside: one line per file and burst, until a flood; and the
background notices held while a reply streams (session/notices.py)."""

from __future__ import annotations

from session.notices import (
    BURST_S,
    FLOOD_FILES,
    FLOOD_S,
    HOLD_S,
    MAX_HOLD_S,
    UNREADABLE,
    Notices,
    Told,
    flood_line,
)


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


# -- the ledger (Notices): its table, event by event, at explicit times -------------------

A = "note: a.md changed outside agent-assist"


def told_each(at: float = 0.0) -> Notices:
    """A ledger whose first FLOOD_FILES changes got their lines at ``at``."""
    notices, told = Notices().changed([f"f{n:02}.md" for n in range(FLOOD_FILES)], at)
    assert len(told.lines) == FLOOD_FILES
    return notices


def test_a_change_outside_gets_a_line_of_its_own() -> None:
    assert Notices().changed(["a.md"], 0.0)[1] == Told((A,))


def test_the_files_of_one_report_are_told_once_each_in_order() -> None:
    told = Notices().changed(["b.md", "a.md", "b.md"], 0.0)[1]
    assert told.lines == (A, "note: b.md changed outside agent-assist")


def test_a_file_changed_again_within_a_burst_is_not_told_again() -> None:
    notices, _ = Notices().changed(["a.md"], 0.0)
    assert notices.changed(["a.md"], BURST_S - 0.1)[1] == Told()


def test_a_burst_lasts_until_the_file_is_quiet_for_burst_s() -> None:
    notices, _ = Notices().changed(["a.md"], 0.0)
    notices, _ = notices.changed(["a.md"], 1.5)
    assert notices.changed(["a.md"], 3.0)[1] == Told(), "1.5 s after its last change"
    assert notices.changed(["a.md"], 3.0 + BURST_S)[1] == Told((A,))


def test_the_ledger_keeps_only_the_changes_of_the_last_burst_s() -> None:
    notices, _ = Notices().changed(["a.md", "b.md"], 0.0)
    notices, _ = notices.changed(["b.md"], 1.0)
    notices, _ = notices.changed(["c.md"], BURST_S)
    assert list(notices.bursts) == ["b.md", "c.md"]


def test_a_burst_that_deletes_the_file_says_so() -> None:
    notices, _ = Notices().changed(["a.md"], 0.0)
    notices, told = notices.changed(["a.md"], 0.5, gone=frozenset({"a.md"}))
    assert told.lines == ("note: a.md deleted outside agent-assist",)
    assert notices.changed(["a.md"], 1.0)[1] == Told((A,)), "and made again"


def test_a_file_gone_but_there_unreadable_is_told_as_made_unreadable() -> None:
    gone = frozenset({"a.md"})
    told = Notices().changed(["a.md"], 0.0, gone=gone, unread=gone)[1]
    assert told.lines == (f"note: a.md {UNREADABLE} outside agent-assist",)


def test_another_sessions_write_is_its_change_and_a_hand_edit_after_it_is_told() -> None:
    writers = {"a.md": "0a1b2c3d4e5f"}
    notices, told = Notices().changed(["a.md"], 0.0, writers=writers)
    assert told.lines == ("note: a.md changed by another agent-assist session (0a1b2c3d4e5f)",)
    assert notices.changed(["a.md"], 0.5)[1] == Told((A,))


def test_past_flood_files_lines_in_flood_s_the_rest_is_held_for_one_line() -> None:
    names = [f"f{n:02}.md" for n in range(FLOOD_FILES + 3)]
    notices, told = Notices().changed(names, 0.0)
    assert len(told.lines) == FLOOD_FILES
    assert notices.held == {name: "changed" for name in names[FLOOD_FILES:]}
    assert (told.take_in, told.check_in) == (HOLD_S, FLOOD_S)


def test_the_held_changes_are_taken_in_one_line_that_lists_their_files() -> None:
    notices, _ = told_each().changed(["t/b.md", "t/a.md"], 0.1, gone=frozenset({"t/b.md"}))
    notices, told = notices.take()
    assert told == Told(
        flood=flood_line({"t/a.md": "changed", "t/b.md": "deleted"}), files=("t/a.md", "t/b.md")
    )
    assert notices.take()[1] == Told(), "nothing held: no line"


def test_only_the_first_change_held_since_the_last_line_asks_for_it() -> None:
    notices, first = told_each().changed(["a.md"], 0.1)
    notices, second = notices.changed(["b.md"], 0.2)
    assert (first.take_in, second.take_in) == (HOLD_S, None)


def test_each_line_of_a_flood_that_goes_on_waits_twice_as_long() -> None:
    """H84's find: a sed -i whose changes came over 30 s told its first twenty files a
    line each in every second of it, and a count between: 79 lines."""
    notices = told_each()
    delays = []
    for n in range(6):  # a change held every 0.9 s: the flood never goes quiet
        notices, told = notices.changed([f"g{n}.md"], 0.1 + 0.9 * n)
        assert told.lines == ()
        delays.append(told.take_in)
        notices, _ = notices.take()
    assert delays == [HOLD_S, 2 * HOLD_S, 4 * HOLD_S, MAX_HOLD_S, MAX_HOLD_S, MAX_HOLD_S]


def test_after_a_quiet_flood_s_a_change_gets_its_own_line_again() -> None:
    notices, _ = told_each().changed(["late.md"], 0.5)
    notices, _ = notices.take()
    assert notices.changed(["a.md"], 0.5 + FLOOD_S / 2)[1].lines == (), "the flood goes on"
    assert notices.changed(["a.md"], 0.5 + FLOOD_S)[1].lines == (A,)


def test_a_line_of_its_own_ends_the_flood_before_a_new_one_starts_afresh() -> None:
    notices, _ = told_each().changed(["late.md"], 0.5)
    notices, _ = notices.take()
    notices, _ = notices.changed([f"n{n:02}.md" for n in range(FLOOD_FILES)], 10.0)
    assert notices.changed(["a.md"], 10.5)[1].take_in == HOLD_S


def test_a_flood_quiet_for_flood_s_is_over_and_what_it_holds_is_told() -> None:
    """The last line of a sed -i came up to 4 s (its hold) after its last change."""
    notices, _ = told_each().changed(["a.md"], 0.1)
    assert notices.checked(0.5)[1] == Told(check_in=0.1 + FLOOD_S - 0.5)
    notices, _ = notices.changed(["b.md"], 0.9)
    assert notices.checked(1.1)[1] == Told(check_in=0.9 + FLOOD_S - 1.1), "b.md puts it off"
    notices, told = notices.checked(0.9 + FLOOD_S)
    assert told.files == ("a.md", "b.md")
    assert (notices.held, notices.checking) == ({}, False)


def test_one_check_for_the_floods_end_at_a_time() -> None:
    notices, first = told_each().changed(["a.md"], 0.1)
    assert first.check_in == FLOOD_S
    assert notices.changed(["b.md"], 0.2)[1].check_in is None, "the one under way sees b.md"


def test_the_check_ends_once_a_line_took_what_was_held() -> None:
    notices, _ = told_each().changed(["a.md"], 0.1)
    notices, _ = notices.take()  # the line due after HOLD_S
    notices, told = notices.checked(0.1 + FLOOD_S)
    assert (told, notices.checking) == (Told(), False)
    assert notices.changed(["b.md"], 0.7)[1].check_in == FLOOD_S, "a check of its own"


def test_nothing_held_needs_no_check() -> None:
    names = [f"f{n:02}.md" for n in range(FLOOD_FILES)]
    assert Notices().changed(names, 0.0)[1].check_in is None


def test_a_background_notice_waits_for_the_end_of_the_reply() -> None:
    notices, told = Notices().between_turns("note: compacted", in_turn=True)
    notices, _ = notices.between_turns("warning: offline", in_turn=True)
    assert told == Told()
    notices, told = notices.turn_over()
    assert told == Told(("note: compacted", "warning: offline"))
    assert notices.turn_over()[1] == Told(), "told once"


def test_a_background_notice_between_turns_is_told_at_once() -> None:
    told = Notices().between_turns("note: compacted", in_turn=False)[1]
    assert told == Told(("note: compacted",))


def test_a_transition_leaves_the_ledger_it_started_from_as_it_was() -> None:
    before = told_each()
    before.changed(["a.md"], 0.1)
    assert before == told_each()
