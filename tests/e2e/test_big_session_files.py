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


def test_a_turn_that_would_pass_the_file_cap_is_saved_under_it_and_resumed(
    env: Env, server: ChatServer
) -> None:
    """H166's report: the writer had no size limit. A turn that read more than the cap
    (here lowered to 3 MiB for the test; 256 MiB in use) within the budget was written
    whole, and the next start would refuse the session the user just worked in. The save
    leaves the largest tool returns' bodies out of the file instead, never the user's
    message, and says so once."""
    cap = 3 * 1024 * 1024
    env.extra["AGENT_ASSIST_TEST_SESSION_FILE_BYTES"] = str(cap)
    names = []
    for n in range(20):  # 20 files of 250 KB: 5 MB of tool returns
        (env.workspace / f"part{n}.md").write_text(LINE * 1100)
        names.append(f"part{n}.md")
    asked = "read all: " + " ".join(names)
    first = env.run("--new", input=f"{asked}\nand now?\n", timeout=300)
    assert first.returncode == 0, first.stderr
    (path,) = [
        p for p in sessions_dir(env.workspace, env.home).glob("*.json") if is_session_id(p.stem)
    ]
    assert path.stat().st_size <= cap
    told = [line for line in first.stderr.splitlines() if "kept under its 3 MiB cap" in line]
    assert told == [
        "note: the session file is kept under its 3 MiB cap: 8 tool returns' bodies left out "
        "of it (this chat still sends them; your messages are kept)"
    ], first.stderr
    resumed = env.run("--yes", input="go on\n", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "refusing" not in resumed.stderr
    chats = [r for r in server.requests if r["model"] != "summary-model"]
    sent = str(chats[-1]["messages"])
    assert asked in sent and "and now?" in sent  # the user's messages, whole
    assert "left out of the saved session to keep its file under its 3 MiB cap" in sent


def test_the_users_own_messages_over_the_file_cap_move_aside_and_the_file_resumes(
    env: Env, server: ChatServer
) -> None:
    """H169 left it: a tail of the user's own messages over the cap was written whole, a
    file the next start would refuse. The oldest turns move, whole, to files beside the
    session's, named in one line; the file stays under the cap and resumes; ``sessions rm``
    removes them with it."""
    cap = 1024 * 1024
    env.extra["AGENT_ASSIST_TEST_SESSION_FILE_BYTES"] = str(cap)
    # under the 200,000 characters a message may have: 7 of them are over the cap
    pasted = [f"paste {n}: " + "never edit files under vendor/. " * 5_900 for n in range(7)]
    first = env.run("--new", input="".join(f"{p}\n" for p in pasted), timeout=300)
    assert first.returncode == 0, first.stderr
    directory = sessions_dir(env.workspace, env.home)
    (path,) = [p for p in directory.glob("*.json") if is_session_id(p.stem)]
    assert path.stat().st_size <= cap
    moved = sorted(directory.glob(f"{path.stem}.json.over-cap-*"))
    assert moved and pasted[0] in moved[0].read_text()
    told = [line for line in first.stderr.splitlines() if "over-cap" in line]
    assert told == [
        "note: the session file is kept under its 1 MiB cap: your oldest turn moved beside "
        f"it to {path.stem}.json.over-cap-* (this chat still sends it; a resume does not)"
    ], first.stderr
    resumed = env.run("--yes", input="go on\n", timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert "refusing" not in resumed.stderr
    chats = [r for r in server.requests if r["model"] != "summary-model"]
    assert pasted[-1] in str(chats[-1]["messages"])
    removed = env.run("sessions", "rm", path.stem)
    assert removed.returncode == 0, removed.stderr
    assert not list(directory.glob(f"{path.stem}.json*"))
