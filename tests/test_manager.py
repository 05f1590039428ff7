"""SessionManager: durable atomic files, safe reads, quarantine, refusal, pointers."""

from __future__ import annotations

import json
import os
import shutil
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from session.atomic import temp_path
from session.encoded import MERGE_BELOW, EncodedMessages
from session.errors import (
    CorruptSessionFile,
    FutureSchemaVersion,
    InvalidPointer,
    InvalidSessionId,
    SessionError,
    UnsafeSessionFile,
)
from session.history import dump_messages, load_messages
from session.manager import SessionManager, encode_state, json_depth
from session.models import Pointer, SessionState
from tests.conversations import conversation

NOW = datetime(2026, 11, 29, 10, 15, tzinfo=UTC)
SID = "0a1b2c3d4e5f"


@pytest.fixture
def manager(tmp_path: Path) -> SessionManager:
    return SessionManager(tmp_path / "projects" / "ws_12345678" / "sessions")


def later(state: SessionState, *, minutes: int) -> SessionState:
    return state.model_copy(update={"updated_at": state.updated_at + timedelta(minutes=minutes)})


def with_more(state: SessionState) -> SessionState:
    """``state`` as a later turn left it (a copy kept aside holds more than the file)."""
    return state.model_copy(update={"decisions": (*state.decisions, "Log every escalation")})


def full_state(session_id: str = SID) -> SessionState:
    return SessionState(
        session_id=session_id,
        created_at=NOW,
        updated_at=NOW,
        agent_spec_path="agent_spec.md",
        file_manifest={"agent_spec.md": "a" * 64},
        summary="Designed a research agent.",
        decisions=("Use pydantic-ai", "Keep tools read-only"),
        recent_messages=tuple(dump_messages(conversation(0, 2, 1))),
        compacted_history_summary="Earlier: chose the model.",
        checkpoint_count=2,
        phase="design",
    )


def test_a_full_session_with_tool_calls_round_trips(manager: SessionManager) -> None:
    state = full_state()
    manager.save(state)
    loaded = manager.load(SID)
    assert loaded == state
    assert load_messages(loaded.recent_messages) == conversation(0, 2, 1)


@pytest.mark.parametrize(
    "state",
    [
        full_state(),
        full_state().model_copy(update={"recent_messages": ()}),
        full_state().model_copy(update={"summary": None, "compacted_history_summary": None}),
    ],
    ids=["full", "no messages", "no summaries"],
)
def test_messages_encoded_ahead_give_the_same_bytes(state: SessionState) -> None:
    encoded = EncodedMessages.scrub(state.recent_messages, ())
    assert encode_state(state, encoded) == encode_state(state)


@given(
    moment=st.datetimes(timezones=st.just(UTC)),
    summary=st.none() | st.text(),
    decisions=st.lists(st.text(), max_size=3).map(tuple),
    manifest=st.dictionaries(st.text(min_size=1), st.just("b" * 64), max_size=3),
    count=st.integers(min_value=0, max_value=2**40),
    phase=st.sampled_from([None, "design", "code", "deploy"]),
)
def test_the_file_is_what_pydantic_writes_for_the_model(
    moment: datetime,
    summary: str | None,
    decisions: tuple[str, ...],
    manifest: dict[str, str],
    count: int,
    phase: str | None,
) -> None:
    """The session file is encoded from the model's fields directly (no model dump on a
    save's path): byte for byte what pydantic's JSON mode gives, datetimes included."""
    state = full_state().model_copy(
        update={
            "created_at": moment,
            "updated_at": moment,
            "summary": summary,
            "decisions": decisions,
            "file_manifest": manifest,
            "checkpoint_count": count,
            "phase": phase,
        }
    )
    expected = orjson.dumps(state.model_dump(mode="json"))
    assert encode_state(state) == expected
    assert encode_state(state, EncodedMessages.scrub(state.recent_messages, ())) == expected


def test_a_save_of_messages_in_many_chunks_writes_the_same_file(manager: SessionManager) -> None:
    big = {"kind": "request", "parts": [{"content": "x" * MERGE_BELOW}]}
    state = full_state().model_copy(update={"recent_messages": (big, big, big)})
    encoded = EncodedMessages()
    for message in state.recent_messages:
        encoded += EncodedMessages.scrub([message], ())
    assert len(encoded.chunks) == 3
    path = manager.save(state, encoded).path
    assert path.read_bytes() == encode_state(state)


def test_encoded_messages_that_do_not_match_are_refused() -> None:
    state = full_state()
    with pytest.raises(ValueError, match="encoded"):
        encode_state(state, EncodedMessages.scrub(state.recent_messages[1:], ()))


def test_files_are_0600_and_directories_0700(manager: SessionManager) -> None:
    path = manager.save(full_state()).path
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(manager.directory.stat().st_mode) == 0o700
    assert stat.S_IMODE(manager.directory.parent.stat().st_mode) == 0o700


def test_a_file_is_0600_whatever_the_umask(manager: SessionManager) -> None:
    manager.save(full_state())  # the directories exist: only the file is created below
    old = os.umask(0o277)
    try:
        path = manager.save(full_state().model_copy(update={"summary": "under a umask"})).path
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_saving_leaves_no_temp_files_and_replaces_the_old_version(manager: SessionManager) -> None:
    manager.save(full_state())
    manager.save(full_state().model_copy(update={"summary": "second"}))
    assert sorted(os.listdir(manager.directory)) == [f"{SID}.json"]
    assert manager.load(SID).summary == "second"


def test_a_stale_temp_file_from_a_killed_writer_is_replaced_by_the_next_save(
    manager: SessionManager,
) -> None:
    manager.save(full_state())
    stale = temp_path(manager.session_path(SID))
    stale.write_bytes(b'{"half": ')
    stale.chmod(0o644)
    path = manager.save(full_state()).path
    assert not stale.exists()
    assert manager.load(SID) == full_state()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_directory_removed_between_saves_is_created_again(manager: SessionManager) -> None:
    manager.save(full_state())
    shutil.rmtree(manager.directory.parent)
    path = manager.save(full_state()).path
    assert manager.load(SID) == full_state()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_a_symlink_planted_at_the_temp_name_is_not_followed(
    manager: SessionManager, tmp_path: Path
) -> None:
    manager.save(full_state())
    target = tmp_path / "elsewhere.json"
    target.write_bytes(b"untouched")
    temp_path(manager.session_path(SID)).symlink_to(target)
    manager.save(full_state().model_copy(update={"summary": "second"}))
    assert target.read_bytes() == b"untouched"
    assert manager.load(SID).summary == "second"


