"""Compaction inside a live session (TerminalActor with the real worker actors, in process):
a failing or skipping summarizer never breaks the conversation, failures back off and warn
once, and a slow summarizer never holds up the next turn."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import orjson
import pydantic_ai.models
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, TextPart, UserPromptPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from actors import compaction as compaction_actor
from actors.base import ActorRef, open_mailbox, run_supervised
from actors.compaction import CompactionActor
from actors.messages import (
    CancelCurrentTurn,
    CommandOutput,
    Compact,
    Compacted,
    Detach,
    Info,
    OpenSession,
    ReplyText,
    RunCommand,
    StopCompaction,
    TerminalOutput,
    TurnEnded,
    UserTurn,
)
from actors.terminal import TerminalActor, TerminalConfig
from session.compacted import compacted_turns, session_turns, tail_prompts
from session.compaction import (
    DEFAULT_PROMPT_TEMPLATE,
    MAX_LLM_NARRATIVE_CHARS,
    PLACEHOLDER,
    BaseEventsSummarizer,
    Event,
    EventsCompactionConfig,
    LlmEventSummarizer,
    OfflineEventSummarizer,
    Window,
    estimate_tokens,
    events_from_messages,
    parse_compaction,
    retention_window,
)
from session.history import warm_up
from session.lifecycle import PersistPolicy
from session.paths import sessions_dir
from tests.conversations import turn
from tests.workers import local_models, start_peers, summary_model_terminal

pytestmark = pytest.mark.anyio

LONG = "Let us talk about the triage agent's tools, prompts and evaluation plan in detail. " * 3


class Raising(BaseEventsSummarizer):
    def __init__(self) -> None:
        self.calls = 0

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        self.calls += 1
        raise RuntimeError("the summary model is down")


class Skipping(BaseEventsSummarizer):
    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        return None


class Gated(BaseEventsSummarizer):
    """Summarizes offline, but only once ``gate`` is set."""

    def __init__(self) -> None:
        self.gate = anyio.Event()
        self.started = anyio.Event()

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        self.started.set()
        await self.gate.wait()
        return OfflineEventSummarizer().summarize(events)


@dataclass
class Rig:
    terminal: ActorRef[Any]
    compaction: ActorRef[Any]
    outputs: MemoryObjectReceiveStream[TerminalOutput]
    project: Path
    seen: list[TerminalOutput]

    async def next_of(self, kind: type[Any]) -> Any:
        with anyio.fail_after(10):
            async for output in self.outputs:
                self.seen.append(output)
                if isinstance(output, kind):
                    return output
        raise AssertionError(f"no {kind.__name__}")

    async def turn(self, text: str = LONG) -> None:
        await self.terminal.tell(UserTurn(text))
        assert (await self.next_of(TurnEnded)).status == "ok"

    def notices(self) -> list[str]:
        return [o.text for o in self.seen if isinstance(o, Info)]

    def saved(self) -> dict[str, Any]:
        (path,) = [p for p in self.project.glob("*.json") if not p.name.startswith("active_")]
        data: dict[str, Any] = orjson.loads(path.read_bytes())
        return data


class StopsAfterAnswers:
    """Between the TerminalActor and the CompactionActor: a StopCompaction reaches the
    actor only once the answer of a compaction has reached the terminal, as when the
    actor's mailbox is slow to read it and the summary model answers meanwhile."""

    def __init__(self) -> None:
        self.ref: ActorRef[Any]
        self.ref, self._mailbox = open_mailbox("compaction-relay")
        self._answers_ref: ActorRef[Any]
        self._answers_ref, self._answers = open_mailbox("compaction-answers")
        self._terminal: ActorRef[Any] | None = None
        self.answered = anyio.Event()

    async def serve(self, actor: ActorRef[Any]) -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._pass_answers)
            async for envelope in self._mailbox:
                message = envelope.message
                if isinstance(message, Compact) and message.reply_to is not None:
                    self._terminal = message.reply_to
                    message = dataclasses.replace(message, reply_to=self._answers_ref)
                elif isinstance(message, StopCompaction):
                    await self.answered.wait()
                if envelope.reply is None:
                    await actor.tell(message)
                else:
                    envelope.reply.set(await actor.ask(message))

    async def _pass_answers(self) -> None:
        async for envelope in self._answers:
            assert self._terminal is not None
            await self._terminal.tell(envelope.message)
            self.answered.set()


