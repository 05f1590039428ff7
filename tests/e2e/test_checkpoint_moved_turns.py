"""A checkpoint taken after the session file's cap moved the oldest turns beside it: a
restore brings the conversation back whole, the moved turns included, as the chat that
took it was sending it (the real supervisor, the real terminal, a local model)."""

from __future__ import annotations

import json

import pytest

from tests.e2e.harness import Env
from tests.e2e.openai_server import ChatServer


@pytest.fixture
def server(capped_server: ChatServer) -> ChatServer:
    return capped_server


def chat_requests(server: ChatServer) -> list[str]:
    return [str(r["messages"]) for r in server.requests if r["model"] != "summary-model"]


def test_restoring_a_checkpoint_taken_after_turns_moved_aside_sends_them_again(
    env: Env, server: ChatServer
) -> None:
    """Left by H174: the checkpoint held the session file's tail, without the turns the
    cap had moved beside the file, so the request after `/checkpoint N` lacked the oldest
    turns that the request after N carried."""
    # under the 200,000 characters a message may have: 3 of them are over the cap
    pasted = [f"paste {n}: " + "never edit files under vendor/. " * 5_900 for n in range(3)]
    lines = [*pasted, "/save", "what next?", "/checkpoint 1", "go on"]
    result = env.run("--new", input="".join(f"{line}\n" for line in lines), timeout=300)
    assert result.returncode == 0, result.stderr
    assert "saved as checkpoint 1." in result.stderr, result.stderr
    assert "your oldest turn moved beside it" in result.stderr
    assert "Restored the conversation to checkpoint 1 (3 turns)" in result.stderr
    after_save, after_restore = chat_requests(server)[-2:]
    assert "what next?" in after_save and "go on" in after_restore
    assert pasted[0] in after_save, "the chat sends the moved turn until it ends"
    assert pasted[0] in after_restore, "checkpoint 1's history includes the moved turn"
    assert "what next?" not in after_restore


@pytest.mark.parametrize("damage", ["deleted", "not messages"])
def test_a_moved_turn_gone_is_named_and_the_restore_goes_on_without_it(
    env: Env, server: ChatServer, damage: str
) -> None:
    """A restore in a later chat reads the moved turns from beside the session file; one
    deleted or edited by hand costs that turn alone, in one line."""
    pasted = [f"paste {n}: " + "never edit files under vendor/. " * 5_900 for n in range(3)]
    first = env.run("--new", input="".join(f"{p}\n" for p in [*pasted, "/save"]), timeout=300)
    assert "saved as checkpoint 1." in first.stderr, first.stderr
    (session_id,) = env.session_ids()
    (moved,) = env.project.glob(f"{session_id}.json.over-cap-*")
    if damage == "deleted":
        moved.unlink()
    else:
        moved.write_text('[{"kind": "request", "parts": [{"part_kind": "nonsense"}]}]')
    second = env.run("--yes", input="/checkpoint 1\ngo on\n", timeout=300)
    assert second.returncode == 0, second.stderr
    assert (
        "note: checkpoint 1's conversation is restored without its oldest turn (turn 1): "
        f"{moved.name} could not be read."
    ) in second.stderr.splitlines(), second.stderr
    sent = chat_requests(server)[-1]
    assert "go on" in sent and pasted[1] in sent and pasted[0] not in sent


def test_a_moved_turn_gone_after_one_read_back_costs_the_turns_before_it_too(
    env: Env, server: ChatServer
) -> None:
    """H204: turns 1 and 2 moved aside, turn 2's file gone: the restore put turn 1 back
    before turn 3, a hole the model was not told of, the line said "its oldest turn", and
    the next turn was numbered 4 again. It goes on from turn 3, and says so to both."""
    pasted = [f"paste {n}: " + "never edit files under vendor/. " * 5_900 for n in range(3)]
    lines = ["hello", *pasted, "/save"]
    first = env.run("--new", input="".join(f"{line}\n" for line in lines), timeout=300)
    assert "saved as checkpoint 1." in first.stderr, first.stderr
    (session_id,) = env.session_ids()
    (second_turn,) = env.project.glob(f"{session_id}.json.over-cap-2-*")
    second_turn.unlink()
    second = env.run("--yes", input="/checkpoint 1\ngo on\n", timeout=300)
    assert second.returncode == 0, second.stderr
    assert (
        "note: checkpoint 1's conversation is restored without its 2 oldest turns "
        f"(turns 1-2): {second_turn.name} could not be read."
    ) in second.stderr.splitlines(), second.stderr
    sent = chat_requests(server)[-1]
    assert "go on" in sent and pasted[1] in sent and pasted[0] not in sent
    last = [r for r in server.requests if r["model"] != "summary-model"][-1]
    assert not any(m["content"] == "hello" for m in last["messages"]), "a hole: turn 1 back"
    assert "Turns 1-2 of this conversation are not in the messages that follow" in sent
    turns = [
        m["metadata"]["turn"]
        for m in env.session(session_id)["recent_messages"]
        if m["kind"] == "request" and (m.get("metadata") or {}).get("turn")
    ]
    assert turns == sorted(set(turns)) and turns[-1] == 5


def test_restoring_an_entry_older_than_moved_says_which_turns_it_does_not_hold(
    env: Env, server: ChatServer
) -> None:
    """An entry written before format 6 names no moved turn: its restore went on from the
    tail alone, turn 1 missing, with not a word of it (to the user or to the model)."""
    pasted = [f"paste {n}: " + "never edit files under vendor/. " * 5_900 for n in range(3)]
    first = env.run("--new", input="".join(f"{p}\n" for p in [*pasted, "/save"]), timeout=300)
    assert "saved as checkpoint 1." in first.stderr, first.stderr
    (session_id,) = env.session_ids()
    (entry,) = (env.project.parent / "checkpoints" / session_id).glob("0001.json")
    raw = json.loads(entry.read_bytes())
    assert raw.pop("moved") and raw["format"] == 6
    raw["format"] = 2  # as an agent-assist of before session 41 wrote it
    entry.write_text(json.dumps(raw))
    second = env.run("--yes", input="/checkpoint 1\ngo on\n", timeout=300)
    assert second.returncode == 0, second.stderr
    assert (
        "note: checkpoint 1's conversation is restored without its oldest turn (turn 1): "
        "the checkpoint does not hold it."
    ) in second.stderr.splitlines(), second.stderr
    sent = chat_requests(server)[-1]
    assert pasted[0] not in sent and pasted[1] in sent
    assert "Turn 1 of this conversation is not in the messages that follow" in sent
