"""Keys typed outside a prompt (a cold supervisor's start, the attach, right after Enter,
as a reply ends): held for the next prompt or question, read as typed there, shown once."""

from __future__ import annotations

import os
import signal
import sys

import pytest

from tests.e2e.harness import AGENT_ASSIST, Env, wait_for
from tests.e2e.test_clear_screen import Tmux, tmux  # noqa: F401  (the fixture)
from tests.e2e.test_tty import ANSI, JOB_CONTROL_SHELL, Pty, one_turn


@pytest.mark.parametrize("term", ["xterm", "dumb"])
def test_a_ctrl_d_typed_before_the_first_prompt_leaves(env: Env, term: str) -> None:
    """Typed as the chat starts: the terminal's line editing, still on, took it for the
    end of an empty line, a NUL to the prompt, which then waited."""
    tty = Pty(env, env.terminal(), "--new", term=term)
    try:
        tty.type("\x04")  # at once, long before the prompt
        tty.expect("Nothing to save (no turn was completed).")
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()


def test_a_ctrl_d_typed_before_the_resume_question_cancels_it(env: Env) -> None:
    terminal = env.terminal()
    tty = Pty(env, terminal)
    try:
        one_turn(tty, "something to resume")
        tty.type("/exit\r")
        assert tty.process.wait(timeout=15) == 0
    finally:
        tty.close()
    tty = Pty(env, terminal)
    try:
        tty.type("\x04")
        tty.expect("Cancelled; no session was opened")
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()


def test_text_typed_before_the_first_prompt_is_shown_once_and_sent_by_it(
    env: Env, tmux: Tmux  # noqa: F811  (the fixture imported above)
) -> None:
    """The terminal echoed it before the prompt drew it again: twice on the screen."""
    environ = env.environ(env.terminal()).items()
    assigned = " ".join(f"{k}='{v}'" for k, v in environ if k.startswith(("AGENT_", "PATH")))
    chat = f"env {assigned} {AGENT_ASSIST} --new"
    tmux("-f", "/dev/null", "new-session", "-d", "-x", "80", "-y", "15", "-s", "chat")
    tmux("respawn-pane", "-k", "-t", "chat", "-c", str(env.workspace), chat)
    tmux("send-keys", "-t", "chat", "-l", "typed ahead of the prompt")
    wait_for(lambda: tmux.shows("(/help)"), what="the chat's prompt")
    wait_for(lambda: tmux.shows("> typed ahead of the prompt"), what="the text at the prompt")
    assert tmux.scrollback().count("typed ahead of the prompt") == 1, tmux.scrollback()
    tmux("send-keys", "-t", "chat", "Enter")
    wait_for(lambda: tmux.shows('You said: "typed ahead of the prompt"'), what="the reply")



STOPPED_WHILE_HELD = """
import os, signal, termios
from cli.console import Console

console = Console()
with console.keys_held():
    os.kill(os.getpid(), signal.SIGTSTP)  # a Ctrl+Z, the terminal's signal while held
    print(f"held again: echo {bool(termios.tcgetattr(0)[3] & termios.ECHO)}", flush=True)
console.let_go()
print(f"let go: echo {bool(termios.tcgetattr(0)[3] & termios.ECHO)}", flush=True)
"""


def test_a_stop_before_the_first_prompt_gives_the_shell_its_terminal_as_it_was(
    env: Env,
) -> None:
    """The keys are held (no echo, no line editing) from the start to the first prompt:
    a stop meanwhile gives the shell the terminal as it was (else, in dash, the user
    typed blind), and ``fg`` holds them again, until the first prompt lets go."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    program = (sys.executable, "-c", STOPPED_WHILE_HELD)
    tty = Pty(env, env.terminal(), under=shell, program=program)
    try:
        tty.expect("stopped; echo True icanon True")
        tty.expect("the shell read nothing")  # then fg
        tty.expect("held again: echo False")
        tty.expect("let go: echo True")
        tty.expect("ended by None")
    finally:
        tty.close()


BETWEEN_PROMPTS = """
import select, signal, sys
from cli.console import Console

console = Console()
with console.keys_held():  # as the chat: the whole of it
    print(f"read {console.read_line()!r}", flush=True)
    if sys.argv[1] == "after the enter":  # before the reply holds the keys
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        print("the prompt returned", flush=True)
        signal.sigwait({signal.SIGINT})
        print("interrupted", flush=True)
    else:
        with console.keys_unechoed():
            pass  # a reply
        print("the reply ended", flush=True)
        select.select([sys.stdin], [], [])  # what is typed next waits in the terminal
        print(f"read {console.read_line()!r}", flush=True)
