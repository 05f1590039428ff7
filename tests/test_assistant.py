"""The assistant's tools stay inside the workspace; the offline model drives them for real."""

from __future__ import annotations

import resource
import signal
from pathlib import Path

import pytest

from actors.assistant import TurnDeps, build_agent
from actors.offline_model import LABEL, offline_model


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (tmp_path / "secret.txt").write_text("outside")
    return ws


def run(workspace: Path, prompt: str, resume_context: str = "") -> tuple[str, TurnDeps]:
    deps = TurnDeps(workspace, resume_context=resume_context)
    result = build_agent(offline_model()).run_sync(prompt, deps=deps)
    return result.output, deps


def test_write_and_read_a_workspace_file(workspace: Path) -> None:
    output, deps = run(workspace, "write specs/agent_spec.md: # Agent")
    assert output == f"{LABEL} write_file: wrote specs/agent_spec.md (8 bytes)"
    assert (workspace / "specs" / "agent_spec.md").read_text() == "# Agent\n"
    assert deps.touched == {"specs/agent_spec.md"}
    output, _ = run(workspace, "read specs/agent_spec.md")
    assert "# Agent" in output


@pytest.mark.parametrize("path", ["../secret.txt", "/etc/passwd", "specs/../../secret.txt"])
def test_paths_outside_the_workspace_are_refused(workspace: Path, path: str) -> None:
    output, deps = run(workspace, f"read {path}")
    assert "is not a path inside the workspace" in output
    assert "outside" not in output
    assert deps.touched == set()
    output, _ = run(workspace, f"write {path}: x")
    assert "is not a path inside the workspace" in output


@pytest.mark.parametrize(
    "path", [".git/config", ".git/hooks/pre-commit", "sub/.git/HEAD", ".GIT/config", "sub/.git"]
)
def test_the_repositorys_own_files_are_not_written(workspace: Path, path: str) -> None:
    """A helper's find (H73): the model could write .git/hooks/pre-commit, run by the
    user's next commit. Git's own files are read, never written."""
    (workspace / ".git").mkdir()
    (workspace / ".git" / "config").write_text("[core]\n")
    output, deps = run(workspace, f"write {path}: [alias] x = !evil")
    assert output == (
        f"{LABEL} write_file: error: {path!r} is inside a .git directory; "
        "agent-assist does not write git's own files"
    )
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert not (workspace / ".git" / "hooks").exists() and not (workspace / "sub").exists()
    assert deps.touched == set()
    output, _ = run(workspace, "read .git/config")
    assert "[core]" in output


def test_a_file_named_like_git_is_written(workspace: Path) -> None:
    output, _ = run(workspace, "write docs/.gitignore: build/")
    assert output == f"{LABEL} write_file: wrote docs/.gitignore (7 bytes)"


def test_symlinks_are_refused_for_reading_and_writing(workspace: Path) -> None:
    (workspace / "link.txt").symlink_to(workspace.parent / "secret.txt")
    (workspace / "dir").symlink_to(workspace.parent)
    output, _ = run(workspace, "read link.txt")
    refused = "error: cannot read link.txt: is a symlink; not following it"
    assert output == f"{LABEL} read_file: {refused}"
    output, _ = run(workspace, "write link.txt: overwritten")
    assert "error: cannot write link.txt" in output
    assert (workspace.parent / "secret.txt").read_text() == "outside"
    output, _ = run(workspace, "read dir/secret.txt")
    assert "is not a path inside the workspace" in output


def test_listing_and_decisions(workspace: Path) -> None:
    (workspace / "a.md").write_text("a")
    (workspace / "sub").mkdir()
    output, _ = run(workspace, "list")
    assert output == f"{LABEL} list_files: a.md\nsub/"
    output, deps = run(workspace, "decide Use Chat Completions everywhere")
    assert deps.decisions == ["Use Chat Completions everywhere"]
    assert "recorded decision" in output
    _, deps = run(workspace, "decide: Keep a colon, as write does")  # it was only echoed
    assert deps.decisions == ["Keep a colon, as write does"]


def test_the_resume_context_reaches_the_model_as_instructions(workspace: Path) -> None:
    context = "# Resumed Session Context\nThis is a resumed session (ID: a1b2c3d4e5f6)."
    output, _ = run(workspace, "hello", resume_context=context)
    assert output.endswith("[resume context: session a1b2c3d4e5f6]")
    output, _ = run(workspace, "hello")
    assert "resume context" not in output


