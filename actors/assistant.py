"""The agent-design assistant: a pydantic-ai Agent, its workspace-confined tools, model choice."""

from __future__ import annotations

import asyncio
import errno
import hashlib
import json
import os
import posixpath
import stat
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, get_type_hints

import anyio
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.capabilities import ProcessHistory
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models import Model

from session.atomic import replace_workspace_file
from session.compaction import CHARS_PER_TOKEN
from session.filesystem import WORKSPACE_GONE, in_git_directory, is_safe_relative_path
from session.history import (
    fit_earlier_turns,
    fit_last_returns,
    fit_tool_returns,
    framing_chars,
    message_chars,
)
from session.models import WorkPhase
from session.os_paths import shown_path
from session.wire import wire_chars

MAX_READ_BYTES = 256 * 1024
MIN_READ_CHARS = 2_000
MAX_LIST_ENTRIES = 500

BASE_INSTRUCTIONS = """\
You are agent-assist, an assistant for designing LLM agents. Your main artefact is
agent_spec.md in the user's workspace: the agent's purpose, users, tools, model,
prompts, memory, evaluation and deployment. Ask what you need to know, propose
designs with their trade-offs, and keep agent_spec.md current with write_file.
Record every decision the user agrees to with record_decision. Call set_phase
when the work moves between designing the agent, coding it and deploying it.
Only read and write files inside the workspace, with paths relative to it."""


@dataclass
class TurnDeps:
    """What one turn's tools may touch; owned by that turn alone."""

    workspace: Path
    resume_context: str = ""
    notes: str = ""
    touched: set[str] = field(default_factory=set)
    read: dict[str, str] = field(default_factory=dict)
    """The files this turn read before writing them, each with the SHA-256 of what it
    read first: one that holds something else at the turn's end changed outside."""
    written: dict[str, str] = field(default_factory=dict)
    """The files this turn wrote, each with the SHA-256 of what it wrote last: a change
    seen during the turn is the turn's own unless the file now holds something else."""
    decisions: list[str] = field(default_factory=list)
    phase: WorkPhase | None = None
    """The phase of the work the turn moved to (``set_phase``), if any."""
    token_budget: int | None = None
    """Each model request of the turn is kept within this many tokens (estimated)."""
    elided_chars: int = 0
    """The characters of the history the last model request left out to keep within
    ``token_budget`` (the history keeps them whole: the next turn sends them again). Not
    the turn's own messages cut: pydantic-ai keeps them as sent, and so does the session."""
    before_first_write: Callable[[tuple[str, ...]], Awaitable[str | None]] | None = None
    """Awaited before the turn's first file write, with the paths the turn touched and
    the one about to be written (the automatic checkpoint); again before the first
    write of any other file that already exists, so that what it held is kept too.
    It answers None, or why the write may not happen."""
    checkpointed: set[str] = field(default_factory=set)
    """Paths whose content before this turn's writes a checkpoint already keeps."""
    own_directories: tuple[Path, ...] = ()
    """agent-assist's own state (the state root, the runtime directory), resolved: in a
    workspace that holds one (``cd ~; agent-assist``) no tool reads, writes or lists it
    (a file read is tracked: the session's own saves were told as changes outside)."""
    checkpoint_lock: anyio.Lock = field(default_factory=anyio.Lock)
    files_lock: anyio.Lock = field(default_factory=anyio.Lock)
    """Held by each file tool call (a write from its checkpoint to its write, a read, a
    listing): calls the model made at once touch the files one after the other, in the
    order it made them (two writes of one file raced: either content could win, and the
    model was told the other; a read after a write of the same file ran first, and found
    no file)."""


async def _before_write(deps: TurnDeps, relative: str) -> str | None:
    """Run the pre-write hook before the turn's first write, and before the first write
    of each other file that exists (a file the assistant creates has nothing to keep).
    Concurrent writes wait until it is done. None, or why the write may not happen (the
    hook is asked again at the next write)."""
    if deps.before_first_write is None or relative in deps.checkpointed:
        return None
    async with deps.checkpoint_lock:
        if relative in deps.checkpointed:
            return None
        if deps.checkpointed:
            exists = await anyio.to_thread.run_sync(os.path.lexists, deps.workspace / relative)
            if not exists:
                deps.checkpointed.add(relative)
                return None
        paths = deps.touched | {relative}
        refused = await deps.before_first_write(tuple(sorted(paths)))
        if refused is None:
            deps.checkpointed.update(paths)
        return refused


