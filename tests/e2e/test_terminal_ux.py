"""The terminal experience, driven through a real pty: keys, questions, history, colour, errors."""

from __future__ import annotations

import json
import re
import shutil
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from session.notices import FLOOD_FILES
from tests.e2e.conftest import ServeChat
from tests.e2e.harness import AGENT_ASSIST, Env, wait_for
from tests.e2e.openai_server import ChatServer
from tests.e2e.screen import ALT_ENTER, ANSI, CTRL_C, CTRL_D, UP, Screen

RESUME_PROMPT = "Resume previous session? [Y/n]"
COLOUR = re.compile(r"\x1b\[(?:[0-9;]*;)?(?:[1-9]|3[0-9]|9[0-7]|38;5;[0-9]+)m")


@pytest.fixture
def screens() -> Iterator[list[Screen]]:
    opened: list[Screen] = []
    yield opened
    for screen in opened:
        screen.close()


def open_screen(screens: list[Screen], env: Env, *args: str, **extra: str) -> Screen:
    terminal = env.terminals[-1] if env.terminals else env.terminal()
    screen = Screen(env, terminal, *args, extra=extra)
    screens.append(screen)
    return screen


def started(screens: list[Screen], env: Env, *args: str, **extra: str) -> Screen:
    screen = open_screen(screens, env, *args, **extra)
    screen.expect("/help for commands.")
    screen.expect_prompt()
    return screen


# -- input --------------------------------------------------------------------


