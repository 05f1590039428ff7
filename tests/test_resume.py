"""build_resume_context(): exactly the block of DESIGN.md section 6."""

from __future__ import annotations

from datetime import UTC, datetime

from session.filesystem import FileDrift
from session.models import SessionState
from session.resume import RestoredFrom, build_resume_context, format_utc

STATE = SessionState(
    session_id="a1b2c3d4e5f6",
    created_at=datetime(2026, 3, 30, 10, 15, 42, tzinfo=UTC),
    updated_at=datetime(2026, 3, 31, 14, 22, 5, tzinfo=UTC),
    agent_spec_path="agent_spec.md",
    summary="Designed a research agent with two tools.",
    decisions=("Use pydantic-ai with Chat Completions", "Tools are read-only"),
)

EXPECTED = """\
# Resumed Session Context
This is a resumed session (ID: a1b2c3d4e5f6).
Originally started: 2026-03-30 10:15 UTC
Last active: 2026-03-31 14:22 UTC

Agent specification file: agent_spec.md

## Previous Session Summary
Designed a research agent with two tools.

## Key Decisions Made
- Use pydantic-ai with Chat Completions
- Tools are read-only

## File Changes Since Last Session
- agent_spec.md: modified
- templates/old.md: deleted
- 1 tracked file unchanged

IMPORTANT: You are resuming a previous session. Review the context above
before proceeding. If the user's request seems to continue prior work,
use this context. If they start a new topic, proceed normally."""


def test_the_full_block_is_exact() -> None:
    drift = FileDrift(
        unchanged=("notes.md",), modified=("agent_spec.md",), deleted=("templates/old.md",)
    )
    assert build_resume_context(STATE, drift) == EXPECTED


def test_unchanged_files_are_counted_in_the_plural() -> None:
    drift = FileDrift(unchanged=("a.md", "b.md"))
    assert "\n- 2 tracked files unchanged\n" in build_resume_context(STATE, drift)


def test_sections_without_content_are_left_out() -> None:
    bare = STATE.model_copy(update={"agent_spec_path": None, "decisions": ()})
    text = build_resume_context(bare, FileDrift())
    assert text == (
        "# Resumed Session Context\n"
        "This is a resumed session (ID: a1b2c3d4e5f6).\n"
        "Originally started: 2026-03-30 10:15 UTC\n"
        "Last active: 2026-03-31 14:22 UTC\n"
        "\n"
        "## Previous Session Summary\n"
        "Designed a research agent with two tools.\n"
        "\n"
        "IMPORTANT: You are resuming a previous session. Review the context above\n"
        "before proceeding. If the user's request seems to continue prior work,\n"
        "use this context. If they start a new topic, proceed normally."
    )


def test_the_compacted_summary_does_not_stand_in_when_there_is_no_summary() -> None:
    """A helper's report: a session restored to a checkpoint taken before any summary was
    sent its compacted history twice, here and as the compaction every request carries."""
    state = STATE.model_copy(update={"summary": None, "compacted_history_summary": "Older work."})
    text = build_resume_context(state)
    assert "Older work." not in text and "## Previous Session Summary" not in text


def test_nothing_to_resume_gives_an_empty_string() -> None:
    assert build_resume_context(None) == ""
    empty = SessionState.new(datetime(2026, 1, 1, tzinfo=UTC), "a1b2c3d4e5f6")
    assert build_resume_context(empty, FileDrift(modified=("x.md",))) == ""


def test_a_session_with_tracked_files_and_no_turn_is_resumed_with_its_files() -> None:
    """A helper's find (H72): a session taken back to a checkpoint before its first turn,
    then resumed, was offered with "1 tracked file unchanged" and given no context at
    all (``/resume``: "this session was not resumed")."""
    state = SessionState.new(datetime(2026, 1, 1, tzinfo=UTC), "a1b2c3d4e5f6").model_copy(
        update={"file_manifest": {"agent_spec.md": "0" * 64}, "agent_spec_path": "agent_spec.md"}
    )
    text = build_resume_context(state, FileDrift(unchanged=("agent_spec.md",)))
    assert text.startswith(
        "# Resumed Session Context\nThis is a resumed session (ID: a1b2c3d4e5f6).\n"
    )
    assert "Agent specification file: agent_spec.md" in text
    assert "- 1 tracked file unchanged" in text


def test_a_restore_to_a_checkpoint_with_nothing_in_it_is_still_told() -> None:
    """A helper's report (H57): restored to checkpoint 1 (no turn, no summary), the model
    was told nothing: it went on as if the turns it remembered were still there."""
    empty = SessionState.new(datetime(2026, 1, 1, tzinfo=UTC), "a1b2c3d4e5f6")
    restored = RestoredFrom(1, datetime(2026, 1, 1, 0, 1, tzinfo=UTC))
    text = build_resume_context(empty, FileDrift(modified=("agent_spec.md",)), restored)
    assert text.startswith(
        "# Restored Checkpoint Context\n"
        "This session (ID: a1b2c3d4e5f6) was taken back to checkpoint 1.\n"
    )
    assert "- agent_spec.md: modified" in text


