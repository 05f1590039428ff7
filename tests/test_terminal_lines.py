"""The one-line texts of the terminal: tool calls, endpoint failures, models, offers, Markdown."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_ai.exceptions import (
    ContentFilterError,
    IncompleteToolCall,
    ModelAPIError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    OutputTokenLimitExceeded,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)

from actors.messages import Compacted
from actors.terminal import compacted_at_resume_line
from actors.turn_lines import (
    TURNS_LEFT_OUT_LINE,
    UNFINISHED_STREAM,
    describe_tool_call,
    explain_failure,
    over_budget_line,
    over_budget_uncompacted_line,
    stated_context_window,
)
from cli.render import ReflowedRegion, stable_prefix
from cli.resume_offer import offer_text
from cli.summaries import summary_headline
from session.compaction import EventCompaction
from session.lifecycle import KeepOriginal
from session.model_names import check_model, model_problem

URL = "http://127.0.0.1:8000/v1"


@pytest.fixture(autouse=True)
def _endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", URL)


def test_a_write_is_described_by_path_and_size() -> None:
    line = describe_tool_call("write_file", {"path": "agent_spec.md", "content": "x" * 1229})
    assert line == "write_file agent_spec.md (1.2 KB)"


def test_other_tools_are_described_by_their_argument() -> None:
    assert describe_tool_call("read_file", {"path": "notes.md"}) == "read_file notes.md"
    assert describe_tool_call("list_files", {}) == "list_files ."
    assert describe_tool_call("record_decision", {"decision": "Use  a\nsmall model"}) == (
        'record_decision "Use a small model"'
    )


def test_a_tool_line_is_one_line_whatever_the_model_put_in_its_arguments() -> None:
    """A helper's find (H50): a newline in a path printed a forged `error: 401 ...` line,
    a 6,000-character path was shown whole, a tool with no name was a bare `   a=1`."""
    forged = "notes.md\nerror: 401 from https://api.openai.com/v1: check OPENAI_API_KEY"
    line = describe_tool_call("write_file", {"path": forged, "content": "z"})
    assert "\n" not in line and line.startswith("write_file notes.md\\nerror: 401")
    assert describe_tool_call("read_file", {"path": "a\x1b[31mred.md"}) == (
        "read_file a\\x1b[31mred.md"
    )
    assert len(describe_tool_call("read_file", {"path": "p/" * 3000})) < 140
    assert describe_tool_call("", {"a": 1}) == "(a tool with no name) a=1"


def test_a_401_says_which_key_to_check_and_how_to_restart() -> None:
    exc = ModelHTTPError(401, "m", body={"error": "bad key"})
    assert explain_failure(exc, "openai-chat:m") == (
        f"401 from {URL}: check OPENAI_API_KEY. The supervisor uses the environment it was "
        "started with; run agent-assist supervisor stop after changing it"
    )


@pytest.mark.parametrize(
    ("status", "body", "line"),
    [
        (
            429,
            {"message": "fake error 429", "type": "fake", "code": "429"},
            f"429 from {URL} (rate limited, after retries): fake error 429; send it again later",
        ),
        (
            503,
            {"error": {"message": "overloaded", "type": "server_error"}},
            f"503 from {URL} (a server error): overloaded; send it again",
        ),
        (400, "plain text body", f"400 from {URL}: plain text body"),
        (429, [{"error": {"message": "wrapped"}}], f"429 from {URL} (rate limited, after re"),
        (503, {"message": {"nested": "deep"}}, f"503 from {URL} (a server error): deep;"),
        (422, {"detail": [{"msg": "bad", "loc": ["body"]}]}, f"422 from {URL}: bad"),
        (429, None, f"429 from {URL} (rate limited, after retries): no details;"),
        (503, "<html><h1>502 Bad Gateway</h1></html>", f"503 from {URL} (a server error): 502 Bad"),
    ],
)
def test_an_endpoints_error_says_its_message_not_the_bodys_python_form(
    status: int, body: object, line: str
) -> None:
    """A helper's report (H54, H61): ``429 from URL: {'message': 'fake error 429', ...}``,
    and lists, nested messages, ``detail``, empty bodies and HTML pages alike."""
    told = explain_failure(ModelHTTPError(status, "m", body=body), "openai-chat:m")
    assert told.startswith(line), told
    assert "{" not in told and "[" not in told and "<" not in told and "None" not in told


@pytest.mark.parametrize(
    ("retry_after", "wait"),
    [
        (20.0, "20 s"),
        (4.5, None),
        (90.2, "2 min"),
        (600.0, "10 min"),
        (float("inf"), "a long time"),
    ],
)
def test_a_429_tells_the_wait_it_asks_for_when_it_was_not_waited(
    retry_after: float, wait: str | None
) -> None:
    """H160: the HTTP client no longer waits a 429's ``Retry-After`` over a few seconds
    unseen; the turn's line tells the wait instead (a shorter one was waited, retried)."""
    exc = ModelHTTPError(429, "m", body={"message": "slow down"}, retry_after=retry_after)
    told = explain_failure(exc, "openai-chat:m")
    if wait is None:
        assert told.startswith(f"429 from {URL} (rate limited, after retries): slow down;")
    else:
        assert told == (
            f"429 from {URL} (rate limited, it asks to wait {wait}): slow down; "
            f"send it again in {wait}"
        )


