"""LLMActor: its agents, its turns' ends, cancels and crashes."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pydantic_ai.models
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    NativeToolCallPart,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    UserPromptPart,
)

from actors.assistant import TurnDeps, build_agent
from actors.base import ActorRef, open_mailbox, run_supervised
from actors.llm import AGENTS_KEPT, STOPPED_LINE, LLMActor, ends_the_run
from actors.messages import CancelTurn, StartTurn, TurnDelta, TurnDone
from actors.offline_model import offline_model
from tests.e2e.openai_server import ChatServer

pytestmark = pytest.mark.anyio


async def test_many_model_names_keep_a_bounded_number_of_agents(tmp_path: Path) -> None:
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    reply_to: ActorRef[Any]
    reply_to, replies = open_mailbox("terminal")
    names = [f"openai-chat:model-{i}" for i in range(3 * AGENTS_KEPT)] + ["offline"]
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        for turn_id, name in enumerate(names, 1):
            await llm.tell(StartTurn(turn_id, name, "hi", (), tmp_path, "", "", reply_to))
            with anyio.fail_after(30):
                while not isinstance((await replies.receive()).message, TurnDone):
                    pass
            assert len(actor.agents_kept) <= AGENTS_KEPT
        llm.close()
    assert actor.agents_kept[-1] == "offline"
    assert len(actor.agents_kept) == AGENTS_KEPT


async def test_a_cancel_stops_only_the_turn_of_the_terminal_that_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two terminals each run their turn 1 (turn ids are counted per terminal): a terminal
    leaving mid-reply used to cancel the other's reply instead of its own."""
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminals: list[tuple[ActorRef[Any], MemoryObjectReceiveStream[Any]]] = [
        open_mailbox("terminal-a"),
        open_mailbox("terminal-b"),
    ]
    with ChatServer(chunk_delay=0.01) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.serve, llm_mailbox)
            for ref, _ in terminals:
                turn = StartTurn(1, "openai-chat:m", "slow", (), tmp_path, "", "", ref)
                await llm.tell(turn)
            for _, replies in terminals:  # both replies stream
                with anyio.fail_after(30):
                    while not isinstance((await replies.receive()).message, TurnDelta):
                        pass
            await llm.tell(CancelTurn(1, terminals[0][0]))
            ends = []
            for _, replies in terminals:
                with anyio.fail_after(30):
                    while not isinstance(message := (await replies.receive()).message, TurnDone):
                        pass
                ends.append(message)
            llm.close()
    assert [end.cancelled for end in ends] == [True, False]
    assert ends[1].error is None


async def test_messages_are_taken_in_order_while_turns_run(tmp_path: Path) -> None:
    """The task that takes a turn runs it and another reads on: a turn of one terminal does
    not hold up the next terminal's, and the actor stops when its mailbox closes."""
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminals: list[tuple[ActorRef[Any], MemoryObjectReceiveStream[Any]]] = [
        open_mailbox(f"terminal-{i}") for i in range(3)
    ]
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        for ref, _ in terminals:
            await llm.tell(StartTurn(1, "offline", "hi", (), tmp_path, "", "", ref))
        for _, replies in terminals:
            with anyio.fail_after(30):
                while not isinstance(message := (await replies.receive()).message, TurnDone):
                    pass
            assert message.error is None and not message.cancelled
            assert message.new_messages
        llm.close()  # serve returns: the task group ends


