"""headers.index: cold listings take unchanged headers from it, never trusting it over the files."""

from __future__ import annotations

import contextlib
import os
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

from session.header_index import INDEX_NAME, read_index
from session.history import dump_messages
from session.manager import SessionManager
from session.models import SessionState
from tests.conversations import conversation

NOW = datetime(2026, 11, 29, 10, 15, tzinfo=UTC)


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "projects" / "ws_12345678" / "sessions"


def save(directory: Path, session_id: str, summary: str, turns: int = 2) -> SessionState:
    state = SessionState.new(NOW, session_id).model_copy(
        update={
            "summary": summary,
            "recent_messages": tuple(dump_messages(conversation(*[0] * turns))),
        }
    )
    SessionManager(directory).save(state)
    return state


def summaries(directory: Path, *, read_only: bool = False) -> dict[str, str | None]:
    """The listing of a chat's start (it may write the index), or a read-only manager's."""
    manager = SessionManager(directory, read_only=read_only)
    listing = manager.list_sessions(set_aside="leave" if read_only else "move")
    return {header.session_id: header.summary for header in listing.sessions}


def test_a_listing_writes_the_index_and_a_cold_listing_lists_the_same(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "first", turns=3)
    save(directory, "bbbbbbbbbbbb", "second")
    from_files = SessionManager(directory).list_sessions(set_aside="move")
    assert (directory / INDEX_NAME).is_file()
    from_index = SessionManager(directory).list_sessions(set_aside="move")
    assert from_index == from_files
    assert [h.messages for h in from_index.sessions] == [6, 4]


