"""Reading a recovery copy back costs what it holds: a copy as its writer scrubbed it is not
scrubbed again (``recovered/.../scrubbed.index``), and one that may hold a secret (learned
since, or bytes changed since, or no record) is, as checkpoint entries are (H173)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

import session.manager
from session.catalog import SessionCatalog
from session.manager import scrub_state
from session.models import SessionState
from session.scrubbed_entries import INDEX_NAME
from tests.test_checkpoint_encoded import PATTERN_KEY, PLAIN_SECRET, big_session

SESSION = "0123456789ab"


@pytest.fixture
def full_scrubs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the states scrubbed whole as they were read (the scrub itself runs)."""
    scrubbed: list[str] = []

    def counted(state: SessionState, known: tuple[str, ...] = (), **kw: Any) -> SessionState:
        if kw.get("messages", True):
            scrubbed.append(state.session_id)
        return scrub_state(state, known, **kw)

    monkeypatch.setattr(session.manager, "scrub_state", counted)
    return scrubbed


def kept(root: Path) -> tuple[Path, Path]:
    """A big session's recovery copy (its saves failed), written as the StorageActor does:
    the project and the copy."""
    project = root / "projects" / "ws_00000000" / "sessions"
    project.mkdir(parents=True)
    return project, SessionCatalog(root).keep_unsaved(project, big_session().state)


def text_of(state: SessionState) -> str:
    return orjson.dumps(state.model_dump(mode="json")).decode()


def test_a_copy_read_back_as_it_was_written_is_not_scrubbed_again(
    tmp_path: Path, full_scrubs: list[str]
) -> None:
    project, copy = kept(tmp_path)
    full_scrubs.clear()  # the write's own scrub

    loaded = SessionCatalog(tmp_path).manager(project).load_copy(copy, SESSION)

    assert full_scrubs == []
    assert PATTERN_KEY not in text_of(loaded)
    assert loaded.recent_messages == scrub_state(big_session().state).recent_messages


def test_a_secret_learned_since_a_copy_was_written_is_scrubbed_when_it_is_read(
    tmp_path: Path,
) -> None:
    project, copy = kept(tmp_path)
    assert PLAIN_SECRET.encode() in copy.read_bytes()

    loaded = SessionCatalog(tmp_path, known_secrets=(PLAIN_SECRET,)).manager(project).load_copy(
        copy, SESSION
    )

    assert PLAIN_SECRET not in text_of(loaded)


def test_a_copy_changed_since_it_was_written_is_scrubbed_in_full(
    tmp_path: Path, full_scrubs: list[str]
) -> None:
    project, copy = kept(tmp_path)
    copy.write_bytes(copy.read_bytes().replace(b"question 1:", f"{PATTERN_KEY}:".encode()))
    full_scrubs.clear()

    loaded = SessionCatalog(tmp_path).manager(project).load_copy(copy, SESSION)

    assert full_scrubs == [SESSION]
    assert PATTERN_KEY not in text_of(loaded)


def test_a_copy_whose_record_is_lost_is_scrubbed_in_full(
    tmp_path: Path, full_scrubs: list[str]
) -> None:
    project, copy = kept(tmp_path)
    (copy.parent / INDEX_NAME).unlink()
    full_scrubs.clear()

    SessionCatalog(tmp_path).manager(project).load_copy(copy, SESSION)

    assert full_scrubs == [SESSION]


def test_a_copy_scrubbed_of_a_secret_found_later_is_recorded_as_written(
    tmp_path: Path, full_scrubs: list[str]
) -> None:
    project, copy = kept(tmp_path)
    SessionCatalog(tmp_path).scrub_written(project, SESSION, (PLAIN_SECRET,))
    assert PLAIN_SECRET.encode() not in copy.read_bytes()
    full_scrubs.clear()

    SessionCatalog(tmp_path, known_secrets=(PLAIN_SECRET,)).manager(project).load_copy(
        copy, SESSION
    )

    assert full_scrubs == []
