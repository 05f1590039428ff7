"""A value a turn reveals as secret (``the password for staging is ...``) after it was said
plainly earlier is sent no more and stays in no file: not in what a resume gave the model
(its context, the rules and the compaction it made), nor in the copies kept beside the
session file, nor in the resume context kept with its checkpoints."""

from __future__ import annotations

import json

from tests.e2e.harness import Client, Env, files_holding, uncompacted_session
from tests.e2e.openai_server import ChatServer

FOUND = "Zq9Xv7Lm2Pk4"
SAID_PLAINLY = f"turn 0: Always use {FOUND} for staging\n"
"""The first turn of a session of long turns, none compacted: its resume compacts them
(kept aside as ``.uncompacted-``) and gives the model a resume context holding it."""


def test_a_value_said_secret_after_a_resume_is_sent_no_more(env: Env, server: ChatServer) -> None:
    """The resume context, the rules block and the compaction a resume made kept the value
    and went on sending it in every request after the user said it was a password."""
    session_id = uncompacted_session(env, SAID_PLAINLY)
    result = env.run(
        "--resume", session_id,
        input=f"the password for staging is {FOUND}\nnext turn\n",
        AGENT_ASSIST_CONTEXT_TOKENS="4000",
    )
    assert result.returncode == 0, result.stderr
    last = json.dumps(server.requests[-1]["messages"])
    assert "next turn" in last and "# Resumed Session Context" in last
    assert "Always cite docs/t15.md" in last  # the rules are still sent
    assert FOUND not in last


def test_a_value_said_secret_after_a_resume_stays_in_no_file_kept_beside_the_session(
    env: Env,
) -> None:
    """``ScrubEarlier`` rewrote the checkpoints and the moved turns only: the file kept
    aside before the resume compacted (``.uncompacted-``) and the resume context kept for
    a supervisor that takes over held the value in plain text."""
    session_id = uncompacted_session(env, SAID_PLAINLY)
    result = env.run(
        "--resume", session_id,
        input=f"the password for staging is {FOUND}\n/save\n",
        AGENT_ASSIST_CONTEXT_TOKENS="4000",
    )
    assert result.returncode == 0, result.stderr
    assert "uncompacted-" in result.stderr
    assert env.run("supervisor", "stop").returncode == 0
    assert files_holding(env, FOUND) == []
    assert list(env.project.glob(f"{session_id}.json.uncompacted-*")), "the copy is kept"


def test_a_value_said_secret_after_a_failed_save_stays_in_no_recovery_copy(env: Env) -> None:
    fault_file = env.faults()
    fault_file.write_text("rename ENOSPC /sessions/\n")
    client: Client = env.spawn("--new", terminal=env.terminal())
    client.send(f"deploy staging with {FOUND}")
    client.expect("could not update the session on disk", stderr=True)
    client.expect("[offline model]")
    copies = list((env.project.parent / "recovered").glob("*.json"))
    assert copies and FOUND.encode() in copies[0].read_bytes()
    fault_file.unlink()
    client.send(f"the password for staging is {FOUND}")
    client.expect("[offline model]")
    client.close_stdin()
    assert client.wait() == 0
    assert env.run("supervisor", "stop").returncode == 0
    assert files_holding(env, FOUND) == []


def test_an_error_echoing_a_value_found_secret_is_logged_without_it(
    env: Env, server: ChatServer
) -> None:
    """The log was scrubbed of the chats' environments' secrets only: a gateway's error
    echoing a message put a value the session knew as secret in supervisor.log in clear,
    while the chat's own error line had it ``[REDACTED]``."""
    script = f"the password for staging is {FOUND}\nrefuse: deploy with {FOUND} now\n"
    result = env.run("--new", input=script, terminal=env.terminal())
    assert result.returncode == 1
    assert "content refused: refuse: deploy with [REDACTED] now" in result.stderr
    assert env.run("supervisor", "stop").returncode == 0
    log = (env.runtime / "supervisor.log").read_text()
    assert "deploy with [REDACTED] now" in log
    assert files_holding(env, FOUND) == []
