"""Listings, pickers and cleanups over a store part of which cannot be read: what could
not be read is named, and nothing is judged orphaned, absent or deletable from it."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path

import pytest

from session.models import is_session_id
from tests.e2e.harness import Env, Terminal


def _replaced(make: Callable[[Path], None]) -> Callable[[Path], None]:
    def replace(path: Path) -> None:
        path.unlink()
        make(path)

    return replace


BREAKAGES: dict[str, Callable[[Path], object]] = {
    "truncated": lambda path: path.write_bytes(path.read_bytes()[:20]),
    "not-utf8": lambda path: path.write_bytes(b'{"session_id": "\xff\xfe"}'),
    "directory": _replaced(Path.mkdir),
    "fifo": _replaced(os.mkfifo),
}


def idle_session(env: Env, cwd: Path | None = None) -> tuple[str, Terminal]:
    """A session saved by a tab whose shell still runs (idle), and that tab."""
    tab = env.terminal()
    result = env.run("--new", input="hello\n", terminal=tab, cwd=cwd)
    assert result.returncode == 0, result.stderr
    project = env.project if cwd is None else _project(env, cwd)
    (session_id,) = [p.stem for p in project.glob("*.json") if is_session_id(p.stem)]
    return session_id, tab


def _project(env: Env, workspace: Path) -> Path:
    (found,) = [p for p in (env.home / "projects").iterdir() if p.name.startswith(workspace.name)]
    return found / "sessions"


@pytest.mark.parametrize("served", [False, True], ids=["files", "supervisor"])
@pytest.mark.parametrize("breakage", sorted(BREAKAGES))
def test_prune_keeps_the_sessions_an_unreadable_pointer_of_a_running_tab_may_name(
    env: Env, breakage: str, served: bool
) -> None:
    """H165: a pointer that could not be read was skipped, so the session of the living
    tab that wrote it was judged orphaned and pruned."""
    session_id, tab = idle_session(env)
    pointer = env.project / f"active_{tab.pid}.json"
    BREAKAGES[breakage](pointer)
    if not served:
        assert env.run("supervisor", "stop").returncode == 0
    result = env.run("sessions", "prune", "--older-than", "0")
    assert env.session_ids() == [session_id], result.stdout
    assert (
        f"warning: no orphaned session of project {env.project.parent.name} pruned: "
        f"pointer active_{tab.pid}.json could not be read and terminal {tab.pid} still "
        "runs, so any of them may be its session"
    ) in result.stderr.splitlines()
    assert os.path.lexists(pointer), "the pointer stays for the tab to replace"


@pytest.mark.parametrize("served", [False, True], ids=["files", "supervisor"])
def test_rm_refuses_a_session_an_unreadable_pointer_of_a_running_tab_may_name(
    env: Env, served: bool
) -> None:
    """H175: ``sessions rm ID`` deleted it, though prune keeps it (H168): the tab whose
    pointer could not be read may hold it. Refused in one line that names the pointer and
    how to remove it anyway; nothing is deleted."""
    session_id, tab = idle_session(env)
    pointer = env.project / f"active_{tab.pid}.json"
    BREAKAGES["truncated"](pointer)
    broken = pointer.read_bytes()
    if not served:
        assert env.run("supervisor", "stop").returncode == 0
    refused = env.run("sessions", "rm", session_id)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"error: session {session_id} not removed: pointer active_{tab.pid}.json could not "
        f"be read and terminal {tab.pid} still runs, so it may be its session; "
        f"agent-assist sessions rm --force {session_id} removes it anyway"
    ], refused.stderr
    assert env.session_ids() == [session_id]
    assert pointer.read_bytes() == broken, "the pointer stays for the tab to replace"


@pytest.mark.parametrize("served", [False, True], ids=["files", "supervisor"])
def test_rm_force_removes_a_session_an_unreadable_pointer_may_name(
    env: Env, served: bool
) -> None:
    session_id, tab = idle_session(env)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    if not served:
        assert env.run("supervisor", "stop").returncode == 0
    removed = env.run("sessions", "rm", "--force", session_id)
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"Removed session {session_id}.\n"
    assert env.session_ids() == []


def test_rm_force_never_removes_a_live_session(env: Env) -> None:
    client = env.spawn(terminal=env.terminal())
    client.send("busy")
    client.expect("busy")
    (session_id,) = env.session_ids()
    result = env.run("sessions", "rm", "--force", session_id)
    assert result.returncode == 1
    assert f"session {session_id} is live in another terminal" in result.stderr
    assert env.session_ids() == [session_id]


def test_listing_names_an_unreadable_pointer_of_a_running_tab(env: Env) -> None:
    _, tab = idle_session(env)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    result = env.run("sessions")
    assert (
        f"warning: ignoring invalid session pointer active_{tab.pid}.json (not JSON); "
        f"terminal {tab.pid} still runs: left in place, its session unknown"
    ) in result.stderr.splitlines()


def test_prune_goes_on_past_an_unreadable_pointer_of_a_terminal_that_is_gone(env: Env) -> None:
    _, tab = idle_session(env)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    tab.close()
    result = env.run("sessions", "prune", "--older-than", "0")
    assert env.session_ids() == [], result.stderr
    assert "Removed 1 orphaned session" in result.stdout


def test_pointer_read_failing_with_an_io_error_is_named_and_protects(env: Env) -> None:
    """A pointer whose read fails (EIO, injected) ended the listing with an OS error."""
    session_id, tab = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    env.faults().write_text(f"read EIO active_{tab.pid}.json\n")
    listed = env.run("sessions")
    assert (
        f"warning: ignoring invalid session pointer active_{tab.pid}.json (Input/output error); "
        f"terminal {tab.pid} still runs: left in place, its session unknown"
    ) in listed.stderr.splitlines(), listed.stderr
    assert session_id in listed.stdout
    env.run("sessions", "prune", "--older-than", "0")
    assert env.session_ids() == [session_id]


def test_a_new_tab_is_told_the_offer_may_be_held_by_a_tab_whose_pointer_is_unreadable(
    env: Env,
) -> None:
    _, tab = idle_session(env)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    result = env.run(input="n\n", terminal=env.terminal())
    assert (
        f"note: the session offered may be the one terminal {tab.pid} holds: its pointer "
        f"active_{tab.pid}.json could not be read"
    ) in result.stderr.splitlines(), result.stderr


def test_a_tab_whose_own_pointer_is_unreadable_is_told_it_is_replaced(env: Env) -> None:
    """The tab itself was told `terminal PID still runs: left in place, its session
    unknown` of its own pointer, which its start then wrote anew."""
    session_id, tab = idle_session(env)
    pointer = env.project / f"active_{tab.pid}.json"
    BREAKAGES["truncated"](pointer)
    result = env.run("--yes", input="", terminal=tab)
    assert result.returncode == 0, result.stderr
    assert (
        f"warning: ignoring invalid session pointer {pointer.name} (not JSON); "
        "it is this tab's, replaced when this tab opens a session"
    ) in result.stderr.splitlines(), result.stderr
    assert "still runs" not in result.stderr, result.stderr
    assert json.loads(pointer.read_text())["session_id"] == session_id


@pytest.mark.parametrize("how", [("--new",), ("--resume", "ID")])
def test_a_tab_that_is_offered_nothing_is_not_told_about_the_offer(
    env: Env, how: tuple[str, ...]
) -> None:
    """The note about the session offered was said to a tab started with --new or
    --resume ID, to which nothing was offered."""
    session_id, tab = idle_session(env)
    BREAKAGES["truncated"](env.project / f"active_{tab.pid}.json")
    args = [session_id if arg == "ID" else arg for arg in how]
    result = env.run(*args, input="", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "the session offered" not in result.stderr, result.stderr


@pytest.mark.parametrize("served", [False, True], ids=["files", "supervisor"])
@pytest.mark.parametrize("command", [("sessions", "--all"), ("sessions", "prune", "--all")])
def test_every_project_but_an_unlistable_one_is_listed_and_pruned(
    env: Env, served: bool, command: tuple[str, ...]
) -> None:
    """H165: one sessions directory that could not be listed ended `--all` with one error,
    no other project listed (or pruned)."""
    other = env.base / "other"
    other.mkdir()
    kept, _ = idle_session(env)
    orphan, tab = idle_session(env, cwd=other)
    tab.close()
    assert env.run("supervisor", "stop").returncode == 0
    env.faults().write_text(f"list EIO {env.project.parent.name}\n")
    if served:
        assert env.run("supervisor", "start").returncode == 0
    extra = ("--older-than", "0") if "prune" in command else ()
    result = env.run(*command, *extra)
    assert result.stderr.splitlines() == [
        f"error: cannot read sessions directory {env.project} (Input/output error); "
        "left untouched"
    ]
    assert orphan in result.stdout
    assert result.returncode == 1
    if "prune" in command:
        assert not list(_project(env, other).glob(f"{orphan}.json"))
        assert env.session_ids() == [kept]


@pytest.mark.parametrize("served", [False, True], ids=["files", "supervisor"])
@pytest.mark.parametrize(
    "command",
    [("sessions", "--all"), ("sessions", "--all", "--json"), ("sessions", "prune", "--all")],
)
def test_a_listing_that_could_not_read_a_project_fails_whatever_its_path_spells(
    env: Env, served: bool, command: tuple[str, ...]
) -> None:
    """H175: whether a listing was whole was judged from its lines' text: an ``error:`` line
    saying "newer than this agent-assist supports" was taken for a newer version's file,
    so a project whose workspace is named so, unreadable, left the exit status 0."""
    named = env.base / "newer than this agent-assist supports"
    named.mkdir()
    idle_session(env, cwd=named)
    project = _project(env, named)
    assert env.run("supervisor", "stop").returncode == 0
    env.faults().write_text(f"list EIO {project.parent.name}\n")
    if served:
        assert env.run("supervisor", "start").returncode == 0
    result = env.run(*command)
    assert result.stderr.splitlines() == [
        f"error: cannot read sessions directory {project} (Input/output error); left untouched"
    ]
    assert result.returncode == 1


@pytest.mark.parametrize("served", [False, True], ids=["files", "supervisor"])
def test_resume_over_an_unreadable_sessions_directory_does_not_say_there_is_no_session(
    env: Env, served: bool
) -> None:
    """H165: `--resume ID` printed the error line and then `no session ID in this project`,
    though the session may well be in what could not be read."""
    session_id, _ = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    env.project.rename(env.project.with_name("kept"))
    env.project.write_text("not a directory\n")  # as a permission denied is for a user
    if served:
        assert env.run("supervisor", "start").returncode == 0
    result = env.run("--resume", session_id, input="hi\n", terminal=env.terminal())
    assert result.returncode == 1
    assert f"no session {session_id}" not in result.stderr, result.stderr
    assert (
        f"error: cannot tell whether session {session_id} is in this project: its sessions "
        f"directory {env.project} could not be read (not a directory)"
    ) in result.stderr.splitlines(), result.stderr


@pytest.mark.parametrize("command", ["show", "rm"])
def test_a_short_id_over_an_unreadable_project_does_not_say_there_is_none(
    env: Env, command: str
) -> None:
    session_id, _ = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    env.faults().write_text(f"list EIO {env.project.parent.name}\n")
    result = env.run("sessions", command, session_id[:6])
    assert result.returncode == 1
    assert result.stderr.splitlines()[-1] == (
        f"error: no session id that could be read begins with {session_id[:6]}; the error "
        "above says what could not be read"
    ), result.stderr
    assert env.session_ids() == [session_id]


def test_a_tab_whose_sessions_directory_cannot_be_listed_is_not_told_its_session_is_gone(
    env: Env,
) -> None:
    """The start of a tab whose pointer names a session, over a sessions directory that
    could not be listed, said `this tab's session ID is no longer on disk` under the
    directory's error: it had not looked."""
    session_id, tab = idle_session(env)
    assert env.run("supervisor", "stop").returncode == 0
    env.faults().write_text(f"list EIO {env.project.parent.name}\n")
    result = env.run(input="", terminal=tab)
    assert "no longer on disk" not in result.stderr, result.stderr
    assert (
        f"note: this tab's session {session_id} is not offered: its sessions directory "
        "could not be read (the error above)"
    ) in result.stderr.splitlines(), result.stderr
    assert env.session_ids() == [session_id]