def test_multi_line_decisions_stay_one_bullet_each() -> None:
    state = STATE.model_copy(update={"decisions": ("first line\nsecond line",)})
    assert "- first line second line\n" in build_resume_context(state)


def test_times_are_shown_with_four_digit_years() -> None:
    assert format_utc(datetime(1, 1, 1, tzinfo=UTC)) == "0001-01-01 00:00 UTC"
    assert format_utc(datetime(2026, 3, 31, 14, 22, 59, tzinfo=UTC)) == "2026-03-31 14:22 UTC"


def test_the_resume_context_lists_the_newest_decisions_and_counts_the_rest() -> None:
    """A session of 300 long decisions sent all of them with every request."""
    from session.resume import RESUME_DECISIONS

    decisions = tuple(f"decision {i}" for i in range(RESUME_DECISIONS + 5))
    state = SessionState.new(datetime(2026, 3, 30, 10, 15, tzinfo=UTC)).model_copy(
        update={"decisions": decisions}
    )
    text = build_resume_context(state, None)
    assert "- (5 earlier decisions are kept in the session file)" in text
    assert "- decision 4\n" not in text and "- decision 5\n" in text
    assert text.count("\n- decision ") == RESUME_DECISIONS


def test_after_a_restore_the_block_names_the_checkpoint_instead_of_a_resume() -> None:
    drift = FileDrift(unchanged=("notes.md",), modified=("agent_spec.md",))
    restored = RestoredFrom(3, datetime(2026, 3, 31, 9, 5, tzinfo=UTC))
    assert build_resume_context(STATE, drift, restored) == (
        "# Restored Checkpoint Context\n"
        "This session (ID: a1b2c3d4e5f6) was taken back to checkpoint 3.\n"
        "Originally started: 2026-03-30 10:15 UTC\n"
        "Checkpoint 3 taken: 2026-03-31 09:05 UTC\n"
        "\n"
        "Agent specification file: agent_spec.md\n"
        "\n"
        "## Previous Session Summary\n"
        "Designed a research agent with two tools.\n"
        "\n"
        "## Key Decisions Made\n"
        "- Use pydantic-ai with Chat Completions\n"
        "- Tools are read-only\n"
        "\n"
        "## File Changes Since Checkpoint 3\n"
        "- agent_spec.md: modified\n"
        "- 1 tracked file unchanged\n"
        "\n"
        "IMPORTANT: This conversation was taken back to an earlier checkpoint. What was\n"
        "said after it is no longer part of it: do not rely on it unless the user\n"
        "says it again. Review the context above before proceeding."
    )


def test_decisions_beyond_the_budgets_share_are_counted_not_listed() -> None:
    """A helper's report: a resumed session's block listed 40 decisions of 300 characters
    whatever the token budget, and its requests ran at twice a small budget."""
    many = STATE.model_copy(
        update={"decisions": tuple(f"Decision {n}: " + "word " * 50 for n in range(30))}
    )
    text = build_resume_context(many, None, None, share_chars=1_000)
    block = text.split("## Key Decisions Made\n")[1].split("\n\n")[0]
    assert len(block) <= 1_000
    assert block.splitlines()[0].endswith("earlier decisions are kept in the session file)")
    earlier = int(block.splitlines()[0].removeprefix("- (").split()[0])
    assert earlier + len(block.splitlines()) - 1 == 30
    assert "Decision 29:" in block and "Decision 0:" not in block


def test_a_long_summary_is_held_to_half_the_budgets_share_by_whole_lines() -> None:
    """A helper's attack: a summary model's 1,500-character summary went whole into the
    resumed session's block, on top of a request already at the budget."""
    lines = (f"Line {n} of what the triage agent's design has come to." for n in range(25))
    summary = "\n".join(lines)
    text = build_resume_context(STATE.model_copy(update={"summary": summary}), share_chars=1_000)
    block = text.split("## Previous Session Summary\n")[1].split("\n\n")[0]
    assert len(block) <= 500 and block.endswith("\n…")
    assert block.startswith("Line 0 of what") and "Line 24 " not in block
    assert "Line 24 " in build_resume_context(STATE.model_copy(update={"summary": summary}))


def test_the_summarys_decisions_line_is_not_repeated_above_the_decisions_section() -> None:
    """Found by trying /resume: the offline summary's ``Decisions:`` line said the same
    decisions a second time, just above the section that lists them."""
    summary = '2 recent requests; first: "a"\n- "b"\nFiles: notes.md\nDecisions: use x; use y'
    state = STATE.model_copy(update={"summary": summary, "decisions": ("use x", "use y")})
    text = build_resume_context(state, FileDrift())
    assert text.count("use x") == 1 and "Decisions:" not in text
    assert "Files: notes.md\n\n## Key Decisions Made\n- use x\n- use y" in text


def test_a_summarys_decisions_line_stays_when_the_session_holds_no_decisions() -> None:
    state = STATE.model_copy(update={"summary": "did a\nDecisions: use x", "decisions": ()})
    assert "Decisions: use x" in build_resume_context(state, FileDrift())
