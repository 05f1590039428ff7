"""A session as large as the token budget lets it grow is saved and resumed: what the
supervisor writes, the next start reads back (the real supervisor, the real terminal, a
local model reading files in parallel)."""

from __future__ import annotations

import pytest

from session.models import is_session_id
from session.paths import sessions_dir
from session.settings import MAX_CONTEXT_TOKENS
from tests.e2e.conftest import ServeChat
from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer

FILES = 140
LINE = "the routing table of the triage agent, one queue a line " * 4 + "\n"


@pytest.fixture
def server(serve_chat: ServeChat) -> ChatServer:
    """A model with the largest budget the settings allow (a 10M-token window)."""
    return serve_chat(ChatServer(), AGENT_ASSIST_CONTEXT_TOKENS=str(MAX_CONTEXT_TOKENS))


def test_a_session_whose_one_turn_read_many_large_files_resumes(
    env: Env, server: ChatServer
) -> None:
    """H166: one turn reading 140 files of 250 KB in parallel, within the budget, was saved
    as a 34 MB file; the next start refused it (`over the 33554432 byte cap`), began a new
    session, and the work of that turn could never be resumed."""
    names = []
    for n in range(FILES):
        (env.workspace / f"part{n}.md").write_text(LINE * 1100)
        names.append(f"part{n}.md")
    first = env.run("--new", input="read all: " + " ".join(names) + "\n", timeout=300)
    assert first.returncode == 0, first.stderr
    (path,) = [
        p for p in sessions_dir(env.workspace, env.home).glob("*.json") if is_session_id(p.stem)
    ]
    assert path.stat().st_size > 32 * 1024 * 1024  # what the budget let one turn hold
    resumed = env.run("--yes", input="go on\n", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "refusing" not in resumed.stderr
    assert f"Session {path.stem} saved." in resumed.stdout + resumed.stderr
    chats = [r for r in server.requests if r["model"] != "summary-model"]
    assert "part139.md" in str(chats[-1]["messages"])  # the turn read is sent again