def test_a_reattach_to_a_session_whose_read_fails_goes_on_in_a_new_one_saying_why(
    env: Env,
) -> None:
    """H168 left: after a supervisor crash, the new supervisor's read of the chat's session
    failed with EIO, and the chat ended with a raw `error: Input/output error (PATH)`."""
    env.extra["AGENT_ASSIST_HEIR"] = "0"
    faults = env.faults()
    session_id, tab = idle_session(env)
    client = env.spawn("--yes", terminal=tab)
    client.send("before the crash")
    client.expect("before the crash")
    faults.write_text(f"read EIO {session_id}.json\n")
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    client.send("after the crash")
    client.expect("after the crash")
    client.close_stdin()
    assert client.wait() == 0
    client.read_to_the_end()
    (new_id,) = [i for i in env.session_ids() if i != session_id]
    assert (
        f"warning: the supervisor went away; started a new one and session {session_id} "
        f"could not be resumed (refusing session file {session_id}.json (Input/output "
        f"error); left untouched), continuing in new session {new_id}"
    ) in client.drain_stderr()
    faults.unlink()
    assert env.session(session_id)["session_id"] == session_id, "left as it was"


@pytest.mark.parametrize("served", [False, True], ids=["files", "supervisor"])
def test_the_listing_in_the_tab_whose_own_pointer_is_unreadable_says_it_is_this_tabs(
    env: Env, served: bool
) -> None:
    """A helper's report: ``agent-assist sessions`` run in that very tab named the user's
    own shell as ``terminal PID still runs`` (the listing knew no terminal)."""
    _, tab = idle_session(env)
    pointer = env.project / f"active_{tab.pid}.json"
    BREAKAGES["truncated"](pointer)
    if not served:
        assert env.run("supervisor", "stop").returncode == 0
    for args in [(), ("--json",)]:  # the quick path (a supervisor's) and the full one
        result = env.run("sessions", *args, terminal=tab)
        assert result.returncode == 0, result.stderr
        assert (
            f"warning: ignoring invalid session pointer {pointer.name} (not JSON); "
            "it is this tab's, replaced when this tab opens a session"
        ) in result.stderr.splitlines(), result.stderr
        assert "still runs" not in result.stderr, result.stderr
