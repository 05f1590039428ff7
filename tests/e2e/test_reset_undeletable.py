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
