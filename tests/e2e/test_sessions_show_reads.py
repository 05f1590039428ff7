"""``sessions show`` reads the session's directory once: it ran a whole listing first (to
find a new live session with no file yet), a second scan of the directory on every show,
and threw that listing's warnings away. The listing is asked only when there is no file."""

from __future__ import annotations

import os
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import main
from tests.e2e.harness import Env, wait_for


def test_sessions_show_without_a_supervisor_reads_the_sessions_directory_as_a_listing_does(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    (session_id,) = env.session_ids()
    assert env.run("supervisor", "stop").returncode == 0
    for name, value in env.environ().items():
        monkeypatch.setenv(name, value)
    listed: list[str] = []
    listdir = os.listdir

    def counted(path: Any = ".") -> list[Any]:
        listed.append(os.fsdecode(path))
        return listdir(path)

    monkeypatch.setattr(os, "listdir", counted)  # how the session core reads a directory
    project = os.fsdecode(env.project)
    workspace = ["-w", str(env.workspace)]

    def reads_of_the_project(*args: str) -> int:
        listed.clear()
        result = CliRunner().invoke(main, [*args, *workspace])
        assert result.exit_code == 0, result.output
        assert session_id in result.stdout
        return listed.count(project)

    one_scan = reads_of_the_project("sessions")
    assert one_scan > 0
    assert reads_of_the_project("sessions", "show", session_id) == one_scan


def test_sessions_show_of_a_new_live_session_still_says_it_is_new(env: Env) -> None:
    tab = env.terminal()
    chat = env.spawn("--new", terminal=tab)  # live, no turn: no file yet
    rows = wait_for(lambda: env.sessions_json(), what="the live session listed")
    (session_id,) = [row["session_id"] for row in rows]
    shown = env.run("sessions", "show", session_id)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.startswith(f"Session {session_id} is new: live in terminal"), shown
    chat.close_stdin()
    assert chat.wait() == 0
