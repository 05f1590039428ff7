"""The turn of a terminal gone (kill -9, a closed window) is let finish and saved (H125);
its untested paths: a tool call after the kill, the session taken up while the turn
finishes (same tab, new tab, ``--resume``, two tabs racing, Ctrl+C; the reply waited for
shown, H143), a supervisor crash after an unanswered message, and the finish wait's cap."""

from __future__ import annotations

import json
import signal
from typing import Any

from session.last_reply import UNANSWERED_LINE
from session.leaving import WAITING_FOR_LAST_REPLY
from session.unanswered import NO_REPLY_PREFIX, unanswered_message
from tests.e2e.harness import Client, Env, Terminal, wait_for
from tests.e2e.openai_server import ChatServer


def _saved(env: Env) -> list[dict[str, Any]]:
    ids = env.session_ids()
    return list(env.session(ids[0])["recent_messages"]) if ids else []


def _last_text(env: Env) -> str | None:
    saved = _saved(env)
    return str(saved[-1]["parts"][0]["content"]) if saved else None


def _attached(env: Env) -> int:
    result = env.run("supervisor", "status", "--json")
    count: int = json.loads(result.stdout)["terminals"]
    return count


def _asked(server: ChatServer, content: str) -> None:
    wait_for(
        lambda: any(r["messages"][-1].get("content") == content for r in server.requests),
        what=f"{content!r} at the model",
    )


def _killed_during(env: Env, server: ChatServer, message: str, tab: Terminal) -> Client:
    """A chat in ``tab`` killed (-9) while the model works on ``message``, once the
    supervisor saw its connection end."""
    client = env.spawn("--new", terminal=tab)
    client.send("hello")
    client.expect("echo: hello")
    client.send(message)
    _asked(server, message)
    client.kill9()
    wait_for(lambda: _attached(env) == 0, what="the supervisor to see the terminal gone")
    return client


def test_a_tool_call_after_the_terminal_was_killed_does_not_run(
    env: Env, streaming_server: ChatServer
) -> None:
    """The model's tool call comes after the kill: nobody would see its line, so the
    tool does not run (no decision recorded); the message is kept, marked unanswered."""
    streaming_server.tool_calls_go.clear()
    _killed_during(env, streaming_server, "decide: route with a small model", env.terminal())
    streaming_server.tool_calls_go.set()
    gone = f"{NO_REPLY_PREFIX}the terminal went away before the reply's tools could run]"
    wait_for(lambda: _last_text(env) == gone, what="the turn's end saved")
    (session_id,) = env.session_ids()
    saved = env.session(session_id)
    assert "route with a small model" not in saved["decisions"], "the tool ran"
    assert unanswered_message(saved["recent_messages"]) == "decide: route with a small model"
    assert not any(r["messages"][-1]["role"] == "tool" for r in streaming_server.requests)


def test_a_hung_reply_of_a_terminal_gone_is_cut_at_the_finish_wait(
    env: Env, streaming_server: ChatServer
) -> None:
    """``AGENT_ASSIST_FINISH_WAIT_S`` caps the wait (300 s was fixed): a model that
    never answers is cut at the cap and the message kept, marked unanswered."""
    env.extra["AGENT_ASSIST_FINISH_WAIT_S"] = "2"
    _killed_during(env, streaming_server, "hang", env.terminal())
    cut = f"{NO_REPLY_PREFIX}the chat ended before the reply]"
    wait_for(lambda: _last_text(env) == cut, what="the cut at the cap")
    assert unanswered_message(_saved(env)) == "hang"
    assert [row["state"] for row in env.sessions_json()] != ["live"]


