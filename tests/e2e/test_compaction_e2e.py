"""Compaction end to end: the real supervisor, the real terminal, and a local
OpenAI-compatible server that records what the model is sent."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
from typing import Any

import pytest

from tests.e2e.harness import Client, Env, Terminal, outside_notices, wait_for
from tests.e2e.openai_server import ChatServer

TOPIC = (
    "For the support-ticket triage agent, think about the classifier prompt, the routing "
    "table, the escalation rules and how we evaluate it against last month's tickets."
)


def chats(server: ChatServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == "test-model"]


def conversation(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The request's messages without the system/developer instructions."""
    return [m for m in request["messages"] if m["role"] not in ("system", "developer")]


def compacted_up_to(env: Env, session_id: str) -> int:
    """The last turn the session file's compaction covers (0: none)."""
    from session.compaction import parse_compaction

    compaction = parse_compaction(env.session(session_id)["compacted_history_summary"])
    return compaction.end_invocation if compaction else 0


def script(turns: range) -> str:
    return "".join(f"turn {n}: {TOPIC}\n" for n in turns)


def test_with_compaction_every_request_stays_bounded(env: Env, server: ChatServer) -> None:
    result = env.run(
        "--new",
        input=script(range(1, 31)),
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="3",
        AGENT_ASSIST_COMPACTION_OVERLAP="1",
    )
    assert result.returncode == 0, result.stderr
    sizes = [len(conversation(r)) for r in chats(server)]
    assert len(sizes) == 30
    # At most about 2 x (interval + overlap) turns' worth, each turn a prompt and a reply.
    assert max(sizes) <= 2 * (3 + 1) * 2, sizes
    assert "note: compacted turns 1-3 into a summary" in result.stdout + result.stderr
    last = conversation(chats(server)[-1])
    assert "Conversation so far (turns 1-" in str(last[0]["content"])


def test_without_compaction_requests_grow_to_the_tail_limit(env: Env, server: ChatServer) -> None:
    result = env.run(
        "--new",
        input=script(range(1, 31)),
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
    )
    assert result.returncode == 0, result.stderr
    sizes = [len(conversation(r)) for r in chats(server)]
    assert sizes[:3] == [1, 3, 5]
    assert max(sizes) == 41, "the 20-turn tail and the new prompt"


def test_with_compaction_off_the_oldest_turns_left_out_are_said_once(env: Env) -> None:
    """H91: with automatic compaction off, the tail's limits (20 turns here) left the
    oldest turns out of every request without a word."""
    from actors.turn_lines import TURNS_LEFT_OUT_LINE

    result = env.run(
        "--new",
        input=script(range(1, 24)),
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
    )
    assert result.returncode == 0, result.stderr
    assert (result.stdout + result.stderr).count(TURNS_LEFT_OUT_LINE) == 1


def test_the_offline_model_counts_the_turn_after_a_whole_compaction_once(env: Env) -> None:
    """The request after a compaction of every turn carries the last one again, whole: the
    offline model took it for a new turn and answered the next with "turn 5" (H115)."""
    long = "about the routing table and how we evaluate it " * 8  # sent again: smaller
    script = "".join(f"question {n}: {long}\n" for n in range(1, 4))
    result = env.run("--new", input=script + "/compact\n/resume\nfour\nfive\n")
    assert result.returncode == 0, result.stderr
    assert "Compacted turns 1-3" in result.stderr
    assert "Turn 3, the last of these, follows again word for word." in result.stderr
    assert '"four". (turn 4 of this conversation' in result.stdout
    assert '"five". (turn 5 of this conversation' in result.stdout


def test_a_resume_after_a_supervisor_restart_sends_what_was_sent_before(
    env: Env, server: ChatServer
) -> None:
    term = env.terminal()
    env.extra.update(AGENT_ASSIST_COMPACTION_INTERVAL="3", AGENT_ASSIST_COMPACTION_OVERLAP="1")
    first = env.run("--new", input=script(range(1, 9)), terminal=term)
    assert first.returncode == 0, first.stderr
    before_exit = conversation(chats(server)[-1])
    assert "Conversation so far (turns 1-6" in str(before_exit[0]["content"])
    assert env.run("supervisor", "stop").returncode == 0

    resumed = env.run("--yes", input="turn 9: where were we?\n", terminal=term)
    assert resumed.returncode == 0, resumed.stderr
    after_resume = conversation(chats(server)[-1])
    reply_8 = {"role": "assistant", "content": f"echo: turn 8: {TOPIC}"}
    assert after_resume[:-1] == [*before_exit, reply_8]
    assert after_resume[-1]["content"] == "turn 9: where were we?"


def test_slash_compact_then_the_summary_leads_the_next_request(
    env: Env, server: ChatServer
) -> None:
    result = env.run(
        "--new",
        input=script(range(1, 4)) + "/compact\nturn 4: and now?\n",
        terminal=env.terminal(),
    )
    assert result.returncode == 0, result.stderr
    assert "Compacted turns 1-3: ~" in result.stderr  # piped: command results on stderr
    (summary, again, reply, prompt) = conversation(chats(server)[-1])
    assert "Conversation so far (turns 1-3, compacted)" in str(summary["content"])
    assert again["content"] == f"turn 3: {TOPIC}"  # the last exchange, word for word
    assert reply["role"] == "assistant"
    assert prompt["content"] == "turn 4: and now?"


