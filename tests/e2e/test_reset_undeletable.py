"""``/reset`` that cannot delete the saved session resets nothing and says so in one
line: the session keeps its history, its file and its tab's pointer (it was never
made an orphan while the user read that it had been reset)."""

from __future__ import annotations

from tests.e2e.harness import Env


def test_reset_that_cannot_delete_the_session_file_keeps_the_session_and_says_so(
    env: Env,
) -> None:
    terminal = env.terminal()
    client = env.spawn("--new", terminal=terminal)
    client.send("remember the blue plan")
    client.expect("remember the blue plan")
    (session_id,) = env.session_ids()
    path = env.settled(session_id)  # the turn's summary write has landed
    path.unlink()
    path.mkdir()  # a directory at the file's name: not ours to delete
    (path / "mine.txt").write_text("made by hand\n")
    pointer = env.project / f"active_{terminal.pid}.json"
    assert pointer.exists()
    client.send("/reset")
    line = client.expect(f"session {session_id}", stderr=True)
    assert line.startswith("error: /reset"), line
    assert "nothing was reset" in line
    assert not any("Session reset" in seen for seen in client.drain_stderr())
    assert pointer.exists()
    assert (path / "mine.txt").read_text() == "made by hand\n"
    client.send("and the red one")
    client.expect("turn 2 of this conversation")
    client.close_stdin()
    assert client.wait() == 1, client.drain_stderr()  # piped: a failed command fails the run
    kept = env.session(session_id)  # saved at the exit (the directory moved aside)
    assert "and the red one" in str(kept["recent_messages"])


def test_reset_whose_session_file_went_but_not_its_checkpoints_is_a_reset(env: Env) -> None:
    """It said nothing was reset, went on in the session whose file was gone, and lost
    every turn after (its saves refused as a deleted session's)."""
    terminal = env.terminal()
    client = env.spawn("--new", terminal=terminal)
    client.send("remember the blue plan")
    client.expect("remember the blue plan")
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    checkpoints = env.project.parent / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    (checkpoints / session_id).write_text("a file where its checkpoints go\n")
    client.send("/reset")
    client.expect("Session reset", stderr=True)
    line = client.expect(f"the checkpoints of session {session_id}", stderr=True)
    assert line.startswith("error: "), line
    assert not path.exists()
    client.send("and the red one")
    client.expect("turn 1 of this conversation")
    client.close_stdin()
    client.wait()
    (new_id,) = env.session_ids()  # the new session's turn was saved
    assert new_id != session_id
    assert "and the red one" in str(env.session(new_id)["recent_messages"])
