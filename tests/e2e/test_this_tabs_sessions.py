"""``sessions rm`` and ``sessions prune`` run in a chat's own tab (its terminal identity)
say it is this tab's session or pointer, as the listing does, not that "terminal N still
runs", N being the user's own shell (H190)."""

from __future__ import annotations

import pytest

from tests.e2e.harness import Env


def test_rm_of_the_session_live_in_this_tab_says_it_is_this_tabs(env: Env) -> None:
    terminal = env.terminal()
    chat = env.spawn("--new", terminal=terminal)
    chat.send("hello")
    chat.expect("hello")
    (session_id,) = env.session_ids()
    refused = env.run("sessions", "rm", session_id, terminal=terminal)
    assert refused.returncode == 1
    assert refused.stderr.splitlines() == [
        f"error: session {session_id} is this tab's live session (terminal {terminal.pid}): "
        "end its chat first"
    ]
    other = env.run("sessions", "rm", session_id, terminal=env.terminal())
    assert other.returncode == 1
    assert f"is live in another terminal (pid {terminal.pid})" in other.stderr
    chat.close_stdin()
    assert chat.wait() == 0
    assert env.session_ids() == [session_id]


@pytest.mark.parametrize("supervisor", ["running", "none"])
def test_rm_and_prune_name_this_tabs_unreadable_pointer_as_this_tabs(
    env: Env, supervisor: str
) -> None:
    terminal = env.terminal()
    done = env.run("--new", input="hello\n", terminal=terminal)
    assert done.returncode == 0, done.stderr
    (session_id,) = env.session_ids()
    pointer = env.project / f"active_{terminal.pid}.json"
    pointer.write_text("garbage")
    if supervisor == "none":
        assert env.run("supervisor", "stop").returncode == 0
    refused = env.run("sessions", "rm", session_id, terminal=terminal)
    assert refused.returncode == 1
    assert refused.stderr.splitlines()[-1] == (
        f"error: session {session_id} not removed: this tab's pointer {pointer.name} could "
        f"not be read, so it may be this tab's session; agent-assist sessions rm --force "
        f"{session_id} removes it anyway"
    ), refused.stderr
    for dry in ((), ("--dry-run",)):
        pruned = env.run("sessions", "prune", "--older-than", "0", *dry, terminal=terminal)
        assert pruned.returncode == 0, pruned.stderr
        lines = pruned.stderr.splitlines()
        assert f"terminal {terminal.pid} still runs" not in pruned.stderr, lines
        assert (
            f"warning: ignoring invalid session pointer {pointer.name} (not JSON); it is "
            "this tab's, replaced when this tab opens a session"
        ) in lines, lines
        assert (
            f"warning: no orphaned session of project {env.project.parent.name} pruned: "
            f"this tab's pointer {pointer.name} could not be read, so any of them may be "
            "this tab's session"
        ) in lines, lines
    assert env.session_ids() == [session_id]
    assert pointer.read_text() == "garbage"


def test_a_second_chat_in_the_tab_of_a_live_one_is_told_it_is_this_tabs(env: Env) -> None:
    """The refusal named the tab's own shell as "terminal N", as if another's."""
    terminal = env.terminal()
    chat = env.spawn("--new", terminal=terminal)
    chat.send("hello")
    chat.expect("hello")
    second = env.run("--new", input="hi\n", terminal=terminal)
    assert second.returncode == 1
    assert second.stderr.splitlines()[-1] == (
        f"error: another agent-assist is attached for this tab (terminal {terminal.pid}); "
        "set AGENT_ASSIST_TERMINAL_PID to another number to run a second one"
    ), second.stderr
    chat.close_stdin()
    assert chat.wait() == 0