def test_a_refused_connection_names_the_url() -> None:
    exc = ModelConnectionError("m", "Connection error.")
    assert explain_failure(exc, "openai-chat:m").startswith(
        f"cannot connect to {URL}: is the server up? The supervisor uses the environment"
    )


def test_a_tool_call_cut_at_the_token_limit_says_the_reply_is_not_kept_and_what_to_do() -> None:
    exc = IncompleteToolCall(
        "Model token limit (provider default) exceeded while generating a tool call, resulting "
        "in incomplete arguments. Increase the `max_tokens` model setting, or simplify the prompt."
    )
    assert explain_failure(exc, "openai-chat:m") == (
        f"the reply from {URL} stopped at the model's output token limit in the middle of a "
        "tool call, which cannot be run; the reply is not kept: ask for a smaller step (one "
        "file at a time) or raise the model's output limit"
    )


@pytest.mark.parametrize(
    ("exc", "window"),
    [
        (
            ModelContextWindowExceededError(
                "m",
                "This model's maximum context length is 8,192 tokens. However, your "
                "messages resulted in 9000 tokens.",
            ),
            8192,
        ),
        (
            ModelHTTPError(
                400,
                "m",
                body={"type": "exceed_context_size_error", "n_prompt_tokens": 5000,
                      "n_ctx": 4096},
            ),
            4096,
        ),
        (ModelHTTPError(400, "m", body={"type": "exceed_context_size_error"}), None),
        (ModelHTTPError(400, "m", body={"message": "maximum context length is 10"}), None),
    ],
)
def test_the_window_a_refusal_states_is_read(exc: Exception, window: int | None) -> None:
    """OpenAI and vLLM say "maximum context length is N tokens"; llama.cpp gives ``n_ctx``;
    an error that is no refusal as over the window states none (H88)."""
    assert stated_context_window(exc) == window


def test_a_failure_after_a_tool_ran_does_not_say_the_reply_is_not_kept() -> None:
    """The turn is kept as far as it got then (a note says so): "the reply is not kept"
    would contradict it (H88)."""
    exc = ModelContextWindowExceededError("m", "maximum context length exceeded")
    told = explain_failure(exc, "openai-chat:m", kept=True)
    assert "not kept" not in told
    assert "the reply stopped there: /compact shrinks the conversation" in told


def test_a_message_over_the_window_alone_is_told_to_send_a_part_not_to_compact() -> None:
    """H166's report: a message bigger than the whole budget on its own, refused by the
    model, was told "/compact shrinks the conversation", which cannot help it; the budget's
    warning before it already said what does."""
    exc = ModelContextWindowExceededError("m", "maximum context length is 2250 tokens")
    told = explain_failure(exc, "openai-chat:m", message_alone=2_700)
    assert told.endswith(
        "the reply is not kept: this message alone (~2,700 tokens) is over it; "
        "send a part or a file path"
    )
    assert "/compact" not in told


@pytest.mark.parametrize(
    "exc",
    [
        ModelHTTPError(500, "m", {"error": {"message": "internal error"}}),
        ModelHTTPError(429, "m", {"error": {"message": "slow down"}}),
        ModelConnectionError("m", "Connection error."),
    ],
)
def test_a_failure_after_a_tool_ran_does_not_say_to_send_the_message_again(
    exc: Exception,
) -> None:
    """A helper's find (H91): a 500 after a record_decision said "send it again" beside
    "the reply is kept as far as it got"; sent again, the message ran its tools again and
    recorded the decision twice. What helps is asking the assistant to go on."""
    told = explain_failure(exc, "openai-chat:m", mid_reply=True, kept=True)
    assert "send it again" not in told
    assert "ask the assistant to go on" in told


