"""A resumed session compacts as one that never left (DESIGN 7): the real supervisor, the
real terminal, and a local summary model that records what it is asked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from session.compaction import parse_compaction
from session.models import is_session_id
from session.paths import sessions_dir
from tests.e2e.conftest import ServeChat
from tests.e2e.harness import Env, wait_for
from tests.e2e.openai_server import ChatServer

WINDOW = {
    "AGENT_ASSIST_COMPACTION_INTERVAL": "3",
    "AGENT_ASSIST_COMPACTION_OVERLAP": "1",
    "AGENT_ASSIST_SUMMARY_MODEL": "openai-chat:summary-model",
}


@pytest.fixture
def server(serve_chat: ServeChat) -> ChatServer:
    return serve_chat(ChatServer(), **WINDOW)


def script(first: int, last: int) -> str:
    return "".join(f"turn {n}: the routing table, part {n}\n" for n in range(first, last + 1))


def compacted_up_to(env: Env, workspace: Path) -> int:
    """The last turn the compaction in ``workspace``'s one session file covers (0: none)."""
    compaction = parse_compaction(saved(env, workspace)["compacted_history_summary"])
    return compaction.end_invocation if compaction else 0


def saved(env: Env, workspace: Path) -> dict[str, Any]:
    """``workspace``'s one session file."""
    (path,) = [p for p in sessions_dir(workspace, env.home).glob("*.json") if is_session_id(p.stem)]
    data: dict[str, Any] = json.loads(path.read_bytes())
    return data


def compaction_prompts(server: ChatServer) -> list[str]:
    return [
        str(r["messages"][-1]["content"])
        for r in server.requests
        if r["model"] == "summary-model"
        and str(r["messages"][-1]["content"]).startswith("You compact the history")
    ]


def chat(env: Env, workspace: Path, *args: str, turns: str) -> None:
    """A piped chat of ``turns`` in ``workspace``, then every compaction due written."""
    result = env.run("--workspace", str(workspace), *args, input=turns)
    assert result.returncode == 0, result.stderr


def settled(env: Env, workspace: Path, turn: int) -> None:
    wait_for(lambda: compacted_up_to(env, workspace) == turn, what=f"turns 1-{turn} compacted")
    assert env.run("supervisor", "stop").returncode == 0


def test_the_window_after_a_resume_reads_the_overlap_as_without_the_exit(
    env: Env, server: ChatServer
) -> None:
    """H112's find: after a resume, the next compaction was not given the last
    ``overlap_size`` turns the previous one covered (the file kept only the turns after
    its boundary), so it differed from the same turns' compaction without the exit."""
    straight = env.base / "straight"
    straight.mkdir()
    chat(env, straight, "--new", turns=script(1, 6))
    settled(env, straight, 6)
    without_exit = compaction_prompts(server)[-1]
    assert "user: turn 3:" in without_exit  # the overlap

    chat(env, env.workspace, "--new", turns=script(1, 3))
    settled(env, env.workspace, 3)
    chat(env, env.workspace, "--yes", turns=script(4, 6))
    settled(env, env.workspace, 6)
    assert compaction_prompts(server)[-1] == without_exit


def test_the_compacted_turns_a_file_keeps_for_the_next_window_are_counted_once(
    env: Env, server: ChatServer
) -> None:
    """The tail keeps turn 3 (the overlap) though the summary covers it: the session still
    has three turns, in the listing as in the resume offer."""
    chat(env, env.workspace, "--new", turns=script(1, 3))
    settled(env, env.workspace, 3)
    assert "turn 3:" in json.dumps(saved(env, env.workspace)["recent_messages"])
    (listed,) = env.sessions_json()
    assert listed["turns"] == 3
    offer = env.run("--workspace", str(env.workspace), input="n\n")
    assert "3 turns" in offer.stdout + offer.stderr


def conversation(request: dict[str, Any]) -> list[tuple[str, str]]:
    """A chat request's messages without its instructions, as (role, content)."""
    return [
        (m["role"], str(m.get("content")))
        for m in request["messages"]
        if m["role"] not in ("system", "developer")
    ]


def chats(server: ChatServer) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == "test-model"]


def test_a_turn_that_ends_on_the_boundary_is_read_again_word_for_word_after_a_resume(
    env: Env, server: ChatServer
) -> None:
    """H112's find: when the last turn ended exactly on a compaction's boundary, the file
    kept no message and the resumed model read only the summary. The file keeps the last
    turn, and the request carries it whole after the summary, as the session that never
    left sends it."""
    env.extra["AGENT_ASSIST_COMPACTION_OVERLAP"] = "0"
    straight = env.base / "straight"
    straight.mkdir()
    client = env.spawn("--workspace", str(straight), "--new")
    for line in script(1, 3).splitlines():
        client.send(line)
        client.expect(f"echo: {line}")
    wait_for(lambda: compacted_up_to(env, straight) == 3, what="turns 1-3 compacted")
    client.send("turn 4: the routing table, part 4")
    client.expect("echo: turn 4")
    client.close_stdin()
    assert client.wait() == 0
    without_exit = conversation(chats(server)[-1])

    chat(env, env.workspace, "--new", turns=script(1, 3))
    settled(env, env.workspace, 3)
    assert saved(env, env.workspace)["recent_messages"]
    chat(env, env.workspace, "--yes", turns=script(4, 4))
    resumed = conversation(chats(server)[-1])
    assert resumed[1:] == [
        ("user", "turn 3: the routing table, part 3"),
        ("assistant", "echo: turn 3: the routing table, part 3"),
        ("user", "turn 4: the routing table, part 4"),
    ]
    assert resumed[0][1].startswith("<pyai:conversation_summary>")
    assert resumed == without_exit
