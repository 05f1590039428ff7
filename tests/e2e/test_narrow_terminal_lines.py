"""Lines on a narrow terminal (40 columns): wrapped between words, never inside one."""

from __future__ import annotations

import re

from tests.e2e.harness import Env
from tests.e2e.test_tty import ANSI, Pty


def _rows_at_exit(tty: Pty, last: str, status: int) -> list[str]:
    """The non-empty rows the terminal showed, once ``last`` came and it exited ``status``."""
    try:
        tty.expect(last)
        assert tty.process.wait(timeout=15) == status
    finally:
        tty.close()
    screen = ANSI.sub(b"", tty.seen).decode().replace("\r", "")
    return [row for row in screen.splitlines() if row.strip()]


def test_a_warning_wider_than_the_terminal_wraps_between_words(env: Env) -> None:
    """H114: console.warn lines were left to the terminal's wrap, which cut them inside a
    word (``Cancelled; no session was opened (nothin`` / ``g on disk...``)."""
    terminal = env.terminal()
    tty = Pty(env, terminal, columns=40)
    try:
        tty.expect("commands.")
        tty.type("something to resume\r")
        tty.expect("something to resume")
        tty.expect_prompt()
        tty.type("/exit\r")
        assert tty.process.wait(timeout=15) == 0
    finally:
        tty.close()
    tty = Pty(env, terminal, columns=40)
    try:
        tty.expect("Resume previous session? [Y/n]")
        tty.expect_prompt()
        tty.type("\x03")
        tty.expect("(nothing on disk was changed).")
        assert tty.process.wait(timeout=15) == 130  # a chat a Ctrl+C ends
    finally:
        tty.close()
    screen = ANSI.sub(b"", tty.seen).decode()
    assert "Cancelled; no session was opened\n(nothing on disk was changed)." in screen



def test_a_chats_last_error_line_wider_than_the_terminal_wraps_between_words(env: Env) -> None:
    """The chat's refusal of another endpoint (its last line, an ``error:``) was left to
    the terminal's wrap, which cut it inside words at 40 columns (``sends mode`` /
    ``l requests``), as warnings were before H114."""
    assert env.run("supervisor", "start").returncode == 0  # no OPENAI_BASE_URL there
    env.extra.update(
        OPENAI_BASE_URL="http://127.0.0.1:9/v1",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
    )
    tty = Pty(env, env.terminal(), "--new", columns=40)
    rows = _rows_at_exit(tty, "supervisor's", 1)  # its last word (rows wrap past the label)
    assert rows[0].startswith("error: the running supervisor sends"), rows
    assert all(row.startswith("       ") for row in rows[1:]), rows  # indented past "error: "
    assert all(len(row) < 40 for row in rows), rows
    words = " ".join(rows).split()
    assert "model" in words and "requests" in words, "no word cut in two"


def test_config_show_fits_an_80_column_terminal(env: Env) -> None:
    """H147: with a model whose window is not known (the README's `openai-chat:my-model`),
    `config show` padded every VALUE to the long `context_tokens` explanation, so on an
    80-column terminal each row wrapped and every SOURCE landed on a line of its own."""
    tty = Pty(env, env.terminal(), "config", "show", "--model", "openai-chat:my-model", columns=80)
    rows = _rows_at_exit(tty, "config file:", 0)
    assert all(len(row) <= 80 for row in rows), rows
    assert rows[0].split() == ["SETTING", "VALUE", "SOURCE"], rows
    assert rows[1].split()[0] == "model" and rows[1].endswith("option"), rows
    budget = next(i for i, row in enumerate(rows) if row.startswith("context_tokens"))
    assert rows[budget].endswith("default"), rows
    value = rows[budget].split("  ", 1)[1].rsplit("default", 1)[0].split()
    value += rows[budget + 1].split()  # the explanation goes on under VALUE
    assert "not" in value and "known)" in value, rows
    assert rows[budget + 1].startswith(" " * len("context_tokens")), rows