FAILURES = [
    ModelContextWindowExceededError("m", "maximum context length exceeded"),
    ModelHTTPError(400, "m", body={"error": {"type": "exceed_context_size_error"}}),
    ModelConnectionError("m", "Connection error."),
    ModelAPIError("m", UNFINISHED_STREAM),
    UsageLimitExceeded("The next request would exceed the request_limit of 50"),
    ContentFilterError("content filter triggered"),
    UnexpectedModelBehavior("Streamed response ended without content or tool calls"),
    UnexpectedModelBehavior("Exceeded maximum output retries (1)"),
    IncompleteToolCall("Model token limit (provider default) exceeded"),
    OutputTokenLimitExceeded("Model token limit (provider default) exceeded"),
    ModelHTTPError(401, "m", body={"error": "bad key"}),
    ModelHTTPError(404, "m", body=None),
    ModelHTTPError(429, "m", body={"error": {"message": "slow down"}}),
    ModelHTTPError(500, "m", body={"error": {"message": "internal error"}}),
    ModelHTTPError(422, "m", body={"detail": "bad"}),
    ModelAPIError("m", "something else"),
    UserError("Set the `OPENAI_API_KEY` environment variable"),
    UserError("Unknown model: nosuch:x"),
    RuntimeError("boom"),
]
"""A failure of each kind ``explain_failure`` tells apart."""


@pytest.mark.parametrize("mid_reply", [False, True])  # a connection error mid-reply: a drop
def test_the_failures_are_each_of_a_kind_of_their_own(mid_reply: bool) -> None:
    lines = {explain_failure(exc, "openai-chat:m", mid_reply=mid_reply) for exc in FAILURES}
    assert len(lines) == len(FAILURES)


@pytest.mark.parametrize("mid_reply", [False, True])
@pytest.mark.parametrize("exc", FAILURES, ids=lambda exc: f"{type(exc).__name__}: {exc}"[:60])
def test_every_failure_after_a_tool_ran_neither_says_the_reply_is_not_kept_nor_to_send_it_again(
    exc: Exception, mid_reply: bool
) -> None:
    """A helper's find (H95): the line of a turn kept as far as it got was the line of a
    turn not kept, with words replaced; the content filter's said "it is not kept", which
    the replacement missed, beside the note that the turn is kept."""
    told = explain_failure(exc, "openai-chat:m", mid_reply=mid_reply, kept=True)
    assert "not kept" not in told
    assert "send it again" not in told


def test_a_reply_with_no_content_after_its_tool_calls_does_not_point_at_the_settings() -> None:
    """The endpoint answered the turn with its tool calls: its URL and model are right."""
    exc = UnexpectedModelBehavior("Streamed response ended without content or tool calls")
    told = explain_failure(exc, "openai-chat:m", kept=True)
    assert "OPENAI_BASE_URL" not in told and "--model" not in told
    assert told.endswith(
        "the reply stopped there: ask the assistant to go on (sent again, the message would "
        "run its tools again)"
    )


def test_a_connection_lost_after_a_tool_ran_is_a_drop_not_a_server_that_is_down() -> None:
    """The endpoint answered the turn with its tool calls: no restart of the supervisor
    with another environment helps, asking the assistant to go on does."""
    exc = ModelConnectionError("m", "Connection error.")
    told = explain_failure(exc, "openai-chat:m", kept=True)
    assert told == (
        f"the connection to {URL} dropped mid-reply; the reply stopped there: ask the "
        "assistant to go on (sent again, the message would run its tools again)"
    )


@pytest.mark.parametrize(
    ("outcome", "why"),
    [
        (Compacted("s", 1, "tokens", no_gain=True), "; a summary would be no shorter"),
        (Compacted("s", 1, "tokens", error="no answer in 30 s"), "; not compacted (no answer in"),
        (Compacted("s", 1, "tokens"), "; not compacted (the summarizer skipped…)"),
    ],
)
def test_a_request_left_over_the_budget_by_a_compaction_that_did_not_happen_says_why(
    outcome: Compacted, why: str
) -> None:
    """A helper's find: only a compaction that was kept and not enough was told; one that
    could not shrink the request, or failed, let it go over the budget in silence."""
    line = over_budget_line(outcome, 2_100, 1_500)
    assert line.startswith("warning: request over the token budget (~2,100 of 1,500)")
    assert why in line


@pytest.mark.parametrize(
    ("compaction_off", "remedy"),
    [
        (True, "; compaction is off (/compact)"),
        (False, "; nothing is left to compact"),
    ],
)
def test_a_request_over_the_budget_with_no_compaction_tried_says_why(
    compaction_off: bool, remedy: str
) -> None:
    """A helper's find (H64): with no compaction tried (off, or nothing left to compact)
    a request went over the budget without a warning."""
    line = over_budget_uncompacted_line(2_100, 1_500, compaction_off=compaction_off)
    assert line.startswith("warning: request over the token budget (~2,100 of 1,500)")
    assert remedy in line


