"""The terminal through a real pty at its edges: stdout redirected, over-long input,
end of input at questions."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import Env
from tests.e2e.screen import ALT_ENTER, CTRL_C, CTRL_D, UP, Screen


@pytest.fixture
def screens() -> Iterator[list[Screen]]:
    opened: list[Screen] = []
    yield opened
    for screen in opened:
        screen.close()


def test_with_stdout_redirected_the_file_gets_replies_only(
    env: Env, screens: list[Screen], tmp_path: Path
) -> None:
    out = tmp_path / "out.txt"
    screen = Screen(env, env.terminal(), "--new", cpr=True, stdout_to=out)
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.expect(">")
    screen.type("hello there\r")
    screen.expect("hello there")  # echoed on the terminal
    screen.type("/help\r")
    screen.expect("Commands:")
    screen.expect(">")
    screen.type(CTRL_D)
    assert screen.wait() == 0
    written = out.read_text()
    (reply,) = written.splitlines()  # the reply, and nothing else
    assert 'You said: "hello there"' in reply and "\x1b" not in written


def test_an_over_long_paste_is_refused_and_kept_in_the_history(
    env: Env, screens: list[Screen]
) -> None:
    screen = Screen(env, env.terminal(), "--new")
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.expect(">")
    long_text = "y" * 200_001
    screen.type(f"\x1b[200~{long_text}\x1b[201~\r")  # a bracketed paste, as terminals send it
    screen.expect("message not sent: 200,001 characters is over the limit of 200,000", 60)
    screen.expect("Up recalls it")
    screen.expect(">")
    screen.type(UP)
    screen.expect("yyyyyyyyyy")  # the refused text is back at the prompt
    screen.type(CTRL_C)  # clears it
    screen.type("short one\r")
    screen.expect('You said: "short one"')


def test_a_ctrl_c_typed_with_the_enter_cancels_that_message_and_the_chat_goes_on(
    env: Env, screens: list[Screen]
) -> None:
    """A helper's report: a Ctrl+C right after Enter was lost, or read by the next prompt
    as Ctrl+C at an empty prompt, and the chat left ("Nothing to save")."""
    screen = Screen(env, env.terminal(), "--new")
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.expect(">")
    screen.type("hello there\r" + CTRL_C)  # one write: read together
    screen.expect("[cancelled]")
    screen.expect(">")
    screen.type("and now\r")
    screen.expect('You said: "and now"')
    screen.type(CTRL_D)
    assert screen.wait() == 0
    assert 'You said: "hello there"' not in screen.text


def test_a_ctrl_c_typed_with_the_enter_of_a_command_or_of_nothing_does_what_it_does_there(
    env: Env, screens: list[Screen]
) -> None:
    """A helper's report: one Ctrl+C with the Enter of /compact left the chat (read by the
    next prompt), and one with an empty Enter was swallowed. (/compact is cancelled by a
    Ctrl+C now; /save cannot be.)"""
    screen = Screen(env, env.terminal(), "--new")
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.expect(">")
    screen.type("hello\r")
    screen.expect('You said: "hello"')
    screen.type("/save\r" + CTRL_C)  # a command is not interrupted: said, and it ends
    screen.expect("cannot be interrupted")
    screen.type("and now\r")
    screen.expect('You said: "and now"')
    screen.type("\r" + CTRL_C)  # Ctrl+C at an empty prompt leaves
    assert screen.wait() == 130


def test_a_line_longer_than_the_screen_wraps_without_a_mark_in_its_text(
    env: Env, screens: list[Screen]
) -> None:
    """A helper's find (H72): a line wider than the terminal went on, on the next row,
    after the continuation mark of a new line (``. ``), so ``...dolore magna aliqua`` read
    ``...dolore magn`` / ``. a aliqua``: a period and a space in the text that were not
    typed. A new line typed with Alt+Enter still gets its mark."""
    screen = Screen(env, env.terminal(), "--new")
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.expect(">")
    screen.type("q" * 150)  # the screen is 120 columns wide: one wrap
    screen.expect("q" * 30)
    time.sleep(0.5)  # the whole line drawn
    screen.expect("q" * 5)
    assert "\n. q" not in screen.text, screen.text[-400:]
    screen.type(ALT_ENTER + "second line")
    screen.expect("\n. second line")
    screen.type("\r")
    screen.expect("You said:")
    screen.type(CTRL_D)
    assert screen.wait() == 0
    (session_id,) = env.session_ids()
    assert "q" * 150 + "\\nsecond line" in str(env.session(session_id)["recent_messages"])


def test_with_stdout_redirected_a_listing_fits_the_terminal_it_is_drawn_on(
    env: Env, screens: list[Screen], tmp_path: Path
) -> None:
    """H141: `agent-assist > out.txt` on a 120-column terminal drew `/checkpoint` on it
    fitted to 80 columns (the width of no terminal: stdout's fallback), its times cut short
    and its last words cut off. COLUMNS is not exported by an interactive bash."""
    out = tmp_path / "out.txt"
    screen = Screen(env, env.terminal(), "--new", stdout_to=out, extra={"COLUMNS": ""})
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.expect(">")
    screen.type("remember the escalation policy, please\r")
    screen.expect(">")
    screen.type("/save\r")
    screen.expect("saved as checkpoint 1")
    screen.expect(">")
    screen.type("/checkpoint\r")
    screen.expect(  # the whole time and the whole of the last message's words
        " UTC  1 turn  0 files changed  (save)  "
        "'remember the escalation policy, please'"
    )
    screen.expect(">")
    screen.type(CTRL_D)
    assert screen.wait() == 0


NEVER_ANSWERS_CPR = {"PROMPT_TOOLKIT_NO_CPR": ""}
"""A screen that is asked for the cursor position and never answers (a serial console, a
multiplexer that swallows the request): prompt_toolkit is not told to skip the asks."""


def _no_cpr_warning_while_waiting(screen: Screen) -> None:
    """Waits at what is asked past prompt_toolkit's wait for an answer to its cursor
    position request: what it printed then (``WARNING: your terminal doesn't support
    cursor position requests (CPR).``) came after the chat's own lines."""
    from prompt_toolkit.renderer import Renderer

    with pytest.raises(AssertionError, match="did not see"):
        screen.expect("WARNING", timeout=Renderer.CPR_TIMEOUT + 2)


def test_a_terminal_that_never_answers_cursor_position_requests_is_not_warned_at_the_prompt(
    env: Env, screens: list[Screen]
) -> None:
    """H167: two seconds at the prompt of such a terminal printed prompt_toolkit's
    warning, a line about the terminal the user can do nothing with; the chat goes on."""
    screen = Screen(env, env.terminal(), "--new", extra=NEVER_ANSWERS_CPR)
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.expect(">")
    assert "\x1b[6n" in screen.raw  # asked
    _no_cpr_warning_while_waiting(screen)
    screen.type("hello\r")
    screen.expect('You said: "hello"')
    screen.type(CTRL_D)
    assert screen.wait() == 0
    assert "cursor position" not in screen.text


def test_a_terminal_that_never_answers_cursor_position_requests_is_not_warned_at_a_question(
    env: Env, screens: list[Screen]
) -> None:
    terminal = env.terminal()
    assert env.run("--new", input="something to resume\n", terminal=terminal).returncode == 0
    screen = Screen(env, terminal, extra=NEVER_ANSWERS_CPR)
    screens.append(screen)
    screen.expect("Resume previous session? [Y/n]")
    _no_cpr_warning_while_waiting(screen)
    screen.type("y\r")
    screen.expect("/help for commands.")
    screen.expect(">")
    screen.type(CTRL_D)
    assert screen.wait() == 0
    assert "cursor position" not in screen.text
