"""A restore cut short by ``kill -9`` of the supervisor is told when the session is
resumed: the files it did not get to, and the checkpoint that undoes it."""

from __future__ import annotations

from tests.e2e.harness import Env, wait_for


def test_a_resume_after_a_restore_cut_short_names_the_checkpoint_that_undoes_it(
    env: Env,
) -> None:
    """H108: the session recorded the undo checkpoint's number, but the resumed session
    did not tell the user that it undoes the partial restore."""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(400):
        (templates / f"t{n:03}.md").write_bytes(b"first %d\n" % n * 2000)
    term = env.terminal()
    client = env.spawn(terminal=term)
    client.send("/save")
    client.expect("saved as checkpoint 1.", stderr=True)
    client.send("hello")
    client.expect("You said", timeout=30)
    for n in range(400):
        (templates / f"t{n:03}.md").write_bytes(b"second %d\n" % n * 2000)
    client.send("/checkpoint 1")
    client.expect("Restore files too?", stderr=True)
    client.send("y")
    first_back = lambda: any(  # noqa: E731
        p.read_bytes().startswith(b"first") for p in templates.iterdir() if p.suffix == ".md"
    )
    wait_for(first_back, what="a file written back")
    env.kill_supervisor_and_heir()
    client.kill9()
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