def _relative(path: str) -> str:
    return path.strip().removeprefix("./")


def written_paths(tool_name: str, args: dict[str, Any]) -> tuple[str, ...]:
    """The workspace paths a call of ``tool_name`` with ``args`` writes, normalized as
    the watcher names them (``write_file``'s path; the other tools write no file)."""
    path = args.get("path")
    if tool_name != "write_file" or not isinstance(path, str):
        return ()
    return (posixpath.normpath(_relative(path)),)


def _check_path(deps: TurnDeps, path: str) -> str | None:
    """An error line if ``path`` may not be used, else None."""
    if not is_safe_relative_path(deps.workspace, _relative(path)):
        return f"error: {path!r} is not a path inside the workspace"
    if (own := own_directory_of(deps, _relative(path))) is not None:
        return (
            f"error: {path!r} is inside agent-assist's own state ({own}); "
            "the tools do not touch its sessions, settings and checkpoints"
        )
    return None


def own_directory_of(deps: TurnDeps, relative: str) -> Path | None:
    """The directory of agent-assist's own state that ``relative`` (a safe path of the
    workspace: no symlinked directory below it) lies in, if any."""
    target = Path(os.path.realpath(deps.workspace)) / relative
    return next((own for own in deps.own_directories if target.is_relative_to(own)), None)


def read_workspace_file(
    workspace: Path, relative: str, limit: int = MAX_READ_BYTES
) -> tuple[str, str | None]:
    """The file's text, its first ``limit`` characters (at most ``MAX_READ_BYTES`` bytes
    read) with a note saying so if it is longer; and the SHA-256 of the file as read
    (None when it was not read whole)."""
    try:
        fd = os.open(
            workspace / relative, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        )
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # said as a write says it, not "too many levels of ..."
            raise OSError(errno.ELOOP, "is a symlink; not following it", relative) from exc
        raise
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise OSError("not a regular file")
        data = handle.read(MAX_READ_BYTES + 1)
    text = data[:MAX_READ_BYTES].decode("utf-8", errors="replace")
    digest = hashlib.sha256(data).hexdigest() if len(data) <= MAX_READ_BYTES else None
    if len(data) <= MAX_READ_BYTES and len(text) <= limit:
        return text, digest
    shown = min(limit, len(text))
    return (
        f"{text[:shown]}\n[truncated: the first {shown:,} characters of {info.st_size:,} bytes"
        + (", half of the context budget]" if shown == limit < MAX_READ_BYTES else "]")
    ), digest


def write_workspace_file(workspace: Path, relative: str, content: str) -> tuple[int, str]:
    """Replace the file atomically and durably (a crash leaves the old or the new content,
    never a torn file), keeping its mode; a symlink at the path is refused. The size and
    the SHA-256 of what was written."""
    target = workspace / relative
    if not workspace.is_dir():  # deleted or moved: its directories are made, not it
        raise OSError(errno.ENOENT, WORKSPACE_GONE)
    target.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode("utf-8")
    replace_workspace_file(target, data)
    return len(data), hashlib.sha256(data).hexdigest()


def list_workspace(workspace: Path, relative: str) -> list[str]:
    base = workspace / relative if relative not in ("", ".") else workspace
    if base.is_symlink() or not base.is_dir():
        raise OSError("not a directory")
    entries = []
    for entry in sorted(base.iterdir()):
        if entry.name.startswith("."):
            continue
        suffix = "/" if entry.is_dir() and not entry.is_symlink() else ""
        entries.append(listed_name(entry.relative_to(workspace).as_posix()) + suffix)
    return entries[:MAX_LIST_ENTRIES]


def listed_name(relative: str) -> str:
    """A workspace path as a listing tells it: bytes that are not UTF-8 (lone surrogates,
    which no session file and no frame can carry) and control characters (a newline in a
    name reads as two entries) as ``\\xNN`` escapes."""
    return "".join(
        f"\\x{ord(c):02x}" if ord(c) < 32 or 127 <= ord(c) < 160 else c
        for c in shown_path(relative)
    )


