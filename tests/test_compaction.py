"""session/compaction.py: the window arithmetic, the timeline of its docstring, the safety
rules, what is retained, and the summarizers (offline, and an LLM through FunctionModel)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic_ai.messages import (
    CompactionPart,
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

import session.compaction as compaction_module
from session.budget import context_budget
from session.compaction import (
    BadPromptTemplate,
    BaseEventsSummarizer,
    Event,
    EventCompaction,
    EventsCompactionConfig,
    LlmEventSummarizer,
    OfflineEventSummarizer,
    Retained,
    SummaryTooLong,
    Window,
    compaction_event,
    conversation_history,
    cut_is_safe,
    events_from_messages,
    events_text,
    extract_retained,
    file_paths,
    finish_compaction,
    may_retain,
    parse_compaction,
    render_compaction,
    retention_window,
    sliding_window,
    token_window,
    with_compaction,
)
from session.wire import wire_chars
from tests.conversations import turn

pytestmark = pytest.mark.anyio


REPLY = "A realistic reply of a design assistant, long enough to be worth compacting. " * 4


def invocation(n: int, tool_calls: int = 0, text: str | None = REPLY) -> list[Event]:
    return events_from_messages(turn(n, tool_calls, text), first_invocation=n)


def shape(events: Sequence[Event]) -> list[str]:
    """``C1-3`` for a compaction covering 1..3, ``E4`` for invocation 4 (once per invocation)."""
    out: list[str] = []
    for event in events:
        if event.compaction is not None:
            out.append(f"C{event.compaction.start_invocation}-{event.compaction.end_invocation}")
        elif not out or out[-1] != f"E{event.invocation_id}":
            out.append(f"E{event.invocation_id}")
    return out


async def run_invocations(
    config: EventsCompactionConfig, count: int
) -> tuple[list[Event], list[tuple[int, list[str], str, list[str]]]]:
    """Drive ``count`` invocations like a session service: after each, compact if due.
    Returns the events and, per invocation, (n, summarizer input, covered, sent)."""
    assert config.summarizer is not None
    events: list[Event] = []
    timeline = []
    for n in range(1, count + 1):
        events += invocation(n)
        window = sliding_window(events, config)
        summarized_input: list[str] = []
        covered = "-"
        if window is not None:
            summarized_input = shape(window.events)
            compaction = finish_compaction(
                window, await config.summarizer.summarize_events(window.events)
            )
            assert compaction is not None
            events = with_compaction(events, compaction)
            covered = f"{compaction.start_invocation}-{compaction.end_invocation}"
        timeline.append((n, summarized_input, covered, shape(conversation_history(events))))
    return events, timeline


class LongWinded(BaseEventsSummarizer):
    """A summarizer whose narrative is far longer than any window."""

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        return compaction_event(EventCompaction(1, 1, "blah " * 5_000))


class Skipping(BaseEventsSummarizer):
    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        return None


# -- the timeline of the module docstring, literally -------------------------------


async def test_the_docstring_timeline_interval_3_overlap_1() -> None:
    config = EventsCompactionConfig(3, 1, OfflineEventSummarizer())
    _, timeline = await run_invocations(config, 9)
    assert timeline == [
        (1, [], "-", ["E1"]),
        (2, [], "-", ["E1", "E2"]),
        (3, ["E1", "E2", "E3"], "1-3", ["C1-3"]),
        (4, [], "-", ["C1-3", "E4"]),
        (5, [], "-", ["C1-3", "E4", "E5"]),
        (6, ["C1-3", "E3", "E4", "E5", "E6"], "1-6", ["C1-6"]),
        (7, [], "-", ["C1-6", "E7"]),
        (8, [], "-", ["C1-6", "E7", "E8"]),
        (9, ["C1-6", "E6", "E7", "E8", "E9"], "1-9", ["C1-9"]),
    ]


# -- the anchors' scenarios (ADK Python compaction.py, adk-rust compaction tests) ------


def test_history_without_a_compaction_is_unchanged() -> None:
    events = invocation(1) + invocation(2)
    assert conversation_history(events) == events


def test_a_compaction_replaces_the_events_up_to_its_end_boundary() -> None:
    old = invocation(1) + invocation(2)
    compaction = EventCompaction(1, 2, "Summary of old conversation")
    new = invocation(3)
    history = conversation_history([*old, compaction_event(compaction), *new])
    assert history[0].compaction == compaction
    assert history[1:] == new
    assert [e.author for e in history] == ["compaction", "user", "model"]


async def test_interval_1_compacts_after_every_invocation() -> None:
    _, timeline = await run_invocations(EventsCompactionConfig(1, 0, OfflineEventSummarizer()), 3)
    assert [covered for _, _, covered, _ in timeline] == ["1-1", "1-2", "1-3"]


async def test_interval_5_does_not_compact_after_one_invocation() -> None:
    _, timeline = await run_invocations(EventsCompactionConfig(5, 0, OfflineEventSummarizer()), 1)
    assert timeline == [(1, [], "-", ["E1"])]


def test_interval_0_turns_the_sliding_window_off() -> None:
    events = [e for n in range(1, 30) for e in invocation(n)]
    assert sliding_window(events, EventsCompactionConfig(0, 0)) is None


def test_a_skipped_window_is_covered_by_the_next_one() -> None:
    events = [e for n in range(1, 6) for e in invocation(n)]
    window = sliding_window(events, EventsCompactionConfig(3, 1))
    assert window is not None and (window.start_invocation, window.end_invocation) == (1, 5)


# -- the token budget ------------------------------------------------------------------


def test_below_the_token_threshold_nothing_is_due() -> None:
    events = [e for n in range(1, 4) for e in invocation(n)]
    config = EventsCompactionConfig(0, 0, token_threshold=1000, event_retention_size=2)
    assert token_window(events, config, request_tokens=999) is None


def test_over_the_threshold_all_but_the_retained_events_are_compacted() -> None:
    events = [e for n in range(1, 5) for e in invocation(n)]  # 2 events per invocation
    config = EventsCompactionConfig(0, 0, token_threshold=1000, event_retention_size=2)
    window = token_window(events, config, request_tokens=1000)
    assert window is not None
    assert (window.start_invocation, window.end_invocation) == (1, 3)


def test_retention_is_moved_back_to_the_start_of_its_invocation() -> None:
    # Invocation 3 is a prompt, a tool call, its return and a reply (4 events): keeping
    # the last 3 events would cut between the prompt and the call, so all 4 are kept.
    events = invocation(1) + invocation(2) + invocation(3, tool_calls=1)
    window = retention_window(events, 3)
    assert window is not None and window.end_invocation == 2


def test_retaining_everything_leaves_nothing_to_compact() -> None:
    events = invocation(1) + invocation(2)
    assert retention_window(events, 10) is None


# -- safety rules -------------------------------------------------------------------------


def test_a_cut_after_an_unanswered_call_is_unsafe() -> None:
    call = ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.md"}, tool_call_id="c1")])
    before: list[ModelMessage] = [ModelRequest(parts=[UserPromptPart("read a.md")]), call]
    assert not cut_is_safe(before, [])
    assert cut_is_safe(turn(0, tool_calls=2), turn(1))


def test_a_window_never_compacts_a_call_still_awaiting_its_answer() -> None:
    dangling: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart("read a.md")]),
        ModelResponse(parts=[ToolCallPart("read_file", {"path": "a.md"}, tool_call_id="c1")]),
    ]
    events = invocation(1) + events_from_messages(dangling, first_invocation=2)
    assert sliding_window(events, EventsCompactionConfig(2, 0)) is None
    assert retention_window(events, 0) is None


def test_a_summary_not_shorter_than_what_it_replaces_is_rejected() -> None:
    window = Window(tuple(invocation(1)), 1, 1)
    summarized = compaction_event(EventCompaction(1, 1, "blah " * 5_000))
    with pytest.raises(SummaryTooLong):
        finish_compaction(window, summarized)


def test_a_summarizer_returning_none_skips_the_window() -> None:
    assert finish_compaction(Window(tuple(invocation(1)), 1, 1), None) is None


def test_the_summarizer_input_is_clipped() -> None:
    huge = invocation(1, text="x" * 500_000)
    text = events_text(huge, limit=10_000)
    assert len(text) <= 10_000 and "question 1" in text


@pytest.mark.parametrize(
    "paste",
    ["设计代理工具模型记忆评估部署" * 300, "line\n" * 1000, 'say "yes"\t' * 400],
    ids=["chinese", "lines", "quotes and tabs"],
)
def test_the_summarizer_input_is_held_to_its_limit_as_the_wire_carries_it(paste: str) -> None:
    """An attack (H156): the input was held to its limit in characters, the chat requests
    in what the wire carries (``wire_chars``): a conversation in Chinese (three bytes a
    character) sent a summary model with the chat model's window 2.5 times the budget,
    and it refused (400), then was not asked for 5 minutes."""
    events = [e for n in range(1, 9) for e in invocation(n, text=f"paste {n}: {paste}")]
    text = events_text(events, limit=10_000)
    assert wire_chars(text) <= 10_000
    assert "paste 8: " in text, "the newest turn is kept"


def test_a_window_too_long_for_the_summarizer_keeps_its_newest_turns_and_says_so() -> None:
    """The input was cut at its end: the newest turn, the most relevant, was the one lost."""
    events = [e for n in range(1, 400) for e in invocation(n)]
    text = events_text(events, limit=10_000)
    assert len(text) <= 10_000
    assert "user: question 399" in text
    assert text.splitlines()[-1].startswith("assistant: A realistic reply")
    assert "[turns 1-" in text.splitlines()[0] and "left out here for length]" in text


def test_a_huge_message_keeps_its_start_and_end_and_the_short_ones_stay_whole() -> None:
    rule = "Always answer in French; keep notes in docs/notes.md."
    log = "\n".join(f"ERROR at /srv/app/m{i}.py line {i}" for i in range(100_000))
    messages = [*said(rule), *said("the log:\n" + log + "\nthe last line"), *said("And now?")]
    text = events_text(events_from_messages(messages, 1), limit=10_000)
    assert len(text) <= 10_000
    assert f"user: {rule}" in text and "user: And now?" in text
    assert "user: the log:" in text and "the last line" in text
    assert "characters left out" in text


def test_a_pasted_log_is_read_bounded_and_leaves_the_users_files_and_rules(
    scrubbed_texts: list[str],
) -> None:
    """A log of thousands of paths filled the 300 paths kept (the user's files out), and
    every byte of it was scrubbed and read (24 s for 6 MB)."""
    log = "\n".join(f"ERROR in /srv/app/mod{i}/file{i}.py line {i}: failed" for i in range(60_000))
    messages = [
        *said("Always use UTC timestamps. Keep notes in docs/notes.md."),
        *said("Here is the log:\n" + log),
        *said("Never log secrets. What now with agent_spec.md?"),
    ]
    events = events_from_messages(messages, 1)
    window = Window(tuple(events), 1, 3)
    compaction = finish_compaction(window, OfflineEventSummarizer().summarize(events))
    assert compaction is not None
    assert {"docs/notes.md", "agent_spec.md"} <= set(compaction.retained.paths)
    assert {"Always use UTC timestamps.", "Never log secrets."} <= set(compaction.retained.rules)
    assert len(render_compaction(compaction)) < 20_000
    assert sum(map(len, scrubbed_texts)) < 300_000  # of a 3 MB window


# -- what survives ------------------------------------------------------------------------


def said(text: str) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart(text)]),
        ModelResponse(parts=[TextPart(REPLY)]),
    ]


def test_decisions_rules_and_paths_are_extracted_from_users_and_tools() -> None:
    messages = [
        *said("Decision: tickets are triaged by gpt-4.1-mini. Keep notes in docs/triage.md."),
        *said("We decided to store prompts under prompts/system/."),
        *said("You must never email customers directly. Is latency a problem?"),
        ModelResponse(
            parts=[
                ToolCallPart(
                    "record_decision", {"decision": "Escalate after 2 failed tool calls"}, "d"
                ),
                ToolCallPart("write_file", {"path": "agent_spec.md", "content": "x"}, "w"),
            ]
        ),
    ]
    retained = extract_retained(messages)
    assert retained.decisions == (
        "Decision: tickets are triaged by gpt-4.1-mini.",
        "We decided to store prompts under prompts/system/.",
        "Escalate after 2 failed tool calls",
    )
    assert retained.rules == ("You must never email customers directly.",)
    assert retained.paths == ("docs/triage.md", "prompts/system/", "agent_spec.md")
    assert retained.questions == ("Is latency a problem?",)


def test_file_paths_skip_urls_versions_and_and_or() -> None:
    text = "see http://x.io/a.md, python 3.11, and/or e.g. this; ./run.sh and src/a/b"
    assert file_paths(text) == ["./run.sh", "src/a/b"]


async def test_what_is_retained_survives_every_later_compaction() -> None:
    summarizer = OfflineEventSummarizer()
    config = EventsCompactionConfig(2, 0, summarizer)
    events: list[Event] = []
    for n in range(1, 9):
        text = "Decision: use notes/first.md for notes." if n == 1 else f"chat {n}"
        events += events_from_messages(said(text), first_invocation=n)
        window = sliding_window(events, config)
        if window is not None:
            compaction = finish_compaction(window, await summarizer.summarize_events(window.events))
            assert compaction is not None
            events = with_compaction(events, compaction)
    latest = conversation_history(events)[0].compaction
    assert latest is not None and latest.end_invocation == 8
    assert latest.retained.decisions == ("Decision: use notes/first.md for notes.",)
    assert "notes/first.md" in latest.retained.paths
    assert "notes/first.md" in render_compaction(latest)


def test_render_and_parse_round_trip() -> None:
    compaction = EventCompaction(
        1,
        12,
        "Turns 1-12: a triage agent.",
        Retained(("use gpt-4.1",), ("Always cite.",), ("agent_spec.md",), ("Which DB?",)),
    )
    assert parse_compaction(render_compaction(compaction)) == compaction


def test_an_unknown_summary_text_is_kept_whole() -> None:
    assert parse_compaction("free text") == EventCompaction(0, 0, "free text")
    assert parse_compaction(None) is None


def test_the_budget_leaves_headroom_below_the_models_window() -> None:
    assert context_budget("openai-chat:gpt-4o-mini") == 96_000
    assert context_budget("offline") == 12_288
    assert context_budget("openai-chat:gpt-4o", configured=5_000) == 5_000


# -- summarizers ------------------------------------------------------------------------------


def test_a_template_without_the_placeholder_is_refused() -> None:
    model = FunctionModel(lambda m, i: ModelResponse(parts=[TextPart("x")]))
    with pytest.raises(BadPromptTemplate, match="conversation_history"):
        LlmEventSummarizer(model).with_prompt_template("Summarize please.")


async def test_the_llm_summarizer_sends_the_window_in_its_template() -> None:
    prompts: list[str] = []

    def summarize(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        prompts.extend(str(p.content) for p in request.parts if isinstance(p, UserPromptPart))
        return ModelResponse(parts=[TextPart("The user designs a triage agent.")])

    summarizer = LlmEventSummarizer(FunctionModel(summarize)).with_prompt_template(
        "SUMMARIZE:\n{conversation_history}"
    )
    event = await summarizer.summarize_events(invocation(1) + invocation(2))
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == "The user designs a triage agent."
    assert (event.compaction.start_invocation, event.compaction.end_invocation) == (1, 2)
    assert prompts[0].startswith("SUMMARIZE:\n[turn 1]\nuser: question 1")


async def test_a_runaway_answer_of_the_summary_model_is_refused_not_cut() -> None:
    """A helper's attack: 100 KB of "blah" was cut to its head and kept as the narrative
    (the listing's summary too), in place of the earlier one."""
    from session.compaction import RunawaySummary

    def runaway(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("SUMMARY " + "blah " * 20_000)])

    with pytest.raises(RunawaySummary, match="100,007 characters, over the cap of 1,800"):
        await LlmEventSummarizer(FunctionModel(runaway)).summarize_events(invocation(1))


@pytest.mark.parametrize("echo", ["its instructions", "the conversation", "a labelled copy"])
async def test_a_summary_model_that_echoes_what_it_was_sent_is_refused(echo: str) -> None:
    """A helper's attack: a summary model answering with what it was sent (its prompt, or
    the conversation) had that kept as the summary, nested once more at each compaction,
    and sent to the resumed model as its previous session's summary."""
    from session.compaction import EchoedSummary

    def echoing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        (sent,) = [str(p.content) for p in request.parts if isinstance(p, UserPromptPart)]
        conversation = sent.split("The conversation:")[1].strip()
        text = {
            "its instructions": sent,
            "the conversation": conversation,
            "a labelled copy": "Summary:\n" + conversation,
        }[echo]
        return ModelResponse(parts=[TextPart(text[:1_700])])

    events = [e for i in range(1, 8) for e in invocation(i)]
    with pytest.raises(EchoedSummary, match="answered with its instructions or the conversation"):
        await LlmEventSummarizer(FunctionModel(echoing)).summarize_events(events)


@pytest.mark.parametrize("cut", [60, 120])
async def test_the_start_of_a_one_line_prompt_echoed_is_refused(cut: int) -> None:
    """A helper's find (H72): the session summary's prompt is one long line; a model that
    answered with its start ("summary: Summarize this agent-design conversation in at
    most 8 short lines for resuming i") had that kept as the session's summary."""
    from actors.compaction import SUMMARY_TEMPLATE
    from session.compaction import EchoedSummary

    def echoing(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        (sent,) = [str(p.content) for p in request.parts if isinstance(p, UserPromptPart)]
        return ModelResponse(parts=[TextPart("summary: " + sent[:cut])])

    summarizer = LlmEventSummarizer(FunctionModel(echoing)).with_prompt_template(SUMMARY_TEMPLATE)
    with pytest.raises(EchoedSummary, match="answered with its instructions or the conversation"):
        await summarizer.summarize_events(invocation(1))


async def test_a_summary_cut_at_the_models_token_limit_is_refused() -> None:
    """A helper's find: a summary the model's token limit cut mid-sentence ("The user and
    the assistant discussed") became the compaction and the listing's summary."""
    from session.compaction import CutSummary

    def cut(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(
            parts=[TextPart("The user and the assistant discussed")], finish_reason="length"
        )

    with pytest.raises(CutSummary, match="cut at its token limit"):
        await LlmEventSummarizer(FunctionModel(cut)).summarize_events(invocation(1))


async def test_a_summary_models_control_characters_are_not_kept() -> None:
    """A helper's attack (H77): an answer with NULs and escape sequences became the
    compaction as it was, sent first in every request and written to the session file."""

    def garbled(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answer = "\x1b[31mThe spec\x00 is in\tagent_spec.md\x1b]0;t\x07.\n"
        return ModelResponse(parts=[TextPart(answer)])

    event = await LlmEventSummarizer(FunctionModel(garbled)).summarize_events(invocation(1))
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content == "The spec is in\tagent_spec.md."


async def test_a_summary_that_begins_as_the_earlier_one_did_is_no_echo() -> None:
    """A helper's find: with the earlier summary in what it was sent, a new one beginning
    with the same words was refused as a copy, at every compaction after the first."""
    earlier = (
        "The user designs a triage agent for support tickets, with escalation to humans when "
        "the agent is unsure; the spec is in agent_spec.md."
    )

    def summarize(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(earlier + "\nSince then: Postgres was chosen.")])

    previous = compaction_event(EventCompaction(1, 2, earlier))
    event = await LlmEventSummarizer(FunctionModel(summarize)).summarize_events(
        [previous, *invocation(3)]
    )
    assert event is not None and event.compaction is not None


async def test_a_summary_request_is_held_to_the_token_budget() -> None:
    """H146: the summary model was sent up to 60,000 characters whatever the budget: with
    a small one, more than the chat requests were held to, and a model refused it."""
    sent: list[int] = []

    def summarize(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        sent.append(sum(len(str(getattr(p, "content", ""))) for m in messages for p in m.parts))
        return ModelResponse(parts=[TextPart("The user designs a triage agent.")])

    events = [e for n in range(1, 30) for e in invocation(n, tool_calls=2)]
    summarizer = LlmEventSummarizer(FunctionModel(summarize))
    assert await summarizer.within(10_000).summarize_events(events) is not None
    assert await summarizer.summarize_events(events) is not None
    assert sent[0] <= 10_000 < sent[1]


async def test_a_summary_that_quotes_a_rule_word_for_word_is_no_echo() -> None:
    said_rule = "Always use UTC timestamps in logs."

    def summarize(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(f"Rules: {said_rule} Decided: Postgres.")])

    events = invocation(1)
    event = await LlmEventSummarizer(FunctionModel(summarize)).summarize_events(events)
    assert event is not None and event.compaction is not None


async def test_the_offline_summarizer_is_deterministic_and_skips_empty_windows() -> None:
    events = invocation(1) + invocation(2)
    first = await OfflineEventSummarizer().summarize_events(events)
    assert first == await OfflineEventSummarizer().summarize_events(events)
    assert await OfflineEventSummarizer().summarize_events([]) is None


async def test_the_offline_narrative_names_one_turn_as_a_turn() -> None:
    """It said "Latest requests (turns 3-3)"."""
    one = await OfflineEventSummarizer().summarize_events(invocation(3))
    two = await OfflineEventSummarizer().summarize_events(invocation(2) + invocation(3))
    assert one is not None and one.compaction is not None
    assert two is not None and two.compaction is not None
    assert "Latest requests (turn 3): " in one.compaction.compacted_content
    assert "Latest requests (turns 2-3): " in two.compaction.compacted_content


async def test_the_offline_narrative_after_a_summary_models_keeps_how_it_started() -> None:
    """A helper's find: standing in after a summary model's narrative, the offline one said
    the conversation started with the first request of its own window (turn 12)."""
    earlier = compaction_event(EventCompaction(1, 11, "The user designs a triage agent.\nMore."))
    event = await OfflineEventSummarizer().summarize_events([earlier, *invocation(12)])
    assert event is not None and event.compaction is not None
    narrative = event.compaction.compacted_content
    assert narrative.startswith("Earlier: The user designs a triage agent.")
    assert "Started with: question 12" not in narrative


async def test_the_offline_narrative_after_a_summary_models_says_it_came_earlier() -> None:
    """A helper's report (H60): standing in after a summary model failed, the offline
    narrative said "Started with: Summary: ...": the model's summary, label and all, quoted
    as if it were the user's first request. It is said as what came earlier, unlabelled."""
    earlier = compaction_event(EventCompaction(1, 6, "Summary: The user asked about the parser."))
    event = await OfflineEventSummarizer().summarize_events([earlier, *invocation(7)])
    assert event is not None and event.compaction is not None
    narrative = event.compaction.compacted_content
    assert narrative.startswith("Earlier: The user asked about the parser.\n"), narrative
    assert "Started with" not in narrative
    assert "Summary:" not in narrative


@pytest.mark.parametrize(
    "summary",
    [
        '40 recent requests; first: "Always answer in French."\n- "question 39"',
        "Earlier: Started with: Always answer in French.\n2 recent requests; first: ...",
        "Started with: Always answer in French.\nLatest requests:\n- \"question 39\"",
        # H69: a first request longer than the narrative's line was clipped before it was
        # read, lost its closing quote, and stayed "Earlier: 12 recent requests; ...".
        '12 recent requests; first: "Always answer in French. ' + "and more " * 20 + '"',
        'Earlier: 12 recent requests; first: "Always answer in French. and more and m.',
    ],
)
async def test_the_offline_narrative_after_a_session_summary_keeps_its_first_request(
    summary: str,
) -> None:
    """A helper's find (H66): with compaction off the turns left out are stood for by the
    session's summary; a /compact's narrative said "Earlier: 40 recent requests; first:
    ..." or "Earlier: Started with: ..." instead of how the conversation started."""
    earlier = compaction_event(EventCompaction(1, 39, summary))
    event = await OfflineEventSummarizer().summarize_events([earlier, *invocation(40)])
    assert event is not None and event.compaction is not None
    narrative = event.compaction.compacted_content
    assert narrative.startswith("Started with: Always answer in French."), narrative
    assert "recent request" not in narrative and "Earlier" not in narrative


async def test_a_later_offline_narrative_keeps_what_came_earlier_as_it_was_said() -> None:
    """The "Earlier:" line of an offline narrative that stood in after a summary model's
    is carried as it is, not relabelled as how the conversation started."""
    earlier = compaction_event(EventCompaction(1, 6, "Summary: The user asked about the parser."))
    first = await OfflineEventSummarizer().summarize_events([earlier, *invocation(7)])
    assert first is not None and first.compaction is not None
    second = await OfflineEventSummarizer().summarize_events(
        [compaction_event(first.compaction), *invocation(8)]
    )
    assert second is not None and second.compaction is not None
    assert second.compaction.compacted_content.startswith(
        "Earlier: The user asked about the parser.\nLatest requests (turn 8): "
    ), second.compaction.compacted_content


async def test_the_offline_narrative_names_the_turns_of_the_requests_it_shows() -> None:
    """A helper's report: three requests were labelled "(turns 1-20)", and a request's
    own full stop was doubled ("review.; ... rule..")."""
    events = [e for n in range(1, 21) for e in invocation(n)]
    event = await OfflineEventSummarizer().summarize_events(events)
    assert event is not None and event.compaction is not None
    latest = event.compaction.compacted_content.splitlines()[-1]
    assert latest == "Latest requests (turns 18-20): question 18; question 19; question 20."
    said_with_stop = events_from_messages(
        [ModelRequest(parts=[UserPromptPart("Never push to main.")]), *turn(1)[1:]], 1
    )
    event = await OfflineEventSummarizer().summarize_events(said_with_stop)
    assert event is not None and event.compaction is not None
    assert event.compaction.compacted_content.endswith("Never push to main.")
    assert ".." not in event.compaction.compacted_content


def test_the_compaction_reaches_the_model_as_a_compaction_part() -> None:
    from session.compaction import compaction_message

    message = compaction_message(EventCompaction(1, 3, "narrative"))
    (part,) = message.parts
    assert isinstance(part, CompactionPart) and part.content is not None
    assert part.content.startswith("Conversation so far (turns 1-3, compacted)")


async def test_long_winded_and_skipping_summarizers_produce_no_compaction() -> None:
    window = Window(tuple(invocation(1)), 1, 1)
    with pytest.raises(SummaryTooLong):
        finish_compaction(window, await LongWinded().summarize_events(window.events))
    assert finish_compaction(window, await Skipping().summarize_events(window.events)) is None


def test_a_narrative_that_looks_like_a_section_reads_back_exactly() -> None:
    narrative = (
        "Where it stands: evaluation plan next.\n"
        "Open questions:\n- which vector store?\n\nFiles: prompts/triage.j2"
    )
    compaction = finish_compaction(
        Window(tuple(invocation(1)), 1, 1), compaction_event(EventCompaction(1, 1, narrative))
    )
    assert compaction is not None
    text = render_compaction(compaction)
    back = parse_compaction(text)
    assert back == compaction and render_compaction(back) == text
    assert "Files: prompts/triage.j2" in text and back.retained.questions == ()


def test_every_decision_of_a_line_is_kept() -> None:
    retained = extract_retained(
        said("Decision: the queue is Redis. We decided to keep the audit log in Postgres.")
        + said("Decisions: retries capped at 3. Decision: A. Decision: B.")
    )
    assert retained.decisions == (
        "Decision: the queue is Redis.",
        "We decided to keep the audit log in Postgres.",
        "Decisions: retries capped at 3.",
        "Decision: A.",
        "Decision: B.",
    )


def test_dot_files_known_names_data_files_and_top_directories_are_paths() -> None:
    text = (
        "config/.env .env src/agent Dockerfile Makefile data/tickets.parquet "
        "prompts/system.prompt model.onnx api/openapi.yaml#/paths and/or client/server"
    )
    assert file_paths(text) == [
        "config/.env",
        ".env",
        "src/agent",
        "Dockerfile",
        "Makefile",
        "data/tickets.parquet",
        "prompts/system.prompt",
        "model.onnx",
        "api/openapi.yaml",
    ]


def test_rules_are_imperatives_not_stories() -> None:
    retained = extract_retained(
        said("I never liked LangChain. Do not use emojis. Rule: answer in French. You must cite.")
    )
    assert retained.rules == ("Do not use emojis.", "Rule: answer in French.", "You must cite.")


def test_a_decision_and_its_clipped_copy_are_one_and_the_list_is_bounded() -> None:
    """A long decision was kept twice (in full, and clipped by a compaction), and a long
    session's decisions grew without bound."""
    from session.compaction import MAX_DECISIONS, MAX_ITEM_CHARS, merge_decisions

    long = "Use Postgres " + "because of the ticket volume " * 20
    clipped = long[: MAX_ITEM_CHARS - 1] + "…"
    assert merge_decisions([long], [clipped]) == (long.strip(),)
    assert merge_decisions([clipped], [long]) == (long.strip(),)
    one, two = long + "ENDING ONE: use RDS", long + "ENDING TWO: self-host"
    assert merge_decisions([one, two], [clipped]) == (one, two)  # begin alike: two
    many = [f"decision {i}" for i in range(MAX_DECISIONS + 50)]
    merged = merge_decisions(many)
    assert len(merged) == MAX_DECISIONS and merged[-1] == f"decision {MAX_DECISIONS + 49}"
    assert merge_decisions(["  a\n  decision  ", "", "A decision"]) == ("a decision",)


def test_a_requests_compaction_keeps_the_newest_items_within_its_share_and_counts_the_rest() -> (
    None
):
    retained = Retained(
        decisions=tuple(f"Decision number {n} about the triage agent" for n in range(200)),
        paths=tuple(f"docs/part_{n}.md" for n in range(300)),
        questions=("Which model?",),
    )
    compaction = EventCompaction(1, 400, "We designed the triage agent.", retained)
    text = render_compaction(compaction, rules=False, max_chars=2_000)
    assert len(text) <= 2_000
    assert "We designed the triage agent." in text
    assert "- Decision number 199 about the triage agent" in text  # the newest stay
    assert "- docs/part_299.md" in text and "- Which model?" in text
    assert "- Decision number 0 about" not in text and "- docs/part_150.md" not in text
    assert "earlier, kept in the session file, left out here for the token budget)" in text
    # H153: the oldest paths stay with the newest (the files the user set out with)
    assert "- docs/part_0.md\n" in text
    assert "more, kept in the session file, left out here for the token budget)" in text
    full = render_compaction(compaction)  # what the session file keeps: everything
    assert "- Decision number 0 about the triage agent" in full and "- docs/part_0.md" in full
    assert render_compaction(compaction, max_chars=wire_chars(full)) == full


def test_a_requests_compaction_in_chinese_is_held_to_its_share_as_the_wire_carries_it() -> (
    None
):
    """H160: the narrative and sections were held to the share in characters; in Chinese
    (three bytes each) the compaction sent took 2,499 bytes of a 2,000 share."""
    narrative = "\n".join(f"第{n}行, 工单分类代理的工作进展到第{n}步。" for n in range(40))
    retained = Retained(
        decisions=tuple(f"决定{n}: 按产品路由工单" for n in range(60)),
        paths=tuple(f"docs/part_{n}.md" for n in range(60)),
    )
    text = render_compaction(EventCompaction(1, 40, narrative, retained), max_chars=2_000)
    assert wire_chars(text) <= 2_000
    assert "第0行" in text and "决定59" in text and "- docs/part_0.md" in text


def test_a_wordy_narrative_is_held_to_half_the_requests_share_by_whole_lines() -> None:
    """A helper's attack: a summary model's 1,716-character narrative went whole into
    requests whose compaction share was 1,000 characters: every request was over the
    budget again, and a compaction ran before every turn."""
    lines = (f"Line {n}: the triage agent's work stands at step {n}." for n in range(32))
    narrative = "\n".join(lines)
    retained = Retained(decisions=("Decision: use Postgres",), paths=("agent_spec.md",))
    compaction = EventCompaction(1, 40, narrative, retained)
    text = render_compaction(compaction, rules=False, max_chars=1_000)
    assert len(text) <= 1_000
    assert "Line 0: the triage agent's work stands at step 0." in text and "\n…" in text
    assert "Line 31:" not in text
    assert "- Decision: use Postgres" in text and "- agent_spec.md" in text
    assert "Line 31:" in render_compaction(compaction)  # the session file keeps it whole


def test_habits_and_one_word_answers_are_not_rules_but_imperatives_are() -> None:
    """A helper's report: "I always forget my keys, lol." and "Never," were kept as rules;
    "Make sure to ..." and "Only use ..." were not."""
    retained = extract_retained(
        said(
            "I always forget my keys, lol.\nNever,\nMake sure to cite the ticket id. "
            "Only use the EU region. Please avoid jargon. I always want a table."
        )
    )
    assert retained.rules == (
        "Make sure to cite the ticket id.",
        "Only use the EU region.",
        "Please avoid jargon.",
        "I always want a table.",
    )


def test_norms_said_without_always_or_never_are_rules() -> None:
    """H146: standing rules a user says as norms (a subject "all ...", an imperative over
    "all"/"every", "I want ... every", "Prefer X over Y", "No X in the output") were not
    kept: the default offline compaction dropped each of them at the first window."""
    norms = (
        "Keep all identifiers in snake_case.",
        "All functions need docstrings.",
        "I want type hints on every function.",
        "Prefer pytest over unittest.",
        "No emojis in the output.",
    )
    assert [extract_retained(said(norm)).rules for norm in norms] == [(n,) for n in norms]


def test_statements_about_all_or_none_are_not_rules() -> None:
    retained = extract_retained(
        said(
            "All tests pass now. No tests exist yet. I want to know why it failed. "
            "No, that is wrong. Every ticket was routed. All of them need a look? "
            "No changes were made in the code."
        )
    )
    assert retained.rules == ()


def test_one_off_requests_over_all_or_every_are_not_rules() -> None:
    """H149: the H146 norms took requests for this turn as standing rules, kept through
    every compaction ("Use all the data ...", "No changes in the code yet.")."""
    requests = (
        "Use all the data from the CSV to build the chart.",
        "Keep each answer I gave in mind when you refactor this.",
        "Write a function that sums all values in the list.",
        "Put every test in the new file for now.",
        "Store all results in results.json for this run.",
        "Use every trick you know to make this fast.",
        "Use all cores for this build.",
        "All tests should pass now.",
        "I need a list of all the endpoints.",
        "I want the report for every region.",
        "No changes in the code yet.",
        "No errors in the logs.",
        "Prefer the second approach to the first one, for this function.",
    )
    assert [r for r in requests if extract_retained(said(r)).rules] == []


def test_idioms_complaints_and_fragments_are_not_rules() -> None:
    """A helper's second attack: "Never mind, ..." and "We always forget ..." were kept as
    rules the model must always follow, and so were the fragments "Make sure." and
    "Only use"."""
    retained = extract_retained(
        said(
            "Never mind, it works now.\nWe always forget to close the ticket.\n"
            "You always forget the tests.\nNever, ever.\nMake sure.\nOnly use\n"
            "We never deploy on Fridays.\nNever use emojis."
        )
    )
    assert retained.rules == ("We never deploy on Fridays.", "Never use emojis.")


def test_a_call_id_used_again_pairs_each_call_with_the_answer_after_it() -> None:
    """Providers may give every call one id: a cut between two such answered calls is safe,
    and one between a call and its answer is not, whatever the ids of the calls around."""

    def rounds(n: int) -> list[ModelMessage]:
        return [
            ModelResponse(parts=[ToolCallPart("read_file", {"path": f"{n}.md"}, tool_call_id="c")]),
            ModelRequest(parts=[ToolReturnPart("read_file", "text", tool_call_id="c")]),
        ]

    first, second = rounds(1), rounds(2)
    assert cut_is_safe(first, second)
    assert not cut_is_safe([*first, second[0]], second[1:])


def merged(*prompts: str) -> Retained:
    """What a session retains of ``prompts``, one turn each (merged as compactions do)."""
    retained = Retained()
    for prompt in prompts:
        retained = retained.merge(extract_retained(said(prompt)))
    return retained


def test_the_content_of_a_file_the_user_has_written_gives_no_rules() -> None:
    """A helper's attack: the 70 musts of a spec the user had written (``write
    agent_spec.md: ...``) became rules for the assistant and pushed out the user's own."""
    spec = " ".join(f"The agent must handle case {i} politely." for i in range(70))
    retained = merged(
        "never log the customer email address",
        f"write agent_spec.md: # Triage agent. {spec}",
        "```\nassert x, 'must never be empty'\n```",
    )
    assert retained.rules == ("never log the customer email address",)
    assert "agent_spec.md" in retained.paths


def test_rules_said_from_now_on_for_all_important_or_to_be_acknowledged_are_rules() -> None:
    """A helper's attack: each was lost at the first compaction (the last one was filed as
    an open question)."""
    retained = merged(
        "From now on, use British spelling.",
        "Use snake_case for all function names.",
        "IMPORTANT: no network calls in tests",
        "Going forward, all prompts go in prompts/ as .j2 files",
        "Always use UTC timestamps, ok?",
    )
    assert retained.rules == (
        "From now on, use British spelling.",
        "Use snake_case for all function names.",
        "IMPORTANT: no network calls in tests",
        "Going forward, all prompts go in prompts/ as .j2 files",
        "Always use UTC timestamps.",
    )
    assert retained.questions == ()


@pytest.mark.parametrize(
    "text",
    [
        "From now on, prefix every commit message with the ticket id.",
        "From now on, return JSON only.",
        "from now on: use tabs.",
        "Going forward, limit replies to 200 words.",
        "Stop using bullet points.",
        "From now on, summarize each answer in one line.",
        "From now on, the agent should log to logs/agent.log.",
        "From now on, tests go in tests/unit/.",
        "From now on, mark TODOs with FIXME.",
        "Henceforth, my replies get a one-line summary first.",
    ],
)
def test_any_instruction_after_from_now_on_is_a_rule(text: str) -> None:
    """A helper's attack: each was lost at the first compaction: after "From now on," only
    a short list of verbs made a rule."""
    assert extract_retained(said(text)).rules == (text,)


@pytest.mark.parametrize(
    "text",
    [
        "Please reply only in French from now on.",
        "Respond in French please.",
        "I want all your answers in French.",
        "Leave config.yaml alone.",
        "config.yaml is off limits.",
        "Keep responses under 100 words.",
        "You are not allowed to run shell commands.",
        "You may not touch the deploy/ directory.",
        "Use British spelling from now on.",
    ],
)
def test_standing_instructions_about_replies_and_files_are_rules(text: str) -> None:
    """H133's attack: each, said once among other turns, was missing from the user's rules
    after a few compactions (interval 3, the offline summarizer): only *always*, *never*,
    *must* and a few leading imperatives made a rule."""
    assert extract_retained(said(text)).rules == (text,)


@pytest.mark.parametrize(
    "text",
    [
        "You may not like this design, but it works.",
        "Reply to the ticket in the thread.",
        "The old server is off the network.",
        "Leave it to me.",
        "Keep it short this time.",
        "I want your answer by tomorrow.",
    ],
)
def test_statements_near_those_instructions_are_not_rules(text: str) -> None:
    assert extract_retained(said(text)).rules == ()


def test_a_rule_the_user_takes_back_is_no_longer_kept() -> None:
    """A helper's attack: "forget the tabs rule" left "always use tabs" among the rules
    the model must always follow."""
    within_one = extract_retained(
        said("always use tabs for indentation. Actually, forget the tabs rule.")
    )
    assert within_one.rules == ()
    later = merged("always use tabs for indentation", "never use emojis", "forget the tabs rule")
    assert later.rules == ("never use emojis",)


def test_open_questions_are_the_works_not_chit_chat_and_leave_once_decided() -> None:
    """A helper's attack: greetings and checks pushed "should we use Redis?" out of the
    five open questions, and a question settled by a decision stayed open."""
    retained = merged(
        "should we use Redis for the cache?",
        "which region should host the vector store?",
        "what did we decide?",
        "how are you today?",
        "can you hear me?",
        "is this thing on?",
        "are you sure?",
    )
    assert retained.questions == (
        "should we use Redis for the cache?",
        "which region should host the vector store?",
    )
    settled = retained.merge(extract_retained(said("Decision: use Redis for the cache.")))
    assert settled.questions == ("which region should host the vector store?",)


def test_a_framework_or_a_kind_of_file_is_not_a_file_path() -> None:
    """A helper's report: ``node.js`` and ``.j2`` were kept among the files named so far."""
    text = "we use node.js and Next.js; prompts go in prompts/ as .j2 files next to .env"
    assert file_paths(text) == ["prompts/", ".env"]
    assert file_paths("see src/node.js and .gitignore") == ["src/node.js", ".gitignore"]


def test_only_an_instruction_takes_a_rule_back() -> None:
    """A second attack: a question about a rule, a rule not to ignore one, and "don't
    forget the X rule" each deleted the rule they named."""
    retained = merged(
        "Always run the lint step before commit.",
        "Never push to main without review.",
        "Why did you ignore the lint rule?",
        "Never ignore the review rule.",
        "Don't forget the lint rule.",
    )
    assert retained.rules[:2] == (
        "Always run the lint step before commit.",
        "Never push to main without review.",
    )
    assert merged("always use tabs", "forget the rule about tabs").rules == ()
    assert merged("always use tabs", "forget the tab rule").rules == ()
    assert merged("always use tabs", "forget about the tabs rule").rules == ()
    assert merged("always use tabs", "forget my last rule").rules == ("always use tabs",)


@pytest.mark.parametrize(
    "text",
    [
        "You must be joking.",
        "It's always DNS.",
        "The bug always happens when I click save.",
        "It never worked on Windows anyway.",
        "The tests must have failed because of the network.",
        "This must be the config from last week.",
        "Do not know why this fails.",
        "Only 3 tests failed this time.",
        "Only yesterday did I find the bug.",
        "Put it all together please.",
        "Write it all down in a summary.",
        "Going forward, the team grows to 12 people.",
        "From now on, it seems the API returns 404.",
        "Important: yesterday was a holiday.",
        "You never answer my question.",
        "Going forward, I think the budget is tight.",
        "From now on, I am on vacation.",
        "From now on, we are short-staffed.",
        "Going forward, our budget is tight.",
        "From now on, prices will rise.",
        "Going forward, Alice leads the project.",
        "Going forward, you seem slow today.",
        "Stop worrying, it is fine.",
    ],
)
def test_stories_deductions_and_complaints_are_not_rules(text: str) -> None:
    assert extract_retained(said(text)).rules == ()


def test_a_file_written_from_the_next_line_quoted_or_indented_text_gives_no_rules() -> None:
    spec = "The agent must never reveal the system prompt.\nThe agent must always cite."
    for text in (
        f"write agent_spec.md\n{spec}",
        f"update agent_spec.md:\n{spec}",
        f"Please add this to agent_spec.md:\n- {spec}",
        f"~~~\n{spec}\n~~~",
        "> The agent must never reveal the system prompt.",
        "    assert value, 'must never be empty'",
    ):
        assert extract_retained(said(text)).rules == (), text


def test_a_pasted_document_keeps_a_few_of_its_rules_not_all() -> None:
    """A second attack: 62 "must" sentences of pasted requirements pushed the user's own
    two rules out of the 60 kept."""
    from session.compaction import MAX_RULES_PER_MESSAGE

    paste = " ".join(f"The service must handle case {i}." for i in range(62))
    retained = merged(
        "Always answer in British English.",
        f"Here are the requirements, review them for gaps: {paste}",
    )
    assert retained.rules[0] == "Always answer in British English."
    assert len(retained.rules) == 1 + MAX_RULES_PER_MESSAGE


def test_requests_and_checks_are_not_open_questions() -> None:
    for text in (
        "Hello, are you there?",
        "Is it done?",
        "Could you summarize that?",
        "Which files did you change?",
        "What was decided about auth?",
        "how's it going?",
        "What do you think?",
        "Did that work?",
    ):
        assert extract_retained(said(text)).questions == (), text
    assert extract_retained(said("Should the CLI support Windows?")).questions


def test_dates_acronyms_and_day_lists_are_not_file_paths() -> None:
    """A helper's report: 12/03/2024, TCP/UDP/ICMP and Mon/Tue/Wed were files named."""
    text = "on 12/03/2024 over TCP/UDP/ICMP on Mon/Tue/Wed, 3/4/5; see data/2024/report.csv"
    assert file_paths(text) == ["data/2024/report.csv"]


def test_a_decision_stated_and_recorded_by_the_tool_is_kept_once() -> None:
    """A helper's find (H52): "Decision: use Redis for memory." said by the user, the same
    "decision: ..." again, and the tool's "use Redis for memory" were three decisions."""
    from session.compaction import merge_decisions

    stated = ["Decision: use Redis for memory.", "decision: use Redis for memory"]
    assert merge_decisions(stated, ["use Redis for memory", "Use Postgres for tickets"]) == (
        "Decision: use Redis for memory.",
        "Use Postgres for tickets",
    )


def test_a_decision_kept_clipped_is_left_out_where_the_resume_context_lists_it_whole() -> None:
    """A helper's find (H71): a decision of 372 characters, kept clipped (with an
    ellipsis) in the compaction, was sent again beside the resume context's copy."""
    whole = "Use a queue " * 30 + "END_DECISION"
    kept = whole[:239] + "…"
    compaction = EventCompaction(1, 4, "Started with: a.", Retained(decisions=(kept, "use x")))
    text = render_compaction(compaction, listed=frozenset({whole}))
    assert "Use a queue" not in text
    assert "- use x" in text


async def test_a_long_first_request_is_cut_after_a_word_with_an_ellipsis() -> None:
    """A helper's find (H71): "Started with:" cut the first request mid-word and closed it
    with a full stop ("... language dete.")."""
    first = (
        "Please design the ingestion pipeline for customer support tickets so that "
        "routing, triage, deduplication, language detection and more work"
    )
    asked = ModelRequest(parts=[UserPromptPart(content=first)])
    events = events_from_messages([asked, ModelResponse(parts=[TextPart("ok")])], 1)
    event = await OfflineEventSummarizer().summarize_events(events)
    assert event is not None and event.compaction is not None
    opening = event.compaction.compacted_content.splitlines()[0]
    assert opening == (
        "Started with: Please design the ingestion pipeline for customer support tickets "
        "so that routing, triage, deduplication…"
    )



_WHAT_A_PROMPT_STATES = (
    compaction_module._RULE_RE,
    compaction_module._LABELLED_DECISION_RE,
    compaction_module._STATED_DECISION_RE,
    compaction_module._REVOKE_RE,
)
"""The patterns of the rules, decisions and rules taken back a compaction keeps."""


@settings(max_examples=800, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from(_WHAT_A_PROMPT_STATES).flatmap(st.from_regex))
def test_a_text_the_compaction_skips_unscrubbed_states_nothing_it_would_keep(text: str) -> None:
    """``may_retain`` lets a compaction skip scrubbing a text (the cost of a long tail):
    its word list must stay in step with the patterns of what a compaction keeps, by
    hand. Any text one of them matches (drawn from the patterns themselves, so a word
    added to one is drawn at once) is one it reads."""
    assert may_retain(text, said_by_user=True)


async def test_a_summary_longer_than_the_conversation_it_was_given_is_refused() -> None:
    """Compaction must never grow what it shrinks: an answer under the runaway cap but
    longer than the turns it summarizes was kept as their narrative."""
    from session.compaction import UnusableSummary

    def padded(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart("The user asked a question. " * 40)])

    with pytest.raises(UnusableSummary, match="not shorter than the conversation it was given"):
        await LlmEventSummarizer(FunctionModel(padded)).summarize_events(invocation(1))


CONVENTIONS = (
    "Use tabs for indentation.",
    "No emojis.",
    "Type hints are mandatory.",
    "Don't touch tests/legacy.",
    "Only edit files under src/.",
    "Answers in French, please.",
    "Max 80 chars per line.",
    "I want every function documented.",
    "No print statements, please.",
    "Docstrings are required for every public function.",
    "Use pytest for tests.",
    "Line length: 100.",
    "Tabs, not spaces.",
    "Comments in English only.",
    "Emojis are forbidden.",
    "At most 100 words per answer.",
    "Use snake_case for functions.",  # H204: a case style for a kind of name was dropped
    "Use PascalCase for classes.",
    "Prefer camelCase for JavaScript variables.",
)


@pytest.mark.parametrize("text", CONVENTIONS)
def test_conventions_said_as_norms_are_rules(text: str) -> None:
    """H146 then H153: a convention said without an imperative of its own ("No emojis.",
    "Type hints are mandatory.", "Use tabs for indentation.") was dropped by the first
    offline compaction."""
    assert extract_retained(said(text)).rules == (text,)


@pytest.mark.parametrize(
    "text",
    [
        "Use tabs for indentation?",
        "Are type hints mandatory?",
        "Could you use tabs for indentation?",
        "Max 80 chars per line?",
        "Use tabs for indentation in this file.",
        "Use tabs for indentation now.",
        "Emojis are forbidden in this reply.",
        "Maximum 3 retries per request for now.",
        "Use pandas for the analysis.",
        "Use the CSV for the chart.",
        "Use snake_case for functions in this file.",
        "Use snake_case for the new functions we discussed above.",
        "No emojis here, they break the parser.",
        "No idea.",
        "No thanks.",
        "No worries.",
        "No problem.",
        "No errors.",
        "No tests.",
        "No, use the other file.",
        "It is mandatory.",
        "Approval was required.",
        "The password is required to log in.",
        "Up to 5 people per team joined.",
        "At least 3 tests failed per run.",
        "Answers in French were wrong.",
        "Line 80 is wrong.",
        'He wrote "no emojis" in the ticket.',
        "> Type hints are mandatory.",
        "    x = 'No emojis.'",
        "```\nmax_len = 80  # Max 80 chars per line.\n```",
        "write style.md: Use tabs for indentation. No emojis.",
    ],
)
def test_questions_one_off_requests_quotes_and_code_are_not_conventions(text: str) -> None:
    assert extract_retained(said(text)).rules == ()


@pytest.mark.parametrize(
    "line",
    [
        "Use x " + "for " * 33_000,
        "No " + "emojis " * 15_000,
        "a " * 50_000 + "is mandatory",
        "Max 8 " + "chars " * 17_000 + "per line",
        "Answers " + "in " * 33_000,
        "Tabs, not " + "x" * 100_000,
        "line length " + "1" * 100_000 + "x",
    ],
)
def test_a_100_kb_line_near_a_convention_is_read_in_one_pass(line: str) -> None:
    """Every pattern of a convention is bounded or anchored: a 100 KB line that almost
    matches one is read in linear time (about a second on this machine, as other
    rule patterns take), with no catastrophic backtracking (which would not end)."""
    assert len(line) >= 90_000
    extract_retained(said(line))


def test_conventions_said_in_the_first_turn_survive_every_offline_compaction() -> None:
    """Twelve offline compactions (interval 3, overlap 1) over 36 turns: the conventions
    of the first turns are among the user's rules of the last one, each read back from
    the text the session file keeps."""
    messages = [m for text in CONVENTIONS for m in said(text)]
    for n in range(len(CONVENTIONS) + 1, 37):
        messages += turn(n)
    config = EventsCompactionConfig(3, 1, OfflineEventSummarizer())
    events: list[Event] = []
    compactions = 0
    for start in range(0, len(messages)):
        events.append(events_from_messages(messages[: start + 1], 1)[-1])
        if start + 1 < len(messages) and not isinstance(messages[start + 1], ModelRequest):
            continue
        window = sliding_window(events, config)
        if window is None:
            continue
        summarized = OfflineEventSummarizer().summarize(window.events)
        compaction = finish_compaction(window, summarized)
        assert compaction is not None
        parsed = parse_compaction(render_compaction(compaction))
        assert parsed is not None
        events = with_compaction(events, parsed)
        compactions += 1
    assert compactions >= 10
    final = events[-1].compaction
    assert final is not None
    kept = set(final.retained.rules)
    assert [c for c in CONVENTIONS if c not in kept] == []


def test_a_windows_path_is_kept_whole() -> None:
    """H177 left it: ``C:\\foo\\bar.py`` in the conversation was kept as ``bar.py``, a file
    the workspace may not have, and the folder it named lost."""
    text = (
        r"The logs are in C:\Users\ana\logs\triage.log and the script is C:\foo\bar.py; "
        r"run .\scripts\eval.ps1 or \\fileserver\share\tickets.csv, then src\agent\main.py."
    )
    assert file_paths(text) == [
        r"C:\Users\ana\logs\triage.log",
        r"C:\foo\bar.py",
        r".\scripts\eval.ps1",
        r"\\fileserver\share\tickets.csv",
        r"src\agent\main.py",
    ]
    retained = extract_retained(said(r"Keep the prompts in D:\agent\prompts\ please."))
    assert retained.paths == ("D:\\agent\\prompts\\",)


PREFERENCES = (
    "I prefer tabs over spaces.",
    "I prefer tabs over spaces",
    "I'd prefer short functions with type hints.",
    "I'd rather you use pytest than unittest.",
    "We prefer composition over inheritance.",
    "Keep functions under 20 lines.",
    "keep functions under 20 lines",
    "Keep lines shorter than 100 characters.",
    "Keep functions small.",
    "Write docstrings in Google style.",
    "Name new files in kebab-case.",
    "We use 4 spaces, not tabs.",
    "Remember: the API key lives in env vars only.",
    "I hate emojis, don't use them.",
)


@pytest.mark.parametrize("text", PREFERENCES)
def test_preferences_limits_and_styles_said_plainly_are_rules(text: str) -> None:
    """H189: "I prefer tabs over spaces" and "keep functions under 20 lines", said early in
    a session, were not kept: the first offline compaction dropped them, and a long
    session's model no longer had them."""
    assert extract_retained(said(text)).rules == (text,)


@pytest.mark.parametrize(
    "text",
    [
        "I prefer this one.",
        "I prefer the second option.",
        "I'd prefer to wait until tomorrow.",
        "I'd rather not.",
        "I'd rather wait.",
        "Keep it under 5 minutes for the demo.",
        "Keep the answer under 50 words.",
        "Keep going.",
        "Keep going to step 10.",
        "Write the report in APA style.",
        "Write a poem in haiku style.",
        "Remember when we fixed that?",
        "I tried it, don't know why it failed.",
        "Sorry, don't mind me.",
        "I prefer tabs over spaces in this file.",
    ],
)
def test_choices_of_the_moment_are_not_preferences(text: str) -> None:
    assert extract_retained(said(text)).rules == ()


def test_paths_of_every_shape_are_kept_whole() -> None:
    """H189: ``$HOME/x.py`` was kept as ``HOME/x.py`` (another file), a quoted name with a
    space as its two halves, and ``Dockerfile.dev`` and ``D:/data/tickets.csv`` not at all."""
    text = (
        'Edit $HOME/x.py and ${XDG_CONFIG_HOME}/agent/config.toml, open "docs/My Notes.md" '
        "and 'Q3 Report.docx', build Dockerfile.dev, load D:/data/tickets.csv."
    )
    assert file_paths(text) == [
        "$HOME/x.py",
        "${XDG_CONFIG_HOME}/agent/config.toml",
        "docs/My Notes.md",
        "Q3 Report.docx",
        "Dockerfile.dev",
        "D:/data/tickets.csv",
    ]


def test_quoted_sentences_and_prices_are_no_paths() -> None:
    text = (
        "He said 'please read notes.md' and \"see the file app.py\"; it costs $5.00 and "
        "the ratio is 3:2/4, awk prints $1/2, http://example.com/a.py is a URL."
    )
    assert file_paths(text) == ["notes.md", "app.py"]


HOUSE_RULES = (
    "Be concise.",
    "Be brief in your answers.",
    "Be more direct and precise.",
    "Stop apologizing.",
    "Prefer f-strings.",
    "Indent with 2 spaces.",
    "Use 2-space indentation.",
    "Functions should be short.",
    "Commit messages should follow conventional commits.",
    "Variable names should be descriptive.",
    "Tests go in tests/.",
    "Ask before deleting files.",
    "Ask me before running migrations.",
    "Please keep the tone formal.",
    "Log with structlog, not print.",
    "Please use tabs instead of spaces.",
    "Add a docstring to every function.",
    "Let's use tabs from now on.",
    "Our convention is tabs.",
    "Use only the standard library.",
    "Target Python 3.11.",
    "Dates in ISO 8601.",
)


@pytest.mark.parametrize("text", HOUSE_RULES)
def test_house_rules_said_in_a_few_words_are_rules(text: str) -> None:
    """H189: each was dropped by the first offline compaction (its pattern for them made a
    property test sixteen times slower, and was left out)."""
    assert extract_retained(said(text)).rules == (text,)


@pytest.mark.parametrize(
    "text",
    [
        "Be careful with that one?",
        "Be careful.",
        "Be right back.",
        "Be concise this time.",
        "Tell me about X.",
        "Stop the server.",
        "Stop it.",
        "Stop here.",
        "Prefer it.",
        "Prefer the second approach.",
        "The tests should pass.",
        "Some tests should be rewritten.",
        "These functions should be merged.",
        "Functions should be short in this file.",
        "Tests go in tests/ for now.",
        "Files go missing.",
        "Errors need fixing.",
        "Replies should have been faster.",
        "Ask him.",
        "Ask before you leave today.",
        "Keep the voice down.",
        "Use the CSV, not the JSON.",
        "Use pandas, not polars, for the analysis of the survey.",
        "Add a test to every file I changed today.",
        "Add it to every list.",
        "Let's go.",
        "Let's use tabs.",
        "Let's use tabs now.",
        "Our convention is unclear.",
        "The style is odd.",
        "Target the staging cluster.",
        "Dates in the report are wrong.",
    ],
)
def test_remarks_and_requests_of_the_moment_are_not_house_rules(text: str) -> None:
    assert extract_retained(said(text)).rules == ()


_HOUSE_RULE_WORDS = (
    "be", "concise", "stop", "apologizing", "prefer", "f-strings", "indent", "with", "2",
    "spaces", "functions", "tests", "should", "go", "in", "tests/", "ask", "me", "before",
    "deleting", "keep", "the", "tone", "formal", "log", "structlog", ",", "not", "print",
    "use", "tabs", "instead", "of", "add", "a", "docstring", "to", "every", "function",
    "let's", "from", "now", "on", "our", "convention", "is", "only", "target", "python",
    "3.11", "dates", "iso", "8601", "please", "need", "live", "belong", "and", "brief",
)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(_HOUSE_RULE_WORDS), min_size=1, max_size=7))
def test_a_text_the_compaction_skips_unscrubbed_holds_no_house_rule(words: list[str]) -> None:
    """``may_retain`` lets a compaction skip a text: every house rule ``is_house_rule``
    finds is in a text it reads (drawn from the rules' own words, in any order)."""
    from session.house_rules import is_house_rule

    text = " ".join(words).replace(" ,", ",") + "."
    if is_house_rule(text):
        assert may_retain(text, said_by_user=True)
    assert all(may_retain(rule, said_by_user=True) for rule in HOUSE_RULES)


@pytest.mark.parametrize(
    "line",
    [
        "Be " + "concise and " * 9_000 + "brief",
        "Please " * 15_000 + "be concise",
        "Stop " + "apologizing " * 9_000,
        "Prefer " + "f-strings " * 10_000,
        "Use " + "tabs " * 20_000 + "instead of spaces",
        "Add a " + "docstring to " * 8_000 + "every function",
        "Functions " + "should " * 14_000,
        "Ask " + "me " * 30_000 + "before deleting",
        "Our convention is " + "tabs " * 20_000,
        "Let's " + "use tabs " * 10_000 + "from now on",
        "Dates in " + "ISO " * 25_000,
    ],
)
def test_a_100_kb_line_near_a_house_rule_is_read_in_one_pass(line: str) -> None:
    """``is_house_rule`` splits a sentence into words once and looks at a few of them:
    no pattern that backtracks over a long line."""
    assert len(line) >= 90_000
    extract_retained(said(line))
