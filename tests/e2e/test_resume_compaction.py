"""A resume that compacts (or leaves out) turns its session file holds in full: the file as
it was is kept aside first, and if it cannot be, nothing is dropped."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.e2e.harness import Env, uncompacted_session, wait_for


@contextlib.contextmanager
def unwritable(directory: Path) -> Iterator[None]:
    """``directory`` refuses new names, as a read-only directory does: its mode for a
    user, the immutable attribute for root (whom modes do not stop)."""
    if os.geteuid() != 0:
        directory.chmod(0o500)
        try:
            yield
        finally:
            directory.chmod(0o700)
        return
    made = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot make {directory} immutable: {made.stderr.decode().strip()}")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


def test_a_resume_refused_as_its_file_cannot_be_kept_aside_reads_the_same_cold_or_warm(
    env: Env,
) -> None:
    """A helper's report: with the supervisor started by the chat itself (its front door
    answers the open before the resume is done for real), the refusal read "error:
    message not sent: ..." then "Nothing to save (no turn was completed)."; with a
    supervisor already running, the refusal's one line."""
    session_id = uncompacted_session(env)  # the supervisor is stopped after it

    def told(result: subprocess.CompletedProcess[str]) -> list[str]:
        lines = [line for line in result.stderr.splitlines() if line != "starting the model..."]
        return [re.sub(r"uncompacted-\d{8}T\d{6}Z", "uncompacted-<time>", line) for line in lines]

    with unwritable(env.project):
        cold = env.run("--resume", session_id, input="hello\n", AGENT_ASSIST_CONTEXT_TOKENS="4000")
    assert env.run("supervisor", "start", AGENT_ASSIST_CONTEXT_TOKENS="4000").returncode == 0

    def model_loaded() -> bool:
        status = env.run("supervisor", "status", "--json")
        return status.returncode == 0 and bool(json.loads(status.stdout)["model_loaded"])

    wait_for(model_loaded, what="the supervisor's model stack")
    with unwritable(env.project):
        warm = env.run("--resume", session_id, input="hello\n", AGENT_ASSIST_CONTEXT_TOKENS="4000")
    assert cold.returncode == warm.returncode == 1
    assert cold.stdout == warm.stdout == ""
    assert told(cold) == told(warm), (cold.stderr, warm.stderr)
    (line,) = told(warm)
    assert line.startswith(f"error: session {session_id}'s file holds every turn uncompacted")


def test_a_resume_whose_file_cannot_be_kept_aside_is_refused_and_drops_no_turn(
    env: Env,
) -> None:
    """The copy failed with the generic save error, the resume went on compacted, and the
    next save dropped turns 1-14 from the file with no copy of them anywhere."""
    session_id = uncompacted_session(env)
    original = (env.project / f"{session_id}.json").read_bytes()
    with unwritable(env.project):
        refused = env.run(
            "--resume", session_id, input="hello\n", AGENT_ASSIST_CONTEXT_TOKENS="4000"
        )
    assert refused.returncode == 1
    (line,) = [line for line in refused.stderr.splitlines() if line.startswith("error:")]
    assert "could not be kept aside" in line and "nothing was changed" in line
    assert refused.stdout == ""  # the message was not answered: no session was opened
    later = env.run("--resume", session_id, input="hello\n", AGENT_ASSIST_CONTEXT_TOKENS="4000")
    assert later.returncode == 0, later.stderr
    (kept,) = env.project.glob(f"{session_id}.json.uncompacted-*")
    assert kept.read_bytes() == original
