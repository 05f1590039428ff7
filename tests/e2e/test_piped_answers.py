"""Piped, a line read where an answer is expected must be an answer: anything else stops the run
with one line (exit 1) and is neither taken as an answer nor lost silently."""

from __future__ import annotations

import json

from tests.e2e.harness import Client, Env


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(("error:", "warning:"))]


def live_elsewhere(env: Env) -> tuple[Client, str]:
    """A chat in another terminal holding a new session live; (that chat, its session)."""
    holder = env.spawn("--new", terminal=env.terminal())
    holder.send("keep this one live")
    holder.expect("[offline model]")
    (session_id,) = env.session_ids()
    return holder, session_id


def test_a_message_where_the_resume_answer_was_expected_stops_the_run(env: Env) -> None:
    tab = env.terminal()
    assert env.run(input="first message\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    env.settled(session_id)  # the summary written after the first run left lands first
    before = env.session(session_id)
    result = env.run(input="what did we decide?\n", terminal=tab)
    assert result.returncode == 1
    (line,) = error_lines(result.stderr)
    assert "'what did we decide?'" in line and "--yes or --new" in line
    assert env.session_ids() == [session_id]
    assert env.session(session_id) == before


def test_taking_a_new_session_instead_of_a_live_one_is_no_failure(env: Env) -> None:
    """It printed an `error:` line, yet exited 0: the line is a note now."""
    holder, session_id = live_elsewhere(env)
    result = env.run("--resume", session_id, input="y\nhello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert f"note: session {session_id} is live in another terminal" in result.stderr
    assert error_lines(result.stderr) == []
    assert len(env.session_ids()) == 2
    holder.close_stdin()


def test_a_message_where_start_new_instead_was_expected_stops_the_run(env: Env) -> None:
    holder, session_id = live_elsewhere(env)
    result = env.run("--resume", session_id, input="hello\n", terminal=env.terminal())
    assert result.returncode == 1
    assert "is live in another terminal" in result.stderr
    last = result.stderr.splitlines()[-1]
    assert last.startswith("error: 'hello' is not an answer") and "--new" in last
    assert env.session_ids() == [session_id]
    holder.close_stdin()
    assert holder.wait() == 0


def test_the_resume_offer_of_one_session_names_only_y_and_n(env: Env) -> None:
    """With no other session to choose, the refusal named a choice range ``2-1``."""
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    result = env.run(input="maybe\n", terminal=tab)
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert "'maybe' is not an answer to 'Resume previous session?' (y or n)" in last, last


def test_a_message_where_the_reset_confirmation_was_expected_deletes_nothing(env: Env) -> None:
    spec = env.workspace / "agent_spec.md"
    spec.write_text("# spec\n")
    result = env.run("--new", input="hi\n/reset\nplease keep going\n", terminal=env.terminal())
    assert result.returncode == 1
    *_, refused, last = result.stderr.splitlines()
    assert "'please keep going' is not an answer" in refused
    assert "--yes" in refused and "--new" in refused, "DESIGN 5a: the line suggests them"
    assert spec.exists()
    (session_id,) = env.session_ids()
    assert last == f"Session {session_id} saved.", "the last line names the session"
    assert "hi" in json.dumps(env.session(session_id)["recent_messages"])


def test_an_error_line_is_never_doubly_prefixed(env: Env) -> None:
    tab = env.terminal()
    assert env.run(input="first\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    path.write_text(json.dumps({**env.session(session_id), "schema_version": 99}))
    result = env.run("--resume", session_id, input="", terminal=tab)
    assert result.returncode == 1
    for line in result.stderr.splitlines():
        assert not line.startswith(("error: error:", "error: warning:")), line
    assert "schema_version 99" in result.stderr


def test_a_message_where_start_new_instead_was_expected_after_the_offer_stops_the_run(
    env: Env,
) -> None:
    """The offered session was taken by another terminal before the answer came: a line
    that is not an answer to "Start a new session instead?" was taken for an unusable
    file, and a new session was said to start (none did) with exit 0."""
    first = env.terminal()
    assert env.run(input="first message\n", terminal=first).returncode == 0
    (session_id,) = env.session_ids()
    first.close()  # orphaned: offered to the next tab
    chat = env.spawn(terminal=env.terminal())
    chat.expect("Resume previous session? [Y/n]", stderr=True)
    holder = env.spawn("--resume", session_id, terminal=env.terminal())
    holder.send("taken meanwhile")
    holder.expect("[offline model]")
    chat.send("y")
    chat.send("My Message")
    assert chat.wait() == 1
    errors = chat.drain_stderr()
    assert any("is live in another terminal" in line for line in errors), errors
    assert errors[-1].startswith("error: 'My Message' is not an answer"), errors
    assert "Starting a new session instead." not in errors
    assert env.session_ids() == [session_id]
    holder.close_stdin()
    assert holder.wait() == 0


def test_a_tab_whose_session_is_live_elsewhere_is_told_so(env: Env) -> None:
    """It started a new session without a word (a scripted "y" became its first message)."""
    tab = env.terminal()
    assert env.run(input="mine\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    holder = env.spawn("--resume", session_id, terminal=env.terminal())
    holder.send("taken by another tab")
    holder.expect("[offline model]")
    result = env.run(input="hello\n", terminal=tab)
    assert result.returncode == 0, result.stderr
    assert (
        f"note: this tab's session {session_id} is live in another terminal (pid "
        in result.stderr
    )
    holder.close_stdin()
    assert holder.wait() == 0


def test_yes_answers_the_start_a_new_session_question_too(env: Env) -> None:
    holder, session_id = live_elsewhere(env)
    result = env.run(
        "--resume", session_id, "--yes", input="hello\n", terminal=env.terminal()
    )
    assert result.returncode == 0, result.stderr
    assert "Start a new session instead? [Y/n]" not in result.stderr
    assert "Starting a new session instead (--yes)." in result.stderr
    assert len(env.session_ids()) == 2
    holder.close_stdin()