def test_a_hard_link_at_the_temp_name_is_not_written_through(
    manager: SessionManager, tmp_path: Path
) -> None:
    manager.save(full_state())
    victim = tmp_path / "agent_spec.md"
    victim.write_bytes(b"# precious spec")
    victim.chmod(0o644)
    os.link(victim, temp_path(manager.session_path(SID)))
    manager.save(full_state().model_copy(update={"summary": "second"}))
    assert victim.read_bytes() == b"# precious spec"
    assert stat.S_IMODE(victim.stat().st_mode) == 0o644
    assert manager.load(SID).summary == "second"
    assert sorted(os.listdir(manager.directory)) == [f"{SID}.json"]


def test_a_link_from_the_temp_name_to_the_session_file_still_saves_atomically(
    manager: SessionManager,
) -> None:
    path = manager.save(full_state()).path
    os.link(path, temp_path(path))
    before = path.stat().st_ino
    manager.save(full_state().model_copy(update={"summary": "second"}))
    assert path.stat().st_ino != before  # a new file renamed into place, not rewritten in place
    assert manager.load(SID).summary == "second"
    assert sorted(os.listdir(manager.directory)) == [f"{SID}.json"]


def test_a_fifo_with_a_reader_at_the_temp_name_does_not_stop_saves(
    manager: SessionManager,
) -> None:
    manager.save(full_state())
    fifo = temp_path(manager.session_path(SID))
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        manager.save(full_state().model_copy(update={"summary": "second"}))
    finally:
        os.close(reader)
    assert manager.load(SID).summary == "second"


def test_fields_of_a_fixed_shape_are_never_scrubbed(tmp_path: Path) -> None:
    """A known secret that happens to be part of the session id or of a file's digest
    leaves them as they are (scrubbed, the file could not be read back)."""
    manager = SessionManager(tmp_path, known_secrets=("0a1b2c3d", "aaaaaaaaaaaa"))
    manager.save(full_state())
    saved = orjson.loads((tmp_path / f"{SID}.json").read_bytes())
    assert saved["session_id"] == SID
    assert saved["file_manifest"] == {"agent_spec.md": "a" * 64}
    assert manager.load(SID).file_manifest == {"agent_spec.md": "a" * 64}


def test_corrupt_file_is_moved_aside_with_its_bytes_intact(manager: SessionManager) -> None:
    manager.save(full_state())
    path = manager.session_path(SID)
    garbage = b'{"schema_version": 3, "session_id": "0a1b2c3d4'
    path.write_bytes(garbage)
    with pytest.raises(CorruptSessionFile) as caught:
        manager.load(SID, set_aside="move")
    moved = caught.value.moved_to
    assert moved is not None and moved.read_bytes() == garbage
    assert moved.name.startswith(f"{SID}.json.corrupt-")
    assert not path.exists()
    assert str(caught.value) == f"session file {SID}.json is corrupt; moved aside to {moved.name}"
    assert caught.value.severity == "warning"


@pytest.mark.parametrize(
    "content",
    [
        b"[1, 2]",
        b'{"schema_version": 3, "session_id": "0a1b2c3d4e5f"}',
        b'{"schema_version": "three"}',
    ],
)
def test_content_that_parses_but_is_not_a_session_is_moved_aside(
    manager: SessionManager, content: bytes
) -> None:
    manager.directory.mkdir(parents=True)
    manager.session_path(SID).write_bytes(content)
    with pytest.raises(CorruptSessionFile) as caught:
        manager.load(SID, set_aside="move")
    assert caught.value.moved_to is not None
    assert caught.value.moved_to.read_bytes() == content


def test_a_file_whose_id_differs_from_its_name_is_moved_aside(manager: SessionManager) -> None:
    manager.save(full_state("111111111111"))
    os.rename(manager.session_path("111111111111"), manager.session_path(SID))
    with pytest.raises(CorruptSessionFile):
        manager.load(SID)


def test_two_corruptions_in_one_second_keep_both_copies(manager: SessionManager) -> None:
    manager.directory.mkdir(parents=True)
    for content in (b"one", b"two"):
        manager.session_path(SID).write_bytes(content)
        with pytest.raises(CorruptSessionFile):
            manager.load(SID, set_aside="move")
    kept = sorted(p.read_bytes() for p in manager.directory.glob(f"{SID}.json.corrupt-*"))
    assert kept == [b"one", b"two"]


def test_future_schema_version_is_refused_and_left_untouched(manager: SessionManager) -> None:
    manager.directory.mkdir(parents=True)
    path = manager.session_path(SID)
    raw = orjson.dumps({**full_state().model_dump(mode="json"), "schema_version": 99})
    path.write_bytes(raw)
    with pytest.raises(FutureSchemaVersion) as caught:
        manager.load(SID)
    assert path.read_bytes() == raw
    assert str(caught.value) == (
        f"session file {SID}.json has schema_version 99, newer than this agent-assist "
        "supports (3); left untouched"
    )
    assert caught.value.severity == "error"


def test_older_file_on_disk_loads_migrated(manager: SessionManager) -> None:
    manager.directory.mkdir(parents=True)
    v1: dict[str, object] = {
        "session_id": SID,
        "created_at": "2026-03-30T10:15:00",
        "updated_at": "2026-03-30T10:15:00",
        "agent_spec_path": None,
        "file_manifest": {},
        "summary": None,
        "messages": dump_messages(conversation(0)),
    }
    manager.session_path(SID).write_bytes(orjson.dumps(v1))
    state = manager.load(SID)
    assert state.schema_version == 3
    assert load_messages(state.recent_messages) == conversation(0)


