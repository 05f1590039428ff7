"""A chat whose oldest turn the session file's cap moved beside it, taken over by the heir
after its supervisor was killed: it goes on as any resume of that file does, through a
resume context that says which turns the history lacks (the real supervisor, heir,
terminal and a local model)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from tests.e2e.harness import Client, Env, wait_for
from tests.e2e.openai_server import ChatServer


@pytest.fixture
def server(capped_server: ChatServer) -> ChatServer:
    return capped_server


def last_chat_request(server: ChatServer) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = [r for r in server.requests if r["model"] != "summary-model"]
    messages: list[dict[str, Any]] = sent[-1]["messages"]
    return messages


def taken_over(env: Env) -> tuple[Client, list[str]]:
    """A chat of three pastes (its oldest moved beside the file), whose supervisor is
    killed and whose heir takes over; the pastes."""
    pasted = [f"paste {n}: " + "never edit files under vendor/. " * 5_900 for n in range(3)]
    client = env.spawn("--new", terminal=env.terminal())
    for n, paste in enumerate(pasted):
        client.send(paste)
        client.expect(f"echo: paste {n}", timeout=240)
    client.expect("your oldest turn moved beside it", stderr=True)
    heir = wait_for(env.heir_pid, what="the heir")
    supervisor = env.supervisor_pid()
    assert supervisor is not None and supervisor != heir
    os.kill(supervisor, signal.SIGKILL)
    client.send("after the crash")
    client.expect("echo: after the crash", timeout=240)
    assert env.supervisor_pid() == heir
    return client, pasted


def test_the_heir_goes_on_with_a_context_that_names_the_turn_moved_aside(
    env: Env, server: ChatServer
) -> None:
    """Before: the heir went on from the file's tail with no context at all (the chat had
    none), so the next request lacked the moved turn with not a word of it."""
    client, pasted = taken_over(env)
    client.close_stdin()
    assert client.wait() == 0
    sent = last_chat_request(server)
    assert not any(m["content"] == pasted[0] for m in sent), "a resume reads the file's tail"
    (context,) = [m["content"] for m in sent if m["content"].startswith("# Resumed Session")]
    assert (
        "Turn 1 of this conversation is not in the messages that follow: the saved session "
        "left it out; what the summary above says of it is all that is kept here."
    ) in context.splitlines()
    assert 'first: "paste 0: never edit' in context, "the summary covers it"


def test_a_checkpoint_taken_after_the_takeover_says_at_its_restore_it_lacks_that_turn(
    env: Env, server: ChatServer
) -> None:
    client, _ = taken_over(env)
    client.send("/save")
    client.expect("saved as checkpoint 1.", stderr=True)
    client.send("/checkpoint 1")
    client.expect(
        "note: checkpoint 1's conversation is restored without its oldest turn (turn 1): "
        "the checkpoint does not hold it.",
        stderr=True,
    )
    client.close_stdin()
    assert client.wait() == 0
