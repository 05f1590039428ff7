"""``sessions show`` reads the session's directory once: it ran a whole listing first (to
find a new live session with no file yet), a second scan of the directory on every show,
and threw that listing's warnings away. The listing is asked only when there is no file."""

from __future__ import annotations

import os
from typing import Any

import pytest
from click.testing import CliRunner

from cli.main import main
from session.models import utc_now
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


def test_sessions_show_of_a_session_over_the_supervisors_frame_cap_is_shown(env: Env) -> None:
    """H182: the supervisor sent the whole session, messages and all, for ``show`` to print
    their count: a 66 MiB session (a few turns that read large files) took it 4 s of CPU,
    the client gave up waiting (`does not answer within 10 s`), and then the answer was
    over its 64 MiB frame cap (`it was not sent`). It sends what is shown."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

    from session.history import dump_messages
    from session.manager import encode_state
    from session.models import SessionState

    said = dump_messages(
        [ModelRequest(parts=[UserPromptPart("read the logs")]), ModelResponse(parts=[TextPart("")])]
    )
    said[1]["parts"][0]["content"] = "the routing table, one queue a line\n" * (66 << 15)
    state = SessionState.new(utc_now(), "0123456789ab").model_copy(
        update={"summary": "Reading the logs", "recent_messages": tuple(said)}
    )
    env.project.mkdir(parents=True)
    (env.project / "0123456789ab.json").write_bytes(encode_state(state))
    assert env.run("supervisor", "start").returncode == 0

    shown = env.run("sessions", "show", "0123456789ab")

    assert shown.returncode == 0, shown.stderr
    assert "Messages     2 (recent tail)" in shown.stdout
    assert "Reading the logs" in shown.stdout