def test_a_symlinked_session_file_is_refused(manager: SessionManager, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(orjson.dumps(full_state().model_dump(mode="json")))
    manager.directory.mkdir(parents=True)
    manager.session_path(SID).symlink_to(elsewhere)
    with pytest.raises(UnsafeSessionFile, match="symlink"):
        manager.load(SID)
    assert manager.session_path(SID).is_symlink()
    assert elsewhere.exists()


def test_a_fifo_or_an_oversized_file_is_refused(tmp_path: Path) -> None:
    small = SessionManager(tmp_path / "s", max_session_bytes=100)
    small.save(full_state())
    with pytest.raises(UnsafeSessionFile, match="cap"):
        small.load(SID)
    os.mkfifo(small.session_path("222222222222"))
    with pytest.raises(UnsafeSessionFile, match="not a regular file"):
        small.load("222222222222")


def test_paths_are_never_built_from_invalid_ids(manager: SessionManager) -> None:
    for bad in ("../../etc/passwd", "0A1B2C3D4E5F", "x" * 12):
        with pytest.raises(InvalidSessionId):
            manager.session_path(bad)


def test_delete_removes_the_file_and_reports_whether_there_was_one(
    manager: SessionManager,
) -> None:
    manager.save(full_state())
    assert manager.delete(SID) is True
    assert manager.delete(SID) is False
    with pytest.raises(FileNotFoundError):
        manager.load(SID)


def test_delete_removes_the_temp_a_killed_save_left_beside_the_file(
    manager: SessionManager,
) -> None:
    """H82's reading: a save killed mid-write leaves ``.<id>.json.tmp``, cleared by the next
    save of that session; after /reset or sessions rm no save comes, and it stayed."""
    manager.save(full_state())
    left = manager.session_path(SID).with_name(f".{SID}.json.tmp")
    left.write_bytes(b'{"half": ')
    assert manager.delete(SID) is True
    assert not left.exists()


def test_listing_is_newest_first_and_reports_bad_files_without_stopping(
    manager: SessionManager,
) -> None:
    older = full_state("111111111111").model_copy(
        update={"updated_at": datetime(2026, 1, 1, tzinfo=UTC)}
    )
    manager.save(older)
    manager.save(full_state("222222222222"))
    manager.session_path("333333333333").write_bytes(b"not json")
    (manager.directory / "notes.json").write_bytes(b"{}")
    listing = manager.list_sessions()
    read = [s.session_id for s in listing.sessions if s.note is None]
    assert read == ["222222222222", "111111111111"]
    assert [s.session_id for s in listing.sessions if s.note] == ["333333333333"]  # left
    assert [type(p) for p in listing.problems] == [CorruptSessionFile]
    assert (manager.directory / "notes.json").exists()


def summaries(manager: SessionManager) -> dict[str, str | None]:
    return {s.session_id: s.summary for s in manager.list_sessions().sessions}


def test_a_second_listing_sees_what_changed_since_the_first(manager: SessionManager) -> None:
    for session_id in ("111111111111", "222222222222", "333333333333"):
        manager.save(full_state(session_id))
    assert set(summaries(manager).values()) == {"Designed a research agent."}
    manager.save(full_state("111111111111").model_copy(update={"summary": "saved by us"}))
    other_writer = SessionManager(manager.directory)
    other_writer.save(full_state("222222222222").model_copy(update={"summary": "edited outside"}))
    manager.delete("333333333333")
    assert summaries(manager) == {"111111111111": "saved by us", "222222222222": "edited outside"}
    manager.session_path("111111111111").write_bytes(b"not json any more")
    listing = manager.list_sessions()
    assert [s.session_id for s in listing.sessions if s.note is None] == ["222222222222"]
    assert [type(p) for p in listing.problems] == [CorruptSessionFile]


def pointer(pid: int, session_id: str = SID) -> Pointer:
    return Pointer(session_id=session_id, pid=pid, pid_start_time=1234.5, updated_at=NOW)


def test_pointer_round_trip_and_delete(manager: SessionManager) -> None:
    manager.write_pointer(pointer(4242))
    assert manager.read_pointer(4242) == pointer(4242)
    assert manager.read_pointer(4243) is None
    assert manager.delete_pointer(4242) is True
    assert manager.read_pointer(4242) is None


def test_a_directory_in_place_of_a_pointer_or_session_file_is_moved_aside_not_failed_on(
    manager: SessionManager,
) -> None:
    """A helper's attack: a directory at active_<pid>.json made every pointer write fail
    with a raw "[Errno 21] Is a directory" line, and the run still exit 0."""
    in_the_way = manager.pointer_path(4242)
    in_the_way.mkdir(parents=True)
    (in_the_way / "kept.txt").write_text("mine")
    manager.write_pointer(pointer(4242))
    assert manager.read_pointer(4242) == pointer(4242)
    (aside,) = in_the_way.parent.glob("active_4242.json.corrupt-*")
    assert (aside / "kept.txt").read_text() == "mine", "moved aside, never deleted"


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (
            {
                "session_id": "../../etc/x",
                "pid": 4242,
                "pid_start_time": None,
                "updated_at": "2026-11-29T10:15:00Z",
            },
            "bad session id",
        ),
        (
            {
                "session_id": "ZZZZZZZZZZZZ",
                "pid": 4242,
                "pid_start_time": None,
                "updated_at": "2026-11-29T10:15:00Z",
            },
            "bad session id",
        ),
        (
            {
                "session_id": SID,
                "pid": 99,
                "pid_start_time": None,
                "updated_at": "2026-11-29T10:15:00Z",
            },
            "pid does not match the file name",
        ),
        ({"session_id": SID}, "bad fields"),
    ],
)
def test_invalid_pointers_are_ignored_and_reported(
    manager: SessionManager, content: dict[str, object], reason: str
) -> None:
    manager.directory.mkdir(parents=True)
    (manager.directory / "active_4242.json").write_bytes(orjson.dumps(content))
    os.utime(manager.directory / "active_4242.json", (0, 0))  # before any process now running
    with pytest.raises(InvalidPointer) as caught:
        manager.read_pointer(4242)
    assert str(caught.value) == f"ignoring invalid session pointer active_4242.json ({reason})"
    listing = manager.list_pointers(set_aside="move")
    assert listing.pointers == ()
    (moved,) = manager.directory.glob("active_4242.json.corrupt-*")
    assert moved.read_bytes() == orjson.dumps(content), "moved aside, never deleted"
    assert [str(p) for p in listing.problems] == [f"{caught.value}; moved aside to {moved.name}"]
    assert manager.list_pointers(set_aside="move").problems == (), "told once, not each time"


