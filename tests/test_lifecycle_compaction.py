"""SessionLifecycle and compaction: what is due, what the next request carries, what is
saved, what a resume restores, and the back-off after a failure."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    UserPromptPart,
)

from session.compacted import session_turns, tail_prompts
from session.compaction import (
    FIRST_KEPT,
    EventsCompactionConfig,
    OfflineEventSummarizer,
    estimate_tokens,
    finish_compaction,
    sliding_window,
    token_window,
)
from session.filesystem import FileDrift
from session.history import load_messages, message_chars, turn_starts
from session.lifecycle import PersistPolicy, SessionLifecycle, WriteSession
from session.summary import offline_summary
from tests.conversations import turn

T0 = datetime(2026, 3, 30, 10, 15, tzinfo=UTC)
REPLY = "A design reply with enough words in it to be worth compacting later on. " * 4


def policy(interval: int = 3, overlap: int = 1, threshold: int | None = None) -> PersistPolicy:
    return PersistPolicy(
        compaction=EventsCompactionConfig(
            interval, overlap, token_threshold=threshold, event_retention_size=2
        )
    )


def after_turns(lc: SessionLifecycle, first: int, last: int) -> SessionLifecycle:
    for n in range(first, last + 1):
        lc = (
            lc.begin_turn(0)
            .complete_turn(turn(n, text=REPLY), now=T0, manifest={}, agent_spec_path=None)
            .lifecycle
        )
    return lc


def after_saying(lc: SessionLifecycle, prompts: list[str]) -> SessionLifecycle:
    """``lc`` after a turn for each of ``prompts``, each answered with ``REPLY``."""
    for said in prompts:
        messages: list[ModelMessage] = [
            ModelRequest(parts=[UserPromptPart(content=said, timestamp=T0)]),
            ModelResponse(parts=[TextPart(REPLY)], timestamp=T0),
        ]
        done = lc.begin_turn(0).complete_turn(messages, now=T0, manifest={}, agent_spec_path=None)
        lc = done.lifecycle
    return lc


def compact(
    lc: SessionLifecycle, force: bool = False
) -> tuple[SessionLifecycle, tuple[object, ...]]:
    window = lc.compaction_due(force=force)
    assert window is not None
    lc = lc.begin_compaction(window)
    compaction = finish_compaction(window, OfflineEventSummarizer().summarize(window.events))
    assert compaction is not None
    transition = lc.compacted(compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None)
    return transition.lifecycle, transition.effects


def prompts(lc: SessionLifecycle) -> list[str]:
    return [
        str(part.content)
        for message in lc.request_history()
        if isinstance(message, ModelRequest)
        for part in message.parts
        if part.part_kind == "user-prompt"
    ]


def fresh(p: PersistPolicy) -> SessionLifecycle:
    return SessionLifecycle(policy=p).start_fresh(T0).lifecycle


def test_nothing_is_due_before_the_interval_and_the_window_is_due_at_it() -> None:
    lc = after_turns(fresh(policy()), 1, 2)
    assert lc.compaction_due() is None
    lc = after_turns(lc, 3, 3)
    window = lc.compaction_due()
    assert window is not None and (window.start_invocation, window.end_invocation) == (1, 3)


def test_one_compaction_at_a_time() -> None:
    lc = after_turns(fresh(policy()), 1, 3)
    window = lc.compaction_due()
    assert window is not None
    assert lc.begin_compaction(window).compaction_due() is None


def test_after_a_compaction_the_request_starts_with_it_then_the_later_turns() -> None:
    lc, effects = compact(after_turns(fresh(policy()), 1, 3))
    lc = after_turns(lc, 4, 5)
    first = lc.request_history()[0]
    assert isinstance(first, ModelRequest) and isinstance(first.parts[0], CompactionPart)
    assert prompts(lc) == ["question 4", "question 5"]
    assert lc.invocations == 5
    (write,) = effects
    assert isinstance(write, WriteSession)
    assert write.state.compacted_history_summary is not None
    assert write.state.compacted_history_summary.startswith("Conversation so far (turns 1-3")


def test_memory_keeps_the_overlap_for_the_next_window() -> None:
    lc, _ = compact(after_turns(fresh(policy(overlap=1)), 1, 3))
    lc = after_turns(lc, 4, 6)
    window = lc.compaction_due()
    assert window is not None
    ids = [e.invocation_id for e in window.events if e.message is not None]
    assert sorted(set(ids)) == [3, 4, 5, 6]


def test_the_save_keeps_the_overlap_and_the_turns_after_the_boundary_and_resume_sends_the_same(
) -> None:
    lc, _ = compact(after_turns(fresh(policy(overlap=1)), 1, 3))
    lc = after_turns(lc, 4, 5)
    saved = lc.write(T0, {}, None).state
    assert len(saved.recent_messages) == 6  # turn 3 (the overlap), 4 and 5: two messages each
    resumed = SessionLifecycle(policy=policy(overlap=1)).resume(saved, FileDrift()).lifecycle
    assert resumed.request_history() == list(lc.request_history())
    assert resumed.invocations == 5
    assert load_messages(saved.recent_messages)[2:] == list(lc.request_history()[1:])


def test_a_resumed_session_compacts_the_next_window_as_one_that_never_left() -> None:
    lc, _ = compact(after_turns(fresh(policy(overlap=1)), 1, 3))
    saved = lc.write(T0, {}, None).state
    resumed = SessionLifecycle(policy=policy(overlap=1)).resume(saved, FileDrift()).lifecycle
    stayed, resumed = after_turns(lc, 4, 6), after_turns(resumed, 4, 6)
    window, again = stayed.compaction_due(), resumed.compaction_due()
    assert window is not None and again is not None
    assert [e.invocation_id for e in again.events] == [e.invocation_id for e in window.events]
    assert sorted({e.invocation_id for e in again.events if e.message is not None}) == [3, 4, 5, 6]


def test_compact_now_covers_every_completed_turn_and_the_request_reads_the_last_again() -> None:
    lc, _ = compact(after_turns(fresh(policy(interval=0)), 1, 2), force=True)
    assert lc.compaction is not None and lc.compaction.end_invocation == 2
    assert prompts(lc) == ["question 2"]  # the last exchange, word for word


def test_the_compaction_says_its_last_turn_follows_again_only_when_it_does() -> None:
    """pydantic-ai merges the compaction's request with the turn's first one after it,
    whose stamp is then lost: the model (the offline one counts turns by it) is told that
    the exchange after the summary is its last turn again, not a new one."""
    lc, _ = compact(after_turns(fresh(policy(interval=0)), 1, 2), force=True)
    head = lc.request_history()[0].parts[0]
    assert isinstance(head, CompactionPart)
    assert str(head.content).endswith("\n\nTurn 2, the last of these, follows again word for word.")
    lc = after_turns(lc, 3, 3)
    head = lc.request_history()[0].parts[0]
    assert isinstance(head, CompactionPart) and "follows again" not in str(head.content)


def test_a_compaction_never_makes_the_next_request_larger_with_the_last_turn_again() -> None:
    """H117: `/compact` of short turns said "~125 -> ~130 tokens": the compaction was kept
    for being smaller without the last turn it then sent again. It is not sent again when
    the request would not be smaller with it."""
    lc = fresh(policy(interval=0))
    for n, reply in enumerate(["ok", "ok", "a long answer " * 150], 1):
        lc = (
            lc.begin_turn(0)
            .complete_turn(turn(n, text=reply), now=T0, manifest={}, agent_spec_path=None)
            .lifecycle
        )
    before = lc.estimated_tokens()
    lc, _ = compact(lc, force=True)
    assert lc.compaction is not None and lc.compaction.end_invocation == 3
    assert lc.estimated_tokens() < before
    assert prompts(lc) == []  # the last turn, not sent again


def test_a_last_turn_over_the_compactions_share_is_not_read_again() -> None:
    lc = fresh(policy(interval=0, threshold=10))  # a share of 10 characters
    lc = after_turns(lc, 1, 2)
    lc, _ = compact(lc, force=True)
    assert lc.compaction is not None and prompts(lc) == []


def test_a_result_for_an_older_generation_is_ignored() -> None:
    lc = after_turns(fresh(policy()), 1, 3)
    window = lc.compaction_due()
    assert window is not None
    compaction = finish_compaction(window, OfflineEventSummarizer().summarize(window.events))
    assert compaction is not None
    reset = lc.reset(T0).lifecycle
    late = reset.compacted(compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None)
    assert late.lifecycle is reset and late.effects == ()


def test_a_failure_backs_off_instead_of_retrying_every_turn() -> None:
    lc = after_turns(fresh(policy(interval=3)), 1, 3)
    window = lc.compaction_due()
    assert window is not None
    lc = lc.begin_compaction(window).compaction_failed(lc.generation)
    assert lc.compaction_failures == 1 and lc.backoff_until == 3 + 6
    lc = after_turns(lc, 4, 8)
    assert lc.compaction_due() is None, "still backing off"
    lc = after_turns(lc, 9, 9)
    assert lc.compaction_due() is not None


def test_a_window_that_failed_is_not_tried_again_at_once_after_a_resume() -> None:
    """The back-off is not saved: a resume found the failed window due at once, and the
    exit of a resume with no turn asked the summary model for it again, every time."""
    lc = after_turns(fresh(policy(interval=3)), 1, 3)
    window = lc.compaction_due()
    assert window is not None
    lc = lc.begin_compaction(window).compaction_failed(lc.generation)
    saved = lc.write(T0, {}, None).state
    resumed = SessionLifecycle(policy=policy(interval=3)).resume(saved, FileDrift()).lifecycle
    assert resumed.invocations == 3
    assert resumed.compaction_due() is None, "tried again before any new turn"
    assert after_turns(resumed, 4, 4).compaction_due() is not None, "with the next turn in it"


def test_a_window_backing_off_does_not_mute_the_token_budget() -> None:
    """A helper's find: a window whose summary was no shorter backed off six turns, and the
    budget's check with it: requests grew to five times the budget, untold."""
    lc = after_turns(fresh(policy(interval=3, threshold=200)), 1, 3)
    window = lc.compaction_due()
    assert window is not None
    lc = lc.begin_compaction(window).compaction_failed(lc.generation)
    lc = after_turns(lc, 4, 5)
    assert lc.invocations < lc.backoff_until
    assert lc.compaction_due() is None, "the sliding window still backs off"
    tokens = lc.request_tokens()
    assert tokens >= 200
    assert lc.compaction_due(request_tokens=tokens) is not None


