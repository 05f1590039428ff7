"""A second stop (SIGTERM, SIGINT, ``supervisor stop``) while the first one's cut turn
ends: the supervisor goes on with the first stop's bounded wait and saves the cut turn's
end, as if it had been stopped once (H151: a second SIGTERM killed it mid-save)."""

from __future__ import annotations

import os
import signal
from typing import Any

import pytest

from session.interrupted import INTERRUPTED
from tests.e2e.harness import Env, wait_for
from tests.e2e.openai_server import ChatServer


def _texts(env: Env) -> list[str]:
    (session_id,) = env.session_ids()
    saved: list[dict[str, Any]] = env.session(session_id)["recent_messages"]
    return [
        part["content"]
        for message in saved
        for part in message["parts"]
        if part["part_kind"] in ("user-prompt", "text")
    ]


@pytest.mark.parametrize("second", ["SIGTERM", "SIGINT", "stop"])
def test_a_second_stop_while_the_cut_turn_ends_keeps_its_end(
    env: Env, streaming_server: ChatServer, second: str
) -> None:
    server = streaming_server
    client = env.spawn("--new", terminal=env.terminal())
    server.tool_returns_go.clear()
    client.send("decide: Route tickets by urgency")
    wait_for(
        lambda: any(r["messages"][-1]["role"] == "tool" for r in server.requests),
        what="the tool's return at the model",
    )
    pid = env.supervisor_pid()
    assert pid is not None and env.ours(pid)
    log = env.runtime / "supervisor.log"
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: "stopping" in log.read_text(), what="the first stop under way")
    if second == "stop":
        env.run("supervisor", "stop")
    elif env.ours(pid):
        os.kill(pid, getattr(signal, second))
    server.tool_returns_go.set()
    assert client.wait() != 0
    wait_for(lambda: not env.ours(pid), what="the supervisor gone")
    assert not (env.runtime / "supervisor.sock").exists(), "it exited as a stop does"
    texts = _texts(env)
    assert texts[0] == "decide: Route tickets by urgency", texts
    assert texts[-1].endswith(INTERRUPTED), texts
