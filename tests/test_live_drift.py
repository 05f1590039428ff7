"""The live-drift ledger's table: what each event does to what the model is told of files
changed outside (session/live_drift.py)."""

from __future__ import annotations

from session.filesystem import FileDrift
from session.live_drift import (
    NOTE_FILES,
    LiveDrift,
    changed_during_turn,
    unexpected,
    with_gone_kept,
)

SAVED = {"agent_spec.md": "s0", "notes.md": "n0"}
TRACKED = frozenset(SAVED)


def tracked(path: str) -> bool:
    return path in TRACKED


def test_a_file_holding_what_our_tools_wrote_there_last_is_no_change() -> None:
    ledger = LiveDrift(written={"notes.md": "ours"})
    after, outside = ledger.seen(("notes.md",), ("ours",))
    assert outside == ()
    assert after.written == {"notes.md": "ours"}


def test_a_file_seen_holding_something_else_holds_our_write_no_more() -> None:
    ledger = LiveDrift(written={"notes.md": "ours"})
    after, outside = ledger.seen(("notes.md",), ("theirs",))
    assert outside == ("notes.md",)
    assert after.written == {}
    assert after.seen(("notes.md",), ("ours",))[1] == ("notes.md",)  # an undo: outside


def test_a_report_without_digests_is_taken_as_it_is() -> None:
    ledger = LiveDrift(written={"notes.md": "ours"})
    assert ledger.seen(("notes.md",), ()) == (ledger, ("notes.md",))


def test_a_change_during_a_turn_at_a_path_it_writes_waits_for_its_end() -> None:
    after, now = LiveDrift().during_turn(("./notes.md", "agent_spec.md"), {"notes.md"})
    assert now == ("agent_spec.md",)
    assert after.deferred == {"./notes.md"}
    assert after.told_in_turn == {"agent_spec.md"}


def test_a_change_told_is_named_by_the_next_request_and_by_reset() -> None:
    after = LiveDrift().noted(["notes.md"])
    assert after.changed == {"notes.md"}
    assert after.edited == {"notes.md"}
    assert "notes.md" in after.note


def test_with_no_change_outside_the_request_has_no_note() -> None:
    assert LiveDrift().note == ""


def test_the_note_names_the_first_files_and_counts_the_rest_with_their_places() -> None:
    names = [f"t/f{n:03}.md" for n in range(NOTE_FILES + 5)]
    note = LiveDrift().noted(names).note
    assert "t/f000.md" in note and f"t/f{NOTE_FILES:03}.md" not in note
    assert "and 5 more (under t/)" in note


def test_a_request_carries_the_note_and_the_untold_drift_once() -> None:
    ledger = LiveDrift(untold={"agent_spec.md": "s0"}).noted(["notes.md"])
    after, note = ledger.sent()
    assert "notes.md" in note
    assert (after.changed, after.untold) == (frozenset(), {})
    assert after.carried == {"notes.md"}
    assert after.carried_untold == {"agent_spec.md": "s0"}
    assert after.sent()[1] == ""


def test_a_turn_the_model_read_drops_what_its_request_carried() -> None:
    after, _ = LiveDrift().noted(["notes.md"]).sent()
    ended, _, _ = after.turn_ended((), read=True)
    assert (ended.changed, ended.untold, ended.carried) == (frozenset(), {}, frozenset())


def test_a_turn_the_model_never_read_gives_what_it_carried_to_the_next_request() -> None:
    after, _ = LiveDrift(untold={"agent_spec.md": "s0"}).noted(["notes.md"]).sent()
    after = after.noted(["b.md"])  # seen while the turn ran
    ended, _, _ = after.turn_ended((), read=False)
    assert ended.changed == {"notes.md", "b.md"}
    assert ended.untold == {"agent_spec.md": "s0"}
    assert (ended.carried, ended.carried_untold) == (frozenset(), {})


def test_a_turns_end_hands_over_its_deferred_and_told_changes_and_clears_them() -> None:
    ledger, _ = LiveDrift().during_turn(("notes.md", "b.md"), {"notes.md"})
    ended, deferred, told = ledger.turn_ended((), read=True)
    assert deferred == {"notes.md"}
    assert told == {"b.md"}
    assert (ended.deferred, ended.told_in_turn) == (frozenset(), frozenset())


def test_what_a_turns_tools_wrote_is_ours_last() -> None:
    ledger = LiveDrift(written={"notes.md": "old", "b.md": "b1"})
    ended, _, _ = ledger.turn_ended((("notes.md", "new"),), read=True)
    assert ended.written == {"notes.md": "new", "b.md": "b1"}


def test_a_context_that_tells_a_drift_leaves_it_untold_at_the_digests_compared() -> None:
    drift = FileDrift(modified=("notes.md",), deleted=("agent_spec.md", "never-saved.md"))
    after = LiveDrift().noted(["b.md"]).in_context(drift, SAVED)
    assert after.untold == SAVED
    assert after.changed == frozenset()


