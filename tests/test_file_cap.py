"""A save keeps the session file under its cap: the already compacted turns go first, then
the largest tool returns' bodies, never the user's messages; said once a chat (H166)."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path

import orjson
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from session.compaction import EventsCompactionConfig, OfflineEventSummarizer, finish_compaction
from session.file_cap import ELIDED, MAX_SESSION_BYTES, Trimmed, trimmed_line
from session.last_reply import LastReply, last_reply
from session.lifecycle import PersistPolicy, SessionLifecycle, WriteSession
from session.manager import SessionManager, state_parts
from session.summary import user_prompts

T0 = datetime(2026, 12, 7, 5, 0, tzinfo=UTC)
CAP = 400_000
BODY = "the routing table of the triage agent, one queue a line\n" * 900  # about 50 KB


def read_turn(n: int, files: int, prompt: str | None = None) -> list[ModelMessage]:
    """Turn ``n``: the user asks, the model reads ``files`` files of ``BODY``, and answers."""
    ids = [f"c{n}_{i}" for i in range(files)]
    calls = [ToolCallPart("read_file", {"path": f"{id_}.md"}, id_) for id_ in ids]
    returns = [ToolReturnPart("read_file", BODY, id_, timestamp=T0) for id_ in ids]
    return [
        ModelRequest(parts=[UserPromptPart(prompt or f"question {n}: read them", timestamp=T0)]),
        ModelResponse(parts=calls, timestamp=T0),
        ModelRequest(parts=returns),
        ModelResponse(parts=[TextPart(f"answer {n}")], timestamp=T0),
    ]


def started(interval: int, overlap: int, cap: int = CAP) -> SessionLifecycle:
    compaction = EventsCompactionConfig(interval, overlap, event_retention_size=2)
    lc = SessionLifecycle(policy=PersistPolicy(compaction=compaction, max_file_bytes=cap))
    return lc.start_fresh(T0).lifecycle


def after(lc: SessionLifecycle, turn: list[ModelMessage]) -> tuple[SessionLifecycle, WriteSession]:
    done = lc.begin_turn(0).complete_turn(turn, now=T0, manifest={}, agent_spec_path=None)
    (write,) = [e for e in done.effects if isinstance(e, WriteSession)]
    return done.lifecycle, write


def compacted(lc: SessionLifecycle) -> SessionLifecycle:
    window = lc.compaction_due()
    assert window is not None
    summary = OfflineEventSummarizer().summarize(window.events)
    compaction = finish_compaction(window, summary)
    assert compaction is not None
    lc = lc.begin_compaction(window)
    done = lc.compacted(compaction, lc.generation, now=T0, manifest={}, agent_spec_path=None)
    return done.lifecycle


def file_bytes(write: WriteSession) -> bytes:
    return b"".join(state_parts(write.state, write.encoded))


def prompts_in(write: WriteSession) -> list[str]:
    from session.history import load_messages

    return user_prompts(load_messages(write.state.recent_messages))


def test_a_file_over_the_cap_leaves_out_the_oldest_compacted_turns_first() -> None:
    lc = started(interval=3, overlap=3)
    for n in range(1, 4):
        lc, _ = after(lc, read_turn(n, 2))
    lc = compacted(lc)  # turns 1-3 compacted; the file keeps them as the next window's overlap
    lc, write = after(lc, read_turn(4, 3))
    assert len(file_bytes(write)) <= CAP
    assert prompts_in(write)[-1] == "question 4: read them"  # after the boundary: whole
    assert "question 1: read them" not in prompts_in(write)  # the oldest overlap turn went
    assert file_bytes(write).count(orjson.dumps(BODY)) == 2 + 2 + 3  # turns 2, 3 and 4 whole
    assert write.told is not None and "1 already summarized turn left out" in write.told


def test_then_the_largest_tool_returns_bodies_go_never_the_users_messages() -> None:
    long_prompt = "Never edit files under vendor/. " * 3000  # about 100 KB of the user's own
    lc = started(interval=50, overlap=0)
    lc, _ = after(lc, read_turn(1, 2, long_prompt))
    lc, write = after(lc, read_turn(2, 6))
    data = file_bytes(write)
    assert len(data) <= CAP
    assert prompts_in(write) == [long_prompt, "question 2: read them"]
    assert b"left out of the saved session to keep its file under its 400,000 bytes cap" in data
    assert write.told == (
        "note: the session file is kept under its 400,000 bytes cap: 3 tool returns' bodies left "
        "out of it (this chat still sends them; your messages are kept)"
    )


def test_the_chat_still_sends_what_the_file_left_out() -> None:
    lc = started(interval=50, overlap=0)
    lc, _ = after(lc, read_turn(1, 9))
    sent = orjson.dumps([m.parts for m in lc.request_history()], default=repr)
    assert sent.count(b"one queue a line") == 9 * 900


def test_it_is_said_once_a_chat() -> None:
    lc = started(interval=50, overlap=0)
    lc, first = after(lc, read_turn(1, 9))
    lc, second = after(lc, read_turn(2, 1))
    assert first.told is not None
    assert second.told is None
    assert len(file_bytes(second)) <= CAP


def test_the_trimmed_file_is_read_back_and_resumed(tmp_path: Path) -> None:
    lc = started(interval=50, overlap=0)
    lc, write = after(lc, read_turn(1, 9))
    manager = SessionManager(tmp_path, max_session_bytes=CAP)
    manager.save(write.state, write.encoded)
    stored = manager.load_for_resume(write.state.session_id)
    resumed = SessionLifecycle(policy=lc.policy).resume(stored, None).lifecycle
    assert user_prompts(list(resumed.history)) == ["question 1: read them"]


def test_the_cap_a_save_keeps_to_is_the_one_every_read_keeps() -> None:
    reader = SessionManager(Path("."))
    assert PersistPolicy().max_file_bytes == MAX_SESSION_BYTES == reader.max_session_bytes


def test_with_no_tool_return_left_the_models_reply_goes_before_the_users_message() -> None:
    pasted = "Never edit files under vendor/. " * 9000  # about 290 KB of the user's own
    reply = "A long answer about the routing table. " * 5000  # about 195 KB
    lc = started(interval=50, overlap=0)
    turn: list[ModelMessage] = [
        ModelRequest(parts=[UserPromptPart(pasted, timestamp=T0)]),
        ModelResponse(parts=[TextPart(reply)], timestamp=T0),
    ]
    lc, write = after(lc, turn)
    assert len(file_bytes(write)) <= CAP
    assert prompts_in(write) == [pasted]
    assert write.told is not None and ": 1 reply body left out of it" in write.told


def test_the_line_counts_one_of_each_in_the_singular() -> None:
    trimmed = Trimmed(2**28, turns=1, tool_returns=1, replies=1)
    assert trimmed_line(trimmed) == (
        "note: the session file is kept under its 256 MiB cap: 1 already summarized turn, "
        "1 tool return's body, 1 reply body left out of it (this chat still sends them; your "
        "messages are kept)"
    )


def test_the_last_reply_is_the_model_body_left_out_last() -> None:
    earlier = "An earlier answer about the queues. " * 5000  # about 180 KB
    pasted = "Never edit files under vendor/. " * 4000  # about 130 KB of the user's own
    last = "The last answer, about the routing table. " * 5000  # about 215 KB, the largest
    lc = started(interval=50, overlap=0)
    lc, _ = after(lc, [
        ModelRequest(parts=[UserPromptPart("tell me about the queues", timestamp=T0)]),
        ModelResponse(parts=[TextPart(earlier)], timestamp=T0),
    ])
    lc, write = after(lc, [
        ModelRequest(parts=[UserPromptPart(pasted, timestamp=T0)]),
        ModelResponse(parts=[TextPart(last)], timestamp=T0),
    ])
    data = file_bytes(write)
    assert len(data) <= CAP
    assert orjson.dumps(last) in data, "the reply a resumed chat shows, whole"
    assert orjson.dumps(earlier) not in data


def test_a_last_reply_left_out_of_the_file_is_shown_as_a_note_not_as_its_marker() -> None:
    marker = ELIDED.format(size=195_000, what="this reply's text", cap="256 MiB", hint="")
    shown = last_reply([
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "explain"}]},
        {"kind": "response", "parts": [{"part_kind": "text", "content": marker}]},
    ])
    assert shown == LastReply(note=(
        "note: the last reply (195,000 bytes) was left out of the session file to keep it "
        "under its 256 MiB cap; it is not kept"
    ))


def test_a_last_reply_left_out_by_an_earlier_version_is_shown_as_a_note_too() -> None:
    marker = "[195,000 bytes left out of the session file to keep it under its 256 MiB cap]"
    shown = last_reply([
        {"kind": "request", "parts": [{"part_kind": "user-prompt", "content": "explain"}]},
        {"kind": "response", "parts": [{"part_kind": "text", "content": marker}]},
    ])
    assert shown is not None and shown.note is not None and "(195,000 bytes)" in shown.note


def test_nothing_left_out_is_not_told_as_kept_under_the_cap() -> None:
    pasted = "Never edit files under vendor/. " * 14000  # about 450 KB, over the cap alone
    lc = started(interval=50, overlap=0)
    lc, write = after(lc, [
        ModelRequest(parts=[UserPromptPart(pasted, timestamp=T0)]),
        ModelResponse(parts=[TextPart("ok")], timestamp=T0),
    ])
    assert prompts_in(write) == [pasted]
    assert write.told is None, write.told
    assert not lc.cap_told, "the line is still said once something is left out"


def pasted_turn(n: int) -> list[ModelMessage]:
    """Turn ``n``: the user pastes about 150 KB of their own; the model answers briefly."""
    pasted = f"Paste {n}: never edit files under vendor/. " * 3500
    return [
        ModelRequest(parts=[UserPromptPart(pasted, timestamp=T0)]),
        ModelResponse(parts=[TextPart(f"noted {n}")], timestamp=T0),
    ]


def test_the_users_messages_alone_over_the_cap_move_the_oldest_turns_beside_the_file(
    tmp_path: Path,
) -> None:
    """A tail of the user's own messages over the cap was written whole, and the next start
    refused the file. The oldest turns over it are moved, whole, to files beside the
    session's (named in the line), and the file the next start reads is under the cap."""
    lc = started(interval=50, overlap=0)
    told, write = [], None
    for n in range(1, 5):
        lc, write = after(lc, pasted_turn(n))  # 4 x 150 KB of the user's own: over 400 KB
        told += [write.told] if write.told else []
    assert write is not None
    manager = SessionManager(tmp_path, max_session_bytes=CAP)
    manager.save(write.state, write.encoded)
    stored = manager.load_for_resume(write.state.session_id)  # refused, over the cap
    for aside in write.aside:
        (tmp_path / aside.name).write_bytes(aside.data())  # as the StorageActor does
    resumed = SessionLifecycle(policy=lc.policy).resume(stored, None).lifecycle
    assert user_prompts(list(resumed.history)) == [prompt(n) for n in (3, 4)]
    first, second = write.aside
    session_id = write.state.session_id
    assert first.name.startswith(f"{session_id}.json.over-cap-1-")
    assert second.name.startswith(f"{session_id}.json.over-cap-2-")
    for n, aside in enumerate(write.aside, 1):
        kept = ModelMessagesTypeAdapter.validate_json((tmp_path / aside.name).read_bytes())
        assert user_prompts(kept) == [prompt(n)]
    assert told == [  # once a chat, at the first save that moves one (turn 3)
        "note: the session file is kept under its 400,000 bytes cap: your oldest turn moved "
        f"beside it to {session_id}.json.over-cap-* (this chat still sends it; a resume "
        "does not)"
    ]
    assert resumed.invocations == 4, "the turns go on being numbered as before"


