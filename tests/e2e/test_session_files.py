"""The session files a user has on disk over weeks: pointers of terminals long gone,
sessions this version cannot read, copies kept aside whose session was deleted."""

from __future__ import annotations

import json

import pytest

from session.processes import process_start_time
from tests.e2e.harness import Env


def pointers(env: Env) -> list[str]:
    return sorted(p.name for p in env.project.glob("active_*.json"))


def pointer(env: Env, pid: int, start_time: float | None, session_id: str) -> str:
    """``active_<pid>.json`` naming ``session_id``, as a tab's start writes it."""
    name = f"active_{pid}.json"
    written = {
        "session_id": session_id,
        "pid": pid,
        "pid_start_time": start_time,
        "updated_at": "2026-01-01T00:00:00Z",
    }
    (env.project / name).write_text(json.dumps(written))
    return name


def closed_tabs(env: Env, count: int) -> list[str]:
    """The pointers of ``count`` tabs that were closed since they used the first session."""
    names = []
    for _ in range(count):
        tab = env.terminal()
        started = process_start_time(tab.pid)
        tab.close()
        names.append(pointer(env, tab.pid, started, env.session_ids()[0]))
    return names


def reused_pid_pointer(env: Env, living: int, session_id: str) -> str:
    """A pointer at the pid of a living process, written by an earlier one that had the
    same pid (another start time): the tab it names is gone."""
    return pointer(env, living, 1.0, session_id)


def test_a_terminal_opening_a_session_removes_the_pointers_of_tabs_that_are_gone(
    env: Env,
) -> None:
    idle_tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=idle_tab).returncode == 0
    idle = f"active_{idle_tab.pid}.json"
    gone = closed_tabs(env, 3)
    stranger = env.terminal()  # a process that got the pid of a closed tab
    reused = reused_pid_pointer(env, stranger.pid, env.session_ids()[0])
    assert set(pointers(env)) == {*gone, reused, idle}
    open_tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=open_tab).returncode == 0
    assert pointers(env) == sorted([idle, f"active_{open_tab.pid}.json"]), (
        "the gone tabs' pointers went; the living tabs' stayed"
    )
    assert len(env.session_ids()) == 2, "every session stays"


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_prune_removes_the_pointers_of_terminals_that_are_gone_and_names_them(
    env: Env, supervisor: str
) -> None:
    open_tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=open_tab).returncode == 0
    mine = f"active_{open_tab.pid}.json"
    gone = closed_tabs(env, 2)
    stranger = env.terminal()  # a process that got the pid of a closed tab
    reused = reused_pid_pointer(env, stranger.pid, env.session_ids()[0])
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    dry = env.run("sessions", "prune", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Would remove 3 pointers of terminals that are gone" in dry.stdout
    for name in (*gone, reused):
        assert f"  {name}  " in dry.stdout
    assert sorted(pointers(env)) == sorted([*gone, reused, mine]), "a dry run removes nothing"
    pruned = env.run("sessions", "prune")
    assert pruned.returncode == 0, pruned.stderr
    assert "Removed 3 pointers of terminals that are gone" in pruned.stdout
    assert pointers(env) == [mine], "a living terminal's pointer is never removed"
    assert len(env.session_ids()) == 1, "the session stays (idle)"