def test_a_write_replaces_the_file_whole_and_keeps_its_mode(workspace: Path) -> None:
    spec = workspace / "agent_spec.md"
    spec.write_text("old content that is longer than the new one\n")
    spec.chmod(0o640)
    inode = spec.stat().st_ino
    output, _ = run(workspace, "write agent_spec.md: new")
    assert output.endswith("wrote agent_spec.md (4 bytes)")
    assert spec.read_text() == "new\n"
    assert spec.stat().st_mode & 0o777 == 0o640
    assert spec.stat().st_ino != inode  # renamed into place, not rewritten in place
    assert sorted(p.name for p in workspace.iterdir()) == ["agent_spec.md"]  # no temp file


def test_a_write_never_follows_a_symlink(workspace: Path, tmp_path: Path) -> None:
    (workspace / "agent_spec.md").symlink_to(tmp_path / "secret.txt")
    output, deps = run(workspace, "write agent_spec.md: pwned")
    assert "error: cannot write agent_spec.md" in output
    assert (tmp_path / "secret.txt").read_text() == "outside"
    assert (workspace / "agent_spec.md").is_symlink()
    assert deps.touched == set()


def test_a_failed_write_leaves_the_old_content_and_no_temp_file(workspace: Path) -> None:
    spec = workspace / "agent_spec.md"
    spec.write_text("# kept\n")
    # The file size limit makes the write fail half way (EFBIG), even for root.
    limits = resource.getrlimit(resource.RLIMIT_FSIZE)
    previous = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (16, limits[1]))
    try:
        output, deps = run(workspace, "write agent_spec.md: " + "lost " * 100)
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, limits)
        signal.signal(signal.SIGXFSZ, previous)
    assert "error: cannot write agent_spec.md" in output
    assert spec.read_text() == "# kept\n"
    assert sorted(p.name for p in workspace.iterdir()) == ["agent_spec.md"]
    assert deps.touched == set()


def test_the_first_write_of_a_turn_awaits_the_checkpoint_hook_once(workspace: Path) -> None:
    (workspace / "agent_spec.md").write_text("before\n")
    seen: list[tuple[tuple[str, ...], str]] = []

    async def hook(paths: tuple[str, ...]) -> None:
        seen.append((paths, (workspace / "agent_spec.md").read_text()))

    deps = TurnDeps(workspace, before_first_write=hook)
    agent = build_agent(offline_model())
    agent.run_sync("read agent_spec.md", deps=deps)
    agent.run_sync("write agent_spec.md: after", deps=deps)
    agent.run_sync("write notes.md: more", deps=deps)
    assert seen == [(("agent_spec.md",), "before\n")]
    assert (workspace / "agent_spec.md").read_text() == "after\n"


def test_a_write_whose_checkpoint_failed_is_refused_and_the_next_one_asks_again(
    workspace: Path,
) -> None:
    """A write the checkpoint could not keep a copy before could not be taken back."""
    (workspace / "agent_spec.md").write_text("before\n")
    answers = ["the disk said no", None]
    asked: list[tuple[str, ...]] = []

    async def hook(paths: tuple[str, ...]) -> str | None:
        asked.append(paths)
        return answers.pop(0)

    deps = TurnDeps(workspace, before_first_write=hook)
    agent = build_agent(offline_model())
    refused = agent.run_sync("write agent_spec.md: after", deps=deps)
    assert "agent_spec.md was not written: the disk said no" in str(refused.all_messages())
    assert (workspace / "agent_spec.md").read_text() == "before\n"
    assert deps.touched == set()
    agent.run_sync("write agent_spec.md: after", deps=deps)
    assert asked == [("agent_spec.md",), ("agent_spec.md",)]
    assert (workspace / "agent_spec.md").read_text() == "after\n"


def test_the_first_write_of_another_existing_file_is_checkpointed_too(workspace: Path) -> None:
    (workspace / "agent_spec.md").write_text("spec before\n")
    (workspace / "old.md").write_text("old before\n")
    seen: list[tuple[tuple[str, ...], str]] = []

    async def hook(paths: tuple[str, ...]) -> None:
        seen.append((paths, (workspace / "old.md").read_text()))

    deps = TurnDeps(workspace, before_first_write=hook)
    agent = build_agent(offline_model())
    agent.run_sync("write agent_spec.md: after", deps=deps)
    agent.run_sync("write new.md: created", deps=deps)  # nothing to keep: no checkpoint
    agent.run_sync("write old.md: overwritten", deps=deps)
    agent.run_sync("write old.md: again", deps=deps)
    assert seen == [
        (("agent_spec.md",), "old before\n"),
        (("agent_spec.md", "new.md", "old.md"), "old before\n"),
    ]


