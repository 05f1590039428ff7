"""CompactionActor: asks are answered at once; told requests of a burst make one summary."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, NamedTuple

import anyio
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream
from pydantic_ai.exceptions import (
    ModelConnectionError,
    ModelHTTPError,
    ModelRateLimitError,
    ModelRequestRejectedError,
    ModelServerError,
    ModelTimeoutError,
    ModelUnavailableError,
    UnexpectedModelBehavior,
)

from actors.base import ActorRef, open_mailbox, run_supervised
from actors.compaction import (
    LLM_BLIP_RETRY_S,
    STOPPED_LINE,
    SUMMARY_DELAY_S,
    CompactionActor,
    failure_reason,
    offline_for,
)
from actors.messages import Compact, Compacted, StopCompaction, Summarize, SummaryReady
from session.compaction import (
    BaseEventsSummarizer,
    Event,
    EventsCompactionConfig,
    Window,
    events_from_messages,
    sliding_window,
)
from session.summary import offline_summary
from tests.conversations import conversation, turn
from tests.e2e.harness import wait_for
from tests.e2e.openai_server import ChatServer
from tests.workers import SUMMARY_MODEL, local_models

pytestmark = pytest.mark.anyio


async def test_an_ask_is_answered_at_once_and_a_burst_makes_one_summary(
    no_blocking: None,
) -> None:
    async with anyio.create_task_group() as tg:
        compaction: ActorRef[Any] = await tg.start(
            partial(run_supervised, "compaction", lambda ref: CompactionActor(ref))
        )
        summary = await compaction.ask(
            Summarize("aaaaaaaaaaaa", tuple(turn(0)), (), None), timeout=1
        )
        assert summary is not None and 'first: "question 0"' in summary

        terminal: ActorRef[Any]
        terminal, inbox = open_mailbox("terminal")
        for n in range(1, 4):
            await compaction.tell(
                Summarize("aaaaaaaaaaaa", tuple(conversation(*([0] * n))), (), None, terminal)
            )
        with anyio.fail_after(SUMMARY_DELAY_S + 5):
            envelope = await inbox.receive()
        ready = envelope.message
        assert isinstance(ready, SummaryReady)
        assert ready.summary.startswith("3 recent requests;"), "the latest request wins"
        with anyio.move_on_after(SUMMARY_DELAY_S + 0.5):
            await inbox.receive()
            pytest.fail("a burst must make one summary")
        tg.cancel_scope.cancel()


class Hangs(BaseEventsSummarizer):
    """A summarizer that never answers: ``started`` once asked, ``cancelled`` once stopped."""

    def __init__(self) -> None:
        self.started, self.cancelled = anyio.Event(), anyio.Event()

    async def summarize_events(self, events: Sequence[Event]) -> Event | None:
        self.started.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.cancelled.set()
        return None


def a_window() -> Window:
    events = events_from_messages(conversation(0, 1, 2, 3), 1)
    window = sliding_window(events, EventsCompactionConfig(2, 0, None))
    assert window is not None
    return window


async def test_a_compaction_cut_by_a_crash_of_the_actor_is_told_as_failed(
    no_blocking: None,
) -> None:
    """The session waited for good: no other compaction starts while one is in flight."""
    hangs = Hangs()

    class Crashes(CompactionActor):
        async def handle(self, message: Any) -> Any:
            if message == "crash":
                raise RuntimeError("a bug in the actor")
            return await super().handle(message)

    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    async with anyio.create_task_group() as tg:
        compaction: ActorRef[Any] = await tg.start(
            partial(run_supervised, "compaction", lambda ref: Crashes(ref, summarizer=hangs))
        )
        await compaction.tell(Compact("aaaaaaaaaaaa", 1, a_window(), "window", terminal))
        with anyio.fail_after(5):
            await hangs.started.wait()
        await compaction.tell("crash")
        with anyio.fail_after(5):
            told = (await inbox.receive()).message
        assert isinstance(told, Compacted)
        assert (told.session_id, told.generation, told.compaction) == ("aaaaaaaaaaaa", 1, None)
        assert told.error == STOPPED_LINE
        tg.cancel_scope.cancel()


async def test_a_stopped_compaction_is_cancelled_and_never_answered(
    no_blocking: None,
) -> None:
    """The user cancelled the wait for it (Ctrl+C): the summary model's request is
    abandoned, not left to run out its 15 s, and nothing is told."""
    hangs = Hangs()
    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    async with anyio.create_task_group() as tg:
        make = partial(CompactionActor, summarizer=hangs)
        compaction: ActorRef[Any] = await tg.start(partial(run_supervised, "compaction", make))
        request = Compact("aaaaaaaaaaaa", 1, a_window(), "command", terminal)
        await compaction.tell(request)
        with anyio.fail_after(5):
            await hangs.started.wait()
        await compaction.tell(StopCompaction(request))
        with anyio.fail_after(5):
            await hangs.cancelled.wait()
        with anyio.move_on_after(0.5):
            told = await inbox.receive()
            pytest.fail(f"a stopped compaction told {told.message}")
        tg.cancel_scope.cancel()


async def test_an_ask_waiting_for_the_summary_model_does_not_hold_up_the_mailbox(
    no_blocking: None,
) -> None:
    """H85: another terminal's exit asked the hung summary model (its compaction, its
    summary: up to 30 s, though the exit gives up after 10 s) in the mailbox, and every
    message behind it waited: a /compact's Ctrl+C (its StopCompaction), and every other
    terminal's compactions, whose "up to 15 s" took 28."""
    hangs = Hangs()
    terminal: ActorRef[Any]
    terminal, _inbox = open_mailbox("terminal")
    async with anyio.create_task_group() as tg:
        make = partial(CompactionActor, summarizer=hangs)
        compaction: ActorRef[Any] = await tg.start(partial(run_supervised, "compaction", make))
        exit_ask = Compact("bbbbbbbbbbbb", 1, a_window(), "window")
        tg.start_soon(partial(compaction.ask, exit_ask, timeout=30))
        with anyio.fail_after(5):
            await hangs.started.wait()  # the other terminal's ask waits for the model
        hangs.started = anyio.Event()
        request = Compact("aaaaaaaaaaaa", 1, a_window(), "command", terminal)
        await compaction.tell(request)
        with anyio.fail_after(5):
            await hangs.started.wait()  # this terminal's /compact waits for it too
        await compaction.tell(StopCompaction(request))
        with anyio.fail_after(5):
            await hangs.cancelled.wait()
        tg.cancel_scope.cancel()