def test_a_window_whose_summary_was_no_shorter_is_not_due_again_until_it_changes() -> None:
    """H189: an unchanged window whose summary came back no shorter was asked of the
    summary model again at every try (``/compact``: 21 requests for 21). A new turn makes
    another window, due again."""
    lc = after_turns(fresh(policy(interval=100, threshold=200)), 1, 4)
    tokens = lc.request_tokens()
    window = lc.compaction_due(request_tokens=tokens)
    assert window is not None
    lc = lc.begin_compaction(window).compaction_failed(lc.generation, no_gain=True)
    assert lc.known_no_shorter(window)
    assert lc.compaction_due(request_tokens=tokens) is None
    forced = lc.compaction_due(force=True)
    assert forced is not None and lc.known_no_shorter(forced) == (forced.end_invocation == 3)
    lc = after_turns(lc, 5, 5)
    again = lc.compaction_due(request_tokens=lc.request_tokens())
    assert again is not None and not lc.known_no_shorter(again)


def test_the_token_budget_compacts_before_a_request_over_it() -> None:
    lc = after_turns(fresh(policy(interval=100, threshold=200)), 1, 4)
    tokens = lc.request_tokens()
    assert tokens >= 200
    window = lc.compaction_due(request_tokens=tokens)
    assert window is not None and window.end_invocation == 3  # the last turn's 2 events stay
    assert lc.compaction_due(request_tokens=199) is None


