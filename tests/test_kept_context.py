"""The resume context kept beside a session's checkpoints (``session/kept_context.py``)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

from session.kept_context import (
    KeptContext,
    read_kept_context,
    write_kept_context,
)
from session.manager import CONTEXT_NAME, CheckpointStore

SESSION = "aaaaaaaaaaaa"


def test_a_kept_context_reads_back_scrubbed(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    directory = store.session_dir(SESSION)
    kept = KeptContext(3, "# Restored Checkpoint Context\nkey hunter2-secret", frozenset({"a"}))
    write_kept_context(directory, kept, known_secrets=("hunter2-secret",))
    found = read_kept_context(directory)
    assert found is not None
    assert (found.kind, found.decisions) == (3, frozenset({"a"}))
    assert "hunter2-secret" not in found.text
    assert (directory / CONTEXT_NAME).stat().st_mode & 0o777 == 0o600


def test_a_damaged_kept_context_is_none(tmp_path: Path) -> None:
    directory = CheckpointStore(tmp_path).session_dir(SESSION)
    directory.mkdir(parents=True)
    for data in (b"{", b'{"kind": 0, "text": "", "decisions": []}', b'{"kind": "resumed"}'):
        (directory / CONTEXT_NAME).write_bytes(data)
        assert read_kept_context(directory) is None


def test_removing_the_checkpoints_of_a_session_removes_its_kept_context(tmp_path: Path) -> None:
    store = CheckpointStore(tmp_path)
    directory = store.session_dir(SESSION)
    write_kept_context(directory, KeptContext("resumed", "# Resumed", frozenset()))
    store.delete_session(SESSION)
    assert not directory.exists()


def test_a_fifo_in_the_kept_contexts_place_is_not_waited_on(tmp_path: Path) -> None:
    """H145: opened as a file, a FIFO waited for a writer, and with it every write of the
    StorageActor (its one disk thread): every session's saves stalled."""
    directory = CheckpointStore(tmp_path).session_dir(SESSION)
    directory.mkdir(parents=True)
    fifo = directory / CONTEXT_NAME
    os.mkfifo(fifo)
    found: list[KeptContext | None] = []
    reader = threading.Thread(target=lambda: found.append(read_kept_context(directory)))
    reader.start()
    reader.join(timeout=30)  # a guard against hanging the suite, not a measure of speed
    try:
        assert not reader.is_alive(), "the read waits for a writer of the FIFO"
        assert found == [None]
    finally:
        if reader.is_alive():  # let it go: a writer that closes at once ends its wait
            os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            reader.join()


def test_a_symlink_or_a_directory_in_the_kept_contexts_place_is_none(tmp_path: Path) -> None:
    directory = CheckpointStore(tmp_path).session_dir(SESSION)
    directory.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    write_kept_context(elsewhere, KeptContext("resumed", "# Resumed", frozenset()))
    (directory / CONTEXT_NAME).symlink_to(elsewhere / CONTEXT_NAME)
    assert read_kept_context(directory) is None
    (directory / CONTEXT_NAME).unlink()
    (directory / CONTEXT_NAME).mkdir()
    assert read_kept_context(directory) is None


def test_a_directory_in_the_kept_contexts_place_does_not_stop_a_removal(tmp_path: Path) -> None:
    """H145: `sessions rm` removed the session's file, then failed on its checkpoints ("Is a
    directory"), which stayed, and prune failed on them alike. What is not ours stays."""
    store = CheckpointStore(tmp_path)
    directory = store.session_dir(SESSION)
    directory.mkdir(parents=True)
    (directory / CONTEXT_NAME).mkdir()
    (directory / "0001.json").write_bytes(b"{}")
    store.delete_session(SESSION)
    assert sorted(p.name for p in directory.iterdir()) == [CONTEXT_NAME]
