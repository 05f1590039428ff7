"""SessionLifecycle: the whole transition table and the effects each transition asks for."""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

import orjson
import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from session.compaction import EventCompaction, EventsCompactionConfig, Window, render_compaction
from session.errors import IllegalTransition
from session.filesystem import FileDrift
from session.history import count_turns, dump_messages, load_messages
from session.interrupted import interrupted_turn
from session.leaving import AwaitCut, CutTurn, Leave, LetTurnFinish
from session.lifecycle import (
    TRANSITIONS,
    DeletePointer,
    DeleteSession,
    Event,
    PersistPolicy,
    Phase,
    SessionLifecycle,
    Transition,
    WritePointer,
    WriteSession,
)
from session.models import SessionState
from session.resume import RestoredFrom
from session.turns import stamp_turn
from tests.conversations import conversation, turn

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
T1 = T0 + timedelta(minutes=5)
MANIFEST = {"agent_spec.md": "b" * 64}
AT_2 = RestoredFrom(2, T0)
STORED = SessionState(
    session_id="a1b2c3d4e5f6",
    created_at=T0 - timedelta(days=1),
    updated_at=T0 - timedelta(hours=1),
    summary="Earlier work.",
    file_manifest=MANIFEST,
    recent_messages=tuple(dump_messages(conversation(0, 1))),
)


def active() -> SessionLifecycle:
    return SessionLifecycle().start_fresh(T0, "111111111111").lifecycle


def in_phase(phase: Phase) -> SessionLifecycle:
    if phase is Phase.UNSTARTED:
        return SessionLifecycle()
    if phase is Phase.ACTIVE:
        return active()
    if phase is Phase.IN_TURN:
        return active().begin_turn(1)
    if phase is Phase.FINISHING:
        return active().begin_turn(1).let_turn_finish("disconnected")
    if phase is Phase.CUTTING:
        return active().begin_turn(1).cut_turn("shutdown")
    if phase is Phase.LEAVING:
        return active().begin_turn(1).cut_turn("shutdown").abandon_turn()
    return exit_(active()).lifecycle


def exit_(lifecycle: SessionLifecycle) -> Transition:
    return lifecycle.exit(manifest=MANIFEST, agent_spec_path="agent_spec.md")


def complete(lifecycle: SessionLifecycle, index: int = 0, **kw: object) -> Transition:
    """Complete a turn: the one in flight, or one begun here."""
    if lifecycle.phase is Phase.ACTIVE:
        lifecycle = lifecycle.begin_turn(index + 1)
    return lifecycle.complete_turn(
        turn(index),
        now=T1,
        manifest=MANIFEST,
        agent_spec_path="agent_spec.md",
        **kw,  # type: ignore[arg-type]
    )


def just(lifecycle: SessionLifecycle) -> Transition:
    return Transition(lifecycle, ())


EVENTS: dict[Event, Callable[[SessionLifecycle], Transition]] = {
    Event.START: lambda lc: lc.start_fresh(T0),
    Event.RESUME: lambda lc: lc.resume(STORED, FileDrift()),
    Event.BEGIN_TURN: lambda lc: just(lc.begin_turn(7, "m-7")),
    Event.TURN: lambda lc: lc.complete_turn(
        turn(0), now=T1, manifest=MANIFEST, agent_spec_path=None
    ),
    Event.ABANDON_TURN: lambda lc: just(lc.abandon_turn()),
    Event.SAVE: lambda lc: lc.save(now=T1, manifest=MANIFEST, agent_spec_path=None),
    Event.RESET: lambda lc: lc.reset(T1),
    Event.SUMMARY: lambda lc: lc.record_summary(
        "s", now=T1, manifest=MANIFEST, agent_spec_path=None
    ),
    Event.COMPACT: lambda lc: just(lc.begin_compaction(Window((), 1, 1))),
    Event.COMPACTED: lambda lc: lc.compacted(
        EventCompaction(1, 1, "summary"), lc.generation, now=T1, manifest={}, agent_spec_path=None
    ),
    Event.EXIT: exit_,
    Event.CHECKPOINT: lambda lc: lc.record_checkpoint(3),
    Event.RESTORE: lambda lc: lc.restore(
        STORED, FileDrift(), checkpoint=AT_2, now=T1, manifest=MANIFEST, agent_spec_path=None
    ),
    Event.TERMINAL_GONE: lambda lc: just(lc.let_turn_finish("disconnected")),
    Event.CUT_TURN: lambda lc: just(lc.cut_turn("shutdown")),
}