def test_the_models_count_is_used_when_it_reported_one() -> None:
    lc = fresh(policy())
    lc = (
        lc.begin_turn(0)
        .complete_turn(
            turn(1, text="short"), now=T0, manifest={}, agent_spec_path=None, input_tokens=5000
        )
        .lifecycle
    )
    assert 5000 < lc.request_tokens() < 5100


def test_within_a_turn_the_budget_is_less_what_the_model_counts_beyond_the_estimate() -> None:
    """H135: the guard within a turn kept the estimate under the whole budget, while the
    model (its tokenizer, its template) counted ~10% more than the estimate: a tool's
    return took the request over the budget by the model's count."""
    lc = fresh(policy(threshold=3000))
    assert lc.estimate_budget() == 3000
    lc = (
        lc.begin_turn(0)
        .complete_turn(
            turn(1, text="short"), now=T0, manifest={}, agent_spec_path=None, input_tokens=400
        )
        .lifecycle
    )
    assert lc.token_overhead > 0
    assert lc.estimate_budget() == 3000 - lc.token_overhead
    assert fresh(policy()).estimate_budget() is None


def test_decisions_retained_by_a_compaction_join_the_sessions_decisions() -> None:
    lc = fresh(policy(interval=1, overlap=0))
    lc = (
        lc.begin_turn(0)
        .complete_turn(
            _said("Decision: the agent answers in French."),
            now=T0,
            manifest={},
            agent_spec_path=None,
        )
        .lifecycle
    )
    lc, _ = compact(lc)
    assert lc.state is not None
    assert lc.state.decisions == ("Decision: the agent answers in French.",)


def _said(text: str) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(text)]), ModelResponse(parts=[TextPart(REPLY)])]


def test_the_users_rules_join_the_instructions_once_compacted() -> None:
    lc = fresh(policy(interval=1, overlap=0))
    lc = (
        lc.begin_turn(0)
        .complete_turn(
            _said("You must never promise refunds."), now=T0, manifest={}, agent_spec_path=None
        )
        .lifecycle
    )
    assert lc.instructions() == ""
    lc, _ = compact(lc)
    assert lc.instructions().endswith("(always follow them)\n- You must never promise refunds.")


def test_the_users_rules_in_the_instructions_keep_to_the_compactions_share_of_the_budget() -> None:
    """A helper's attack: 60 long rules made a 3,600-token instructions block against a
    1,000-token budget, and every turn compacted again for nothing."""
    from session.compaction import compaction_chars

    budget = policy(interval=100, overlap=0, threshold=1000)
    lc = fresh(budget)
    for n in range(60):
        rule = f"Always follow rule number {n}: keep the customer tone friendly and concise."
        lc = lc.begin_turn(0).complete_turn(
            _said(rule), now=T0, manifest={}, agent_spec_path=None
        ).lifecycle
    lc, _ = compact(lc, force=True)
    share = compaction_chars(budget.compaction)
    assert share is not None
    block = lc.instructions().split("(always follow them)\n", 1)[1]
    assert len(block) <= share
    assert block.endswith("rule number 59: keep the customer tone friendly and concise.")
    # H153: the first rules stay too (the oldest FIRST_KEPT), the middle ones give way
    assert block.splitlines()[0].startswith("- Always follow rule number 0:")
    assert any("more, kept in the session file" in line for line in block.splitlines())


