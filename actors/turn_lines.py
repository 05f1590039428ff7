"""One line for the terminal about a turn: a tool call it makes, or why it failed."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Final

from pydantic_ai.exceptions import (
    ContentFilterError,
    IncompleteToolCall,
    ModelAPIError,
    ModelAuthenticationError,
    ModelConnectionError,
    ModelContextWindowExceededError,
    ModelHTTPError,
    ModelNotFoundError,
    OutputTokenLimitExceeded,
    UnexpectedModelBehavior,
    UsageLimitExceeded,
    UserError,
)
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, ToolReturnPart

from actors.chat_client import MAX_UNSEEN_WAIT_S
from actors.messages import Compacted
from session.redaction import scrub_text, secrets_from_environment, with_secrets
from session.waits import wait_words

RESTART_HINT = (
    "The supervisor uses the environment it was started with; "
    "run agent-assist supervisor stop after changing it"
)
OPENAI_DEFAULT_URL = "https://api.openai.com/v1"
UNFINISHED_STREAM = "Streamed response ended without a `finish_reason`"
"""pydantic-ai's words when a streamed reply ended before the model said it was done
(``openai_chat_streaming_requires_finish_reason``, which ``resolve_model`` sets)."""


LIMIT_NOTE = "note: the reply stopped at the model's output token limit; ask it to go on"
FILTER_NOTE = "note: the provider's content filter stopped the reply; it may be incomplete"


def stop_note(messages: Sequence[ModelMessage]) -> str | None:
    """The note for a turn whose last response the model did not end on its own: at its
    output token limit, or by the provider's content filter (kept: what came is its
    answer, but the user is told where it stopped)."""
    last = next((m for m in reversed(messages) if isinstance(m, ModelResponse)), None)
    if last is None:
        return None
    return {"length": LIMIT_NOTE, "content_filter": FILTER_NOTE}.get(last.finish_reason or "")


def checkpoint_failed(reason: object) -> str:
    """Why a write may not happen: the checkpoint that would let it be undone failed."""
    return f"the checkpoint that would let this write be undone failed ({reason})"


def _size(n: int) -> str:
    if n < 1024:
        return f"{n} B"
    if n < 1024 * 1024:
        return f"{n / 1024:.1f} KB"
    return f"{n / (1024 * 1024):.1f} MB"


def one_line(text: str, known_secrets: tuple[str, ...] = ()) -> str:
    """``text`` on one line, scrubbed first (of ``known_secrets`` too): flattened, a secret
    a pattern finds by its lines (a YAML block's, a netrc's over several lines, a
    passphrase's to its line's end) would be found no more, and the line is logged and
    shown (H111)."""
    return " ".join(scrub_text(text, known_secrets).split())


def _clip(text: str, limit: int = 60, known_secrets: tuple[str, ...] = ()) -> str:
    """``text`` as ``one_line`` makes it, cut to ``limit`` characters: scrubbed before the
    cut, a secret cut short would no longer be found whole."""
    flat = one_line(text, known_secrets)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _shown_path(path: str, limit: int = 120) -> str:
    """A path as one line: control characters escaped (a model's newline in it forged
    lines on the terminal), clipped to ``limit`` characters."""
    shown = "".join(c if c.isprintable() else repr(c)[1:-1] for c in path)
    return shown if len(shown) <= limit else shown[: limit - 1] + "…"


def describe_tool_call(
    name: str, args: Mapping[str, object], known_secrets: tuple[str, ...] = ()
) -> str:
    """``write_file agent_spec.md (1.2 KB)``, ``read_file notes.md``, ``record_decision
    "..."``: every text shown scrubbed, of ``known_secrets`` (the session's) too (H188: a
    value found secret earlier was shown in clear in a decision's text or a path)."""
    path = args.get("path")
    if name == "write_file" and isinstance(path, str):
        content = args.get("content")
        size = len(content.encode("utf-8")) if isinstance(content, str) else 0
        return f"write_file {_shown_path(scrub_text(path, known_secrets))} ({_size(size)})"
    if name == "read_file" and isinstance(path, str):
        return f"read_file {_shown_path(scrub_text(path, known_secrets))}"
    if name == "list_files":
        directory = args.get("directory")
        shown_dir = (
            _shown_path(scrub_text(directory, known_secrets)) if isinstance(directory, str) else "."
        )
        return f"list_files {shown_dir}"
    if name == "record_decision":
        return f'record_decision "{_clip(str(args.get("decision", "")), 60, known_secrets)}"'
    shown = ", ".join(
        f"{_clip(str(k), 30, known_secrets)}={_clip(str(v), 30, known_secrets)}"
        for k, v in args.items()
    )
    return f"{_clip(name, 60, known_secrets) or '(a tool with no name)'} {shown}".rstrip()


def refused_calls(request: ModelRequest, known_secrets: tuple[str, ...] = ()) -> list[str]:
    """A line for each tool call the tools refused, of the returns ``request`` carries to
    the model (``  ↳ write_file: error: cannot write l.md: is a symlink; ...``): the call's
    own line, shown as the call was made, read as done (H54, H61); scrubbed of
    ``known_secrets`` too."""
    return [
        f"↳ {_clip(part.tool_name, 40, known_secrets)}: "
        f"{_shown_path(_clip(part.content, 160, known_secrets), 200)}"
        for part in request.parts
        if isinstance(part, ToolReturnPart)
        and isinstance(part.content, str)
        and part.content.startswith("error:")
    ]


def endpoint_of(model: str) -> str:
    """Where requests of ``model`` go (for OpenAI-style strings, ``OPENAI_BASE_URL``), as
    a line may show it: without the password a URL may hold (``user:PASSWORD@host``)."""
    provider = model.partition(":")[0]
    if provider.startswith("openai"):
        url = os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL
        return scrub_text(url, secrets_from_environment())
    return f"the {provider} endpoint"


_REQUEST_LIMIT_RE = re.compile(r"request_limit of (\d+)")
"""pydantic-ai's words for a run that reached its number of model requests."""
_NO_CONTENT = "ended without content or tool calls"
_RETRIES = "Exceeded maximum output retries"
_MISSING_SETTING_RE = re.compile(r"\bSet the `([A-Z][A-Z0-9_]+)` environment variable")
"""pydantic-ai's words for a provider whose key (or URL) is not set (its line also names
the provider class and its built-in test model: nothing a user of agent-assist can use)."""


def _key_of(model: str) -> str:
    provider = model.partition(":")[0].removeprefix("gateway/")
    if provider.startswith("openai"):
        return "OPENAI_API_KEY"
    return f"{provider.upper().replace('-', '_')}_API_KEY"


def explain_failure(
    exc: BaseException,
    model: str,
    *,
    mid_reply: bool = False,
    kept: bool = False,
    message_alone: int | None = None,
    known_secrets: tuple[str, ...] = (),
) -> str:
    """What happened and what to do, in one line (no ``error:`` prefix), scrubbed of
    secrets: an endpoint's error body may echo the request's ``Authorization`` header.
    ``known_secrets`` (the session's) are replaced before any quote of it is cut, as the
    environment's are: cut first, a secret at the cut kept its head.
    ``mid_reply``: some of the reply had come (a connection error is then a drop);
    ``kept``: a tool of the reply had run, so the turn is kept as far as it got (a note
    says so): the line does not say the reply is not kept, nor to send the message
    again, which would run its tools again (a decision recorded twice, a file written
    over): the assistant is asked to go on. Each kind of failure says both in words of its
    own (``Reply.told``), so no kept line is a not-kept one with words replaced.
    ``message_alone``: the user's message, in tokens, when it alone is over the budget or
    the window: a refusal then says to send a part, which a compaction cannot do for it."""
    reply = Reply.KEPT if kept else Reply.NOT_KEPT
    secrets = with_secrets(secrets_from_environment(), known_secrets)
    line = _explain(exc, model, mid_reply, reply, message_alone, secrets)
    return scrub_text(line, secrets)


class Reply(Enum):
    """What became of the reply of a turn that failed, which its line speaks of."""

    NOT_KEPT = "not kept"
    """Nothing of the turn is kept: the message may be sent again as it was."""
    KEPT = "kept as far as it got"
    """A tool of the reply had run: the turn is kept as far as it got (a note says so),
    and the message sent again would run its tools again."""

    def told(self, *, not_kept: str, kept: str) -> str:
        """The words of a line for this reply: each failure chooses both."""
        return kept if self is Reply.KEPT else not_kept


NOT_KEPT: Final = "the reply is not kept"
STOPPED_THERE: Final = "the reply stopped there"
GO_ON: Final = "ask the assistant to go on (sent again, the message would run its tools again)"
GO_ON_LATER: Final = (
    "ask the assistant to go on later (sent again, the message would run its tools again)"
)


_LLAMA_CPP_OVERFLOW = ("exceed_context_size_error", "exceeds the available context size")
"""How llama.cpp's server words an overflow (pydantic-ai knows OpenAI's and vLLM's words)."""


def context_window_exceeded(exc: BaseException) -> bool:
    """Whether the model refused the request as over its context window: compacting the
    conversation, not sending it again as it is, is what helps."""
    if isinstance(exc, ModelContextWindowExceededError):
        return True
    if not isinstance(exc, ModelHTTPError) or exc.status_code not in (400, 413):
        return False
    said = str(exc.body).lower()
    return any(words in said for words in _LLAMA_CPP_OVERFLOW)


_STATED_WINDOW_RES: Final = (
    re.compile(r"maximum context length (?:is|of) (\d[\d,]*)", re.IGNORECASE),  # OpenAI, vLLM
    re.compile(r"['\"]n_ctx['\"]\s*:\s*(\d+)"),  # llama.cpp's error body
    re.compile(r"(?:context|prompt) is too long: \d+ tokens > (\d+)", re.IGNORECASE),
    re.compile(r"context (?:window|length|size) of (\d[\d,]*) tokens", re.IGNORECASE),
)
"""How endpoints state the window a refused request was over."""


def stated_context_window(exc: BaseException) -> int | None:
    """The context window (in tokens) the model's refusal of a request as over it states,
    if it states one: a bound the budget learned from the refusal must keep under."""
    if not context_window_exceeded(exc):
        return None
    said = " ".join(
        str(text) for text in (getattr(exc, "body", None), getattr(exc, "message", None), exc)
    )
    for pattern in _STATED_WINDOW_RES:
        if (found := pattern.search(said)) is not None:
            return int(found[1].replace(",", "")) or None
    return None


def _explain(
    exc: BaseException,
    model: str,
    mid_reply: bool,
    reply: Reply,
    message_alone: int | None = None,
    secrets: tuple[str, ...] = (),
) -> str:
    where = endpoint_of(model)
    if context_window_exceeded(exc):
        if isinstance(exc, ModelHTTPError):
            source, said = f"{exc.status_code} from {where}", _said_by(exc.body)
        else:
            source = f"from {where}"
            said = exc.message if isinstance(exc, ModelAPIError) else str(exc)
        said = _clip(said, 200, secrets)
        return (
            f"{source}: the request is over the model's context window ({said}); "
            + reply.told(not_kept=NOT_KEPT, kept=STOPPED_THERE)
            + (
                f": this message alone (~{message_alone:,} tokens) is over it; "
                "send a part or a file path"
                if message_alone is not None
                else ": /compact shrinks the conversation, and AGENT_ASSIST_CONTEXT_TOKENS "
                "below the model's window keeps it under"
            )
        )
    # A tool of the reply had run: the endpoint answered this turn, so a connection that
    # fails now dropped mid-reply, even before any text came.
    if isinstance(exc, ModelConnectionError) and (mid_reply or reply is Reply.KEPT):
        return f"the connection to {where} dropped mid-reply; " + reply.told(
            not_kept=f"{NOT_KEPT}: send it again", kept=f"{STOPPED_THERE}: {GO_ON}"
        )
    if isinstance(exc, ModelAPIError) and exc.message == UNFINISHED_STREAM:
        return (
            f"the reply from {where} ended before the model finished it (the connection was "
            "closed early); "
            + reply.told(not_kept=f"{NOT_KEPT}: send it again", kept=f"{STOPPED_THERE}: {GO_ON}")
        )
    if isinstance(exc, UsageLimitExceeded):
        limit = _REQUEST_LIMIT_RE.search(str(exc))
        many = f"{limit[1]} model requests" if limit else "too many model requests"
        return (
            f"the reply took {many} without ending (a model calling tools in a loop?); "
            + reply.told(not_kept=f"stopped: {NOT_KEPT}", kept="it was stopped there")
            + " (files its tools wrote stay written): ask for a smaller step"
        )
    if isinstance(exc, ContentFilterError):
        return f"the provider's content filter at {where} refused " + reply.told(
            not_kept="the reply; it is not kept", kept=f"the rest of the reply; {STOPPED_THERE}"
        )
    if isinstance(exc, UnexpectedModelBehavior) and _NO_CONTENT in exc.message:
        return reply.told(
            not_kept=(
                f"the reply from {where} had no content (an endpoint that does not stream "
                f"Chat Completions, or sent an empty answer); {NOT_KEPT}: check "
                "OPENAI_BASE_URL and --model, then send it again"
            ),
            # The endpoint answered with the reply's tool calls: nothing to check there.
            kept=(
                f"the reply from {where} had no content after its tool calls (an empty "
                f"answer); {STOPPED_THERE}: {GO_ON}"
            ),
        )
    if isinstance(exc, UnexpectedModelBehavior) and _RETRIES in exc.message:
        return (
            "the model's answer could not be used (empty, or not the form asked for, again "
            "when asked to correct it); "
            + reply.told(not_kept=f"{NOT_KEPT}: send it again", kept=f"{STOPPED_THERE}: {GO_ON}")
        )
    if isinstance(exc, OutputTokenLimitExceeded):  # IncompleteToolCall, or output cut unusable
        what = (
            "in the middle of a tool call, which cannot be run"
            if isinstance(exc, IncompleteToolCall)
            else "before its answer could be used"
        )
        return (
            f"the reply from {where} stopped at the model's output token limit {what}; "
            + reply.told(not_kept=NOT_KEPT, kept=STOPPED_THERE)
            + ": ask for a smaller step (one file at a time) or raise the model's output limit"
        )
    if isinstance(exc, ModelConnectionError):
        return f"cannot connect to {where}: is the server up? {RESTART_HINT}"
    if isinstance(exc, ModelAuthenticationError) or (
        isinstance(exc, ModelHTTPError) and exc.status_code in (401, 403)
    ):
        status = exc.status_code if isinstance(exc, ModelHTTPError) else 401
        return f"{status} from {where}: check {_key_of(model)}. {RESTART_HINT}"
    if isinstance(exc, ModelNotFoundError) or (
        isinstance(exc, ModelHTTPError) and exc.status_code == 404
    ):
        name = model.partition(":")[2] or model
        return f"404 from {where}: the endpoint does not serve model {name!r} (check --model)"
    if isinstance(exc, ModelHTTPError):
        said = _clip(_said_by(exc.body), 200, secrets)
        if exc.status_code == 429 and (wait := _asked_wait(exc)) is not None:
            return f"429 from {where} (rate limited, it asks to wait {wait}): {said}; " + (
                reply.told(not_kept=f"send it again in {wait}", kept=GO_ON_LATER)
            )
        if exc.status_code == 429:
            return f"429 from {where} (rate limited, after retries): {said}; " + reply.told(
                not_kept="send it again later", kept=GO_ON_LATER
            )
        if exc.status_code >= 500:
            return f"{exc.status_code} from {where} (a server error): {said}; " + reply.told(
                not_kept="send it again", kept=GO_ON
            )
        return f"{exc.status_code} from {where}: {said}"
    if isinstance(exc, ModelAPIError):
        return f"request to {where} failed: {_clip(exc.message, 200, secrets)}"
    if isinstance(exc, UserError) and (missing := _MISSING_SETTING_RE.search(str(exc))):
        return (
            f"model {model!r} needs {missing[1]}, which the supervisor's environment does not "
            f"set. {RESTART_HINT}"
        )
    if isinstance(exc, UserError) and "Unknown model" in str(exc):
        return (
            f"unknown model {model!r}: use offline, openai-chat:NAME or a pydantic-ai provider:name"
        )
    text = one_line(str(exc), secrets) or type(exc).__name__
    return f"{type(exc).__name__}: {text}"[:500]


def _asked_wait(exc: ModelHTTPError) -> str | None:
    """The wait a 429 asks for (``Retry-After``) over ``MAX_UNSEEN_WAIT_S``, which the
    HTTP client did not wait (``actors.chat_client``): ``20 s``, ``3 min``; None if it
    asked for none or a shorter one (waited, then asked again)."""
    wait = exc.retry_after
    if wait is None or not wait > MAX_UNSEEN_WAIT_S:
        return None
    if wait == float("inf") or wait >= 100 * 3600:
        return "a long time"
    return wait_words(wait)


def error_words(exc: BaseException, known_secrets: tuple[str, ...] = ()) -> str:
    """``exc``'s words on one line, scrubbed (of ``known_secrets`` too: a caller may cut
    them), for a log line: an endpoint's error as its status and what its body says
    (pydantic-ai's words give the body as a Python dict, whose message of several lines
    read with literal ``\\n``)."""
    if isinstance(exc, ModelHTTPError):
        said = f"{exc.status_code} from {exc.model_name}: {_said_by(exc.body)}"
        return scrub_text(said, known_secrets) if known_secrets else said
    return one_line(str(exc), known_secrets)


def _said_by(body: object) -> str:
    """What an endpoint's error body says: its message (``{"error": {"message": ...}}``,
    a list of such, ``detail``/``msg`` as some servers write it), not its Python form; an
    HTML page's text without its tags; ``no details`` for an empty one."""
    message = _message_in(body)
    if message:
        return message
    if not body:
        return "no details"
    text = str(body)
    if _HTML_RE.search(text):
        text = _TAG_RE.sub(" ", text)
    return one_line(text) or "no details"


def _message_in(value: object, depth: int = 0) -> str | None:
    if depth > 4:
        return None
    if isinstance(value, list):
        return next(
            (found for item in value if (found := _message_in(item, depth + 1))), None
        )
    if not isinstance(value, dict):
        return None
    for key in ("message", "detail", "msg", "error"):
        inner = value.get(key)
        if isinstance(inner, str) and inner.strip():
            return one_line(inner)
        if (found := _message_in(inner, depth + 1)) is not None:
            return found
        if isinstance(inner, dict):  # a message of a shape of its own: its first text
            text = next((v for v in inner.values() if isinstance(v, str) and v.strip()), None)
            if text:
                return one_line(text)
    return None


_HTML_RE = re.compile(r"<\s*(html|body|head|h1|p|title)\b", re.IGNORECASE)
_TAG_RE = re.compile(r"<[^>]*>")


def message_over_budget_line(message: int, threshold: int) -> str:
    """The warning for a message of ``message`` tokens over the token budget on its own
    (it is sent all the same): short, and what to do instead."""
    return (
        f"warning: this message (~{message:,} tokens) is over the {threshold:,}-token "
        "budget; send a part or a file path"
    )


WHY_CHARS: Final = 24
"""Of a failure's reason, what a budget warning quotes (the log has it whole)."""


def clipped_reason(reason: str, chars: int = WHY_CHARS) -> str:
    """``reason`` held to ``chars`` characters for a one-line warning."""
    return reason if len(reason) <= chars else reason[: chars - 1].rstrip() + "…"


def _over(tokens: int, threshold: int) -> str:
    return f"request over the token budget (~{tokens:,} of {threshold:,})"


def over_budget_line(result: Compacted, tokens: int, threshold: int) -> str:
    """The warning for a request still over the token budget after the compaction that was
    to bring it under: kept but not enough, not shorter, or failed. One short line (the
    README says what helps: ``/reset``, a bigger ``AGENT_ASSIST_CONTEXT_TOKENS``)."""
    if result.compaction is not None:
        return f"warning: compacted, the {_over(tokens, threshold)}"
    if result.no_gain:
        return f"warning: {_over(tokens, threshold)}; a summary would be no shorter"
    why = clipped_reason(result.error or "the summarizer skipped it")
    return f"warning: {_over(tokens, threshold)}; not compacted ({why})"


def over_budget_uncompacted_line(tokens: int, threshold: int, *, compaction_off: bool) -> str:
    """The warning for a request over the token budget that no compaction was tried for:
    automatic compaction is off (the oldest turns are left out, and what remains with
    the instructions still outweighs the budget), or nothing is left to compact."""
    if compaction_off:
        return f"warning: {_over(tokens, threshold)}; compaction is off (/compact)"
    return f"warning: {_over(tokens, threshold)}; nothing is left to compact"


def compaction_failed_line(error: str | None, wait: int) -> str:
    """The warning for the first of a run of failed automatic compactions."""
    why = clipped_reason(error or "no reason given", 40)
    return f"warning: compaction failed ({why}); next try in {wait} turns"


TURNS_LEFT_OUT_LINE: Final = (
    "note: compaction is off: the oldest turns are left out of requests (/compact summarizes)"
)
"""Told once a run, when the tail's limits first leave a turn out (H91: silently before)."""