A, U, T, C = Phase.ACTIVE, Phase.UNSTARTED, Phase.IN_TURN, Phase.CLOSED
F, X, L = Phase.FINISHING, Phase.CUTTING, Phase.LEAVING
# The table, spelled out: (phase, event) -> phase after; a missing cell is illegal.
EXPECTED_TABLE: dict[tuple[Phase, Event], Phase] = {
    (U, Event.START): A,
    (U, Event.RESUME): A,
    (U, Event.EXIT): C,
    (A, Event.BEGIN_TURN): T,
    (A, Event.SAVE): A,
    (A, Event.RESET): A,
    (A, Event.SUMMARY): A,
    (A, Event.COMPACT): A,
    (A, Event.COMPACTED): A,
    (A, Event.CHECKPOINT): A,
    (A, Event.RESTORE): A,
    (A, Event.EXIT): C,
    # In a turn: /save, /reset, a restore, another message and a new compaction wait
    # for the reply to end; a summary, the automatic checkpoint before a file write, a
    # compaction's result and the terminal going away do not.
    (T, Event.TURN): A,
    (T, Event.ABANDON_TURN): A,
    (T, Event.SUMMARY): T,
    (T, Event.COMPACTED): T,
    (T, Event.CHECKPOINT): T,
    (T, Event.EXIT): C,
    # The terminal gone during a turn: a connection that simply ended lets it finish, an
    # exit asked for cuts it (and so does the finish wait's end); the turn's end leaves.
    (T, Event.TERMINAL_GONE): F,
    (T, Event.CUT_TURN): X,
    (F, Event.TURN): L,
    (F, Event.ABANDON_TURN): L,
    (F, Event.SUMMARY): F,
    (F, Event.COMPACTED): F,
    (F, Event.CHECKPOINT): F,
    (F, Event.CUT_TURN): X,
    (F, Event.EXIT): C,
    (X, Event.TURN): L,
    (X, Event.ABANDON_TURN): L,
    (X, Event.SUMMARY): X,
    (X, Event.COMPACTED): X,
    (X, Event.CHECKPOINT): X,
    (X, Event.EXIT): C,
    # Leaving: no new turn, save, reset, restore or compaction for a terminal gone; the
    # exit follows at once (the compaction due starts after it, as for any exit).
    (L, Event.SUMMARY): L,
    (L, Event.COMPACTED): L,
    (L, Event.EXIT): C,
    # Closed: a late summary, the compaction in flight at the exit and the one that
    # came due behind it, all written at once.
    (C, Event.SUMMARY): C,
    (C, Event.COMPACT): C,
    (C, Event.COMPACTED): C,
}


def test_the_table_is_the_one_spelled_out_here() -> None:
    assert TRANSITIONS == EXPECTED_TABLE


@pytest.mark.parametrize(("phase", "event"), list(itertools.product(Phase, Event)))
def test_every_cell_of_the_table(phase: Phase, event: Event) -> None:
    lifecycle = in_phase(phase)
    target = EXPECTED_TABLE.get((phase, event))
    if target is None:
        with pytest.raises(IllegalTransition):
            EVENTS[event](lifecycle)
    else:
        assert EVENTS[event](lifecycle).lifecycle.phase is target
    assert lifecycle.allows(event) is (target is not None)


def test_a_terminal_leaving_finishes_or_cuts_its_turn_as_the_table_says() -> None:
    """What the actor does when its terminal leaves is the lifecycle's answer (it held
    two flags of its own for it, outside the table)."""
    idle = active()
    assert idle.terminal_left("disconnected", finishes_alone=True) == (idle, Leave("disconnected"))
    gone, step = active().begin_turn(4).terminal_left("disconnected", finishes_alone=True)
    assert step == LetTurnFinish(4) and gone.phase is Phase.FINISHING and gone.in_turn
    cut, step = gone.terminal_left("finish-wait-over", finishes_alone=False)
    assert step == CutTurn(4) and cut.phase is Phase.CUTTING
    assert cut.leaving == "disconnected", "the first reason is the exit's"
    assert cut.cut_by == "finish-wait-over", "the cut's own reason, for its unanswered mark"
    assert gone.terminal_left("reattached", finishes_alone=False)[1] == CutTurn(4)
    assert cut.terminal_left("shutdown", finishes_alone=False) == (cut, AwaitCut(4))
    assert cut.terminal_left("cut-wait-over", finishes_alone=False) == (cut, Leave("disconnected"))
    stopped, step = active().begin_turn(5).terminal_left("shutdown", finishes_alone=False)
    assert step == CutTurn(5) and stopped.leaving == "shutdown"
    left = complete(cut).lifecycle
    assert left.phase is Phase.LEAVING and left.turn is None and not left.in_turn
    assert not left.allows(Event.BEGIN_TURN) and left.compaction_due(force=True) is None
    assert left.terminal_left("x", finishes_alone=True) == (left, Leave("disconnected"))
    assert exit_(left).lifecycle.leaving == "disconnected"