def test_an_unreadable_pointer_of_a_running_terminal_is_left_and_its_session_unknown(
    manager: SessionManager,
) -> None:
    """H165: skipped as any invalid pointer, the session of the living tab that wrote it
    was taken for orphaned (and pruned), and the pointer moved aside."""
    running = os.getpid()
    manager.directory.mkdir(parents=True)
    path = manager.directory / f"active_{running}.json"
    path.write_bytes(b'{"session_id": "0a1b')
    listing = manager.list_pointers(set_aside="move")
    assert [str(p) for p in listing.problems] == [
        f"ignoring invalid session pointer active_{running}.json (not JSON); terminal "
        f"{running} still runs: left in place, its session unknown"
    ]
    assert listing.unknown == listing.problems
    assert path.read_bytes() == b'{"session_id": "0a1b', "left for its terminal to replace"


def test_an_unreadable_pointer_written_before_its_pid_was_reused_is_moved_aside(
    manager: SessionManager,
) -> None:
    """The process at its pid started after it was written: another process than the
    terminal, which is gone, so the pointer names no living tab."""
    running = os.getpid()
    manager.directory.mkdir(parents=True)
    path = manager.directory / f"active_{running}.json"
    path.write_bytes(b"{bad")
    os.utime(path, (0, 0))
    listing = manager.list_pointers(set_aside="move")
    assert listing.unknown == ()
    assert list(manager.directory.glob(f"active_{running}.json.corrupt-*"))


def test_a_pointer_with_a_field_of_a_newer_version_is_read(manager: SessionManager) -> None:
    """A pointer has no schema version: one a newer agent-assist wrote with one more field
    was moved aside as invalid, and its tab lost its session."""
    manager.directory.mkdir(parents=True)
    raw = {**pointer(4242).model_dump(mode="json"), "tty": "/dev/pts/3"}
    (manager.directory / "active_4242.json").write_bytes(orjson.dumps(raw))
    assert manager.read_pointer(4242) == pointer(4242)
    assert manager.list_pointers().pointers == (pointer(4242),)


def test_listing_pointers_skips_bad_names_and_keeps_good_ones(manager: SessionManager) -> None:
    manager.write_pointer(pointer(10))
    (manager.directory / "active_abc.json").write_bytes(b"{}")
    (manager.directory / "active_11.json").write_bytes(b"garbage")
    listing = manager.list_pointers()
    assert listing.pointers == (pointer(10),)
    assert sorted(p.path.name for p in listing.problems) == ["active_11.json", "active_abc.json"]


def test_a_read_only_manager_reports_a_corrupt_file_and_leaves_it(tmp_path: Path) -> None:
    directory = tmp_path / "sessions"
    directory.mkdir()
    (directory / f"{SID}.json").write_bytes(b"garbage")
    with pytest.raises(CorruptSessionFile) as caught:
        SessionManager(directory, read_only=True).load(SID)
    assert (directory / f"{SID}.json").read_bytes() == b"garbage"
    assert "left in place" in str(caught.value)


def test_a_newer_session_is_still_listed_and_reported(manager: SessionManager) -> None:
    manager.save(full_state())
    path = manager.session_path(SID)
    raw = orjson.dumps({**orjson.loads(path.read_bytes()), "schema_version": 99})
    path.write_bytes(raw)
    listing = manager.list_sessions()
    (header,) = listing.sessions
    assert header.session_id == SID
    assert header.note == "schema_version 99 is newer than this agent-assist supports (3)"
    assert header.summary == "Designed a research agent."
    assert [type(p) for p in listing.problems] == [FutureSchemaVersion]
    assert path.read_bytes() == raw


ODD_PARTS = [5, None, "text", {"part_kind": "user-prompt"}]


def with_message(manager: SessionManager, message: object, schema_version: int = 3) -> None:
    """The saved session with ``message`` appended to its tail by hand."""
    path = manager.session_path(SID)
    raw = orjson.loads(path.read_bytes())
    raw["recent_messages"].append(message)
    raw["schema_version"] = schema_version
    path.write_bytes(orjson.dumps(raw))


@pytest.mark.parametrize("parts", ODD_PARTS)
def test_a_newer_versions_message_of_another_shape_is_listed_without_a_turn_not_an_error(
    manager: SessionManager, parts: object
) -> None:
    """Counting a listed file's turns walks messages that are not validated yet: one
    whose parts were not a list broke the listing of the whole project."""
    manager.save(full_state())
    turns = manager.list_sessions().sessions[0].turns
    with_message(manager, {"kind": "request", "parts": parts}, schema_version=99)
    listing = SessionManager(manager.directory).list_sessions()
    (header,) = listing.sessions
    assert header.turns == turns


@pytest.mark.parametrize(
    "message",
    [
        *({"kind": "request", "parts": parts} for parts in ODD_PARTS),
        {"kind": "request", "parts": [{"part_kind": "user-prompt-v2", "content": "x"}]},
        {"kind": "response", "parts": [{"part_kind": "user-prompt", "content": "x"}]},
        {"kind": "summary", "parts": []},
        {"kind": ["request"], "parts": []},
    ],
)
def test_a_session_with_a_message_of_a_shape_this_version_cannot_read_is_listed_with_a_note(
    manager: SessionManager, message: dict[str, object]
) -> None:
    """Its turns cannot be counted (it was listed with "0 turns"), and it is never
    offered (a note): a resume of it would be refused once chosen."""
    manager.save(full_state())
    with_message(manager, message)
    listing = SessionManager(manager.directory).list_sessions()
    (header,) = listing.sessions
    assert header.turns is None
    assert header.note is not None
    assert header.note.startswith("messages this agent-assist cannot read: message ")
    (problem,) = listing.problems
    assert str(problem).startswith(
        f"session file {SID}.json holds messages this agent-assist cannot read (message "
    )


@pytest.mark.parametrize("kind", ["symlink", "directory", "fifo", "dangling symlink"])
def test_a_stale_temp_of_the_wrong_type_does_not_block_saves(tmp_path: Path, kind: str) -> None:
    manager = SessionManager(tmp_path)
    state = SessionState.new(datetime(2026, 11, 29, tzinfo=UTC), "aaaaaaaaaaaa")
    tmp = temp_path(manager.session_path("aaaaaaaaaaaa"))
    target = tmp_path / "elsewhere"
    target.write_text("not ours")
    if kind == "symlink":
        tmp.symlink_to(target)
    elif kind == "dangling symlink":
        tmp.symlink_to(tmp_path / "missing")
    elif kind == "directory":
        tmp.mkdir()
        (tmp / "inside").write_text("kept")
    else:
        os.mkfifo(tmp)
    manager.save(state)
    manager.save(state)
    assert manager.load("aaaaaaaaaaaa") == state
    assert target.read_text() == "not ours"  # a symlink is never followed
    assert not tmp.exists() and not tmp.is_symlink()
    if kind == "directory":
        (aside,) = tmp_path.glob(f"{tmp.name}.stale-*")
        assert (aside / "inside").read_text() == "kept"


