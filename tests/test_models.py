"""SessionState: the schema v3 fields, ids, UTC timestamps and migration of v1 and v2."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from session.errors import InvalidSessionId
from session.models import (
    SCHEMA_VERSION,
    SessionState,
    migrate,
    new_session_id,
    validate_session_id,
)

NOW = datetime(2026, 11, 29, 10, 15, tzinfo=UTC)

V3_FIELDS = {
    "schema_version",
    "session_id",
    "created_at",
    "updated_at",
    "agent_spec_path",
    "file_manifest",
    "summary",
    "decisions",
    "recent_messages",
    "compacted_history_summary",
    "checkpoint_count",
    "phase",
}


def test_a_session_file_has_exactly_the_schema_v3_fields() -> None:
    dumped = SessionState.new(NOW).model_dump(mode="json")
    assert set(dumped) == V3_FIELDS
    assert dumped["schema_version"] == SCHEMA_VERSION == 3


def test_new_ids_are_twelve_random_hex_digits() -> None:
    ids = {new_session_id() for _ in range(200)}
    assert len(ids) == 200
    assert all(validate_session_id(i) == i for i in ids)


@pytest.mark.parametrize(
    "bad", ["", "ABCDEF123456", "abc", "0123456789abc", "../etc/pass", "0123456789a\n", 12]
)
def test_invalid_ids_are_refused(bad: object) -> None:
    with pytest.raises(InvalidSessionId):
        validate_session_id(bad)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        SessionState(session_id=bad, created_at=NOW, updated_at=NOW)


def test_timestamps_are_normalised_to_utc_and_naive_ones_refused() -> None:
    plus_two = datetime(2026, 11, 29, 12, 15, tzinfo=timezone(timedelta(hours=2)))
    state = SessionState(session_id="a1b2c3d4e5f6", created_at=plus_two, updated_at=plus_two)
    assert state.created_at == NOW and state.created_at.tzinfo == UTC
    with pytest.raises(ValidationError):
        SessionState(session_id="a1b2c3d4e5f6", created_at=datetime(2026, 1, 1), updated_at=NOW)


def test_unknown_fields_and_bad_manifest_hashes_are_refused() -> None:
    base = SessionState.new(NOW).model_dump(mode="json")
    with pytest.raises(ValidationError):
        SessionState.model_validate({**base, "api_key": "x"})
    with pytest.raises(ValidationError):
        SessionState.model_validate({**base, "file_manifest": {"a.md": "not-a-hash"}})


def test_v1_file_migrates_messages_decisions_and_naive_timestamps() -> None:
    v1 = {
        "session_id": "a1b2c3d4e5f6",
        "created_at": "2026-03-30T10:15:00",
        "updated_at": "2026-03-31T14:22:00",
        "agent_spec_path": "agent_spec.md",
        "file_manifest": {},
        "summary": "built a spec",
        "messages": [{"kind": "request", "parts": []}],
    }
    state = SessionState.model_validate(migrate(v1))
    assert state.schema_version == 3
    assert state.created_at == datetime(2026, 3, 30, 10, 15, tzinfo=UTC)
    assert state.recent_messages == ({"kind": "request", "parts": []},)
    assert state.decisions == ()
    assert (state.compacted_history_summary, state.checkpoint_count, state.phase) == (None, 0, None)


def test_v2_file_gains_compaction_checkpoint_and_phase_fields() -> None:
    v2 = {
        "schema_version": 2,
        "session_id": "a1b2c3d4e5f6",
        "created_at": "2026-03-30T10:15:00Z",
        "updated_at": "2026-03-31T14:22:00Z",
        "agent_spec_path": None,
        "file_manifest": {},
        "summary": None,
        "decisions": ["use tools"],
        "recent_messages": [],
    }
    state = SessionState.model_validate(migrate(v2))
    assert state.decisions == ("use tools",)
    assert (state.compacted_history_summary, state.checkpoint_count, state.phase) == (None, 0, None)


def test_migrating_a_current_file_changes_nothing() -> None:
    raw = SessionState.new(NOW).model_dump(mode="json")
    assert migrate(raw) == raw


def test_has_content_is_false_only_for_an_unused_session() -> None:
    fresh = SessionState.new(NOW)
    assert not fresh.has_content()
    assert fresh.model_copy(update={"decisions": ("x",)}).has_content()
    assert fresh.model_copy(update={"summary": "s"}).has_content()
    # a session taken back to a checkpoint before its first turn still tracks its files
    assert fresh.model_copy(update={"file_manifest": {"agent_spec.md": "0" * 64}}).has_content()
    assert fresh.model_copy(update={"agent_spec_path": "agent_spec.md"}).has_content()


@pytest.mark.parametrize("version", [4.0, 1e300, float(2**70), float("inf")])
def test_a_schema_version_past_this_one_written_as_a_float_is_newer_not_corrupt(
    version: float,
) -> None:
    """2**70 reaches us as a float (orjson); it was taken for corrupt and moved aside."""
    from session.models import SCHEMA_VERSION, schema_version_of

    assert schema_version_of({"schema_version": version}) > SCHEMA_VERSION


@pytest.mark.parametrize("version", [1.5, 0.0, -4.0, "3", True])
def test_a_schema_version_that_is_no_version_is_bad(version: object) -> None:
    from session.models import schema_version_of

    with pytest.raises(ValueError, match="bad schema_version"):
        schema_version_of({"schema_version": version})
