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
