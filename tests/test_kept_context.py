"""The resume context kept beside a session's checkpoints (``session/kept_context.py``)."""

from __future__ import annotations

from pathlib import Path

from session.kept_context import (
    CONTEXT_NAME,
    KeptContext,
    read_kept_context,
    write_kept_context,
)
from session.manager import CheckpointStore

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