def test_fresh_start_has_a_new_id_no_history_and_writes_the_pointer() -> None:
    result = SessionLifecycle().start_fresh(T0)
    assert result.lifecycle.session_id is not None
    assert result.lifecycle.history == () and result.lifecycle.resume_context == ""
    assert result.effects == (WritePointer(result.lifecycle.session_id),)


def test_a_transition_copies_the_lifecycle_and_leaves_the_original_as_it_was() -> None:
    before = SessionLifecycle().start_fresh(T0).lifecycle
    after = complete(before).lifecycle
    assert before.history == () and before.phase is Phase.ACTIVE and not before.saved
    assert after.history and after.saved and after is not before
    assert after == dataclasses.replace(after)  # every field set, as __init__ would
    with pytest.raises(TypeError, match="no field"):
        before._with(histroy=())  # a misspelt field is refused, as by dataclasses.replace


def test_resume_keeps_the_id_rebuilds_history_and_the_resume_context() -> None:
    drift = FileDrift(modified=("agent_spec.md",))
    result = SessionLifecycle().resume(STORED, drift)
    lc = result.lifecycle
    assert lc.session_id == STORED.session_id
    assert list(lc.history) == load_messages(STORED.recent_messages)
    assert "- agent_spec.md: modified" in lc.resume_context
    assert lc.tracked_paths == frozenset(MANIFEST)
    assert result.effects == (WritePointer(STORED.session_id),)


def test_a_completed_turn_is_saved_with_the_manifest_and_decisions() -> None:
    result = complete(active(), decisions=["Use tools", " ", "Use tools"], touched=["notes.md"])
    (write, pointer) = result.effects
    assert isinstance(write, WriteSession) and pointer == WritePointer("111111111111")
    (again,) = complete(result.lifecycle, 1).effects
    assert isinstance(again, WriteSession), "later saves leave the pointer alone"
    assert write.state.updated_at == T1
    assert write.state.file_manifest == MANIFEST
    assert write.state.agent_spec_path == "agent_spec.md"
    assert write.state.decisions == ("Use tools",)
    assert load_messages(write.state.recent_messages) == list(stamp_turn(turn(0), 1))
    assert "notes.md" in result.lifecycle.tracked_paths
    assert result.lifecycle.saved


def test_reset_deletes_file_and_pointer_and_clears_everything() -> None:
    resumed = SessionLifecycle().resume(STORED, FileDrift(modified=("x.md",))).lifecycle
    result = resumed.reset(T1)
    lc = result.lifecycle
    assert result.effects == (DeleteSession(STORED.session_id), DeletePointer(STORED.session_id))
    assert lc.session_id != STORED.session_id
    assert lc.history == () and lc.resume_context == "" and lc.tracked_paths == frozenset()
    assert lc.session_deleted


def test_exit_after_reset_writes_nothing() -> None:
    after_reset = complete(active()).lifecycle.reset(T1).lifecycle
    assert exit_(after_reset).effects == ()
    late_summary = after_reset.record_summary("s", now=T1, manifest={}, agent_spec_path=None)
    assert late_summary.effects == ()


def test_a_turn_after_reset_re_enables_autosave() -> None:
    after_turn = complete(active().reset(T1).lifecycle).lifecycle
    assert not after_turn.session_deleted
    assert isinstance(exit_(after_turn).effects[0], WriteSession)


def test_explicit_save_after_reset_re_enables_autosave() -> None:
    result = active().reset(T1).lifecycle.save(now=T1, manifest={}, agent_spec_path=None)
    assert not result.lifecycle.session_deleted
    assert isinstance(result.effects[0], WriteSession)
    assert isinstance(exit_(result.lifecycle).effects[0], WriteSession)