async def test_a_hung_summary_model_is_asked_one_summary_at_a_time_per_session(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A helper's attack: with a hung summary model, each turn's summary started one more
    request beside the hung ones (a dozen at once). The newest waits for the one running,
    and runs after it (here offline: the model failed meanwhile)."""
    import pydantic_ai.models

    from actors.messages import SummarizeDue

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as server:
        server.hang_summaries = True
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        async with anyio.create_task_group() as tg:
            make = partial(CompactionActor, summary_model="openai-chat:summary-model")
            compaction: ActorRef[Any] = await tg.start(
                partial(run_supervised, "compaction", make)
            )
            terminal: ActorRef[Any]
            terminal, inbox = open_mailbox("terminal")
            for n in range(1, 4):  # three turns' requests, each due at once
                messages = tuple(conversation(*([0] * n)))
                await compaction.tell(Summarize("aaaaaaaaaaaa", messages, (), None, terminal))
                await compaction.tell(SummarizeDue("aaaaaaaaaaaa"))
                if n == 1:  # the first is at the model, hung
                    await anyio.to_thread.run_sync(
                        lambda: wait_for(lambda: server.requests, what="the summary request")
                    )
            server.released.set()  # the hung request fails: the offline summarizer answers
            with anyio.fail_after(10):
                answers = [(await inbox.receive()).message for _ in range(2)]
            assert [a.summary.split(";")[0] for a in answers] == [
                "1 recent request",
                "3 recent requests",
            ]
            asked = {str(r["messages"]) for r in server.requests}  # the client retries each
            assert len(asked) == 1, "the second and third waited; the third ran, offline"
            tg.cancel_scope.cancel()


async def test_summaries_asked_at_once_take_a_few_of_the_summary_models_slots(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every terminal leaving at once (a logout, ``supervisor stop``) asked the summary
    model one summary each, hundreds of requests at once. A few at a time are asked; an
    exit's ask that finds no slot free within its wait is answered by the offline
    summarizer (its asker gives up after 10 s)."""
    import pydantic_ai.models


    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as server:
        server.hang_summaries = True
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        conversations = {n: tuple(conversation(*([0] * n))) for n in range(1, 7)}
        send, answers = anyio.create_memory_object_stream[tuple[int, Any]](6)

        async def leave(compaction: ActorRef[Any], n: int) -> None:
            request = Summarize(f"{n:012x}", conversations[n], (), None)
            await send.send((n, await compaction.ask(request, timeout=30)))

        async with anyio.create_task_group() as tg:
            make = partial(
                CompactionActor, summary_model="openai-chat:summary-model", summary_slots=(2, 0.5)
            )
            compaction: ActorRef[Any] = await tg.start(
                partial(run_supervised, "compaction", make)
            )
            for n in conversations:  # six terminals leaving together
                tg.start_soon(leave, compaction, n)
            with anyio.fail_after(30):
                offline = [await answers.receive() for _ in range(4)]
            for n, summary in offline:  # the four that found no slot free
                assert summary == offline_summary(conversations[n], (), None)
            asked = {str(r["messages"]) for r in server.requests}  # the client retries each
            assert len(asked) == 2, "two slots: two summaries at the model (hung)"
            server.released.set()
            tg.cancel_scope.cancel()


async def test_compacting_a_window_of_long_turns_leaves_the_event_loop_free(
    no_blocking: None,
) -> None:
    """A helper's attack (H78): resuming a session of long turns compacted them for seconds
    on the supervisor's event loop, and every other terminal (its replies, `supervisor
    status`) waited that long. The offline summarizer and the extraction of what the
    compaction keeps run off the loop."""
    sentence = "We decided the triage agent must always route billing tickets to Kim. "
    long_reply = sentence * 1_500  # about 100 KB of prose, as a pasted document or a report
    messages = [m for index in range(30) for m in turn(index, text=long_reply)]
    window = sliding_window(events_from_messages(messages, 1), EventsCompactionConfig(30, 0, None))
    assert window is not None
    async with anyio.create_task_group() as tg:
        compaction: ActorRef[Any] = await tg.start(
            partial(run_supervised, "compaction", lambda ref: CompactionActor(ref))
        )
        with anyio.fail_after(60):
            answer = await compaction.ask(Compact("aaaaaaaaaaaa", 1, window, "tokens"))
        assert isinstance(answer, Compacted) and answer.compaction is not None
        assert answer.compaction.end_invocation == 30
        tg.cancel_scope.cancel()


async def test_a_failed_summary_models_warning_shows_no_password_of_its_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A helper's find (H78): `warning: the summary model openai-chat:NAME at URL failed`
    printed OPENAI_BASE_URL as it was, `http://user:PASSWORD@host/v1` included, on every
    terminal of the supervisor."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://deploy:Hunter2Secret9@127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    events = events_from_messages(conversation(0, 1, 2, 3), 1)
    window = sliding_window(events, EventsCompactionConfig(2, 0, None))
    assert window is not None
    async with anyio.create_task_group() as tg:
        make = partial(CompactionActor, summary_model="openai-chat:summary-model")
        compaction: ActorRef[Any] = await tg.start(partial(run_supervised, "compaction", make))
        with anyio.fail_after(30):
            answer = await compaction.ask(Compact("aaaaaaaaaaaa", 1, window, "command"))
        assert isinstance(answer, Compacted) and answer.offline_because is not None
        assert "at http://deploy:[REDACTED]@127.0.0.1:9/v1 failed" in answer.offline_because
        assert "Hunter2Secret9" not in answer.offline_because
        tg.cancel_scope.cancel()


async def test_a_failed_summary_models_warning_shows_no_head_of_a_known_secret_at_its_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """H188's leftover: the summary model's error was cut to 200 characters before the
    session's known secrets were replaced, so a value at the cut kept its head in the
    warning every terminal of the supervisor shows."""
    import pydantic_ai.models


    value = "Zq9Xv7Lm2Pk4QwRt8Yu3"
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as server:
        server.summary_error = "y" * 160 + f" {value} end"
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        events = events_from_messages(conversation(0, 1, 2, 3), 1)
        window = sliding_window(events, EventsCompactionConfig(2, 0, None))
        assert window is not None
        async with anyio.create_task_group() as tg:
            make = partial(CompactionActor, summary_model="openai-chat:summary-model")
            compaction: ActorRef[Any] = await tg.start(partial(run_supervised, "compaction", make))
            with anyio.fail_after(30):
                answer = await compaction.ask(
                    Compact("aaaaaaaaaaaa", 1, window, "command", secrets=(value,))
                )
            tg.cancel_scope.cancel()
    assert isinstance(answer, Compacted) and answer.offline_because is not None
    assert "y" * 150 in answer.offline_because  # the error is quoted up to its cut
    assert value[:4] not in answer.offline_because, answer.offline_because


@pytest.mark.parametrize(
    ("failure", "told"),
    [
        (
            UnexpectedModelBehavior("Exceeded maximum output retries (1)"),
            "its answer was empty or could not be used",
        ),
        (TimeoutError(), "TimeoutError: no answer in time"),
        (RuntimeError("the  summary\nmodel  is down"), "RuntimeError: the summary model is down"),
        (RuntimeError(), "RuntimeError"),
    ],
)
def test_why_the_summary_model_failed_is_said_in_a_users_words(
    failure: BaseException, told: str
) -> None:
    """A helper's find (H88): a summary model's empty answer was told as
    "UnexpectedModelBehavior: Exceeded maximum output retries (1)"."""
    assert failure_reason(failure) == told


async def test_a_summary_no_shorter_than_a_short_conversation_is_not_a_failure_of_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A conversation of a few words gets the offline summary in place of a model's answer
    longer than it, but the model is not taken for failed: no warning for the terminals,
    and the next summary asks it again."""
    import pydantic_ai.models


    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as server:
        server.summary_answer = "The user said hi and the assistant echoed it back to them."
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        short = tuple(turn(1, text="hi"))
        async with anyio.create_task_group() as tg:
            make = partial(CompactionActor, summary_model="openai-chat:summary-model")
            compaction: ActorRef[Any] = await tg.start(
                partial(run_supervised, "compaction", make)
            )
            with anyio.fail_after(30):
                first = await compaction.ask(Summarize("aaaaaaaaaaaa", short, (), None))
                again = await compaction.ask(Summarize("aaaaaaaaaaaa", short, (), None))
            assert first == again == offline_summary(short, (), None)
            assert len([r for r in server.requests if r["model"] == "summary-model"]) == 2
            tg.cancel_scope.cancel()


async def test_a_runaway_summary_is_not_taken_for_a_summary_model_down(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A reported defect (H150): an answer over MAX_LLM_NARRATIVE_CHARS (RunawaySummary)
    turned summaries offline for minutes, as if the model were down. The offline summary
    stands in for that window, one warning says why, and the model is asked again."""
    import pydantic_ai.models

    from actors.compaction import TOO_LONG_BECAUSE
    from session.compaction import MAX_LLM_NARRATIVE_CHARS

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    events = events_from_messages(conversation(0, 1, 2, 3), 1)
    window = sliding_window(events, EventsCompactionConfig(2, 0, None))
    assert window is not None
    turns = tuple(turn(1, text="hi"))
    with ChatServer() as server:
        server.summary_answer = "The user talks on and on. " * (MAX_LLM_NARRATIVE_CHARS // 20)
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        async with anyio.create_task_group() as tg:
            make = partial(CompactionActor, summary_model="openai-chat:summary-model")
            compaction: ActorRef[Any] = await tg.start(
                partial(run_supervised, "compaction", make)
            )
            with anyio.fail_after(30):
                compacted = [
                    await compaction.ask(Compact("aaaaaaaaaaaa", 1, window, "command"))
                    for _ in range(2)
                ]
                summaries = [
                    await compaction.ask(Summarize("aaaaaaaaaaaa", turns, (), None))
                    for _ in range(2)
                ]
                terminal: ActorRef[Any]
                terminal, inbox = open_mailbox("terminal")
                await compaction.tell(Summarize("aaaaaaaaaaaa", turns, (), None, terminal))
                ready = (await inbox.receive()).message
            # told as the compactions' are (H177): a summary not used said nothing, and the
            # terminal took that for the model's writing again, and warned a second time
            assert isinstance(ready, SummaryReady) and ready.offline_because == TOO_LONG_BECAUSE
            for answer in compacted:
                assert isinstance(answer, Compacted) and answer.compaction is not None
                # told why (H177), and not as a summary model down: asked again below
                assert answer.offline and answer.offline_because == TOO_LONG_BECAUSE
            assert summaries == [offline_summary(turns, (), None)] * 2
            assert len([r for r in server.requests if r["model"] == "summary-model"]) == 5
            tg.cancel_scope.cancel()
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert len(warned) == 5 and all("over the cap of 1,800" in w for w in warned), warned


async def test_a_summary_model_echoing_a_known_secret_has_it_replaced_in_its_summaries(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An attack (H156): a summary model that echoes the API key it was called with (a
    value the session knows secret, which no pattern takes for one) had it kept in the
    compaction's narrative, sent in clear in every next request of the chat model, and in
    the session summary: only the file's copy was scrubbed."""
    import pydantic_ai.models


    key = "plainlocalkeyvalue77"
    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as server:
        server.summary_answer = f"The user asked four questions, logged in with {key}."
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        turns = tuple(conversation(0, 1, 2, 3))
        async with anyio.create_task_group() as tg:
            make = partial(CompactionActor, summary_model="openai-chat:summary-model")
            compaction: ActorRef[Any] = await tg.start(
                partial(run_supervised, "compaction", make)
            )
            with anyio.fail_after(30):
                compacted = await compaction.ask(
                    Compact("aaaaaaaaaaaa", 1, a_window(), "command", secrets=(key,))
                )
                summary = await compaction.ask(
                    Summarize("aaaaaaaaaaaa", turns, (), None, secrets=(key,))
                )
            tg.cancel_scope.cancel()
    assert isinstance(compacted, Compacted) and compacted.compaction is not None
    assert not compacted.offline, "the model's summary is kept, without the key"
    assert "logged in with [REDACTED]" in compacted.compaction.compacted_content
    assert summary is not None and "logged in with [REDACTED]" in summary


async def test_a_rate_limited_summary_model_is_told_as_rate_limited(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An attack (H156): the HTTP client waited the 429's ``Retry-After`` (20 s) to ask
    again, past the wait of ``/compact`` (15 s): the user waited it out and was told the
    model gave "no answer in time", though it had answered at once that it was rate
    limited. The summary model is asked once; its answer is the reason told."""
    import pydantic_ai.models


    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as server:
        server.rate_limit_summaries = True
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        async with anyio.create_task_group() as tg:
            make = partial(
                CompactionActor, summary_model="openai-chat:summary-model", llm_timeouts=(5, 5)
            )
            compaction: ActorRef[Any] = await tg.start(
                partial(run_supervised, "compaction", make)
            )
            with anyio.fail_after(30):
                compacted = await compaction.ask(Compact("aaaaaaaaaaaa", 1, a_window(), "command"))
            tg.cancel_scope.cancel()
    assert isinstance(compacted, Compacted) and compacted.compaction is not None
    assert compacted.offline and compacted.offline_because is not None
    assert "429 from summary-model: Rate limit reached" in compacted.offline_because
    assert len([r for r in server.requests if r["model"] == "summary-model"]) == 1


@pytest.mark.parametrize(
    ("failure", "offline_s"),
    [
        (ModelHTTPError.for_category(ModelServerError, status_code=500, model_name="m"), 30.0),
        (ModelHTTPError.for_category(ModelUnavailableError, status_code=503, model_name="m"), 30.0),
        (ModelConnectionError("m", "connection reset"), 30.0),
        (ModelTimeoutError("m", "read timed out"), 300.0),
        (ModelHTTPError.for_category(ModelRateLimitError, status_code=429, model_name="m"), 300.0),
        (
            ModelHTTPError.for_category(ModelRequestRejectedError, status_code=401, model_name="m"),
            300.0,
        ),
        (ModelHTTPError(400, "m"), 300.0),
        (TimeoutError(), 300.0),
        (UnexpectedModelBehavior("empty"), 300.0),
    ],
)
def test_how_long_offline_summaries_stand_in_depends_on_how_the_model_failed(
    failure: BaseException, offline_s: float
) -> None:
    """A blip (5xx, unavailable, the connection lost) costs half a minute of offline
    summaries; a model that is down, refuses, or rate limits costs five."""
    assert offline_for(failure) == offline_s


async def test_a_summary_model_blip_is_told_as_a_short_stand_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A review of H156 (its HTTP client asked no more): one 500 of the summary model put
    the offline summarizer in its place for five minutes. The client asks again twice; a
    model that still fails is stood in for half a minute, said as such (H176: it was said
    as ``1 min``, twice what it was)."""
    import pydantic_ai.models


    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    with ChatServer() as server:
        server.server_error_summaries = True
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
        async with anyio.create_task_group() as tg:
            make = partial(
                CompactionActor, summary_model="openai-chat:summary-model", llm_timeouts=(5, 5)
            )
            compaction: ActorRef[Any] = await tg.start(
                partial(run_supervised, "compaction", make)
            )
            with anyio.fail_after(30):
                compacted = await compaction.ask(Compact("aaaaaaaaaaaa", 1, a_window(), "command"))
            tg.cancel_scope.cancel()
    assert isinstance(compacted, Compacted) and compacted.offline
    assert compacted.offline_because is not None
    said = re.search(r"offline summaries for (\d+) s$", compacted.offline_because)
    assert said is not None, compacted.offline_because
    assert 0 < int(said.group(1)) <= LLM_BLIP_RETRY_S
    assert len([r for r in server.requests if r["model"] == "summary-model"]) == 3


def long_window(sentence: str, turns: int = 4) -> Window:
    """A window of ``turns`` turns of about 6,000 characters each."""
    messages = [m for index in range(turns) for m in turn(index, text=sentence * 100)]
    window = sliding_window(
        events_from_messages(messages, 1), EventsCompactionConfig(turns, 0, None)
    )
    assert window is not None
    return window


async def compact_with_summary_model(
    monkeypatch: pytest.MonkeyPatch, server: Any, *windows: Window
) -> list[Compacted]:
    """Each window compacted in turn by a CompactionActor whose summary model is
    ``server``'s ``summary-model``."""
    import pydantic_ai.models

    monkeypatch.setattr(pydantic_ai.models, "ALLOW_MODEL_REQUESTS", True)  # a local server
    monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key-0000")
    answers = []
    async with anyio.create_task_group() as tg:
        make = partial(
            CompactionActor, summary_model="openai-chat:summary-model", llm_timeouts=(20, 20)
        )
        compaction: ActorRef[Any] = await tg.start(partial(run_supervised, "compaction", make))
        for window in windows:
            with anyio.fail_after(60):
                answers.append(await compaction.ask(Compact("aaaaaaaaaaaa", 1, window, "command")))
        tg.cancel_scope.cancel()
    return answers


def summary_sizes(server: Any) -> list[int]:
    return [
        size
        for body, size in zip(server.requests, server.body_bytes, strict=True)
        if body["model"] == "summary-model"
    ]


async def test_a_summary_model_refusing_the_retry_too_is_held_smaller_and_not_taken_for_down(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """H177's lesson taught from the first refusal only: a summary model whose window (not
    stated) is under three quarters of the first request refused the retry too, and was
    then taken for down (the offline summarizer for five minutes). Each refusal teaches,
    and the model is asked within what the last one taught."""

    window = long_window("The triage agent routes billing tickets to the finance queue. ")
    with ChatServer() as server:
        server.summary_window = 16_000
        server.summary_window_stated = False
        first, second = await compact_with_summary_model(monkeypatch, server, window, window)
    assert not first.offline, first.offline_because
    assert first.offline_because is None and second.offline_because is None
    sizes = summary_sizes(server)
    assert sizes[0] > sizes[1] > 16_000 >= sizes[2], sizes
    assert sizes[3] <= 16_000, "the next compaction is asked within the lesson at once"


async def test_a_summary_models_window_is_learned_as_the_wire_carries_the_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The lesson was taken in the prompt's characters and applied as the wire's bytes:
    a conversation in Cyrillic (two bytes a character) was held to three eighths of the
    refused request, not three quarters."""

    window = long_window("Агент сортировки направляет счета в финансовую очередь. ")
    with ChatServer() as server:
        server.summary_window = 20_000
        server.summary_window_stated = False
        (answer,) = await compact_with_summary_model(monkeypatch, server, window)
    assert not answer.offline, answer.offline_because
    refused, retried = summary_sizes(server)[:2]
    assert retried > refused * 6 // 10, (refused, retried)


class HangingSummaries(NamedTuple):
    compaction: ActorRef[Any]
    terminal: ActorRef[Any]
    inbox: MemoryObjectReceiveStream[Any]
    server: Any

    def summary_requests(self) -> int:
        return sum(1 for r in self.server.requests if r["model"] == "summary-model")


@asynccontextmanager
async def hanging_summary_model(
    monkeypatch: pytest.MonkeyPatch, **options: Any
) -> AsyncIterator[HangingSummaries]:
    """A CompactionActor (``options`` its own) whose summary model, a local server, hangs
    until the block ends, and a terminal's mailbox to answer to."""

    terminal: ActorRef[Any]
    terminal, inbox = open_mailbox("terminal")
    with local_models(monkeypatch) as server:
        server.hang_summaries = True
        try:
            async with anyio.create_task_group() as tg:
                compaction: ActorRef[Any] = await tg.start(
                    partial(
                        run_supervised,
                        "compaction",
                        lambda ref: CompactionActor(ref, summary_model=SUMMARY_MODEL, **options),
                    )
                )
                yield HangingSummaries(compaction, terminal, inbox, server)
                tg.cancel_scope.cancel()
        finally:
            server.released.set()


async def test_one_sessions_compactions_ask_a_hanging_summary_model_one_at_a_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """H189: a hanging summary model in a fast piped run had 8 requests open at once for
    17 s: each new window's compaction asked again while the one before it (superseded
    by the token budget, not ended) still waited. The second waits for the first; the
    first timing out takes the model down, and the second is written offline."""

    later = sliding_window(
        events_from_messages(conversation(0, 1, 2, 3, 4, 5), 1), EventsCompactionConfig(4, 0)
    )
    assert later is not None
    async with hanging_summary_model(monkeypatch, llm_timeouts=(1.0, 1.0)) as hanging:
        for window in (a_window(), later):
            await hanging.compaction.tell(
                Compact("aaaaaaaaaaaa", 1, window, "window", hanging.terminal, SUMMARY_MODEL)
            )
        with anyio.fail_after(20):
            answers = [(await hanging.inbox.receive()).message for _ in range(2)]
    assert all(isinstance(a, Compacted) and a.compaction is not None for a in answers)
    assert hanging.summary_requests() == 1


async def test_the_exits_summary_waits_for_its_sessions_hanging_compaction_not_beside_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One request of a session's open at a time, its summary's too: the exit's summary,
    asked while the session's compaction waits for a hanging summary model, is written
    offline when its wait is over, without a second hanging request."""

    async with hanging_summary_model(
        monkeypatch, llm_timeouts=(3.0, 3.0), summary_slots=(4, 0.5)
    ) as hanging:
        await hanging.compaction.tell(
            Compact("aaaaaaaaaaaa", 1, a_window(), "window", hanging.terminal, SUMMARY_MODEL)
        )
        asked = Summarize("aaaaaaaaaaaa", tuple(turn(0)), (), None)
        summary = await hanging.compaction.ask(asked, timeout=10)
        assert summary is not None and 'first: "question 0"' in summary
        with anyio.fail_after(20):
            answer = (await hanging.inbox.receive()).message
    assert isinstance(answer, Compacted)
    assert hanging.summary_requests() == 1


FIRST_SUMMARY_IN_A_FRESH_PROCESS = """
import json, os, sys
from functools import partial
import anyio
import pydantic_ai.models
from actors.base import run_supervised
from actors.compaction import CompactionActor
from actors.messages import Summarize
from tests.conftest import blocking_calls
from tests.conversations import conversation
from tests.e2e.openai_server import ChatServer

async def main() -> None:
    unloaded = "pydantic_ai.models.openai" not in sys.modules
    async with anyio.create_task_group() as tg:
        make = partial(CompactionActor, summary_model="openai-chat:summary-model")
        compaction = await tg.start(partial(run_supervised, "compaction", make))
        async with blocking_calls() as blocked:
            await anyio.lowlevel.checkpoint()
            summary = await compaction.ask(
                Summarize("aaaaaaaaaaaa", tuple(conversation(0)), (), None), timeout=60
            )
        tg.cancel_scope.cancel()
    print(json.dumps({"unloaded": unloaded, "summary": summary, "blocked": blocked}))

pydantic_ai.models.ALLOW_MODEL_REQUESTS = True  # the local server
with ChatServer() as server:
    os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test-not-a-real-key")
    anyio.run(main)
"""


def test_the_first_summary_of_a_chat_model_builds_its_client_off_the_loop() -> None:
    """The guard's finding: the summary model's client was built on the loop at its first
    summary, importing the OpenAI SDK there (0.7 s of CPU, every terminal stalled) unless
    a turn's agent had imported it first. It is built in a worker thread, as the
    LLMActor's agent is. (A fresh interpreter: this one may have imported it already.)"""
    import json
    import subprocess
    import sys
    from pathlib import Path

    done = subprocess.run(
        [sys.executable, "-c", FIRST_SUMMARY_IN_A_FRESH_PROCESS],
        capture_output=True, check=True, timeout=120, cwd=Path(__file__).parent.parent,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["unloaded"], "the SDK was imported before the first summary"
    assert result["summary"]
    assert result["blocked"] == []