def nested_session(tmp_path: Path, depth: int) -> Path:
    args: object = "x"
    for _ in range(depth):
        args = {"a": args}
    raw = full_state().model_dump(mode="json")
    raw["recent_messages"] = [
        {
            "kind": "request",
            "parts": [
                {"part_kind": "user-prompt", "content": "hi", "timestamp": "2026-11-29T12:00:00Z"}
            ],
        },
        {
            "kind": "response",
            "parts": [
                {"part_kind": "tool-call", "tool_name": "t", "args": args, "tool_call_id": "c"}
            ],
            "timestamp": "2026-11-29T12:00:00Z",
        },
    ]
    path = tmp_path / f"{SID}.json"
    path.write_text(json.dumps(raw))
    return path


def test_a_deeply_nested_but_valid_session_loads_lists_and_saves(tmp_path: Path) -> None:
    nested_session(tmp_path, 150)
    manager = SessionManager(tmp_path)
    state = manager.load(SID)
    assert len(load_messages(state.recent_messages)) == 2
    assert [h.session_id for h in manager.list_sessions().sessions] == [SID]
    manager.save(state)
    assert manager.load(SID) == state


def depth_of(value: object) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


JSON_TEXT = st.text(alphabet=st.sampled_from(list('[]{}"\\\\/ax\n\u00e9')), max_size=12)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | JSON_TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(JSON_TEXT, inner, max_size=3),
    max_leaves=30,
)


@given(JSON_VALUES)
def test_the_depth_read_off_the_brackets_is_the_values_depth(value: object) -> None:
    """Brackets, quotes and backslashes inside strings are not structure."""
    assert json_depth(orjson.dumps(value)) == depth_of(value)
    assert json_depth(json.dumps(value, indent=1).encode()) == depth_of(value)


@pytest.mark.parametrize("depth", [300, 2000])
def test_a_session_nested_deeper_than_can_be_written_back_is_refused_by_name(
    tmp_path: Path, depth: int
) -> None:
    path = nested_session(tmp_path, depth) if depth < 900 else tmp_path / f"{SID}.json"
    if depth >= 900:
        path.write_bytes(b'{"recent_messages": ' + b"[" * depth + b"]" * depth + b"}")
    before = path.read_bytes()
    with pytest.raises(UnsafeSessionFile) as caught:
        SessionManager(tmp_path).load(SID)
    assert "nests over" in str(caught.value) or "nested over" in str(caught.value)
    assert str(caught.value).startswith(f"refusing session file {SID}.json")
    assert path.read_bytes() == before  # valid JSON: left untouched, not moved aside


@pytest.mark.parametrize("other", [[], None])
def test_a_v1_file_with_both_message_keys_is_checked_on_the_list_it_migrates(
    tmp_path: Path, other: object
) -> None:
    """v1 keeps its messages under ``messages``; a stray ``recent_messages`` beside them
    must not be the list the depth check looks at."""
    path = nested_session(tmp_path, 240)
    raw = json.loads(path.read_text())
    v1 = {
        "session_id": SID,
        "created_at": "2026-11-29T10:15:00",
        "updated_at": "2026-11-29T10:15:00",
        "messages": raw["recent_messages"],
        "recent_messages": other,
    }
    path.write_text(json.dumps(v1))
    with pytest.raises(UnsafeSessionFile, match="nests over 200"):
        SessionManager(tmp_path).load(SID)
    (row,) = SessionManager(tmp_path, read_only=True).list_sessions().sessions
    assert row.note == "refused: a message nests over 200 levels deep"  # listed, not read


def test_a_refused_session_file_is_still_listed_with_why(
    manager: SessionManager, tmp_path: Path
) -> None:
    """A listing hid session files that are still on disk (a symlink, one over the cap)."""
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("{}")
    manager.directory.mkdir(parents=True)
    manager.session_path(SID).symlink_to(elsewhere)
    listing = manager.list_sessions()
    (row,) = listing.sessions
    assert (row.session_id, row.note) == (SID, "refused: it is a symlink")
    assert [str(p) for p in listing.problems] == [
        f"refusing session file {SID}.json (it is a symlink); left untouched"
    ]


def test_a_corrupt_file_is_listed_alike_read_only_or_not(tmp_path: Path) -> None:
    """Left in place by a read-only listing, it is listed, with a note (H148: it had no
    row, so ``sessions --json`` hid a session file still on disk); moved aside by one that
    may write, it is no session file any more. A warning (no failure) names it."""
    SessionManager(tmp_path).directory.mkdir(parents=True, exist_ok=True)
    path = SessionManager(tmp_path).session_path(SID)
    path.write_text('{"schema_version": 3, "x": ')
    read_only = SessionManager(tmp_path, read_only=True).list_sessions()
    (row,) = read_only.sessions
    assert (row.session_id, row.turns) == (SID, None) and path.exists()
    assert row.note is not None and row.note.startswith("corrupt")
    (problem,) = read_only.problems
    assert problem.severity == "warning" and f"{SID}.json is corrupt" in str(problem)
    left = SessionManager(tmp_path).list_sessions()
    assert left.sessions == read_only.sessions and path.exists(), "a listing changes no file"
    assert [str(p) for p in left.problems] == [str(problem)]
    moved = SessionManager(tmp_path).list_sessions(set_aside="move")
    assert moved.sessions == () and not path.exists()
    assert [p.severity for p in moved.problems] == ["warning"]


