"""A long session file (by hand, by an older version, huge pastes): what its offer and its
resume read, scrub and keep. Scrubbing is the cost (about a millisecond per 2 KB of prose:
a 29 MB tail took seconds per pass), so each message a resume keeps is scrubbed once, and
the offer scrubs none."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from session.catalog import SessionCatalog
from session.compaction import (
    EventsCompactionConfig,
    OfflineEventSummarizer,
    events_from_messages,
    retained_of,
)
from session.history import dump_messages
from session.lifecycle import KeepOriginal, PersistPolicy, SessionLifecycle, WritePointer
from session.manager import SessionManager
from session.models import SessionState
from session.redaction import REDACTED
from session.turns import stamp_turn
from tests.conversations import turn

T0 = datetime(2026, 3, 30, 10, 15, tzinfo=UTC)
SECRET = "sk-proj-" + "Q" * 32
LONG = "We route every ticket by intent and priority. " * 20


def long_tail(turns: int) -> tuple[dict[str, object], ...]:
    """``turns`` turns of about 1,000 characters each, the last one holding a key."""
    messages: list[ModelMessage] = []
    for index in range(turns):
        text = f"{LONG} my key is {SECRET}" if index == turns - 1 else LONG
        messages += stamp_turn(turn(index, text=text), index + 1, None)
    return tuple(dump_messages(messages))


def saved(directory: Path, turns: int) -> SessionManager:
    """A session file of ``turns`` turns written as a hand or an older version would: its
    messages as they are, never scrubbed."""
    manager = SessionManager(directory)
    state = SessionState(
        session_id="a1b2c3d4e5f6",
        created_at=T0,
        updated_at=T0 + timedelta(hours=1),
        summary="Designing a triage agent",
        recent_messages=long_tail(turns),
    )
    manager.directory.mkdir(parents=True, exist_ok=True)
    path = manager.session_path(state.session_id)
    path.write_text(state.model_dump_json())
    os.utime(path, (0, 0))
    return manager


def test_the_offer_counts_the_turns_without_scrubbing_a_message(
    tmp_path: Path, scrubbed_messages: list[int]
) -> None:
    project = tmp_path / "projects" / "ws_12345678" / "sessions"
    saved(project, 30)
    found = SessionCatalog(tmp_path).find_resumable(project, 999_999, {})
    assert found.offer is not None and found.offer.session_id == "a1b2c3d4e5f6"
    assert found.turns == 30
    assert found.offer.summary == "Designing a triage agent"
    assert found.offer.recent_messages == ()
    assert scrubbed_messages == []


def test_a_resume_scrubs_each_message_it_keeps_once_and_sends_none_unscrubbed(
    tmp_path: Path, scrubbed_messages: list[int]
) -> None:
    manager = saved(tmp_path, 60)
    stored = manager.load_for_resume("a1b2c3d4e5f6")
    policy = PersistPolicy(max_turns=20, compaction=EventsCompactionConfig(0, 0))
    lc = SessionLifecycle(policy=policy).resume(stored, None).lifecycle
    assert len(lc.history) == 40  # the 20 newest turns: a prompt and a reply each
    assert scrubbed_messages == [40]
    last_reply = lc.history[-1].parts[0]
    assert SECRET not in str(last_reply) and REDACTED in str(last_reply)
    assert SECRET.encode() not in lc.write(T0, {}, None).encoded.joined()  # type: ignore[union-attr]
    assert all(SECRET not in str(m) for m in lc.state.recent_messages)  # type: ignore[union-attr]


UNREADABLE_MESSAGES: tuple[dict[str, object], ...] = (
    {"kind": "request", "parts": [{"part_kind": "user-prompt-v2", "content": "design it"}]},
)
"""Messages of a shape this version does not know (a newer pydantic-ai's part kind)."""
DAMAGED_MESSAGES: tuple[dict[str, object], ...] = (
    {
        "kind": "request",
        "parts": [{"part_kind": "user-prompt", "content": "design it", "timestamp": "noon"}],
    },
)
"""Messages of known kinds, damaged inside (by hand): only validating them tells."""


def unreadable_session(
    project: Path, messages: tuple[dict[str, object], ...] = UNREADABLE_MESSAGES
) -> Path:
    """An old orphaned session whose header is fine and whose messages this version
    cannot read."""
    project.mkdir(parents=True, exist_ok=True)
    path = project / "a1b2c3d4e5f6.json"
    state = SessionState(
        session_id="a1b2c3d4e5f6",
        created_at=T0,
        updated_at=T0,
        summary="Work from a newer agent-assist",
        recent_messages=messages,
    )
    path.write_text(state.model_dump_json())
    os.utime(path, (0, 0))
    return path


def test_prune_keeps_an_old_session_whose_messages_it_cannot_read_and_says_so(
    tmp_path: Path,
) -> None:
    project = tmp_path / "projects" / "ws_12345678" / "sessions"
    path = unreadable_session(project)
    catalog = SessionCatalog(tmp_path)
    for dry_run in (True, False):
        pruned = catalog.prune(None, 30, dry_run, {})
        assert pruned.sessions.rows == ()
        assert pruned.sessions.warnings == (
            "warning: session file a1b2c3d4e5f6.json holds messages this agent-assist "
            "cannot read (message 1 has a part of kind 'user-prompt-v2'); left untouched",
        )
    assert path.exists()


def test_prune_keeps_an_old_session_whose_messages_are_damaged_inside_and_says_so(
    tmp_path: Path,
) -> None:
    project = tmp_path / "projects" / "ws_12345678" / "sessions"
    path = unreadable_session(project, DAMAGED_MESSAGES)
    catalog = SessionCatalog(tmp_path)
    for dry_run in (True, False):
        pruned = catalog.prune(None, 30, dry_run, {})
        assert pruned.sessions.rows == ()
        assert pruned.sessions.warnings == (
            "warning: session file a1b2c3d4e5f6.json holds messages this agent-assist "
            "cannot read; not pruned, left untouched",
        )
    assert path.exists()


def test_the_offline_summarizer_scrubs_only_the_requests_it_quotes(
    scrubbed_texts: list[str],
) -> None:
    """It quotes how the conversation started and the last three requests: a window of
    2,809 turns scrubbed every request (4.6 s) to quote four."""
    messages = [m for index in range(1, 201) for m in turn(index, text=LONG)]
    summarized = OfflineEventSummarizer().summarize(events_from_messages(messages, 1))
    assert summarized is not None and summarized.compaction is not None
    narrative = summarized.compaction.compacted_content
    assert "question 1" in narrative and "question 200" in narrative
    assert sorted(scrubbed_texts) == sorted(
        ["question 1", "question 198", "question 199", "question 200"]
    )


def test_a_compaction_scrubs_only_the_texts_that_may_name_what_it_keeps(
    scrubbed_texts: list[str],
) -> None:
    """Paths, rules, decisions and questions are taken from scrubbed texts; a text that
    holds none of what they need is not scrubbed (the patterns cost about a millisecond
    per 2 KB: 2,809 turns of prose took 22 s to yield one path)."""
    messages = [m for index in range(1, 201) for m in turn(index, text=LONG)]
    said = "Always answer in French. Decision: write the plan to docs/plan.md"
    messages[100:100] = [ModelRequest(parts=[UserPromptPart(said)]), *turn(51, text="Noted.")[1:]]
    retained = retained_of(events_from_messages(messages, 1))
    assert retained.rules == ("Always answer in French.",)
    assert retained.paths == ("docs/plan.md",)
    assert retained.decisions == ("Decision: write the plan to docs/plan.md",)
    assert scrubbed_texts == [said]


WINDOW_ON = EventsCompactionConfig(10, 2, token_threshold=2_000, event_retention_size=4)
"""The sliding window on (the default) and a small token budget (8,000 characters)."""


def test_a_resume_compacts_an_uncompacted_tail_over_the_budget_scrubbing_only_what_it_keeps(
    tmp_path: Path, scrubbed_messages: list[int]
) -> None:
    """This version's saves compact such a tail; a file made by hand or by an older version
    was scrubbed whole (23 s for 29 MB), then compacted whole before the first reply."""
    stored = saved(tmp_path, 300).load_for_resume("a1b2c3d4e5f6")
    lc = SessionLifecycle(policy=PersistPolicy(compaction=WINDOW_ON)).resume(stored, None).lifecycle
    assert lc.compaction is not None and lc.compaction.start_invocation == 1
    assert lc.invocations == 300
    assert scrubbed_messages == [len(lc.history)]
    assert len(lc.history) < 20
    assert lc.estimated_tokens() < WINDOW_ON.token_threshold  # type: ignore[operator]


def test_what_a_resume_compacts_at_once_keeps_the_rules_paths_and_decisions_of_its_turns(
    tmp_path: Path,
) -> None:
    said = "Always answer in French. Decision: keep the plan in docs/plan.md"
    messages = [m for index in range(1, 301) for m in turn(index, text=LONG)]
    messages[10:12] = stamp_turn(
        [ModelRequest(parts=[UserPromptPart(said)]), *turn(6, text="Noted.")[1:]], 6, None
    )
    manager = saved(tmp_path, 1)
    stored = manager.load_for_resume("a1b2c3d4e5f6").model_copy(
        update={"recent_messages": tuple(dump_messages(messages))}
    )
    lc = SessionLifecycle(policy=PersistPolicy(compaction=WINDOW_ON)).resume(stored, None).lifecycle
    assert "- Always answer in French." in lc.instructions()
    assert "docs/plan.md" in (lc.compaction_sent() or "")
    assert lc.state is not None
    assert "Decision: keep the plan in docs/plan.md" in lc.state.decisions


def test_what_a_resume_compacts_at_once_holds_no_known_secret_of_the_session(
    tmp_path: Path,
) -> None:
    """As every other compaction (H96): a value the session knows as secret (a credential
    variable's, one found earlier) is replaced before the compaction reads its turns; the
    patterns alone do not know it."""
    said = "Decision: deploy with plainwordyvaluekeepit to docs/plainwordyvaluekeepit.md"
    messages = [m for index in range(1, 301) for m in turn(index, text=LONG)]
    messages[10:12] = stamp_turn(
        [ModelRequest(parts=[UserPromptPart(said)]), *turn(6, text="Noted.")[1:]], 6, None
    )
    stored = saved(tmp_path, 1).load_for_resume("a1b2c3d4e5f6").model_copy(
        update={"recent_messages": tuple(dump_messages(messages))}
    )
    policy = PersistPolicy(compaction=WINDOW_ON, known_secrets=("plainwordyvaluekeepit",))
    lc = SessionLifecycle(policy=policy).resume(stored, None).lifecycle
    assert lc.compaction is not None and lc.compaction.start_invocation == 1
    assert "plainwordyvaluekeepit" not in (lc.compaction_sent() or "")
    assert "plainwordyvaluekeepit" not in lc.instructions()


def test_a_resume_that_compacts_turns_of_the_file_keeps_the_file_aside_first(
    tmp_path: Path,
) -> None:
    manager = saved(tmp_path, 300)
    original = manager.session_path("a1b2c3d4e5f6").read_bytes()
    stored = manager.load_for_resume("a1b2c3d4e5f6")
    transition = SessionLifecycle(policy=PersistPolicy(compaction=WINDOW_ON)).resume(stored, None)
    keep, pointer = transition.effects
    assert isinstance(keep, KeepOriginal) and isinstance(pointer, WritePointer)
    kept = manager.keep_original("a1b2c3d4e5f6")
    assert kept.name.startswith("a1b2c3d4e5f6.json.uncompacted-")
    write = transition.lifecycle.write(T0 + timedelta(hours=2), {}, None)
    manager.save(write.state, encoded=write.encoded)
    assert kept.read_bytes() == original
    assert manager.session_path("a1b2c3d4e5f6").read_bytes() != original
    assert manager.keep_original("a1b2c3d4e5f6") != kept  # the file changed: kept anew


def test_removing_a_session_removes_the_file_kept_before_a_resume_compacted_it(
    tmp_path: Path,
) -> None:
    manager = saved(tmp_path, 3)
    kept = manager.keep_original("a1b2c3d4e5f6")
    corrupt = tmp_path / "a1b2c3d4e5f6.json.corrupt-20260330T101500Z"
    corrupt.write_text("{")
    assert manager.delete("a1b2c3d4e5f6")
    assert not kept.exists()
    assert corrupt.exists()  # a corrupt file moved aside is no copy of the session's


WINDOW_OFF = EventsCompactionConfig(0, 2, token_threshold=2_000, event_retention_size=4)
"""Automatic compaction off (``compaction_interval = 0``), the same small token budget."""


def test_a_resume_with_compaction_off_that_leaves_turns_of_the_file_out_keeps_it_aside(
    tmp_path: Path,
) -> None:
    """With compaction off the request's tail holds the newest turns that fit, and a save
    writes that tail: a file holding more (by hand, an older version, a larger budget
    before) lost 280 of its 300 turns at the first save after the resume, without a word
    and with no copy kept (with compaction on, the same file is kept aside and told)."""
    manager = saved(tmp_path, 300)
    original = manager.session_path("a1b2c3d4e5f6").read_bytes()
    stored = manager.load_for_resume("a1b2c3d4e5f6")
    transition = SessionLifecycle(policy=PersistPolicy(compaction=WINDOW_OFF)).resume(stored, None)
    lc = transition.lifecycle
    assert lc.compaction is None and len(lc.history) < 300 * 2
    keep, pointer = transition.effects
    assert isinstance(keep, KeepOriginal) and isinstance(pointer, WritePointer)
    assert keep.compacted is None
    assert keep.left_out == 300 - len(lc.history) // 2 == lc.first_invocation - 1
    kept = manager.keep_original("a1b2c3d4e5f6")
    write = lc.write(T0 + timedelta(hours=2), {}, None)
    manager.save(write.state, encoded=write.encoded)
    assert kept.read_bytes() == original


def test_a_resume_with_compaction_off_that_keeps_every_turn_keeps_nothing_aside(
    tmp_path: Path,
) -> None:
    stored = saved(tmp_path, 3).load_for_resume("a1b2c3d4e5f6")
    transition = SessionLifecycle(policy=PersistPolicy(compaction=WINDOW_OFF)).resume(stored, None)
    assert [type(effect) for effect in transition.effects] == [WritePointer]