def test_explicit_save_rebuilds_manifest_and_spec_path() -> None:
    lc = complete(active()).lifecycle
    result = lc.save(now=T1, manifest={"new.md": "c" * 64}, agent_spec_path="spec/agent.md")
    write = result.effects[0]
    assert isinstance(write, WriteSession)
    assert write.state.file_manifest == {"new.md": "c" * 64}
    assert write.state.agent_spec_path == "spec/agent.md"


def test_exit_saves_a_session_with_messages() -> None:
    result = exit_(complete(active()).lifecycle)
    assert result.lifecycle.phase is Phase.CLOSED
    assert isinstance(result.effects[0], WriteSession)


def test_exit_of_an_unused_session_writes_no_file_and_drops_the_pointer() -> None:
    lifecycle = active()
    assert exit_(lifecycle).effects == (DeletePointer(str(lifecycle.session_id)),)
    assert exit_(SessionLifecycle()).effects == ()


def test_a_resumed_session_is_saved_on_exit_even_without_new_turns() -> None:
    resumed = SessionLifecycle().resume(STORED, None).lifecycle
    assert isinstance(exit_(resumed).effects[0], WriteSession)


def test_a_summary_while_active_is_written_when_it_arrives() -> None:
    """It rode on the next turn's write: the listing showed a live session's summary a
    turn late, or none after its first turn."""
    lc = complete(active()).lifecycle
    result = lc.record_summary("Fresh summary", now=T1, manifest={}, agent_spec_path=None)
    (write,) = result.effects
    assert isinstance(write, WriteSession) and write.state.summary == "Fresh summary"
    (later,) = complete(result.lifecycle, 1).effects
    assert isinstance(later, WriteSession) and later.state.summary == "Fresh summary"


def test_a_summary_of_a_session_never_saved_writes_nothing() -> None:
    result = active().record_summary("Fresh", now=T1, manifest={}, agent_spec_path=None)
    assert result.effects == ()


def test_the_first_save_after_reset_writes_the_pointer_again() -> None:
    after_reset = complete(active()).lifecycle.reset(T1).lifecycle
    effects = complete(after_reset, 1).effects
    assert [type(e) for e in effects] == [WriteSession, WritePointer]


def test_a_late_summary_is_written_after_exit() -> None:
    closed = exit_(complete(active()).lifecycle).lifecycle
    result = closed.record_summary("Better summary", now=T1, manifest={}, agent_spec_path=None)
    (write,) = result.effects
    assert isinstance(write, WriteSession) and write.state.summary == "Better summary"


def test_saved_tail_is_trimmed_and_scrubbed_by_the_policy() -> None:
    policy = PersistPolicy(max_turns=2, known_secrets=("hunter2-very-secret",))
    lc = SessionLifecycle(policy=policy).start_fresh(T0).lifecycle
    for index in range(5):
        lc = complete(lc, index).lifecycle
    secret_turn = turn(9, text="the key is hunter2-very-secret and sk-abcdefghijklmnopqrstuvwx")
    result = lc.begin_turn(0).complete_turn(secret_turn, now=T1, manifest={}, agent_spec_path=None)
    write = result.effects[0]
    assert isinstance(write, WriteSession)
    saved = load_messages(write.state.recent_messages)
    assert saved[:2] == list(stamp_turn(turn(4), 5))  # the fifth turn
    assert "hunter2" not in str(write.state.recent_messages)
    assert "sk-abcdef" not in str(write.state.recent_messages)
    assert len(result.lifecycle.request_history()) == len(turn(4)) + len(secret_turn)


def test_the_in_memory_history_is_bounded_and_stays_aligned() -> None:
    lc = SessionLifecycle(policy=PersistPolicy(max_turns=2, memory_turns=3)).start_fresh(T0)
    current = lc.lifecycle
    for index in range(10):
        current = complete(current, index).lifecycle
    assert list(current.history) == [
        *stamp_turn(turn(7), 8),
        *stamp_turn(turn(8), 9),
        *stamp_turn(turn(9), 10),
    ]
    encoded = current.history_encoded
    assert len(encoded) == len(current.history)
    assert load_messages(encoded.json) == list(current.history)
    assert orjson.loads(b"[" + encoded.joined() + b"]") == list(encoded.json)


def test_every_write_carries_its_messages_already_encoded() -> None:
    lc = SessionLifecycle(policy=PersistPolicy(max_turns=2)).start_fresh(T0).lifecycle
    for index in range(4):
        lc = complete(lc, index).lifecycle
    writes = [
        complete(lc, 5).effects[0],
        lc.save(now=T1, manifest={}, agent_spec_path=None).effects[0],
        lc.exit(manifest={}, agent_spec_path=None).effects[0],
        lc.write(T1, {}, None),
    ]
    for write in writes:
        assert isinstance(write, WriteSession) and write.encoded is not None
        assert orjson.loads(b"[" + write.encoded.joined() + b"]") == list(
            write.state.recent_messages
        )


