"""A checkpoint of a big session splices the save's scrubbed encoding: it restores exactly
and holds no secret, whoever learned the secret and when."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from session.checkpoints import Checkpoint, Unchanged, entry_name
from session.lifecycle import PersistPolicy, SessionLifecycle, WriteSession
from session.manager import CheckpointStore, SessionManager

T0 = datetime(2026, 12, 7, tzinfo=UTC)
CAP = 10**12
BODY = ("the routing table of the triage agent, one queue a line " * 4 + "\n") * 1100
"""About 250 KB: a few of them make the encoding several chunks (``MERGE_BELOW``)."""
PATTERN_KEY = "ghp_abcdefghijklmnopqrstuvwxyz0123456789"
"""Credential-looking: scrubbed by its pattern wherever it is written."""
PLAIN_SECRET = "routing-password-7f3a9c"
"""A value only known to be secret (the environment's, or one a later turn revealed)."""


def read_turn(n: int, files: int, extra: str = "") -> list[ModelMessage]:
    ids = [f"c{n}_{i}" for i in range(files)]
    return [
        ModelRequest(
            parts=[UserPromptPart(f"question {n}: read part{n}_*.md {extra}", timestamp=T0)]
        ),
        ModelResponse(
            parts=[ToolCallPart("read_file", {"path": f"{i}.md"}, i) for i in ids], timestamp=T0
        ),
        ModelRequest(
            parts=[ToolReturnPart("read_file", BODY + extra, i, timestamp=T0) for i in ids]
        ),
        ModelResponse(parts=[TextPart(f"answer {n} {extra}")], timestamp=T0),
    ]


def big_session(known_secrets: tuple[str, ...] = (), turns: int = 4) -> WriteSession:
    """What ``/save`` of a session of ``turns`` turns reading 2 files of 250 KB writes, one
    of them quoting a pattern key and a plain secret."""
    policy = PersistPolicy(max_turns=None, max_chars=None, known_secrets=known_secrets)
    lc = SessionLifecycle(policy=policy).start_fresh(T0, "0123456789ab").lifecycle
    for n in range(1, turns + 1):
        extra = f"key {PATTERN_KEY} pass {PLAIN_SECRET}" if n == 2 else ""
        done = lc.begin_turn(0).complete_turn(
            read_turn(n, 2, extra), now=T0, manifest={}, agent_spec_path=None
        )
        lc = done.lifecycle
    write = lc.write(T0, {}, None)
    return write


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    path = tmp_path / "ws"
    path.mkdir()
    (path / "agent_spec.md").write_text("# spec\n")
    return path


def entry_bytes(store: CheckpointStore, number: int) -> bytes:
    return (store.session_dir("0123456789ab") / entry_name(number)).read_bytes()


def test_a_big_sessions_checkpoint_restores_the_conversation_the_session_file_holds(
    tmp_path: Path, workspace: Path
) -> None:
    write = big_session()
    store = CheckpointStore(tmp_path / "project")
    store.write(
        write.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=write.encoded,
    )
    SessionManager(tmp_path / "sessions").save(write.state, write.encoded)

    restored = CheckpointStore(tmp_path / "project").load("0123456789ab", 1)  # a new supervisor
    saved = SessionManager(tmp_path / "sessions").load("0123456789ab")
    assert restored.state.recent_messages == saved.recent_messages
    assert restored.state.recent_messages == write.state.recent_messages
    assert len(restored.state.recent_messages) == 16
    assert write.encoded is not None and len(write.encoded.chunks) > 1  # spliced, chunk by chunk


def test_a_big_sessions_checkpoint_holds_no_secret_the_session_knew(
    tmp_path: Path, workspace: Path
) -> None:
    write = big_session(known_secrets=(PLAIN_SECRET,))
    store = CheckpointStore(tmp_path / "project")
    store.write(
        write.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=write.encoded, secrets=(PLAIN_SECRET,),
    )

    data = entry_bytes(store, 1)
    assert PATTERN_KEY.encode() not in data
    assert PLAIN_SECRET.encode() not in data
    assert b"[REDACTED" in data


def test_a_secret_the_sessions_encoding_was_not_scrubbed_of_is_scrubbed_from_the_checkpoint(
    tmp_path: Path, workspace: Path
) -> None:
    write = big_session()  # the terminal knew nothing of it; the writer does
    store = CheckpointStore(tmp_path / "project", known_secrets=(PLAIN_SECRET,))
    store.write(
        write.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=write.encoded,
    )
    store.write(
        write.state.model_copy(update={"summary": "later"}), workspace, ["agent_spec.md"],
        reason="save", cap=CAP, now=T0, encoded=write.encoded, secrets=("question 3",),
    )

    assert PLAIN_SECRET.encode() not in entry_bytes(store, 1)
    assert b"question 3" not in entry_bytes(store, 2)
    assert PATTERN_KEY.encode() not in entry_bytes(store, 2)


def test_a_secret_learned_after_a_checkpoint_is_scrubbed_from_it_and_the_next_compares_with_that(
    tmp_path: Path, workspace: Path
) -> None:
    store = CheckpointStore(tmp_path / "project")
    before = big_session()
    first = store.write_unless_unchanged(
        before.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=before.encoded,
    )
    assert isinstance(first, Checkpoint) and PLAIN_SECRET.encode() in entry_bytes(store, 1)

    assert store.scrub_session("0123456789ab", (PLAIN_SECRET,)) == 1
    after = big_session(known_secrets=(PLAIN_SECRET,))  # the same turns, scrubbed of it
    again = store.write_unless_unchanged(
        after.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=after.encoded, secrets=(PLAIN_SECRET,),
    )

    assert PLAIN_SECRET.encode() not in entry_bytes(store, 1)
    assert isinstance(again, Unchanged) and again.latest.number == 1
    assert store.numbers("0123456789ab") == [1]


def test_a_checkpoint_with_nothing_changed_since_the_latest_is_not_written_after_a_restart(
    tmp_path: Path, workspace: Path
) -> None:
    write = big_session()
    CheckpointStore(tmp_path / "project").write(
        write.state, workspace, ["agent_spec.md"], reason="save", cap=CAP, now=T0,
        encoded=write.encoded,
    )

    again = CheckpointStore(tmp_path / "project").write_unless_unchanged(
        write.state, workspace, ["agent_spec.md"], reason="auto", cap=CAP, now=T0,
        encoded=write.encoded,
    )

    assert isinstance(again, Unchanged) and again.latest.number == 1


def test_the_cap_counts_every_entry_written_before_a_restart_a_file_named_state_too(
    tmp_path: Path, workspace: Path
) -> None:
    (workspace / "state").write_text('x ,"state": y\n')
    (workspace / ',"state":x').write_text("odd name\n")
    paths = ["agent_spec.md", "state", ',"state":x']
    store = CheckpointStore(tmp_path / "project")
    for turns in (1, 2):
        write = big_session(turns=turns)
        store.write(
            write.state, workspace, paths, reason="save", cap=CAP, now=T0, encoded=write.encoded
        )
    directory = store.session_dir("0123456789ab")
    entries = sum(os.path.getsize(directory / entry_name(n)) for n in (1, 2))
    blobs = sum(len((workspace / p).read_bytes()) for p in paths)

    assert CheckpointStore(tmp_path / "project").usage("0123456789ab") == entries + blobs


def test_a_state_whose_messages_are_not_the_encodings_is_written_as_its_messages_are(
    tmp_path: Path, workspace: Path
) -> None:
    write = big_session()
    other = tuple(reversed(write.state.recent_messages))
    store = CheckpointStore(tmp_path / "project")
    store.write(
        write.state.model_copy(update={"recent_messages": other}), workspace, ["agent_spec.md"],
        reason="save", cap=CAP, now=T0, encoded=write.encoded,
    )

    restored = CheckpointStore(tmp_path / "project").load("0123456789ab", 1)
    assert restored.state.recent_messages == other