def test_a_turn_that_reads_many_large_files_stays_within_its_token_budget(
    workspace: Path,
) -> None:
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from session.history import message_chars

    for n in range(4):
        (workspace / f"f{n}.md").write_text(f"{n}" * 20_000)
    seen: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(sum(message_chars(m) for m in messages))
        if len(seen) <= 4:  # one file per request, as a model working through them would
            call = ToolCallPart("read_file", {"path": f"f{len(seen) - 1}.md"}, f"c{len(seen)}")
            return ModelResponse(parts=[call])
        return ModelResponse(parts=[TextPart("read all four")])

    deps = TurnDeps(workspace, token_budget=12_000)  # about 48,000 characters
    result = build_agent(FunctionModel(model)).run_sync("read f0.md to f3.md", deps=deps)
    assert result.output == "read all four"
    assert max(seen) <= 12_000 * 4, seen  # 80,000 characters were read in all
    saved = str(result.new_messages())
    assert "characters of tool output elided" in saved  # what is kept is what was sent
    assert "3" * 20_000 in saved  # the newest output, read last, is whole


def test_a_tool_return_that_outgrows_the_budget_leaves_earlier_turns_text_out(
    workspace: Path,
) -> None:
    """H135: the budget was checked before a turn's first request only; the guard within
    the turn counted neither the tool definitions nor could it shrink anything but older
    tool returns, so a read after earlier turns of pasted text went over the budget. What
    the model is sent (messages, instructions, tool definitions) now stays within it."""
    import json

    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        UserPromptPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from session.history import message_chars

    (workspace / "notes.md").write_text("n" * 2_500)
    earlier: list[ModelMessage] = []
    for n in range(2):
        earlier += [
            ModelRequest(parts=[UserPromptPart(f"paste {n}: " + "p" * 700)]),
            ModelResponse(parts=[TextPart(f"echo {n}: " + "e" * 700)]),
        ]
    sent: list[int] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tools = [
            {"name": t.name, "description": t.description, "parameters": t.parameters_json_schema}
            for t in info.function_tools
        ]
        instructions = len(info.instructions or "")
        sent.append(sum(map(message_chars, messages)) + instructions + len(json.dumps(tools)))
        if len(sent) == 1:
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": "notes.md"}, "c1")])
        return ModelResponse(parts=[TextPart("read it")])

    deps = TurnDeps(workspace, token_budget=1_500)  # about 6,000 characters
    agent = build_agent(FunctionModel(model))
    result = agent.run_sync("read notes.md", message_history=earlier, deps=deps)
    assert result.output == "read it"
    assert sent[0] <= 1_500 * 4, "the turn started within the budget"
    assert max(sent) <= 1_500 * 4, sent
    assert "n" * 2_500 in str(result.new_messages()), "the read is whole: the model needs it"
    assert "p" * 700 in str(earlier[0]), "the session's history is kept"
    prompt = result.new_messages()[0].parts[-1]
    assert isinstance(prompt, UserPromptPart) and prompt.content == "read notes.md"


def test_a_file_read_is_cut_to_half_the_context_budget(workspace: Path) -> None:
    """A helper's attack: a 272 KB file read with a 2,000-token budget made a request of
    67,000 tokens, which the model refused; the same file could never be read."""
    (workspace / "big.txt").write_text("line of a big file\n" * 15_000)
    from pydantic_ai.messages import ToolReturnPart

    deps = TurnDeps(workspace, token_budget=2_000)
    result = build_agent(offline_model()).run_sync("read big.txt", deps=deps)
    (returned,) = [
        str(part.content)
        for message in result.new_messages()
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]
    assert returned.endswith(
        "\n[truncated: the first 4,000 characters of 285,000 bytes, half of the context budget]"
    )
    assert len(returned) < 4_000 + 100