def test_a_checkpoint_moves_the_count_that_the_next_write_carries() -> None:
    result = active().record_checkpoint(4)
    assert result.effects == ()
    assert result.lifecycle.record_checkpoint(2).lifecycle.state.checkpoint_count == 4  # type: ignore[union-attr]
    (write, _) = result.lifecycle.save(now=T1, manifest={}, agent_spec_path=None).effects
    assert isinstance(write, WriteSession) and write.state.checkpoint_count == 4


def test_restore_takes_the_checkpoints_history_and_resume_state_but_keeps_the_session() -> None:
    lc = complete(complete(active()).lifecycle, 1).lifecycle.record_checkpoint(7).lifecycle
    drift = FileDrift(modified=("agent_spec.md",))
    result = lc.restore(
        STORED, drift, checkpoint=AT_2, now=T1, manifest=MANIFEST, agent_spec_path="agent_spec.md"
    )
    new = result.lifecycle
    assert new.phase is Phase.ACTIVE and not new.session_deleted
    assert new.session_id == "111111111111"
    assert list(new.request_history()) == load_messages(STORED.recent_messages)
    assert "Earlier work." in new.resume_context
    assert "## File Changes Since Checkpoint 2\n- agent_spec.md: modified" in new.resume_context
    (write,) = result.effects
    assert isinstance(write, WriteSession)
    assert write.state.session_id == "111111111111"
    assert write.state.created_at == lc.state.created_at  # type: ignore[union-attr]
    assert write.state.summary == "Earlier work."
    assert write.state.checkpoint_count == 7
    assert write.state.recent_messages == STORED.recent_messages


def test_a_restored_conversation_is_told_it_was_taken_back_not_resumed() -> None:
    new = active().restore(
        STORED, None, checkpoint=AT_2, now=T1, manifest=MANIFEST, agent_spec_path=None
    ).lifecycle
    assert new.resume_context.startswith(
        "# Restored Checkpoint Context\n"
        "This session (ID: 111111111111) was taken back to checkpoint 2.\n"
    )
    assert "resumed session" not in new.resume_context.lower()
    assert "You are resuming" not in new.resume_context


def test_restore_brings_the_compaction_state_of_the_checkpoint_and_drops_a_later_one() -> None:
    lc = complete(complete(active()).lifecycle, 1).lifecycle
    compacted = lc.compacted(
        EventCompaction(1, 2, "We chose the model."),
        lc.generation,
        now=T1,
        manifest={},
        agent_spec_path=None,
    ).lifecycle
    assert compacted.compaction is not None
    back = compacted.restore(
        STORED, None, checkpoint=AT_2, now=T1, manifest=MANIFEST, agent_spec_path=None
    ).lifecycle
    assert back.compaction is None and back.generation > compacted.generation

    with_compaction = STORED.model_copy(
        update={"compacted_history_summary": render_compaction(EventCompaction(1, 4, "Earlier."))}
    )
    forward = back.restore(
        with_compaction, None, checkpoint=AT_2, now=T1, manifest=MANIFEST, agent_spec_path=None
    ).lifecycle
    assert forward.compaction is not None and forward.compaction.end_invocation == 4
    stored_turns = count_turns(load_messages(STORED.recent_messages))
    assert forward.invocations == 4 + stored_turns  # the compacted turns, then STORED's


def test_a_write_says_which_secrets_its_messages_were_scrubbed_of() -> None:
    policy = PersistPolicy(known_secrets=("hunter2-hunter2",))
    lc = SessionLifecycle(policy=policy).start_fresh(T0).lifecycle
    for index in range(3):
        lc = complete(lc, index).lifecycle
    write = lc.write(T1, {}, None)
    assert write.encoded is not None
    assert write.encoded.known_secrets == {"hunter2-hunter2"}  # the manager need not re-scrub


