"""A chat's settings (config.toml < its environment < options) apply to its session even
when the supervisor was started earlier with others (found by an acceptance check:
``config show`` told values the running supervisor ignored)."""

from __future__ import annotations

import json

from tests.e2e.harness import Env

FOUR_TURNS = "a one\nb two\nc three\nd four\n"


def test_the_chats_own_compaction_interval_applies_to_a_running_supervisor(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0  # with the defaults (interval 10)
    shown = env.run("config", "show", "--json", AGENT_ASSIST_COMPACTION_INTERVAL="2")
    assert json.loads(shown.stdout)["settings"]["compaction_interval"]["value"] == 2
    result = env.run(
        "--new", input=FOUR_TURNS, terminal=env.terminal(), AGENT_ASSIST_COMPACTION_INTERVAL="2"
    )
    assert result.returncode == 0, result.stderr
    assert "note: compacted turns 1-2 into a summary" in result.stderr
    other = env.run("--new", input=FOUR_TURNS, terminal=env.terminal())
    assert "note: compacted" not in other.stderr  # another chat keeps the default


def test_config_toml_written_while_the_supervisor_runs_applies_to_the_next_chat(
    env: Env,
) -> None:
    assert env.run("supervisor", "start").returncode == 0
    env.run("--new", input="hi\n", terminal=env.terminal())  # its settings are read by now
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.toml").write_text("compaction_interval = 2\n")
    result = env.run("--new", input=FOUR_TURNS, terminal=env.terminal())
    assert "note: compacted turns 1-2 into a summary" in result.stderr


def test_the_chats_checkpoint_cap_applies_to_a_running_supervisor(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0  # its cap: 500 MB
    (env.workspace / "agent_spec.md").write_text("x" * 300_000)
    result = env.run(
        "--new", input="/save\n", terminal=env.terminal(), AGENT_ASSIST_CHECKPOINT_MAX_MB="0.1"
    )
    assert "over the 0.1 MB cap" in result.stderr or "over the 100 KB cap" in result.stderr, (
        result.stderr
    )
    assert "saved (no checkpoint written)" in result.stdout + result.stderr