def prompt(n: int) -> str:
    (part,) = pasted_turn(n)[0].parts
    assert isinstance(part, UserPromptPart) and isinstance(part.content, str)
    return part.content


def test_after_a_resume_the_model_reads_what_was_left_out_why_and_what_to_do(
    tmp_path: Path,
) -> None:
    """What the model gets of a trimmed session once resumed: each body left out says what
    it was (a tool's output, a reply's text, a call's arguments), that the saved session
    left it out to keep its file under the cap, and for a tool's output to call the tool
    again; every tool call still has its return."""
    lc = started(interval=50, overlap=0)
    turn = read_turn(1, 9)
    long_reply = "A long answer about the routing table. " * 13000  # about 500 KB
    turn[-1] = ModelResponse(parts=[TextPart(long_reply)], timestamp=T0)
    lc, _ = after(lc, turn)
    lc, write = after(lc, read_turn(2, 1))
    manager = SessionManager(tmp_path, max_session_bytes=CAP)
    manager.save(write.state, write.encoded)
    stored = manager.load_for_resume(write.state.session_id)
    sent = SessionLifecycle(policy=lc.policy).resume(stored, None).lifecycle.request_history()
    calls = {p.tool_call_id for m in sent for p in m.parts if isinstance(p, ToolCallPart)}
    returns = [p for m in sent for p in m.parts if isinstance(p, ToolReturnPart)]
    assert calls == {p.tool_call_id for p in returns}
    left_out = [p.content for p in returns if "left out" in str(p.content)]
    assert left_out and all(
        re.fullmatch(
            r"\[[0-9,]+ bytes of tool output left out of the saved session to keep its file "
            r"under its 400,000 bytes cap; call the tool again if you need them\]",
            str(content),
        )
        for content in left_out
    ), left_out[:1]
    texts = [p.content for m in sent for p in m.parts if isinstance(p, TextPart)]
    assert any(
        re.fullmatch(
            r"\[[0-9,]+ bytes of this reply's text left out of the saved session to keep its "
            r"file under its 400,000 bytes cap\]",
            text,
        )
        for text in texts
    ), texts