def test_with_no_compaction_the_turns_out_of_memory_are_summarized_by_the_last_summary() -> None:
    """A helper's report: the summary model was asked a session's summary of the turns in
    memory alone; the turns left out of memory are what the session's last summary says."""
    policy = PersistPolicy(max_turns=2, memory_turns=3, compaction=EventsCompactionConfig(0, 0))
    lc = SessionLifecycle(policy=policy).start_fresh(T0).lifecycle
    assert lc.earlier_summary() is None
    for index in range(3):
        lc = complete(lc, index).lifecycle
    assert lc.earlier_summary() is None, "every turn is still in memory"
    summarized = lc.record_summary(
        "Designing a triage agent", now=T1, manifest={}, agent_spec_path=None
    )
    lc = summarized.lifecycle
    for index in range(3, 10):
        lc = complete(lc, index).lifecycle
    assert lc.first_invocation == 8
    assert lc.earlier_summary() == render_compaction(
        EventCompaction(1, 7, "Designing a triage agent")
    )


def test_a_turn_finishing_for_a_terminal_gone_is_kept_meanwhile_as_unanswered() -> None:
    """Its write keeps the message marked unanswered and the last-active time, and
    leaves the lifecycle as it is (the turn's end writes the session again)."""
    from session.interrupted import unanswered_turn
    from session.unanswered import unanswered_message

    finishing = complete(active()).lifecycle.begin_turn(2, "m-2").let_turn_finish("disconnected")
    (write,) = finishing.kept_meanwhile(unanswered_turn("go on", "gone"))
    assert isinstance(write, WriteSession)
    assert unanswered_message(write.state.recent_messages) == "go on"
    assert write.state.updated_at == T1 and finishing.phase is Phase.FINISHING
    assert count_turns(load_messages(write.state.recent_messages)) == 2


def test_the_end_of_a_turn_let_finish_for_a_terminal_gone_marks_its_reply_unseen() -> None:
    """H152: nobody saw that turn's end; the next open shows it. The mark follows the
    session's write (a reopen finds the reply saved); a turn with its terminal there, or
    cut by an exit asked for, marks nothing, nor does the copy kept meanwhile."""
    from session.interrupted import unanswered_turn
    from session.lifecycle import MarkReplyUnseen

    base = complete(active()).lifecycle
    session_id = base.session_id
    assert session_id is not None
    finishing = base.begin_turn(2).let_turn_finish("disconnected")
    effects = complete(finishing, 1).effects
    assert isinstance(effects[0], WriteSession)
    assert effects[-1] == MarkReplyUnseen(session_id)
    cut_at_the_wait = finishing.cut_turn("finish-wait-over")  # its end unseen too
    assert complete(cut_at_the_wait, 1).effects[-1] == MarkReplyUnseen(session_id)
    assert not any(isinstance(e, MarkReplyUnseen) for e in complete(base, 1).effects)
    cut = base.begin_turn(2).cut_turn("shutdown")
    assert not any(isinstance(e, MarkReplyUnseen) for e in complete(cut, 1).effects)
    meanwhile = finishing.kept_meanwhile(unanswered_turn("go on", "gone"))
    assert not any(isinstance(e, MarkReplyUnseen) for e in meanwhile)


def test_an_exit_before_the_turn_in_flight_ended_writes_its_message_unanswered() -> None:
    """The actor leaves (the stop, a cut whose end did not come) or stops mid-turn: the
    exit's write holds the message, marked, at the last-active time; it wrote the
    session without it, over the copy ``kept_meanwhile`` had written."""
    from session.interrupted import unanswered_turn
    from session.unanswered import unanswered_message

    for phase, in_flight in (
        (Phase.IN_TURN, complete(active()).lifecycle.begin_turn(2, "m-2")),
        (Phase.FINISHING, complete(active()).lifecycle.begin_turn(2).let_turn_finish("gone")),
        (Phase.CUTTING, complete(active()).lifecycle.begin_turn(2).cut_turn("shutdown")),
    ):
        assert in_flight.phase is phase
        kept = in_flight.with_turn_unanswered(unanswered_turn("go on", "stopped"))
        (write,) = kept.exit(manifest={}, agent_spec_path=None).effects
        assert isinstance(write, WriteSession), phase
        assert unanswered_message(write.state.recent_messages) == "go on", phase
        assert write.state.updated_at == T1, phase


def test_with_no_turn_in_flight_nothing_is_kept_unanswered() -> None:
    from session.interrupted import unanswered_turn

    lc = complete(active()).lifecycle
    assert lc.with_turn_unanswered(unanswered_turn("go on", "stopped")) is lc
    in_turn = lc.begin_turn(2)
    assert in_turn.with_turn_unanswered(()) is in_turn


