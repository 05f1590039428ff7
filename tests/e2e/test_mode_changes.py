"""A tracked file's mode changed outside agent-assist (H152): a ``chmod`` that leaves its
content readable and the same is no drift (DESIGN 6c: modified, deleted, replaced); one
that makes it unreadable (``chmod 000``) is told, for the model can no longer read it."""

from __future__ import annotations

from tests.e2e.harness import Env, outside_notices
from tests.e2e.test_checkpoints import start_supervisor_without_root_file_access


def test_chmod_of_a_tracked_file_is_told_only_when_it_makes_it_unreadable(env: Env) -> None:
    """A tester's find: no notice for a chmod. Right for ``chmod 600`` (nothing the
    session knows changed); not for ``chmod 000``, which went untold while live, the
    watcher not asked for attribute changes."""
    start_supervisor_without_root_file_access(env)  # as root, mode bits count for it
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write agent_spec.md: # spec")
    client.expect("wrote agent_spec.md")
    spec = env.workspace / "agent_spec.md"
    spec.chmod(0o600)  # no notice: told if it were, before the next one
    spec.chmod(0)
    outside_notices(client, "agent_spec.md", "(auto)", how="made unreadable")
    said = client.drain_stderr()
    assert "note: agent_spec.md made unreadable outside agent-assist" in said
    assert not [line for line in said if "agent_spec.md changed" in line], said
    spec.chmod(0o644)
    client.close_stdin()
    assert client.wait() == 0