RigFactory = Callable[..., Any]


@pytest.fixture
async def make_rig(tmp_path: Path) -> AsyncIterator[RigFactory]:
    await anyio.to_thread.run_sync(warm_up)  # off the loop, as the supervisor does
    async with anyio.create_task_group() as tg:

        async def make(
            summarizer: BaseEventsSummarizer | None,
            interval: int,
            threshold: int | None = None,
            *,
            between: StopsAfterAnswers | None = None,
        ) -> Rig:
            workspace = tmp_path / "ws"
            workspace.mkdir()
            home = tmp_path / "home"
            peers = await start_peers(
                tg, home, compaction=lambda ref: CompactionActor(ref, summarizer=summarizer)
            )
            if between is not None:
                tg.start_soon(between.serve, peers.compaction)
                peers = dataclasses.replace(peers, compaction=between.ref)
            config = TerminalConfig(
                terminal_pid=4242,
                terminal_start_time=None,
                workspace=workspace,
                project=sessions_dir(workspace, home),
                model="offline",
                policy=PersistPolicy(
                    compaction=EventsCompactionConfig(
                        interval, 0, token_threshold=threshold, event_retention_size=2
                    )
                ),
            )
            send, receive = anyio.create_memory_object_stream[TerminalOutput](256)
            ref: ActorRef[Any]
            ref, mailbox = open_mailbox("terminal-4242")
            tg.start_soon(TerminalActor(ref, config, peers, send).serve, mailbox)
            await ref.ask(OpenSession("new", None))
            return Rig(ref, peers.compaction, receive, config.project, [])

        yield make
        tg.cancel_scope.cancel()


async def test_a_raising_summarizer_warns_once_and_the_conversation_goes_on(
    make_rig: RigFactory,
) -> None:
    summarizer = Raising()
    rig: Rig = await make_rig(summarizer, 1)
    for _ in range(6):
        await rig.turn()
    await rig.terminal.ask(RunCommand("resume", None))  # a round trip: the actor is idle
    warnings = [n for n in rig.notices() if n.startswith("warning: compaction failed")]
    assert warnings == [
        "warning: compaction failed (RuntimeError: the summary model is down); "
        "next try in 2 turns"
    ]
    # Tried after turn 1, then (backing off 2 turns) after turn 3; the next wait is 4 turns.
    assert summarizer.calls == 2, "backs off instead of retrying every turn"
    assert rig.saved()["compacted_history_summary"] is None
    assert len(rig.saved()["recent_messages"]) == 12  # all six turns kept whole
    await rig.terminal.tell(Detach("exit"))


async def test_a_summarizer_that_skips_makes_no_compaction_and_no_warning(
    make_rig: RigFactory,
) -> None:
    rig: Rig = await make_rig(Skipping(), 1)
    await rig.turn()
    await rig.turn()
    await rig.terminal.ask(RunCommand("resume", None))
    assert not [n for n in rig.notices() if "compact" in n]
    assert rig.saved()["compacted_history_summary"] is None
    await rig.terminal.tell(Detach("exit"))


async def test_a_slow_summarizer_never_holds_up_the_next_turn(make_rig: RigFactory) -> None:
    summarizer = Gated()
    rig: Rig = await make_rig(summarizer, 1)
    await rig.turn("first: " + LONG)
    with anyio.fail_after(10):
        await summarizer.started.wait()
    await rig.turn("second, while the first is being compacted")  # not held up
    summarizer.gate.set()
    notice = await rig.next_of(Info)
    assert notice.text.startswith("note: compacted turn 1 into a summary")
    assert rig.saved()["compacted_history_summary"].startswith("Conversation so far (turns 1-1")
    await rig.terminal.tell(Detach("exit"))


