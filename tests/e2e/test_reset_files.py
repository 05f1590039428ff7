"""``/reset`` says what it would delete before it asks, and never deletes a file of the
template directory that agent-assist never tracked (one made by hand since the session
last saved): it is left, and named."""

from __future__ import annotations

from tests.e2e.harness import Env, outside_notices


def test_reset_deletes_only_the_tracked_templates_and_names_the_one_made_by_hand(
    env: Env,
) -> None:
    """H108: `Also delete agent_spec.md and templates/? [y/N]` did not say what the
    directory held, and `y` deleted a file made there by hand too."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write templates/a.md: made by the assistant")
    client.expect("wrote templates/a.md")
    (env.workspace / "templates" / "mine.md").write_text("made by hand\n")
    client.send("/reset")
    note = "templates/ holds 1 entry agent-assist never tracked, left alone: templates/mine.md"
    client.expect(note, stderr=True)
    client.expect("Also delete templates/ (1 file)? [y/N]", stderr=True)
    client.send("y")
    client.expect("Deleted 1 file of templates/.", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    assert not (env.workspace / "templates" / "a.md").exists()
    assert (env.workspace / "templates" / "mine.md").read_text() == "made by hand\n"


def test_reset_removes_the_template_directory_it_emptied(env: Env) -> None:
    result = env.run(
        "--new",
        input="write templates/deep/a.md: one\n/reset\ny\n",
        terminal=env.terminal(),
    )
    assert result.returncode == 0, result.stderr
    assert "Also delete templates/ (1 file)? [y/N]" in result.stderr
    assert "never tracked" not in result.stderr
    assert not (env.workspace / "templates").exists()


def test_reset_leaves_an_empty_directory_of_templates_it_never_tracked(env: Env) -> None:
    """A directory made by hand under templates/, empty, held no tracked file: the
    deletion did not empty it, so it stays (and so does templates/, which holds it)."""
    (env.workspace / "templates" / "drafts" / "later").mkdir(parents=True)
    result = env.run(
        "--new",
        input="write templates/a.md: one\n/reset\ny\n",
        terminal=env.terminal(),
    )
    assert result.returncode == 0, result.stderr
    assert "Deleted 1 file of templates/." in result.stderr
    assert not (env.workspace / "templates" / "a.md").exists()
    assert (env.workspace / "templates" / "drafts" / "later").is_dir()


def test_reset_names_a_tracked_file_edited_by_hand_in_its_question(env: Env) -> None:
    """H118: a file the assistant wrote and the user then edited by hand was only counted
    (`templates/ (1 file)`), and `y` deleted the user's work unnamed; a turn after the edit
    (the session then records the edited content) must not hide it either."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write templates/a.md: made by the assistant")
    client.expect("wrote templates/a.md")
    client.send("write agent_spec.md: # spec")
    client.expect("wrote agent_spec.md")
    (env.workspace / "templates" / "a.md").write_text("made by the assistant\nmy own work\n")
    client.send("hello")
    client.expect("You said")
    client.send("/reset")
    client.expect(
        "Also delete agent_spec.md and templates/ (1 file), your changes to templates/a.md "
        "included? [y/N]",
        stderr=True,
    )
    client.send("n")
    client.expect("Session reset", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    assert "my own work" in (env.workspace / "templates" / "a.md").read_text()


def test_reset_keeps_a_file_that_changed_while_its_question_waited(env: Env) -> None:
    """H157: the question named what the files held when it was asked; a file edited while
    it waited (by hand, or by another tab's /checkpoint N) was deleted on `y`, that work
    never named."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write agent_spec.md: # ours")
    client.expect("wrote agent_spec.md")
    client.send("/reset")
    client.expect("Also delete agent_spec.md? [y/N]", stderr=True)
    (env.workspace / "agent_spec.md").write_text("# edited while asked\n")
    client.send("y")
    client.expect("agent_spec.md changed after the question; not deleted.", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    assert (env.workspace / "agent_spec.md").read_text() == "# edited while asked\n"


def test_reset_does_not_name_as_the_users_a_file_the_assistant_wrote_again_since(
    env: Env,
) -> None:
    """H179: a file edited by hand and then written again by the assistant was still named
    as the user's changes (the turn's writes never left the files seen edited outside)."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write templates/a.md: made by the assistant")
    client.expect("wrote templates/a.md")
    (env.workspace / "templates" / "a.md").write_text("made by the assistant\nmy own work\n")
    outside_notices(client, "templates/a.md", "(auto)")  # piped: told with a command's answer
    client.send("write templates/a.md: made again by the assistant")
    client.expect("wrote templates/a.md")
    client.send("/reset")
    client.expect("Also delete templates/ (1 file)? [y/N]", stderr=True)
    client.send("n")
    client.expect("Session reset", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
