"""Lines on a narrow terminal (40 columns): wrapped between words, never inside one."""

from __future__ import annotations

from tests.e2e.harness import Env
from tests.e2e.test_tty import ANSI, Pty


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
    try:
        tty.expect("to use the supervisor's")
        assert tty.process.wait(timeout=15) == 1
    finally:
        tty.close()
    screen = ANSI.sub(b"", tty.seen).decode().replace("\r", "")
    rows = [row for row in screen.splitlines() if row.strip()]
    assert rows[0].startswith("error: the running supervisor sends"), rows
    assert all(len(row) < 40 for row in rows), rows
    words = " ".join(rows).split()
    assert "model" in words and "requests" in words, "no word cut in two"