@pytest.mark.parametrize(
    ("exc", "line"),
    [
        (
            UsageLimitExceeded("The next request would exceed the request_limit of 50. Consider"),
            "the reply took 50 model requests without ending (a model calling tools in a loop?)",
        ),
        (
            UnexpectedModelBehavior("Streamed response ended without content or tool calls"),
            f"the reply from {URL} had no content (an endpoint that does not stream Chat",
        ),
        (
            UnexpectedModelBehavior("Exceeded maximum output retries (1)"),
            "the model's answer could not be used (empty, or not the form asked for, again",
        ),
        (
            ContentFilterError("content filter triggered"),
            f"the provider's content filter at {URL} refused the reply; it is not kept",
        ),
    ],
)
def test_pydantic_ais_own_failures_are_told_in_the_users_words(exc: Exception, line: str) -> None:
    """A helper's find (H50): raw `UsageLimitExceeded: ... see the docs on usage limits`
    and `UnexpectedModelBehavior: ...` lines, with advice no setting could follow."""
    told = explain_failure(exc, "openai-chat:m")
    assert told.startswith(line), told
    assert "UnexpectedModelBehavior" not in told and "docs" not in told


def test_an_unknown_model_at_the_first_turn_is_named() -> None:
    line = explain_failure(UserError("Unknown model: nosuch:x"), "nosuch:x")
    assert line.startswith("unknown model 'nosuch:x': use offline, openai-chat:NAME")


def test_a_provider_missing_its_key_names_it_and_the_supervisors_environment() -> None:
    """A helper's report: pydantic-ai's own line was shown, pointing at ``OpenAIProvider``
    and its test model, and cut in two by the scrubber (``api_key=[REDACTED]``)."""
    exc = UserError(
        "Set the `OPENAI_API_KEY` environment variable or pass it via "
        "`OpenAIProvider(api_key=...)` to use the OpenAI provider. To try Pydantic AI "
        "without an API key, use the built-in test model: `Agent('test')`."
    )
    assert explain_failure(exc, "openai:gpt-4o") == (
        "model 'openai:gpt-4o' needs OPENAI_API_KEY, which the supervisor's environment does "
        "not set. The supervisor uses the environment it was started with; run agent-assist "
        "supervisor stop after changing it"
    )


@pytest.mark.parametrize("model", ["offline", "test", "openai-chat:m", "gateway/openai:gpt-5"])
def test_known_model_strings_pass(model: str) -> None:
    assert model_problem(model) is None


@pytest.mark.parametrize(
    ("model", "problem"),
    [
        ("nosuch:thing", "'nosuch' is not a provider pydantic-ai knows"),
        ("gpt-4", "it has no provider prefix"),
        ("openai-chat:", "the model name after the colon is missing"),
    ],
)
def test_unknown_model_strings_say_why(model: str, problem: str) -> None:
    assert model_problem(model) == problem
    line = check_model(model, "env AGENT_ASSIST_MODEL")
    assert line is not None and line.startswith(f"error: unknown model {model!r} from env ")


def test_blocks_are_final_up_to_the_last_blank_line_outside_a_code_fence() -> None:
    assert stable_prefix("one\n\ntwo") == len("one\n\n")
    assert stable_prefix("no blank line yet") == 0
    fenced = "intro\n\n```python\nx = 1\n\ny = 2"
    assert stable_prefix(fenced) == len("intro\n\n"), "a blank line inside a fence is not an end"


def test_the_headline_drops_the_offline_summarizers_boilerplate() -> None:
    for requests in ("3 recent requests", "1 recent request", "3 recent request(s)"):
        summary = f'{requests}; first: "design a triage agent"\n- "more"\nFiles: a.md'
        assert summary_headline(summary) == "design a triage agent"
    assert summary_headline("Designing a support agent\nmore") == "Designing a support agent"
    assert summary_headline(None) == ""


@pytest.mark.parametrize(
    "summary",
    [
        "## Summary\nDesigning a support-ticket triage agent.",
        "**Summary:**\n\nDesigning a support-ticket triage agent.",
        "# Conversation summary\n- Designing a support-ticket triage agent.",
        "## Designing a support-ticket triage agent.\nmore",
    ],
)
def test_the_headline_of_a_summary_models_markdown_is_what_it_says(summary: str) -> None:
    """A helper's find (H66): a summary model's answer that began with a "## Summary"
    heading was listed and offered as "summary: ## Summary"."""
    assert summary_headline(summary) == (
        "Designing a support-ticket triage agent."
    )


def test_the_headline_of_a_compacted_session_is_its_first_request_not_the_header() -> None:
    """Found by an acceptance check: the table showed the compaction's header."""
    from session.compaction import EventCompaction, render_compaction
    from session.summary import offline_summary

    compacted = render_compaction(EventCompaction(1, 4, "Started with: (1) design a triage bot."))
    summary = offline_summary([], (), compacted)
    assert summary is not None and "Conversation so far" not in summary
    assert summary_headline(summary) == "(1) design a triage bot."
    written_before = "Earlier: Conversation so far (turns 1-1, compacted); the later ...\nmore"
    assert summary_headline(written_before) == "more"