async def test_a_turn_cut_by_a_crash_of_the_actor_is_told_and_later_turns_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash cancelled the running turns without a word: their terminals waited for a
    reply no task ran any more ("a reply is already running" from then on)."""

    class Crashes(LLMActor):
        async def handle(self, message: Any) -> Any:
            if message == "crash":
                raise RuntimeError("a bug in the actor")
            return await super().handle(message)

    llm: ActorRef[Any]
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")
    with ChatServer(chunk_delay=0.01) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
        async with anyio.create_task_group() as tg:
            llm = await tg.start(partial(run_supervised, "llm", lambda _: Crashes()))
            await llm.tell(StartTurn(1, "openai-chat:m", "slow", (), tmp_path, "", "", terminal))
            with anyio.fail_after(30):
                while not isinstance((await replies.receive()).message, TurnDelta):
                    pass
            await llm.tell("crash")
            with anyio.fail_after(30):
                while not isinstance(cut := (await replies.receive()).message, TurnDone):
                    pass
            assert cut.turn_id == 1 and not cut.cancelled
            assert cut.error == STOPPED_LINE
            await llm.tell(StartTurn(2, "offline", "again", (), tmp_path, "", "", terminal))
            with anyio.fail_after(30):
                while not isinstance(after := (await replies.receive()).message, TurnDone):
                    pass
            assert after.turn_id == 2 and after.error is None
            llm.close()


@pytest.mark.parametrize(
    ("response", "ends"),
    [
        (ModelResponse(parts=[TextPart("done")]), True),
        (ModelResponse(parts=[ThinkingPart("hmm"), TextPart("done")]), True),
        (ModelResponse(parts=[TextPart("let me look"), ToolCallPart("read_file", {})]), False),
        (ModelResponse(parts=[ToolCallPart("read_file", {})]), False),
        (ModelResponse(parts=[NativeToolCallPart("web_search", {}), TextPart("x")]), False),
        (ModelResponse(parts=[TextPart("")]), False),
        (ModelResponse(parts=[ThinkingPart("hmm")]), False),
        (ModelResponse(parts=[]), False),
        (ModelResponse(parts=[TextPart("so far")], state="suspended"), False),
        (ModelResponse(parts=[TextPart("so far")], state="incomplete"), False),
        (ModelRequest(parts=[UserPromptPart("hi")]), False),
    ],
)
def test_the_responses_that_end_the_agents_run(response: ModelMessage, ends: bool) -> None:
    """The LLMActor stops the run at such a response; every other goes on to pydantic-ai."""
    assert ends_the_run(response) is ends


def _comparable(messages: Sequence[ModelMessage]) -> list[Any]:
    """``messages`` without what differs between two runs (times, durations, run and
    conversation ids; pydantic-ai 2.78 added ``request_timestamp`` and ``duration``)."""
    plain: list[Any] = ModelMessagesTypeAdapter.dump_python(list(messages), mode="json")
    for message in plain:
        for key in ("timestamp", "request_timestamp", "duration", "run_id", "conversation_id"):
            message.pop(key, None)
        for part in message["parts"]:
            part.pop("timestamp", None)
    return plain


async def _streamed_to_its_end(
    agent: Agent[TurnDeps, str], prompt: str, history: Sequence[ModelMessage], workspace: Path
) -> list[ModelMessage]:
    """The new messages of the agent's run on ``prompt``, streamed, run to its end."""
    deps = TurnDeps(workspace)
    async with agent.iter(prompt, message_history=list(history), deps=deps) as run:
        async for node in run:
            if Agent.is_model_request_node(node):
                async with node.stream(run.ctx) as events:
                    async for _ in events:
                        pass
    assert run.result is not None
    return run.result.new_messages()


async def test_a_turn_keeps_the_messages_the_agents_whole_run_gives(tmp_path: Path) -> None:
    """The LLMActor stops each run at the response that ends it (pydantic-ai's steps after
    it add nothing); the turns keep what running the agent to its end keeps, tool calls
    and their returns included."""
    (tmp_path / "agent_spec.md").write_text("# Spec\n")
    prompts = ["hello", "read agent_spec.md", "decide: use postgres", "list the files"]
    agent = build_agent(offline_model())
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")
    history: tuple[ModelMessage, ...] = ()
    async with anyio.create_task_group() as tg:
        tg.start_soon(LLMActor().serve, llm_mailbox)
        for turn_id, prompt in enumerate(prompts, 1):
            turn = StartTurn(turn_id, "offline", prompt, history, tmp_path, "", "", terminal)
            await llm.tell(turn)
            with anyio.fail_after(30):
                while not isinstance(done := (await replies.receive()).message, TurnDone):
                    pass
            whole = await _streamed_to_its_end(agent, prompt, history, tmp_path)
            assert _comparable(done.new_messages) == _comparable(whole)
            history = (*history, *done.new_messages)
        llm.close()
    assert any(isinstance(m, ModelResponse) and m.tool_calls for m in history)