def test_a_message_whose_terminal_and_supervisor_died_is_offered_and_answered_once(
    env: Env, streaming_server: ChatServer
) -> None:
    """kill -9 of the terminal while the model works, then of the supervisor (and its
    heir) before the reply ended: the message was lost without a word (the turn was only
    in memory, and no terminal was left to send it again). It is saved, marked
    unanswered, as soon as its terminal is gone: the next chat's offer names it, and
    sending it again gets one answer."""
    tab = env.terminal()
    _killed_during(env, streaming_server, "hang mid-reply once", tab)
    wait_for(
        lambda: unanswered_message(_saved(env)) == "hang mid-reply once",
        what="the message kept while its turn finishes",
    )
    env.kill_supervisor_and_heir()
    again = env.spawn(terminal=tab)
    again.expect("Resume previous session? [Y/n]", stderr=True)
    assert '  last message unanswered: "hang mid-reply once"' in again.drain_stderr()
    again.send("y")
    again.send("hang mid-reply once")
    again.expect("echo: hang mid-reply once")
    again.close_stdin()
    assert again.wait() == 0
    texts = [
        part["content"]
        for message in _saved(env)
        for part in message["parts"]
        if part["part_kind"] in ("user-prompt", "text")
    ]
    assert texts[2:] == [
        "hang mid-reply once",
        f"{NO_REPLY_PREFIX}the terminal went away; the supervisor stopped before the reply "
        "ended]",
        "hang mid-reply once",
        "echo: hang mid-reply once",
    ], texts


def _texts(env: Env) -> list[str]:
    return [
        part["content"]
        for message in _saved(env)
        for part in message["parts"]
        if part["part_kind"] in ("user-prompt", "text")
    ]


def _held_mid_reply(env: Env, server: ChatServer, tab: Terminal) -> str:
    """A chat in ``tab`` killed (-9) while the reply to ``be thorough`` waits before its
    last word (``server.reply_ends_go``); returns the session's id."""
    server.reply_ends_go.clear()
    _killed_during(env, server, "be thorough", tab)
    wait_for(
        lambda: unanswered_message(_saved(env)) == "be thorough",
        what="the message kept while its turn finishes",
    )
    (session_id,) = env.session_ids()
    return session_id


def _first_of(client: Client, *needles: str) -> str:
    """The first stderr line of ``client`` that holds one of ``needles``."""
    while True:
        line = client.expect("", stderr=True)
        if any(needle in line for needle in needles):
            return line


def _taken_up_with_its_reply(env: Env, server: ChatServer, client: Client) -> None:
    """``client`` waits for the last reply, which then ends; it resumes with it."""
    client.expect(WAITING_FOR_LAST_REPLY, stderr=True)
    server.reply_ends_go.set()
    client.send("go on")
    client.expect("echo: go on")
    client.close_stdin()
    assert client.wait() == 0
    assert _texts(env) == [
        "hello",
        "echo: hello",
        "be thorough",
        "echo: be thorough",
        "go on",
        "echo: go on",
    ], _texts(env)


def test_the_same_tab_back_while_its_turn_finishes_waits_for_it_and_gets_the_reply(
    env: Env, streaming_server: ChatServer
) -> None:
    """The same terminal identity attaches again while its old connection's turn still
    streams: it is offered the session (idle: its tab lives), and taking it up waits for
    the turn's end (it was cut, its reply thrown away); the reply is in the session."""
    tab = env.terminal()
    _held_mid_reply(env, streaming_server, tab)
    assert [row["state"] for row in env.sessions_json()] == ["idle"]
    again = env.spawn(terminal=tab)
    again.expect("Resume previous session? [Y/n]", stderr=True)
    again.send("y")
    _taken_up_with_its_reply(env, streaming_server, again)


def test_a_new_tab_is_offered_the_session_of_a_closed_window_and_gets_the_reply(
    env: Env, streaming_server: ChatServer
) -> None:
    """The window closed mid-turn (its shell gone too): the session is orphaned, not live,
    while its turn finishes, and a new tab is offered it; its yes waits for the reply."""
    tab = env.terminal()
    _held_mid_reply(env, streaming_server, tab)
    tab.close()
    assert [row["state"] for row in env.sessions_json()] == ["orphaned"]
    new_tab = env.spawn(terminal=env.terminal())
    new_tab.expect("Resume previous session? [Y/n]", stderr=True)
    new_tab.send("y")
    _taken_up_with_its_reply(env, streaming_server, new_tab)


