"""``/reset`` that cannot delete the saved session resets nothing and says so in one
line: the session keeps its history, its file and its tab's pointer (it was never
made an orphan while the user read that it had been reset)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from tests.e2e.harness import Client, Env, Terminal, wait_for


def test_reset_that_cannot_delete_the_session_file_keeps_the_session_and_says_so(
    env: Env,
) -> None:
    client, terminal, session_id, path = saved_chat(env, "remember the blue plan")
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
    client, _, session_id, path = saved_chat(env, "remember the blue plan")
    checkpoints = env.project.parent / "checkpoints"
    checkpoints.mkdir(exist_ok=True)
    (checkpoints / session_id).write_text("a file where its checkpoints go\n")
    client.send("/reset")
    client.expect("Session reset", stderr=True)
    line = client.expect(f"the checkpoints of session {session_id}", stderr=True)
    assert line.startswith("error: "), line
    assert not path.exists()
    goes_on_in_a_new_session(env, client, session_id)


def test_reset_whose_pointer_stays_after_its_file_went_is_a_reset(env: Env) -> None:
    """H159's find: a pointer that could not be removed once the session file was gone
    raised as the file's own removal would, and the reset read `nothing was reset`: the
    chat went on in a session whose file was gone, each later save refused."""
    fault_file = env.faults()
    client, terminal, session_id, path = saved_chat(env, "remember the blue plan")
    fault_file.write_text(f"unlink EIO active_{terminal.pid}.json\n")
    client.send("/reset")
    client.expect("Session reset", stderr=True)
    line = client.expect(f"active_{terminal.pid}.json", stderr=True)
    assert line.startswith("error: "), line
    assert f"session {session_id} is gone" in line, line
    assert not path.exists()
    fault_file.unlink()
    goes_on_in_a_new_session(env, client, session_id)


def test_reset_cut_by_a_killed_supervisor_after_its_delete_says_the_session_is_reset(
    env: Env,
) -> None:
    """H165: the supervisor killed once the saved session was deleted (here, while its
    tab's pointer was being removed), the chat said `/reset was interrupted; please run it
    again`, though the session was gone and the chat went on in a new one."""
    fault_file = env.faults()
    client, terminal, session_id, path = saved_chat(env, "remember the blue plan")
    fault_file.write_text(f"unlink HANG active_{terminal.pid}.json\n")
    client.send("/reset")
    wait_for(lambda: not path.exists(), what="the reset's delete")
    env.kill_supervisor_and_heir()
    fault_file.unlink()
    line = client.expect("/reset was interrupted", stderr=True)
    assert "run it again" not in line, line
    assert f"session {session_id} was deleted" in line, line
    client.send("and the red one")
    client.expect("turn 1 of this conversation")
    client.close_stdin()
    assert client.wait() == 0, client.drain_stderr()
    (new_id,) = env.session_ids()
    assert new_id != session_id


def test_reset_cut_after_its_delete_says_the_files_it_was_to_delete_may_remain(
    env: Env,
) -> None:
    fault_file = env.faults()
    client, terminal, session_id, path = saved_chat(
        env, "write agent_spec.md: # ours", answered="wrote agent_spec.md"
    )
    fault_file.write_text(f"unlink HANG active_{terminal.pid}.json\n")
    client.send("/reset")
    client.expect("Also delete agent_spec.md? [y/N]", stderr=True)
    client.send("y")
    wait_for(lambda: not path.exists(), what="the reset's delete")
    env.kill_supervisor_and_heir()
    fault_file.unlink()
    line = client.expect("/reset was interrupted", stderr=True)
    assert line == (
        f"error: /reset was interrupted after session {session_id} was deleted: the session "
        f"is reset (new session {line.split('new session ')[1][:12]}), but the files it was "
        "to delete may remain; /reset asks about them again"
    ), line
    client.close_stdin()
    assert client.wait() == 1  # piped: what it was asked to do is not all done
    assert (env.workspace / "agent_spec.md").exists()


class SavedChat(NamedTuple):
    client: Client
    terminal: Terminal
    session_id: str
    path: Path
    """The session file, its first turn's write landed."""


def saved_chat(env: Env, first: str, answered: str | None = None) -> SavedChat:
    """A chat of a new tab whose ``first`` message was answered (its echo, or
    ``answered``) and saved."""
    terminal = env.terminal()
    client = env.spawn("--new", terminal=terminal)
    client.send(first)
    client.expect(answered or first)
    (session_id,) = env.session_ids()
    return SavedChat(client, terminal, session_id, env.settled(session_id))


def goes_on_in_a_new_session(env: Env, client: Client, reset: str) -> None:
    """The chat's next turn is the first of a new session, saved there, not in ``reset``."""
    client.send("and the red one")
    client.expect("turn 1 of this conversation")
    client.close_stdin()
    client.wait()
    (new_id,) = env.session_ids()
    assert new_id != reset
    assert "and the red one" in str(env.session(new_id)["recent_messages"])
