"""A chat's settings (config.toml < its environment < options) apply to its session even
when the supervisor was started earlier with others (found by an acceptance check:
``config show`` told values the running supervisor ignored)."""

from __future__ import annotations

import json
import re

from tests.e2e.harness import Env, all_text_under

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


def test_a_cap_from_config_toml_is_told_with_the_file_among_its_sources(env: Env) -> None:
    """The cap's message names both places it can be set (it named only the environment
    variable, though the cap came from config.toml)."""
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.toml").write_text("checkpoint_max_mb = 0.1\n")
    (env.workspace / "agent_spec.md").write_text("x" * 300_000)
    result = env.run("--new", input="/save\n", terminal=env.terminal())
    assert (
        "over the 0.1 MB cap (AGENT_ASSIST_CHECKPOINT_MAX_MB or checkpoint_max_mb in config.toml)"
        in result.stderr
    )


def test_the_chats_own_secrets_are_scrubbed_by_a_supervisor_that_lacks_them(env: Env) -> None:
    """A value in the chat's environment under a credential name is never written in
    clear, even by a supervisor started without it (found by a helper's attack: the
    session file, its checkpoints and headers.index held it)."""
    secret = "Zq9xK2mP7wL4vB8n"
    assert env.run("supervisor", "start").returncode == 0  # without MY_API_KEY
    result = env.run(
        "--new",
        input=f"decide keep {secret} here\nwrite notes.md: the value {secret} again\n/save\n",
        terminal=env.terminal(),
        MY_API_KEY=secret,
    )
    assert result.returncode == 0, result.stderr
    assert env.run("sessions", "--json").returncode == 0  # the supervisor writes the index
    (session_id,) = env.session_ids()
    assert "[REDACTED]" in json.dumps(env.session(session_id))
    files = [path for path, _ in all_text_under(env.home)]
    assert any(path.parent.name == "checkpoints" or "checkpoints" in path.parts for path in files)
    leaked = [
        path
        for path, data in all_text_under(env.home)
        if secret.encode() in data and path.parent.name != "blobs"  # blobs: the files as written
    ]
    assert leaked == []


def test_config_show_tells_the_token_budget_the_model_gives(env: Env) -> None:
    """It said "(from the model)": the user could not learn the number compaction uses."""
    shown = env.run("config", "show")
    assert "context_tokens       12288 (75% of the model's 16384-token window)" in shown.stdout
    gpt = env.run("config", "show", AGENT_ASSIST_MODEL="openai-chat:gpt-4o-mini")
    assert "96000 (75% of the model's 128000-token window)" in gpt.stdout
    data = json.loads(env.run("config", "show", "--json").stdout)
    assert data["settings"]["context_tokens"]["value"] is None, "unset stays null for scripts"


def test_config_show_json_tells_the_effective_value_the_table_tells(env: Env) -> None:
    """H108's find: `--json` gave `context_tokens` as null where the table showed the
    budget the chat uses. Each row now has `effective` (what the chat uses) and `derived`
    (where an unset setting's value comes from, else null), as the table tells them."""
    data = json.loads(env.run("config", "show", "--json", AGENT_ASSIST_MODEL_TIMEOUT_S="9").stdout)
    rows = data["settings"]
    assert rows["context_tokens"]["effective"] == 12288
    assert rows["context_tokens"]["derived"] == "75% of the model's 16384-token window"
    assert rows["summary_model"]["value"] is None
    assert rows["summary_model"]["effective"] == "offline"
    assert rows["summary_model"]["derived"] == "the extractive summarizer, no network"
    assert (rows["model_timeout"]["effective"], rows["model_timeout"]["derived"]) == (9, None)
    assert all(row["effective"] is not None for row in rows.values())
    table = env.run("config", "show", AGENT_ASSIST_MODEL_TIMEOUT_S="9").stdout
    for name, row in rows.items():
        cell = f"{row['effective']} ({row['derived']})" if row["derived"] else str(row["effective"])
        assert re.search(rf"^{name} +{re.escape(cell)} ", table, re.M), (name, table)


BAD_INTERVAL = (
    "bad compaction_interval 'abc' from file {root}/config.toml: must be a whole number "
    "between 0 and 100"
)


def test_a_bad_config_toml_does_not_stop_the_supervisor_each_chat_refuses_it(env: Env) -> None:
    """A tester's find (H152): ``supervisor start`` refused a bad value of config.toml,
    though the supervisor needs none of the chats' settings. It starts and says it (a
    warning, in its log too); the chat refuses in DESIGN 8's one line; ``sessions`` and
    ``supervisor status`` work; none of them shows a traceback."""
    env.home.mkdir(parents=True)
    (env.home / "config.toml").write_text('compaction_interval = "abc"\n')
    bad = BAD_INTERVAL.format(root=env.home)
    started = env.run("supervisor", "start", "--json")
    assert started.returncode == 0, started.stderr
    assert json.loads(started.stdout)["running"] is True
    assert started.stderr.startswith(f"warning: {bad}; the supervisor starts without it")
    log = (env.runtime / "supervisor.log").read_text()
    assert f"WARNING {bad}; the supervisor starts without it" in log
    status = env.run("supervisor", "status", "--json")
    assert status.returncode == 0 and json.loads(status.stdout)["running"] is True
    chat = env.run("--new", input="hello\n", terminal=env.terminal())
    assert (chat.returncode, chat.stderr, chat.stdout) == (1, f"error: {bad}\n", "")
    assert env.session_ids() == []  # no session made with a wrong default
    for args in (("sessions",), ("sessions", "--json"), ("sessions", "--all")):
        listed = env.run(*args)
        assert listed.returncode == 0 and listed.stderr == "", (args, listed.stderr)
    env.run("supervisor", "stop")
    (env.home / "config.toml").write_text('model = "x\n')  # not TOML at all
    started = env.run("supervisor", "start")
    assert started.returncode == 0, started.stderr
    assert started.stderr.startswith(f"warning: {env.home}/config.toml is not valid TOML")
    assert "Traceback" not in started.stderr
    chat = env.run("--new", input="hello\n", terminal=env.terminal())
    assert chat.returncode == 1 and chat.stderr.startswith(
        f"error: {env.home}/config.toml is not valid TOML"
    )
    assert len(chat.stderr.splitlines()) == 1


def test_every_bad_setting_is_told_at_once_each_in_its_line(env: Env) -> None:
    """A tester's find (H176): with two bad values (one in config.toml, one in the
    environment) ``config show`` and the chat told the first only; fixed, the next run
    told the second, while ``supervisor start`` told both. Each is told in its own line."""
    env.home.mkdir(parents=True)
    (env.home / "config.toml").write_text('compaction_interval = "abc"\n')
    bad = BAD_INTERVAL.format(root=env.home)
    budget = (
        "bad context_tokens '100' from env AGENT_ASSIST_CONTEXT_TOKENS: must be a whole "
        "number between 2000 and 10000000"
    )
    for args in (("config", "show"), ("--new",)):
        run = env.run(*args, input="hello\n", AGENT_ASSIST_CONTEXT_TOKENS="100")
        assert (run.returncode, run.stdout) == (1, ""), args
        assert run.stderr == f"error: {bad}\nerror: {budget}\n", args
    assert env.session_ids() == []