async def test_a_turn_cut_while_its_tool_waits_keeps_the_replys_text_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A response of text and a tool call, complete, then the turn cut before the tool ran
    (its line not yet at the terminal: a Ctrl+Z'd terminal, then a Ctrl+C or a supervisor
    stop): the turn kept the text in that response and again in the interrupted note's,
    so the next requests and the session file carried the reply twice."""
    from actors.messages import TurnToolCall
    from tests.e2e.test_tools_run_once import TEXT_BEFORE_THE_CALL, TextThenToolCall

    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")
    server = TextThenToolCall()
    server.answer.set()
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "test-key")
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.serve, llm_mailbox)
            turn = StartTurn(
                1, "openai-chat:m", "go", (), tmp_path, "", "", terminal,
                tool_lines_delivered=True,
            )  # fmt: skip
            await llm.tell(turn)
            with anyio.fail_after(30):
                while not isinstance((await replies.receive()).message, TurnToolCall):
                    pass  # its line is never delivered: the tool waits
            await llm.tell(CancelTurn(1, terminal))
            with anyio.fail_after(30):
                while not isinstance(done := (await replies.receive()).message, TurnDone):
                    pass
            llm.close()
    finally:
        server.close()
    assert done.cancelled and server.tool_returns == 0
    said = "".join(
        part.content
        for message in done.new_messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, TextPart)
    )
    sent = TEXT_BEFORE_THE_CALL // 8000 * 8000  # the server's text, in pieces of 8,000
    assert sent <= len(said) < 2 * sent, "the reply's text is kept once"
    assert said.endswith("[interrupted: this reply was stopped before its end]")


async def test_a_turn_whose_terminal_reads_nothing_lends_its_slot_to_other_terminals(
    tmp_path: Path,
) -> None:
    """A tool waiting for its line to reach a terminal stopped with Ctrl+Z held one of the
    actor's concurrent turns: as many stopped terminals as places stopped every other
    terminal's turns. Here one place: the other terminal's turn runs meanwhile, and the
    tool runs once its line is delivered."""
    from actors.messages import TurnToolCall

    (tmp_path / "agent_spec.md").write_text("# Spec\n")
    actor = LLMActor(concurrency=1)
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    stopped: ActorRef[Any]
    stopped, stopped_replies = open_mailbox("terminal-stopped")
    other: ActorRef[Any]
    other, other_replies = open_mailbox("terminal-other")
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        turn = StartTurn(
            1, "offline", "read agent_spec.md", (), tmp_path, "", "", stopped,
            tool_lines_delivered=True,
        )  # fmt: skip
        await llm.tell(turn)
        with anyio.fail_after(30):
            while not isinstance(call := (await stopped_replies.receive()).message, TurnToolCall):
                pass  # its line is not delivered yet: the tool waits
        await llm.tell(StartTurn(1, "offline", "hi", (), tmp_path, "", "", other))
        with anyio.fail_after(30):
            while not isinstance(done := (await other_replies.receive()).message, TurnDone):
                pass
        assert done.error is None and done.new_messages
        assert call.delivered is not None
        call.delivered.set(None)  # the terminal reads again
        with anyio.fail_after(30):
            while not isinstance(done := (await stopped_replies.receive()).message, TurnDone):
                pass
        llm.close()
    assert done.error is None and not done.cancelled
    assert any(
        part.part_kind == "tool-return" for m in done.new_messages for part in m.parts
    ), "the tool ran"


async def test_a_failed_turn_s_log_line_has_the_endpoint_s_words_not_escapes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """H132: ``supervisor.log`` logged an endpoint's refusal as pydantic-ai words it,
    its body a Python dict whose message of several lines (a YAML-like list) read with
    literal ``\\n``. The line gives the status and the body's message, on one line."""
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")
    with ChatServer() as server, caplog.at_level(logging.WARNING, logger="agent_assist.llm"):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
        llm: ActorRef[Any]
        llm, llm_mailbox = open_mailbox("llm")
        async with anyio.create_task_group() as tg:
            tg.start_soon(LLMActor().serve, llm_mailbox)
            text = "refuse: rules:\n  - one\n  - two"
            await llm.tell(StartTurn(1, "openai-chat:m", text, (), tmp_path, "", "", terminal))
            with anyio.fail_after(30):
                while not isinstance(done := (await replies.receive()).message, TurnDone):
                    pass
            assert done.error is not None
            llm.close()
    (line,) = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert "\\n" not in line and "\n" not in line, line
    assert line.endswith("400 from m: content refused: refuse: rules: - one - two"), line


async def test_a_cancel_while_the_turn_s_end_waits_for_room_still_ends_the_turn(
    tmp_path: Path,
) -> None:
    """The turn's end waits to go into a full mailbox (its terminal's actor busy, its
    terminal stopped with Ctrl+Z) and a Ctrl+C cancels the turn meanwhile: the end never
    went in, so the cut is told instead, or the terminal waits for a turn's end that never
    comes ("a reply is already running"). (H136 found this broken by a change that marked
    the end told before it was sent; that change was reverted.)"""
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal", 1)
    await terminal.tell("busy")  # the mailbox is full: nothing more goes in
    other: ActorRef[Any]
    other, other_replies = open_mailbox("terminal-other")
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        await llm.tell(StartTurn(1, "offline", "hi", (), tmp_path, "", "", other))
        with anyio.fail_after(30):  # the agent is built (in a worker thread) by then
            while not isinstance((await other_replies.receive()).message, TurnDone):
                pass
        await llm.tell(StartTurn(1, "offline", "hi", (), tmp_path, "", "", terminal))
        await anyio.wait_all_tasks_blocked()
        assert replies.statistics().tasks_waiting_send == 1  # the turn's end waits for room
        await llm.tell(CancelTurn(1, terminal))
        await anyio.wait_all_tasks_blocked()
        assert (await replies.receive()).message == "busy"
        with anyio.fail_after(30):
            while not isinstance(end := (await replies.receive()).message, TurnDone):
                pass
        assert end.turn_id == 1 and end.cancelled
        llm.close()