def test_a_resumes_modified_files_hold_the_users_work() -> None:
    drift = FileDrift(modified=("notes.md",), deleted=("agent_spec.md",))
    assert LiveDrift().noted(["b.md"]).resumed(drift).edited == {"notes.md"}


def test_a_restores_writes_are_ours_last() -> None:
    ledger = LiveDrift(written={"notes.md": "old"})
    assert ledger.restored_written({"notes.md": "n0"}).written == {"notes.md": "n0"}


def test_reset_clears_the_changes_the_drift_and_the_users_work_but_not_our_writes() -> None:
    ledger = LiveDrift(untold={"notes.md": "n0"}, written={"b.md": "b1"}).noted(["a.md"])
    after = ledger.reset()
    assert (after.changed, after.edited, after.untold) == (frozenset(), frozenset(), {})
    assert after.written == {"b.md": "b1"}


def test_with_no_session_the_manifest_is_kept_as_hashed() -> None:
    assert LiveDrift().noted(["notes.md"]).as_the_model_knows({"a": "1"}, None, TRACKED) == {
        "a": "1"
    }


def test_a_file_changed_outside_untold_is_saved_at_the_digest_the_model_knows() -> None:
    ledger = LiveDrift().noted(["notes.md"])
    now = {"agent_spec.md": "s0", "notes.md": "n1"}
    assert ledger.as_the_model_knows(now, SAVED, TRACKED) == SAVED


def test_what_the_ending_turn_wrote_is_the_digest_the_model_knows() -> None:
    now = {"agent_spec.md": "s0", "notes.md": "n2"}
    known = LiveDrift().as_the_model_knows(now, SAVED, TRACKED, ["notes.md"], {"notes.md": "n1"})
    assert known == {"agent_spec.md": "s0", "notes.md": "n1"}


def test_a_drift_no_request_carried_is_saved_at_the_digest_it_was_found_against() -> None:
    ledger = LiveDrift(untold={"notes.md": "n0"})
    assert ledger.as_the_model_knows({"agent_spec.md": "s0", "notes.md": "n1"}, SAVED, TRACKED) == (
        SAVED
    )


def test_a_tracked_file_gone_is_kept_at_its_saved_digest() -> None:
    assert LiveDrift().as_the_model_knows({"agent_spec.md": "s0"}, SAVED, TRACKED) == SAVED


def test_a_file_a_restore_deleted_is_neither_kept_as_gone_nor_as_changed() -> None:
    ledger = LiveDrift().noted(["notes.md"])
    known = ledger.as_the_model_knows({"agent_spec.md": "s0"}, SAVED, TRACKED, deleted=["notes.md"])
    assert known == {"agent_spec.md": "s0"}


def test_a_file_gone_that_is_not_tracked_any_more_is_dropped() -> None:
    assert with_gone_kept({}, SAVED, frozenset({"notes.md"})) == {"notes.md": "n0"}


def test_a_file_seen_changing_during_a_turn_that_did_not_write_it_changed_outside() -> None:
    outside, gone = changed_during_turn({"notes.md"}, (), (), SAVED, None, tracked)
    assert (outside, gone) == ({"notes.md"}, frozenset())


def test_a_file_the_turn_wrote_holding_what_it_wrote_did_not_change_outside() -> None:
    wrote = (("notes.md", "n1"),)
    now = {**SAVED, "notes.md": "n1"}
    assert changed_during_turn({"notes.md"}, wrote, (), now, None, tracked) == (set(), frozenset())


def test_a_file_the_turn_wrote_holding_something_else_changed_outside() -> None:
    wrote = (("notes.md", "n1"),)
    assert changed_during_turn((), wrote, (), SAVED, None, tracked)[0] == {"notes.md"}


def test_a_file_the_turn_read_holding_something_else_now_changed_outside() -> None:
    read = (("notes.md", "before"),)
    assert changed_during_turn((), (), read, SAVED, None, tracked)[0] == {"notes.md"}


def test_a_change_the_watcher_had_not_settled_is_found_against_its_baseline() -> None:
    watched = {**SAVED, "agent_spec.md": "s-1"}
    now = {"agent_spec.md": "s0"}
    outside, gone = changed_during_turn((), (), (), now, watched, tracked)
    assert outside == {"agent_spec.md", "notes.md"}
    assert gone == {"notes.md"}


def test_a_file_a_turns_tools_wrote_holds_the_users_work_no_more() -> None:
    ledger = LiveDrift().noted(["notes.md", "b.md"])
    ended, _, _ = ledger.turn_ended((("notes.md", "n1"),), read=True)
    assert ended.edited == {"b.md"}


def test_a_report_of_what_the_terminal_expects_there_is_no_news() -> None:
    reported = unexpected(("agent_spec.md", "notes.md"), ("s0", "n1"), SAVED)
    assert reported == (("notes.md",), ("n1",))


def test_with_nothing_expected_every_report_stands() -> None:
    assert unexpected(("notes.md",), ("n0",), None) == (("notes.md",), ("n0",))


def test_a_report_without_digests_stands_whatever_is_expected() -> None:
    assert unexpected(("notes.md",), (), SAVED) == (("notes.md",), ())