def test_the_compacted_summary_is_scrubbed_before_it_is_saved() -> None:
    key = "sk-live-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4"
    lc = (
        SessionLifecycle(
            policy=PersistPolicy(
                known_secrets=("hunter2-env-secret",),
                compaction=EventsCompactionConfig(1, 0),
            )
        )
        .start_fresh(T0)
        .lifecycle
    )
    lc = (
        lc.begin_turn(0)
        .complete_turn(
            _said(
                f"Decision: the agent calls the API with {key}. Keep hunter2-env-secret in a.md."
            ),
            now=T0,
            manifest={},
            agent_spec_path=None,
        )
        .lifecycle
    )
    lc, effects = compact(lc)
    (write,) = effects
    assert isinstance(write, WriteSession)
    saved = write.state.compacted_history_summary
    assert saved is not None and "Decision: the agent calls the API with" in saved
    assert key not in saved and "hunter2-env-secret" not in saved


def test_turns_not_yet_compacted_stay_in_memory_past_memory_turns() -> None:
    p = PersistPolicy(memory_turns=5, compaction=EventsCompactionConfig(8, 1))
    lc = after_turns(SessionLifecycle(policy=p).start_fresh(T0).lifecycle, 1, 8)
    window = lc.compaction_due()
    assert window is not None and (window.start_invocation, window.end_invocation) == (1, 8)


def test_with_the_window_on_every_turn_after_the_boundary_is_sent() -> None:
    p = PersistPolicy(max_turns=3, compaction=EventsCompactionConfig(30, 0))
    lc = after_turns(SessionLifecycle(policy=p).start_fresh(T0).lifecycle, 1, 25)
    assert prompts(lc)[0] == "question 1" and len(prompts(lc)) == 25


def test_with_the_window_off_the_tail_limit_applies() -> None:
    p = PersistPolicy(max_turns=3, compaction=EventsCompactionConfig(0, 0))
    lc = after_turns(SessionLifecycle(policy=p).start_fresh(T0).lifecycle, 1, 25)
    assert prompts(lc) == ["question 23", "question 24", "question 25"]


def test_with_the_window_off_the_turns_the_tail_leaves_out_are_counted() -> None:
    p = PersistPolicy(max_turns=3, compaction=EventsCompactionConfig(0, 0))
    lc = after_turns(SessionLifecycle(policy=p).start_fresh(T0).lifecycle, 1, 3)
    assert lc.turns_left_out() == 0
    lc = after_turns(lc, 4, 5)
    assert lc.turns_left_out() == 2, "turns 1 and 2: neither sent nor summarized"


def test_with_the_window_on_no_turn_is_left_out_unsummarized() -> None:
    p = PersistPolicy(max_turns=3, compaction=EventsCompactionConfig(3, 1))
    lc = after_turns(SessionLifecycle(policy=p).start_fresh(T0).lifecycle, 1, 8)
    assert lc.turns_left_out() == 0


def test_huge_turns_over_the_budget_are_compacted_not_kept() -> None:
    p = policy(interval=10, threshold=1000)  # retention 2 events, at most 2,000 characters
    lc = fresh(p)
    for n in range(1, 4):
        lc = (
            lc.begin_turn(0)
            .complete_turn(
                turn(n, text="pasted file " * 1000), now=T0, manifest={}, agent_spec_path=None
            )
            .lifecycle
        )
    window = lc.compaction_due(request_tokens=lc.request_tokens())
    assert window is not None and window.end_invocation == 3, "the last paste is too big to keep"


def test_with_compaction_off_the_token_budget_leaves_old_turns_out_not_summarized() -> None:
    """A helper's report: interval 0 ("turns compaction off") still compacted for the
    token budget. It now holds the request's turns to the budget instead."""
    p = policy(interval=0, threshold=1000)  # 4,000 characters, 3,000 of them for turns
    lc = after_turns(fresh(p), 1, 40)
    assert lc.compaction_due(request_tokens=lc.request_tokens()) is None
    chars = sum(message_chars(m) for m in lc.request_history())
    assert 2_000 < chars <= 3_000, chars
    assert prompts(lc)[-1] == "question 40"
    assert lc.compaction_due(force=True) is not None, "/compact still compacts"


def test_a_resumed_request_carries_each_decision_once() -> None:
    """A helper's find (H66): resumed, a request listed the compacted turns' decisions
    twice: in the resume context's "Key Decisions Made" and in the compaction's
    "Decisions made:", which under a tight budget then left others out for the room."""
    p = policy(interval=3, overlap=1, threshold=4000)
    said = "Decision: after a long discussion we agreed that we will use the store number {}"
    lc, _ = compact(after_saying(fresh(p), [said.format(n) for n in range(1, 4)]))
    assert lc.compaction is not None and len(lc.compaction.retained.decisions) == 3
    saved = lc.write(T0, {}, None).state
    resumed = SessionLifecycle(policy=p).resume(saved, FileDrift()).lifecycle
    (part,) = resumed.request_history()[0].parts
    assert isinstance(part, CompactionPart)
    for n in range(1, 4):
        decision = f"use the store number {n}"
        assert resumed.instructions().count(decision) == 1
        assert decision not in str(part.content)
    assert "Decisions made:" not in (resumed.compaction_sent() or "")
    fresh_request = lc.request_history()[0].parts[0]
    assert isinstance(fresh_request, CompactionPart)
    assert "use the store number 1" in str(fresh_request.content), "not resumed: listed there"


