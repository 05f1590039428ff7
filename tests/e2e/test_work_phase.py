"""The phase of the work (design / code / deploy): set by the assistant, saved, shown again."""

from __future__ import annotations

from tests.e2e.frames import open_terminal
from tests.e2e.harness import Env


def test_the_phase_the_assistant_sets_is_saved_and_comes_back_on_resume(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    tab = env.terminal()
    socket_path = env.runtime / "supervisor.sock"
    client, opened = open_terminal(socket_path, tab.pid, env.workspace)
    assert opened.get("phase") is None  # a new session has no phase yet
    session_id = opened["session_id"]
    client.send({"type": "user_message", "text": "phase code"})  # the offline model's set_phase
    ended = client.until("turn_end")[-1]
    assert (ended["status"], ended["phase"]) == ("ok", "code")
    assert env.session(session_id)["phase"] == "code"
    client.send({"type": "user_message", "text": "an ordinary message"})
    assert client.until("turn_end")[-1]["phase"] == "code"  # a turn that sets none keeps it
    client.send({"type": "close"})
    client.until("closed")
    client.close()

    again, reopened = open_terminal(socket_path, tab.pid, env.workspace, session_id)
    assert reopened["phase"] == "code"
    again.close()


def test_a_restore_brings_back_the_phase_of_its_checkpoint(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    client, _ = open_terminal(env.runtime / "supervisor.sock", env.terminal().pid, env.workspace)
    client.send({"type": "user_message", "text": "phase code"})
    client.until("turn_end")
    client.send({"type": "command", "name": "save", "arg": None})  # checkpoint 1: code
    client.until("command_result")
    client.send({"type": "user_message", "text": "phase deploy"})
    assert client.until("turn_end")[-1]["phase"] == "deploy"
    client.send({"type": "command", "name": "checkpoint", "arg": "1"})
    restored = client.until("command_result")[-1]
    assert restored["text"].startswith("Restored the conversation to checkpoint 1")
    assert restored["phase"] == "code"  # the toolbar follows at once
    client.close()