async def test_a_compaction_landing_in_the_background_keeps_the_last_active_time(
    make_rig: RigFactory,
) -> None:
    """H120: the background compaction's write moved ``updated_at`` to when it landed, and
    a resume after a takeover said the user was last active then."""
    summarizer = Gated()
    rig: Rig = await make_rig(summarizer, 1)
    await rig.turn("first: " + LONG)
    last_active = rig.saved()["updated_at"]
    summarizer.gate.set()
    notice = await rig.next_of(Info)
    assert notice.text.startswith("note: compacted turn 1 into a summary")
    assert rig.saved()["compacted_history_summary"].startswith("Conversation so far (turns 1-1")
    assert rig.saved()["updated_at"] == last_active
    await rig.terminal.tell(Detach("exit"))


class GatedFirst(Gated):
    """The first summary waits for ``gate`` (a slow summary model in the background); the
    later ones answer at once."""

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        if self.started.is_set():
            return OfflineEventSummarizer().summarize(events)
        return await super().summarize_events(events)


async def test_the_window_due_behind_a_compaction_still_running_at_the_exit_is_kept(
    make_rig: RigFactory,
) -> None:
    """H98's flaky e2e test, under load: turns 3-4 ended while the compaction of turns
    1-2 still ran, so none was started for them; the exit kept the one in flight and the
    file stayed compacted to turn 2 (the next run caught up)."""
    summarizer = GatedFirst()
    rig: Rig = await make_rig(summarizer, 2)
    await rig.turn("one")
    await rig.turn("two")
    with anyio.fail_after(10):
        await summarizer.started.wait()  # turns 1-2 are being compacted
    await rig.turn("three")
    await rig.turn("four")
    await rig.terminal.tell(Detach("exit"))
    summarizer.gate.set()
    with anyio.fail_after(10):
        while True:  # the exit's work goes on after the terminal was told it is saved
            compaction = parse_compaction(rig.saved()["compacted_history_summary"])
            if compaction is not None and compaction.end_invocation == 4:
                break
            await anyio.sleep(0.01)


async def test_the_budget_is_kept_while_a_slow_compaction_runs_in_the_background(
    make_rig: RigFactory,
) -> None:
    """A helper's attack: with the summary model taking 6 s, a 48 KB paste was sent again
    with every request until the background compaction answered."""
    summarizer = GatedFirst()
    rig: Rig = await make_rig(summarizer, 1, threshold=2000)
    await rig.turn("first: " + LONG)
    with anyio.fail_after(10):
        await summarizer.started.wait()  # turn 1's compaction hangs in the background
    await rig.turn("paste: " + "wordy " * 3000)  # about 4,500 tokens
    await rig.turn("third, after the paste")
    assert compacted_turns(rig.saved()["compacted_history_summary"]) == 2
    assert "wordy wordy" not in orjson.dumps(rig.saved()["recent_messages"]).decode()
    summarizer.gate.set()  # the late answer, for turn 1 alone, is not kept over turns 1-2
    await rig.terminal.ask(RunCommand("resume", None))
    assert rig.saved()["compacted_history_summary"].startswith("Conversation so far (turns 1-2")
    await rig.terminal.tell(Detach("exit"))


async def test_slash_compact_does_not_wait_for_a_compaction_in_the_background(
    make_rig: RigFactory,
) -> None:
    """It answered "already running; try again shortly", which a script cannot do."""
    summarizer = GatedFirst()
    rig: Rig = await make_rig(summarizer, 1)
    await rig.turn("first: " + LONG)
    with anyio.fail_after(10):
        await summarizer.started.wait()  # turn 1's compaction hangs in the background
    await rig.turn("second: " + LONG)
    await rig.terminal.tell(RunCommand("compact", None))
    output = await rig.next_of(CommandOutput)
    assert output.text.startswith("Compacted turns 1-2: "), output.text
    summarizer.gate.set()
    await rig.terminal.tell(Detach("exit"))


