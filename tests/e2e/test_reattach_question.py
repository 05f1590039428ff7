"""A message whose send is held by a re-attach's question (the supervisor died, and its
session is live in another tab now) is never lost without a word when the question stops
the run."""

from __future__ import annotations

from tests.e2e.harness import Env


def test_a_message_held_by_a_reattach_question_that_stops_the_run_is_told_unsent(
    env: Env,
) -> None:
    """It was read, held while the chat re-attached, and dropped when the next line was no
    answer to `Start a new session instead?`: only that next line was told."""
    first = env.run("--new", input="zero\n", terminal=env.terminal())
    assert first.returncode == 0, first.stderr
    (session_id,) = env.session_ids()
    tab_a = env.spawn("--resume", session_id, terminal=env.terminal())
    tab_a.send("a one")
    tab_a.expect('You said: "a one"')
    env.kill_supervisor_and_heir()
    tab_b = env.spawn("--resume", session_id, "--yes", terminal=env.terminal())
    tab_b.send("b one")
    tab_b.expect('You said: "b one"')  # the session is live in tab B now
    tab_a.send("a two")
    tab_a.send("a three")
    tab_a.close_stdin()
    assert tab_a.wait() == 1
    tab_a.read_to_the_end()
    told = tab_a.drain_stderr()
    assert "Start a new session instead? [Y/n]" in told
    assert told[-1] == 'note: not sent, the chat ended: "a two"'
    tab_b.close_stdin()
    assert tab_b.wait() == 0