def test_an_unchanged_file_s_header_comes_from_the_index(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    SessionManager(directory).list_sessions(set_aside="move")
    path = directory / INDEX_NAME
    raw = orjson.loads(path.read_bytes())
    raw["sessions"]["aaaaaaaaaaaa"][1]["summary"] = "from the index"
    path.write_bytes(orjson.dumps(raw))
    assert summaries(directory) == {"aaaaaaaaaaaa": "from the index"}


def test_a_file_changed_since_the_index_is_read_again(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "before")
    SessionManager(directory).list_sessions(set_aside="move")
    save(directory, "aaaaaaaaaaaa", "after")
    assert summaries(directory) == {"aaaaaaaaaaaa": "after"}


def test_a_session_deleted_since_the_index_is_not_listed(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "kept")
    save(directory, "bbbbbbbbbbbb", "deleted")
    SessionManager(directory).list_sessions(set_aside="move")
    (directory / "bbbbbbbbbbbb.json").unlink()
    assert summaries(directory) == {"aaaaaaaaaaaa": "kept"}


def test_a_new_session_missing_from_the_index_is_listed(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "old")
    SessionManager(directory).list_sessions(set_aside="move")
    save(directory, "bbbbbbbbbbbb", "new")
    assert summaries(directory) == {"aaaaaaaaaaaa": "old", "bbbbbbbbbbbb": "new"}
    assert set(read_index(directory)) == {"aaaaaaaaaaaa", "bbbbbbbbbbbb"}


@pytest.mark.parametrize(
    "content",
    [b"", b"not json", b"[]", b'{"version": 99, "sessions": {}}', b'{"version": 1}'],
)
def test_an_unusable_index_is_ignored_and_rebuilt(directory: Path, content: bytes) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    (directory / INDEX_NAME).write_bytes(content)
    assert summaries(directory) == {"aaaaaaaaaaaa": "from the file"}
    assert set(read_index(directory)) == {"aaaaaaaaaaaa"}


def test_a_malformed_entry_is_dropped_and_the_file_read(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    SessionManager(directory).list_sessions(set_aside="move")
    path = directory / INDEX_NAME
    raw = orjson.loads(path.read_bytes())
    raw["sessions"]["aaaaaaaaaaaa"][1]["messages"] = "many"
    raw["sessions"]["../../etc"] = raw["sessions"]["aaaaaaaaaaaa"]
    path.write_bytes(orjson.dumps(raw))
    assert read_index(directory) == {}
    assert summaries(directory) == {"aaaaaaaaaaaa": "from the file"}


def test_a_read_only_listing_writes_no_index(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "listed")
    assert summaries(directory, read_only=True) == {"aaaaaaaaaaaa": "listed"}
    assert not (directory / INDEX_NAME).exists()


def test_a_listing_that_moves_nothing_aside_writes_no_index(directory: Path) -> None:
    """H123: a listing through the supervisor (``sessions``, ``show``, ``prune --dry-run``)
    wrote ``headers.index``: a read-only command changes no file."""
    save(directory, "aaaaaaaaaaaa", "listed")
    for set_aside in ("leave", "dry_run"):
        listing = SessionManager(directory).list_sessions(set_aside=set_aside)
        assert [header.summary for header in listing.sessions] == ["listed"]
    assert not (directory / INDEX_NAME).exists()


def test_the_index_is_private_and_leaves_no_temporary_file(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "listed")
    SessionManager(directory).list_sessions(set_aside="move")
    assert stat.S_IMODE((directory / INDEX_NAME).stat().st_mode) == 0o600
    assert sorted(os.listdir(directory)) == ["aaaaaaaaaaaa.json", INDEX_NAME]


def test_a_symlinked_index_is_not_followed(directory: Path, tmp_path: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    SessionManager(directory).list_sessions(set_aside="move")
    elsewhere = tmp_path / "elsewhere.index"
    raw = orjson.loads((directory / INDEX_NAME).read_bytes())
    raw["sessions"]["aaaaaaaaaaaa"][1]["summary"] = "planted"
    elsewhere.write_bytes(orjson.dumps(raw))
    (directory / INDEX_NAME).unlink()
    (directory / INDEX_NAME).symlink_to(elsewhere)
    assert summaries(directory, read_only=True) == {"aaaaaaaaaaaa": "from the file"}


def listed_within(directory: Path, seconds: float, **options: bool) -> dict[str, str | None]:
    """``summaries``, failing (instead of hanging the suite) if the listing blocks."""
    pool = ThreadPoolExecutor(1)
    try:
        return pool.submit(summaries, directory, **options).result(timeout=seconds)
    finally:
        pool.shutdown(wait=False)  # a blocked listing is freed by the caller


def release_fifo(path: Path) -> None:
    """Open a fifo for writing (non-blocking), freeing a reader blocked on it, if any."""
    with contextlib.suppress(OSError):
        os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.parametrize("read_only", [True, False])
def test_a_fifo_at_the_index_is_never_waited_on(directory: Path, read_only: bool) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    os.mkfifo(directory / INDEX_NAME)
    try:
        assert listed_within(directory, 10, read_only=read_only) == {
            "aaaaaaaaaaaa": "from the file"
        }
    finally:
        release_fifo(directory / INDEX_NAME)


def test_a_fifo_at_the_index_s_temporary_name_is_cleared(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    temp = directory / f".{INDEX_NAME}.{os.getpid()}.tmp"
    os.mkfifo(temp)
    try:
        assert listed_within(directory, 10) == {"aaaaaaaaaaaa": "from the file"}
    finally:
        release_fifo(temp)
    assert (directory / INDEX_NAME).is_file()
    assert set(read_index(directory)) == {"aaaaaaaaaaaa"}


def test_a_directory_at_the_index_is_ignored(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    (directory / INDEX_NAME).mkdir()
    assert summaries(directory, read_only=True) == {"aaaaaaaaaaaa": "from the file"}
    assert summaries(directory) == {"aaaaaaaaaaaa": "from the file"}


def test_a_hard_link_at_the_index_s_temporary_name_is_not_written_through(
    directory: Path, tmp_path: Path
) -> None:
    save(directory, "aaaaaaaaaaaa", "from the file")
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"precious")
    victim.chmod(0o644)
    os.link(victim, directory / f".{INDEX_NAME}.{os.getpid()}.tmp")
    SessionManager(directory).list_sessions(set_aside="move")
    assert victim.read_bytes() == b"precious"
    assert stat.S_IMODE((directory / INDEX_NAME).stat().st_mode) == 0o600
    assert set(read_index(directory)) == {"aaaaaaaaaaaa"}


def test_the_index_is_0600_whatever_the_umask(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "listed")
    old = os.umask(0o277)
    try:
        SessionManager(directory).list_sessions(set_aside="move")
    finally:
        os.umask(old)
    assert stat.S_IMODE((directory / INDEX_NAME).stat().st_mode) == 0o600


def test_headers_from_the_index_are_scrubbed_of_the_reader_s_secrets(directory: Path) -> None:
    """The index was written by a process that did not know the secret (a supervisor
    started without it): the listing of one that knows it shows it scrubbed, as the
    file's header would be."""
    secret = "Zq9xK2mP7wL4vB8n"
    save(directory, "aaaaaaaaaaaa", f"my value is {secret} here")
    SessionManager(directory).list_sessions(set_aside="move")
    listing = SessionManager(directory, known_secrets=(secret,)).list_sessions()
    (header,) = listing.sessions
    assert header.summary == "my value is [REDACTED] here"


def test_an_old_index_temp_of_a_writer_killed_mid_write_is_removed(directory: Path) -> None:
    save(directory, "aaaaaaaaaaaa", "listed")
    stale = directory / f".{INDEX_NAME}.4242.tmp"
    stale.write_bytes(b'{"version": 1, "sess')
    os.utime(stale, (time.time() - 3600, time.time() - 3600))
    fresh = directory / f".{INDEX_NAME}.4343.tmp"  # another writer's, maybe in flight
    fresh.write_bytes(b"{")
    SessionManager(directory).list_sessions(set_aside="move")
    assert not stale.exists()
    assert fresh.exists()