async def test_slash_compact_prints_the_tokens_before_and_after(make_rig: RigFactory) -> None:
    rig: Rig = await make_rig(None, 0)
    for _ in range(3):
        await rig.turn()
    await rig.terminal.tell(RunCommand("compact", None))
    output = await rig.next_of(CommandOutput)
    match = re.fullmatch(r"Compacted turns 1-3: ~([\d,]+) -> ~([\d,]+) tokens\.", output.text)
    assert match is not None, output.text
    before, after = (int(n.replace(",", "")) for n in match.groups())
    assert after < before
    await rig.terminal.tell(RunCommand("compact", None))
    assert (await rig.next_of(CommandOutput)).text.startswith("Nothing to compact")
    await rig.terminal.tell(Detach("exit"))


async def test_with_compaction_off_the_session_file_counts_every_turn_after_a_compact(
    make_rig: RigFactory,
) -> None:
    """A helper's report (H60): compaction off, a ``/compact``, then turns until the budget
    trims the tail: the session file lost the turns between the compaction's boundary and
    the tail, and its turn count (the listing's, the resume prompt's) missed them."""
    rig: Rig = await make_rig(None, 0, 1000)
    for n in range(3):
        await rig.turn(f"message {n}: {LONG}")
    await rig.terminal.tell(RunCommand("compact", None))
    assert (await rig.next_of(CommandOutput)).text.startswith("Compacted turns 1-3: ")
    for n in range(3, 20):
        await rig.turn(f"message {n}: {LONG}")
    saved = rig.saved()
    assert session_turns(saved["compacted_history_summary"], saved["recent_messages"]) == 20
    first_kept = tail_prompts(saved["recent_messages"])[0]
    assert first_kept.startswith(f"message {compacted_turns(saved['compacted_history_summary'])}:")
    await rig.terminal.tell(Detach("exit"))


async def test_the_actor_answers_a_failure_instead_of_raising(make_rig: RigFactory) -> None:
    rig: Rig = await make_rig(Raising(), 0)
    window = Window((), 1, 1)
    result = await rig.compaction.ask(Compact("aaaaaaaaaaaa", 1, window, "command"), 5)
    assert isinstance(result, Compacted)
    assert result.compaction is None and result.error == "RuntimeError: the summary model is down"


class FailsOnce(BaseEventsSummarizer):
    def __init__(self) -> None:
        self.failed = False

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        if not self.failed:
            self.failed = True
            raise RuntimeError("a passing outage")
        return OfflineEventSummarizer().summarize(events)


async def test_a_failed_slash_compact_leaves_the_automatic_window_alone(
    make_rig: RigFactory,
) -> None:
    rig: Rig = await make_rig(FailsOnce(), 3)
    await rig.turn()
    await rig.terminal.tell(RunCommand("compact", None))
    output = await rig.next_of(CommandOutput)
    assert output.text == "error: compaction failed: RuntimeError: a passing outage"
    for _ in range(2):
        await rig.turn()
    notice = await rig.next_of(Info)
    assert notice.text.startswith("note: compacted turns 1-3 into a summary")
    await rig.terminal.tell(Detach("exit"))


async def test_a_new_session_has_nothing_to_compact(make_rig: RigFactory) -> None:
    rig: Rig = await make_rig(None, 3)
    await rig.terminal.tell(RunCommand("compact", None))
    assert (await rig.next_of(CommandOutput)).text == (
        "Nothing to compact yet: no turn has completed."
    )
    await rig.terminal.tell(Detach("exit"))


class Hanging:
    """A Chat Completions endpoint that accepts connections and never answers."""

    def __init__(self) -> None:
        import socket
        import threading

        self.connections = 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.held: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            self.held.append(conn)

    def close(self) -> None:
        for conn in self.held:
            conn.close()
        self.listener.close()