@pytest.mark.anyio
async def test_a_write_the_turn_was_cancelled_during_is_still_its_own(tmp_path: Path) -> None:
    """The CI's failure: Ctrl+C while the write's thread ran left the file written but not
    recorded as the turn's (pydantic-ai cancels a tool's task with ``Task.cancel``, which
    anyio's shield around the thread does not stop), and the watcher's news of it was
    told as a change made outside agent-assist."""
    import asyncio
    import hashlib

    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    from actors.assistant import write_file

    deps = TurnDeps(tmp_path)
    ctx = RunContext(deps=deps, model=TestModel(), usage=RunUsage())
    target = tmp_path / "a.md"
    task = asyncio.ensure_future(write_file(ctx, "a.md", "by the assistant\n"))
    # Renamed into place, the file is there before the thread has synced the directory,
    # and its result reaches the task two loop turns after that.
    while not target.exists():  # noqa: ASYNC110
        await asyncio.sleep(0)
    task.cancel()  # as pydantic-ai does
    with pytest.raises(asyncio.CancelledError):
        await task
    assert target.read_text() == "by the assistant\n"
    assert deps.written == {"a.md": hashlib.sha256(b"by the assistant\n").hexdigest()}
    assert "a.md" in deps.touched


def test_writes_of_one_file_the_model_calls_at_once_happen_in_its_order(workspace: Path) -> None:
    """A helper's find (H50): two write_file calls of one path in one response raced:
    either content could be on disk, and the model was told both were written."""
    import hashlib

    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    big, small = "A" * 100_000, "B"

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("write_file", {"path": "same.md", "content": big}, "c1"),
                    ToolCallPart("write_file", {"path": "same.md", "content": small}, "c2"),
                ]
            )
        return ModelResponse(parts=[TextPart("done")])

    for _ in range(5):
        deps = TurnDeps(workspace)
        build_agent(FunctionModel(model)).run_sync("write it twice", deps=deps)
        assert (workspace / "same.md").read_text() == small
        assert deps.written == {"same.md": hashlib.sha256(small.encode()).hexdigest()}


def test_a_read_and_a_listing_after_a_write_the_model_calls_at_once_see_the_write(
    workspace: Path,
) -> None:
    """A helper's find (H54): write_file then read_file of one path in one response: the
    read ran first and told the model there was no such file."""
    from pydantic_ai.messages import (
        ModelMessage,
        ModelRequest,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    returns: dict[str, str] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            return ModelResponse(
                parts=[
                    ToolCallPart("write_file", {"path": "new.md", "content": "A" * 100_000}, "w"),
                    ToolCallPart("read_file", {"path": "new.md"}, "r"),
                    ToolCallPart("list_files", {}, "l"),
                ]
            )
        last = messages[-1]
        assert isinstance(last, ModelRequest)
        for part in last.parts:
            if isinstance(part, ToolReturnPart):
                returns[part.tool_call_id] = str(part.content)
        return ModelResponse(parts=[TextPart("done")])

    build_agent(FunctionModel(model)).run_sync("write it, then read it", deps=TurnDeps(workspace))
    assert returns["w"] == "wrote new.md (100000 bytes)"
    assert returns["r"].startswith("AAAA")
    assert "new.md" in returns["l"].splitlines()


@pytest.mark.parametrize(
    "path", ["notes.md\nerror: 401 from the endpoint", "a\x1b[31mred.md", "tab\there.md"]
)
def test_a_path_with_a_control_character_is_refused(workspace: Path, path: str) -> None:
    """A helper's find (H50): a model's newline in a path forged lines on the terminal
    (`error: 401 ...`) and made a directory of that name; an escape made a file whose
    name the tool line did not show."""
    import anyio
    from pydantic_ai import RunContext
    from pydantic_ai.models.test import TestModel
    from pydantic_ai.usage import RunUsage

    from actors.assistant import write_file

    ctx = RunContext(deps=TurnDeps(workspace), model=TestModel(), usage=RunUsage())
    answer = anyio.run(write_file, ctx, path, "x")
    assert answer.startswith("error: ") and "is not a path inside the workspace" in answer
    assert all(p.name.isprintable() for p in workspace.rglob("*"))



def test_a_one_byte_write_is_told_in_the_singular(workspace: Path) -> None:
    from pydantic_ai.messages import (
        ModelMessage,
        ModelResponse,
        TextPart,
        ToolCallPart,
        ToolReturnPart,
    )
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    returns: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if len(messages) == 1:
            call = ToolCallPart("write_file", {"path": "one.md", "content": "x"}, "w")
            return ModelResponse(parts=[call])
        returns.extend(
            str(part.content) for part in messages[-1].parts if isinstance(part, ToolReturnPart)
        )
        return ModelResponse(parts=[TextPart("done")])

    build_agent(FunctionModel(model)).run_sync("write one byte", deps=TurnDeps(workspace))
    assert (workspace / "one.md").read_bytes() == b"x"
    assert returns == ["wrote one.md (1 byte)"]