@pytest.mark.parametrize(
    "link", ["projects", "projects/ws_00000000", "projects/ws_00000000/sessions"]
)
def test_a_directory_symlink_inside_the_home_is_refused_like_a_file_symlink(
    tmp_path: Path, link: str
) -> None:
    from session.catalog import SessionCatalog
    from session.errors import UnsafeSessionDirectory

    root = tmp_path / "home"
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "ws_00000000" / "sessions").mkdir(parents=True)
    (elsewhere / "sessions").mkdir()
    (root / link).parent.mkdir(parents=True, exist_ok=True)
    depth = link.count("/")
    target = {0: elsewhere, 1: elsewhere / "ws_00000000", 2: elsewhere / "sessions"}[depth]
    (root / link).symlink_to(target, target_is_directory=True)
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    manager = catalog.manager(project)
    with pytest.raises(UnsafeSessionDirectory, match="symlink"):
        manager.save(full_state())
    listing = catalog.list((project,), {})
    assert listing.rows == ()
    assert [w.startswith("error: refusing sessions directory") for w in listing.warnings] == [True]
    assert not list(elsewhere.rglob("*.json"))


def test_unsaved_turns_are_never_kept_in_a_shared_directory_someone_else_prepared(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the home unwritable, the last place is under /tmp: a directory (or a link to
    one) that another user made there took the only copy of the turns."""
    import tempfile

    from session.catalog import SessionCatalog, recovered_places
    from session.models import SessionState

    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(shared))
    elsewhere = tmp_path / "world-writable"
    elsewhere.mkdir(mode=0o777)
    os.chmod(elsewhere, 0o777)
    root = tmp_path / "home"
    project = root / "projects" / "p_12345678" / "sessions"
    (shared / recovered_places(root, project)[-1].parent.name).symlink_to(elsewhere)
    root.write_text("not a directory: the first two places fail\n")
    catalog = SessionCatalog(root)
    state = SessionState.new(datetime(2026, 12, 2, tzinfo=UTC))
    with pytest.raises(OSError, match="is not a private directory of this user"):
        catalog.keep_unsaved(project, state)
    assert os.listdir(elsewhere) == []


def test_turns_kept_in_recovered_are_told_by_the_listing_until_the_session_is_written(
    tmp_path: Path,
) -> None:
    """A helper's report: turns written to recovered/ (their saves failed) were never told
    again; the next start offered the older file without a word."""
    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    manager = catalog.manager(project)
    state = full_state()
    manager.save(state)
    ahead = later(with_more(state), minutes=1)  # its save failed
    kept = catalog.keep_unsaved(project, ahead)
    assert kept.parent == project.parent / "recovered"
    (line,) = catalog.list((project,), {}).warnings
    assert line.startswith(f"warning: session {state.session_id} has turns its file lacks")
    assert str(kept) in line and line.endswith("resuming the session goes on with them")
    (line,) = catalog.find_resumable(project, 4242, {}).warnings
    assert str(kept) in line
    manager.save(later(ahead, minutes=1))  # saved again since, holding what the copy holds
    assert catalog.list((project,), {}).warnings == ()


def test_a_copy_the_session_went_on_without_is_never_said_to_be_copied_over_the_file(
    tmp_path: Path,
) -> None:
    """A helper's report: after a copy was kept, the session went on from its older file
    and was saved with a new turn; the listing still said to copy the older copy over
    the file, which would have lost that turn."""
    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    state = full_state()
    catalog.manager(project).save(state)
    two_more = full_state().model_copy(
        update={"recent_messages": tuple(dump_messages(conversation(0, 2, 1, 0, 0)))}
    )
    kept = catalog.keep_unsaved(project, later(two_more, minutes=1))
    one_more = full_state().model_copy(
        update={"recent_messages": tuple(dump_messages(conversation(0, 2, 1, 0)))}
    )
    went_on = later(one_more, minutes=2)
    catalog.manager(project).save(went_on)
    (line,) = catalog.list((project,), {}).warnings
    assert line.startswith(f"note: session {SID} went on from its file without the turns kept")
    assert str(kept) in line and "goes on with them" not in line
    assert catalog.recovery_ahead(project, went_on) is None  # a resume keeps the newer file


def test_a_resume_goes_on_from_a_copy_kept_after_the_file_was_written(tmp_path: Path) -> None:
    """A helper's report: with the disk full, a terminal killed, the next start resumed
    the older file, and the turns whose saves had failed were dropped."""
    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    state = full_state()
    catalog.manager(project).save(state)
    catalog.keep_unsaved(project, later(with_more(state), minutes=1))
    newest = later(with_more(with_more(state)), minutes=2)
    kept = catalog.keep_unsaved(project, newest, name=f"{SID}-20991231T000000Z.json")
    found = catalog.recovery_ahead(project, state)
    assert found is not None
    path, resumed = found
    assert path == kept and resumed.decisions == newest.decisions


def test_a_manifest_entry_with_no_valid_digest_is_left_out_not_the_whole_session(
    manager: SessionManager,
) -> None:
    """A helper's attack: one hand-edited digest moved the whole session aside."""
    path = manager.save(full_state()).path
    data = orjson.loads(path.read_bytes())
    good = dict(data["file_manifest"])
    data["file_manifest"] = {**good, "edited.md": "not-a-digest", "odd.md": 7}
    path.write_bytes(orjson.dumps(data))
    loaded = manager.load(SID)
    assert loaded.file_manifest == good
    assert path.exists() and not list(path.parent.glob("*.corrupt-*"))


def test_removing_a_session_whose_file_is_a_directory_is_refused_in_one_line(
    manager: SessionManager,
) -> None:
    """A helper's attack: `sessions rm` printed a raw "Is a directory" error."""
    from session.errors import UnsafeSessionFile

    path = manager.session_path(SID)
    path.mkdir(parents=True)
    with pytest.raises(UnsafeSessionFile) as refused:
        manager.delete(SID)
    assert str(refused.value) == (
        f"refusing session file {SID}.json (not a regular file); left untouched"
    )
    assert path.is_dir()


def test_a_pointer_name_with_a_leading_zero_is_a_bad_pid_not_another_terminals(
    manager: SessionManager,
) -> None:
    """A helper's attack: active_09004.json was read as active_9004.json (the live
    terminal's pointer) and never reported."""
    manager.write_pointer(pointer(9004))
    (manager.directory / "active_09004.json").write_bytes(b"{junk")
    listing = manager.list_pointers()
    assert listing.pointers == (pointer(9004),)
    assert [p.reason for p in listing.problems] == ["bad pid in name"]


def test_removing_a_session_leaves_invalid_pointers_for_a_listing_to_tell(
    manager: SessionManager,
) -> None:
    """A helper's attack: `sessions rm` moved invalid pointers aside and nobody was told."""
    manager.save(full_state())
    (manager.directory / "active_7201.json").write_bytes(b"{bad")
    assert manager.delete(SID)
    assert (manager.directory / "active_7201.json").read_bytes() == b"{bad"
    assert [p.path.name for p in manager.list_pointers().problems] == ["active_7201.json"]


@pytest.mark.parametrize("taken", ["the project's place", "the home's place too"])
def test_turns_kept_in_a_fallback_place_are_told_by_the_listing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, taken: str
) -> None:
    """A helper's attack (a full disk): the copy went to <tmp>/agent-assist-recovered-<uid>
    and no listing or start ever told it; only the project's own place was looked in."""
    import tempfile

    from session.catalog import SessionCatalog

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    catalog.manager(project).save(full_state())
    old = (project / f"{SID}.json").stat().st_mtime - 10
    os.utime(project / f"{SID}.json", (old, old))
    (project.parent / "recovered").write_text("in the way\n")
    if taken == "the home's place too":
        (root / "recovered").write_text("in the way\n")
    kept = catalog.keep_unsaved(project, later(with_more(full_state()), minutes=1))
    assert kept.parent.name == "ws_00000000", "named for its project"
    (line,) = catalog.list((project,), {}).warnings
    assert str(kept) in line
    other = root / "projects" / "other_11111111" / "sessions"
    catalog.manager(other).save(full_state("b" * 12))
    assert catalog.list((other,), {}).warnings == (), "another project's copy is not its"