def test_a_decision_too_long_for_the_resume_context_is_not_sent_twice() -> None:
    """A helper's find (H69): a decision of over 300 characters, clipped in the resume
    context, was listed again (clipped otherwise) in the compacted history."""
    p = policy(interval=3, overlap=1, threshold=4000)
    long = "Decision: " + " ".join(f"clause{n}" for n in range(60)) + " END"
    lc, _ = compact(after_saying(fresh(p), [long, "question 2", "question 3"]))
    saved = lc.write(T0, {}, None).state
    resumed = SessionLifecycle(policy=p).resume(saved, FileDrift()).lifecycle
    sent = resumed.instructions() + (resumed.compaction_sent() or "")
    assert sent.count("clause20 clause21 clause22") == 1  # past the narrative's quote


def test_with_compaction_off_a_saved_tail_still_counts_the_turns_it_left_out() -> None:
    """A helper's find (H64): with compaction off the session file keeps the request's
    tail, so the turns the budget left out were gone from its count too: a 40-turn
    session was offered as "5 turns", and resumed, its summary began afresh at turn 36."""
    p = policy(interval=0, threshold=1000)
    summarized = after_turns(fresh(p), 1, 40).record_summary(
        "Designing the triage agent", now=T0, manifest={}, agent_spec_path=None
    )
    saved = summarized.lifecycle.write(T0, {}, None).state
    assert tail_prompts(saved.recent_messages)[0] != "question 1", "the budget left turns out"
    assert session_turns(None, saved.recent_messages) == 40
    resumed = SessionLifecycle(policy=p).resume(saved, FileDrift()).lifecycle
    assert resumed.invocations == 40
    assert resumed.earlier_summary() is not None, "the left-out turns have the old summary"
    again = after_turns(resumed, 41, 41).write(T0, {}, None).state
    assert session_turns(None, again.recent_messages) == 41


def test_with_compaction_off_a_compact_after_a_resume_starts_from_the_first_turn() -> None:
    """A helper's find (H64, H66): resumed with compaction off, a ``/compact`` covered the
    turns in memory only, and its summary said the conversation "Started with" the
    oldest of them; the earlier turns' summary now stands for those left out."""
    p = policy(interval=0, threshold=1000)
    lc = after_turns(fresh(p), 1, 40)
    summary = offline_summary(lc.history, (), lc.earlier_summary())
    assert summary is not None and summary.startswith('40 recent requests; first: "question 1"')
    summarized = lc.record_summary(summary, now=T0, manifest={}, agent_spec_path=None)
    saved = summarized.lifecycle.write(T0, {}, None).state
    resumed = SessionLifecycle(policy=p).resume(saved, FileDrift()).lifecycle
    compacted, _ = compact(resumed, force=True)
    assert compacted.compaction is not None
    assert (compacted.compaction.start_invocation, compacted.compaction.end_invocation) == (1, 40)
    assert compacted.compaction.compacted_content.startswith("Started with: question 1\n")


def test_with_compaction_off_the_turns_the_budget_leaves_out_after_a_compact_join_it() -> None:
    """A helper's report (H60): with compaction off, after a ``/compact`` the tail held to
    the budget dropped the turns between the compaction's boundary and the tail without a
    word: the requests lost them, the turn count missed them, and the summary still said
    "the later turns follow in full". They are now folded into the compaction (offline)."""
    p = policy(interval=0, threshold=1000)  # 3,000 characters of whole turns a request
    lc, _ = compact(after_turns(fresh(p), 1, 4), force=True)
    lc = after_turns(lc, 5, 40)
    assert lc.compaction is not None
    assert prompts(lc)[0] == f"question {lc.compaction.end_invocation + 1}", "no gap"
    assert prompts(lc)[-1] == "question 40"
    assert sum(message_chars(m) for m in lc.request_history()) <= 4_000, "still within budget"
    saved = lc.write(T0, {}, None).state
    assert session_turns(saved.compacted_history_summary, saved.recent_messages) == 40


def test_a_resume_with_compaction_off_folds_the_turns_its_tail_leaves_out() -> None:
    """A session saved with the window on keeps every turn after the boundary; resumed
    with compaction off, the tail held to the budget dropped those that did not fit,
    leaving a gap after the compaction and a turn count short of them."""
    lc, _ = compact(after_turns(fresh(policy(interval=100)), 1, 3), force=True)
    saved = after_turns(lc, 4, 40).write(T0, {}, None).state
    off = policy(interval=0, threshold=1000)
    resumed = SessionLifecycle(policy=off).resume(saved, FileDrift()).lifecycle
    assert resumed.compaction is not None
    assert prompts(resumed)[0] == f"question {resumed.compaction.end_invocation + 1}"
    assert resumed.invocations == 40
    again = resumed.write(T0, {}, None).state
    assert session_turns(again.compacted_history_summary, again.recent_messages) == 40


def test_a_resume_after_compaction_counts_turns_from_the_boundary() -> None:
    lc, _ = compact(after_turns(fresh(policy(interval=3, overlap=1)), 1, 3))
    lc = after_turns(lc, 4, 5)
    saved = lc.write(T0, {}, None).state
    resumed = SessionLifecycle(policy=policy(interval=3, overlap=1)).resume(saved, FileDrift())
    lc2 = after_turns(resumed.lifecycle, 6, 6)
    window = lc2.compaction_due()
    assert window is not None and (window.start_invocation, window.end_invocation) == (1, 6)


