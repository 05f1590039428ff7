"""The last message a user typed is never lost without a word (H125): a turn whose
terminal went away is let finish and saved; a turn that failed keeps the message with a
``[no reply: ...]`` marker, and the resume offer and the resume context say so."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, UserPromptPart

from session.history import dump_messages
from session.interrupted import unanswered_turn
from session.manager import SessionManager
from session.models import SessionState, utc_now
from session.unanswered import NO_REPLY_PREFIX
from tests.e2e.harness import Env, wait_for
from tests.e2e.openai_server import ChatServer

UNANSWERED = '  last message unanswered: "refuse: the triage rules"'


def answered_turn(text: str) -> tuple[ModelRequest, ModelResponse]:
    return ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart("ok")])


def _saved(env: Env) -> list[dict[str, Any]]:
    ids = env.session_ids()
    return list(env.session(ids[0])["recent_messages"]) if ids else []


def test_a_turn_whose_terminal_was_killed_is_finished_and_kept(
    env: Env, streaming_server: ChatServer
) -> None:
    """kill -9 of the terminal while the reply streams: the reply is the model's call
    under way and nobody asked it to stop; it was cut and the message lost."""
    terminal = env.terminal()
    client = env.spawn("--new", terminal=terminal)
    client.send("hello")
    client.expect("echo: hello")
    client.send("be slow please")
    wait_for(
        lambda: any("slow" in str(r["messages"][-1]) for r in streaming_server.requests),
        what="the slow reply asked for",
    )
    client.kill9()
    wait_for(lambda: "word199" in str(_saved(env)), what="the whole reply saved", timeout=60)
    assert "be slow please" in str(_saved(env))
    again = env.spawn(terminal=terminal)
    again.expect("Resume previous session? [Y/n]", stderr=True)
    again.send("y")
    again.send("what now?")
    again.expect("echo: what now?")
    again.close_stdin()
    assert again.wait() == 0
    assert not any("unanswered" in line for line in again.drain_stderr())
    request = streaming_server.requests[-1]
    sent = [m["content"] for m in request["messages"] if m["role"] != "system"]
    assert sent[2] == "be slow please" and sent[3].endswith("word199"), sent


def test_a_failed_turn_is_kept_unanswered_and_the_resume_says_so(
    env: Env, streaming_server: ChatServer
) -> None:
    """The model's error dropped the turn whole: the user's message was in neither the
    session nor the offer, and the next run's model never heard of it."""
    terminal = env.terminal()
    client = env.spawn("--new", terminal=terminal)
    client.send("hello")
    client.expect("echo: hello")
    client.send("refuse: the triage rules")
    client.expect("marked unanswered", stderr=True)
    client.close_stdin()
    assert client.wait() == 1  # piped: a failed message fails the run
    saved = _saved(env)
    assert saved[-2]["parts"][0]["content"] == "refuse: the triage rules"
    assert saved[-1]["parts"][0]["content"].startswith(NO_REPLY_PREFIX)
    again = env.spawn(terminal=terminal)
    offer = again.expect("Resume previous session? [Y/n]", stderr=True)
    assert UNANSWERED in again.drain_stderr() or UNANSWERED in offer
    again.send("y")
    again.send("go on")
    again.expect("echo: go on")
    again.close_stdin()
    assert again.wait() == 0
    request = streaming_server.requests[-1]
    assert "## Last Message Unanswered" in streaming_server.system_text()
    sent = [m["content"] for m in request["messages"] if m["role"] != "system"]
    assert sent[:3] == ["hello", "echo: hello", "refuse: the triage rules"], sent
    assert sent[3].startswith(NO_REPLY_PREFIX) and sent[4] == "go on", sent


def _files(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in sorted(directory.iterdir())}


