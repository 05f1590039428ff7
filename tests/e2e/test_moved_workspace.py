"""A workspace moved or renamed is another project (its name hashes the path): its
sessions stay on disk, and the listing and ``--resume`` say where they are."""

from __future__ import annotations

import os
from pathlib import Path

from tests.e2e.harness import Env


def _one_session_then_moved(env: Env) -> tuple[str, str]:
    """A session of one turn in ``env.workspace``, which is then moved to ``moved/``:
    (the session's id, the workspace's old path)."""
    result = env.run("--new", input="design a triage agent\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    old = str(env.workspace)
    env.workspace.rename(env.base / "moved")
    env.workspace = env.base / "moved"
    return session_id, old


def test_the_listing_of_a_moved_workspace_tells_of_the_sessions_other_projects_hold(
    env: Env,
) -> None:
    """A helper's find (H78): in a moved workspace `sessions` said `No sessions.` and a
    chat offered nothing, as if its sessions were gone; they are another project's."""
    session_id, _ = _one_session_then_moved(env)
    result = env.run("sessions")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == (
        "No sessions in this project; other projects hold 1 session "
        "(agent-assist sessions --all lists them)."
    )
    assert session_id in env.run("sessions", "--all").stdout


def test_resume_from_a_moved_workspace_names_the_workspace_the_session_came_from(
    env: Env,
) -> None:
    """H78: `--resume ID` named the project (`ws_3db4f53a`), not the path to run from,
    which the user of a moved workspace could no longer tell."""
    session_id, old = _one_session_then_moved(env)
    result = env.run("--resume", session_id, input="", terminal=env.terminal())
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert f", of the workspace {old}, which is not there any more" in line, line
    assert "create that directory and pass it as --workspace DIR" in line


def test_a_session_of_a_workspace_put_back_where_it_was_resumes(env: Env) -> None:
    session_id, old = _one_session_then_moved(env)
    env.workspace.rename(old)
    result = env.run("--resume", session_id, input="go on\n", cwd=Path(old))
    assert result.returncode == 0, result.stderr
    assert "go on" in result.stdout


def test_resume_from_another_existing_workspace_names_it(env: Env) -> None:
    result = env.run("--new", input="in the first workspace\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    other = env.base / "other"
    other.mkdir()
    result = env.run("--resume", session_id, input="", cwd=other, terminal=env.terminal())
    assert result.returncode == 1
    assert f", of the workspace {env.workspace}: run from there or pass --workspace DIR" in (
        result.stderr
    )


def _record_made_a_fifo(env: Env) -> Path:
    """A session in ``env.workspace``, the supervisor stopped (its next life reads the
    record again), and the project's workspace record replaced by a named pipe: the
    record's path."""
    result = env.run("--new", input="design a triage agent\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert env.run("supervisor", "stop").returncode == 0
    record = env.project.parent / "workspace"
    record.unlink()
    os.mkfifo(record)
    return record


def test_a_workspace_record_that_is_a_named_pipe_never_holds_up_a_save(env: Env) -> None:
    """A helper's attack (H80): the record was opened as any file, and opening a named
    pipe waits for a writer; the save that records the workspace waited for ever, and the
    whole supervisor with it (every terminal, even ``supervisor stop``)."""
    record = _record_made_a_fifo(env)
    result = env.run("--new", input="go on\n", terminal=env.terminal(), timeout=30)
    assert result.returncode == 0, result.stderr
    assert len(env.session_ids()) == 2, "the second session is saved"
    assert record.read_text() == f"{env.workspace}\n", "the pipe is replaced by the record"


def test_a_workspace_record_that_is_a_named_pipe_never_holds_up_resume_s_error(
    env: Env,
) -> None:
    """The same record read by ``--resume ID`` of another project's session, to name the
    workspace it came from: the error is told, without the workspace's path."""
    _record_made_a_fifo(env)
    (session_id,) = env.session_ids()
    other = env.base / "other"
    other.mkdir()
    result = env.run("--resume", session_id, input="", cwd=other, timeout=30)
    assert result.returncode == 1
    assert "run from that workspace or pass --workspace DIR" in result.stderr