def test_a_copy_put_back_with_its_time_kept_is_not_warned_about(tmp_path: Path) -> None:
    """A helper's report: ``cp -p`` of the copy over the session file kept warning (the
    file's time was the copy's, not later)."""
    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    state = full_state()
    catalog.manager(project).save(full_state())
    kept = catalog.keep_unsaved(project, later(with_more(state), minutes=1))
    assert catalog.list((project,), {}).warnings
    shutil.copy2(kept, project / f"{state.session_id}.json")
    assert catalog.list((project,), {}).warnings == ()


def test_the_copies_kept_under_tmp_are_each_homes_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A helper's report: two homes with the same workspace shared the place under /tmp,
    and each warned of the other's copies (telling the user to copy one into the other)."""
    import tempfile

    from session.catalog import SessionCatalog

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    one, other = SessionCatalog(tmp_path / "one"), SessionCatalog(tmp_path / "other")
    (tmp_path / "one").write_text("in the way: the copy goes under /tmp\n")
    project = tmp_path / "one" / "projects" / "ws_00000000" / "sessions"
    kept = one.keep_unsaved(project, later(full_state(), minutes=1))
    assert kept.is_relative_to(tmp_path / "tmp")
    theirs = tmp_path / "other" / "projects" / "ws_00000000" / "sessions"
    other.manager(theirs).save(full_state("b" * 12))
    assert other.list((theirs,), {}).warnings == ()


@pytest.mark.parametrize("latest", ["this process", "its parent"])
def test_an_idle_session_names_the_living_terminal_that_used_it_last(
    tmp_path: Path, latest: str
) -> None:
    """H122's find: a session resumed in a second tab, then left, has two living tabs
    pointing to it; ``sessions`` named the first pointer in name order, not the tab that
    used it last (the one just left showed the other tab's pid)."""
    from session.catalog import SessionCatalog
    from session.processes import process_start_time

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    manager = catalog.manager(project)
    manager.save(full_state())
    newest = os.getpid() if latest == "this process" else os.getppid()
    for pid in (os.getpid(), os.getppid()):
        at = NOW + timedelta(minutes=5 if pid == newest else 0)
        started = process_start_time(pid)
        manager.write_pointer(
            Pointer(session_id=SID, pid=pid, pid_start_time=started, updated_at=at)
        )
    rows, _ = catalog.rows(project, {})
    assert [(row.state, row.terminal_pid) for row in rows] == [("idle", newest)]



class _Opens:
    """The paths this process opens while ``counting`` (an audit hook: one per process,
    never removed, so installed once)."""

    paths: ClassVar[list[str]] = []
    counting: ClassVar[bool] = False
    installed: ClassVar[bool] = False

    @classmethod
    def hook(cls, event: str, args: tuple[object, ...]) -> None:
        if cls.counting and event == "open" and isinstance(args[0], str | bytes | Path):
            cls.paths.append(os.fsdecode(args[0]))


def test_a_resume_reads_a_sessions_recovery_copies_once_while_they_stay_as_they_were(
    tmp_path: Path,
) -> None:
    """The claim (``stored``), the load and the recovery check of one resume of a session
    with no file each parsed every recovery copy of it again (H151); the files still
    decide: a copy written again is read again."""
    import sys

    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    project.mkdir(parents=True)
    older = catalog.keep_unsaved(project, full_state(), name=f"{SID}-20260101T000000Z.json")
    newest = catalog.keep_unsaved(project, later(with_more(full_state()), minutes=1))
    if not _Opens.installed:
        sys.addaudithook(_Opens.hook)
        _Opens.installed = True

    def reads() -> int:
        return sum(1 for path in _Opens.paths if path in (str(older), str(newest)))

    _Opens.paths.clear()
    _Opens.counting = True
    try:
        for _ in range(3):  # three resumes in a row, as the StorageActor's catalog serves them
            assert catalog.stored(project, SID)
            state = catalog.load(project, SID, "unscrubbed", "leave")
            assert catalog.recovery_ahead(project, state) is None
        # the newest loaded by each resume; no copy parsed for its facts: its writer
        # recorded them (copies.index), and a copy changed since is read (the test below)
        assert reads() == 3
        written_again = later(with_more(with_more(full_state())), minutes=2)
        catalog.keep_unsaved(project, written_again, name=newest.name)
        assert catalog.stored(project, SID)
        assert reads() == 3
        assert catalog.load(project, SID, "none", "leave").decisions == written_again.decisions
    finally:
        _Opens.counting = False


def test_rm_whose_recovery_copy_stays_says_the_session_file_is_gone(tmp_path: Path) -> None:
    """H159: a recovery copy that could not be removed after the file was had ``sessions
    rm`` say the session was not removed and stayed as it was."""
    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    manager = catalog.manager(project)
    state = full_state()
    manager.save(state)
    kept = catalog.keep_unsaved(project, later(with_more(state), minutes=1))
    kept.unlink()
    kept.mkdir()  # a directory at the copy's name: its unlink fails
    with pytest.raises(SessionError) as raised:
        catalog.remove_session(project, state.session_id, if_saved=True)
    assert not manager.exists(state.session_id)
    assert str(raised.value).startswith(
        f"error: the recovery copies of session {state.session_id} not removed"
    )


