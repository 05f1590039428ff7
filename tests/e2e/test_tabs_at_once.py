"""Tabs started at once with ``--yes`` over one orphaned session: exactly one resumes
it; every other is told it is live in another terminal and goes on in a new session,
with no error and no turn lost."""

from __future__ import annotations

from tests.e2e.harness import Env

TAKEN = "Starting a new session instead (--yes)."


def orphaned_session(env: Env) -> str:
    """A session of one turn whose tab is closed."""
    tab = env.terminal()
    assert env.run("--new", input="the first plan\n", terminal=tab).returncode == 0
    tab.close()
    (orphan,) = env.session_ids()
    return orphan


def test_yes_in_a_new_tab_says_the_session_it_would_resume_is_live_elsewhere(
    env: Env,
) -> None:
    """The tab that lists the sessions after another took the orphan: it was not offered,
    and went on in a new session without a word, though --yes asked to resume."""
    orphan = orphaned_session(env)
    first = env.spawn("--yes", terminal=env.terminal())
    first.send("more of the first plan")
    first.expect(f"[resume context: session {orphan}]")
    second = env.run("--yes", input="a second tab\n", terminal=env.terminal())
    assert second.returncode == 0, second.stderr
    assert f"note: session {orphan} is live in another terminal" in second.stderr
    assert TAKEN in second.stderr
    first.close_stdin()
    assert first.wait() == 0


def test_three_tabs_at_once_one_resumes_the_orphan_and_the_others_are_told(env: Env) -> None:
    orphan = orphaned_session(env)
    tabs = [env.spawn("--yes", terminal=env.terminal()) for _ in range(3)]
    for number, tab in enumerate(tabs):
        tab.send(f"words of tab {number}")
    for tab in tabs:
        tab.close_stdin()
    assert [tab.wait() for tab in tabs] == [0, 0, 0]
    told = [any(TAKEN in line for line in tab.drain_stderr()) for tab in tabs]
    assert sorted(told) == [False, True, True], [tab.stderr_lines for tab in tabs]
    ids = env.session_ids()
    assert len(ids) == 3 and orphan in ids
    saved = {i: str(env.session(i)["recent_messages"]) for i in ids}
    assert "the first plan" in saved[orphan]
    for number in range(3):
        assert sum(f"words of tab {number}" in text for text in saved.values()) == 1


def test_yes_beside_a_tab_that_left_its_session_says_it_is_kept_for_that_tab(env: Env) -> None:
    """H159/H167: its chat ended, the tab (its shell alive) still points to its session:
    idle, as the listing says, but nothing has it open; the note said it was `idle in
    another terminal`, as if a chat there held it. It says whose it is, and how to take
    it; that way works."""
    left = env.terminal()
    assert env.run("--new", input="the first plan\n", terminal=left).returncode == 0
    (kept,) = env.session_ids()
    here = env.terminal()
    result = env.run("--yes", input="a second tab\n", terminal=here)
    assert result.returncode == 0, result.stderr
    assert (
        f"note: session {kept} is idle, kept for another terminal (pid {left.pid}); "
        f"agent-assist --resume {kept} opens it here"
    ) in result.stderr.splitlines()
    assert TAKEN in result.stderr
    taken = env.run("--resume", kept, input="more of the plan\n", terminal=here)
    assert taken.returncode == 0, taken.stderr
    assert f"[resume context: session {kept}]" in taken.stdout