def test_the_reply_waited_for_is_shown_once_it_ends(
    env: Env, streaming_server: ChatServer
) -> None:
    """kill -HUP of the chat mid-reply, then the same tab back: it waits for the last
    reply and, once it ends, shows it before the next one (H143: it was saved in the
    session, never shown: the chat went on with ``Resumed session``)."""
    tab = _window_closed_mid_reply(env, streaming_server)
    again = env.spawn("--yes", terminal=tab)
    again.expect(WAITING_FOR_LAST_REPLY, stderr=True)
    streaming_server.reply_ends_go.set()
    again.send("go on")
    again.expect("echo: go on")
    assert again.stdout_lines == ["echo: be thorough", "echo: go on"]
    again.close_stdin()
    assert again.wait() == 0


def test_resume_by_id_waits_for_the_last_reply(env: Env, streaming_server: ChatServer) -> None:
    """``--resume ID`` from another tab (the first one's shell still alive) is no longer
    told the session is live: it waits for the turn's end and has its reply."""
    session_id = _held_mid_reply(env, streaming_server, env.terminal())
    other = env.spawn("--resume", session_id, terminal=env.terminal())
    _taken_up_with_its_reply(env, streaming_server, other)


def test_two_tabs_racing_for_it_one_takes_it_up_the_other_is_told_it_is_live(
    env: Env, streaming_server: ChatServer
) -> None:
    """Two tabs resume the session while its turn finishes: the StorageActor's grant
    gives it to one (it waits, then has the reply), the other is told it is live and
    starts a new session (--yes)."""
    session_id = _held_mid_reply(env, streaming_server, env.terminal())
    tabs = [
        env.spawn("--resume", session_id, "--yes", terminal=env.terminal()) for _ in range(2)
    ]
    live = f"session {session_id} is live in another terminal"
    lines = [_first_of(tab, WAITING_FOR_LAST_REPLY, live) for tab in tabs]
    assert sorted(WAITING_FOR_LAST_REPLY in line for line in lines) == [False, True], lines
    streaming_server.reply_ends_go.set()
    for tab in tabs:
        tab.send("go on")
        tab.expect("echo: go on")
        tab.close_stdin()
        assert tab.wait() == 0
    assert len(env.session_ids()) == 2
    texts = [
        part["content"]
        for message in env.session(session_id)["recent_messages"]
        for part in message["parts"]
        if part["part_kind"] in ("user-prompt", "text")
    ]
    assert texts == [
        "hello",
        "echo: hello",
        "be thorough",
        "echo: be thorough",
        "go on",
        "echo: go on",
    ], texts


def test_ctrl_c_while_waiting_cuts_the_turn_and_keeps_the_message_once(
    env: Env, streaming_server: ChatServer
) -> None:
    """Ctrl+C while the same tab waits for the last reply stops the wait: the turn is
    cut, the message kept, marked unanswered (once), and the session resumed. The reason
    saved and shown is the user's stop, not "the chat ended before the reply" (H150)."""
    tab = env.terminal()
    _held_mid_reply(env, streaming_server, tab)
    again = env.spawn("--yes", terminal=tab)
    again.expect(WAITING_FOR_LAST_REPLY, stderr=True)
    again.process.send_signal(signal.SIGINT)
    again.send("go on")
    again.expect("echo: go on")
    again.close_stdin()
    assert again.wait() == 0
    streaming_server.reply_ends_go.set()
    assert again.stdout_lines == ["echo: go on"], "no reply came: none is shown"
    said = UNANSWERED_LINE.format(reason="stopped by the user while it was waited for")
    assert said in again.drain_stderr()
    assert _texts(env) == [
        "hello",
        "echo: hello",
        "be thorough",
        f"{NO_REPLY_PREFIX}stopped by the user while it was waited for]",
        "go on",
        "echo: go on",
    ], _texts(env)


