"""``sessions show`` reads what it shows: the header, the counts and the summary of a session,
not its messages (neither validated nor scrubbed, and not parsed once the file's header is
known); nothing it prints holds a secret, known then or since."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

import session.manager
from cli.sessions import render_show
from session.catalog import SessionCatalog
from session.history import dump_messages
from session.manager import SessionManager, scrub_state
from session.models import SessionState
from session.split_messages import parsed_by_message

NOW = datetime(2026, 12, 7, 11, 0, tzinfo=UTC)
SESSION = "0123456789ab"
LATER = "Jq4Wn8Zt2Rk6Vy"
"""A value known secret only after the file was written."""
TRICKY = 'quoting the file: ,"recent_messages":[ and ],"compacted_history_summary":null}'
"""Text holding the keys the messages are cut out by: escaped inside a string."""


def project_of(root: Path) -> Path:
    project = root / "projects" / "ws_00000000" / "sessions"
    project.mkdir(parents=True)
    return project


def saved(project: Path, turns: int = 3) -> SessionState:
    """A session written before ``LATER`` was known secret: its summary, a decision and
    its messages hold it, and one message holds ``TRICKY``."""
    messages: list[ModelMessage] = []
    for n in range(1, turns + 1):
        messages += [
            ModelRequest(parts=[UserPromptPart(f"turn {n}: {LATER} {TRICKY}", timestamp=NOW)]),
            ModelResponse(parts=[TextPart(f"answer {n}")], timestamp=NOW),
        ]
    state = SessionState.new(NOW, SESSION).model_copy(
        update={
            "summary": f"Designing the triage agent with {LATER}",
            "decisions": (f"keep {LATER} out of the spec",),
            "file_manifest": {"agent_spec.md": "0" * 64},
            "phase": "design",
            "checkpoint_count": 2,
            "recent_messages": tuple(dump_messages(messages)),
        }
    )
    SessionManager(project).save(state)
    return state


@pytest.fixture
def messages_parsed(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many times a session file's messages were parsed (``parsed_by_message``) or
    scrubbed (``scrub_state`` of the messages)."""
    seen: list[int] = []
    parsed = parsed_by_message

    def parse(data: bytes, within: str | None = None) -> Any:
        seen.append(1)
        return parsed(data, within)

    def scrub(state: SessionState, known: tuple[str, ...] = (), **kw: Any) -> SessionState:
        if kw.get("messages", True) and state.recent_messages:
            seen.append(2)
        return scrub_state(state, known, **kw)

    monkeypatch.setattr(session.manager, "parsed_by_message", parse)
    monkeypatch.setattr(session.manager, "scrub_state", scrub)
    return seen


def test_show_gives_the_sessions_fields_and_counts_without_its_messages(tmp_path: Path) -> None:
    project = project_of(tmp_path)
    state = saved(project)

    shown = SessionCatalog(tmp_path).shown(project, SESSION)

    assert "recent_messages" not in shown
    assert (shown["messages"], shown["turns"]) == (6, 3)
    assert shown["decisions"] == list(state.decisions)
    assert shown["file_manifest"] == state.file_manifest
    assert (shown["phase"], shown["checkpoint_count"]) == ("design", 2)


def test_show_of_a_file_whose_header_is_known_parses_and_scrubs_no_message(
    tmp_path: Path, messages_parsed: list[int]
) -> None:
    project = project_of(tmp_path)
    saved(project)
    catalog = SessionCatalog(tmp_path)
    catalog.list((project,), {})  # the listing a show asks first reads the header
    messages_parsed.clear()

    shown = catalog.shown(project, SESSION)

    assert messages_parsed == []
    assert shown["summary"] == f"Designing the triage agent with {LATER}"


def test_show_of_a_file_read_for_the_first_time_scrubs_no_message(
    tmp_path: Path, messages_parsed: list[int]
) -> None:
    project = project_of(tmp_path)
    saved(project)
    messages_parsed.clear()

    SessionCatalog(tmp_path).shown(project, SESSION)

    assert 2 not in messages_parsed


def test_show_says_no_secret_known_since_the_file_was_written(tmp_path: Path) -> None:
    project = project_of(tmp_path)
    saved(project)
    catalog = SessionCatalog(tmp_path, known_secrets=(LATER,))
    (row,) = [r.to_json() for r in catalog.list((project,), {}).rows]

    shown = catalog.shown(project, SESSION)

    assert LATER not in json.dumps(shown)
    assert LATER not in render_show({"row": row, "session": shown, "checkpoints": []})


def test_show_of_a_file_laid_out_by_hand_reads_it_whole(tmp_path: Path) -> None:
    project = project_of(tmp_path)
    state = saved(project)
    path = project / f"{SESSION}.json"
    path.write_text(json.dumps(json.loads(path.read_bytes()), indent=2))

    shown = SessionCatalog(tmp_path).shown(project, SESSION)

    assert (shown["messages"], shown["turns"]) == (6, 3)
    assert shown["decisions"] == list(state.decisions)


def test_show_renders_the_counts_a_supervisor_sends_and_those_of_an_older_one(
    tmp_path: Path,
) -> None:
    project = project_of(tmp_path)
    state = saved(project)
    row = SessionCatalog(tmp_path).list((project,), {}).rows[0].to_json()
    older = {"row": row, "session": state.model_dump(mode="json"), "checkpoints": []}
    newer = {"row": row, "session": SessionCatalog(tmp_path).shown(project, SESSION)}

    assert render_show({**newer, "checkpoints": []}) == render_show(older)
    assert "Messages     6 (recent tail)" in render_show(older)