def test_config_show_at_40_columns_keeps_each_source_whole_on_its_settings_row(
    env: Env,
) -> None:
    """The VALUE column kept 20 columns at least, so at 40 each row was 50 wide and the
    terminal cut its SOURCE in two (``model  offline  d`` / ``efault``)."""
    env.extra["AGENT_ASSIST_COMPACTION_OVERLAP"] = "3"
    tty = Pty(env, env.terminal(), "config", "show", columns=40)
    rows = _rows_at_exit(tty, "config file:", 0)
    assert [row for row in rows if len(row) > 40] == [], rows
    assert rows[0].split() == ["SETTING", "VALUE", "SOURCE"], rows
    assert rows[1].split() == ["model", "offline", "default"], rows
    overlap = next(i for i, row in enumerate(rows) if row.startswith("compaction_overlap"))
    assert rows[overlap].split() == ["compaction_overlap", "3", "env"], rows
    summary = next(i for i, row in enumerate(rows) if row.startswith("summary_model"))
    assert rows[summary].endswith("default"), rows


def test_supervisor_status_at_40_columns_wraps_between_words(env: Env) -> None:
    """Its line was left to the terminal, which cut it inside a word (``attached`` /
    ``, socket``, ``so`` / ``cket``)."""
    assert env.run("supervisor", "start").returncode == 0
    tty = Pty(env, env.terminal(), "supervisor", "status", columns=40)
    rows = _rows_at_exit(tty, "(build ", 0)
    assert [row for row in rows if len(row) >= 40] == [], rows
    assert rows[0].startswith("running (pid "), rows
    assert "socket" in " ".join(rows).split(), "no word cut in two"


def test_sessions_prune_at_40_columns_wraps_between_words(env: Env) -> None:
    """Its lines were left to the terminal: ``last ac`` / ``tive``, ``2026-`` / ``12-07``."""
    terminal = env.terminal()
    assert env.run("--new", input="an old idea\n", terminal=terminal).returncode == 0
    terminal.close()  # its session is orphaned now
    prune = ("sessions", "prune", "--older-than", "0", "--dry-run")
    tty = Pty(env, env.terminal(), *prune, columns=40)
    rows = _rows_at_exit(tty, "UTC", 0)
    assert [row for row in rows if len(row) >= 40] == [], rows
    assert "active" in " ".join(rows).split(), "no word cut in two"


def test_the_sessions_listings_error_line_wraps_between_words(env: Env) -> None:
    """H147: `agent-assist sessions` (answered without click, for speed) printed its
    `error:` line as it was, which the terminal cut inside words (`cd to i` / `t again`),
    where every click command's error line wraps between words."""
    gone = env.workspace / "gone"
    gone.mkdir()
    shell = ("sh", "-c", 'cd "$0" && rmdir "$0" && exec "$@"', str(gone))
    tty = Pty(env, env.terminal(), "sessions", under=shell, columns=40)
    rows = _rows_at_exit(tty, "--workspace DIR", 1)
    assert rows[0].startswith("error: the current directory"), rows
    assert all(len(row) < 40 for row in rows), rows
    words = " ".join(rows).split()
    assert "deleted" in words and "again," in words, "no word cut in two"


def test_checkpoint_rows_at_40_columns_keep_their_reason_and_first_words(env: Env) -> None:
    """H161: at 40 columns each `/checkpoint` row was cut in its files changed
    (``1  12-07 01:59  1 turn  0 files ch…``): what tells the checkpoints apart, the
    reason and the last message's first words, was never on the screen."""
    tty = Pty(env, env.terminal(), "--new", columns=40)
    try:
        for number, text in ((1, "billing goes to queue 2"), (2, "refunds to queue 3")):
            tty.expect("commands." if number == 1 else ">")
            tty.type(f"{text}\r")
            tty.expect("real LLM.)")  # the offline reply's end (its lines wrap)
            tty.expect_prompt()
            tty.type("/save\r")
            tty.expect(f"checkpoint {number}")
        tty.expect_prompt()
        tty.type("/checkpoint\r")
        tty.expect("'refunds to")
        tty.expect_prompt()
        tty.type("/exit\r")
        assert tty.process.wait(timeout=15) == 0
    finally:
        tty.close()
    screen = ANSI.sub(b"", tty.seen).decode().replace("\r", "")
    rows = [row for row in screen.splitlines() if re.match(r"  [12]  \d\d-\d\d \d\d:\d\d  ", row)]
    assert [row[5:16] == rows[0][5:16] for row in rows] == [True, True], rows  # the same times
    assert [row[:5] + row[16:] for row in rows] == [
        "  1    (save)  'billing goe…",
        "  2    (save)  'refunds to …",
    ], rows
