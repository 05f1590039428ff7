"""What the terminal shows around crashes: a reply the supervisor's death cut is marked as
cut where it stays on the screen, before the reply given again below it."""

from __future__ import annotations

import os
import signal

import pytest

from cli.chat import CUT_BY_RESTART
from tests.e2e.harness import Env, wait_for
from tests.e2e.openai_server import ChatServer
from tests.e2e.test_tty import ANSI, Pty


@pytest.fixture
def server(streaming_server: ChatServer) -> ChatServer:
    return streaming_server


def test_a_reply_cut_by_the_supervisors_death_is_marked_before_it_is_given_again(
    env: Env, server: ChatServer
) -> None:
    """H108: the cut text stayed on the screen unmarked and the reply started again below
    it, so the user could not tell that the first text was cut."""
    tty = Pty(env, env.terminal(), term="dumb")
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word5 ")
        first = env.supervisor_pid()
        heir = wait_for(env.heir_pid, what="the heir")
        assert first is not None and heir != first
        os.kill(first, signal.SIGKILL)
        tty.expect(CUT_BY_RESTART)
        tty.expect("word0 ")  # the reply given again, below the mark
        tty.expect("word199")
        tty.expect_prompt()
        tty.type("/exit\r")  # a Ctrl+D typed as a dumb terminal's prompt is drawn can be lost
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()
    screen = ANSI.sub(b"", tty.seen).decode()
    cut_text, _, again = screen.partition(CUT_BY_RESTART)
    assert "word5 " in cut_text and "word199" not in cut_text
    assert again.count("word0 ") == 1
    (session_id,) = env.session_ids()
    assert str(env.session(session_id)["recent_messages"]).count("be slow please") == 1
