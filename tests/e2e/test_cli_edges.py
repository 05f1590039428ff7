"""The command line's edges as a new user meets them: over-long messages, closed pipes,
end of input at questions, out-of-range numbers, and what deleting a session leaves."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime, timedelta

import pytest

from tests.e2e.frames import RawClient, terminal_hello
from tests.e2e.harness import AGENT_ASSIST, Env

LIMIT = 200_000


def pointers(env: Env) -> list[str]:
    return sorted(p.name for p in env.project.glob("active_*.json"))


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_rm_removes_the_pointers_to_the_session(env: Env, supervisor: str) -> None:
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert len(pointers(env)) == 1
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    removed = env.run("sessions", "rm", session_id)
    assert removed.returncode == 0, removed.stderr
    assert env.session_ids() == [] and pointers(env) == []


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_prune_removes_the_pointers_to_what_it_prunes(env: Env, supervisor: str) -> None:
    tab = env.terminal()
    result = env.run("--new", input="hello\n", terminal=tab)
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    tab.close()  # the terminal is gone: the session is orphaned
    path = env.settled(session_id)
    text = path.read_text()
    old = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    data = json.loads(text)
    data["updated_at"] = old
    path.write_text(json.dumps(data))
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    pruned = env.run("sessions", "prune", "--older-than", "30")
    assert "Removed 1 orphaned session(s)" in pruned.stdout, pruned.stderr
    assert env.session_ids() == [] and pointers(env) == []


def test_an_over_long_message_is_refused_by_the_client_and_the_chat_goes_on(env: Env) -> None:
    piped = "first turn\n" + "x" * (LIMIT + 50_000) + "\nhello after\n"
    result = env.run("--new", input=piped, terminal=env.terminal())
    assert 'You said: "first turn"' in result.stdout
    assert 'You said: "hello after"' in result.stdout
    refusals = [line for line in result.stderr.splitlines() if "200,000" in line]
    assert len(refusals) == 1 and "250,000 characters" in refusals[0]
    assert "in a file" in refusals[0] and "ask the assistant to read it" in refusals[0]
    assert "went away" not in result.stderr and "lost the supervisor" not in result.stderr
    assert result.returncode == 0, result.stderr


def test_a_message_over_the_frame_size_is_refused_by_the_client(env: Env) -> None:
    control_characters = "\x01" * (LIMIT - 10)  # few characters, six bytes each on the wire
    result = env.run("--new", input=f"{control_characters}\nhello after\n", terminal=env.terminal())
    assert "message not sent" in result.stderr and "went away" not in result.stderr
    assert 'You said: "hello after"' in result.stdout


def test_the_supervisor_refuses_an_invalid_frame_and_keeps_the_connection(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    tab = env.terminal()
    raw = RawClient(env.runtime / "supervisor.sock")
    raw.send(terminal_hello(tab.pid, env.workspace))
    raw.until("welcome")
    raw.send({"type": "open", "mode": "new", "session_id": None})
    raw.until("opened")
    raw.send({"type": "user_message", "text": "x" * (LIMIT + 1)})
    (refused,) = [f for f in raw.until("error") if f["type"] == "error"]
    assert refused["code"] == "invalid_request"
    raw.send({"type": "user_message", "text": "still here"})
    said = "".join(f.get("text", "") for f in raw.until("turn_end"))
    assert 'You said: "still here"' in said
    raw.close()


@pytest.mark.parametrize(
    "args",
    [("sessions",), ("sessions", "--json"), ("sessions", "-w", "."), ("config", "show"), ("--help",)],
)
def test_a_closed_pipe_ends_a_command_quietly(env: Env, args: tuple[str, ...]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head -1` does once it has its line
    try:
        result = subprocess.run(
            [AGENT_ASSIST, *args],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=env.workspace,
            env=env.environ(),
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert result.stderr == "", "no traceback, no error line"
    assert result.returncode == 1, "as click's commands exit on a closed pipe"
