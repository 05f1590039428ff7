"""A compacted session is listed and offered with its first request as it was written, as
before its compaction: the real supervisor and terminal, the offline summarizer."""

from __future__ import annotations

from tests.e2e.harness import Env


def compacted_session(env: Env, first: str) -> str:
    """A session of three turns whose first message is ``first``, compacted after each."""
    run = env.run(
        "--new", input=f"{first}\nsecond\nthird\n", AGENT_ASSIST_COMPACTION_INTERVAL="1"
    )
    assert run.returncode == 0, run.stderr
    assert "note: compacted turn" in run.stderr, run.stderr
    [session_id] = env.session_ids()
    return session_id


def test_a_compacted_question_is_listed_with_its_question_mark(env: Env) -> None:
    """The compaction's narrative ended every first request with a full stop: the table
    listed "Can you design a triage agent." for the user's question."""
    session_id = compacted_session(env, "Can you design a triage agent?")
    listed = env.run("sessions")
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if line.startswith(session_id)]
    assert row.endswith("  Can you design a triage agent?"), row


def test_a_compacted_first_request_is_offered_without_an_added_full_stop(env: Env) -> None:
    """The resume offer's summary quotes the request, not the narrative's sentence around
    it (``write agent_spec.md: # Triage agent.``)."""
    compacted_session(env, "write agent_spec.md: # Triage agent")
    offer = env.run(input="n\n")
    assert "  3 turns · summary: write agent_spec.md: # Triage agent\n" in offer.stderr, (
        offer.stderr
    )
