"""Reading a checkpoint back costs what it holds: an entry as its writer scrubbed it is not
scrubbed again, and one that may hold a secret (learned since, or bytes changed since) is."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest

import session.manager
from session.checkpoints import entry_name
from session.manager import CheckpointStore, scrubbed_checkpoint
from session.models import SessionState
from tests.test_checkpoint_encoded import (
    CAP,
    PATTERN_KEY,
    PLAIN_SECRET,
    T0,
    big_session,
    entry_bytes,
)

SESSION = "0123456789ab"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "agent_spec.md").write_text("# spec\n")
    return path


@pytest.fixture
def full_scrubs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The numbers of the entries scrubbed whole as they were read (the scrub itself runs)."""
    scrubbed: list[int] = []

    def counted(checkpoint: Any, known_secrets: tuple[str, ...]) -> Any:
        scrubbed.append(checkpoint.number)
        return scrubbed_checkpoint(checkpoint, known_secrets)

    monkeypatch.setattr(session.manager, "scrubbed_checkpoint", counted)
    return scrubbed


def written(store: CheckpointStore, workspace: Path, turns: int = 4) -> None:
    write = big_session(turns=turns)
    store.write(
        write.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=write.encoded,
    )


def test_an_entry_read_back_as_it_was_written_is_not_scrubbed_again(
    tmp_path: Path, workspace: Path, full_scrubs: list[int]
) -> None:
    written(CheckpointStore(tmp_path / "project"), workspace)

    again = CheckpointStore(tmp_path / "project")  # a new supervisor: nothing held
    loaded = again.load(SESSION, 1)

    assert full_scrubs == []
    assert PATTERN_KEY not in orjson.dumps(loaded.model_dump(mode="json")).decode()
    assert loaded.state.recent_messages == big_session().state.recent_messages


def test_a_secret_learned_since_an_entry_was_written_is_scrubbed_when_it_is_read(
    tmp_path: Path, workspace: Path
) -> None:
    written(CheckpointStore(tmp_path / "project"), workspace)
    assert PLAIN_SECRET.encode() in entry_bytes(CheckpointStore(tmp_path / "project"), 1)

    loaded = CheckpointStore(tmp_path / "project", (PLAIN_SECRET,)).load(SESSION, 1)

    assert PLAIN_SECRET not in orjson.dumps(loaded.model_dump(mode="json")).decode()


def test_an_entry_changed_since_it_was_written_is_scrubbed_in_full(
    tmp_path: Path, workspace: Path
) -> None:
    store = CheckpointStore(tmp_path / "project")
    written(store, workspace)
    path = store.session_dir(SESSION) / entry_name(1)
    path.write_bytes(path.read_bytes().replace(b"question 1:", f"{PATTERN_KEY}:".encode()))

    loaded = CheckpointStore(tmp_path / "project").load(SESSION, 1)

    assert PATTERN_KEY not in orjson.dumps(loaded.model_dump(mode="json")).decode()


def test_a_secret_written_escaped_in_a_tool_calls_arguments_is_scrubbed_from_checkpoints(
    tmp_path: Path, workspace: Path
) -> None:
    secret = "pässwort-Zq81-vault"
    arguments = json.dumps({"command": f"login --token {secret}"})  # "p\u00e4sswort..."
    call = {
        "kind": "response",
        "parts": [{"part_kind": "tool-call", "tool_name": "run", "args": arguments}],
    }
    state = SessionState.new(T0, SESSION).model_copy(update={"recent_messages": (call,)})
    store = CheckpointStore(tmp_path / "project")
    store.write(state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0)
    assert b"p\\\\u00e4sswort" in entry_bytes(store, 1)

    assert store.scrub_session(SESSION, (secret,)) == 1

    assert b"sswort-Zq81-vault" not in entry_bytes(store, 1)