"""


def test_a_ctrl_c_right_after_enter_is_not_echoed(env: Env) -> None:
    """H128: a Ctrl+C typed after the prompt returned and before the reply held the keys
    was echoed by the terminal, ``^C[cancelled]`` or ``^Cstarting the model...``: the
    prompt let the keys go. They stay held from one prompt to the next."""
    program = (sys.executable, "-c", BETWEEN_PROMPTS)
    tty = Pty(env, env.terminal(), "after the enter", program=program)
    try:
        tty.type("x\r")
        tty.expect("the prompt returned")
        tty.type("\x03")
        tty.expect("interrupted")
        assert b"^C" not in tty.seen
    finally:
        tty.close()


def test_a_ctrl_d_typed_as_a_reply_ends_leaves_at_the_next_prompt(env: Env) -> None:
    """H128: typed between a reply's end and the next prompt, a Ctrl+D was the end of an
    empty line to the terminal's line editing, a NUL to the prompt, which then waited."""
    program = (sys.executable, "-c", BETWEEN_PROMPTS)
    tty = Pty(env, env.terminal(), "after the reply", program=program)
    try:
        tty.type("x\r")
        tty.expect("the reply ended")
        tty.type("\x04")
        tty.expect("read None", timeout=10)
    finally:
        tty.close()


RIGHT_AFTER_ENTER = """
import select, sys
from cli.console import Console

console = Console()
with console.keys_held():  # as the chat: the whole of it
    print(f"read {console.read_line()!r}", flush=True)
    print("the prompt returned", flush=True)
    select.select([sys.stdin], [], [])  # typed after the prompt returned
    console.interrupted_after_enter()
    with console.keys_unechoed():
        print("the reply began", flush=True)  # and ended
    while (line := console.read_line()) is not None:  # a line typed ahead is sent
        print(f"read {line!r}", flush=True)
    print("read None", flush=True)
"""


@pytest.mark.parametrize("typed", ["\x04", "next\r\x04"])
def test_a_ctrl_d_typed_right_after_enter_leaves_at_the_next_prompt(
    env: Env, typed: str
) -> None:
    """H132: a Ctrl+D typed after the prompt returned and before the reply began was
    read with the keys typed ahead (``interrupted_after_enter``) and dropped there as a
    Delete at an empty line: the prompt after the reply waited. It ends the chat there
    (after the line typed before it, if one was)."""
    program = (sys.executable, "-c", RIGHT_AFTER_ENTER)
    tty = Pty(env, env.terminal(), program=program)
    try:
        tty.type("x\r")
        tty.expect("the prompt returned")
        tty.type(typed)
        tty.expect("the reply began")
        if typed.startswith("next"):
            tty.expect("read 'next'")
        tty.expect("read None", timeout=10)
    finally:
        tty.close()


QUIT_WHILE_HELD = """
import os, signal
from cli.console import Console

with Console().keys_held():
    os.kill(os.getpid(), signal.SIGQUIT)  # a Ctrl+\\\\, the terminal's signal while held
"""


def test_a_quit_while_the_keys_are_held_gives_the_shell_its_terminal_as_it_was(
    env: Env,
) -> None:
    """H128: the hold lasts the whole chat; a Ctrl+\\\\ outside a prompt and a reply (the
    attach, the moment after Enter) quit it with no echo and no line editing (dash)."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    program = (sys.executable, "-c", QUIT_WHILE_HELD)
    tty = Pty(env, env.terminal(), under=shell, program=program)
    try:
        tty.expect(f"ended by {int(signal.SIGQUIT)}; echo True icanon True")
    finally:
        tty.close()


def _asked_for_bracketed_paste(tty: Pty, timeout: float = 30.0) -> None:
    """Wait until the chat has asked its terminal to bracket pastes (``ESC[?2004h``)."""
    import select
    import time

    deadline = time.monotonic() + timeout
    while b"\x1b[?2004h" not in tty.seen:
        remaining = deadline - time.monotonic()
        assert remaining > 0, f"never asked for bracketed paste: {tty.seen[-300:]!r}"
        if select.select([tty.master], [], [], remaining)[0]:
            try:
                tty.seen += os.read(tty.master, 65536)
            except OSError:
                raise AssertionError(f"ended, never asked: {tty.seen[-300:]!r}") from None


def test_lines_pasted_before_the_first_prompt_are_one_message(env: Env) -> None:
    """Pasted while the chat started (a cold supervisor, the attach), the lines were sent
    one by one and a `/save` among them was run: the chat had not asked the terminal to
    bracket a paste before its prompt did, so the terminal sent each line with Enter."""
    assert env.run("supervisor", "start").returncode == 0
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGSTOP)  # the chat waits for its welcome: no prompt yet
    tty = Pty(env, env.terminal(), "--new")
    try:
        try:
            _asked_for_bracketed_paste(tty)
        finally:
            os.kill(supervisor, signal.SIGCONT)
        tty.type("\x1b[200~line one\rline two\r/save\x1b[201~")  # as a terminal pastes then
        tty.expect("/help for commands.")
        tty.type("\r")
        tty.expect('You said: "line one')
        tty.expect_prompt()
        tty.type("/exit\r")
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()
    shown = ANSI.sub(b"", tty.seen).decode()
    assert "checkpoint" not in shown, shown
    assert [session["turns"] for session in env.sessions_json()] == [1]