def test_a_failed_slash_compact_does_not_delay_the_automatic_window() -> None:
    lc = after_turns(fresh(policy(interval=3)), 1, 1)
    window = lc.compaction_due(force=True)
    assert window is not None
    lc = lc.begin_compaction(window).compaction_failed(lc.generation, back_off=False)
    assert lc.compacting is None and lc.backoff_until == 0
    assert after_turns(lc, 2, 3).compaction_due() is not None


def test_the_token_trigger_does_not_back_off_after_its_own_failure() -> None:
    """Each request over the budget tries once (a failing summary model is stood in for
    by the offline summarizer, so the wait is short); backing off sent requests over it."""
    lc = after_turns(fresh(policy(interval=100, threshold=200)), 1, 4)
    window = lc.compaction_due(request_tokens=lc.request_tokens())
    assert window is not None
    lc = lc.begin_compaction(window).compaction_failed(lc.generation)
    assert lc.compaction_due(request_tokens=lc.request_tokens()) == window


def test_what_is_due_is_what_the_windows_say_at_every_turn() -> None:
    """The lifecycle skips building the events when the window cannot be due yet; at
    every turn of a long session, compacting when due, it agrees with the windows."""
    for interval, overlap, threshold in [(3, 1, None), (1, 0, None), (5, 2, 400), (4, 0, 150)]:
        p = policy(interval, overlap, threshold)
        lc = fresh(p)
        for n in range(1, 30):
            lc = after_turns(lc, n, n)
            tokens = lc.request_tokens()
            by_tokens = lc.compaction_due(request_tokens=tokens)
            assert by_tokens == token_window(lc.events(), p.compaction, tokens)
            due = lc.compaction_due()
            assert due == sliding_window(lc.events(), p.compaction)
            if due is not None:
                lc, _ = compact(lc)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 3), st.booleans()), min_size=1, max_size=40),
    st.sampled_from([(3, 1), (1, 0), (0, 0)]),
    st.integers(2, 6),
)
def test_the_turn_starts_kept_are_the_historys_at_every_step(
    steps: list[tuple[int, bool]], window: tuple[int, int], memory_turns: int
) -> None:
    """A turn extends the kept turn starts instead of walking the history: they must be
    what a walk finds, whatever turns, compactions and memory trims came before."""
    interval, overlap = window
    p = dataclasses.replace(policy(interval, overlap), memory_turns=memory_turns)
    lc = fresh(p)
    for n, (tool_calls, compact_now) in enumerate(steps, start=1):
        lc = (
            lc.begin_turn(0)
            .complete_turn(turn(n, tool_calls, REPLY), now=T0, manifest={}, agent_spec_path=None)
            .lifecycle
        )
        assert lc.history_starts == tuple(turn_starts(lc.history))
        due = lc.compaction_due(force=compact_now)
        if due is not None:
            lc, _ = compact(lc, force=compact_now)
            assert lc.history_starts == tuple(turn_starts(lc.history))
        assert lc.invocations == n


def test_the_budget_supersedes_a_compaction_in_flight() -> None:
    """A background compaction that takes long (a slow summary model) left every request
    until it answered over the budget: the budget now compacts at once, and the late
    answer, older than what is kept by then, is ignored."""
    lc = after_turns(fresh(policy(interval=3, threshold=200)), 1, 3)
    background = lc.compaction_due()
    assert background is not None
    lc = lc.begin_compaction(background)
    lc = after_turns(lc, 4, 6)
    tokens = lc.request_tokens()
    assert lc.compaction_due(request_tokens=tokens) is None  # one in flight
    lc = lc.supersede_compaction()
    window = lc.compaction_due(request_tokens=tokens)
    assert window is not None and window.end_invocation > background.end_invocation
    compaction = finish_compaction(window, OfflineEventSummarizer().summarize(window.events))
    assert compaction is not None
    lc = lc.begin_compaction(window)
    lc = lc.compacted(
        compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None
    ).lifecycle
    late = finish_compaction(background, OfflineEventSummarizer().summarize(background.events))
    assert late is not None
    ignored = lc.compacted(late, lc.generation, now=T0, manifest={}, agent_spec_path=None)
    assert ignored.lifecycle is lc and ignored.effects == ()
    assert lc.compaction_failed(lc.generation) is lc  # a late failure: nothing in flight


def test_a_late_failure_of_a_superseded_compaction_leaves_the_one_in_flight_alone() -> None:
    """The failure of a compaction given up on (superseded by the budget's, or cancelled
    by a Ctrl+C) came while another was in flight and ended that one, backing off."""
    lc = after_turns(fresh(policy(interval=3, threshold=200)), 1, 3)
    background = lc.compaction_due()
    assert background is not None
    lc = after_turns(lc.begin_compaction(background), 4, 6).supersede_compaction()
    window = lc.compaction_due(request_tokens=lc.request_tokens())
    assert window is not None
    lc = lc.begin_compaction(window)
    assert lc.compaction_failed(lc.generation, window=background) is lc
    failed = lc.compaction_failed(lc.generation, window=window)
    assert failed.compacting is None and failed.compaction_failures == 1


