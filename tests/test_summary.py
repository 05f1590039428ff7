"""offline_summary(): the extractive summary says each request once."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelRequest, UserPromptPart

from session.summary import offline_summary


def _asked(*prompts: str) -> list[ModelMessage]:
    return [ModelRequest(parts=[UserPromptPart(content=prompt)]) for prompt in prompts]


def test_the_first_request_is_not_listed_again_among_the_latest() -> None:
    summary = offline_summary(_asked("hello one", "write notes.md: abc", "decide x"))
    assert summary == (
        '3 recent requests; first: "hello one"\n'
        '- "write notes.md: abc"\n'
        '- "decide x"'
    )


def test_the_latest_three_are_listed_after_the_first() -> None:
    summary = offline_summary(_asked(*(f"request {n}" for n in range(1, 8))))
    assert summary is not None
    assert summary.splitlines() == [
        '7 recent requests; first: "request 1"',
        '- "request 5"',
        '- "request 6"',
        '- "request 7"',
    ]


def test_a_single_request_is_its_first_line_only() -> None:
    assert offline_summary(_asked("only this")) == '1 recent request; first: "only this"'


def test_an_earlier_summarys_own_earlier_words_are_not_said_twice() -> None:
    previous = "Earlier: designing a triage agent\n2 recent requests; first: ..."
    summary = offline_summary(_asked("go on"), previous=previous)
    assert summary is not None
    assert summary.splitlines()[0] == "Earlier: designing a triage agent"


def test_after_a_compaction_that_started_with_a_request_the_summary_says_so_once() -> None:
    """A helper's find (H66): the session summary of a compacted session began "Earlier:
    Started with: ...", and counted "2 recent requests" of a 60-turn session."""
    from session.compaction import EventCompaction, render_compaction

    compacted = render_compaction(EventCompaction(1, 58, "Started with: Always answer in French."))
    summary = offline_summary(_asked("check lib/mod_59.py", "and mod_60"), previous=compacted)
    assert summary is not None
    assert summary.splitlines() == [
        "Started with: Always answer in French.",
        "Latest requests:",
        '- "check lib/mod_59.py"',
        '- "and mod_60"',
    ]


def test_an_earlier_offline_summarys_first_request_is_what_the_session_started_with() -> None:
    previous = '40 recent requests; first: "Always answer in French."\n- "more"'
    summary = offline_summary(_asked("go on"), previous=previous)
    assert summary is not None
    assert summary.splitlines()[0] == "Started with: Always answer in French."
