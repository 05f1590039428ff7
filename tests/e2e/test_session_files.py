"""The session files a user has on disk over weeks: pointers of terminals long gone,
sessions this version cannot read, copies kept aside whose session was deleted."""

from __future__ import annotations

import json
import os
import time

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


def test_a_living_tabs_pointer_stays_though_the_clock_was_stepped_since_it_was_written(
    env: Env,
) -> None:
    """H106's find: start times are read against the boot time each process computes from
    the wall clock, so after a clock step a living tab's start time no longer agrees
    with its pointer's. It is then listed as orphaned; its pointer must not be removed
    (only a pid with no process, or one started after the pointer was written, is gone)."""
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    stepped_start = (process_start_time(tab.pid) or 0.0) + 5.0  # read after a 5 s step
    stepped = pointer(env, tab.pid, stepped_start, env.session_ids()[0])
    written = json.loads((env.project / stepped).read_text())
    written["updated_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (env.project / stepped).write_text(json.dumps(written))
    pruned = env.run("sessions", "prune")
    assert pruned.returncode == 0, pruned.stderr
    assert pointers(env) == [stepped]
    assert env.run("--new", input="hi\n", terminal=env.terminal()).returncode == 0
    assert stepped in pointers(env), "another tab's start leaves it too"


def test_prune_names_one_pointer_of_a_terminal_that_is_gone_in_the_singular(env: Env) -> None:
    """The line said "1 pointer of terminal that are gone"; then (H127) "1 pointer ... (each
    names the session ...)", with --dry-run too."""
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    (gone,) = closed_tabs(env, 1)
    dry = env.run("sessions", "prune", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Would remove 1 pointer of a terminal that is gone (it names the session" in dry.stdout
    pruned = env.run("sessions", "prune")
    assert pruned.returncode == 0, pruned.stderr
    assert "Removed 1 pointer of a terminal that is gone (it names the session" in pruned.stdout
    assert f"  {gone}  " in pruned.stdout


def test_the_pointer_of_an_identity_with_no_process_is_kept(env: Env) -> None:
    """A script that sets AGENT_ASSIST_TERMINAL_PID to a number no process has finds its
    session again at its next run: its pointer records no start time, and neither
    another tab's start nor prune removes it (the interleavings campaign's clients are
    such identities, and its serial model found their sessions gone)."""
    scripted = env.terminal()
    scripted.close()  # its pid has no process now, as a made-up identity's
    assert env.run("--new", input="hello\n", terminal=scripted).returncode == 0
    mine = f"active_{scripted.pid}.json"
    assert json.loads((env.project / mine).read_text())["pid_start_time"] is None
    assert env.run("--new", input="hi\n", terminal=env.terminal()).returncode == 0
    assert env.run("sessions", "prune").returncode == 0
    assert mine in pointers(env)


def kept_copy(env: Env, session_id: str) -> str:
    """``<id>.json.uncompacted-<time>``, as a resume keeps it aside: a hard link."""
    name = f"{session_id}.json.uncompacted-20260101T000000Z"
    os.link(env.project / f"{session_id}.json", env.project / name)
    return name


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_prune_removes_and_names_a_kept_copy_whose_session_file_was_deleted_by_hand(
    env: Env, supervisor: str
) -> None:
    for _ in range(3):  # their tabs stay open: idle, never pruned
        assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    deleted, corrupt, kept = env.session_ids()
    leftover, of_corrupt, of_kept = (kept_copy(env, s) for s in (deleted, corrupt, kept))
    (env.project / f"{deleted}.json").unlink()  # by hand
    (env.project / f"{corrupt}.json").rename(
        env.project / f"{corrupt}.json.corrupt-20260102T000000Z"
    )
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    young = env.run("sessions", "prune", "--older-than", "1")
    assert young.returncode == 0, young.stderr
    assert leftover not in young.stdout, "its session file went less than a day ago"
    dry = env.run("sessions", "prune", "--older-than", "0", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Would remove 1 copy of session files a resume kept aside" in dry.stdout
    assert f"  {leftover}  " in dry.stdout
    assert (env.project / leftover).exists()
    pruned = env.run("sessions", "prune", "--older-than", "0")
    assert pruned.returncode == 0, pruned.stderr
    assert f"  {leftover}  " in pruned.stdout
    assert not (env.project / leftover).exists()
    assert (env.project / of_corrupt).exists(), "all that may be readable of that session"
    assert (env.project / of_kept).exists(), "its session is still there (idle)"


def messages_replaced(env: Env, session_id: str, message: dict[str, object]) -> None:
    """The session's first message replaced by hand (its header stays valid)."""
    path = env.settled(session_id)
    data = json.loads(path.read_text())
    data["recent_messages"][0] = message
    path.write_text(json.dumps(data))


NEWER_MESSAGE: dict[str, object] = {
    "kind": "request",
    "parts": [{"part_kind": "user-prompt-v2", "content": "x"}],
}
"""A message of a newer pydantic-ai: a part kind this version does not know."""
DAMAGED_MESSAGE: dict[str, object] = {
    "kind": "request",
    "parts": [{"part_kind": "user-prompt", "content": "x", "timestamp": "noon"}],
}
"""A message of known kinds, damaged inside: only validating it tells."""


def orphaned_session(env: Env) -> str:
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    tab.close()
    (session_id,) = env.session_ids()
    return session_id


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_a_session_of_messages_this_version_cannot_read_is_listed_with_no_turn_count(
    env: Env, supervisor: str
) -> None:
    session_id = orphaned_session(env)
    messages_replaced(env, session_id, NEWER_MESSAGE)
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    (row,) = env.sessions_json()
    assert row["turns"] is None, "not 0: it cannot know"
    assert row["note"] == (
        "messages this agent-assist cannot read: message 1 has a part of kind 'user-prompt-v2'"
    )
    table = env.run("sessions")
    assert f"{session_id}  orphaned  -         " in table.stdout
    assert "holds messages this agent-assist cannot read" in table.stderr


def test_a_session_of_messages_this_version_cannot_read_is_not_offered(env: Env) -> None:
    session_id = orphaned_session(env)
    messages_replaced(env, session_id, NEWER_MESSAGE)
    started = env.run(input="hello again\n", terminal=env.terminal())
    assert started.returncode == 0, started.stderr
    assert "Resume previous session?" not in started.stderr
    assert 'You said: "hello again"' in started.stdout
    assert len(env.session_ids()) == 2, "a new session; that one stays, untouched"


def test_a_chosen_session_that_cannot_be_opened_asks_before_a_new_one_starts(env: Env) -> None:
    session_id = orphaned_session(env)
    messages_replaced(env, session_id, DAMAGED_MESSAGE)
    refused = env.run(input="y\nn\n", terminal=env.terminal())
    assert "Resume previous session? [Y/n]" in refused.stderr
    assert f"error: session file {session_id}.json holds messages this agent-assist" in (
        refused.stderr
    )
    assert "Start a new session instead? [Y/n]" in refused.stderr
    assert refused.returncode == 1
    assert env.session_ids() == [session_id], "no session was started"
    accepted = env.run(input="y\ny\nhello again\n", terminal=env.terminal())
    assert accepted.returncode == 0, accepted.stderr
    assert 'You said: "hello again"' in accepted.stdout
    assert len(env.session_ids()) == 2


def test_sessions_show_of_messages_this_version_cannot_read_says_so_and_counts_no_turn(
    env: Env,
) -> None:
    session_id = orphaned_session(env)
    messages_replaced(env, session_id, NEWER_MESSAGE)
    shown = env.run("sessions", "show", session_id)
    assert shown.returncode == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "Turns        -" in lines, "not 0: it cannot know"
    assert (
        "Note         messages this agent-assist cannot read: message 1 has a part of kind "
        "'user-prompt-v2'"
    ) in lines


def last_active_in_2099(env: Env) -> str:
    """An orphaned session whose ``updated_at`` says 2099 (a clock set wrong, a hand edit),
    its file last written an hour ago; its id."""
    skewed = orphaned_session(env)
    path = env.settled(skewed)
    data = json.loads(path.read_text())
    data["updated_at"] = "2099-01-01T00:00:00Z"
    path.write_text(json.dumps(data))
    an_hour_ago = time.time() - 3600
    os.utime(path, (an_hour_ago, an_hour_ago))
    return skewed


def test_a_session_last_active_in_the_future_is_ordered_by_when_its_file_was_written(
    env: Env,
) -> None:
    """A clock set wrong, or a hand edit: left as it was, it was offered before every newer
    session at each start until resumed, and never pruned."""
    skewed = last_active_in_2099(env)
    tab = env.terminal()
    assert env.run("--new", input="a newer one\n", terminal=tab).returncode == 0
    tab.close()
    (newer,) = set(env.session_ids()) - {skewed}
    rows = {row["session_id"]: row for row in env.sessions_json()}
    assert rows[skewed]["updated_at"] < rows[newer]["updated_at"] < "2099"
    started = env.run(input="y\n", terminal=env.terminal())
    when = rows[skewed]["last_active"][5:-4]  # the offer's other lines drop the year and UTC
    assert f"2) {skewed} · 1 turn · {when} · hello" in started.stderr, "not the first offer"
    pruned = env.run("sessions", "prune", "--older-than", "0", "--dry-run")
    assert f"  {skewed}  " in pruned.stdout


def test_the_offer_of_a_session_last_active_in_the_future_tells_when_its_file_was_written(
    env: Env,
) -> None:
    """H113: the listing no longer believed a time in the future, but the offer said
    `last active: 2099-01-01 00:00 UTC`."""
    last_active_in_2099(env)
    (row,) = env.sessions_json()
    started = env.run(input="n\n", terminal=env.terminal())
    assert f"Previous session found (last active: {row['last_active']})" in started.stderr
    assert "2099" not in started.stderr


def test_a_chosen_session_whose_file_went_corrupt_since_the_offer_is_told_as_an_error(
    env: Env,
) -> None:
    """H132: the open's refusal came as the problem's own ``warning:`` line (the file was
    moved aside, a warning where the run goes on), though it failed the open: the one
    line told before ``Start a new session instead?`` is an ``error:`` line (README)."""
    session_id = orphaned_session(env)
    client = env.spawn(terminal=env.terminal())
    client.expect("Resume previous session? [Y/n]", stderr=True)
    (env.project / f"{session_id}.json").write_text("{not json")
    client.send("y")
    refused = client.expect(f"session file {session_id}.json is corrupt", stderr=True)
    assert refused.startswith(f"error: session file {session_id}.json is corrupt; moved aside")
    client.expect("Start a new session instead? [Y/n]", stderr=True)
    client.send("n")
    client.close_stdin()
    assert client.wait() == 1