def test_a_compaction_that_would_not_shrink_the_request_is_not_kept() -> None:
    """The offline summary of two short turns is longer than they are with the request's
    framing: the notice said "~65 -> ~69 tokens"."""
    short = SessionLifecycle(policy=policy(interval=2, overlap=1)).start_fresh(T0).lifecycle
    for n in (1, 2):
        short = (
            short.begin_turn(0)
            .complete_turn(turn(n, text="ok"), now=T0, manifest={}, agent_spec_path=None)
            .lifecycle
        )
    window = short.compaction_due()
    assert window is not None
    summary = OfflineEventSummarizer().summarize(window.events)
    assert summary is not None and summary.compaction is not None
    grown = dataclasses.replace(
        summary.compaction, compacted_content=summary.compaction.compacted_content + " x" * 400
    )
    lc = short.begin_compaction(window)
    kept = lc.compacted(grown, lc.generation, now=T0, manifest={}, agent_spec_path=None)
    assert kept.lifecycle.compaction is None and kept.effects == ()
    assert kept.lifecycle.compacting is None
    assert kept.lifecycle.estimated_tokens() == short.estimated_tokens()


def test_over_the_budget_is_told_once_then_again_each_time_the_request_grew_by_half() -> None:
    lc = after_turns(fresh(policy(threshold=1000)), 1, 2)
    told = []
    for tokens in (1200, 1300, 1799, 1800, 2000, 2700):
        lc, tell = lc.over_budget(lc.generation, tokens)
        told.append(tell)
    assert told == [True, False, False, True, False, True]
    assert lc.over_budget(lc.generation - 1, 10_000) == (lc, False)  # an older history's


def test_a_decision_the_user_states_joins_the_sessions_decisions_at_once() -> None:
    """A helper's report: with compaction off, a stated decision was kept nowhere once its
    turn left the request (they joined the session's decisions only when compacted); the
    resume context had no "Key Decisions Made"."""
    lc = after_turns(fresh(policy(interval=0, threshold=1000)), 1, 1)
    lc = (
        lc.begin_turn(0)
        .complete_turn(
            _said("Decision: the agent answers in French. Thanks!"),
            now=T0,
            manifest={},
            agent_spec_path=None,
        )
        .lifecycle
    )
    lc = after_turns(lc, 3, 40)
    assert "Decision:" not in " ".join(prompts(lc)), "the turn left the request"
    assert lc.state is not None
    assert lc.state.decisions == ("Decision: the agent answers in French.",)


def test_after_a_compaction_the_estimate_keeps_what_the_models_count_had_beyond_it() -> None:
    """A helper's report: after a compaction the budget was judged by the estimate of the
    messages alone, without the tool definitions and the base prompt the model's count
    had held: requests ran over the budget with no compaction and no warning."""
    lc = after_turns(fresh(policy(interval=3, overlap=0)), 1, 2)
    beyond = 1500  # the tools' schemas and the system prompt, as the model counts them
    lc = (
        lc.begin_turn(0)
        .complete_turn(
            turn(3, text=REPLY),
            now=T0,
            manifest={},
            agent_spec_path=None,
            input_tokens=lc.estimated_tokens(len("question 3")) + beyond,
        )
        .lifecycle
    )
    lc, _ = compact(lc)
    assert lc.token_base is None, "the model's count is stale: the history changed"
    assert lc.request_tokens() >= lc.estimated_tokens() + beyond * 0.9


def test_paths_named_again_in_the_overlap_stay_the_newest() -> None:
    """A helper's report: 360 files named kept the 300 named before the last 300 once the
    next window took the turn again as its overlap (re-mentioned items kept their old
    place, and the cap cut from the end). Each turn names 40 (a text naming more is a
    document: its first few are kept)."""
    named = [range(n, n + 40) for n in range(0, 360, 40)]
    prompts = [" ".join(f"src/huge/mod_{i}.py" for i in files) for files in named]
    lc = after_saying(fresh(policy(interval=9, overlap=1)), prompts)
    lc, _ = compact(lc)
    lc, _ = compact(after_turns(lc, 10, 18))
    assert lc.compaction is not None and lc.compaction.end_invocation == 18
    paths = lc.compaction.retained.paths
    assert paths[-1] == "src/huge/mod_359.py"
    # H153: the cap keeps the oldest FIRST_KEPT (the files the user set out with) too
    assert paths[:FIRST_KEPT] == tuple(f"src/huge/mod_{i}.py" for i in range(FIRST_KEPT))
    assert paths[FIRST_KEPT] == f"src/huge/mod_{60 + FIRST_KEPT}.py"


def test_a_rule_taken_back_leaves_the_instructions_at_once() -> None:
    """A second attack: "forget the tabs rule" left the rule in the instructions until
    the next compaction (up to ten turns)."""
    lc = fresh(policy(interval=100, overlap=0))
    lc = lc.begin_turn(0).complete_turn(
        _said("Never use tabs for indentation."), now=T0, manifest={}, agent_spec_path=None
    ).lifecycle
    lc, _ = compact(lc, force=True)
    assert "Never use tabs" in lc.instructions()
    lc = lc.begin_turn(0).complete_turn(
        _said("forget the tabs rule"), now=T0, manifest={}, agent_spec_path=None
    ).lifecycle
    assert "Never use tabs" not in lc.instructions()


