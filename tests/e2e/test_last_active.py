"""The resume offer's ``last active`` is the time of the session's last completed turn (or
``/save``, or restore): leaving, even by a crash that cut a message, is no activity."""

from __future__ import annotations

from datetime import datetime

from session.resume import format_utc
from tests.e2e.harness import Env, wait_for
from tests.e2e.openai_server import ChatServer


def test_a_terminal_killed_during_an_unanswered_message_keeps_the_last_turns_time(
    env: Env, streaming_server: ChatServer
) -> None:
    """H108: a message lost to kill -9 of the terminal moved the offer's ``last active``
    to the time of the kill, though no turn had completed since. Since H125 the turn of
    a terminal gone runs on and is kept, here as unanswered once the model's stall
    timeout ends it (2 s): still no turn completed, and the last active time stays."""
    env.extra["AGENT_ASSIST_MODEL_TIMEOUT_S"] = "2"
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    client.send("hello")
    client.expect("echo: hello")
    (session_id,) = env.session_ids()
    turn_time = env.session(session_id)["updated_at"]
    client.send("hang")
    wait_for(
        lambda: any(r["messages"][-1].get("content") == "hang" for r in streaming_server.requests),
        what="the unanswered message at the model",
    )
    client.kill9()
    tab.close()
    wait_for(
        lambda: [row["state"] for row in env.sessions_json()] == ["orphaned"],
        what="the supervisor to let the session go",
    )
    (row,) = env.sessions_json()
    assert row["updated_at"] == turn_time
    assert env.session(session_id)["updated_at"] == turn_time
    offer = env.run(input="n\n", terminal=env.terminal())
    last_active = format_utc(datetime.fromisoformat(turn_time))
    assert f"Previous session found (last active: {last_active})" in offer.stderr