def test_ctrl_c_clears_a_typed_line_and_the_chat_goes_on(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new")
    screen.type("a draft I regret")
    screen.expect("a draft I regret")
    screen.type(CTRL_C)
    screen.type("the real message\r")
    screen.expect('You said: "the real message"')
    assert "regret" not in screen.text[screen.position :]
    screen.expect_prompt()
    screen.type(CTRL_C + CTRL_C)  # the first, right after the reply, was meant for it
    assert screen.wait() == 130, "Ctrl+C at an empty prompt leaves, as interrupted"
    (session_id,) = env.session_ids()
    assert "regret" not in str(env.session(session_id)["recent_messages"])


def test_alt_enter_inserts_a_new_line_and_enter_sends(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new")
    screen.type(f"write notes.md{ALT_ENTER}line one{ALT_ENTER}line two\r")
    screen.expect("wrote notes.md")
    assert (env.workspace / "notes.md").read_text() == "line one\nline two\n"


def test_write_with_no_text_is_refused_with_a_hint(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new")
    screen.type("write agent_spec.md:\r")
    screen.expect("Nothing to write to agent_spec.md")
    screen.expect("Alt+Enter")
    assert not (env.workspace / "agent_spec.md").exists()


def test_input_history_is_kept_per_project_across_runs(env: Env, screens: list[Screen]) -> None:
    first = started(screens, env, "--new")
    first.type("remember this line\r")
    first.expect('You said: "remember this line"')
    first.expect_prompt()
    first.type(CTRL_D)
    assert first.wait() == 0
    history = env.project.parent / "prompt_history"
    assert stat.S_IMODE(history.stat().st_mode) == 0o600
    second = started(screens, env, "--new")
    second.type(UP)
    second.expect("remember this line")
    second.type("\r")
    second.expect('You said: "remember this line"')


def test_the_toolbar_shows_session_model_and_tokens(env: Env, screens: list[Screen]) -> None:
    terminal = env.terminal()
    screen = Screen(env, terminal, "--new", cpr=True)
    screens.append(screen)
    screen.expect("New session ")
    (session_id,) = re.findall(r"New session ([0-9a-f]{12})", screen.text)
    screen.expect(f"session {session_id} · model offline")
    screen.type("hello\r")
    screen.expect('You said: "hello"')
    screen.expect(f"session {session_id} · model offline · ")
    screen.expect(" tokens in context")


def test_the_toolbar_counts_the_tokens_left_after_a_compact(
    env: Env, screens: list[Screen]
) -> None:
    """A standing find: after `/compact` the toolbar still gave the last request's count,
    the context before it was compacted, until the next turn."""
    screen = Screen(env, env.terminal(), "--new", cpr=True)
    screens.append(screen)
    screen.expect("New session ")
    for n in range(1, 4):
        screen.type(f"turn {n}: the agent triages support tickets and escalates urgent ones\r")
        screen.expect(f"(turn {n} of this")
        screen.expect_prompt()
    screen.type("/compact\r")
    screen.expect("Compacted turns 1-3")
    (after,) = re.findall(r"Compacted turns 1-3: ~[\d,]+ -> ~([\d,]+) tokens", screen.text)
    screen.expect(f" · {after} tokens in context")


def with_the_spec_written(env: Env, screens: list[Screen]) -> Screen:
    """A new session with its toolbar drawn, whose first turn wrote ``agent_spec.md``."""
    screen = Screen(env, env.terminal(), "--new", cpr=True)
    screens.append(screen)
    screen.expect("New session ")
    screen.type("write agent_spec.md: # Spec\r")
    screen.expect("wrote agent_spec.md")
    screen.expect_prompt()
    return screen


def test_the_toolbar_counts_files_changed_outside_in_words(
    env: Env, screens: list[Screen]
) -> None:
    """"1 file changed outside", not "1 file(s) changed outside"."""
    screen = with_the_spec_written(env, screens)
    (env.workspace / "agent_spec.md").write_text("# Edited elsewhere\n")
    screen.expect("note: agent_spec.md changed outside agent-assist")
    screen.expect(" · 1 file changed outside  (/help)")


def test_the_toolbar_counts_every_file_of_a_flood_of_changes_outside(
    env: Env, screens: list[Screen]
) -> None:
    """H84's find: the toolbar counted the files each flood's notice named, at most 1,000
    of them: 20,000 templates edited by `sed -i` were "7057 files changed outside". (The
    edits are made while no supervisor runs: the re-attach tells them in one flood.)"""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(1_200):
        (templates / f"t{n:04}.md").write_text(f"template {n}\n")
    screen = with_the_spec_written(env, screens)
    env.kill_supervisor_and_heir()
    for n in range(1_200):
        (templates / f"t{n:04}.md").write_text(f"template {n}, edited by hand\n")
    screen.type("and now?\r")
    screen.expect(f"note: {1_200 - FLOOD_FILES:,} more tracked files changed outside agent-assist")
    screen.expect(" · 1200 files changed outside  (/help)")


def test_files_a_restore_wrote_back_leave_the_toolbars_count_of_outside_changes(
    env: Env, screens: list[Screen]
) -> None:
    """A helper's report: after a restore wrote the edited files back, the toolbar still
    said they had changed outside, for the rest of the chat."""
    screen = with_the_spec_written(env, screens)
    screen.type("/save\r")
    screen.expect("checkpoint 2")
    (env.workspace / "agent_spec.md").write_text("# Edited elsewhere\n")
    screen.expect("note: agent_spec.md changed outside agent-assist")
    screen.expect(" · 1 file changed outside  (/help)")
    screen.type("/checkpoint 2\r")
    screen.expect("Restore files too? [y/N]")
    screen.type("y\r")
    screen.expect("Files restored: agent_spec.md.")
    screen.expect(" · model offline  (/help)")
    assert (env.workspace / "agent_spec.md").read_text() == "# Spec\n"


def test_after_reset_an_outside_edit_of_the_kept_spec_is_noticed_at_once(
    env: Env, screens: list[Screen]
) -> None:
    """The new session watched nothing until its first turn."""
    (env.workspace / "agent_spec.md").write_text("# Spec\n")
    screen = started(screens, env, "--new")
    screen.type("/reset\r")
    screen.expect("Also delete agent_spec.md? [y/N]")
    screen.type("n\r")
    screen.expect("Session reset")
    screen.expect_prompt()
    (env.workspace / "agent_spec.md").write_text("# Edited elsewhere\n")
    screen.expect("note: agent_spec.md changed outside agent-assist")


def test_slash_commands_complete_with_what_they_do(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new")
    screen.type("/mo")
    screen.expect("show the model in use")
    screen.type("\t\r")
    screen.expect("model: offline (from default)")


# -- questions ----------------------------------------------------------------


def test_ctrl_c_at_the_reset_question_cancels_the_reset(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new")
    screen.type("write agent_spec.md: # Spec\r")
    screen.expect("wrote agent_spec.md")
    screen.expect_prompt()
    (session_id,) = env.session_ids()
    screen.type("/reset\r")
    screen.expect("Also delete agent_spec.md? [y/N]")
    screen.expect_prompt()
    screen.type(CTRL_C)
    screen.expect("Cancelled; nothing was changed.")
    screen.expect_prompt()
    screen.type("still here\r")
    screen.expect('You said: "still here". (turn 2')
    assert env.session_ids() == [session_id], "the session was not reset"
    assert (env.workspace / "agent_spec.md").exists()


def at_the_restore_question(screens: list[Screen], env: Env) -> Screen:
    """A chat whose spec was `# v1` at the checkpoint /save wrote and is `# v2` now, asked
    `Restore files too? [y/N]` by `/checkpoint` of that checkpoint."""
    screen = started(screens, env, "--new")
    screen.type("write agent_spec.md: # v1\r")
    screen.expect("wrote agent_spec.md")
    screen.expect_prompt()
    screen.type("/save\r")
    screen.expect("checkpoint ")
    number = re.findall(r"checkpoint (\d+)", screen.text)[-1]
    screen.expect_prompt()
    screen.type("write agent_spec.md: # v2\r")
    screen.expect("wrote agent_spec.md")
    screen.expect_prompt()
    screen.type(f"/checkpoint {number}\r")
    screen.expect("Restore files too? [y/N]")
    screen.expect_prompt()
    return screen


def test_ctrl_c_at_the_restore_question_restores_nothing(env: Env, screens: list[Screen]) -> None:
    screen = at_the_restore_question(screens, env)
    screen.type(CTRL_C)
    screen.expect("Cancelled; nothing was changed.")
    screen.expect_prompt()
    screen.type("where are we\r")
    screen.expect('You said: "where are we". (turn 3', timeout=30)
    assert (env.workspace / "agent_spec.md").read_text() == "# v2\n"


def test_a_file_changed_while_the_restore_question_waits_is_told_at_once(
    env: Env, screens: list[Screen]
) -> None:
    """A helper's report: the notice waited until the question was answered."""
    screen = at_the_restore_question(screens, env)
    with (env.workspace / "agent_spec.md").open("a") as edit:
        edit.write("edited by hand while the question waits\n")
    screen.expect("note: agent_spec.md changed outside agent-assist", timeout=10)
    screen.type("n\r")
    screen.expect("Restored the conversation")
    screen.expect_prompt()


def test_a_stop_while_the_restore_question_waits_is_told_at_once(
    env: Env, screens: list[Screen]
) -> None:
    """A helper's report: the stop was told only once the question was answered."""
    screen = at_the_restore_question(screens, env)
    assert env.run("supervisor", "stop").returncode == 0
    screen.expect("the supervisor was stopped; session ", timeout=10)
    screen.wait(timeout=10)  # the chat ends, as a stop at the prompt ends it
    assert (env.workspace / "agent_spec.md").read_text() == "# v2\n", "nothing restored"


def _saved_session(env: Env) -> str:
    result = env.run("--new", input="a first turn\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    env.settled(session_id)  # the summary written after the run left lands first
    return session_id


@pytest.mark.parametrize("key", [CTRL_C, CTRL_D], ids=["ctrl-c", "ctrl-d"])
def test_cancelling_the_resume_question_opens_nothing(
    env: Env, screens: list[Screen], key: str
) -> None:
    session_id = _saved_session(env)
    before = env.session(session_id)
    screen = open_screen(screens, env)
    screen.expect(RESUME_PROMPT)
    screen.expect_prompt()
    screen.type(key)
    screen.expect("Cancelled; no session was opened")
    # H127: a script tells an interrupt (130, as on SIGINT) from an end of input (0).
    assert screen.wait() == (130 if key == CTRL_C else 0)
    assert env.session_ids() == [session_id], "no new session"
    assert env.session(session_id) == before, "and the offered one was not resumed"


def test_ctrl_c_at_the_start_a_new_session_question_starts_none(
    env: Env, screens: list[Screen]
) -> None:
    holder = env.spawn(terminal=env.terminal())
    holder.send("holding this session")
    holder.expect("holding this session")
    (session_id,) = env.session_ids()
    env.terminal()
    screen = open_screen(screens, env, "--resume", session_id)
    screen.expect("Start a new session instead? [Y/n]")
    screen.expect_prompt()
    screen.type(CTRL_C)
    screen.expect("Cancelled; no session was opened")
    assert screen.wait() == 130
    assert env.session_ids() == [session_id]


# -- the resume offer ----------------------------------------------------------


@pytest.mark.parametrize("supervisor", ["running", "started by the chat"])
def test_the_resume_offer_shows_turns_summary_and_drift(
    env: Env, screens: list[Screen], supervisor: str
) -> None:
    """Started by the chat, the new supervisor answers the open before its model stack is
    loaded (the front door): the drift lines after ``Resumed session`` were missing."""
    term = env.terminal()
    script = "write agent_spec.md: # Spec\nwrite notes.md: n\nwrite keep.md: k\n"
    assert env.run("--new", input=script, terminal=term).returncode == 0
    (session_id,) = env.session_ids()
    wait_for(lambda: env.session(session_id)["summary"], what="the session's summary")
    (env.workspace / "agent_spec.md").write_text("# Spec, edited by hand\n")
    (env.workspace / "notes.md").unlink()
    if supervisor != "running":
        assert env.run("supervisor", "stop").returncode == 0
    screen = open_screen(screens, env)
    screen.expect("Previous session found (last active: ")
    screen.expect("\n  3 turns · summary: write agent_spec.md: # Spec\n")
    screen.expect("  agent_spec.md: modified · notes.md: deleted · 1 tracked file unchanged\n")
    screen.expect(RESUME_PROMPT)
    screen.expect_prompt()
    screen.type("y\r")
    screen.expect(f"Resumed session {session_id}. /help for commands.\n")
    screen.expect("  agent_spec.md: modified\n  notes.md: deleted\n  1 tracked file unchanged")


def test_several_resumable_sessions_are_offered_by_number(env: Env, screens: list[Screen]) -> None:
    older_tab, newer_tab = env.terminal(), env.terminal()
    env.run("--new", input="the older one\n", terminal=older_tab)
    env.run("--new", input="the newer one\n", terminal=newer_tab)
    older_tab.close()
    newer_tab.close()
    rows = env.sessions_json()
    newer, older = rows[0]["session_id"], rows[1]["session_id"]
    env.terminal()
    screen = open_screen(screens, env)
    screen.expect("summary: the newer one")
    screen.expect("(answer 2):")
    screen.expect("2) ")
    screen.expect("the older one")
    screen.expect(RESUME_PROMPT)
    screen.expect_prompt()
    screen.type("7\r")
    screen.expect("Please answer y or n, or 2.")
    screen.expect_prompt()
    screen.type("2\r")
    screen.expect(f"Resumed session {older}.")
    assert newer != older


# -- output -------------------------------------------------------------------


def test_a_tool_call_is_shown_as_one_dim_line(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new")
    screen.type("write agent_spec.md: # Spec\r")
    screen.expect("  write_file agent_spec.md (7 B)\n")
    screen.expect("wrote agent_spec.md (7 bytes)")
    line = screen.raw[: screen.raw.index("write_file agent_spec.md (7 B)")]
    assert line.endswith("\x1b[2m  "), "dim"


def test_no_color_means_no_colour_codes(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new", NO_COLOR="1")
    screen.type("write agent_spec.md: # Spec\r")
    screen.expect("  write_file agent_spec.md (7 B)\n")
    screen.expect("wrote agent_spec.md (7 bytes)")
    screen.expect_prompt()
    screen.type("# A heading and **bold** text\r")
    screen.expect('You said: "# A heading and **bold** text"')
    screen.expect_prompt()
    screen.type(CTRL_D)
    assert screen.wait() == 0
    assert not COLOUR.findall(screen.raw), COLOUR.findall(screen.raw)[:5]


def test_markdown_is_rendered_on_a_colour_terminal(env: Env, screens: list[Screen]) -> None:
    screen = started(screens, env, "--new")
    screen.type("some **bold** words\r")
    screen.expect("some bold words")
    assert "\x1b[1m" in screen.raw, "bold is rendered, not printed as asterisks"


def test_a_code_block_in_a_reply_is_highlighted(
    env: Env, screens: list[Screen], serve_chat: ServeChat
) -> None:
    serve_chat(ChatServer(), api_key="k", AGENT_ASSIST_MODEL="openai-chat:m")
    screen = started(screens, env, "--new")
    fence = ALT_ENTER.join(["code:", "", "```python", "def f(x):", "    return x", "```"])
    screen.type(fence + "\r")
    screen.expect("echo: code:")
    screen.expect("def f(x):")
    screen.expect_prompt()
    reply = screen.raw[screen.raw.index("echo: code:") :]
    assert re.search(r"\x1b\[[0-9;]*mdef\x1b\[0m", reply), "the keyword has its own colour"
    assert "```" not in ANSI.sub("", reply), "the fence is rendered, not printed"


def test_piped_stdout_carries_replies_only(env: Env) -> None:
    _saved_session(env)
    script = "y\nwrite agent_spec.md: # Spec\n/save\n/help\n/model\nhello\n"
    result = env.run(input=script, terminal=env.terminals[-1])
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("[offline model]") for line in lines), lines
    for other in (RESUME_PROMPT, "write_file agent_spec.md (7 B)", "saved", "/reset", "model:"):
        assert other in result.stderr


def test_a_piped_run_names_its_session_at_the_end(env: Env) -> None:
    """A script could not learn which session its run used: the line is on stderr."""
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert result.stderr.splitlines()[-1] == f"Session {session_id} saved."
    assert "Session" not in result.stdout


# -- errors -------------------------------------------------------------------


@pytest.fixture
def locked_server(serve_chat: ServeChat) -> ChatServer:
    """A server that wants the key ``sk-right``, which ``env`` does not give it."""
    return serve_chat(
        ChatServer(api_key="sk-right"), api_key="sk-wrong", AGENT_ASSIST_MODEL="openai-chat:m"
    )


def test_a_401_is_one_line_naming_the_key(
    env: Env, screens: list[Screen], locked_server: ChatServer
) -> None:
    screen = started(screens, env, "--new", OPENAI_API_KEY="sk-wrong")
    screen.type("hello\r")
    screen.expect(f"error: 401 from {locked_server.base_url}: check OPENAI_API_KEY.")
    screen.expect("run agent-assist supervisor stop after changing it")
    screen.expect_prompt()


def started_with_summary_model(
    screens: list[Screen], env: Env, server: ChatServer, **extra: str
) -> Screen:
    """A new chat (the offline model) whose summaries ``server``'s summary-model writes."""
    return started(
        screens,
        env,
        "--new",
        OPENAI_BASE_URL=server.base_url,
        OPENAI_API_KEY="sk-test",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        **extra,
    )


def test_ctrl_c_while_compact_waits_for_the_summary_model_cancels_it(
    env: Env, screens: list[Screen]
) -> None:
    """A helper's attack: Ctrl+C while /compact waited for a hanging summary model ended
    the chat in "Aborted!"; then it said the command could not be interrupted, and the
    user waited up to 15 s for the summary model. It cancels the compaction now."""
    with ChatServer() as server:
        server.hang_summaries = True
        screen = started_with_summary_model(screens, env, server)
        screen.type("a first message\r")
        screen.expect("[offline model]")
        screen.expect_prompt()
        screen.type("/compact\r")
        wait_for(lambda: any(r["model"] == "summary-model" for r in server.requests))
        screen.type(CTRL_C)
        screen.expect("Compaction cancelled; nothing was changed.", timeout=10)  # not 15 s
        screen.expect_prompt()
        server.hang_summaries = False
        screen.type("/compact\r")  # nothing of the cancelled one stands in its way
        screen.expect("Compacted turn 1")
        screen.type(CTRL_D)
        assert screen.wait() == 0
    assert "Aborted!" not in screen.text
    assert "cannot be interrupted" not in screen.text


def test_ctrl_c_while_a_message_waits_for_the_token_budgets_compaction_cancels_it(
    env: Env, screens: list[Screen]
) -> None:
    """H80's find: Ctrl+C while a message waited for the compaction the token budget asked
    for did nothing until the summary model's 15 s were up ("thinking..." on screen): the
    cancel waited in the TerminalActor's mailbox behind the compaction."""
    # over the smallest budget (2,000 tokens, H153) with two such messages, not one
    long = "the routing table needs more rows and a fallback queue " * 55
    with ChatServer() as server:
        server.hang_summaries = True
        screen = started_with_summary_model(
            screens,
            env,
            server,
            # Over it with two messages, not with the agent's own part (~540 tokens) and
            # one: the budget then is out of reach, compacted offline at once (H135).
            AGENT_ASSIST_CONTEXT_TOKENS="2000",  # the smallest allowed (H153)
            AGENT_ASSIST_COMPACTION_INTERVAL="100",
        )
        screen.type(f"part one: {long}\r")
        screen.expect("[offline model]")
        screen.expect_prompt()
        screen.type(f"part two: {long}\r")
        screen.expect("to fit the token budget")
        screen.type(CTRL_C)
        screen.expect("[cancelled]", timeout=10)  # not after the summary model's 15 s
        screen.expect_prompt()
        server.hang_summaries = False
        screen.type("part three\r")
        screen.expect('part three"')
        screen.type(CTRL_D)
        assert screen.wait() == 0
    (session_id,) = env.session_ids()
    saved = (env.project / f"{session_id}.json").read_text()
    assert "part one" in saved and "part three" in saved
    assert "part two" not in saved, "the cancelled message is not kept"


def test_a_piped_run_whose_last_turn_failed_exits_1(env: Env, locked_server: ChatServer) -> None:
    result = env.run("--new", input="hello\n", terminal=env.terminal(), OPENAI_API_KEY="sk-no")
    assert result.returncode == 1
    assert f"error: 401 from {locked_server.base_url}: check OPENAI_API_KEY" in result.stderr
    assert result.stdout == ""


def test_a_piped_run_exits_1_when_a_turn_failed_before_the_last(env: Env) -> None:
    """The exit status followed the last turn: a failure mid-script was hidden."""
    refused = "x" * 200_001
    result = env.run("--new", input=f"{refused}\nhello\n", terminal=env.terminal())
    assert "(turn 1 of this conversation" in result.stdout, "the next message still ran"
    assert result.returncode == 1


def test_connection_refused_names_the_url_and_the_restart(env: Env, screens: list[Screen]) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    env.extra.update(OPENAI_BASE_URL=url, OPENAI_API_KEY="sk", AGENT_ASSIST_MODEL="openai-chat:m")
    screen = started(screens, env, "--new")
    screen.type("hello\r")
    # wider than the screen's 120 columns: wrapped between words (H114)
    screen.expect(f"error: cannot connect to {url}: is the server up? The supervisor", timeout=60)
    screen.expect("run agent-assist supervisor stop after changing it")


def test_an_unknown_model_is_refused_at_start(env: Env, screens: list[Screen]) -> None:
    screen = open_screen(screens, env, "--model", "nosuch:thing")
    screen.expect("error: unknown model 'nosuch:thing' from option --model")
    screen.expect("use offline")  # the line wraps between words on a terminal
    screen.expect("openai-chat:NAME")
    assert screen.wait() == 1
    assert not env.runtime.joinpath("supervisor.sock").exists(), "checked before attaching"


# -- configuration ------------------------------------------------------------


def test_config_show_tells_each_value_and_its_source(env: Env) -> None:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.toml").write_text(
        'model = "openai-chat:from-file"\ncompaction_interval = 4\ncompaction_overlap = 1\n'
    )
    result = env.run(
        "config", "show", "--json", "--model", "openai-chat:from-option",
        AGENT_ASSIST_COMPACTION_INTERVAL="6", AGENT_ASSIST_MODEL="openai-chat:from-env",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["settings"]
    assert rows["model"] == {
        "value": "openai-chat:from-option",
        "source": "option",
        "env": "AGENT_ASSIST_MODEL",
        "effective": "openai-chat:from-option",
        "derived": None,
    }
    shown = {name: (row["value"], row["source"]) for name, row in rows.items()}
    assert shown["compaction_interval"] == (6, "env")
    assert shown["compaction_overlap"] == (1, "file")
    assert rows["context_tokens"]["source"] == "default"
    table = env.run("config", "show", AGENT_ASSIST_MODEL="openai-chat:from-env").stdout
    assert re.search(r"^model +openai-chat:from-env +env \(AGENT_ASSIST_MODEL\)$", table, re.M)
    assert re.search(r"^compaction_interval +4 +file \(config.toml\)$", table, re.M)


def test_a_bad_setting_is_one_line_naming_it_and_its_source(env: Env) -> None:
    result = env.run("config", "show", AGENT_ASSIST_COMPACTION_INTERVAL="often")
    assert result.returncode == 1
    assert result.stderr.strip() == (
        "error: bad compaction_interval 'often' from env AGENT_ASSIST_COMPACTION_INTERVAL: "
        "must be a whole number between 0 and 100"
    )


def test_the_chat_uses_the_model_of_the_config_file(env: Env) -> None:
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.toml").write_text('model = "nosuch:model"\n')
    result = env.run("--new", input="hi\n", terminal=env.terminal())
    assert result.returncode == 1
    assert (
        f"error: unknown model 'nosuch:model' from file {env.home / 'config.toml'}" in result.stderr
    )


def test_a_bad_summary_model_in_the_config_file_is_named_as_that_setting(env: Env) -> None:
    """A helper's find (H53): with both models in the file, "unknown model 'gpt-4'" did not
    say which setting held it."""
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.toml").write_text('model = "offline"\nsummary_model = "gpt-4"\n')
    result = env.run("config", "show")
    assert result.returncode == 1
    assert result.stderr.startswith(
        f"error: unknown summary_model 'gpt-4' from file {env.home / 'config.toml'}"
    ), result.stderr


def test_version_and_usage_errors(env: Env) -> None:
    version = env.run("--version")
    assert version.returncode == 0
    assert re.fullmatch(r"agent-assist, version \S+\n", version.stdout)
    assert env.run("config", "show", "--bogus").returncode == 2


def test_resuming_a_session_of_another_project_hints_at_its_workspace(env: Env) -> None:
    session_id = _saved_session(env)
    elsewhere = env.base / "other-project"
    elsewhere.mkdir()
    result = env.run("--resume", session_id, "-w", str(elsewhere), input="hello\n")
    assert result.returncode == 1
    assert f"it belongs to project {env.project.parent.name}" in result.stderr
    assert "--workspace DIR" in result.stderr


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_show_and_rm_find_a_session_of_another_project(env: Env, supervisor: str) -> None:
    """A helper's report: a session whose workspace was deleted could be neither shown
    nor removed (the hint said to run from a workspace that no longer exists). Run
    from another workspace, they find it (the tests' commands run in the first one, so
    it is emptied rather than deleted)."""
    session_id = _saved_session(env)
    project = env.project.parent.name
    shutil.rmtree(env.workspace)
    env.workspace.mkdir()
    elsewhere = env.base / "other-project"
    elsewhere.mkdir()
    if supervisor == "stopped":
        env.run("supervisor", "stop")
    shown = env.run("sessions", "show", session_id, "-w", str(elsewhere))
    assert shown.returncode == 0, shown.stderr
    assert f"note: session {session_id} is in project {project}" in shown.stderr
    assert session_id in shown.stdout
    removed = env.run("sessions", "rm", session_id, "-w", str(elsewhere))
    assert removed.returncode == 0, removed.stderr
    assert f"Removed session {session_id}." in removed.stdout
    assert not (env.project / f"{session_id}.json").exists()


def test_resuming_a_corrupt_session_says_its_file_was_moved_aside(env: Env) -> None:
    session_id = _saved_session(env)
    (env.project / f"{session_id}.json").write_text("{broken")
    result = env.run("--resume", session_id, input="hello\n")
    assert result.returncode == 1
    (kept,) = env.project.glob(f"{session_id}.json.corrupt-*")
    assert f"error: session {session_id} cannot be opened: its file was corrupt" in result.stderr
    assert kept.name in result.stderr.splitlines()[-1]
    assert "no session" not in result.stderr
    shown = env.run("sessions", "show", session_id)
    assert shown.returncode == 1
    assert f"is kept as {kept.name}" in shown.stderr


def test_a_corrupt_session_of_another_project_is_named_with_its_project(env: Env) -> None:
    session_id = _saved_session(env)
    session_file = env.project / f"{session_id}.json"
    session_file.rename(session_file.with_name(f"{session_id}.json.corrupt-20261202T150414Z"))
    elsewhere = env.base / "other-project"
    elsewhere.mkdir()
    result = env.run("sessions", "rm", session_id, "-w", str(elsewhere))
    assert result.returncode == 1
    assert f"project {env.project.parent.name} had it, but its file was corrupt" in result.stderr


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_shell_completion_follows_clicks_convention(env: Env, shell: str) -> None:
    script = env.run(_AGENT_ASSIST_COMPLETE=f"{shell}_source")
    assert script.returncode == 0
    assert "_AGENT_ASSIST_COMPLETE" in script.stdout


def test_session_ids_complete_in_the_shell(env: Env) -> None:
    session_id = _saved_session(env)
    completed = env.run(
        COMP_WORDS=f"agent-assist sessions show {session_id[:3]}",
        COMP_CWORD="3",
        _AGENT_ASSIST_COMPLETE="bash_complete",
    )
    assert completed.stdout.split() == [f"plain,{session_id}"]


@pytest.mark.parametrize(
    "words",
    [
        "agent-assist -w {ws} sessions show ",
        "agent-assist sessions -w {ws} show ",
        "agent-assist sessions show -w {ws} ",
        "agent-assist -w {ws} --resume ",
    ],
)
def test_session_ids_complete_for_the_workspace_given_wherever_it_is_given(
    env: Env, words: str
) -> None:
    """From another directory, the ids completed are those of the workspace the command
    would use: ``sessions -w DIR show ID`` runs in DIR's project, so it completes there."""
    session_id = _saved_session(env)
    elsewhere = env.base / "elsewhere"
    elsewhere.mkdir()
    line = words.format(ws=env.workspace)
    completed = env.run(
        cwd=elsewhere,
        COMP_WORDS=line,
        COMP_CWORD=str(len(line.split())),
        _AGENT_ASSIST_COMPLETE="bash_complete",
    )
    assert completed.stdout.split() == [f"plain,{session_id}"], completed.stderr


@pytest.mark.parametrize("words", ["agent-assist --model ", "agent-assist config show -m "])
def test_model_names_complete_in_the_shell(env: Env, words: str) -> None:
    """A helper's report (H87): `--model` completed nothing. It offers `offline`, the
    models the settings name (here the config file's) and the `openai-chat:` prefix."""
    env.home.mkdir(parents=True, exist_ok=True)
    (env.home / "config.toml").write_text('model = "openai-chat:my-model"\n')
    completed = env.run(
        COMP_WORDS=words, COMP_CWORD=str(len(words.split())), _AGENT_ASSIST_COMPLETE="bash_complete"
    )
    assert completed.stdout.split() == [
        "plain,offline",
        "plain,openai-chat:my-model",
        "plain,openai-chat:",
    ], completed.stderr


def test_a_typed_provider_prefix_completes_to_the_providers_pydantic_ai_knows(env: Env) -> None:
    code = (
        "import sys, runpy\n"
        f"sys.argv = [{AGENT_ASSIST!r}]\n"
        "try:\n"
        "    runpy.run_module('cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('LOADED', 'pydantic_ai' in sys.modules, file=sys.stderr)\n"
    )
    completed = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=env.workspace,
        env=env.environ(
            COMP_WORDS="agent-assist --model anth",
            COMP_CWORD="2",
            _AGENT_ASSIST_COMPLETE="bash_complete",
        ),
        timeout=60,
        check=False,
    )
    assert completed.stdout.split() == ["plain,anthropic:"], completed.stderr
    assert "LOADED False" in completed.stderr, "completion imports no pydantic-ai"


def test_a_piped_chat_loads_neither_rich_nor_prompt_toolkit(env: Env) -> None:
    code = (
        "import sys, runpy\n"
        f"sys.argv = [{AGENT_ASSIST!r}, '--new']\n"
        "try:\n"
        "    runpy.run_module('cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in ('rich', 'prompt_toolkit'))\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        input="write agent_spec.md: # Spec\n",
        capture_output=True,
        text=True,
        cwd=env.workspace,
        env=env.environ(env.terminal()),
        timeout=60,
        check=False,
    )
    assert "wrote agent_spec.md" in result.stdout, result.stderr
    assert "LOADED []" in result.stderr


def test_with_three_other_sessions_the_offer_and_the_reask_both_say_2_to_4(
    env: Env, screens: list[Screen]
) -> None:
    for n in range(4):
        tab = env.terminal()
        assert env.run("--new", input=f"session {n}\n", terminal=tab).returncode == 0
        tab.close()
    env.terminal()
    screen = open_screen(screens, env)
    screen.expect("(answer 2-4):")
    screen.expect("4) ")
    screen.expect(RESUME_PROMPT)
    screen.expect_prompt()
    screen.type("9\r")
    screen.expect("Please answer y or n, or 2-4.")


def test_the_toolbar_forgets_the_old_session_s_phase_after_reset(
    env: Env, screens: list[Screen]
) -> None:
    """The new session after /reset was shown in the old one's phase of the work."""
    screen = Screen(env, env.terminal(), "--new", cpr=True)
    screens.append(screen)
    screen.expect("/help for commands.")
    screen.type("phase code\r")
    screen.expect(" · phase code")
    screen.type("/reset\r")
    screen.expect("New session ")
    screen.expect(".")
    new_id = screen.text[screen.position - 13 : screen.position - 1]
    screen.expect(f"session {new_id} · model offline  (/help)")


def test_a_piped_command_that_fails_makes_the_run_s_status_1(env: Env) -> None:
    result = env.run("--new", input="hello\n/checkpoint 99\n", terminal=env.terminal())
    assert "error: no checkpoint 99" in result.stderr
    assert result.returncode == 1


def test_an_offer_with_more_other_sessions_than_it_lists_says_how_many_more(env: Env) -> None:
    """Found by trying the product: past five others the rest went unmentioned, as if
    the sessions still on disk were gone."""
    for n in range(8):
        tab = env.terminal()
        assert env.run("--new", input=f"session {n}\n", terminal=tab).returncode == 0
        tab.close()
    result = env.run(input="n\n", terminal=env.terminal())
    assert "(answer 2-4; 4 older: agent-assist sessions):" in result.stderr, result.stderr
    assert "    4) " in result.stderr and "    5) " not in result.stderr


def test_leaving_a_session_with_no_turn_says_nothing_was_saved(env: Env) -> None:
    """A helper's report: /exit of a session with no turn printed nothing at all, where
    every other exit names what was saved."""
    result = env.run("--new", input="/exit\n")
    assert result.returncode == 0
    assert result.stderr.splitlines()[-1] == "Nothing to save (no turn was completed)."
    assert env.session_ids() == []


def test_another_sessions_refused_file_is_told_at_the_start_but_fails_no_run_and_rm_says_why(
    env: Env,
) -> None:
    """A helper's attack: `sessions rm` of a directory at a session file's name printed a
    raw "Is a directory". Another's: a piped run exited 1 for a line about another
    session's file refused (nested too deep), though it exited 0 for one from a newer
    version, and the run's own work went well: neither fails it now."""
    assert env.run("--new", input="hi\n").returncode == 0
    (env.project / "0123456789ab.json").mkdir()
    result = env.run("--new", input="hello\n")
    refused = "error: refusing session file 0123456789ab.json (not a regular file); left untouched"
    assert refused in result.stderr.splitlines()
    assert result.returncode == 0
    (env.project / "ba9876543210.json").write_text('{"a": ' + "[" * 5000 + "]" * 5000 + "}")
    again = env.run(input="y\nhello again\n", terminal=env.terminal())
    assert "error: refusing session file ba9876543210.json (nested over 1024 levels deep)" in (
        again.stderr
    )
    assert again.returncode == 0, again.stderr
    removed = env.run("sessions", "rm", "0123456789ab")
    assert removed.returncode == 1 and removed.stderr.splitlines() == [refused]
    assert (env.project / "0123456789ab.json").is_dir()


def test_a_tracked_file_gone_during_the_chat_stays_tracked_and_the_resume_tells_it(
    env: Env, screens: list[Screen], tmp_path: Path
) -> None:
    """A helper's attack: a tracked file whose directory became a symlink during the chat
    (it reads as deleted) was left out of the next save's manifest: the resume said
    nothing of it, even once it was back and changed, and it was no longer watched. A
    tracked file gone keeps the digest it was saved with: the next resume tells what
    became of it, once."""
    term = env.terminal()
    screen = Screen(env, term, "--new")
    screens.append(screen)
    screen.expect("New session ")
    screen.type("write e/g.md: first version\r")
    screen.expect("wrote e/g.md")
    screen.expect_prompt()
    (env.workspace / "e").rename(tmp_path / "e.real")
    (env.workspace / "e").symlink_to(tmp_path / "e.real")
    screen.expect("note: e/g.md deleted outside agent-assist")
    screen.type("hi\r")
    screen.expect("[changed outside: e/g.md]")
    screen.expect_prompt()
    screen.type("/exit\r")
    assert screen.wait() == 0
    (session_id,) = env.session_ids()
    assert list(env.session(session_id)["file_manifest"]) == ["e/g.md"]
    (env.workspace / "e").unlink()
    (tmp_path / "e.real").rename(env.workspace / "e")
    (env.workspace / "e" / "g.md").write_text("changed while no chat was open\n")
    resumed = env.run(input="y\n", terminal=term)
    assert "e/g.md: modified" in resumed.stderr
    (env.workspace / "e" / "g.md").unlink()
    again = env.run(input="y\nhello\n", terminal=term)
    assert "e/g.md: deleted" in again.stderr
    last = env.run(input="y\n", terminal=term)
    assert "e/g.md: deleted" not in last.stderr, "told by a resume, then no longer tracked"
    assert "e/g.md" not in env.session(session_id)["file_manifest"]


def test_a_tabs_own_session_that_cannot_be_opened_is_named_as_this_tabs(env: Env) -> None:
    """A helper's find: with this tab's session file refused (a newer version's), the
    start printed only the generic line about the file and offered another session, as
    if this tab had none."""
    tab = env.terminal()
    env.run("--new", input="an older session\n", terminal=env.terminal())
    env.run("--new", input="this tab's session\n", terminal=tab)
    (mine,) = [s for s in env.session_ids() if "this tab" in str(env.session(s)["recent_messages"])]
    path = env.settled(mine)
    data = json.loads(path.read_bytes())
    data["schema_version"] = 99
    path.write_text(json.dumps(data))
    result = env.run(input="n\n", terminal=tab)
    assert (
        f"note: this tab's session {mine} cannot be opened (schema_version 99 is newer than "
        "this agent-assist supports (3)); it stays on disk, untouched"
    ) in result.stderr.splitlines()
    assert result.returncode == 0


def test_a_tabs_own_session_moved_aside_earlier_is_named_at_its_next_start(env: Env) -> None:
    """A helper's find (H82): another tab's start moved this tab's corrupt session file
    aside; the tab's next start began a new session without a word about its own. (A
    listing only tells of the file, and leaves it: H123.)"""
    tab = env.terminal()
    env.run("--new", input="this tab's session\n", terminal=tab)
    (mine,) = env.session_ids()
    env.settled(mine).write_text("not json {")
    listing = env.run("sessions")
    assert f"session file {mine}.json is corrupt (" in listing.stderr
    assert not list(env.project.glob(f"{mine}.json.corrupt-*")), "a listing moves nothing"
    other_tab = env.run(input="", terminal=env.terminal())
    assert f"session file {mine}.json is corrupt; moved aside" in other_tab.stderr
    (aside,) = [p.name for p in env.project.glob(f"{mine}.json.corrupt-*")]
    result = env.run(input="hello again\n", terminal=tab)
    assert (
        f"note: this tab's session {mine} is no longer on disk: its file was moved aside "
        f"as corrupt ({aside})"
    ) in result.stderr.splitlines()
    assert result.returncode == 0
