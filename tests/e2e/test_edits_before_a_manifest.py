"""An edit made just before a manifest is taken (a /save, a turn that writes a file) is
told: the watcher, given that manifest as its new baseline, would find nothing changed."""

from __future__ import annotations

from tests.e2e.harness import Client, Env, wait_for

FILES = 3


def _told(client: Client, path: str, times: int) -> None:
    """Wait until ``path`` was told changed outside ``times`` times in all (the notice can
    come before the command's answer or after it; ``/checkpoint`` gets the rest out)."""
    notice = f"note: {path} changed outside agent-assist"

    def told() -> bool:
        client.send("/checkpoint")
        client.expect("  1 ", stderr=True)
        return client.drain_stderr().count(notice) >= times

    wait_for(told, what=f"the notice of {path}")
    assert client.drain_stderr().count(notice) == times, "once per edit"


def test_an_edit_just_before_a_turn_that_writes_a_file_is_told(env: Env) -> None:
    """H139's find: a template edited just before a turn whose tool wrote another file was
    never told (no notice, no note): the turn's end hashed it and watched that."""
    templates = env.workspace / "templates" / "a"
    templates.mkdir(parents=True)
    for n in range(FILES):
        (templates / f"t{n}.md").write_text(f"first {n}\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect("hello")
    for n in range(FILES):
        (templates / f"t{n}.md").write_text(f"second {n}\n")
        client.send(f"write notes{n}.md: n{n}")
        client.expect(f"wrote notes{n}.md")
        _told(client, f"templates/a/t{n}.md", 1)
        client.send(f"and now {n}?")
        assert f"[changed outside: templates/a/t{n}.md]" in client.expect(f"and now {n}?")
    client.close_stdin()
    assert client.wait() == 0


def test_an_edit_just_before_a_save_is_told(env: Env) -> None:
    """H139's find: a tracked file edited just before /save was taken in by its manifest,
    whose watch then saw nothing: no notice, and the model never told."""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(FILES):
        (templates / f"t{n}.md").write_text(f"first {n}\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect("hello")
    for n in range(FILES):
        (templates / f"t{n}.md").write_text(f"second {n}\n")
        client.send("/save")
        client.expect(f"checkpoint {n + 1}", stderr=True)
        _told(client, f"templates/t{n}.md", 1)
        client.send(f"and now {n}?")
        assert f"[changed outside: templates/t{n}.md]" in client.expect(f"and now {n}?")
    client.close_stdin()
    assert client.wait() == 0


def test_an_edit_just_before_the_exit_is_told_at_the_next_resume(env: Env) -> None:
    """H139's open case: the exit's manifest took in an edit whose event the watcher had
    not settled: no notice, and the next resume offer counted the file unchanged."""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(FILES):
        (templates / f"t{n}.md").write_text(f"first {n}\n")
    term = env.terminal()
    client = env.spawn("--new", terminal=term)
    client.send("hello")
    client.expect("hello")
    (templates / "t1.md").write_text("second\n")
    client.close_stdin()
    assert client.wait() == 0
    again = env.run(input="y\n", terminal=term)
    assert "templates/t1.md: modified" in again.stderr, again.stderr
