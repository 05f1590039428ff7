"""A value found secret after the session wrote it is scrubbed from the session's files that
do not parse (moved aside as corrupt, or damaged where they are): their bytes, where the
value stands in any written form, are replaced; the file stays, never deleted (H188)."""

from __future__ import annotations

import json
import stat
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from session.catalog import SessionCatalog
from session.manager import CONTEXT_NAME
from session.models import SessionState
from session.redaction import REDACTED

NOW = datetime(2026, 11, 29, 12, tzinfo=UTC)
SESSION = "0123456789ab"
OTHER = "ba9876543210"
SECRET = "Jq4Wn8Zt2Rk6Vy"
QUOTED = 'Qz8"Xk2\\Lm9é'
"""A value whose JSON forms differ from its text: a quote, a backslash, a non-ASCII letter."""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    directory = tmp_path / "projects" / "ws_00000000" / "sessions"
    directory.mkdir(parents=True)
    return directory


def truncated(text: str) -> bytes:
    """A session file cut short (it does not parse) whose summary says ``text``."""
    whole = orjson.dumps({"schema_version": 3, "session_id": SESSION, "summary": text})
    return whole[: whole.index(text.encode()) + len(text) + 20]


def test_a_session_file_moved_aside_as_corrupt_is_scrubbed_in_place(
    tmp_path: Path, project: Path
) -> None:
    aside = project / f"{SESSION}.json.corrupt-20261129T101500Z"
    before = truncated(f"deploy with {SECRET} tomorrow, then rotate it")
    aside.write_bytes(before)
    aside.chmod(0o600)

    SessionCatalog(tmp_path).scrub_written(project, SESSION, (SECRET,))

    assert aside.read_bytes() == before.replace(SECRET.encode(), REDACTED.encode())
    assert stat.S_IMODE(aside.stat().st_mode) == 0o600


def test_every_written_form_of_the_value_goes_from_a_file_that_does_not_parse(
    tmp_path: Path, project: Path
) -> None:
    """As text, as a JSON string holds it, and escaped twice (a tool call's arguments)."""
    arguments = json.dumps({"content": f"use {QUOTED}"}, ensure_ascii=False)
    aside = project / f"{SESSION}.json.corrupt-20261129T101500Z"
    aside.write_bytes(
        orjson.dumps([{"args": arguments}, f"said {QUOTED}"])[:-1]
        + f" plain {QUOTED} and {json.dumps(QUOTED)}".encode()
    )

    SessionCatalog(tmp_path).scrub_written(project, SESSION, (QUOTED,))

    data = aside.read_bytes()
    assert data.count(REDACTED.encode()) == 4
    assert b"Xk2" not in data and b"Lm9" not in data


def test_a_plain_word_found_secret_goes_only_where_it_stands_whole(
    tmp_path: Path, project: Path
) -> None:
    aside = project / f"{SESSION}.json.corrupt-20261129T101500Z"
    aside.write_bytes(truncated("the password changeme opens changeme_schema.sql"))

    SessionCatalog(tmp_path).scrub_written(project, SESSION, ("changeme",))

    assert b"the password [REDACTED] opens changeme_schema.sql" in aside.read_bytes()


def test_a_damaged_checkpoint_is_scrubbed_once_moved_aside_and_so_is_one_moved_before(
    tmp_path: Path, project: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = SessionState(
        session_id=SESSION, created_at=NOW, updated_at=NOW, summary=f"deploy with {SECRET}"
    )
    store = SessionCatalog(tmp_path).checkpoints(project)
    store.write(state, workspace, [], reason="save", cap=10**9, now=NOW)
    directory = store.session_dir(SESSION)
    entry = directory / "0001.json"
    entry.write_bytes(entry.read_bytes()[:-40])  # damaged where it is
    earlier = directory / "0002.json.corrupt-20261129T101500Z"
    earlier.write_bytes(truncated(f"kept {SECRET}"))

    SessionCatalog(tmp_path).scrub_written(project, SESSION, (SECRET,))

    aside = sorted(directory.glob("*.corrupt-*"))
    assert len(aside) == 2 and not entry.exists()
    assert all(SECRET.encode() not in path.read_bytes() for path in aside)
    assert all(REDACTED.encode() in path.read_bytes() for path in aside)


def test_a_recovery_copy_moved_aside_and_a_resume_context_that_does_not_parse_are_scrubbed(
    tmp_path: Path, project: Path
) -> None:
    recovered = project.parent / "recovered"
    recovered.mkdir()
    copy = recovered / f"{SESSION}-20261129T101500Z.json.corrupt-20261130T101500Z"
    copy.write_bytes(truncated(f"kept {SECRET}"))
    context = project.parent / "checkpoints" / SESSION / CONTEXT_NAME
    context.parent.mkdir(parents=True)
    context.write_bytes(b'{"kind": "resumed", "text": "log in with ' + SECRET.encode())
    moved_turn = project / f"{SESSION}.json.over-cap-3-0a1b2c3d"
    moved_turn.write_bytes(b'[{"kind": "request", "parts": "' + SECRET.encode())

    SessionCatalog(tmp_path).scrub_written(project, SESSION, (SECRET,))

    for path in (copy, context, moved_turn):
        assert SECRET.encode() not in path.read_bytes(), path
        assert REDACTED.encode() in path.read_bytes(), path


def test_another_sessions_corrupt_file_is_left_as_it_is(tmp_path: Path, project: Path) -> None:
    """A value found secret is one session's: another session's file is not its to change."""
    other = project / f"{OTHER}.json.corrupt-20261129T101500Z"
    other.write_bytes(truncated(f"kept {SECRET}"))
    before = other.read_bytes()

    SessionCatalog(tmp_path).scrub_written(project, SESSION, (SECRET,))

    assert other.read_bytes() == before


def test_the_checkpoints_index_keeps_no_words_of_a_secret_found_later(
    tmp_path: Path, project: Path
) -> None:
    """The index of scrubbed entries keeps each line's last request (its first words, and
    more): the record of an entry moved aside as damaged was never written again, and
    kept the value in clear (found by the end-to-end test of H188)."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = SessionState(session_id=SESSION, created_at=NOW, updated_at=NOW)
    store = SessionCatalog(tmp_path).checkpoints(project)
    store.write(
        state, workspace, [], reason="save", cap=10**9, now=NOW,
        last_request=f"remember {SECRET} for later",
    )  # fmt: skip
    index = project.parent / "checkpoints" / "scrubbed.index"
    assert SECRET.encode() in index.read_bytes()
    entry = store.session_dir(SESSION) / "0001.json"
    entry.write_bytes(entry.read_bytes()[:-40])

    SessionCatalog(tmp_path).scrub_written(project, SESSION, (SECRET,))

    assert SECRET.encode() not in index.read_bytes()