async def test_turns_one_after_the_other_start_and_end_no_task(tmp_path: Path) -> None:
    """The reader that ran a turn parks and reads again when the next turn comes: a turn
    neither starts a task nor ends one (each cost about 0.05 ms of the loop on the turn's
    critical path, docs/PERFORMANCE.md, H192)."""
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")

    async def one_turn(turn_id: int) -> None:
        await llm.tell(StartTurn(turn_id, "offline", "hi", (), tmp_path, "", "", terminal))
        with anyio.fail_after(30):
            while not isinstance((await replies.receive()).message, TurnDone):
                pass
        await anyio.wait_all_tasks_blocked()  # the turn's task is done with it

    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        for turn_id in (1, 2):  # the first turns start the readers
            await one_turn(turn_id)
        tasks = asyncio.all_tasks()
        for turn_id in range(3, 7):
            await one_turn(turn_id)
            assert asyncio.all_tasks() == tasks
        llm.close()


@pytest.mark.parametrize("padding", [0, 3000])
async def test_a_tool_calls_line_shows_none_of_the_turns_known_secrets(
    tmp_path: Path, padding: int
) -> None:
    """H188: the line of a tool call carried a value the session knew was secret; a long
    prompt's own secrets are found off the event loop (``INLINE_SCRUB_CHARS``)."""
    from actors.messages import TurnToolCall

    value = "Zq9Xv7Lm2Pk4Qw"
    actor = LLMActor()
    llm: ActorRef[Any]
    llm, llm_mailbox = open_mailbox("llm")
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")
    prompt = f"decide: use {value} for the vault " + "and more " * padding
    async with anyio.create_task_group() as tg:
        tg.start_soon(actor.serve, llm_mailbox)
        turn = StartTurn(
            1, "offline", prompt, (), tmp_path, "", "", terminal, known_secrets=(value,)
        )
        await llm.tell(turn)
        lines: list[str] = []
        with anyio.fail_after(30):
            while not isinstance(message := (await replies.receive()).message, TurnDone):
                if isinstance(message, TurnToolCall):
                    lines.append(message.text)
        llm.close()
    (line,) = lines
    assert line.startswith('record_decision "use [REDACTED] for the vault') and value not in line


async def test_a_failed_turns_error_line_and_log_line_show_no_head_of_a_known_secret_at_the_cut(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """H188's leftover: the endpoint's words were cut (200 characters for the line, 500 for
    the log) before the session's known secrets were replaced, so a value straddling the
    cut kept its head in the line the terminal shows and saves, and in the log."""
    value = "Zq9Xv7Lm2Pk4QwRt8Yu3"
    terminal: ActorRef[Any]
    terminal, replies = open_mailbox("terminal")
    said = "content refused: refuse: "
    # the value begins a few characters before the line's cut (200) and the log's (500)
    prompts = [
        "refuse: " + "x" * (189 - len(said)) + f" {value} end",
        "refuse: " + "x" * (486 - len(said) - len("400 from m: ")) + f" {value} end",
    ]
    with ChatServer() as server, caplog.at_level(logging.WARNING, logger="agent_assist.llm"):
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
        llm: ActorRef[Any]
        llm, llm_mailbox = open_mailbox("llm")
        errors: list[str] = []
        async with anyio.create_task_group() as tg:
            tg.start_soon(LLMActor().serve, llm_mailbox)
            for turn_id, prompt in enumerate(prompts, 1):
                turn = StartTurn(
                    turn_id, "openai-chat:m", prompt, (), tmp_path, "", "", terminal,
                    known_secrets=(value,),
                )
                await llm.tell(turn)
                with anyio.fail_after(30):
                    while not isinstance(done := (await replies.receive()).message, TurnDone):
                        pass
                assert done.error is not None
                errors.append(done.error)
            llm.close()
    for error in errors:
        assert value[:6] not in error, error
    logged = [r.getMessage() for r in caplog.records if "failed" in r.getMessage()]
    assert len(logged) == 2
    for line in logged:
        assert value[:6] not in line, line