def test_the_offer_keeps_the_two_exact_lines_around_the_context() -> None:
    offer = {
        "session_id": "a1b2c3d4e5f6",
        "last_active": "2026-03-31 14:22 UTC",
        "turns": 12,
        "summary": "Designing a support-ticket triage agent\nmore",
        "modified": ["agent_spec.md"],
        "deleted": [],
        "unchanged": 2,
    }
    assert offer_text(offer, []).splitlines() == [
        "Previous session found (last active: 2026-03-31 14:22 UTC)",
        "  12 turns · summary: Designing a support-ticket triage agent",
        "  agent_spec.md: modified · 2 tracked files unchanged",
        "Resume previous session? [Y/n]",
    ]


def test_the_summary_lists_no_path_the_tools_refused() -> None:
    from pydantic_ai.messages import (
        ModelRequest,
        ModelResponse,
        ToolCallPart,
        ToolReturnPart,
        UserPromptPart,
    )

    from session.summary import touched_paths

    def call(path: str, call_id: str, answer: str) -> list[ModelRequest | ModelResponse]:
        return [
            ModelResponse(parts=[ToolCallPart("write_file", {"path": path}, call_id)]),
            ModelRequest(parts=[ToolReturnPart("write_file", answer, call_id)]),
        ]

    messages = [
        ModelRequest(parts=[UserPromptPart("write two files")]),
        *call("../etc/passwd", "c1", "error: '../etc/passwd' is not a path inside the workspace"),
        *call("agent_spec.md", "c2", "wrote agent_spec.md (7 bytes)"),
    ]
    assert touched_paths(messages) == ["agent_spec.md"]


def test_the_summary_lists_the_paths_of_calls_whose_id_a_refused_call_used_before() -> None:
    """Refusals were matched by call id: one refused call hid every later path whose call
    reused its id (the offline model's ids all are ``offline-1``)."""
    from pydantic_ai.messages import ModelRequest, ModelResponse, ToolCallPart, ToolReturnPart

    from session.summary import touched_paths

    def call(path: str, answer: str) -> list[ModelRequest | ModelResponse]:
        return [
            ModelResponse(parts=[ToolCallPart("write_file", {"path": path}, "offline-1")]),
            ModelRequest(parts=[ToolReturnPart("write_file", answer, "offline-1")]),
        ]

    messages = [
        *call("../etc/passwd", "error: '../etc/passwd' is not a path inside the workspace"),
        *call("agent_spec.md", "wrote agent_spec.md (7 bytes)"),
    ]
    assert touched_paths(messages) == ["agent_spec.md"]


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["one", "\n", "\n\n", "```", "~~~", "  ```py", " ", "x\n"]), max_size=30
    ),
    st.lists(st.integers(1, 7), min_size=1, max_size=30),
)
def test_finished_blocks_found_chunk_by_chunk_are_those_of_the_whole_text(
    parts: list[str], sizes: list[int]
) -> None:
    """The live view reads each line once (a 700 KB code block took 14 s to draw when the
    fences were counted again at every chunk: H50); it finds what ``stable_prefix`` finds."""
    from cli.render import Blocks

    text = "".join(parts)
    blocks, shown, at, k = Blocks(), "", 0, 0
    while at < len(text):
        blocks.add(text[at : at + sizes[k % len(sizes)]])
        at += sizes[k % len(sizes)]
        k += 1
        before = blocks.text
        finished = blocks.take_finished()
        assert len(finished) == stable_prefix(before)
        shown += finished
    assert shown + blocks.take_all() == text


def _rows_erased(region: ReflowedRegion) -> int:
    """The rows ``region.position_cursor()`` moves up over to redraw the live region."""
    return str(region.position_cursor().segment.text).count("\x1b[1A") + 1


def test_a_live_reply_is_erased_as_the_terminal_reflowed_it_after_narrowing() -> None:
    """A helper's find (H67): narrowing the window while a reply streamed left a cut copy
    of it on the screen: a reflowing terminal (tmux) wraps each line drawn anew, and
    only the rows drawn were erased. A line of 100 columns at 40 takes 3 rows."""
    from io import StringIO

    from rich.console import Console
    from rich.text import Text


    console = Console(file=StringIO(), width=120, force_terminal=True)
    region = ReflowedRegion(console, Text("w" * 100 + "\n" + "v" * 30))
    console.print(region)
    assert _rows_erased(region) == 2
    console.width = 40
    assert _rows_erased(region) == 3 + 1
    console.width = 150  # wider: lines drawn whole stay one row each
    region = ReflowedRegion(console, Text("w" * 100 + "\n" + "v" * 30))
    console.print(region)
    console.width = 160
    assert _rows_erased(region) == 2


