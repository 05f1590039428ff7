"""A restore cut short by ``kill -9`` of the supervisor is told when the session is
resumed: the files it did not get to, and the checkpoint that undoes it."""

from __future__ import annotations

from tests.e2e.harness import Env
from tests.e2e.test_checkpoints import restore_cut_short


def test_a_resume_after_a_restore_cut_short_names_the_checkpoint_that_undoes_it(
    env: Env,
) -> None:
    """H108: the session recorded the undo checkpoint's number, but the resumed session
    did not tell the user that it undoes the partial restore."""
    term, templates = restore_cut_short(env)
    left = [p for p in templates.iterdir() if p.read_bytes().startswith(b"second")]
    assert left, "the restore was cut before its end"

    resumed = env.run("--yes", input="", terminal=term)
    assert resumed.returncode == 0, resumed.stderr
    assert "note: the last restore of this session was cut short: templates/t" in resumed.stderr
    assert "before it; /checkpoint 2 undoes the restore" in resumed.stderr


def test_a_resume_after_a_whole_restore_says_nothing_of_one_cut_short(env: Env) -> None:
    notes = env.workspace / "notes.md"
    notes.write_text("one\n")
    term = env.terminal()
    assert env.run("--new", input="read notes.md\n/save\n", terminal=term).returncode == 0
    notes.write_text("two\n")
    restored = env.run("--yes", input="/checkpoint 1\ny\n", terminal=term)
    assert "/checkpoint 2 undoes this" in restored.stderr, restored.stderr
    resumed = env.run("--yes", input="", terminal=term)
    assert "cut short" not in resumed.stderr


def test_a_resume_after_a_restore_of_the_conversation_alone_says_nothing_of_one_cut_short(
    env: Env,
) -> None:
    notes = env.workspace / "notes.md"
    notes.write_text("one\n")
    term = env.terminal()
    assert env.run("--new", input="read notes.md\n/save\n", terminal=term).returncode == 0
    notes.write_text("two\n")
    restored = env.run("--yes", input="/checkpoint 1\nn\n", terminal=term)
    assert "/checkpoint 2 undoes this" in restored.stderr, restored.stderr
    resumed = env.run("--yes", input="", terminal=term)
    assert "cut short" not in resumed.stderr, resumed.stderr
