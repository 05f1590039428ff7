"""The sessions table as ``agent-assist sessions`` prints it from the listing's rows."""

from __future__ import annotations

from typing import Any

from cli.sessions import render_table


def row(**changes: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "session_id": "0a1b2c3d4e5f",
        "project": "ws_33df9f5d",
        "state": "orphaned",
        "terminal_pid": None,
        "last_active": "2026-12-02 07:42 UTC",
        "summary": "Designing a triage agent",
        "messages": 4,
        "turns": 12,
        "note": None,
    }
    return {**base, **changes}


def test_the_table_counts_turns() -> None:
    header, line = render_table([row()], every=False, width=120).splitlines()
    assert header.split()[-2:] == ["TURNS", "SUMMARY"]
    assert "UTC  12 " in line


def test_a_row_from_a_supervisor_older_than_the_turns_column_shows_a_dash() -> None:
    """After an upgrade the running supervisor may still be the old one: its rows have no
    ``turns`` (the table raised KeyError)."""
    old = row()
    del old["turns"]
    _, line = render_table([old], every=False, width=120).splitlines()
    assert "UTC  -  " in line


def test_every_project_s_table_fits_an_80_column_terminal() -> None:
    """With the PROJECT column the fixed columns alone took 77 of 80 columns: every row
    wrapped. Times get shorter first, then the TERMINAL column goes."""
    rows = [row(state="idle", terminal_pid=4242), row(session_id="1a2b3c4d5e6f")]
    table = render_table(rows, every=True, width=80).splitlines()
    assert all(len(line) <= 80 for line in table), table
    assert "ACTIVE (UTC)" in table[0] and "12-02 07:42" in table[1]
    narrow = render_table(
        [row(project="my-agent_33df9f5d")], every=True, width=80
    ).splitlines()
    assert all(len(line) <= 80 for line in narrow), narrow
    assert "TERMINAL" not in narrow[0] and "STATE" in narrow[0]


def test_a_wide_terminal_keeps_every_column_and_the_full_time() -> None:
    header, line = render_table([row()], every=True, width=160).splitlines()
    assert header.split()[:6] == ["SESSION", "PROJECT", "STATE", "TERMINAL", "LAST", "ACTIVE"]
    assert "2026-12-02 07:42 UTC" in line


def test_no_line_is_wider_than_a_narrow_terminal() -> None:
    """A helper's report: at 60 columns `sessions --all` printed a 61-character header
    (the SUMMARY heading wrapped), and at 45 columns every row wrapped."""
    rows = [row(project="a-long-project-name_33df9f5d"), row(session_id="1a2b3c4d5e6f")]
    for width in (45, 60, 70):
        for every in (True, False):
            table = render_table(rows, every=every, width=width).splitlines()
            assert all(len(line) <= width for line in table), (width, every, table)
            starts = ("SESSION", "0a1b2c3d4e5f", "1a2b3c4d5e6f")
            assert all(line.startswith(starts) for line in table)


def test_wide_characters_are_counted_in_screen_columns() -> None:
    """A helper's report: a CJK summary row took 133 columns of a 120-column terminal
    (its characters were counted, each takes two), and wrapped."""
    from wcwidth import wcswidth

    rows = [
        row(summary="日本語のエージェント設計 with wide chars 全角文字 " * 4 + "🤖"),
        row(session_id="1a2b3c4d5e6f", project="プロジェクト_33df9f5d"),
    ]
    for every in (False, True):
        table = render_table(rows, every=every, width=120).splitlines()
        assert all(wcswidth(line) <= 120 for line in table), table
        assert table[1].rstrip().endswith("…")
    _, first, second = render_table(rows, every=True, width=200).splitlines()
    assert wcswidth(first.split("  orphaned")[0]) == wcswidth(second.split("  orphaned")[0])


def test_a_narrow_terminal_loses_whole_columns_not_the_middle_of_cells() -> None:
    """A helper's report: at 60 columns `--all` cut TURNS to `TUR…` and the summary to
    `…`; at 40 STATE became `orphane…`."""
    rows = [row(state="orphaned", project="my-agent-project_33df9f5d", turns=1234)]
    header, line = render_table(rows, every=True, width=60).splitlines()
    assert header.split()[:4] == ["SESSION", "STATE", "ACTIVE", "(UTC)"]
    assert "orphaned" in line.split() and "TURNS" not in header and "PROJECT" not in header
    assert "Designing" in line
    header, line = render_table(rows, every=True, width=40).splitlines()
    assert "orphaned" in line.split()  # only the summary is cut