def test_a_resumed_model_is_told_which_turns_its_history_lacks_before_the_tail(
    tmp_path: Path,
) -> None:
    """H174 left it: turns 1-2, moved beside the file, were neither in the resumed history
    nor named in its context; the model took turn 3 for the conversation's start."""
    lc = started(interval=50, overlap=0)
    write = None
    for n in range(1, 5):
        lc, write = after(lc, pasted_turn(n))
    assert write is not None and len(write.aside) == 2
    manager = SessionManager(tmp_path, max_session_bytes=CAP)
    manager.save(write.state, write.encoded)
    stored = manager.load_for_resume(write.state.session_id)
    resumed = SessionLifecycle(policy=lc.policy).resume(stored, None).lifecycle
    assert (
        "Turns 1-2 of this conversation are not in the messages that follow: the saved "
        "session left them out; ask the user if you need what was said in them."
    ) in resumed.resume_context.splitlines()


def test_a_resumed_tail_that_starts_at_the_first_turn_is_told_nothing_missing(
    tmp_path: Path,
) -> None:
    lc = started(interval=50, overlap=0)
    lc, write = after(lc, pasted_turn(1))
    manager = SessionManager(tmp_path, max_session_bytes=CAP)
    manager.save(write.state, write.encoded)
    stored = manager.load_for_resume(write.state.session_id)
    resumed = SessionLifecycle(policy=lc.policy).resume(stored, None).lifecycle
    assert resumed.resume_context.startswith("# Resumed Session Context")
    assert "not in the messages that follow" not in resumed.resume_context