def _live_rows(text: str, width: int, height: int, *, after_another: bool = False) -> list[str]:
    """The rows the live view draws of the unfinished block ``text`` (``after_another``:
    a finished block of the reply was printed above it)."""
    from io import StringIO

    from rich.console import Console

    from cli.render import Blocks, _Unfinished

    blocks = Blocks()
    blocks.add(text)
    console = Console(file=StringIO(), width=width, height=height, force_terminal=True)
    view = _Unfinished(blocks, lambda: after_another)
    lines = console.render_lines(view, console.options, pad=False)
    return ["".join(segment.text for segment in line) for line in lines]


def test_a_code_block_being_written_takes_at_most_a_screenful_of_rows_however_narrow() -> None:
    """A helper's find (H70): at 40 columns each code line took two or three rows, the
    live view grew past the window's height, and each redraw left a copy of the block
    in the scrollback (30 copies of a 30-line block)."""
    line = "    total_{0:02} = compute(value_{0:02}, factor={0})  # line {0}"
    code = "\n".join(line.format(n) for n in range(40))
    rows = _live_rows(f"```python\ndef demo():\n{code}\n", width=40, height=30)
    assert len(rows) <= (30 - 6) // 2, "half a screen: a narrowing to half the width doubles it"
    assert "line 39" in "".join(rows[-3:]), "its last rows: what is being written"


def test_the_live_view_does_not_pad_its_rows_to_the_width() -> None:
    """A helper's find (H70): a line with an emoji the terminal draws wider than rich counts
    it (a skin tone) was padded to the width, wrapped, and left a copy at each redraw."""
    rows = _live_rows("Emoji line 👍🏽 done and more words", width=120, height=40)
    assert rows and all(row == row.rstrip(" ") for row in rows), rows


def test_no_live_row_is_wider_than_the_terminal_as_a_terminal_may_draw_it() -> None:
    """H74's find: at 40 columns, ``Emoji and CJK: 🚀 launch ✅ done 👍🏽 th`` stayed on the
    screen above the finished reply. rich counts the emoji with a skin tone as two
    columns, tmux draws it as two emoji (four): the live row of 39 columns by rich's count
    took 41, wrapped, and the next redraw erased one row of its two. Each live row fits
    as a terminal that gives every code point its own width draws it."""
    from wcwidth import wcwidth

    text = "Emoji and CJK: 🚀 launch ✅ done 👍🏽 thumbs 👍🏽👍🏽 and more words to wrap"
    for end in range(len(text) + 1):
        rows = _live_rows(text[:end], width=40, height=30)
        widths = [sum(max(wcwidth(char), 0) for char in row) for row in rows]
        assert all(width <= 40 for width in widths), (rows, widths)
    assert "".join(_live_rows(text, width=40, height=30)).replace(" ", "") == text.replace(
        " ", ""
    ), "nothing is left out"
    code = "```\n" + "x = '👍🏽' * 3  # " + "y" * 30 + "\n"
    rows = _live_rows(code, width=40, height=30)
    assert all(sum(max(wcwidth(char), 0) for char in row) <= 40 for row in rows), rows


def test_the_block_being_written_is_drawn_where_it_will_be_printed() -> None:
    """H74's find: after a finished paragraph, the one being written was drawn right
    under it and, once finished, printed one blank row lower: every paragraph of a reply
    jumped a row down as it was finished. It is drawn one blank row below, as printed."""
    from io import StringIO

    from rich.console import Console
    from rich.markdown import Markdown

    from cli.render import _Spaced

    console = Console(file=StringIO(), width=80, height=30, force_terminal=True)
    printed = console.render_lines(
        _Spaced(Markdown("Second paragraph, finished."), after_another=True),
        console.options,
        pad=False,
    )
    rows = ["".join(segment.text for segment in line) for line in printed]
    live = _live_rows("Second paragraph, fini", width=80, height=30, after_another=True)
    assert live == ["", "Second paragraph, fini"]
    assert rows[:2] == ["", "Second paragraph, finished."]
    assert _live_rows("## A heading", width=80, height=30, after_another=True)[0] == ""
    assert _live_rows("## A heading", width=80, height=30, after_another=True)[1] != ""
    assert _live_rows("First paragraph", width=80, height=30) == ["First paragraph"]


def test_the_blocks_of_a_reply_are_spaced_as_in_one_markdown_text() -> None:
    """A helper's find (H70): the finished blocks, printed one by one as they were
    finished, ran together (two paragraphs with no blank line between them), while a
    list or a table brought a blank line of its own."""
    from io import StringIO

    from cli.render import RichReply

    out = StringIO()
    reply = RichReply(out)
    for chunk in ("First paragraph.\n\n", "Second paragraph.\n\n", "- one\n- two\n\n", "End."):
        reply.write(chunk)
    reply.end()
    rows = [row.rstrip() for row in out.getvalue().splitlines()]
    assert rows == ["First paragraph.", "", "Second paragraph.", "", " • one", " • two", "", "End."]


