"""The command line's edges as a new user meets them: over-long messages, closed pipes,
end of input at questions, out-of-range numbers, and what deleting a session leaves."""

from __future__ import annotations

import json
import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.harness import AGENT_ASSIST, Env

LIMIT = 200_000


def pointers(env: Env) -> list[str]:
    return sorted(p.name for p in env.project.glob("active_*.json"))


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_rm_removes_the_pointers_to_the_session(env: Env, supervisor: str) -> None:
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert len(pointers(env)) == 1
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    removed = env.run("sessions", "rm", session_id)
    assert removed.returncode == 0, removed.stderr
    assert env.session_ids() == [] and pointers(env) == []


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_prune_removes_the_pointers_to_what_it_prunes(env: Env, supervisor: str) -> None:
    tab = env.terminal()
    result = env.run("--new", input="hello\n", terminal=tab)
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    tab.close()  # the terminal is gone: the session is orphaned
    path = env.settled(session_id)
    text = path.read_text()
    old = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    data = json.loads(text)
    data["updated_at"] = old
    path.write_text(json.dumps(data))
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    pruned = env.run("sessions", "prune", "--older-than", "30")
    assert "Removed 1 orphaned session(s)" in pruned.stdout, pruned.stderr
    assert env.session_ids() == [] and pointers(env) == []
