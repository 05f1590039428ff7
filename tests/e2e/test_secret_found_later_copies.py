"""A value found secret after the session wrote it in plain text is scrubbed from every file
the session keeps (the real supervisor and terminal): its file, its checkpoints, the copy a
resume kept aside before compacting, the recovery copy of turns whose save failed."""

from __future__ import annotations

import re
from pathlib import Path

from tests.e2e.harness import LONG, Env, files_holding

SECRET = "Jq4Wn8Zt2Rk6Vy"


def recovered(env: Env) -> list[Path]:
    return sorted((env.project.parent / "recovered").glob("*.json"))


def test_a_secret_found_later_is_scrubbed_from_the_recovery_copy_of_failed_saves(
    env: Env,
) -> None:
    """H181's report: a turn whose save failed was kept in ``recovered/``; a value said in
    it and named a password later stayed there in plain text (the file and the
    checkpoints were scrubbed)."""
    fault_file = env.faults()
    fault_file.write_text("write EIO /sessions/\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send(f"remember {SECRET} for later")
    client.expect("You said: \"remember")  # the turn ended: its copy kept
    fault_file.unlink()
    client.send("second message")
    client.expect('You said: "second message"')
    client.send("/save")
    client.expect("checkpoint 1", stderr=True)
    assert [SECRET.encode() in copy.read_bytes() for copy in recovered(env)] == [True]
    client.send(f"the password for staging is {SECRET}")
    client.expect("[offline model]")
    client.close_stdin()
    assert client.wait() == 0
    assert files_holding(env, SECRET) == []
    (copy,) = recovered(env)
    assert b"remember [REDACTED] for later" in copy.read_bytes()


def test_a_secret_found_later_is_scrubbed_from_the_copy_a_resume_kept_aside(env: Env) -> None:
    """The file as it was before a resume compacted its turns (``.uncompacted-``) kept a
    value named a password in the resumed chat, in plain text."""
    lines = f"turn 1: remember {SECRET} for later. {LONG}\n" + "".join(
        f"turn {n}: Always cite docs/t{n}.md. {LONG}\n" for n in range(2, 16)
    )
    first = env.run(
        "--new", input=lines, AGENT_ASSIST_COMPACTION_INTERVAL="0",
        AGENT_ASSIST_CONTEXT_TOKENS="1000000",
    )
    assert first.returncode == 0, first.stderr
    (session_id,) = env.session_ids()
    assert env.run("supervisor", "stop").returncode == 0  # the next chat's settings
    resumed = env.run(
        "--resume", session_id, input=f"the password for staging is {SECRET}\n/save\n",
        AGENT_ASSIST_CONTEXT_TOKENS="4000",
    )
    assert resumed.returncode == 0, resumed.stderr
    (kept,) = env.project.glob(f"{session_id}.json.uncompacted-*")
    assert files_holding(env, SECRET) == []
    assert b"remember [REDACTED] for later" in kept.read_bytes()


def test_a_copy_whose_scrub_fails_is_told_and_fails_the_run(env: Env) -> None:
    """A recovery copy that could not be rewritten keeps the secret: the line says so, as a
    checkpoint's does, and the piped run ends with status 1."""
    fault_file = env.faults()
    fault_file.write_text("write EIO /sessions/\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send(f"remember {SECRET} for later")
    client.expect("You said: \"remember")  # the turn ended: its copy kept
    fault_file.unlink()
    client.send("second message")
    client.expect('You said: "second message"')
    fault_file.write_text("rename EIO /recovered/\n")
    client.send(f"the password for staging is {SECRET}")
    line = client.expect("error: a secret", stderr=True)
    client.close_stdin()
    assert client.wait() == 1
    (session_id,) = env.session_ids()
    (copy,) = recovered(env)
    assert SECRET.encode() in copy.read_bytes()  # what the line says stays
    assert re.fullmatch(
        rf"error: a secret stays in plain text in {re.escape(str(copy))} \(Input/output "
        rf"error\); /reset or `agent-assist sessions rm {session_id}` removes it",
        line,
    ), line
    assert SECRET not in (env.project / f"{session_id}.json").read_text()


def test_a_secret_found_later_is_scrubbed_from_a_checkpoint_moved_aside_as_damaged(
    env: Env,
) -> None:
    """H188: a damaged checkpoint, moved aside by ``/checkpoint``'s listing while the chat
    went on, kept a value said before it and named a password later in plain text
    (``NNNN.json.corrupt-*``: never parsed, never scrubbed)."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send(f"remember {SECRET} for later")
    client.expect('You said: "remember')
    client.send("/save")
    client.expect("checkpoint 1", stderr=True)
    (session_id,) = env.session_ids()
    entry = env.project.parent / "checkpoints" / session_id / "0001.json"
    entry.write_bytes(entry.read_bytes()[:-30])  # damaged: it no longer parses
    client.send("/checkpoint")
    client.expect("checkpoint 1 is damaged; moved aside", stderr=True)
    (aside,) = entry.parent.glob("0001.json.corrupt-*")
    client.send(f"the password for staging is {SECRET}")
    client.expect("[offline model]")
    client.close_stdin()
    assert client.wait() == 0
    assert files_holding(env, SECRET) == []
    assert b"remember [REDACTED] for later" in aside.read_bytes()
