"""A supervisor killed under a resumed session: the re-attach keeps the context it had."""

from __future__ import annotations

import os
import signal

import pytest

from tests.e2e.harness import Client, Env, wait_for
from tests.e2e.openai_server import ChatServer


def _context(client: Client) -> list[str]:
    """What ``/resume`` prints (on stderr, stdout being piped): its lines, to the end."""
    start = len(client.drain_stderr())
    client.send("/resume")
    client.expect("IMPORTANT:", stderr=True)
    lines = client.stderr_lines[start:]
    begin = next(i for i, line in enumerate(lines) if line.startswith("# "))
    return lines[begin:]


def _kill_supervisor(env: Env, heir: str) -> None:
    """kill -9 of the supervisor, once its heir (``heir`` "1") is ready to take over."""
    first = env.supervisor_pid()
    assert first is not None
    if heir == "1":
        wait_for(env.heir_pid, what="the heir")
    os.kill(first, signal.SIGKILL)


@pytest.mark.parametrize("heir", ["1", "0"], ids=["heir", "new supervisor"])
def test_the_resume_context_after_a_supervisor_crash_is_the_one_before(
    env: Env, heir: str
) -> None:
    env.extra["AGENT_ASSIST_HEIR"] = heir
    term = env.terminal()
    script = "write agent_spec.md: # Triage agent\ndecide Route with a small model\n"
    assert env.run("--new", input=script, terminal=term).returncode == 0
    (session_id,) = env.session_ids()
    env.settled(session_id)
    client = env.spawn("--yes", terminal=term)
    before = _context(client)
    assert "## File Changes Since Last Session" in before
    assert "- 1 tracked file unchanged" in before
    client.send("one more turn before the crash")
    client.expect("one more turn before the crash")
    _kill_supervisor(env, heir)
    client.send("after the crash")
    client.expect("after the crash")
    client.expect("the supervisor went away", stderr=True)
    assert _context(client) == before
    client.close_stdin()
    assert client.wait() == 0


def test_the_model_is_given_the_same_context_after_a_supervisor_crash(
    env: Env, server: ChatServer
) -> None:
    """What the model's request carries, not only what ``/resume`` shows: its instructions
    after the heir took over are those of the request before the crash."""
    term = env.terminal()
    (env.workspace / "agent_spec.md").write_text("# Triage agent\n")
    assert env.run("--new", input="hello\n", terminal=term).returncode == 0
    (session_id,) = env.session_ids()
    env.settled(session_id)
    (env.workspace / "agent_spec.md").write_text("# Triage agent, edited by hand\n")
    client = env.spawn("--yes", terminal=term)
    client.send("before the crash")
    client.expect("echo: before the crash")
    before = server.system_text()
    assert "## File Changes Since Last Session\n- agent_spec.md: modified" in before
    first = env.supervisor_pid()
    assert first is not None
    wait_for(env.heir_pid, what="the heir")
    os.kill(first, signal.SIGKILL)
    client.send("after the crash")
    client.expect("echo: after the crash")
    assert server.system_text() == before
    client.close_stdin()
    assert client.wait() == 0


@pytest.mark.parametrize("heir", ["1", "0"], ids=["heir", "new supervisor"])
def test_the_context_of_a_restored_checkpoint_after_a_supervisor_crash_is_the_one_before(
    env: Env, heir: str
) -> None:
    """H144 kept the context ``/checkpoint N`` gives; no test crashed the supervisor after
    one. The files are not restored, so the restore's context names the spec as modified."""
    env.extra["AGENT_ASSIST_HEIR"] = heir
    term = env.terminal()
    script = "write agent_spec.md: # v1\n/save\nwrite agent_spec.md: # v2\n"
    assert env.run("--new", input=script, terminal=term).returncode == 0
    (session_id,) = env.session_ids()
    env.settled(session_id)
    client = env.spawn("--yes", terminal=term)
    client.send("/checkpoint 2")
    client.expect("Restore files too? [y/N]", stderr=True)
    client.send("n")
    client.expect("undoes this.", stderr=True)
    before = _context(client)
    assert "- agent_spec.md: modified" in before
    client.send("one more turn before the crash")
    client.expect("one more turn before the crash")
    start = len(client.drain_stderr())
    _kill_supervisor(env, heir)
    client.send("after the crash")
    client.expect("after the crash")
    client.expect("the supervisor went away", stderr=True)
    assert _context(client) == before
    told = client.stderr_lines[start:]
    assert not [line for line in told if "changed outside" in line], told
    client.close_stdin()
    assert client.wait() == 0
