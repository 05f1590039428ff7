"""``recovered/copies.index``: two writers at once keep both records; a listing drops the
records of copies gone or changed; never trusted over a ``stat`` (H169, H171, H174)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import ClassVar

from session.catalog import SessionCatalog
from session.header_index import COPIES_NAME, read_copies
from session.history import dump_messages
from session.models import SessionState
from tests.conversations import conversation

NOW = datetime(2026, 12, 7, 8, 0, tzinfo=UTC)
ONE, OTHER = "0a1b2c3d4e5f", "1a1b2c3d4e5f"


def state(session_id: str) -> SessionState:
    return SessionState.new(NOW, session_id).model_copy(
        update={"recent_messages": tuple(dump_messages(conversation(0, 2, 1)))}
    )


def project_of(root: Path) -> Path:
    project = root / "projects" / "ws_00000000" / "sessions"
    project.mkdir(parents=True)
    return project


class _OnIndexRead:
    """Runs ``then`` once, at the first open of a ``copies.index`` for reading."""

    then: ClassVar[Callable[[], None] | None] = None
    installed: ClassVar[bool] = False

    @classmethod
    def hook(cls, event: str, args: tuple[object, ...]) -> None:
        if event != "open" or cls.then is None or not isinstance(args[0], str | bytes | Path):
            return
        flags = args[2] if len(args) > 2 and isinstance(args[2], int) else 0
        if os.fsdecode(args[0]).endswith(COPIES_NAME) and not flags & (os.O_WRONLY | os.O_RDWR):
            then, cls.then = cls.then, None
            then()

    @classmethod
    def install(cls) -> None:
        if not cls.installed:
            sys.addaudithook(cls.hook)
            cls.installed = True


def _waits_on_a_lock_in(place: Path) -> bool:
    """Whether a lock on a file of ``place`` has a waiter (``/proc/locks``' ``->`` lines)."""
    inodes = {os.lstat(place / name).st_ino for name in os.listdir(place)}
    with open("/proc/locks", encoding="ascii") as locks:
        for line in locks:
            fields = line.split()
            if "->" in fields and int(fields[-3].rsplit(":", 1)[1]) in inodes:
                return True
    return False


def test_two_writers_recording_at_once_keep_both_records(tmp_path: Path) -> None:
    """A supervisor and its heir (or two supervisors of one home) each keep a copy: the
    second's record is written while the first has read the index and not yet written it.
    Neither record is lost (it was: the first wrote back what it had read, without the
    second's)."""
    root = tmp_path / "home"
    project = project_of(root)
    place = project.parent / "recovered"
    SessionCatalog(root).keep_unsaved(project, state(ONE), name=f"{ONE}-20261207T075900Z.json")
    second = threading.Thread(
        target=lambda: SessionCatalog(root).keep_unsaved(project, state(OTHER))
    )

    def the_other_writer_runs() -> None:
        second.start()  # it either finishes, or waits for the first to be done
        while second.is_alive() and not _waits_on_a_lock_in(place):
            second.join(0.01)

    _OnIndexRead.install()
    _OnIndexRead.then = the_other_writer_runs
    try:
        kept = SessionCatalog(root).keep_unsaved(project, state(ONE))
    finally:
        _OnIndexRead.then = None
    second.join()
    recorded = read_copies(place)
    assert kept.name in recorded
    assert [name for name in recorded if name.startswith(OTHER)], sorted(recorded)
    assert len(recorded) == 3


def test_a_listing_drops_the_records_of_copies_gone_or_changed(tmp_path: Path) -> None:
    """A copy removed by hand, or written over, kept its record until the next copy was
    written; a listing now drops what a ``stat`` no longer matches, and keeps the rest."""
    root = tmp_path / "home"
    project = project_of(root)
    place = project.parent / "recovered"
    catalog = SessionCatalog(root)
    removed = catalog.keep_unsaved(project, state(ONE), name=f"{ONE}-20261207T075900Z.json")
    changed = catalog.keep_unsaved(project, state(OTHER), name=f"{OTHER}-20261207T075900Z.json")
    stays = catalog.keep_unsaved(project, state(OTHER), name=f"{OTHER}-20261207T080000Z.json")
    removed.unlink()
    changed.write_bytes(changed.read_bytes())  # a new inode's times: not the copy recorded
    assert set(read_copies(place)) == {removed.name, changed.name, stays.name}
    SessionCatalog(root).list((project,), {})
    assert set(read_copies(place)) == {stays.name}


def test_a_read_only_listing_leaves_the_index_as_it_is(tmp_path: Path) -> None:
    root = tmp_path / "home"
    project = project_of(root)
    place = project.parent / "recovered"
    removed = SessionCatalog(root).keep_unsaved(project, state(ONE))
    removed.unlink()
    before = (place / COPIES_NAME).read_bytes()
    SessionCatalog(root, read_only=True).list((project,), {})
    assert (place / COPIES_NAME).read_bytes() == before


def test_a_secret_found_later_is_scrubbed_from_the_turns_moved_beside_the_file(
    tmp_path: Path,
) -> None:
    """A turn moved out of the file (over its cap) is written scrubbed of what was known then;
    a value found secret later (``ScrubEarlier``) was scrubbed from the checkpoints only."""
    from pydantic_ai.messages import ModelRequest, UserPromptPart

    from session.encoded import EncodedMessages
    from session.file_cap import MovedTurn

    root = tmp_path / "home"
    project = project_of(root)
    catalog = SessionCatalog(root)
    said = dump_messages([ModelRequest(parts=[UserPromptPart("the vault word is Tr0ub4dor&3x")])])
    moved = MovedTurn.of(ONE, 1, EncodedMessages.scrub(said, ()))
    path = catalog.keep_moved_turn(project, moved)
    assert b"Tr0ub4dor&3x" in path.read_bytes()
    catalog.scrub_written(project, ONE, ("Tr0ub4dor&3x",))
    assert b"Tr0ub4dor&3x" not in path.read_bytes()
    assert b"the vault word is" in path.read_bytes()