async def read_file(ctx: RunContext[TurnDeps], path: str) -> str:
    """Read a UTF-8 text file of the workspace (path relative to the workspace)."""
    if (problem := _check_path(ctx.deps, path)) is not None:
        return problem
    relative = _relative(path)
    limit = read_limit(ctx.deps.token_budget)
    try:
        async with ctx.deps.files_lock:  # fair: the calls' order
            text, digest = await anyio.to_thread.run_sync(
                read_workspace_file, ctx.deps.workspace, relative, limit
            )
    except OSError as exc:
        return f"error: cannot read {relative}: {exc.strerror or exc}"
    ctx.deps.touched.add(relative)
    if digest is not None and relative not in ctx.deps.written:
        ctx.deps.read.setdefault(relative, digest)  # what the model was shown first
    return text


def read_limit(token_budget: int | None) -> int:
    """The characters one ``read_file`` returns: half of the request's token budget (a
    file of a model's whole context made that request fail), within
    ``MIN_READ_CHARS``-``MAX_READ_BYTES``."""
    if token_budget is None:
        return MAX_READ_BYTES
    return max(MIN_READ_CHARS, min(MAX_READ_BYTES, token_budget * CHARS_PER_TOKEN // 2))


async def write_file(ctx: RunContext[TurnDeps], path: str, content: str) -> str:
    """Create or replace a text file of the workspace (path relative to the workspace)."""
    if (problem := _check_path(ctx.deps, path)) is not None:
        return problem
    if in_git_directory(_relative(path)):  # a hook written here runs at the next commit
        return (
            f"error: {path!r} is inside a .git directory; "
            "agent-assist does not write git's own files"
        )
    async with ctx.deps.files_lock:  # fair: the calls' order
        return await _write_file(ctx, _relative(path), content)


async def _write_file(ctx: RunContext[TurnDeps], relative: str, content: str) -> str:
    if (refused := await _before_write(ctx.deps, relative)) is not None:
        return f"error: {relative} was not written: {refused}"
    write = asyncio.ensure_future(
        anyio.to_thread.run_sync(write_workspace_file, ctx.deps.workspace, relative, content)
    )
    try:
        size, digest = await asyncio.shield(write)
    except OSError as exc:
        return f"error: cannot write {relative}: {exc.strerror or exc}"
    except asyncio.CancelledError:
        # pydantic-ai cancels a tool's task natively (Task.cancel, which anyio's shield
        # does not stop) while the write's thread runs on: what it wrote is the turn's.
        await asyncio.wait({write})
        if not write.cancelled() and write.exception() is None:
            ctx.deps.touched.add(relative)
            ctx.deps.written[relative] = write.result()[1]
        raise
    ctx.deps.touched.add(relative)
    ctx.deps.written[relative] = digest
    return f"wrote {relative} ({size} {'byte' if size == 1 else 'bytes'})"


async def list_files(ctx: RunContext[TurnDeps], directory: str = ".") -> str:
    """List the files and directories of a workspace directory."""
    relative = _relative(directory) or "."
    if relative != "." and (problem := _check_path(ctx.deps, relative)) is not None:
        return problem
    try:
        async with ctx.deps.files_lock:  # fair: the calls' order
            entries = await anyio.to_thread.run_sync(list_workspace, ctx.deps.workspace, relative)
    except OSError as exc:
        return f"error: cannot list {relative}: {exc.strerror or exc}"
    return "\n".join(entries) if entries else "(empty)"


async def record_decision(ctx: RunContext[TurnDeps], decision: str) -> str:
    """Record a key design decision the user agreed to, in one sentence."""
    text = " ".join(decision.split())
    if not text:
        return "error: empty decision"
    ctx.deps.decisions.append(text)
    return f"recorded decision: {text}"


async def set_phase(ctx: RunContext[TurnDeps], phase: WorkPhase) -> str:
    """Set the phase of the work: design (the agent's specification), code (building
    it) or deploy (shipping and running it)."""
    ctx.deps.phase = phase
    return f"phase set to {phase}"


async def within_budget(
    ctx: RunContext[TurnDeps], messages: list[ModelMessage]
) -> list[ModelMessage]:
    """Before each model request: over the turn's token budget, the oldest tool outputs
    are elided, then the earlier turns' texts, then the last request's tool outputs are
    cut to share the room left (compaction runs between turns; this keeps one long turn
    in bounds).
    Async, like ``session_context``: a plain ``def`` would cost a thread hop per request."""
    budget = ctx.deps.token_budget
    if budget is None:
        return messages
    instructions = agent_chars() + wire_chars(ctx.deps.resume_context) + framing_chars(messages)
    instructions += wire_chars(ctx.deps.notes)
    room = budget * CHARS_PER_TOKEN - instructions
    fitted = fit_last_returns(fit_earlier_turns(fit_tool_returns(messages, room), room), room)
    ctx.deps.elided_chars = sum(  # the turn's own messages are saved as sent (H189)
        message_chars(whole) - message_chars(sent)
        for whole, sent in zip(messages, fitted, strict=True)
        if whole is not sent and whole.run_id != ctx.run_id
    )
    return fitted


# pydantic-ai reads a history processor's annotations before every model request to see
# whether it takes the run context; resolved once here, they are not evaluated each time.
within_budget.__annotations__ = get_type_hints(within_budget)


TOOLS = (read_file, write_file, list_files, record_decision, set_phase)


@cache
def agent_chars() -> int:
    """The characters every request carries besides the session's part: the base
    instructions and the tool definitions, as Chat Completions sends them (about 2 KB:
    a quarter of a 2,000-token budget, which the estimate of a request must count)."""
    definitions = [Tool(tool).tool_def for tool in TOOLS]
    tools = [
        {
            "type": "function",
            "function": {
                "name": d.name,
                "description": d.description,
                "parameters": d.parameters_json_schema,
                "strict": True,
            },
        }
        for d in definitions
    ]
    compact = json.dumps(tools, ensure_ascii=False, separators=(",", ":"))
    return wire_chars(BASE_INSTRUCTIONS) + len(compact.encode()) + REQUEST_ENVELOPE_CHARS


REQUEST_ENVELOPE_CHARS = 300
"""What a Chat Completions request carries besides its messages' texts and the tools: the
model's name, the stream options, and each message's role (the instructions', the user's
message about to be sent)."""


def build_agent(model: Model | str) -> Agent[TurnDeps, str]:
    agent: Agent[TurnDeps, str] = Agent(
        model,
        deps_type=TurnDeps,
        instructions=BASE_INSTRUCTIONS,
        tools=list(TOOLS),
        capabilities=[ProcessHistory(within_budget)],
        # A compaction is the history's first message (a CompactionPart); without this
        # pydantic-ai announces it in a mid-conversation system message that strict
        # chat templates reject (see FACTS.md).
        model_settings={"framing_announcement": "never"},
    )

    @agent.instructions
    async def session_context(ctx: RunContext[TurnDeps]) -> str:
        """The resume block (empty after /reset) and notes such as outside file changes.
        Async: pydantic-ai runs a plain ``def`` in a worker thread, a thread hop per request."""
        return "\n\n".join(part for part in (ctx.deps.resume_context, ctx.deps.notes) if part)

    return agent


def resolve_model(name: str) -> Model | str:
    """``offline`` is the built-in deterministic model; anything else is a pydantic-ai model string.

    ``openai-chat:NAME`` speaks Chat Completions to ``OPENAI_BASE_URL`` with ``OPENAI_API_KEY``;
    a streamed reply that ends without the model's finish reason was cut (a proxy or the
    server closed the connection early) and fails the turn instead of being kept whole.
    A blip is asked again; a wait the endpoint asks for is not waited unseen past a few
    seconds (``chat_client``: a 429's ``Retry-After`` ran past the summary model's
    deadline, and the reason told was the timeout, not the rate limit).
    """
    if name == "offline":
        from actors.offline_model import offline_model

        return offline_model()
    if name.startswith("openai-chat:"):
        from pydantic_ai.models.openai import OpenAIChatModel
        from pydantic_ai.profiles.openai import OpenAIModelProfile
        from pydantic_ai.providers.openai import OpenAIProvider

        from actors.chat_client import chat_client

        base_url = os.environ.get("OPENAI_BASE_URL") or None
        api_key = os.environ.get("OPENAI_API_KEY") or "not-set"
        provider = OpenAIProvider(openai_client=chat_client(base_url, api_key))
        return OpenAIChatModel(
            name.removeprefix("openai-chat:"),
            provider=provider,
            profile=OpenAIModelProfile(openai_chat_streaming_requires_finish_reason=True),
        )
    return name