def test_a_supervisor_stop_while_a_turn_finishes_keeps_its_message_unanswered(
    env: Env, streaming_server: ChatServer
) -> None:
    """The stop did not cut a turn let finish for a terminal gone: it waited its 20 s
    for the model, then the actor's last save, made without the turn, wrote over the
    copy that kept the message (it was lost from the session)."""
    _killed_during(env, streaming_server, "hang", env.terminal())
    wait_for(lambda: unanswered_message(_saved(env)) == "hang", what="the message kept")
    assert env.run("supervisor", "stop").returncode == 0
    assert unanswered_message(_saved(env)) == "hang"
    cut = f"{NO_REPLY_PREFIX}the supervisor stopped before the reply]"
    assert _texts(env) == ["hello", "echo: hello", "hang", cut]


def test_a_supervisor_stop_while_a_tab_waits_for_the_last_reply_loses_no_message(
    env: Env, streaming_server: ChatServer
) -> None:
    """H145's find: the waiting line came twice; the message waited for was lost (the
    session went on without it), as in the test above."""
    tab = env.terminal()
    _held_mid_reply(env, streaming_server, tab)
    again = env.spawn("--yes", terminal=tab)
    again.expect(WAITING_FOR_LAST_REPLY, stderr=True)
    assert env.run("supervisor", "stop").returncode == 0
    streaming_server.reply_ends_go.set()
    again.send("go on")
    again.expect("echo: go on")
    again.close_stdin()
    assert again.wait() == 0
    assert again.drain_stderr().count(WAITING_FOR_LAST_REPLY) == 1
    assert [t for t in _texts(env) if not t.startswith(NO_REPLY_PREFIX)] == [
        "hello",
        "echo: hello",
        "be thorough",
        "go on",
        "echo: go on",
    ]


def _window_closed_mid_reply(env: Env, streaming_server: ChatServer) -> Terminal:
    """A tab whose chat had one reply, then was closed (SIGHUP) while the reply to "be
    thorough" was held by the server; returns the tab, once the message is kept."""
    tab = env.terminal()
    streaming_server.reply_ends_go.clear()
    client = env.spawn("--new", terminal=tab)
    client.send("hello")
    client.expect("echo: hello")
    client.send("be thorough")
    _asked(streaming_server, "be thorough")
    client.process.send_signal(signal.SIGHUP)  # the window closed
    assert client.wait() != 0
    wait_for(
        lambda: unanswered_message(_saved(env)) == "be thorough",
        what="the message kept while its turn finishes",
    )
    return tab


def _live_sessions(env: Env) -> int:
    count: int = json.loads(env.run("supervisor", "status", "--json").stdout)["live_sessions"]
    return count


def test_a_reply_that_ended_after_its_window_closed_is_shown_once_at_the_next_open(
    env: Env, streaming_server: ChatServer
) -> None:
    """A tester's find (H152): the tab closed mid-reply, the reply let finish and saved;
    reopening ``agent-assist`` in that tab after its end showed nothing of it (only a
    reopen while it ran, which waited for it, did). It is shown at the next open, under
    a line naming the message it answers, and not again at the open after that."""
    tab = _window_closed_mid_reply(env, streaming_server)
    streaming_server.reply_ends_go.set()
    wait_for(lambda: _last_text(env) == "echo: be thorough", what="the reply saved")
    wait_for(lambda: _live_sessions(env) == 0, what="the session released by its turn's end")

    again = env.run("--yes", input="", terminal=tab)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "echo: be thorough\n"
    heading = 'note: the reply to "be thorough" finished after its chat was gone; here it is:'
    assert heading in again.stderr.splitlines(), again.stderr
    assert WAITING_FOR_LAST_REPLY not in again.stderr

    once_more = env.run("--yes", input="", terminal=tab)
    assert once_more.returncode == 0, once_more.stderr
    assert once_more.stdout == "" and "finished after its chat was gone" not in once_more.stderr