def test_a_cold_listing_reads_no_recovery_copy_its_writer_recorded(tmp_path: Path) -> None:
    """H166's report: ``sessions`` with no supervisor read a recovery copy whole to count its
    turns (a 200 MB copy: 630 MB and seconds), and the whole session file beside it to see
    whether the copy was put back. The copy's writer records what a listing needs of it
    (``copies.index``); the listing says the same lines, opening neither."""
    import sys

    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    project = root / "projects" / "ws_00000000" / "sessions"
    writer = SessionCatalog(root)
    state = full_state()
    writer.manager(project).save(state)
    ahead = writer.keep_unsaved(project, later(with_more(state), minutes=1))  # its save failed
    two_more = full_state().model_copy(
        update={"recent_messages": tuple(dump_messages(conversation(0, 2, 1, 0, 0)))}
    )
    other = full_state("1a1b2c3d4e5f")
    writer.manager(project).save(later(other, minutes=2))  # went on without the copy's turns
    behind = writer.keep_unsaved(project, later(two_more, minutes=1).model_copy(
        update={"session_id": other.session_id}
    ))
    writer.manager(project).list_sessions(set_aside="move")  # the headers' index, as a start
    if not _Opens.installed:
        sys.addaudithook(_Opens.hook)
        _Opens.installed = True
    _Opens.paths.clear()
    _Opens.counting = True
    try:
        warnings = SessionCatalog(root, read_only=True).list((project,), {}).warnings
    finally:
        _Opens.counting = False
    opened = set(_Opens.paths)
    assert not opened & {str(ahead), str(behind), str(project / f"{SID}.json")}, opened
    assert sorted(line.split(" ", 3)[:3] for line in warnings) == [
        ["note:", "session", other.session_id],
        ["warning:", "session", SID],
    ]


def test_a_recovery_copy_changed_since_its_writer_recorded_it_is_read_again(
    tmp_path: Path,
) -> None:
    """The record is never trusted over the file: a copy replaced by hand (another copy put
    at its name) is read, and the listing tells what it holds."""
    from session.catalog import SessionCatalog

    root = tmp_path / "home"
    project = root / "projects" / "ws_00000000" / "sessions"
    writer = SessionCatalog(root)
    state = full_state()
    writer.manager(project).save(state)
    ahead = writer.keep_unsaved(project, later(with_more(state), minutes=1))
    behind = writer.keep_unsaved(project, state, name=f"{SID}-20260101T000000Z.json")
    os.replace(behind, ahead)  # the older copy, put at the newer's name
    assert SessionCatalog(root, read_only=True).list((project,), {}).warnings == ()


def test_rm_takes_an_idle_session_whose_tab_is_known_beside_an_unreadable_pointer(
    tmp_path: Path,
) -> None:
    """H175: ``rm`` refuses a session a running terminal may hold (its pointer unreadable),
    not one a living tab's readable pointer names: that one is idle, and rm takes idle
    sessions it is named."""
    from session.catalog import SessionCatalog
    from session.errors import MayBeHeld
    from session.processes import process_start_time

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / "ws_00000000" / "sessions"
    manager = catalog.manager(project)
    idle, orphan = full_state(), full_state("0b1b2c3d4e5f")
    manager.save(idle)
    manager.save(orphan)
    me, parent = os.getpid(), os.getppid()
    started = process_start_time(me)
    manager.write_pointer(Pointer(session_id=SID, pid=me, pid_start_time=started, updated_at=NOW))
    (project / f"active_{parent}.json").write_bytes(b'{"session_id": "0a1b')
    with pytest.raises(MayBeHeld) as caught:
        catalog.remove_session(project, orphan.session_id, if_saved=True)
    assert caught.value.session_id == orphan.session_id
    assert [p.runs for p in caught.value.unknown] == [parent]
    assert catalog.remove_session(project, SID, if_saved=True)
    assert not manager.exists(SID) and manager.exists(orphan.session_id)


def test_an_unreadable_pointer_is_said_to_be_its_own_only_to_the_terminal_that_wrote_it(
    manager: SessionManager,
) -> None:
    """H175: the tab's own line was found by matching the rendered warning; the record
    says whose pointer it is, and the terminal told decides the line. Every line begins
    as DESIGN's."""
    running = os.getpid()
    manager.directory.mkdir(parents=True)
    (manager.directory / f"active_{running}.json").write_bytes(b'{"session_id": "0a1b')
    (problem,) = manager.list_pointers().problems
    design = f"warning: ignoring invalid session pointer active_{running}.json (not JSON)"
    assert problem.line_for(running) == (
        f"{design}; it is this tab's, replaced when this tab opens a session"
    )
    others = f"{design}; terminal {running} still runs: left in place, its session unknown"
    assert problem.line_for(None) == problem.line_for(running + 1) == others


def test_a_tab_is_told_its_session_is_gone_though_a_path_in_a_line_spells_its_file_name(
    tmp_path: Path,
) -> None:
    """H175: whether a line had told of the tab's session file was found by looking for
    ``ID.json`` in the rendered lines; a project named so (its workspace's name) put it in
    every line that shows a path, and the tab was not told its session is gone."""
    from session.catalog import SessionCatalog
    from session.processes import process_start_time

    root = tmp_path / "home"
    catalog = SessionCatalog(root)
    project = root / "projects" / f"{SID}.json_00000000" / "sessions"
    manager = catalog.manager(project)
    other = full_state("0b1b2c3d4e5f")
    manager.save(full_state())
    manager.save(other)
    kept = catalog.keep_unsaved(project, later(with_more(other), minutes=1))  # saves failed
    me = os.getpid()
    started = process_start_time(me)
    manager.write_pointer(Pointer(session_id=SID, pid=me, pid_start_time=started, updated_at=NOW))
    (project / f"{SID}.json").unlink()  # by hand
    warnings = catalog.find_resumable(project, me, {}).warnings
    assert any(str(kept) in line for line in warnings), warnings
    assert f"note: this tab's session {SID} is no longer on disk" in warnings