def _turn_in(phase: str) -> SessionLifecycle:
    """A lifecycle whose turn 2 runs, moved as ``phase`` says (the steps that lead there)."""
    lc = complete(active()).lifecycle.begin_turn(2)
    for step in phase.split(", then ") if phase != "in a turn" else ():
        kind, _, reason = step.partition(" by ")
        lc = lc.let_turn_finish(reason) if kind == "finishing" else lc.cut_turn(reason)
    return lc


@pytest.mark.parametrize(
    ("phase", "reason", "failed", "why"),
    [
        # the turn's own end, cut with nothing kept (reason None)
        ("in a turn", None, None, "the chat ended before the reply"),
        ("cutting by closed", None, None, "the chat ended before the reply"),
        ("cutting by shutdown", None, None, "the supervisor stopped before the reply"),
        ("finishing by disconnected", None, None, "the chat ended before the reply"),
        ("finishing by disconnected, then cutting by finish-wait-over", None, None,
         "the chat ended before the reply"),
        ("finishing by disconnected, then cutting by shutdown", None, None,
         "the supervisor stopped before the reply"),
        ("finishing by disconnected, then cutting by taken-up", None, None,
         "stopped by the user while it was waited for"),
        # the actor leaves or stops before the turn's end came (for ``reason``)
        ("in a turn", "shutdown", None, "the supervisor stopped before the reply"),
        ("cutting by closed", "closed", None, "the chat ended before the reply"),
        ("cutting by closed", "shutdown", None, "the supervisor stopped before the reply"),
        ("finishing by disconnected", "shutdown", None,
         "the terminal went away; the supervisor stopped before the reply ended"),
        ("finishing by disconnected, then cutting by taken-up", "taken-up", None,
         "stopped by the user while it was waited for"),
        # an internal error made the actor save while the turn may still run (H151)
        ("in a turn", "shutdown", "OSError: boom", "an internal error (OSError: boom) came "
         "before the reply ended"),
        ("finishing by disconnected", "shutdown", "OSError: boom", "the terminal went away; an "
         "internal error (OSError: boom) came before the reply ended"),
    ],
)
def test_why_a_message_is_kept_unanswered_is_decided_by_the_lifecycle_alone(
    phase: str, reason: str | None, failed: str | None, why: str
) -> None:
    """One owner of the ``[no reply: ...]`` reason (H151: the actor chose it in two places,
    and an internal error's save said the supervisor had stopped)."""
    from session.unanswered import no_reply

    lc = _turn_in(phase)
    assert lc.unanswered_because(reason, failed=failed) == why
    _request, response = lc.unanswered("go on", reason, failed=failed)
    assert response.parts[0].content == no_reply(why)  # type: ignore[union-attr]
    assert lc.unanswered(None, reason) == ()
    assert complete(active()).lifecycle.unanswered("go on", reason) == ()  # no turn runs


def test_a_turn_kept_meanwhile_with_no_message_writes_nothing() -> None:
    finishing = complete(active()).lifecycle.begin_turn(2).let_turn_finish("disconnected")
    assert finishing.kept_meanwhile(finishing.unanswered(None, "shutdown")) == ()


def said(prompt: str) -> list[ModelMessage]:
    """A turn whose reply echoes its prompt, as a model that repeats the user does."""
    return [
        ModelRequest(parts=[UserPromptPart(content=prompt, timestamp=T0)]),
        ModelResponse(parts=[TextPart(content=f"echo: {prompt}")], timestamp=T0),
    ]


def completed(lc: SessionLifecycle, *prompts: str) -> SessionLifecycle:
    for prompt in prompts:
        done = lc.begin_turn(1).complete_turn(
            said(prompt), now=T1, manifest={}, agent_spec_path=None
        )
        lc = done.lifecycle
    return lc


def test_the_next_request_sends_a_turn_as_scrubbed_as_its_file() -> None:
    """A live session sent a key the user typed, and the reply echoing it, in clear at every
    later request, while the file kept them scrubbed and a resumed session sent
    ``[REDACTED]`` (H160)."""
    known = SessionLifecycle(policy=PersistPolicy(known_secrets=("plainlocalkeyvalue77",)))
    lc = completed(known.start_fresh(T0).lifecycle, "log in with plainlocalkeyvalue77")
    lc = completed(lc, "and now sk-abcdefghijklmnopqrstuvwx")  # a new secret, by its pattern
    sent = str(lc.request_history())
    assert "plainlocalkeyvalue77" not in sent and "sk-abcdef" not in sent
    assert "echo: log in with [REDACTED]" in sent and "echo: and now [REDACTED]" in sent