def test_the_compacting_note_speaks_of_a_summary_model_only_when_one_is_asked() -> None:
    """A helper's find (H78): resuming a long session with the offline summarizer (no
    summary model set anywhere) told `waiting for the summary model; up to 15 s, then the
    offline summarizer`, and the offline summarizer then took 20 s."""
    from actors.terminal import compacting_line

    for trigger in ("tokens", "command"):
        offline = compacting_line(trigger, "offline")
        assert offline.startswith("note: compacting the conversation")
        assert "summary model" not in offline and "15 s" not in offline
        assert "waiting for the summary model" in compacting_line(trigger, "openai-chat:small")
        assert "waiting for the summary model" in compacting_line(trigger, None)
    assert compacting_line("tokens", "offline").endswith("to fit the token budget")


def _pydantic_ai_provider_names() -> set[str]:
    """Every provider name the installed pydantic-ai resolves: the cases of the match in
    ``infer_provider_class`` (read from its source, as it is in this environment)."""
    import ast
    import inspect

    from pydantic_ai.providers import infer_provider_class

    tree = ast.parse(inspect.getsource(infer_provider_class))
    return {
        sub.value.value
        for case in ast.walk(tree)
        if isinstance(case, ast.match_case)
        for sub in ast.walk(case.pattern)
        if isinstance(sub, ast.MatchValue)
        and isinstance(sub.value, ast.Constant)
        and isinstance(sub.value.value, str)
    }


def _makes_a_model(provider: str) -> bool:
    """Whether pydantic-ai's ``infer_model`` takes ``provider:NAME`` for a model (a provider
    of embeddings or speech only is an unknown model to it), without building a provider."""
    from typing import Any, cast

    from pydantic_ai.exceptions import UserError
    from pydantic_ai.models import infer_model
    from pydantic_ai.providers import Provider

    def stand_in(name: str) -> Provider[Any]:
        return cast("Provider[Any]", object())

    try:
        infer_model(f"{provider}:some-model", provider_factory=stand_in)
    except UserError as exc:
        return not str(exc).startswith("Unknown model")
    except Exception:  # the stand-in provider refused past the dispatch: a model kind
        return True
    return True


def test_every_model_provider_of_the_installed_pydantic_ai_passes_the_start_check() -> None:
    """The prefixes are a hand-kept list: pydantic-ai 2.78's cloudflare:, otari:, stav:,
    google-interactions: and cloudflare-decisions: models were refused at start as 'not a
    provider pydantic-ai knows'."""
    providers = {name for name in _pydantic_ai_provider_names() if _makes_a_model(name)}
    assert "openai-chat" in providers and "anthropic" in providers
    refused = sorted(name for name in providers if model_problem(f"{name}:m") is not None)
    assert refused == []


@pytest.mark.parametrize(
    "body",
    [
        {"message": "content refused: db:\n  password: |\n    first99\n    battery staple\n"},
        "content refused: config.yml:\n  api_key: >-\n    hunterword\n    staplehorse\n",
        {"detail": {"why": "refused:\npassphrase: correct horse battery staple\nnext: 1"}},
    ],
)
def test_an_endpoints_error_is_scrubbed_before_it_is_put_on_one_line(body: object) -> None:
    """H111: the error's text was flattened before it was scrubbed, and a secret found by
    its lines (a YAML block's, a passphrase's line) was shown and logged in clear."""
    told = explain_failure(ModelHTTPError(400, "m", body=body), "openai-chat:m")
    for secret in ("first99", "battery", "hunterword", "staplehorse", "correct horse"):
        assert secret not in told, told


@pytest.mark.parametrize(
    ("first", "last", "told"),
    [(1, 1, "note: turn 1 compacted"), (1, 4, "note: turns 1-4 compacted")],
)
def test_the_line_of_a_resumes_compaction_agrees_with_its_number_of_turns(
    first: int, last: int, told: str
) -> None:
    """H113: "turn 1 were compacted now"."""
    effect = KeepOriginal("0a1b2c3d4e5f", EventCompaction(first, last, "the narrative"))
    line = compacted_at_resume_line(effect, Path("0a1b2c3d4e5f.json.uncompacted-x"))
    assert line.startswith(f"{told} offline on resume"), line