def test_the_listing_and_show_say_the_last_message_went_unanswered(env: Env) -> None:
    """H132: ``sessions --json`` and ``sessions show`` did not tell it; the resume offer
    alone did. The JSON gives its first words as the offer does (null when answered), read
    from the headers as the summary is, and the listing still changes no file."""
    manager = SessionManager(env.project)
    long = "refuse: " + " ".join(f"rule{n}" for n in range(40))
    for text, reason in (("fine", None), (long, "the model failed")):
        turn = unanswered_turn(text, reason) if reason else answered_turn(text)
        state = SessionState.new(utc_now()).model_copy(
            update={"recent_messages": dump_messages(turn), "summary": text}
        )
        manager.save(state)
    env.sessions_json()  # the headers' index written once, as any first listing does
    before = _files(env.project)
    rows = {row["summary"][:4]: row for row in env.sessions_json()}
    assert rows["fine"]["unanswered"] is None
    first_words = rows["refu"]["unanswered"]
    assert first_words.startswith("refuse: rule0 rule1") and first_words.endswith("…")
    assert len(first_words) == 50  # as the offer at 80 columns: 50 of them
    shown = env.run("sessions", "show", rows["refu"]["session_id"])
    assert shown.returncode == 0, shown.stderr
    assert f'Unanswered   "{first_words}"' in shown.stdout.splitlines()
    fine = env.run("sessions", "show", rows["fine"]["session_id"])
    assert "Unanswered" not in fine.stdout
    assert _files(env.project) == before


def test_a_resume_by_yes_says_the_last_message_went_unanswered(env: Env) -> None:
    """``--yes`` resumes without the offer, and the offer was the only place a chat said
    that the session's last message got no reply (H176): a script resumed it without a
    word, and its user never knew to send the message again."""
    turn = unanswered_turn("refuse: the triage rules", "the model failed")
    state = SessionState.new(utc_now()).model_copy(
        update={"recent_messages": dump_messages(turn), "summary": "triage"}
    )
    SessionManager(env.project).save(state)
    done = env.run("--yes", input="go on\n")
    assert done.returncode == 0, done.stderr
    assert (
        f'note: resuming session {state.session_id}; its last message got no reply: '
        '"refuse: the triage rules"'
    ) in done.stderr.splitlines(), done.stderr
    answered = env.run("--yes", input="and now?\n")
    assert answered.returncode == 0, answered.stderr
    assert "got no reply" not in answered.stderr  # "go on" was answered


def test_a_resume_by_yes_names_a_long_unanswered_message_by_its_first_words(
    env: Env,
) -> None:
    """H178's find: ``--yes``'s note printed the whole message, a 10 KB paste over lines
    of its own (its newlines kept); the offer it stands for says its first words, on one
    line, and so does the note now."""
    text = "line one of a long paste\nline two\n" + "word " * 2000
    turn = unanswered_turn(text, "the model failed")
    state = SessionState.new(utc_now()).model_copy(
        update={"recent_messages": dump_messages(turn), "summary": "triage"}
    )
    SessionManager(env.project).save(state)
    done = env.run("--yes", input="go on\n")
    assert done.returncode == 0, done.stderr
    (note,) = [line for line in done.stderr.splitlines() if "got no reply" in line]
    assert note.startswith(
        f'note: resuming session {state.session_id}; its last message got no reply: '
        '"line one of a long paste line two word word'
    ), note
    assert note.endswith('…"') and len(note) < 160, note


def test_a_resume_by_id_says_the_last_message_went_unanswered(env: Env) -> None:
    """``--resume ID`` (with or without ``--yes``) shows no offer either, and said nothing
    of a last message that got no reply (H190): it says it as ``--yes`` does, whether the
    supervisor was started by this chat (its front door opens the session) or ran
    already."""
    turn = unanswered_turn("refuse: the triage rules", "the model failed")
    state = SessionState.new(utc_now()).model_copy(
        update={"recent_messages": dump_messages(turn), "summary": "triage"}
    )
    SessionManager(env.project).save(state)
    note = (
        f'note: resuming session {state.session_id}; its last message got no reply: '
        '"refuse: the triage rules"'
    )
    for flags in (("--resume", state.session_id), ("--resume", state.session_id, "--yes")):
        done = env.run(*flags)  # no message: the session stays unanswered
        assert done.returncode == 0, done.stderr
        assert done.stderr.splitlines().count(note) == 1, (flags, done.stderr)
    assert env.run("supervisor", "stop").returncode == 0
    started = env.run("--resume", state.session_id, "--yes")  # the front door's open
    assert started.returncode == 0, started.stderr
    assert started.stderr.splitlines().count(note) == 1, started.stderr