def bytes_read() -> int:
    """What this process has read from files so far (``rchar``)."""
    with open("/proc/self/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("rchar:"))


def test_the_checkpoint_list_reads_each_entrys_head_only(
    tmp_path: Path, workspace: Path
) -> None:
    store = CheckpointStore(tmp_path / "project")
    written(store, workspace, turns=12)
    written(store, workspace, turns=12)
    whole = CheckpointStore(tmp_path / "project").listing(SESSION).checkpoints

    before = bytes_read()
    listed = CheckpointStore(tmp_path / "project").listed(SESSION)

    assert bytes_read() - before < len(entry_bytes(store, 1)) // 2  # of two entries
    assert [c.model_dump() for c in listed.checkpoints] == [
        {
            "number": c.number, "created_at": c.created_at, "reason": c.reason,
            "files": c.files, "modes": c.modes, "turns": c.turns, "last_user": c.last_user,
            "readable": True,
        }
        for c in whole
    ]


def test_a_listed_entry_changed_since_it_was_written_is_read_whole(
    tmp_path: Path, workspace: Path
) -> None:
    store = CheckpointStore(tmp_path / "project")
    written(store, workspace)
    path = store.session_dir(SESSION) / entry_name(1)
    path.write_bytes(path.read_bytes().replace(b"question 4:", b"QUESTION 4:"))

    (listed,) = CheckpointStore(tmp_path / "project").listed(SESSION).checkpoints

    assert listed.last_user.startswith("QUESTION 4:")


def test_the_checkpoint_list_says_no_secret_learned_since_the_entry_was_written(
    tmp_path: Path, workspace: Path
) -> None:
    write = big_session(turns=2)  # its last request quotes the secret
    store = CheckpointStore(tmp_path / "project")
    store.write(
        write.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=write.encoded,
    )
    (before,) = store.listed(SESSION).checkpoints
    assert PLAIN_SECRET[:12] in before.last_user  # cut inside the secret

    (listed,) = CheckpointStore(tmp_path / "project", (PLAIN_SECRET,)).listed(SESSION).checkpoints

    assert PLAIN_SECRET[:12] not in listed.last_user


def test_the_checkpoint_list_says_no_part_of_a_secret_far_into_the_last_request(
    tmp_path: Path, workspace: Path
) -> None:
    text = "deploy" + " " * 3000 + PLAIN_SECRET + " now"  # its words reach past 1,024 chars
    request = {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": text}]}
    state = SessionState.new(T0, SESSION).model_copy(update={"recent_messages": (request,)})
    CheckpointStore(tmp_path / "project").write(
        state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0
    )

    (listed,) = CheckpointStore(tmp_path / "project", (PLAIN_SECRET,)).listed(SESSION).checkpoints

    assert listed.last_user == "deploy [REDACTED] now"


def without_records(store: CheckpointStore) -> None:
    """As an entry written before session 38 is: no scrub record of it."""
    (store.checkpoints_dir / "scrubbed.index").unlink()


def test_an_entry_written_before_scrub_records_is_scrubbed_whole_once_then_known(
    tmp_path: Path, workspace: Path, full_scrubs: list[int]
) -> None:
    """Standing since session 38: such an entry was scrubbed whole at every read."""
    store = CheckpointStore(tmp_path / "project")
    written(store, workspace)
    without_records(store)
    before = entry_bytes(store, 1)

    first = CheckpointStore(tmp_path / "project").load(SESSION, 1)
    again = CheckpointStore(tmp_path / "project").load(SESSION, 1)

    assert full_scrubs == [1]
    assert again == first and entry_bytes(store, 1) == before, "the entry is left as it is"


def test_an_old_entry_the_scrub_changes_is_scrubbed_at_every_read_and_left_as_it_is(
    tmp_path: Path, workspace: Path, full_scrubs: list[int]
) -> None:
    """A record says the bytes hold what a scrub leaves: not of one that holds a key."""
    store = CheckpointStore(tmp_path / "project")
    written(store, workspace)
    without_records(store)
    path = store.session_dir(SESSION) / entry_name(1)
    path.write_bytes(path.read_bytes().replace(b"question 1:", f"{PATTERN_KEY}:".encode()))
    before = path.read_bytes()

    for _ in range(2):
        loaded = CheckpointStore(tmp_path / "project").load(SESSION, 1)
        assert PATTERN_KEY not in orjson.dumps(loaded.model_dump(mode="json")).decode()

    assert full_scrubs == [1, 1]
    assert path.read_bytes() == before


def test_a_read_only_store_records_nothing(
    tmp_path: Path, workspace: Path, full_scrubs: list[int]
) -> None:
    store = CheckpointStore(tmp_path / "project")
    written(store, workspace)
    without_records(store)

    for _ in range(2):
        CheckpointStore(tmp_path / "project", read_only=True).load(SESSION, 1)

    assert full_scrubs == [1, 1]
    assert not (store.checkpoints_dir / "scrubbed.index").exists()
