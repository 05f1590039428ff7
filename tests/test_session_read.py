"""A session file is read a message at a time, and what is read is what was written,
whatever its texts hold and however a hand laid the file out."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import orjson
import pytest

import session.split_messages
from session.manager import SessionManager
from session.models import SessionState

T0 = datetime(2026, 12, 7, tzinfo=UTC)
SESSION = "a1b2c3d4e5f6"
TEXTS = (
    'a reply quoting "},{\\"kind\\":\\"request\\"}" and ]]] [[[ {{{',
    "a path C:\\\\dir\\\\ and a lone \\ backslash \\\\\" then a quote",
    "é, 漢字, 🙂 and \u0001 a control character",
    '{"json": ["as", "text"], "in": {"a": "string"}}',
    "\\" * 7 + '"' + "\\" * 8,
)


def messages() -> tuple[dict[str, object], ...]:
    return tuple(
        {
            "kind": "request" if n % 2 == 0 else "response",
            "parts": [
                {"part_kind": "user-prompt", "content": text},
                {"part_kind": "tool-call", "args": json.dumps({"t": text}), "nested": [[{}], []]},
            ],
        }
        for n, text in enumerate(TEXTS * 3)
    )


def saved(directory: Path) -> SessionState:
    state = SessionState.new(T0, SESSION).model_copy(
        update={"recent_messages": messages(), "summary": 'a "summary" [with] {brackets}'}
    )
    SessionManager(directory).save(state)
    return state


@pytest.mark.parametrize("window", [1, 2, 3, 5, 8, 64, 8 << 20])
def test_a_session_file_is_read_back_as_written_wherever_its_windows_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    monkeypatch.setattr(session.split_messages, "WINDOW", window)
    state = saved(tmp_path)

    loaded = SessionManager(tmp_path).load_for_resume(SESSION)

    assert loaded.recent_messages == state.recent_messages
    assert loaded.summary == state.summary


def test_a_session_file_laid_out_by_hand_is_read_as_it_holds(tmp_path: Path) -> None:
    state = saved(tmp_path)
    path = SessionManager(tmp_path).session_path(SESSION)
    path.write_text(json.dumps(orjson.loads(path.read_bytes()), indent=2))

    loaded = SessionManager(tmp_path).load_for_resume(SESSION)

    assert loaded.recent_messages == state.recent_messages


def test_a_session_file_with_messages_twice_is_read_as_a_whole_parse_reads_it(
    tmp_path: Path,
) -> None:
    saved(tmp_path)
    path = SessionManager(tmp_path).session_path(SESSION)
    path.write_bytes(path.read_bytes()[:-1] + b',"recent_messages":[]}')

    loaded = SessionManager(tmp_path).load_for_resume(SESSION)

    assert loaded.recent_messages == ()  # the last one, as orjson keeps it


@pytest.mark.parametrize("window", [1, 3, 8 << 20])
def test_a_checkpoint_is_read_back_as_written_wherever_its_windows_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int
) -> None:
    from session.manager import CheckpointStore

    monkeypatch.setattr(session.split_messages, "WINDOW", window)
    workspace = tmp_path / "ws"
    workspace.mkdir()
    state = SessionState.new(T0, SESSION).model_copy(update={"recent_messages": messages()})
    CheckpointStore(tmp_path / "project").write(
        state, workspace, [], reason="save", cap=10**9, now=T0
    )

    loaded = CheckpointStore(tmp_path / "project").load(SESSION, 1)

    assert loaded.state.recent_messages == state.recent_messages
