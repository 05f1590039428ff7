"""A value a turn reveals as secret (``the password for staging is ...``) after it was said
plainly earlier is sent no more and stays in no file: not in what a resume gave the model
(its context, the rules and the compaction it made), nor in the copies kept beside the
session file, nor in the resume context kept with its checkpoints."""

from __future__ import annotations

import json

from tests.e2e.harness import Client, Env, all_text_under
from tests.e2e.openai_server import ChatServer

FOUND = "Zq9Xv7Lm2Pk4"
LONG = "lorem ipsum dolor sit amet " * 200
"""About 5,400 characters: fifteen turns of it are over a 4,000-token budget."""


def said_plainly_then_resumed_compacted(env: Env) -> str:
    """A session whose first turn holds ``FOUND`` as a rule, then 15 long turns, none
    compacted: its resume compacts them (kept aside as ``.uncompacted-``) and gives the
    model a resume context holding the first turn's words."""
    lines = f"turn 0: Always use {FOUND} for staging\n" + "".join(
        f"turn {n}: Always cite docs/t{n}.md. {LONG}\n" for n in range(1, 16)
    )
    result = env.run(
        "--new",
        input=lines,
        AGENT_ASSIST_COMPACTION_INTERVAL="0",
        AGENT_ASSIST_CONTEXT_TOKENS="1000000",
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert env.run("supervisor", "stop").returncode == 0  # the next chat's settings
    return session_id


def files_holding(env: Env, needle: str) -> list[str]:
    return [
        str(path.relative_to(env.base))
        for path, data in all_text_under(env.home, env.runtime)
        if needle.encode() in data
    ]


def test_a_value_said_secret_after_a_resume_is_sent_no_more(env: Env, server: ChatServer) -> None:
    """The resume context, the rules block and the compaction a resume made kept the value
    and went on sending it in every request after the user said it was a password."""
    session_id = said_plainly_then_resumed_compacted(env)
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
    session_id = said_plainly_then_resumed_compacted(env)
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
    fault_file = env.base / "faults"
    env.extra["AGENT_ASSIST_FAULT_FILE"] = str(fault_file)
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
