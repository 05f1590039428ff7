"""A supervisor of the version before this one, still running after an upgrade, and the new
command line talking to it: what it does not know is neither lost nor misread."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from tests.e2e.harness import Env, Terminal
from tests.e2e.test_unreadable_store import BREAKAGES, idle_session

PREVIOUS = "01b2e66d817a4ae8148d6515dbb139a71bf19e03"
"""The last commit of session 37: the version before H175's ``sessions rm --force``."""
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def previous(env: Env) -> Path:
    """The previous version's source, from this repository's history (skipped without it)."""
    archived = subprocess.run(
        ["git", "-C", str(REPO), "archive", PREVIOUS, "cli", "session", "actors", "supervisor"],
        capture_output=True,
        check=False,
    )
    if archived.returncode != 0:
        pytest.skip(f"no commit {PREVIOUS[:7]} in this checkout's history")
    source = env.base / "previous"
    with tarfile.open(fileobj=io.BytesIO(archived.stdout)) as tar:
        tar.extractall(source, filter="data")
    return source


def run_previous(
    env: Env, source: Path, *args: str, input: str = "", terminal: Terminal | None = None
) -> subprocess.CompletedProcess[str]:
    """``agent-assist ARGS`` of the previous version, in the workspace."""
    return subprocess.run(
        [sys.executable, "-m", "cli", *args],
        input=input,
        env=env.environ(terminal, PYTHONPATH=str(source)),
        cwd=env.workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def start_previous(env: Env, source: Path) -> None:
    started = run_previous(env, source, "supervisor", "start")
    assert started.returncode == 0, started.stderr


def test_rm_keeps_a_session_a_running_tab_may_hold_with_a_previous_supervisor(
    env: Env, previous: Path
) -> None:
    """H178's find: the previous supervisor knows no doubt of an unreadable pointer, and
    removed the session a running tab may hold (the new refusal was skipped without a
    word). It is checked from the files before the request, as a supervisor would."""
    session_id, tab = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    start_previous(env, previous)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    refused = env.run("sessions", "rm", session_id)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"error: session {session_id} not removed: pointer active_{tab.pid}.json could not "
        f"be read and terminal {tab.pid} still runs, so it may be its session; "
        f"agent-assist sessions rm --force {session_id} removes it anyway"
    ], refused.stderr
    assert env.session_ids() == [session_id]


def test_rm_force_removes_the_session_with_a_previous_supervisor(
    env: Env, previous: Path
) -> None:
    """H178's find: the previous supervisor refused the frame's ``force`` key:
    ``error: invalid force: Extra inputs are not permitted``, exit 1, nothing removed."""
    session_id, tab = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    start_previous(env, previous)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    removed = env.run("sessions", "rm", "--force", session_id)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"Removed session {session_id}.\n"
    assert env.session_ids() == []


def test_a_previous_terminal_converses_with_this_supervisor(env: Env, previous: Path) -> None:
    """Additive: what this supervisor's welcome and status say of it, the version before
    ignores; it converses, lists and stops it as it did its own."""
    assert env.run("supervisor", "start").returncode == 0
    chat = run_previous(env, previous, "--new", input="hello\n")
    assert chat.returncode == 0, chat.stderr
    assert 'You said: "hello"' in chat.stdout
    (session_id,) = env.session_ids()
    listed = run_previous(env, previous, "sessions", "--json")
    assert [row["session_id"] for row in json.loads(listed.stdout)] == [session_id]
    resumed = run_previous(env, previous, "--yes", input="again\n")
    assert resumed.returncode == 0, resumed.stderr
    assert 'You said: "again". (turn 2 of this conversation' in resumed.stdout
    stopped = run_previous(env, previous, "supervisor", "stop")
    assert stopped.returncode == 0, stopped.stderr
