"""A message re-sent after the supervisor died is answered from the session, never stored twice."""

from __future__ import annotations

import os
import signal

from session.processes import process_alive
from tests.e2e.frames import open_terminal
from tests.e2e.harness import Env, wait_for


def user_prompts(env: Env, session_id: str) -> list[str]:
    return [
        part["content"]
        for message in env.session(session_id)["recent_messages"]
        for part in message["parts"]
        if part.get("part_kind") == "user-prompt"
    ]


def reply_text(frames: list[dict[str, object]]) -> str:
    return "".join(str(f["text"]) for f in frames if f["type"] == "text_delta")


def test_a_retry_after_a_supervisor_crash_is_answered_from_what_was_saved(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    tab = env.terminal()
    socket_path = env.runtime / "supervisor.sock"
    client, opened = open_terminal(socket_path, tab.pid, env.workspace)
    session_id = opened["session_id"]
    message = {"type": "user_message", "text": "decide use a queue", "id": "m-0001"}
    client.send(message)
    first = client.until("turn_end")
    assert first[-1]["status"] == "ok"

    # The supervisor dies; as far as the terminal knows, its reply never ended.
    pid = env.supervisor_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not process_alive(pid), what="the supervisor's death")
    client.close()
    assert env.run("supervisor", "start").returncode == 0

    again, _ = open_terminal(socket_path, tab.pid, env.workspace, session_id)
    again.send(message)
    retry = again.until("turn_end")
    assert retry[-1]["status"] == "ok"
    assert reply_text(retry) == reply_text(first)
    assert user_prompts(env, session_id) == ["decide use a queue"]

    # A new message (a new id) is a new turn.
    again.send({**message, "id": "m-0002"})
    assert again.until("turn_end")[-1]["status"] == "ok"
    wait_for(lambda: len(user_prompts(env, session_id)) == 2, what="the second turn saved")
    again.send({"type": "close"})
    again.until("closed")
    again.close()