def test_a_key_cut_between_two_turns_is_found_and_sent_in_neither() -> None:
    """The previous message as typed finds the rest of a key, though the history keeps it
    scrubbed."""
    lc = completed(
        SessionLifecycle().start_fresh(T0).lifecycle,
        "here is the first half of my key: sk-proj-SpLiTfIrStHaLf",
        "and the second half: 0123SeCoNdHaLfXyZ9876",
    )
    sent = str(lc.request_history())
    assert "SpLiTfIrStHaLf" not in sent and "SeCoNdHaLfXyZ" not in sent
    assert "0123SeCoNdHaLfXyZ9876" in lc.policy.known_secrets


def test_a_key_cut_short_at_a_message_end_is_found_with_its_rest_and_sent_in_neither() -> None:
    """A key's head too short for its pattern (``sk-proj-Ab3d``) ending a message, its rest
    in the next: neither half was known, both were sent and saved in clear (H204)."""
    lc = completed(
        SessionLifecycle().start_fresh(T0).lifecycle,
        "my key is sk-proj-Ab3d",
        "E5gH7jK9mN1pQ3rStU",
    )
    sent = str(lc.request_history())
    assert "Ab3d" not in sent and "E5gH7jK9" not in sent
    assert {"sk-proj-Ab3d", "E5gH7jK9mN1pQ3rStU"} <= set(lc.policy.known_secrets)


def test_a_value_found_secret_later_leaves_the_resume_context_the_model_is_given() -> None:
    """The resume context (the summary of earlier chats) is given to the model with every
    request: a value it quoted, named a password in the resumed chat, was scrubbed from the
    files but still sent in clear as the instructions of every later request (H182)."""
    stored = STORED.model_copy(update={"summary": "The user said to remember Jq4Wn8Zt2Rk6Vy."})
    lc = SessionLifecycle().resume(stored, None).lifecycle
    assert "Jq4Wn8Zt2Rk6Vy" in lc.instructions()
    lc = completed(lc, "the password for staging is Jq4Wn8Zt2Rk6Vy")
    assert "Jq4Wn8Zt2Rk6Vy" not in lc.instructions()
    assert "remember [REDACTED]" in lc.instructions()


def cut_turn_echoing(prompt: str, partial: str) -> tuple[ModelMessage, ...]:
    """A turn whose reply (after a tool ran) was cut by Ctrl+C at ``partial``."""
    return interrupted_turn(
        [
            ModelRequest(parts=[UserPromptPart(prompt)]),
            ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.md"}, "c1")]),
            ModelRequest(parts=[ToolReturnPart("read_file", "# a", tool_call_id="c1")]),
        ],
        partial,
    )


@pytest.mark.parametrize("secret_said", ["earlier", "in the same turn"])
def test_a_reply_cut_inside_a_known_passphrase_keeps_none_of_its_words(secret_said: str) -> None:
    """H204: a kept cut reply ending partway through a passphrase the session knows kept the
    words that came (``password: tired ocean``), in the file and the next requests."""
    lc = SessionLifecycle().start_fresh(T0).lifecycle
    if secret_said == "earlier":
        lc = completed(lc, "my password: tired ocean lamp")
        prompt = "remind me of it"
    else:
        prompt = "my password: tired ocean lamp; remind me of it"
    assert "tired ocean lamp" in lc.policy.known_secrets or secret_said != "earlier"
    done = lc.begin_turn(1).complete_turn(
        cut_turn_echoing(prompt, "Your password: tired ocean"),
        now=T1, manifest={}, agent_spec_path=None,
    )
    (write, *_) = done.effects
    assert isinstance(write, WriteSession)
    for kept in (str(write.state.recent_messages), str(done.lifecycle.request_history())):
        assert "tired" not in kept and "ocean" not in kept, kept
    assert "Your password: [REDACTED]" in str(done.lifecycle.request_history())


def test_a_reply_cut_after_a_word_a_passphrase_begins_with_loses_only_a_whole_head() -> None:
    """A head is taken from a word's start only (``retired`` is not ``tired``), and a head
    under four characters is none."""
    lc = completed(SessionLifecycle().start_fresh(T0).lifecycle, "my password: tired ocean lamp")
    for partial in ("The sailor retired", "Use the tir"):
        done = lc.begin_turn(1).complete_turn(
            cut_turn_echoing("go on", partial), now=T1, manifest={}, agent_spec_path=None
        )
        assert partial in str(done.lifecycle.request_history())