def test_every_compaction_and_budget_warning_is_one_short_line() -> None:
    """H131: the budget and compaction warnings ran to 180-200 characters (two or three
    rows of a terminal); each is one line of at most 100, with five-digit counts and a
    long reason, keeping what is over, by how much, and why."""
    from actors.compaction import summary_model_down_line
    from actors.terminal import compacting_line
    from actors.turn_lines import compaction_failed_line

    reason = "APIConnectionError: Connection error while reaching http://localhost:9/v1"
    lines = [
        over_budget_line(Compacted("s", 1, "tokens", EventCompaction(1, 2, "x")), 12_345, 10_000),
        over_budget_line(Compacted("s", 1, "tokens", no_gain=True), 12_345, 10_000),
        over_budget_line(Compacted("s", 1, "tokens", error=reason), 12_345, 10_000),
        over_budget_uncompacted_line(12_345, 10_000, compaction_off=True),
        over_budget_uncompacted_line(12_345, 10_000, compaction_off=False),
        compaction_failed_line(reason, 64),
        compacting_line("tokens", None),
        compacting_line("command", None),
        TURNS_LEFT_OUT_LINE,
    ]
    long = [line for line in lines if len(line) > 100 or "\n" in line]
    assert not long, long
    assert all("12,345 of 10,000" in line for line in lines[:5])
    why = "TimeoutError: no answer in time"
    down = "warning: " + summary_model_down_line("openai-chat:m", why, 300)
    endpoint = down.split(" at ", 1)[1].split(" failed", 1)[0]
    assert len(down) - len(endpoint) - len(why) <= 70, down  # where and why: not clipped


def test_the_context_window_and_resume_compaction_notes_are_one_short_line_each() -> None:
    """H135: the note of a request refused as over the model's context window ran to about
    250 characters, the resume's compaction notes to about 230 and 260 (three or four rows
    of a terminal). Each is one line of about 100 at most (64 besides the kept file's name),
    keeping what happened, the sizes, and where the file as it was is kept."""
    from actors.terminal import context_full_line

    full = context_full_line(12_345, 23_456)
    assert len(full) <= 100 and "\n" not in full, full
    assert "context window" in full and "~12,345" in full and "~23,456" in full
    name = Path("0a1b2c3d4e5f.json.uncompacted-20261129T101500Z")
    lines = [
        compacted_at_resume_line(KeepOriginal("0a1b2c3d4e5f", EventCompaction(1, 1234, "n")), name),
        compacted_at_resume_line(KeepOriginal("0a1b2c3d4e5f", None, left_out=1_234), name),
    ]
    for line in lines:
        assert "\n" not in line and line.endswith(name.name), line
        assert len(line) - len(name.name) <= 64, line
    assert "turns 1-1234 compacted offline" in lines[0]
    assert "oldest 1,234 turns dropped (compaction off)" in lines[1]


@pytest.mark.parametrize(
    ("seconds", "words"),
    [
        (0.2, "1 s"),
        (29.5, "30 s"),
        (60.0, "1 min"),
        (90.0, "1 min 30 s"),
        (150.0, "2 min 30 s"),
        (241.0, "4 min 30 s"),
        (298.5, "5 min"),
        (601.0, "11 min"),
    ],
)
def test_a_wait_is_said_as_a_user_reads_it_never_shorter_than_it_is(
    seconds: float, words: str
) -> None:
    """A helper's report: 150 s of offline summaries were said as ``2 min`` (rounded
    down), a 429's 150 s as ``150 s``; one rule for every wait told: seconds under a
    minute, half minutes under ten, whole minutes after, rounded up."""
    from actors.compaction import summary_model_down_line
    from session.waits import wait_words

    assert wait_words(seconds) == words
    down = summary_model_down_line("openai-chat:m", "TimeoutError: no answer in time", seconds)
    assert down.endswith(f"; offline summaries for {words}"), down


def test_a_tool_call_line_shows_no_known_secret_whole_or_cut() -> None:
    """H188: the session's known secrets were not replaced in a tool call's line (paths
    were not scrubbed at all); scrubbed after the cut, a long one would be half shown."""
    value = "Zq9Xv7Lm2Pk4QwPlainEnoughToCut"
    known = (value,)
    assert describe_tool_call("read_file", {"path": f"notes/{value}.md"}, known) == (
        "read_file notes/[REDACTED].md"
    )
    assert describe_tool_call("write_file", {"path": f"{value}.txt", "content": "x"}, known) == (
        "write_file [REDACTED].txt (1 B)"
    )
    decision = "the vault of the staging cluster takes " + value
    line = describe_tool_call("record_decision", {"decision": decision}, known)
    assert value[:6] not in line and line.startswith('record_decision "the vault')
    line = describe_tool_call("deploy", {"token_for_the_vault": value}, known)
    assert value[:6] not in line


def test_a_value_the_prompt_reveals_is_among_the_turns_secrets() -> None:
    from session.redaction import with_revealed

    secrets = with_revealed("my password is Zq9Xv7Lm2Pk4Qw, use it", ("known-one-value",))
    assert set(secrets) == {"Zq9Xv7Lm2Pk4Qw", "known-one-value"}
