"""Keys typed as a prompt or a question appears on a dumb terminal (``TERM=dumb``, as
Emacs's ``M-x shell`` sets): read by it, as on any terminal."""

from __future__ import annotations

import sys

import pytest

from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer
from tests.e2e.test_tty import JOB_CONTROL_SHELL, Pty, one_turn


@pytest.mark.parametrize("term", ["dumb", "xterm"])
def test_a_ctrl_d_typed_as_the_prompt_appears_after_a_reply_leaves(env: Env, term: str) -> None:
    """H114: on TERM=dumb the prompt was written before it read keys one by one; a Ctrl+D
    typed as it appeared was the terminal's end of an empty line, lost (2 runs in 3)."""
    for run in range(3):
        tty = Pty(env, env.terminal(), "--new", term=term)
        try:
            one_turn(tty, f"hello number {run}")
            tty.type("\x04")  # at once
            assert tty.process.wait(timeout=15) == 0
        finally:
            tty.close()


def test_a_ctrl_d_typed_as_the_resume_question_appears_cancels_it(env: Env) -> None:
    terminal = env.terminal()
    tty = Pty(env, terminal, term="dumb")
    try:
        one_turn(tty, "something to resume")
        tty.type("/exit\r")
        assert tty.process.wait(timeout=15) == 0
    finally:
        tty.close()
    for _ in range(3):
        tty = Pty(env, terminal, term="dumb")
        try:
            tty.expect("Resume previous session? [Y/n]")
            tty.expect_prompt()
            tty.type("\x04")
            tty.expect("Cancelled; no session was opened")
            assert tty.process.wait(timeout=15) == 0
        finally:
            tty.close()


def test_a_ctrl_d_typed_while_a_reply_streams_leaves_once_it_is_saved(
    env: Env, streaming_server: ChatServer
) -> None:
    """Typed ahead like any key, for the next prompt: there, with nothing typed before
    it, it leaves (docs/decisions.md, "A Ctrl+D typed during a reply")."""
    tty = Pty(env, env.terminal(), term="dumb")
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("\x04")
        tty.expect("word199")
        assert tty.process.wait(timeout=15) == 0
    finally:
        tty.close()
    (session_id,) = env.session_ids()
    assert "word199" in str(env.session(session_id)["recent_messages"])


def test_after_a_stop_and_fg_the_prompt_and_its_text_are_written_again(env: Env) -> None:
    """H119's find: prompt_toolkit's dumb prompt draws nothing again after ``fg``: the
    ``>`` and the text typed at it were gone, and a question's ``>`` too."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, env.terminal(), "--new", under=shell, term="dumb")
    try:
        tty.expect("/help for commands.")
        tty.type("write agent_spec.md: # spec\r")
        tty.expect("wrote agent_spec.md")
        tty.expect_prompt()
        tty.type("half typed")
        tty.expect("half typed")
        tty.type("\x1a")
        tty.expect("the shell read nothing")  # then fg
        tty.expect("> half typed", timeout=10)
        tty.type("\x03/reset\r")  # Ctrl+C: the typed line cleared
        tty.expect("Also delete agent_spec.md? [y/N]")
        tty.expect_prompt()
        tty.type("\x1a")
        tty.expect("the shell read nothing")  # then fg
        tty.expect("Also delete agent_spec.md? [y/N]\n>", timeout=10)
        tty.type("n\r")
        tty.expect("Session reset")
    finally:
        tty.close()
