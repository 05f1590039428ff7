"""The wire protocol's typed frames: a pydantic discriminated union on ``type``.

The supervisor validates every incoming frame here; the thin client builds
and reads the same shapes as plain dicts (``supervisor/wire.py``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    ValidationError,
    model_serializer,
)

from supervisor.wire import (
    MAX_FRAME_BYTES,
    MAX_HELLO_SECRETS,
    MAX_MESSAGE_CHARS,
    MAX_SECRET_CHARS,
    MAX_SERVER_FRAME_BYTES,
    MIN_SECRET_CHARS,
    ErrorCode,
    FrameError,
)


class _Frame(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# -- client to supervisor ---------------------------------------------------


class ChatSettings(_Frame):
    """The settings a chat resolved (defaults < config.toml < its environment < options):
    its session runs with them, whatever the supervisor was started with."""

    summary_model: str | None = Field(default=None, max_length=256)
    """None: the offline summarizer."""
    compaction_interval: int = Field(ge=0, le=100)
    compaction_overlap: int = Field(ge=0, le=50)
    context_tokens: int | None = Field(default=None, ge=1000, le=10_000_000)
    """None: derived from the model."""
    model_timeout: int = Field(ge=1, le=86_400)
    checkpoint_max_mb: float = Field(gt=0, le=10_000_000)


class Hello(_Frame):
    type: Literal["hello"]
    protocol: int
    role: Literal["terminal", "control"]
    client_pid: int = Field(gt=0, le=2**31 - 1)
    terminal_pid: int | None = Field(default=None, gt=0, le=2**31 - 1)
    workspace: str | None = Field(default=None, max_length=4096)
    model: str | None = Field(default=None, max_length=256)
    state_root: str | None = Field(default=None, max_length=4096)
    """Where the client keeps sessions (``AGENT_ASSIST_HOME`` resolved): a supervisor that
    keeps them elsewhere refuses it, rather than write where the client does not look."""
    settings: ChatSettings | None = None
    """A terminal's own settings; without them, the supervisor's."""
    secrets: list[
        Annotated[str, Field(min_length=MIN_SECRET_CHARS, max_length=MAX_SECRET_CHARS)]
    ] = Field(default_factory=list, max_length=MAX_HELLO_SECRETS)
    """The values of the terminal's credential-named environment variables: its session's
    files are scrubbed of them too (the supervisor's own environment may lack them). Kept
    in memory only, never written."""


Continuing = Literal["resumed", "fresh"] | Annotated[int, Field(ge=1)]
"""How the model knew the session a terminal re-attaches to: with a resume context (the
user resumed it: "resumed"; or restored checkpoint N: N) or none ("fresh": a new session,
or one /reset). It goes on as it was: no resume context is made up for a fresh one (what
changed while no supervisor ran is told as changes outside), a restored one's still says
so."""


class Open(_Frame):
    type: Literal["open"]
    mode: Literal["new", "resume"]
    session_id: str | None = Field(default=None, max_length=64)
    continuing: Continuing | None = None
    """A re-attach after the supervisor went away, of the session the terminal never left
    (see ``Continuing``)."""


class UserMessage(_Frame):
    type: Literal["user_message"]
    text: str = Field(max_length=MAX_MESSAGE_CHARS)
    id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The client's id of this message; the same id again is a retry (answered once)."""
    saved_only: bool = False
    """A retry that is answered only if the turn was saved: the supervisor died during a
    reply whose tools had run, and running it again would run them twice."""


class Cancel(_Frame):
    type: Literal["cancel"]


class Command(_Frame):
    type: Literal["command"]
    name: Literal["save", "reset", "checkpoint", "compact", "resume"]
    arg: str | None = None


class Close(_Frame):
    """The client is leaving: save (as on any exit), answer ``closed``, then close."""

    type: Literal["close"]


class ConfirmReply(_Frame):
    type: Literal["confirm_reply"]
    id: int = Field(ge=0, le=2**63)
    answer: bool
    cancel: bool = False
    """The user cancelled the question (Ctrl+C): the action it guards does not happen."""


class ListSessions(_Frame):
    type: Literal["list_sessions"]
    workspace: str | None = None
    all: bool = False
    terminal_pid: int | None = Field(default=None, gt=0, lt=2**31)
    """The asking tab's identity: the line about its own unreadable pointer says so."""


class ShowSession(_Frame):
    type: Literal["show_session"]
    workspace: str | None = None
    """None with ``project`` given: a session named by its id needs no workspace."""
    session_id: str
    project: str | None = None
    """A project directory's name (``<name>_<hash8>``), instead of the workspace's: a
    session whose workspace is elsewhere, or gone."""


class RemoveSession(_Frame):
    type: Literal["remove_session"]
    workspace: str | None = None
    session_id: str
    project: str | None = None
    """As ``ShowSession.project``."""
    force: bool = False
    """Even a session a running terminal may hold, its pointer unreadable (never a live one)."""
    terminal_pid: int | None = Field(default=None, gt=0, lt=2**31)
    """The asking tab's identity: its own live session and unreadable pointer are said so."""


class PruneSessions(_Frame):
    type: Literal["prune_sessions"]
    workspace: str | None = None
    all: bool = False
    older_than_days: float = Field(default=30.0, ge=0)
    dry_run: bool = False
    terminal_pid: int | None = Field(default=None, gt=0, lt=2**31)
    """As ``ListSessions.terminal_pid``."""


class Status(_Frame):
    type: Literal["status"]


class Stop(_Frame):
    type: Literal["stop"]
    if_idle: bool = False
    """Only if no terminal is attached (answered ``stopping: false`` with how many are):
    a client switching to its newer version stops no chat (capability ``stop_if_idle``)."""


ClientFrame = Annotated[
    Hello
    | Open
    | UserMessage
    | Cancel
    | Command
    | Close
    | ConfirmReply
    | ListSessions
    | ShowSession
    | RemoveSession
    | PruneSessions
    | Status
    | Stop,
    Field(discriminator="type"),
]
CLIENT_FRAME_TYPES = frozenset(
    {
        "hello",
        "open",
        "user_message",
        "cancel",
        "command",
        "close",
        "confirm_reply",
        "list_sessions",
        "show_session",
        "remove_session",
        "prune_sessions",
        "status",
        "stop",
    }
)
_client_adapter: TypeAdapter[ClientFrame] = TypeAdapter(ClientFrame)


# -- supervisor to client ---------------------------------------------------


class Offer(_Frame):
    session_id: str
    last_active: str
    turns: int | None = None
    summary: str | None = None
    modified: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()
    unchanged: int = 0
    unanswered: str | None = None
    """The user's last message when it got no reply (the offer says so)."""
    notes: tuple[str, ...] = ()
    """Lines said with the offer, to a tab that is offered it only (not to ``--new`` or
    ``--resume ID``): it may be another tab's, whose pointer could not be read."""


class Welcome(_Frame):
    type: Literal["welcome"] = "welcome"
    supervisor_pid: int
    offer: Offer | None = None
    warnings: tuple[str, ...] = ()
    others: tuple[Offer, ...] = ()
    """Other resumable sessions of the project, newest first (no drift computed)."""
    more_others: int = 0
    """How many more there are than ``others`` lists."""
    taken: str | None = None
    """With no offer: the project's newest session is live in another terminal (why),
    which ``--yes`` tells before it starts a new session."""
    openai_base_url: str | None = None
    """The supervisor's ``OPENAI_BASE_URL`` (None: unset): where its OpenAI-style model
    requests go, which a terminal started from another environment tells its user."""
    version: str | None = None
    """What this supervisor is (``supervisor/identity.py``): its package version, its
    build (a fingerprint of its code), where that code is installed, and what it knows
    that the version before did not. A supervisor of that version sends none of them."""
    build: str | None = None
    source: str | None = None
    capabilities: tuple[str, ...] = ()
    detached: bool | None = None


class LastReply(_Frame):
    """What a chat shows of the turn its open waited for (a terminal gone let it finish),
    or of one that ended so before the open, unseen: ``text``, its reply, drawn as a
    reply, after ``heading`` if given; else ``note``, one line said instead."""

    text: str = ""
    note: str | None = None
    heading: str | None = None

    @model_serializer(mode="wrap")
    def _heading_only_if_any(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.heading is None:  # as before it was added
            data.pop("heading", None)
        return data


class Opened(_Frame):
    type: Literal["opened"] = "opened"
    session_id: str
    resumed: bool
    warnings: tuple[str, ...] = ()
    drift: tuple[str, ...] = ()
    phase: str | None = None
    last_reply: LastReply | None = None
    """Only after a wait for the last reply, or when it ended unseen (sent only then: an
    older client ignores it)."""
    unanswered: str | None = None
    """A resumed session's last message, when it got no reply and ``last_reply`` does not
    say so (sent only then); a chat that showed no offer (``--resume ID``) tells it."""

    @model_serializer(mode="wrap")
    def _last_reply_only_after_a_wait(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self.last_reply is None:
            data.pop("last_reply", None)
        if self.unanswered is None:
            data.pop("unanswered", None)
        return data


class TextDelta(_Frame):
    type: Literal["text_delta"] = "text_delta"
    text: str


class TurnEnd(_Frame):
    type: Literal["turn_end"] = "turn_end"
    status: Literal["ok", "cancelled", "error"]
    error: str | None = None
    input_tokens: int | None = None
    phase: str | None = None
    notes: tuple[str, ...] = ()
    """Lines for after the reply (``note: the reply stopped at the model's output token
    limit; ...``)."""
    secrets: tuple[str, ...] = ()
    """Values the turn revealed as secret (``password: X``): the terminal keeps them in
    memory and tells them in its hello again after a re-attach, so a supervisor that took
    over (the heir) scrubs them too. Never written; an older client ignores the key."""


class ToolCall(_Frame):
    """One line describing a tool call of the running turn (``write_file a.md (1.2 KB)``)."""

    type: Literal["tool_call"] = "tool_call"
    text: str


class Notice(_Frame):
    type: Literal["notice"] = "notice"
    text: str
    at_reattach: bool = False
    """The re-attach's word of a change the terminal may have shown before the supervisor
    went away (not shown twice); a later notice of that file is of a new change. Sent
    only when true: every other notice is as it was."""
    files: tuple[str, ...] = ()
    """The files a line for a flood of changes outside stands for, without naming them
    (for the toolbar's count: every one of them). Sent only when some."""

    @model_serializer(mode="wrap")
    def _marked_only_at_reattach(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if not self.at_reattach:
            data.pop("at_reattach", None)
        if not self.files:
            data.pop("files", None)
        return data


class Confirm(_Frame):
    type: Literal["confirm"] = "confirm"
    id: int
    question: str


class CommandResult(_Frame):
    type: Literal["command_result"] = "command_result"
    text: str
    phase: str | None = None
    input_tokens: int | None = None
    """After ``/compact``: the conversation's estimated tokens now (for the toolbar)."""


class ClosedFrame(_Frame):
    type: Literal["closed"] = "closed"
    session_id: str | None
    saved: bool
    reason: str
    unsaved: bool = False
    """Turns were made that could not be saved; ``kept_at`` says where they are kept."""
    kept_at: str | None = None
    told: bool = False
    """A notice just said what became of the session: no closing line is added to it."""


class Result(_Frame):
    type: Literal["result"] = "result"
    data: Any


class ErrorFrame(_Frame):
    type: Literal["error"] = "error"
    code: str
    message: str
    open_refused: bool = False
    """The session the front door told ``opened`` could not be opened for real (the
    resume refused): the terminal takes it as the refusal of its ``open``."""


ServerFrame = (
    Welcome
    | Opened
    | TextDelta
    | TurnEnd
    | ToolCall
    | Notice
    | Confirm
    | CommandResult
    | ClosedFrame
    | Result
    | ErrorFrame
)


def parse_client_frame(line: bytes) -> ClientFrame:
    """Validate one received line; FrameError with a stable code if it is not acceptable."""
    if len(line) > MAX_FRAME_BYTES:
        raise FrameError(ErrorCode.FRAME_TOO_LARGE, "frame is over the size cap")
    try:
        raw = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise FrameError(ErrorCode.BAD_FRAME, "frame is not valid JSON") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("type"), str):
        raise FrameError(ErrorCode.BAD_FRAME, "frame must be a JSON object with a 'type'")
    if raw["type"] not in CLIENT_FRAME_TYPES:
        raise FrameError(ErrorCode.UNKNOWN_TYPE, f"unknown frame type {raw['type'][:40]!r}")
    try:
        return _client_adapter.validate_python(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"][1:]) or raw["type"]
        raise FrameError(ErrorCode.INVALID_REQUEST, f"invalid {where}: {first['msg']}") from exc


def encode_server_frame(frame: ServerFrame) -> bytes:
    """The frame's line. One over ``MAX_SERVER_FRAME_BYTES`` (a client would refuse it and
    lose the connection's framing) keeps the head of its text and says so, or, with no
    text to cut, becomes an error frame that says what was not sent."""
    data = orjson.dumps(frame.model_dump(mode="json")) + b"\n"
    if len(data) <= MAX_SERVER_FRAME_BYTES:
        return data
    over = (
        f"the supervisor's {frame.type} frame of {len(data):,} bytes is over the "
        f"{MAX_SERVER_FRAME_BYTES:,}-byte cap"
    )
    for name in ("text", "question", "drift"):
        value = getattr(frame, name, None)
        if isinstance(value, str) and len(value) > CUT_TEXT_CHARS:
            cut = f"{value[:CUT_TEXT_CHARS]}\n[... {over}; the rest was not sent]"
            return encode_server_frame(frame.model_copy(update={name: cut}))
    error = ErrorFrame(code=ErrorCode.ANSWER_TOO_LARGE, message=f"{over}; it was not sent")
    return orjson.dumps(error.model_dump(mode="json")) + b"\n"


CUT_TEXT_CHARS = MAX_SERVER_FRAME_BYTES // 8
"""The head of an over-long text that is sent (a character takes at most 6 bytes)."""