def test_secrets_in_compacted_decisions_never_reach_the_session_file(
    env: Env, server: ChatServer
) -> None:
    key = "sk-live-" + "ABCDEFGHIJKLMNOPQRSTUVWX1234"
    lines = [
        f"Decision: the staging deploy uses the key {key} for now. {TOPIC}",
        f"We decided to set the password=hunter2hunter2 on the admin page. {TOPIC}",
        *[f"turn {n}: {TOPIC}" for n in range(3, 7)],
    ]
    result = env.run(
        "--new",
        input="\n".join(lines) + "\n",
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
        AGENT_ASSIST_COMPACTION_OVERLAP="0",
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    saved = env.session(session_id)
    assert saved["compacted_history_summary"] is not None
    assert any("staging deploy uses the key" in d for d in saved["decisions"])
    text = (env.project / f"{session_id}.json").read_text()
    assert key not in text and "hunter2hunter2" not in text


def test_the_resume_offer_counts_the_compacted_turns_too(env: Env, server: ChatServer) -> None:
    """The offer's ``N turns`` is the whole conversation, not what is left after the
    boundary (a six-turn session was offered as one turn)."""
    term = env.terminal()
    first = env.run(
        "--new", input=script(range(1, 6)) + "/compact\nturn 6: and now?\n", terminal=term
    )
    assert first.returncode == 0, first.stderr
    offer = env.run(input="n\n", terminal=term)
    assert "  6 turns · summary: " in offer.stderr


def test_a_compaction_due_after_the_last_turn_is_kept_after_the_exit(env: Env) -> None:
    """It was dropped with the terminal: the file kept the summary of turns 1-2 and the
    tail of turns 3-4, and only the next run caught up."""
    result = env.run(
        "--new",
        input="a1\na2\na3\na4\n",
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
        AGENT_ASSIST_COMPACTION_OVERLAP="0",
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    wait_for(lambda: compacted_up_to(env, session_id) == 4, what="turns 1-4 compacted")


def run_with_summary_model(
    env: Env, turns: range, **extra: str
) -> subprocess.CompletedProcess[str]:
    """A piped run of a new session, one scripted turn each of ``turns``, with the test
    server's ``summary-model`` as the summary model (and ``extra`` in the environment
    from then on)."""
    env.extra.update(AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model", **extra)
    return env.run("--new", input=script(turns), terminal=env.terminal())


def summary_prompts(server: ChatServer) -> list[str]:
    return [
        str(r["messages"][-1]["content"])
        for r in server.requests
        if r["model"] == "summary-model"
        and str(r["messages"][-1]["content"]).startswith("Summarize this agent-design")
    ]


def live_after_one_turn(env: Env) -> tuple[Client, str]:
    """A chat with the test server's summary model, live after its first turn, and its
    session's id once the session's file has a summary."""
    client = env.spawn(
        "--new",
        terminal=env.terminal(),
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
    )
    client.send(f"turn 1: {TOPIC}")
    client.expect("turn 1")
    (session_id,) = env.session_ids()
    wait_for(lambda: env.session(session_id)["summary"], what="a summary in the file")
    return client, session_id


def test_the_summary_at_exit_is_asked_of_the_summary_model_once(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: every exit sent the same summary prompt twice (the one made a
    second after the last turn, and the exit's own)."""
    client, _ = live_after_one_turn(env)
    client.close_stdin()
    assert client.wait() == 0
    env.run("supervisor", "stop")  # what the exit asked for has been asked by now
    assert len(summary_prompts(server)) == 1, summary_prompts(server)


def test_the_exit_writes_a_summary_even_if_the_supervisor_stops_before_the_model_answers(
    env: Env, server: ChatServer
) -> None:
    """With a summary model slower than the exit's 10 s wait, the session kept no summary
    (and a stop right after the exit none either): the offline one now goes with the
    exit's own write."""
    server.hang_summaries = True
    result = run_with_summary_model(env, range(1, 2), AGENT_ASSIST_COMPACTION_INTERVAL="0")
    assert result.returncode == 0, result.stderr
    env.run("supervisor", "stop")
    (session_id,) = env.session_ids()
    assert "turn 1" in env.session(session_id)["summary"]


def test_a_summary_after_exit_cut_by_the_supervisors_stop_is_logged(
    env: Env, server: ChatServer
) -> None:
    """H190: the summary written after a chat's exit failed silently when the supervisor
    stopped before the summary model answered: nothing in supervisor.log said that the
    session kept the offline summary, or why."""
    server.hang_summaries = True
    result = run_with_summary_model(env, range(1, 2), AGENT_ASSIST_COMPACTION_INTERVAL="0")
    assert result.returncode == 0, result.stderr
    wait_for(lambda: summary_prompts(server), what="the summary asked of the model")
    assert env.run("supervisor", "stop").returncode == 0
    (session_id,) = env.session_ids()
    log = (env.runtime / "supervisor.log").read_text()
    assert (
        f"summary after exit of session {session_id} not written: the supervisor stopped "
        "before the summary model answered; the offline summary is kept"
    ) in log, log


def test_a_live_session_is_listed_with_the_offline_summary_while_the_model_writes_its_own(
    env: Env, server: ChatServer
) -> None:
    """A left-out of session 11: with a summary model, a live session was listed with no
    summary until the model answered (up to 30 s), or never while it hung."""
    server.hang_summaries = True
    client, session_id = live_after_one_turn(env)
    assert "turn 1" in env.session(session_id)["summary"]
    listed = json.loads(env.run("sessions", "--json").stdout)
    assert [item["state"] for item in listed] == ["live"]
    assert "turn 1" in listed[0]["summary"]
    client.close_stdin()
    assert client.wait() == 0


def held_at_the_tools_return(
    env: Env, server: ChatServer, message: str, terminal: Terminal | None = None
) -> Client:
    """A new piped chat that sent ``message``, whose tool has run: the model's answer to
    its return waits until ``server.tool_returns_go`` is set."""
    client = env.spawn("--new", terminal=terminal or env.terminal())
    server.tool_returns_go.clear()
    client.send(message)
    wait_for(
        lambda: any(r["messages"][-1]["role"] == "tool" for r in chats(server)),
        what="the tool's return at the model",
    )
    return client


def test_a_file_read_for_the_first_time_and_changed_during_the_turn_is_told(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack: an untracked file read by a turn and changed before the turn
    ended was never told (no watch yet), and the manifest took the new content silently:
    the model had been shown the old one."""
    (env.workspace / "r2.md").write_text("original\n")
    client = held_at_the_tools_return(env, server, "read: r2.md")
    with (env.workspace / "r2.md").open("a") as edit:
        edit.write("changed during the turn\n")
    server.tool_returns_go.set()
    client.expect("recorded")  # the reply to the read: the turn ended
    client.send("and now?")  # the notice is shown before the next message is sent
    client.expect("and now?")
    client.close_stdin()
    assert client.wait() == 0
    assert "note: r2.md changed outside agent-assist" in client.drain_stderr()
    last = chats(server)[-1]
    system = " ".join(str(m["content"]) for m in last["messages"] if m["role"] == "system")
    assert "changed outside the assistant since the last turn: r2.md" in system


def test_a_change_outside_carried_by_a_failed_request_is_carried_by_the_next(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack (H77): the note naming a file changed outside rode on a request
    whose reply failed (the connection dropped), and the next request said nothing: the
    model was never told, and the session kept the new digest as if it had been."""
    (env.workspace / "agent_spec.md").write_text("# spec\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("read: agent_spec.md")
    client.expect("recorded")
    with (env.workspace / "agent_spec.md").open("a") as edit:
        edit.write("edited by hand\n")
    outside_notices(client, "agent_spec.md", "No checkpoints")
    client.send("cut mid-reply")
    client.expect("dropped mid-reply", stderr=True)
    client.send("and now?")
    client.expect("and now?")
    client.close_stdin()
    assert client.wait() == 1  # the failed turn
    failed, last = chats(server)[-2:]
    assert conversation(failed)[-1]["content"] == "cut mid-reply"
    system = " ".join(str(m["content"]) for m in last["messages"] if m["role"] == "system")
    assert "changed outside the assistant since the last turn: agent_spec.md" in system


def test_a_file_changed_outside_while_a_turn_runs_is_told_then_not_after_it(
    env: Env, server: ChatServer
) -> None:
    """A helper's report (H45): DESIGN 6c asks for the notice within a second while the
    session is live, and it came only when the reply ended. A change at a path the turn is
    not writing is told at once; the turn's own write is still not told."""
    (env.workspace / "agent_spec.md").write_text("# spec\n")
    client = held_at_the_tools_return(env, server, "write: d/new.md: by the assistant")
    with (env.workspace / "agent_spec.md").open("a") as edit:
        edit.write("edited by hand while the turn runs\n")
    client.expect("note: agent_spec.md changed outside agent-assist", stderr=True)
    assert not any("recorded" in line for line in client.stdout_lines), "the turn still runs"
    server.tool_returns_go.set()
    client.expect("recorded")  # the turn ended
    client.send("and now?")
    client.expect("and now?")
    client.close_stdin()
    assert client.wait() == 0
    notes = [line for line in client.drain_stderr() if "changed outside" in line]
    assert notes == ["note: agent_spec.md changed outside agent-assist"], "once; d/new.md never"
    last = chats(server)[-1]
    system = " ".join(str(m["content"]) for m in last["messages"] if m["role"] == "system")
    assert "changed outside the assistant since the last turn: agent_spec.md" in system


def test_a_file_a_turn_made_and_changed_outside_before_the_turn_ended_is_told(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack: a file the turn created, edited by hand in the moment before
    the turn ended (no watch on it yet), was taken as the assistant's own: no notice, and
    the session file kept the edited content's digest, so the resume said nothing
    either."""
    client = held_at_the_tools_return(env, server, "write: d/new.md: by the assistant")
    with (env.workspace / "d" / "new.md").open("a") as edit:
        edit.write("and a line by hand\n")
    server.tool_returns_go.set()
    client.expect("recorded")  # the turn ended
    client.send("and now?")
    client.expect("and now?")
    client.close_stdin()
    assert client.wait() == 0
    assert "note: d/new.md changed outside agent-assist" in client.drain_stderr()
    system = server.system_text()
    assert "changed outside the assistant since the last turn: d/new.md" in system


def test_a_file_a_turn_made_and_changed_outside_is_drift_at_the_resume(
    env: Env, server: ChatServer
) -> None:
    """The same edit, and the chat ends before the model is told: the session file keeps
    what the model knows of the file (what it wrote), so the resume tells the change."""
    term = env.terminal()
    client = held_at_the_tools_return(env, server, "write: new.md: by the assistant", term)
    (env.workspace / "new.md").write_text("replaced by hand\n")
    server.tool_returns_go.set()
    client.expect("recorded")
    client.close_stdin()
    assert client.wait() == 0
    (session_id,) = env.session_ids()
    written = hashlib.sha256(b"by the assistant\n").hexdigest()
    assert env.session(session_id)["file_manifest"] == {"new.md": written}
    assert env.run("--yes", input="hi\n", terminal=term).returncode == 0
    assert "- new.md: modified" in server.system_text()


def test_a_compaction_running_at_exit_is_not_asked_of_the_model_again(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: the compaction due after the last turn was sent to the summary
    model twice (the exit asked for it again while the first request was running)."""
    server.summary_delay = 2.0
    result = run_with_summary_model(
        env,
        range(1, 3),
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
        AGENT_ASSIST_COMPACTION_OVERLAP="0",
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    wait_for(
        lambda: env.session(session_id)["compacted_history_summary"],
        timeout=30,
        what="the compaction written after the exit",
    )
    env.run("supervisor", "stop")
    prompts = [
        r for r in server.requests
        if r["model"] == "summary-model"
        and str(r["messages"][-1]["content"]).startswith("You compact the history")
    ]
    assert len(prompts) == 1, len(prompts)


def compacted_through_turn_4(env: Env, server: ChatServer) -> str:
    """A session whose turns 1-4 the summary model compacted (two windows of two), and
    whose file holds its summary; its id."""
    result = run_with_summary_model(
        env,
        range(1, 5),
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
        AGENT_ASSIST_COMPACTION_OVERLAP="0",
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    wait_for(
        lambda: compacted_up_to(env, session_id) == 4, timeout=30, what="turns 1-4 compacted"
    )
    env.run("supervisor", "stop")  # whatever the exit asked for has landed
    assert env.session(session_id)["summary"]
    return session_id


def test_the_summary_models_summary_covers_the_compacted_turns_too(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: with a summary model, the session's summary was asked of the
    turns in memory alone; after a compaction (or a resume) it covered the last turns
    and forgot what the compaction held."""
    session_id = compacted_through_turn_4(env, server)
    asked_before = len(summary_prompts(server))
    result = env.run("--resume", session_id, input=script(range(5, 6)))
    assert result.returncode == 0, result.stderr
    prompts = wait_for(  # the exit's summary: asked once the terminal has gone
        lambda: summary_prompts(server)[asked_before:],
        what="the new turn's summary asked of the summary model",
    )
    assert "[earlier summary]" in prompts[-1] and "turns 1-4" in prompts[-1], prompts[-1]
    assert "turn 5:" in prompts[-1]


def test_a_resume_without_a_turn_keeps_the_summary_as_it_was(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: resuming and leaving at once asked for the summary again, of no
    turns; the summary model's empty answer made it fail (and be left out for 300 s)
    and the offline summary of nothing replaced the session's own."""
    session_id = compacted_through_turn_4(env, server)
    summary = env.session(session_id)["summary"]
    asked_before = len(summary_prompts(server))
    result = env.run("--resume", session_id, input="")
    assert result.returncode == 0, result.stderr
    env.run("supervisor", "stop")
    assert env.session(session_id)["summary"] == summary
    assert summary_prompts(server)[asked_before:] == []


def test_a_failing_summary_model_is_told_once_and_compact_says_who_wrote_the_summary(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: with the summary model down, the offline summarizer stood in
    silently (for every terminal, for 300 s) and /compact reported a plain success."""
    server.fail_summaries = True
    result = env.run(
        "--new",
        input=script(range(1, 3)) + "/compact\nturn 3: go on\n/compact\n",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
    )
    assert result.returncode == 0, result.stderr
    assert "Compacted turns 1-2 by the offline summarizer:" in result.stderr, result.stderr
    assert "Compacted turns 1-3 by the offline summarizer:" in result.stderr, result.stderr
    warnings = [
        line for line in result.stderr.splitlines()
        if line.startswith("warning: the summary model at ")
    ]
    assert len(warnings) == 1, result.stderr
    assert f"at {server.base_url} failed (" in warnings[0], "where it was asked (H66)"
    assert "down for maintenance" in warnings[0]
    assert warnings[0].endswith("; offline summaries for 5 min")


def test_compact_waiting_for_a_slow_summary_model_says_so(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: /compact with a slow summary model held the terminal for up to
    15 s with no line."""
    server.summary_delay = 2.0
    result = env.run(
        "--new",
        input=script(range(1, 2)) + "/compact\n",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    waiting = lines.index(
        "note: compacting (waiting for the summary model, up to 15 s, then offline)"
    )
    assert lines[waiting + 1].startswith("Compacted turn 1: ~"), lines


def test_compact_while_the_windows_compaction_runs_compacts_once(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: /compact right when the window's compaction was due waited for
    that one (the same window) and told it, and then the background's answer, the same
    compaction, was told again as a second one: "(~44 -> ~44 tokens)"."""
    server.summary_delay = 1.0
    result = env.run(
        "--new",
        input=script(range(1, 3)) + "/compact\n",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
        AGENT_ASSIST_COMPACTION_OVERLAP="1",
    )
    assert result.returncode == 0, result.stderr
    told = [line for line in result.stderr.splitlines() if "ompacted turns 1-2" in line]
    assert len(told) == 1 and told[0].startswith("Compacted turns 1-2: ~"), result.stderr


def test_a_compaction_note_that_comes_while_a_reply_streams_waits_for_its_end(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: the note of the compaction done after turn 1 came in the middle
    of turn 2's reply, which it cut in two lines on stdout."""
    server.chunk_delay = 0.02  # turn 2's reply streams for about 4 s
    server.summary_delay = 0.5  # turn 1's compaction ends while it streams
    result = env.run(
        "--new",
        input=script(range(1, 2)) + "be slow please\n",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="1",
        AGENT_ASSIST_COMPACTION_OVERLAP="0",
    )
    assert result.returncode == 0, result.stderr
    slow = [line for line in result.stdout.splitlines() if "word" in line]
    assert len(slow) == 1 and slow[0].startswith("word0") and slow[0].endswith("word199")
    assert "note: compacted turn 1 into a summary" in result.stderr


def edited_while_no_supervisor_runs(env: Env, server: ChatServer, client: Client) -> str:
    """Kill the supervisor and its heir, edit notes.md by hand, send one message and end
    the chat: the system text of that message's request."""
    env.kill_supervisor_and_heir()
    (env.workspace / "notes.md").write_text("v2, by hand while no supervisor ran\n")
    client.send("after the crash")
    client.expect("echo: after the crash")
    client.close_stdin()
    assert client.wait() == 0
    return server.system_text()


def test_a_session_going_on_after_the_supervisor_died_is_not_told_as_resumed(
    env: Env, server: ChatServer
) -> None:
    """A helper's report: after a kill -9 of the supervisor, a session the user never
    left (a new one) was put to the model as "a resumed session" with a summary of the
    very history the request carried. What changed while nobody watched is told as a
    change outside, as a live session's is."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write: notes.md: v1")
    client.expect("recorded")
    assert "# Resumed Session Context" not in server.system_text()
    system = edited_while_no_supervisor_runs(env, server, client)
    assert "# Resumed Session Context" not in system
    assert "changed outside the assistant since the last turn: notes.md" in system
    assert "note: notes.md changed outside agent-assist" in client.drain_stderr()


def test_a_resumed_session_keeps_its_resume_context_after_the_supervisor_died(
    env: Env, server: ChatServer
) -> None:
    """Its context is rebuilt from the file; what changed while no supervisor ran is told
    as a change outside, once, not also in that context (a helper's attack: told in both;
    H49's: a file the first resume had named "modified", changed again, was not told)."""
    term = env.terminal()
    assert env.run("--new", input="write: notes.md: v1\n", terminal=term).returncode == 0
    client = env.spawn("--yes", terminal=term)
    client.send("resumed")
    client.expect("echo: resumed")
    assert "# Resumed Session Context" in server.system_text()
    system = edited_while_no_supervisor_runs(env, server, client)
    assert "# Resumed Session Context" in system
    assert "- notes.md: modified" not in system
    assert "changed outside the assistant since the last turn: notes.md" in system
    told = client.drain_stderr()
    assert told.count("note: notes.md changed outside agent-assist") == 1, told


def test_a_restored_session_keeps_its_checkpoints_context_after_the_supervisor_died(
    env: Env, server: ChatServer
) -> None:
    """A helper's attack: after /checkpoint N and a supervisor's death, the model was told
    of "a resumed session" instead of the conversation taken back to checkpoint N."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("first")
    client.expect("echo: first")
    client.send("/save")
    client.expect("saved as checkpoint 1.", stderr=True)
    client.send("second")
    client.expect("echo: second")
    client.send("/checkpoint 1")
    client.expect("Restored the conversation to checkpoint 1", stderr=True)
    env.kill_supervisor_and_heir()
    client.send("after the crash")
    client.expect("echo: after the crash")
    client.close_stdin()
    assert client.wait() == 0
    system = server.system_text()
    assert "# Restored Checkpoint Context" in system, system
    assert "# Resumed Session Context" not in system


def test_the_token_budget_compacts_turns_whose_tool_calls_reuse_one_id(env: Env) -> None:
    """The offline model (like many local servers) gives every tool call the same id: each
    cut was taken for one splitting a call from its return, and a session over its token
    budget never compacted."""
    choice = "route tickets through the small model first then escalate " * 10
    env.run(
        "--new",
        input="".join(f"decide choice {n}: {choice}\n" for n in range(12)),
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="100",
        AGENT_ASSIST_CONTEXT_TOKENS="2000",
    )
    (session_id,) = env.session_ids()
    assert compacted_up_to(env, session_id) >= 9


def test_slash_resume_shows_the_rules_and_the_compaction_as_the_model_is_sent_them(
    env: Env,
) -> None:
    """A helper's report: /resume showed every rule and decision (~6,000 tokens) where the
    model was sent the compaction held to its share of a 1,000-token budget (2,000 since
    H153: the smallest allowed)."""
    rule = "keep the customer tone friendly and concise and polite " * 2
    script = "".join(f"always follow rule number {n}: {rule}\n" for n in range(40))
    result = env.run(
        "--new",
        input=script + "/compact\n/resume\n",
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="100",
        AGENT_ASSIST_CONTEXT_TOKENS="2000",  # the smallest allowed (H153)
    )
    assert result.returncode == 0, result.stderr
    shown = result.stderr.split("## The user's rules", 1)[1]
    rules, compacted = shown.split("# Compacted history (sent first in every request, ~", 1)
    assert "more, kept in the session file, left out here for the token budget" in rules
    # H153: the first rules stay with the newest; those between give way
    assert "rule number 39:" in rules and "rule number 0:" in rules
    assert "rule number 20:" not in rules
    assert int(compacted.split(" ", 1)[0]) <= 2000
    assert "User rules (always follow them):" not in compacted, "rules go as instructions"


def test_the_note_on_many_files_changed_outside_stays_short(env: Env, server: ChatServer) -> None:
    """A helper's report: after ``rm -rf`` of a tree, the next request's note named all
    161 files with their paths (the context went from 3,647 to 8,540 tokens)."""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(30):
        (templates / f"t{n:02}.md").write_text(f"template {n}\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect("echo: hello")
    for n in range(30):
        (templates / f"t{n:02}.md").write_text(f"template {n}, edited by hand\n")
    seen: list[str] = []
    for turn in range(50):  # a piped chat shows notices when it sends the next message
        client.send(f"ping {turn}")
        client.expect(f"echo: ping {turn}")
        seen += client.drain_stderr()
        if any("more tracked files changed outside agent-assist" in line for line in seen):
            break  # the first twenty have a line each, the rest of the flood one line
    client.send("after the notices")  # the request after them carries the note
    client.expect("echo: after the notices")
    client.close_stdin()
    assert client.wait() == 0
    notes = [
        text
        for index in range(len(chats(server)))
        if "changed outside the assistant" in (text := server.system_text(index))
    ]
    assert notes, "the note reached the model"
    assert "since the last turn: templates/t00.md, templates/t01.md," in notes[-1]
    assert "templates/t19.md and 10 more (under templates/)." in notes[-1]
    assert "templates/t20.md" not in notes[-1]


def test_a_window_that_backed_off_leaves_the_token_budget_on(env: Env, server: ChatServer) -> None:
    """A helper's find: the first window's summary was no shorter than its three short
    turns (rules, paths and a decision kept), the window backed off six turns, and the
    token budget with it: requests grew to five times the budget, untold."""
    first = [
        "From now on, always answer in French.",
        "Please check src/app/main.py and docs/spec.md.",
        "Decision: we use Redis for the cache.",
    ]
    long = [f"part {n}: " + "the routing table needs more rows " * 40 for n in range(6)]
    result = env.run(
        "--new",
        input="".join(f"{line}\n" for line in first + long),
        terminal=env.terminal(),
        AGENT_ASSIST_CONTEXT_TOKENS="2000",  # the smallest allowed (H153)
        AGENT_ASSIST_COMPACTION_INTERVAL="3",
        AGENT_ASSIST_COMPACTION_OVERLAP="1",
    )
    assert result.returncode == 0, result.stderr
    sizes = [len(json.dumps(conversation(r))) for r in chats(server)]
    assert len(sizes) == 9
    turn_chars = 2 * len(long[0]) + 200  # a long prompt and its echo, with their framing
    assert max(sizes) <= 2000 * 4 + turn_chars, sizes


def test_with_compaction_off_the_summary_models_request_keeps_to_the_token_budget(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H52): with compaction off, the listing summary's request held every
    turn in memory (80): 53 KB against a 2,500-token budget. It holds the newest whole
    turns within the budget; the earlier summary stands for the rest."""
    long_turns = "".join(f"turn {n}: {TOPIC} " * 4 + "\n" for n in range(1, 31))
    env.extra.update(
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
        AGENT_ASSIST_CONTEXT_TOKENS="2500",
    )
    result = env.run("--new", input=long_turns, terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    # A piped burst has no pause for the summary: it is asked after the exit's write.
    wait_for(lambda: summary_prompts(server), what="the summary model asked after the exit")
    prompts = summary_prompts(server)
    from actors.compaction import SUMMARY_TEMPLATE

    room = 2500 * 4 + len(SUMMARY_TEMPLATE) + 2_000  # the earlier summary's few lines too
    assert max(map(len, prompts)) <= room, [len(p) for p in prompts]


def test_a_tab_reopened_right_after_its_chat_was_killed_during_a_compaction_is_answered(
    env: Env, server: ChatServer
) -> None:
    """A helper's report (H60): kill -9 of a chat whose /compact waited for a hung summary
    model, then agent-assist again in that tab: "the supervisor does not answer: it is
    stopped or hung (kill it)", of a supervisor that answered everyone else. (The
    reopened chat may still find the killed one closing for a moment: it waits, saying
    so; since H84 the closing no longer waits for the compaction.)"""
    server.hang_summaries = True
    env.extra.update(
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_CONTROL_TIMEOUT_S="2",
    )
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    client.send(f"turn 1: {TOPIC}")
    client.expect("turn 1")
    client.send("/compact")
    wait_for(
        lambda: any(r["model"] == "summary-model" for r in server.requests[1:]),
        what="the compaction's summary asked for",
    )
    client.kill9()
    again = env.spawn("--yes", terminal=tab)
    again.send("and now?")
    again.expect("echo: and now?", timeout=40)
    again.close_stdin()
    assert again.wait() == 0
    assert not any("does not answer" in line for line in again.drain_stderr())


def test_a_compact_the_supervisor_died_during_is_sent_again_to_the_heir(
    env: Env, server: ChatServer
) -> None:
    """H79's find: a command the supervisor died before answering (``kill -9`` as it ran)
    was `error: /compact was interrupted; please run it again`, though the heir took over
    at once; a message is sent again. A command that changes nothing twice is too."""
    server.hang_summaries = True
    client = env.spawn(
        "--new", terminal=env.terminal(), AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model"
    )
    client.send(f"turn 1: {TOPIC}")
    client.expect("turn 1")
    heir = wait_for(env.heir_pid, what="the heir")
    client.send("/compact")
    client.expect("note: compacting", stderr=True)  # it waits for the summary model
    server.hang_summaries = False  # the heir's summary model answers
    supervisor = env.supervisor_pid()
    assert supervisor is not None and supervisor != heir
    os.kill(supervisor, signal.SIGKILL)
    client.expect("Compacted turn", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    assert not any("interrupted" in line for line in client.drain_stderr())


def compact_waiting_for_a_hung_summary_model(
    env: Env, server: ChatServer, tab: Terminal | None = None
) -> Client:
    """A new piped chat after one turn, whose /compact waits for a summary model that
    hangs (told: ``note: compacting``)."""
    server.hang_summaries = True
    env.extra.update(AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model")
    client = env.spawn("--new", terminal=tab or env.terminal())
    client.send(f"turn 1: {TOPIC}")
    client.expect("turn 1")
    client.send("/compact")
    client.expect("note: compacting", stderr=True)
    return client


def test_a_supervisor_stopped_while_compact_waits_for_the_summary_model_stops_at_once(
    env: Env, server: ChatServer
) -> None:
    """H84's find: the stop's word to the chat was set aside while the TerminalActor read
    its mailbox for the compaction's answer, so `supervisor stop` during a /compact that
    waited for a hung summary model took the summary model's 15 s (the chat, too)."""
    client = compact_waiting_for_a_hung_summary_model(env, server)
    stop = env.run("supervisor", "stop", timeout=8)  # not after the summary model's 15 s
    assert stop.returncode == 0, stop.stderr
    client.close_stdin()  # piped, the stop is read before the next line
    client.expect("the supervisor was stopped", stderr=True)
    client.wait()
    (session_id,) = env.session_ids()
    assert "turn 1" in json.dumps(env.session(session_id)["recent_messages"])


def test_a_change_outside_while_compact_waits_is_told_within_a_second(
    env: Env, server: ChatServer
) -> None:
    """H84: a tracked file changed while /compact waited for a hung summary model was told
    only once the wait ended (its 15 s); DESIGN asks for a notice within a second."""
    (env.workspace / "agent_spec.md").write_text("# v1\n")  # tracked: it exists
    client = compact_waiting_for_a_hung_summary_model(env, server)
    (env.workspace / "agent_spec.md").write_text("# edited in an editor\n")
    client.expect("note: agent_spec.md changed outside agent-assist", stderr=True, timeout=5)
    client.kill9()


def test_a_chat_killed_while_compact_waits_leaves_its_tab_free_at_once(
    env: Env, server: ChatServer
) -> None:
    """H84's find: kill -9 of a chat whose /compact waited for a hung summary model held
    its tab for the summary model's 15 s (`the supervisor is still closing this tab's
    previous agent-assist; waiting`): the hang-up was set aside behind the compaction."""
    tab = env.terminal()
    client = compact_waiting_for_a_hung_summary_model(env, server, tab)
    client.kill9()
    wait_for(env.session_ids, what="the session saved")
    wait_for(
        lambda: [s["state"] for s in env.sessions_json()] == ["idle"],
        timeout=8,  # not after the summary model's 15 s
        what="the killed chat's session released",
    )
    again = env.spawn("--yes", terminal=tab)
    again.send("and now?")
    again.expect("echo: and now?", timeout=5)
    again.close_stdin()
    assert again.wait() == 0
    assert not any("still closing" in line for line in again.drain_stderr())


RULED = (
    "Always write specs in docs/spec.md. The agent triages tickets. "
    + "We discuss the ticket flow and its queues in depth. " * 12
)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "   \n ",
        "I cannot help with that.",
        "I'm sorry, but I can't assist with that request.",
        "N/A",
        "...",
        "Here is the summary:",
        "Summary: N/A",
        "**Summary:**\n\nNone.",
    ],
)
def test_a_garbage_answer_of_the_summary_model_is_replaced_by_the_offline_summary(
    env: Env, server: ChatServer, garbage: str
) -> None:
    """A helper's attack: an answer of whitespace skipped the compaction ("the summarizer
    skipped it"), and a refusal became the compaction's narrative and the session's
    summary (listed, and told to the resumed model as its previous session's)."""
    server.summary_answer = garbage
    result = env.run(
        "--new",
        input=f"{RULED}\nNever use regex routing in src/router.py. {RULED}\nthird\n/compact\n",
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
    )
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 1 and "; offline summaries for " in warnings[0]
    assert "Compacted turns 1-3 by the offline summarizer" in result.stderr
    (session_id,) = env.session_ids()
    compacted = env.session(session_id)["compacted_history_summary"]
    assert "Started with: Always write specs in docs/spec.md." in compacted
    assert "- Never use regex routing in src/router.py." in compacted
    summary = env.settled(session_id).read_text()
    if garbage.strip():
        assert garbage.strip() not in summary


def test_a_summary_over_the_cap_replaced_by_the_offline_one_is_told_once(
    env: Env, server: ChatServer
) -> None:
    """An attack (H177): a summary model answering every compaction at length (over
    ``MAX_LLM_NARRATIVE_CHARS``, as a model that ignores "at most 12 short lines" does)
    had each of its summaries replaced by the offline summarizer's without a word: the
    user read "note: compacted turns 1-2 into a summary" and never learned the summary
    model they set wrote none of them. One warning says so, as for a summary too long
    to make the request smaller."""
    from actors.compaction import TOO_LONG_BECAUSE
    from session.compaction import MAX_LLM_NARRATIVE_CHARS

    server.summary_answer = "The user and the assistant discussed the triage agent. " * (
        MAX_LLM_NARRATIVE_CHARS // 40
    )
    result = env.run(
        "--new",
        input="".join(f"{RULED} Turn {n}.\n" for n in range(1, 7)),
        terminal=env.terminal(),
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
    )
    assert result.returncode == 0, result.stderr
    assert "note: compacted turns 1-2 into a summary" in result.stderr, result.stderr
    warnings = [line for line in result.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [f"warning: {TOO_LONG_BECAUSE}"], result.stderr


def test_slash_resume_after_compact_shows_that_the_last_turn_follows_again(env: Env) -> None:
    """/resume shows the compacted history as the model is sent it: after a /compact that
    took every turn, the request's summary ends saying its last turn follows again word for
    word (and carries it); /resume showed the summary without that line."""
    questions = "".join(
        f"question {n}: {'about the routing table and how we evaluate it ' * 8}\n"
        for n in range(1, 5)
    )  # long enough that the request stays smaller with the last turn sent again
    result = env.run("--new", input=questions + "/compact\n/resume\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    shown = result.stderr.split("# Compacted history (sent first in every request, ~", 1)[1]
    assert "Turn 4, the last of these, follows again word for word." in shown


def test_compaction_after_every_turn_is_told_once_not_every_turn(env: Env) -> None:
    """H131: with AGENT_ASSIST_COMPACTION_INTERVAL=1, every turn printed a line of its own,
    "note: compacted turns 1-N into a summary (~A -> ~B tokens)": a recurring condition,
    told once a chat for each trigger (the sliding window, the token budget)."""
    result = env.run(
        "--new",
        input=script(range(1, 7)),
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="1",
        AGENT_ASSIST_COMPACTION_OVERLAP="0",
    )
    assert result.returncode == 0, result.stderr
    notes = [line for line in result.stderr.splitlines() if line.startswith("note: compacted")]
    assert len(notes) == 1 and notes[0].startswith("note: compacted turn 1 "), result.stderr
    assert compacted_up_to(env, env.sessions_json()[0]["session_id"]) == 6


def test_a_piped_run_ending_before_its_compaction_fails_is_told_the_summary_model_failed(
    env: Env, server: ChatServer
) -> None:
    """A piped run ended (its session saved, its line said) while the compaction due after
    its last turn still waited for the summary model, whose failure came after: the user
    who pipes never learned that summaries fell back to the offline summarizer."""
    server.summary_delay = 0.5  # the compaction is in flight when the input ends
    server.fail_summaries = True
    result = env.run(
        "--new",
        input=script(range(1, 3)),
        AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model",
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
    )
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()
    warnings = [i for i, line in enumerate(lines) if line.startswith("warning: the summary model")]
    saved = [i for i, line in enumerate(lines) if line.startswith("Session ")]
    assert len(warnings) == 1, result.stderr
    assert "down for maintenance" in lines[warnings[0]]
    assert warnings[0] < saved[-1], "told before the exit's last line"