def test_a_session_saved_before_its_first_turn_says_so_rather_than_nothing() -> None:
    """A helper's find (H67): after /reset then /save the table's summary cell was empty,
    where a new session's says it has no turn yet."""
    (_, line) = render_table(
        [row(summary=None, turns=0, messages=0)], every=False, width=120
    ).splitlines()
    assert line.split("  ")[-1].strip() == "(no turn yet)"
    (_, other) = render_table([row(summary=None)], every=False, width=120).splitlines()
    assert "(no turn" not in other, "a session with turns and no summary yet stays blank"


def test_a_line_cut_at_a_narrow_width_keeps_its_column_spacing() -> None:
    """The cut of a line too wide even without its summary's room kept its columns'
    padding: cutting with the summary's clip (which makes one line of its words) would
    run the columns together."""
    rows = [row(state="idle", terminal_pid=4242), row(session_id="1a2b3c4d5e6f")]
    wide = render_table(rows, every=False, width=55).splitlines()  # the same columns
    narrow = render_table(rows, every=False, width=40).splitlines()
    for full, cut in zip(wide, narrow, strict=True):
        assert cut.endswith("…") and full.startswith(cut[:-1])


def test_sessions_show_lists_the_decisions_once() -> None:
    """A helper's report (H57): the offline summary's "Decisions:" line repeated the
    Decisions section below it."""
    from cli.sessions import render_show

    session: dict[str, Any] = {
        "session_id": "a1b2c3d4e5f6",
        "created_at": "2026-12-03T10:00:00Z",
        "updated_at": "2026-12-03T10:05:00Z",
        "agent_spec_path": None,
        "phase": None,
        "recent_messages": [],
        "compacted_history_summary": None,
        "checkpoint_count": 0,
        "summary": '2 recent requests; first: "decide keep spec short"\nDecisions: keep spec short',
        "decisions": ["keep spec short"],
        "file_manifest": {},
    }
    shown = render_show({"session": session})
    assert shown.count("keep spec short") == 2  # the first request's words, and the section
    assert "\nDecisions:\n- keep spec short" in shown


def test_sessions_show_on_a_narrow_terminal_cuts_no_word_at_its_edge() -> None:
    """A helper's find (H87): at 60 columns `sessions show` left the terminal to wrap its
    lines, mid-word (`custom` / `ers`, `(aut` / `o)`). Its lines wrap between words; its
    checkpoints are fitted as `/checkpoint` fits them, a line each."""
    from cli.sessions import render_show

    session: dict[str, Any] = {
        "session_id": "a1b2c3d4e5f6",
        "created_at": "2026-12-03T10:00:00Z",
        "updated_at": "2026-12-03T10:05:00Z",
        "agent_spec_path": None,
        "phase": None,
        "recent_messages": [],
        "compacted_history_summary": None,
        "checkpoint_count": 1,
        "summary": "3 recent requests; first: please think about the escalation policy for "
        "angry customers with long words",
        "decisions": [],
        "file_manifest": {},
    }
    checkpoint = {
        "number": 1,
        "created_at": "2026-12-05T02:23:33Z",
        "turns": 0,
        "files_changed": 0,
        "reason": "auto",
        "last_user": None,
    }
    shown = render_show({"session": session, "checkpoints": [checkpoint]}, width=60)
    assert all(len(line) <= 59 for line in shown.splitlines()), shown
    assert "3 recent requests; first: please think about the escalation\npolicy" in shown
    assert shown.endswith("\n  1  12-05 02:23  0 turns  0 files changed  (auto)")


def test_one_long_project_name_is_cut_rather_than_every_row_losing_its_project() -> None:
    """H81's find: with one project named after a 100-character directory, `sessions
    --all` on a 100-column terminal left the PROJECT column out of every row. That name
    is cut (keeping its hash, which tells it from the others) and the column stays."""
    rows = [
        row(project="verylongname" * 9 + "_6bc5b239"),
        row(session_id="1a2b3c4d5e6f", project="ws7_0320bd5d"),
    ]
    header, long_line, short_line = render_table(rows, every=True, width=100).splitlines()
    assert header.split()[:2] == ["SESSION", "PROJECT"]
    assert "…_6bc5b239  " in long_line and "ws7_0320bd5d  " in short_line
    assert all(len(line) <= 100 for line in (header, long_line, short_line))
    assert "Designing" in short_line  # the summary keeps room