def test_the_token_budget_makes_room_for_the_message_about_to_be_sent() -> None:
    """A helper's find (H88): with a budget of 1,000 tokens, a turn of ~1,900 characters
    (under half the budget, so kept whole) and a new message of 2,400 characters made a
    request over the budget; nothing was compacted ("nothing in it is left to compact")
    and the request went out over it, or was refused by a small model. The turns kept
    whole now leave room for the message, the instructions and the compaction's share."""
    lc = after_saying(fresh(policy(interval=100, threshold=1000)), ["pasted text " * 135])
    message = "another paste " * 170  # ~600 tokens: under the budget alone
    tokens = lc.request_tokens(len(message))
    assert tokens > 1000
    window = lc.compaction_due(request_tokens=tokens)
    assert window is not None and window.end_invocation == 1


def test_a_resume_without_its_context_does_not_count_it_against_the_budget() -> None:
    """A session the terminal never left goes on without a resume context (the supervisor
    went away): its tail was compacted at once as if the request carried one."""
    saved = after_turns(fresh(policy()), 1, 2).write(T0, {}, None).state
    probe = SessionLifecycle(policy=policy()).resume(saved, FileDrift()).lifecycle
    chars = sum(message_chars(m) for m in probe.history)
    threshold = estimate_tokens(chars + len(probe.resume_context))  # reached with it only
    with_context = SessionLifecycle(policy=policy(threshold=threshold)).resume(saved, FileDrift())
    assert with_context.lifecycle.compaction is not None
    without = SessionLifecycle(policy=policy(threshold=threshold)).resume(
        saved, FileDrift(), context=False
    )
    assert without.lifecycle.compaction is None
    assert without.lifecycle.request_history() == probe.request_history()


def test_a_big_message_after_a_whole_compaction_leaves_the_last_turn_out_not_the_budget(
) -> None:
    """After a compaction that took every turn, the request carries the last turn again;
    with a big message it went over the token budget, though without that turn it fits:
    the turn sent again is the first thing left out."""
    lc, _ = compact(after_turns(fresh(policy(interval=0, threshold=1000)), 1, 3), force=True)
    assert prompts(lc) == ["question 3"]  # the last turn, again
    with_it = lc.request_tokens()  # the compaction's framing on the wire counted (H153)
    room = (1000 - with_it) * 4  # what a message may take with the last turn again
    big = room + 40  # over the budget with it, under it without
    assert lc.request_tokens(big) < 1000
    assert [p for m in lc.request_history(big) for p in m.parts][1:] == []
    head = lc.request_history(big)[0].parts[0]
    assert isinstance(head, CompactionPart) and "follows again" not in str(head.content)
    assert len(lc.request_history(room - 40)) == 3  # a message that fits: read again
    assert lc.request_tokens(room - 40) < 1000


def test_a_model_s_compaction_that_would_not_shrink_the_request_gives_way_to_offline() -> None:
    """H131: a summary model's compaction shorter than the window it replaces (its overlap
    counted) but no smaller a request was not kept, and counted a failure (back-off): the
    window stayed uncompacted. Its offline fallback, of the same window, is kept instead."""
    lc = after_turns(fresh(policy(interval=2, overlap=1)), 1, 4)
    window = lc.compaction_due()
    assert window is not None
    lc = lc.begin_compaction(window)
    offline = finish_compaction(window, OfflineEventSummarizer().summarize(window.events))
    assert offline is not None
    wordy = dataclasses.replace(offline, compacted_content="wordy " * 300)
    kept = lc.compacted(
        wordy, lc.generation, now=T0, manifest={}, agent_spec_path=None, fallback=offline
    )
    assert kept.lifecycle.compaction is offline and kept.effects
    assert kept.lifecycle.compaction_failures == 0 and kept.lifecycle.backoff_until == 0
    assert kept.lifecycle.estimated_tokens() < lc.estimated_tokens()
    alone = lc.compacted(wordy, lc.generation, now=T0, manifest={}, agent_spec_path=None)
    assert alone.lifecycle.compaction is None and alone.lifecycle.compaction_failures == 1


def test_a_compaction_summarized_before_a_turn_revealed_a_secret_is_kept_without_it() -> None:
    """A compaction in flight read the window before a turn said the value was a password;
    kept as it came, its summary and retained rule sent the value in every later request."""
    found = "Zq9Xv7Lm2Pk4"
    lc = after_saying(fresh(policy(interval=3, overlap=0)), [
        f"Always deploy staging with {found}.", "second turn", "third turn"
    ])
    window = lc.compaction_due()
    assert window is not None
    lc = lc.begin_compaction(window)
    compaction = finish_compaction(window, OfflineEventSummarizer().summarize(window.events))
    assert compaction is not None and found in str(compaction)
    lc = after_saying(lc, [f"the password for staging is {found}"])
    lc = lc.compacted(
        compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None
    ).lifecycle
    assert lc.compaction is not None
    assert found not in (lc.compaction_sent() or "")
    assert found not in lc.instructions()
    assert "deploy staging with [REDACTED]" in lc.instructions()