async def test_a_hanging_summary_model_costs_one_timeout_then_the_offline_summarizer(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local endpoint
    endpoint = Hanging()
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://127.0.0.1:{endpoint.port}/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-key")
    events = events_from_messages(
        [m for n in range(1, 4) for m in turn(n, text=LONG)], first_invocation=1
    )
    window = retention_window(events, 0)
    assert window is not None
    try:
        async with anyio.create_task_group() as tg:
            actor: ActorRef[Any] = await tg.start(
                partial(
                    run_supervised,
                    "compaction",
                    lambda ref: CompactionActor(
                        ref, summary_model="openai-chat:slow", llm_timeouts=(0.5, 0.5)
                    ),
                )
            )
            results = []
            for _ in range(3):
                with anyio.fail_after(10):
                    results.append(await actor.ask(Compact("a" * 12, 1, window, "tokens"), 10))
            tg.cancel_scope.cancel()
    finally:
        endpoint.close()
    assert all(r.compaction is not None for r in results), "the offline summarizer took over"
    assert endpoint.connections == 1, "the failing model is not called again at once"


async def test_decisions_that_outweigh_the_budget_are_sent_newest_first_within_its_share(
    make_rig: RigFactory,
) -> None:
    """A helper's report: over a long session the decisions and paths a compaction keeps
    outgrew the budget themselves, so every request compacted again for a 2-5% gain and
    the request grew to twice the budget. The request now carries the newest of them
    within a quarter of the budget; the session file keeps them all."""
    rig: Rig = await make_rig(None, 100, 1000)
    for n in range(12):  # 10 decisions a turn: 120 in all outweigh 1,000 tokens
        decisions = " ".join(f"Decision: choice {n}.{d} of the triage agent." for d in range(10))
        await rig.turn(f"{decisions} {LONG} {LONG}")
    await rig.terminal.ask(RunCommand("resume", None))
    notices = rig.notices()
    assert not [n for n in notices if n.startswith("warning: the compacted conversation")]
    compactions = [n for n in notices if n.startswith("note: compacted")]
    after = [int(n.rsplit("-> ~", 1)[1].split()[0].replace(",", "")) for n in compactions]
    assert compactions and max(after) < 1000, compactions
    kept = parse_compaction(rig.saved()["compacted_history_summary"])
    assert kept is not None
    assert len(kept.retained.decisions) == 100  # the ten compacted turns' ten each
    assert "choice 0.0 of the triage agent" in kept.retained.decisions[0]
    await rig.terminal.tell(Detach("exit"))


async def test_a_run_of_messages_each_over_the_budget_keeps_the_request_from_growing(
    make_rig: RigFactory,
) -> None:
    rig: Rig = await make_rig(None, 100, 1000)
    huge = "word " * 1600  # about 2,000 tokens: over the budget alone
    covered, sizes = set(), []
    for n in range(8):
        await rig.turn(f"message {n} {huge}")
        saved = rig.saved()  # each compaction (one is told a run) is saved
        covered.add(compacted_turns(saved["compacted_history_summary"]))
        tail = orjson.dumps(saved["recent_messages"])
        sizes.append(estimate_tokens(len(saved["compacted_history_summary"] or "") + len(tail)))
    assert len(covered - {0}) >= 6, covered
    assert max(sizes) < 3 * estimate_tokens(len(huge)), sizes  # the newest turn, not all
    await rig.terminal.tell(Detach("exit"))


async def test_a_message_over_the_budget_alone_is_told_as_such_each_time(
    make_rig: RigFactory,
) -> None:
    """A helper's report: a 144 KB message was told as "the compacted conversation is
    still over the token budget ... /reset to start afresh", which /reset cannot help."""
    rig: Rig = await make_rig(None, 100, 1000)
    huge = "word " * 1600  # about 2,000 tokens
    for n in range(3):
        await rig.turn(f"message {n} {huge}")
    notices = rig.notices()
    alone = [n for n in notices if n.startswith("warning: this message (~2,0")]
    assert len(alone) == 3, notices
    assert alone[0].endswith("tokens) is over the 1,000-token budget; send a part or a file path")
    assert len(alone[0]) < 100
    assert not [n for n in notices if n.startswith("warning: the compacted conversation")]
    await rig.terminal.tell(Detach("exit"))


async def test_with_compaction_off_a_request_over_the_budget_is_told_once(
    make_rig: RigFactory,
) -> None:
    """A helper's find (H64): with compaction off the oldest turns are left out to hold the
    request's turns to the budget, but the turns kept and a long new message together
    went over it without a word (the warning came only after a compaction)."""
    rig: Rig = await make_rig(None, 0, 1000)
    for n in range(6):
        await rig.turn(f"turn {n} {LONG * 3}")  # about 190 tokens each: the tail fills up
    near = "word " * 700  # about 875 tokens: under the budget alone, over it with the tail
    for n in range(3):
        await rig.turn(f"long message {n} {near}")
    notices = rig.notices()
    over = [n for n in notices if n.startswith("warning: request over the token budget")]
    assert len(over) == 1, notices  # once, not each time: the request did not grow by half
    assert over[0].endswith("; compaction is off (/compact)")
    assert not [n for n in notices if "alone" in n or n.startswith("note: compacted")]
    await rig.terminal.tell(Detach("exit"))


async def test_the_offline_model_counts_the_turns_a_tail_held_to_the_budget_left_out(
    make_rig: RigFactory,
) -> None:
    """A helper's find (H69): with compaction off the offline model said "turn 9" of the
    tenth, eleventh and twelfth turns: it counted the prompts the request carried."""
    rig: Rig = await make_rig(None, 0, 1000)
    for n in range(1, 13):
        await rig.turn(f"turn {n} {LONG * 2}")
    replies = "".join(o.text for o in rig.seen if isinstance(o, ReplyText))
    assert replies.count("(turn ") == 12
    assert "(turn 12 of this conversation" in replies
    assert "(turn 9 of this conversation" in replies and replies.count("(turn 9 ") == 1
    await rig.terminal.tell(Detach("exit"))


async def test_a_message_waiting_for_a_slow_compaction_is_told_why(
    make_rig: RigFactory,
) -> None:
    """A helper's attack: a hung summary model held a message 16 s with no line."""
    summarizer = Gated()
    rig: Rig = await make_rig(summarizer, 100, 1000)
    await rig.turn(f"first {LONG * 10}")  # about 630 tokens
    await rig.terminal.tell(UserTurn(f"second {LONG * 10}"))  # over 1,000 with the first
    with anyio.fail_after(10):
        await summarizer.started.wait()
    note = await rig.next_of(Info)
    assert note.text.startswith("note: compacting to fit the token budget (waiting for the")
    summarizer.gate.set()
    assert (await rig.next_of(TurnEnded)).status == "ok"
    await rig.terminal.tell(Detach("exit"))


async def test_a_session_is_listed_with_a_summary_from_its_first_turn_in_a_burst_of_turns(
    make_rig: RigFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The summary a CompactionActor writes waits for a pause in the turns: during a piped
    burst a live session was listed with none. A session without one is written with the
    offline summary right after its first turn, whatever the summary model."""
    monkeypatch.setattr(compaction_actor, "SUMMARY_DELAY_S", 3600.0)  # no pause comes
    rig: Rig = await make_rig(None, 0)
    await rig.turn("Design a support-ticket triage agent for the help desk.")
    await rig.turn("Add an escalation rule.")  # taken after the first turn's bookkeeping
    assert "support-ticket triage agent" in rig.saved()["summary"]


async def test_a_checkpoint_in_a_burst_of_turns_keeps_a_summary_of_every_turn(
    make_rig: RigFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint taken during a burst kept the summary written after its first turn:
    restored, it told the model a summary of one turn out of fifteen (H64)."""
    monkeypatch.setattr(compaction_actor, "SUMMARY_DELAY_S", 3600.0)  # no pause comes
    rig: Rig = await make_rig(None, 0)
    await rig.turn("Design a support-ticket triage agent for the help desk.")
    await rig.turn("Store the tickets in db/tickets.sqlite from now on.")
    await rig.terminal.tell(RunCommand("save", None))
    assert "checkpoint 1" in (await rig.next_of(CommandOutput)).text
    (entry,) = (rig.project.parent / "checkpoints").glob("*/*.json")
    summary = orjson.loads(entry.read_bytes())["state"]["summary"]
    assert "db/tickets.sqlite" in summary and "triage agent" in summary


async def test_a_cancelled_slash_compact_is_not_kept_when_its_answer_comes_after_the_cancel(
    make_rig: RigFactory,
) -> None:
    """H85: the cancel's StopCompaction waited in the CompactionActor's mailbox (behind
    another terminal's exit asking a slow summary model), the summary answered meanwhile,
    and the compaction was kept and saved after the terminal had printed 'Compaction
    cancelled; nothing was changed.'"""
    summarizer = Gated()
    between = StopsAfterAnswers()
    rig: Rig = await make_rig(summarizer, 0, between=between)
    for _ in range(3):
        await rig.turn()
    await rig.terminal.tell(RunCommand("compact", None))
    with anyio.fail_after(10):
        await summarizer.started.wait()
    await rig.terminal.tell(CancelCurrentTurn())
    cancelled = await rig.next_of(CommandOutput)
    assert cancelled.text == "Compaction cancelled; nothing was changed."
    summarizer.gate.set()
    with anyio.fail_after(10):
        await between.answered.wait()  # the answer reached the terminal before the stop
    await rig.terminal.ask(RunCommand("resume", None))  # handled after the answer
    await rig.next_of(CommandOutput)
    assert rig.saved()["compacted_history_summary"] is None
    await rig.terminal.tell(RunCommand("compact", None))
    again = await rig.next_of(CommandOutput)
    assert again.text.startswith("Compacted turns 1-3: "), again.text
    await rig.terminal.tell(Detach("exit"))


async def test_a_budget_under_what_the_model_counts_besides_the_history_asks_no_summary_model(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A budget smaller than the base prompt and tools (as the model counts them): every
    request compacted the turn before it, the user waiting for the summary model each time,
    though no compaction could bring the request under the budget. The offline summarizer
    keeps it as small as it can be, at once."""
    policy = PersistPolicy(
        compaction=EventsCompactionConfig(100, 1, token_threshold=300, event_retention_size=2)
    )
    with local_models(monkeypatch) as server:
        server.report_usage = True  # the request's tokens, tool definitions included: ~600
        async with anyio.create_task_group() as tg:
            terminal, outputs, project = await summary_model_terminal(tg, tmp_path, 5.0, policy)
            rig = Rig(terminal, terminal, outputs, project, [])
            for n in range(1, 5):
                await rig.turn(f"question {n} about the triage agent's tools")
            tg.cancel_scope.cancel()
    asked = [
        r
        for r in server.requests
        if r["model"] == "summary-model" and "You compact" in orjson.dumps(r).decode()
    ]
    assert not asked, len(asked)
    assert compacted_turns(rig.saved()["compacted_history_summary"]) == 3, rig.notices()


async def test_a_message_over_the_budget_does_not_wait_for_a_slow_summary_model_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summary model slow to answer the compaction in the background: a message over the
    budget asked it again and waited (up to 15 s each time it was slow). The compaction
    that supersedes the one in flight is the offline summarizer's, at once."""
    policy = PersistPolicy(
        compaction=EventsCompactionConfig(1, 0, token_threshold=1000, event_retention_size=2)
    )
    with local_models(monkeypatch) as server:
        server.summary_delay = 120  # released at the end
        async with anyio.create_task_group() as tg:
            terminal, outputs, project = await summary_model_terminal(tg, tmp_path, 60.0, policy)
            rig = Rig(terminal, terminal, outputs, project, [])
            await rig.turn(f"first {LONG * 10}")  # its compaction waits for the summary model
            await rig.turn(f"second {LONG * 10}")  # over 1,000 tokens with the first
            assert rig.saved()["compacted_history_summary"].startswith(
                "Conversation so far (turns 1-1"
            )
            server.released.set()
            tg.cancel_scope.cancel()
    assert not [n for n in rig.notices() if "waiting for the summary model" in n]


async def test_a_big_message_after_a_whole_compact_leaves_the_turn_sent_again_out(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After /compact the request carries the last turn again; a big message (under the
    budget alone) then made the request go over the token budget with it, silently."""
    policy = PersistPolicy(compaction=EventsCompactionConfig(0, 0, token_threshold=1000))
    with local_models(monkeypatch) as server:
        async with anyio.create_task_group() as tg:
            terminal, outputs, project = await summary_model_terminal(tg, tmp_path, 5.0, policy)
            rig = Rig(terminal, terminal, outputs, project, [])
            for n in range(1, 4):
                await rig.turn(f"question {n} " + "about the triage agent's tools " * 13)
            await terminal.tell(RunCommand("compact", None))
            assert (await rig.next_of(CommandOutput)).text.startswith("Compacted turns 1-3")
            summary = rig.saved()["compacted_history_summary"]
            assert summary.endswith("Turn 3, the last of these, follows again word for word.")
            # over the budget with the turn sent again (about 860 characters), under it without
            big = "word " * ((4 * 1000 - len(summary) - 430) // 5)
            await rig.turn(big)
            tg.cancel_scope.cancel()
    last = [r for r in server.requests if r["model"] == "test-model"][-1]
    body = orjson.dumps(last).decode()
    assert big.strip() in body
    assert "follows again" not in body and "echo: question 3" not in body
    assert not [n for n in rig.notices() if "budget" in n], rig.notices()


def _wordy_summary_model() -> LlmEventSummarizer:
    """A summary model whose every summary is as long as the conversation allows (one
    character shorter than what it was sent): a summary, but no smaller request. (Ten
    shorter was a smaller request once the estimate counted the wire's escapes of the
    replies' quotes, H153.)"""

    def wordy(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        request = messages[-1]
        assert isinstance(request, ModelRequest)
        (prompt,) = [str(p.content) for p in request.parts if isinstance(p, UserPromptPart)]
        sent = len(prompt) - len(DEFAULT_PROMPT_TEMPLATE) + len(PLACEHOLDER)
        length = min(sent - 1, MAX_LLM_NARRATIVE_CHARS)
        words = "The user and the assistant talked over the agent's design at length. "
        return ModelResponse(parts=[TextPart((words * 40)[:length].strip())])

    return LlmEventSummarizer(FunctionModel(wordy))


async def test_a_summary_model_too_wordy_to_shrink_the_request_falls_back_to_offline(
    make_rig: RigFactory,
) -> None:
    """Item 1 of H131: a summary model's summary that would not make the next request smaller
    was counted a failure and backed off (``interval * 2**failures`` turns), the window
    left uncompacted while requests grew. The offline summarizer's compaction of the same
    window is kept instead, and the user is told once, in one short line."""
    rig: Rig = await make_rig(_wordy_summary_model(), 2)
    await rig.turn()
    await rig.turn()
    while not (await rig.next_of(Info)).text.startswith("note: compacted"):
        pass  # the compaction of turns 1-2, in the background
    assert rig.notices()[-1].startswith("note: compacted turns 1-2"), rig.notices()
    assert rig.saved()["compacted_history_summary"].startswith("Conversation so far (turns 1-2")
    warnings = [n for n in rig.notices() if n.startswith("warning:")]
    assert len(warnings) == 1 and "too long" in warnings[0], warnings
    assert len(warnings[0]) <= 100, warnings[0]
    await rig.terminal.tell(Detach("exit"))
