"""The resume offer: DESIGN 6's two exact lines first and last, a few lines between, and
each other session of the project told apart from the others."""

from __future__ import annotations

from cli.console import word_wrap
from cli.resume_offer import offer_text

OFFER = {
    "session_id": "a1b2c3d4e5f6",
    "last_active": "2026-03-31 14:22 UTC",
    "turns": 12,
    "summary": "hello",
    "modified": ["agent_spec.md"],
    "deleted": [],
    "unchanged": 2,
}


def other(session_id: str, turns: int, when: str = "2026-03-31 14:22 UTC") -> dict[str, object]:
    return {"session_id": session_id, "last_active": when, "turns": turns, "summary": "hello"}


def test_other_sessions_of_the_same_minute_and_words_are_told_apart_by_id_and_turns() -> None:
    """H108: sessions of the same minute and the same first words were listed alike."""
    others = [other("0a0a0a0a0a0a", 1), other("0b0b0b0b0b0b", 4), other("0c0c0c0c0c0c", 2)]
    lines = offer_text(OFFER, others).splitlines()
    assert lines[-4:-1] == [
        "    2) 0a0a0a0a0a0a · 1 turn · 03-31 14:22 · hello",
        "    3) 0b0b0b0b0b0b · 4 turns · 03-31 14:22 · hello",
        "    4) 0c0c0c0c0c0c · 2 turns · 03-31 14:22 · hello",
    ]


def test_an_other_session_of_another_year_shows_its_year() -> None:
    (line,) = offer_text(OFFER, [other("0a0a0a0a0a0a", 1, "2025-12-30 09:00 UTC")]).splitlines()[
        -2:-1
    ]
    assert line == "    2) 0a0a0a0a0a0a · 1 turn · 2025-12-30 09:00 · hello"


def test_more_sessions_than_listed_are_counted_on_the_question_s_line_not_a_line_more() -> None:
    """H108: with 9 sessions the offer took 10 lines between DESIGN 6's two exact lines."""
    others = [other(f"0{n}" * 6, n) for n in range(1, 4)]
    lines = offer_text(OFFER, others, more=5).splitlines()
    assert lines[0] == "Previous session found (last active: 2026-03-31 14:22 UTC)"
    assert lines[-1] == "Resume previous session? [Y/n]"
    assert lines[3] == (
        "  or resume another session of this project (answer 2-4; 5 older: agent-assist sessions):"
    )
    assert len(lines) - 2 <= 6


def test_an_other_session_s_line_fits_a_narrow_terminal() -> None:
    long = {**other("0a0a0a0a0a0a", 3), "summary": "a very long summary " * 10}
    line = offer_text(OFFER, [long], width=60).splitlines()[-2]
    assert len(line) < 60 and line.startswith("    2) 0a0a0a0a0a0a · 3 turns")


def test_an_other_session_with_accents_of_combining_marks_stays_on_its_line() -> None:
    """A summary written with combining accents (``e`` + U+0301, as text pasted from
    macOS often is) takes fewer columns than characters: its line, cut to the terminal's
    width, was wrapped again by characters, the summary pushed to a row of its own."""
    from cli.console import word_wrap
    from cli.resume_offer import offer_text
    from cli.summaries import columns

    offer = {"session_id": "a" * 12, "last_active": "2026-12-05 11:58 UTC", "turns": 1}
    other = {
        "session_id": "b" * 12,
        "last_active": "2026-12-05 11:50 UTC",
        "turns": 2,
        "summary": "re\u0301sume\u0301 " * 40,
    }
    for width in (60, 100, 200):
        text = offer_text(offer, [other], 0, width)
        (line,) = [row for row in text.split("\n") if row.startswith("    2) ")]
        assert columns(line) < width
        assert word_wrap(text, width) == text


def test_on_a_40_column_terminal_an_other_session_s_line_drops_its_time_and_summary() -> None:
    """H114: id, turns and time took about 36 columns; the rest wrapped, and each session
    read as two lines."""
    others = [{**other("0a0a0a0a0a0a", 3), "summary": "designing a support agent"}]
    lines = offer_text(OFFER, others, width=40).splitlines()
    assert lines[0] == "Previous session found (last active: 2026-03-31 14:22 UTC)"
    assert lines[-2] == "    2) 0a0a0a0a0a0a · 3 turns"
    assert lines[-1] == "Resume previous session? [Y/n]"


def test_an_other_session_s_line_drops_its_time_before_its_summary() -> None:
    others = [{**other("0a0a0a0a0a0a", 3), "summary": "designing a support agent"}]
    line = offer_text(OFFER, others, width=52).splitlines()[-2]
    assert line == "    2) 0a0a0a0a0a0a · 3 turns · designing a suppor…"


def test_an_other_session_s_line_never_wraps_whatever_the_width() -> None:
    others = [{**other("0a0a0a0a0a0a", 12345), "summary": "a very long summary " * 10}]
    for width in range(20, 120):
        line = offer_text(OFFER, others, width=width).splitlines()[-2]
        assert len(line) <= max(width - 1, 20), (width, line)
        assert line.startswith("    2) 0a0a0a0a0a0a")


def test_the_offered_sessions_summary_is_cut_to_a_narrow_terminal() -> None:
    """H113: at 60 columns the summary, cut at 70 characters, wrapped to a second row."""
    offer = {**OFFER, "summary": "designing a support-ticket triage agent " * 5}
    lines = offer_text(offer, [], width=60).splitlines()
    assert lines[0] == "Previous session found (last active: 2026-03-31 14:22 UTC)"
    assert lines[1].startswith("  12 turns · summary: designing a support-ticket")
    assert len(lines[1]) <= 59
    assert lines[-1] == "Resume previous session? [Y/n]"


def test_an_other_session_with_no_turn_reads_as_in_the_sessions_table() -> None:
    """A new user's trial (H127): a session saved before its first turn was
    ``(no summary)`` in the offer but ``(no turn yet)`` in ``agent-assist sessions``."""
    empty = {**other("0a0a0a0a0a0a", 0), "summary": None}
    line = offer_text(OFFER, [empty]).splitlines()[-2]
    assert line == "    2) 0a0a0a0a0a0a · 0 turns · 03-31 14:22 · (no turn yet)"
    later = {**other("0b0b0b0b0b0b", 2), "summary": None}  # turns, no summary yet
    assert offer_text(OFFER, [later]).splitlines()[-2].endswith(" · (no summary)")


def test_at_60_columns_the_offer_s_lines_fit_and_the_older_sessions_have_a_line() -> None:
    """H132: at 60 columns the line that counts the older sessions wrapped in the middle of
    its count (``... (answer 2-4; 5`` then ``older: agent-assist sessions):``). Each line
    fits; the count that does not fit there is said below the sessions listed."""
    others = [other(f"0{n}" * 6, n) for n in range(1, 4)]
    text = offer_text(OFFER, others, more=5, width=60)
    lines = text.splitlines()
    assert word_wrap(text, 60) == text, "no line left for the terminal to wrap"
    assert all(len(line) <= 59 for line in lines), lines
    assert lines[0] == "Previous session found (last active: 2026-03-31 14:22 UTC)"
    assert lines[-1] == "Resume previous session? [Y/n]"
    assert lines[3] == "  or resume another session of this project (answer 2-4):"
    assert lines[-5].startswith("    2) 0101010101")
    assert lines[-2] == "    (5 older: agent-assist sessions)"
