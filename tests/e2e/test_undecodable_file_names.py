"""Workspace files whose names are not UTF-8 (a Latin-1 byte, say): no frame and no JSON
file can carry such a name, so the assistant leaves them out of what it tracks and shows
them escaped; a conversation in such a workspace goes on and is saved."""

from __future__ import annotations

import os

from tests.e2e.harness import Env

UNDECODABLE = b"caf\xe9.md"
"""``café.md`` in Latin-1."""


def test_a_template_file_named_in_latin_1_leaves_the_session_answered_and_saved(
    env: Env,
) -> None:
    templates = env.workspace / "templates"
    templates.mkdir()
    (templates / "prompt.md").write_text("a template\n")
    with open(os.path.join(os.fsencode(templates), UNDECODABLE), "wb") as handle:
        handle.write(b"latin-1 named\n")
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert 'You said: "hello"' in result.stdout
    assert "Traceback" not in (env.runtime / "supervisor.log").read_text()
    (session_id,) = env.session_ids()
    assert list(env.session(session_id)["file_manifest"]) == ["templates/prompt.md"]
    assert [row["state"] for row in env.sessions_json()] == ["idle"]  # its tab lives on


def test_a_listing_shows_a_file_named_in_latin_1_escaped(env: Env) -> None:
    with open(os.path.join(os.fsencode(env.workspace), UNDECODABLE), "wb") as handle:
        handle.write(b"latin-1 named\n")
    result = env.run("--new", input="list\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "caf\\xe9.md" in result.stdout
    assert "went away" not in result.stderr
    assert "Traceback" not in (env.runtime / "supervisor.log").read_text()
