"""The command line's edges as a new user meets them: over-long messages, closed pipes,
end of input at questions, out-of-range numbers, and what deleting a session leaves."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from supervisor.identity import Identity
from tests.e2e.frames import open_terminal
from tests.e2e.harness import AGENT_ASSIST, Env, wait_for
from tests.e2e.openai_server import ChatServer

LIMIT = 200_000


def pointers(env: Env) -> list[str]:
    return sorted(p.name for p in env.project.glob("active_*.json"))


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_rm_removes_the_pointers_to_the_session(env: Env, supervisor: str) -> None:
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert len(pointers(env)) == 1
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    removed = env.run("sessions", "rm", session_id)
    assert removed.returncode == 0, removed.stderr
    assert env.session_ids() == [] and pointers(env) == []


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_prune_removes_the_pointers_to_what_it_prunes(env: Env, supervisor: str) -> None:
    tab = env.terminal()
    result = env.run("--new", input="hello\n", terminal=tab)
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    tab.close()  # the terminal is gone: the session is orphaned
    path = env.settled(session_id)
    text = path.read_text()
    old = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    data = json.loads(text)
    data["updated_at"] = old
    path.write_text(json.dumps(data))
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    pruned = env.run("sessions", "prune", "--older-than", "30")
    assert "Removed 1 orphaned session " in pruned.stdout, pruned.stderr
    assert env.session_ids() == [] and pointers(env) == []


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_prune_exits_1_when_it_could_not_read_a_file(env: Env, supervisor: str) -> None:
    """A helper's report: prune told of a session file it refused (a symlink) in an
    ``error:`` line and exited 0, where the listing of the same directory exits 1."""
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    (env.project / "dddddddddddd.json").symlink_to(env.base / "elsewhere.json")
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    pruned = env.run("sessions", "prune", "--older-than", "0", "--dry-run")
    assert "error: refusing session file dddddddddddd.json" in pruned.stderr, pruned.stderr
    assert pruned.returncode == 1
    assert env.run("sessions").returncode == 1, "as the listing"


@contextlib.contextmanager
def immutable(directory: Path) -> Iterator[None]:
    """``directory`` made immutable (``chattr +i``: a read-only mode does not stop root),
    undone after the test; skipped where chattr cannot."""
    made = subprocess.run(["chattr", "+i", str(directory)], capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=False)


def immutable_sessions_dir_of(env: Env) -> contextlib.AbstractContextManager[None]:
    return immutable(env.project)


def test_prune_and_rm_say_which_checkpoints_stayed_and_list_what_they_removed(
    env: Env,
) -> None:
    """A helper's find (H47): prune stopped at the first checkpoint directory it could not
    empty (sessions it had removed untold), and rm said "not removed" of a session whose
    file it had deleted."""
    ids = []
    for text in ("first", "second"):
        tab = env.terminal()
        assert env.run("--new", input=f"write {text}.md: x\n/save\n", terminal=tab).returncode == 0
        tab.close()
        ids.append(next(i for i in env.session_ids() if i not in ids))
    env.run("supervisor", "stop")
    kept, other = ids
    checkpoints = env.project.parent / "checkpoints"
    with immutable(checkpoints / kept):
        pruned = env.run("sessions", "prune", "--older-than", "0")
    assert pruned.returncode == 1
    assert "Removed 2 orphaned sessions" in pruned.stdout, pruned.stdout
    assert f"  {other}  " in pruned.stdout and f"  {kept}  " in pruned.stdout
    assert pruned.stderr.splitlines() == [
        f"error: the checkpoints of session {kept} not removed (0001.json: Operation not "
        "permitted); they stay, and sessions prune removes them once it can"
    ], pruned.stderr
    assert env.session_ids() == []
    again = env.run("sessions", "prune", "--older-than", "0")
    assert again.returncode == 0, again.stderr
    assert "Removed the checkpoints of 1 session with no session file left" in again.stdout
    assert not (checkpoints / kept).exists()

    tab = env.terminal()
    assert env.run("--new", input="write third.md: x\n/save\n", terminal=tab).returncode == 0
    (third,) = env.session_ids()
    with immutable(checkpoints / third):
        removed = env.run("sessions", "rm", third)
    assert removed.returncode == 1
    assert removed.stderr.splitlines() == [
        f"error: the checkpoints of session {third} not removed (0001.json: Operation not "
        "permitted); they stay, and sessions prune removes them once it can"
    ], removed.stderr
    assert env.session_ids() == []


def test_a_prune_or_rm_that_cannot_delete_says_which_session_and_that_it_stayed(env: Env) -> None:
    """A helper's find (H44): on an immutable sessions directory prune printed only
    "error: [Errno 1] Operation not permitted: '.../active_9952.json'"."""
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    tab.close()
    env.run("supervisor", "stop")
    told = (
        f"error: session {session_id} not removed ({session_id}.json: Operation not "
        "permitted); it stays as it was"
    )  # the session file is removed first, its pointers only once it is gone (H150)
    with immutable_sessions_dir_of(env):
        pruned = env.run("sessions", "prune", "--older-than", "0")
        removed = env.run("sessions", "rm", session_id)
    assert pruned.returncode == 1
    assert pruned.stderr.splitlines() == [told], pruned.stderr
    assert "Removed 0 orphaned sessions" in pruned.stdout
    assert removed.returncode == 1
    assert removed.stderr.splitlines() == [told], removed.stderr
    assert env.session_ids() == [session_id]


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_rm_of_a_session_file_it_cannot_delete_keeps_the_tabs_pointer(
    env: Env, supervisor: str
) -> None:
    """A reported defect (H150): rm removed the tab's ``active_<pid>.json`` before failing
    on the session file, and said it stayed as it was: the idle session became orphaned."""
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    before = pointers(env)
    with immutable(path):
        removed = env.run("sessions", "rm", session_id)
    assert removed.returncode == 1
    assert removed.stderr.splitlines() == [
        f"error: session {session_id} not removed ({session_id}.json: Operation not "
        "permitted); it stays as it was"
    ], removed.stderr
    assert env.session_ids() == [session_id] and pointers(env) == before == [
        f"active_{tab.pid}.json"
    ]
    (row,) = env.sessions_json()
    assert row["state"] == "idle" and row["terminal_pid"] == tab.pid


def test_prune_of_a_session_file_it_cannot_delete_keeps_its_pointers(env: Env) -> None:
    """As rm (H150): prune removed the pointer to a session whose file then stayed."""
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    tab.close()  # the terminal is gone: the session is orphaned, its pointer a gone tab's
    with immutable(path):
        pruned = env.run("sessions", "prune", "--older-than", "0")
    assert pruned.returncode == 1
    assert pruned.stderr.splitlines() == [
        f"error: session {session_id} not removed ({session_id}.json: Operation not "
        "permitted); it stays as it was"
    ], pruned.stderr
    assert env.session_ids() == [session_id] and pointers(env) == [f"active_{tab.pid}.json"]


def test_an_over_long_message_is_refused_by_the_client_and_the_chat_goes_on(env: Env) -> None:
    piped = "first turn\n" + "x" * (LIMIT + 50_000) + "\nhello after\n"
    result = env.run("--new", input=piped, terminal=env.terminal())
    assert 'You said: "first turn"' in result.stdout
    assert 'You said: "hello after"' in result.stdout
    refusals = [line for line in result.stderr.splitlines() if "200,000" in line]
    assert len(refusals) == 1 and "250,000 characters" in refusals[0]
    assert "in a file" in refusals[0] and "ask the assistant to read it" in refusals[0]
    assert "went away" not in result.stderr and "lost the supervisor" not in result.stderr
    assert result.returncode == 1, "piped, a refused message makes the run's status 1"


def test_a_message_within_the_character_limit_is_sent_whatever_its_characters(
    env: Env,
) -> None:
    """A helper's attack: 199,990 control characters (six bytes each on the wire) were
    refused as "over the limit of 200,000"; the frame cap now holds any such message.
    (Control characters are no longer sent (H186): quotes and backslashes, which the wire
    escapes, and emoji, four bytes each, are the heaviest characters a message keeps.)"""
    heavy = ('"\\\U0001f600' * LIMIT)[: LIMIT - 10]
    result = env.run("--new", input=f"{heavy}\nhello after\n", terminal=env.terminal())
    assert "message not sent" not in result.stderr and "went away" not in result.stderr
    assert result.stdout.count("You said:") == 2
    assert 'You said: "hello after"' in result.stdout


def test_the_supervisor_refuses_an_invalid_frame_and_keeps_the_connection(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    tab = env.terminal()
    raw, _ = open_terminal(env.runtime / "supervisor.sock", tab.pid, env.workspace)
    raw.send({"type": "user_message", "text": "x" * (LIMIT + 1)})
    (refused,) = [f for f in raw.until("error") if f["type"] == "error"]
    assert refused["code"] == "invalid_request"
    raw.send({"type": "user_message", "text": "still here"})
    said = "".join(f.get("text", "") for f in raw.until("turn_end"))
    assert 'You said: "still here"' in said
    raw.close()


@pytest.mark.parametrize(
    "args",
    [
        ("sessions",),
        ("sessions", "--json"),
        ("sessions", "-w", "."),
        ("config", "show"),
        ("--help",),
    ],
)
def test_a_closed_pipe_ends_a_command_quietly(env: Env, args: tuple[str, ...]) -> None:
    read_end, write_end = os.pipe()
    os.close(read_end)  # as `| head -1` does once it has its line
    try:
        result = subprocess.run(
            [AGENT_ASSIST, *args],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            cwd=env.workspace,
            env=env.environ(),
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert result.stderr == "", "no traceback, no error line"
    assert result.returncode == 1, "as click's commands exit on a closed pipe"


def run_with_closed(env: Env, fd: int, *args: str) -> subprocess.CompletedProcess[str]:
    """``agent-assist args`` with its descriptor ``fd`` closed (``<&-``, ``>&-``)."""
    return subprocess.run(
        ["sh", "-c", f'exec "$0" "$@" {fd}>&-', AGENT_ASSIST, *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=env.workspace,
        env=env.environ(),
        timeout=60,
        check=False,
    )


def test_a_closed_stdout_or_stdin_is_no_traceback_and_keeps_the_exit_status(env: Env) -> None:
    """A helper's report (H55): with stdout or stdin closed, as daemons and cron jobs may
    start, every command ended in a traceback (and status exited 1, not 3)."""
    assert env.run("supervisor", "stop").returncode == 0
    status = run_with_closed(env, 1, "supervisor", "status")
    assert (status.returncode, status.stderr) == (3, "")
    listing = run_with_closed(env, 1, "sessions", "--json")
    assert (listing.returncode, listing.stderr) == (0, "")
    chat = run_with_closed(env, 0, "--new")
    assert chat.returncode == 0 and "Traceback" not in chat.stderr, chat.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("sessions", "--json"),
        ("sessions",),
        ("--version",),
        ("config", "show"),
        ("supervisor", "status"),
    ],
)
def test_a_stdout_that_cannot_be_written_is_one_error_line(env: Env, args: tuple[str, ...]) -> None:
    """A helper's report (H55, H61): ``>/dev/full`` gave tracebacks, then ``[Errno 28]``."""
    with open("/dev/full", "w") as full:
        result = subprocess.run(
            [AGENT_ASSIST, *args],
            stdin=subprocess.DEVNULL,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=env.workspace,
            env=env.environ(),
            timeout=60,
            check=False,
        )
    assert result.returncode == 1
    assert result.stderr == "error: cannot write the output: No space left on device\n"


def test_a_piped_chat_whose_reader_left_names_its_saved_session_and_why_it_stopped(
    env: Env,
) -> None:
    """A helper's report (H55): ``... | agent-assist --new | head -1`` exited 1 with
    nothing on stderr: not the saved session's id, nor why the run stopped."""
    result = subprocess.run(
        ["sh", "-c", '"$0" --new | head -1', AGENT_ASSIST],
        input="".join(f"message {n}\n" for n in range(1, 21)),  # the reader leaves after one
        capture_output=True,
        text=True,
        cwd=env.workspace,
        env=env.environ(env.terminal()),
        timeout=60,
        check=False,
    )
    assert result.stdout.startswith('[offline model] You said: "message 1"')
    lines = result.stderr.splitlines()
    assert lines[-1] == "the output was closed; the run stopped before the end of its input"
    (session_id,) = env.session_ids()
    assert f"Session {session_id} saved." in lines


@pytest.mark.parametrize("args", [("sessions",), ("sessions", "--json"), ("sessions", "--all")])
def test_a_short_listing_read_by_head_ends_with_status_0_every_time(
    env: Env, args: tuple[str, ...]
) -> None:
    """A helper's find: ``sessions | head -1`` exited 1 now and then (4 in 10 with
    PYTHONUNBUFFERED=1): the table and its newline went out in two writes, and a reader
    gone after the first made the second fail. A listing that fits the pipe is one write."""
    for text in ("one", "two", "three"):
        env.run("--new", input=f"{text}\n", terminal=env.terminal())
    statuses = []
    for _ in range(10):
        read_end, write_end = os.pipe()
        command = subprocess.Popen(
            [AGENT_ASSIST, *args],
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            cwd=env.workspace,
            env=env.environ(PYTHONUNBUFFERED="1"),
        )
        os.close(write_end)
        first = os.read(read_end, 65536)  # as `head -1` reads, then leaves
        os.close(read_end)
        _, stderr = command.communicate(timeout=60)
        assert first and stderr == b""
        statuses.append(command.returncode)
    assert statuses == [0] * 10


def test_end_of_input_at_the_restore_question_restores_nothing(env: Env) -> None:
    tab = env.terminal()
    script = "write agent_spec.md: # v1\n/save\nwrite agent_spec.md: # v2\n"
    first = env.run("--new", input=script, terminal=tab)
    assert first.returncode == 0, first.stderr
    (number,) = re.findall(r"checkpoint (\d+)", first.stdout + first.stderr)
    (session_id,) = env.session_ids()
    before = [m["parts"] for m in env.session(session_id)["recent_messages"]]
    asked = env.run("--yes", input=f"/checkpoint {number}\n", terminal=tab)
    assert "Restore files too? [y/N]" in asked.stdout + asked.stderr
    assert "Cancelled; nothing was changed." in asked.stdout + asked.stderr
    after_parts = [m["parts"] for m in env.session(session_id)["recent_messages"]]
    assert after_parts == before, "the conversation stays"
    assert (env.workspace / "agent_spec.md").read_text() == "# v2\n"
    after = env.run("--yes", input="where are we\n", terminal=tab)
    assert 'You said: "where are we". (turn 3' in after.stdout, after.stderr


def test_end_of_input_at_the_resume_question_opens_nothing(env: Env) -> None:
    tab = env.terminal()
    assert env.run("--new", input="a first turn\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    env.settled(session_id)  # the summary written after the first run left lands first
    before = env.session(session_id)
    result = env.run(input="", terminal=tab)
    assert "Resume previous session? [Y/n]" in result.stderr
    assert "Cancelled; no session was opened" in result.stderr
    assert "Nothing to save" not in result.stderr, "no session was opened: nothing to say"
    assert result.returncode == 0
    assert env.session_ids() == [session_id] and env.session(session_id) == before


def test_end_of_input_at_the_start_a_new_session_question_starts_none(env: Env) -> None:
    holder = env.spawn(terminal=env.terminal())
    holder.send("holding this session")
    holder.expect("holding this session")
    (session_id,) = env.session_ids()
    result = env.run("--resume", session_id, input="", terminal=env.terminal())
    assert "Start a new session instead? [Y/n]" in result.stderr
    assert "Cancelled; no session was opened" in result.stderr
    assert env.session_ids() == [session_id]


@pytest.mark.parametrize("days", ["1e400", "nan", "inf", "-1", "-0.5", "soon", "1000001"])
def test_a_bad_older_than_is_a_usage_error_in_one_line(env: Env, days: str) -> None:
    result = env.run("sessions", "prune", "--older-than", days)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: Invalid value for '--older-than'")
    assert "number of days from 0 to 1000000" in line


@pytest.mark.parametrize("days", ["0", "30", "2.5", "1000000", "1"])
def test_a_good_older_than_is_taken(env: Env, days: str) -> None:
    result = env.run("sessions", "prune", "--older-than", days, "--dry-run")
    assert result.returncode == 0, result.stderr
    unit = "day" if days == "1" else "days"  # not "1 days" (H55)
    shown = "1,000,000" if days == "1000000" else days  # not "1e+06"
    # Not "idle for over" (H122): idle is the state of a session prune never removes.
    assert f"Would remove 0 orphaned sessions last active over {shown} {unit} ago." in result.stdout


def test_a_model_whose_sdk_is_missing_is_refused_at_start(env: Env) -> None:
    result = env.run("--new", "--model", "anthropic:claude-sonnet-4-5", input="hello\n")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: model 'anthropic:claude-sonnet-4-5' from option --model")
    assert "needs the anthropic package" in line and "pip install anthropic" in line
    assert not (env.runtime / "supervisor.sock").exists(), "refused before any supervisor"


def test_a_summary_model_whose_sdk_is_missing_is_refused_at_start(env: Env) -> None:
    result = env.run("--new", input="hello\n", AGENT_ASSIST_SUMMARY_MODEL="groq:llama-3.3-70b")
    assert result.returncode == 1
    assert "needs the groq package" in result.stderr and result.stderr.count("\n") == 1


def test_the_unknown_model_error_says_a_provider_needs_its_sdk(env: Env) -> None:
    result = env.run("--new", "--model", "nosuch:thing", input="hello\n")
    assert result.returncode == 1
    assert "anthropic:claude-sonnet-4-5 (a provider needs its SDK installed" in result.stderr


def test_an_over_long_command_line_is_refused_and_the_chat_goes_on(env: Env) -> None:
    piped = "/checkpoint " + "9" * (5 * LIMIT) + "\nhello after\n"
    result = env.run("--new", input=piped, terminal=env.terminal())
    assert "Traceback" not in result.stderr
    assert "over the limit of 200,000" in result.stderr
    assert 'You said: "hello after"' in result.stdout


def test_an_over_long_model_string_is_refused_at_start(env: Env) -> None:
    result = env.run("--new", "--model", "openai-chat:" + "m" * 300, input="hello\n")
    assert result.returncode == 1
    assert "over 256 characters" in result.stderr and result.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--bogus"], "error: No such option '--bogus' (see 'agent-assist --help')"),
        (["--new", "--resume", "aaaaaaaaaaaa"], "error: --new and --resume cannot be used"),
        (["-w", "/nonexistent"], "error: Invalid value for '--workspace'"),
        (["sessions", "prune", "--older-than", "-1"], "error: Invalid value for '--older-than'"),
        (["version"], "error: No such command 'version'. Did you mean '--version'?"),
        (["help"], "error: No such command 'help'. Did you mean '--help'?"),
        (["sessions", "show"], "error: Missing argument 'SESSION_ID' (see 'agent-assist sessions"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_status_2(env: Env, args: list[str], says: str) -> None:
    """DESIGN 5a: one line on stderr; it was click's usage block of four."""
    result = env.run(*args)
    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(says), line
    assert result.stdout == ""


def test_supervisor_status_counts_attached_terminals_in_words(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    result = env.run("supervisor", "status")
    assert result.returncode == 0
    assert f"running (pid {env.supervisor_pid()}, 0 terminals attached, socket " in result.stdout


def test_supervisor_status_says_the_version_and_build_it_runs(env: Env) -> None:
    """After an upgrade, the supervisor still running may be of the version before."""
    identity = Identity.of_this_process()
    assert env.run("supervisor", "start").returncode == 0
    said = env.run("supervisor", "status").stdout.splitlines()
    assert said[1] == f"agent-assist {identity.version} (build {identity.build})"
    status = json.loads(env.run("supervisor", "status", "--json").stdout)
    assert (status["version"], status["build"]) == (identity.version, identity.build)
    assert status["detached"] is True  # started by a terminal: one of another version may stop it
    assert env.run("supervisor", "stop").returncode == 0
    assert json.loads(env.run("supervisor", "status", "--json").stdout)["version"] is None


def test_a_chat_with_another_home_is_refused_by_a_supervisor_that_keeps_sessions_elsewhere(
    env: Env,
) -> None:
    """Before, the chat's session went to the supervisor's home, silently, and a listing
    with the chat's home showed the supervisor's sessions."""
    assert env.run("supervisor", "start").returncode == 0
    other = env.home.parent / "other-home"
    chat = env.run("--new", input="hello\n", terminal=env.terminal(), AGENT_ASSIST_HOME=str(other))
    listing = env.run("sessions", AGENT_ASSIST_HOME=str(other))
    for result in (chat, listing):
        assert result.returncode == 1
        (line,) = result.stderr.splitlines()
        assert line.startswith(
            f"error: the running supervisor keeps sessions in {env.home.resolve()}, "
            f"not in {other.resolve()} (AGENT_ASSIST_HOME)"
        ), line
    assert env.session_ids() == []
    assert not (other / "projects").exists()


def test_a_relative_home_is_the_same_home_from_the_directory_it_names(env: Env) -> None:
    env.home.mkdir(parents=True, exist_ok=True)
    relative = os.path.relpath(env.home, env.workspace)
    assert env.run("supervisor", "start", AGENT_ASSIST_HOME=relative).returncode == 0
    chat = env.run("--new", input="hello\n", terminal=env.terminal(), AGENT_ASSIST_HOME=relative)
    assert chat.returncode == 0, chat.stderr
    assert len(env.session_ids()) == 1


@pytest.mark.parametrize("args", [("--new",), ("sessions",), ("sessions", "--json")])
def test_a_relative_home_from_another_directory_is_refused_naming_its_cause(
    env: Env, args: tuple[str, ...]
) -> None:
    """A helper's report: `AGENT_ASSIST_HOME=rel` from a second directory was refused with
    two absolute paths and no word of why they differed; nothing is written in either."""
    first, second = env.base / "first", env.base / "second"
    first.mkdir()
    second.mkdir()
    started = env.run("supervisor", "start", cwd=first, AGENT_ASSIST_HOME="rel")
    assert started.returncode == 0, started.stderr
    try:
        result = env.run(
            *args, input="hello\n", terminal=env.terminal(), cwd=second, AGENT_ASSIST_HOME="rel"
        )
    finally:
        env.run("supervisor", "stop", cwd=first, AGENT_ASSIST_HOME="rel")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"error: the running supervisor keeps sessions in {first / 'rel'}, "
        f"not in {second / 'rel'} (AGENT_ASSIST_HOME)"
    ), line
    assert line.endswith(
        "; AGENT_ASSIST_HOME=rel is relative to the current directory, so it names another "
        "directory here than where the supervisor was started: set it to an absolute path"
    ), line
    assert not (second / "rel").exists()


def test_options_before_chat_apply_to_the_chat(env: Env) -> None:
    """`agent-assist -w DIR chat --new` chatted in the current directory (the group's
    options were dropped when a command followed)."""
    other = env.workspace.parent / "other-ws"
    other.mkdir()
    result = env.run("-w", str(other), "--new", "chat", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (row,) = env.sessions_json("--all")
    assert row["project"].startswith("other-ws_")


def test_a_bad_model_before_chat_is_refused_as_after_it(env: Env) -> None:
    result = env.run("-m", "nosuch:zzz", "chat", "--new", input="/model\n")
    assert result.returncode == 1
    assert "nosuch" in result.stderr


def test_workspace_before_sessions_lists_that_workspace(env: Env) -> None:
    other = env.workspace.parent / "other-ws"
    other.mkdir()
    assert env.run("--new", "-w", str(other), input="hello\n").returncode == 0
    (session_id,) = env.session_ids() or [row["session_id"] for row in env.sessions_json("--all")]
    listing = env.run("-w", str(other), "sessions", "--json")
    assert [row["session_id"] for row in json.loads(listing.stdout)] == [session_id]
    shown = env.run("-w", str(other), "sessions", "show", session_id)
    assert shown.returncode == 0, shown.stderr


def test_a_chat_option_before_another_command_is_a_usage_error(env: Env) -> None:
    for args in (
        ("--new", "sessions"),
        ("-m", "offline", "supervisor", "status"),
        ("-w", ".", "config", "show"),
    ):
        result = env.run(*args)
        assert result.returncode == 2, (args, result.stderr)
        assert "does not apply to `" in result.stderr


def test_the_hint_for_an_option_before_a_command_names_where_it_is_taken(env: Env) -> None:
    """`-w DIR config show` was told to put -w after `config`, which takes no -w."""
    assert "put it after" not in env.run("-w", ".", "config", "show").stderr
    assert "put it after" not in env.run("-w", ".", "supervisor", "status").stderr
    assert "; put it after `config show`" in env.run("-m", "offline", "config", "show").stderr


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("--resume", ""), "error: Invalid value for '--resume': '' is not a session id"),
        (("--resume", "../../x"), "error: Invalid value for '--resume': '../../x' is not a"),
        (("--new", "--yes"), "error: --new and --yes cannot be used together"),
    ],
)
def test_chat_options_that_contradict_or_are_empty_are_usage_errors(
    env: Env, args: tuple[str, ...], line: str
) -> None:
    """`--resume ''` started a new session silently; `--new --yes` let --new win silently."""
    result = env.run(*args, input="hello\n")
    assert result.returncode == 2
    assert result.stderr.startswith(line)
    assert env.session_ids() == []


@pytest.mark.parametrize("group", ["config", "supervisor", "sessions"])
def test_a_command_group_alone_prints_its_help_unsquashed(env: Env, group: str) -> None:
    result = env.run(group)
    if group == "sessions":  # lists, as documented
        assert result.returncode == 0
        return
    assert result.returncode == 2
    assert result.stderr.startswith(f"Usage: agent-assist {group} [OPTIONS] COMMAND")
    assert "\nCommands:\n" in result.stderr


def test_escape_sequences_in_a_session_never_reach_the_listing_or_the_resume_offer(
    env: Env,
) -> None:
    """A summary that set the terminal's title (OSC) or colours when listed."""
    message = "\x1b[31mRED\x1b[0m \x1b]0;pwned\x07 title"
    terminal = env.terminal()
    assert env.run("--new", input=message + "\n", terminal=terminal).returncode == 0
    (session_id,) = env.session_ids()
    table = env.run("sessions")
    shown = env.run("sessions", "show", session_id)
    offer = env.run(input="n\n", terminal=terminal)  # the same tab: offered its session
    assert "RED title" in table.stdout
    assert "Previous session found" in offer.stdout + offer.stderr
    for output in (table.stdout, shown.stdout, offer.stdout + offer.stderr):
        assert "\x1b" not in output and "\x07" not in output


def test_supervisor_run_on_a_terminal_prints_no_third_party_banner(env: Env) -> None:
    """pydantic-ai shows a first-run banner on a terminal (not under pytest or CI: the
    supervisor here runs without those variables, as a user's does)."""
    import pexpect

    environ = {
        k: v for k, v in env.environ().items() if k not in ("PYTEST_VERSION", "CI")
    }
    child = pexpect.spawn(
        AGENT_ASSIST, ["supervisor", "run"], env=environ, encoding="utf-8", timeout=30
    )
    try:
        wait_for(lambda: (env.runtime / "supervisor.sock").exists(), what="the socket")
        result = env.run("--new", input="hello\n", terminal=env.terminal())
        assert result.returncode == 0, result.stderr
        child.sendintr()
        child.expect(pexpect.EOF)
        assert "pydantic-ai v" not in str(child.before)
        assert "Logfire" not in str(child.before)
    finally:
        child.close(force=True)


def test_a_runtime_directory_too_long_for_a_socket_is_told_by_name(env: Env) -> None:
    """It was 'error: AF_UNIX path too long', naming neither the path nor the variable."""
    long = env.runtime.parent / ("d" * 100)
    for args, stdin in ((("supervisor", "start"), ""), (("--new",), "hello\n")):
        result = env.run(*args, input=stdin, AGENT_ASSIST_RUNTIME_DIR=str(long))
        assert result.returncode == 1
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: runtime directory {long} is too long for the supervisor")
        assert "set AGENT_ASSIST_RUNTIME_DIR to a shorter directory" in line


def in_a_deleted_directory(env: Env, *args: str) -> subprocess.CompletedProcess[str]:
    """``agent-assist ARGS`` run from a current directory removed before it starts (a
    shell left in a workspace that was deleted)."""
    gone = env.base / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rm -rf "{gone}" && exec "$0" "$@"'
    return subprocess.run(
        ["sh", "-c", script, AGENT_ASSIST, *args],
        input="",
        text=True,
        capture_output=True,
        env=env.environ(env.terminal()),
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "args",
    [(), ("--new",), ("sessions",), ("sessions", "--json"), ("sessions", "prune", "--dry-run")],
)
def test_a_deleted_current_directory_is_one_clear_line(env: Env, args: tuple[str, ...]) -> None:
    """A helper's report: each of these said ``error: 2``. Each needs the workspace's
    project, which the current directory was."""
    result = in_a_deleted_directory(env, *args)
    assert result.returncode == 1
    assert result.stderr == (
        "error: the current directory no longer exists (it was deleted or moved): "
        "cd to it again, or pass --workspace DIR\n"
    )


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
@pytest.mark.parametrize("command", ["show", "rm"])
def test_a_session_named_by_its_id_needs_no_current_directory(
    env: Env, supervisor: str, command: str
) -> None:
    """A helper's report: `sessions show ID` and `sessions rm ID` refused from a deleted
    directory, though an id names one session of one project whatever the workspace."""
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    (session_id,) = env.session_ids()
    tab.close()  # orphaned: rm may remove it
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    result = in_a_deleted_directory(env, "sessions", command, session_id[:6])
    assert result.returncode == 0, result.stderr
    if command == "show":
        assert f"Session      {session_id}" in result.stdout
    else:
        assert result.stdout == f"Removed session {session_id}.\n"
        assert env.session_ids() == []


def test_an_unknown_id_from_a_deleted_directory_is_looked_for_in_every_project(env: Env) -> None:
    result = in_a_deleted_directory(env, "sessions", "show", "a" * 12)
    assert result.returncode == 1
    assert result.stderr == (
        f"error: no session {'a' * 12} in any project (agent-assist sessions --all)\n"
    )


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_pruning_every_project_needs_no_current_directory(env: Env, supervisor: str) -> None:
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab).returncode == 0
    assert len(env.session_ids()) == 1
    tab.close()
    if supervisor == "stopped":
        assert env.run("supervisor", "stop").returncode == 0
    result = in_a_deleted_directory(env, "sessions", "prune", "--all", "--older-than", "0")
    assert result.returncode == 0, result.stderr
    assert "Removed 1 orphaned session " in result.stdout
    assert env.session_ids() == []


@pytest.mark.parametrize("args", [("sessions", "--all"), ("sessions", "--all", "--json")])
def test_every_projects_listing_needs_no_current_directory(
    env: Env, args: tuple[str, ...]
) -> None:
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    (session_id,) = env.session_ids()
    result = in_a_deleted_directory(env, *args)
    assert result.returncode == 0, result.stderr
    assert session_id in result.stdout


@pytest.mark.parametrize("args", [("sessions",), ("sessions", "--json"), ("sessions", "--all")])
def test_a_listing_that_could_not_read_the_store_exits_1(env: Env, args: tuple[str, ...]) -> None:
    """A helper's attack: with the home replaced by a file, `sessions` printed "No
    sessions." (`[]`) beside its `error:` line and exited 0: a script took it for empty."""
    env.home.parent.mkdir(parents=True, exist_ok=True)
    env.home.write_text("not a directory\n")
    result = env.run(*args)
    assert "error: refusing sessions directory" in result.stderr
    assert result.returncode == 1


@pytest.mark.parametrize("broken", ["project", "home"])
def test_a_listing_that_read_nothing_does_not_say_there_are_no_sessions(
    env: Env, broken: str
) -> None:
    """H161's try: a sessions directory that could not be read (here a file at its
    place, as a permission denied is for a user) printed `No sessions in this project;
    other projects hold 1 session` (`No sessions.` for `--all` over a home that is a
    file) below its `error:` line: a listing that read nothing said there was none."""
    if broken == "project":
        other = env.base / "other"
        other.mkdir()
        assert env.run("--new", input="hello\n", terminal=env.terminal(), cwd=other).returncode == 0
        env.project.parent.mkdir(parents=True)
        env.project.write_text("not a directory\n")
    else:
        env.home.parent.mkdir(parents=True, exist_ok=True)
        env.home.write_text("not a directory\n")
    result = env.run("sessions", *(("--all",) if broken == "home" else ()))
    assert "error: refusing sessions directory" in result.stderr
    assert result.stdout == "No sessions listed: the error above says what could not be read.\n"
    assert result.returncode == 1


@pytest.mark.parametrize("command", ["show", "rm"])
def test_a_short_id_not_found_in_a_store_it_could_not_read_names_what_was_not_read(
    env: Env, command: str
) -> None:
    """H161's try: with the sessions directories unreadable, `sessions show abcd` said
    only `no session id begins with abcd`: the session may well be in what was not read."""
    env.home.parent.mkdir(parents=True, exist_ok=True)
    env.home.write_text("not a directory\n")
    result = env.run("sessions", command, "abcd")
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: refusing sessions directory {env.home / 'projects'} (Not a directory); "
        "left untouched",
        "error: no session id that could be read begins with abcd; the error above says "
        "what could not be read",
    ]


@pytest.mark.parametrize("args", [("supervisor", "status"), ("--new",), ("supervisor", "start")])
def test_a_runtime_directory_that_is_a_file_is_named_in_one_line(
    env: Env, args: tuple[str, ...]
) -> None:
    """A helper's attack: `error: [Errno 20] Not a directory`, naming nothing."""
    runtime = env.base / "runtime-file"
    runtime.write_text("x\n")
    result = env.run(*args, AGENT_ASSIST_RUNTIME_DIR=str(runtime))
    assert result.returncode == 1
    assert result.stderr == (
        f"error: runtime directory {runtime} is not a directory (or is under a file)\n"
    )


def test_a_slash_a_space_and_a_command_is_told_as_a_typo_not_sent(env: Env) -> None:
    """A helper's report (H87): `/ save` was sent to the model as a message; `// save`
    still sends `/ save`, as `//` sends any line that starts with a slash."""
    result = env.run("--new", input="/ save\n// save\n", terminal=env.terminal())
    assert result.returncode == 1, "piped, a command line that does nothing fails the run"
    assert "error: unknown command '/ save' (did you mean /save? try /help)\n" in result.stderr
    assert result.stdout.count("You said:") == 1
    assert 'You said: "/ save"' in result.stdout
    assert "checkpoint" not in result.stderr


def test_a_piped_answer_to_a_question_never_asked_is_not_sent_as_a_message(env: Env) -> None:
    """A helper's attack: the README's `printf 'y\\nwhat did we decide?\\n' | agent-assist`
    sent "y" to the model when there was no session to resume (no question asked), and a
    scripted "y" after a /checkpoint that asked nothing became a turn."""
    result = env.run(input="y\nwhat did we decide?\n/checkpoint\nn\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("answers no question (none was asked); not sent") == 2
    assert 'You said: "y"' not in result.stdout and 'You said: "n"' not in result.stdout
    assert len(env.session_ids()) == 1
    assert "turn 1 of this conversation" in result.stdout  # "what did we decide?" is turn 1


@pytest.mark.parametrize("broken", ["sessions_is_a_file", "project_is_a_file", "a_dir_as_a_file"])
def test_every_listing_tells_what_it_could_not_read_and_exits_1(env: Env, broken: str) -> None:
    """A helper's attack: `sessions --all` said "No sessions." (exit 0) with a project
    whose sessions directory was a file; a directory named like a session file was
    told, but the exit status was 0."""
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    (session_id,) = env.session_ids()
    project = env.project.parent
    if broken == "a_dir_as_a_file":
        (env.project / "abcdefabcdef.json").mkdir()
    else:
        other = project.parent / "other_12345678"
        other.mkdir()
        target = other if broken == "project_is_a_file" else other / "sessions"
        if broken == "project_is_a_file":
            other.rmdir()
        target.write_text("not a directory\n")
    for args in (("sessions", "--all"), ("sessions", "--all", "--json"), ("sessions",)):
        result = env.run(*args)
        if args == ("sessions",) and broken != "a_dir_as_a_file":
            assert result.returncode == 0, result.stderr  # this project is whole
            continue
        assert "error: refusing" in result.stderr, (args, result.stderr)
        assert result.returncode == 1, (args, result.stderr)
        assert session_id in result.stdout  # what could be read is listed


def test_a_yes_first_to_a_session_resumed_without_a_question_is_a_message(env: Env) -> None:
    """A helper's report: `echo yes | agent-assist --resume ID` dropped the "yes" as an
    answer to no question; the resumed session's last reply may have asked one."""
    term = env.terminal()
    assert env.run("--new", input="shall we go on?\n", terminal=term).returncode == 0
    (session_id,) = env.session_ids()
    for args in (("--resume", session_id), ("--yes",)):  # --yes: this tab's session
        result = env.run(*args, input="yes\n", terminal=term)
        assert result.returncode == 0, result.stderr
        assert "answers no question" not in result.stderr
        assert 'You said: "yes"' in result.stdout


def test_a_resumed_session_s_requests_stay_within_a_small_budget(env: Env) -> None:
    """A helper's report: after 40 decisions, each request of the resumed session ran at
    about twice a 2,000-token budget (its resume block listed 40 decisions whatever the
    budget), with no warning."""
    env.extra.update(AGENT_ASSIST_CONTEXT_TOKENS="2000", AGENT_ASSIST_COMPACTION_INTERVAL="3")
    words = " ".join(f"lorem{n}" for n in range(45))
    script = "".join(f"decide D{n} {words}\n" for n in range(1, 41))
    term = env.terminal()
    assert env.run("--new", input=script, terminal=term).returncode == 0
    resumed = env.run("--yes", input="msg a\nmsg b\nmsg c\nmsg d\n", terminal=term)
    assert resumed.returncode == 0, resumed.stderr
    notes = [line for line in resumed.stderr.splitlines() if line.startswith("note: compacted")]
    assert notes, resumed.stderr
    after = [int(n.rsplit("-> ~", 1)[1].split()[0].replace(",", "")) for n in notes]
    assert max(after) < 2000, notes


@pytest.mark.parametrize("command", ["/save extra", "/compact now", "/resume 3"])
def test_an_argument_to_a_command_that_takes_none_is_refused_not_dropped(
    env: Env, command: str
) -> None:
    """A helper's report: `/save extra` saved and dropped "extra" without a word."""
    result = env.run(input=f"hello\n{command}\n", terminal=env.terminal())
    name = command.split()[0]
    assert f"error: {name} takes no argument" in result.stderr
    assert result.returncode == 1
    assert "saved as checkpoint" not in result.stderr


@pytest.mark.parametrize("command", ["/exit strategy first", "/quit now", "/help me", "/model x"])
def test_an_argument_to_a_terminal_command_is_refused_and_the_chat_goes_on(
    env: Env, command: str
) -> None:
    """A helper's find (H72): `/exit strategy ...` left the chat (and `/help x`, `/model x`
    dropped the argument without a word), where `/save extra` is refused."""
    result = env.run(input=f"{command}\nstill here\n", terminal=env.terminal())
    name = command.split()[0]
    assert f"error: {name} takes no argument" in result.stderr
    assert "still here" in result.stdout  # the chat went on: the next line was answered
    assert result.returncode == 1


def test_config_show_warns_of_a_model_whose_sdk_is_missing(env: Env) -> None:
    """A helper's report: `config show` showed a model a chat refuses, with no word."""
    result = env.run("config", "show", AGENT_ASSIST_SUMMARY_MODEL="groq:llama-3.3-70b")
    assert result.returncode == 0
    (line,) = result.stderr.splitlines()
    assert line.startswith("warning: a chat would refuse this: model 'groq:llama-3.3-70b'")
    assert "needs the groq package" in line


@pytest.mark.parametrize("group", [(), ("sessions",), ("config",), ("supervisor",)])
def test_the_command_list_of_help_cuts_no_summary(env: Env, group: tuple[str, ...]) -> None:
    """H108's find: click cut each command's one-line summary (`Attach to the supervisor
    (starting it if needed), offer...`)."""
    shown = env.run(*group, "--help", COLUMNS="80").stdout
    commands = shown.split("Commands:\n", 1)[1].splitlines()
    assert commands and all(not line.rstrip().endswith("...") for line in commands), commands


@pytest.mark.parametrize("command", [(), ("chat",), ("sessions",)])
def test_the_workspace_default_is_worded_alike_in_every_help(
    env: Env, command: tuple[str, ...]
) -> None:
    """H108's find: `[default: current directory]` here, `[default: (current directory)]`
    there."""
    shown = " ".join(env.run(*command, "--help", COLUMNS="200").stdout.split())
    assert "-w, --workspace DIRECTORY The agent's workspace [default: the current directory]." in (
        shown
    )


def unreadable_store(env: Env, broken: str) -> Path:
    """The home replaced by a file, or this project's sessions directory (a file at its
    place, as a permission denied is for a user); the path the error names."""
    if broken == "home":
        env.home.parent.mkdir(parents=True, exist_ok=True)
        env.home.write_text("not a directory\n")
        return env.home / "projects"
    env.project.parent.mkdir(parents=True)
    env.project.write_text("not a directory\n")
    return env.project


@pytest.mark.parametrize("dry_run", [(), ("--dry-run",)], ids=["prune", "dry-run"])
@pytest.mark.parametrize(
    ("broken", "served"),
    # no supervisor starts over a home that is a file: that one is read without one only
    [("project", False), ("project", True), ("home", False)],
    ids=["project-files", "project-supervisor", "home-files"],
)
def test_a_prune_that_could_not_read_the_store_does_not_count_what_it_removed(
    env: Env, broken: str, served: bool, dry_run: tuple[str, ...]
) -> None:
    """H165: over an unreadable store `sessions prune` said `Would remove 0 orphaned
    sessions ...` (and, pruning, a second error about checkpoints): it claimed there was
    nothing to remove where it could not look."""
    if served:
        assert env.run("supervisor", "start").returncode == 0
    unread = unreadable_store(env, broken)
    result = env.run("sessions", "prune", *dry_run)
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: refusing sessions directory {unread} (")
    what = "listed for removal" if dry_run else "removed"
    assert result.stdout == f"No sessions {what}: the error above says what could not be read.\n"
    assert result.returncode == 1


@pytest.mark.parametrize(
    ("broken", "served"), [("project", False), ("project", True), ("home", False)]
)
def test_rm_of_a_full_id_over_an_unreadable_store_says_what_could_not_be_read(
    env: Env, broken: str, served: bool
) -> None:
    """H165: it said `no session ID in this project`, though it could not look."""
    if served:
        assert env.run("supervisor", "start").returncode == 0
    unread = unreadable_store(env, broken)
    result = env.run("sessions", "rm", "abcdabcdabcd")
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: refusing sessions directory {unread} (")
    assert result.returncode == 1


def test_a_script_that_begins_with_a_byte_order_mark_reads_its_first_line_as_typed(
    env: Env,
) -> None:
    """H176's find: a script saved with a UTF-8 byte order mark (Notepad, PowerShell's
    Out-File) had its first line read with it: ``/help`` was sent to the model as a
    message, and ``y`` to the resume offer was not an answer (exit 1). The mark is no
    part of the first line; one later in the input is the user's text."""
    terminal = env.terminal()
    first = env.run("--new", input="\ufeff/help\nhello\n", terminal=terminal)
    assert first.returncode == 0, first.stderr
    assert "Commands:" in first.stderr
    assert first.stdout.count("You said") == 1 and "/help" not in first.stdout
    again = env.run(input="\ufeffy\nagain\n", terminal=terminal)
    assert again.returncode == 0, again.stderr
    assert "turn 2 of this conversation" in again.stdout


@pytest.mark.parametrize("codec", ["utf-16", "utf-32"])
def test_a_script_saved_as_utf_16_with_its_byte_order_mark_is_read_as_its_text(
    env: Env, codec: str
) -> None:
    """H178's find: a script Windows PowerShell's ``Out-File`` (or ``>``) saved is UTF-16
    with a byte order mark. Read as UTF-8, its ``/model`` went to the model as a message
    (NULs between its letters), a line of NULs was sent as one more, and the run exited 0.
    The mark says how the script is written: it is read as such, CRLF line ends too."""
    script = "/model\r\nhi \u00e9\r\n".encode(codec)  # Python's codec writes the mark
    result = subprocess.run(
        [AGENT_ASSIST, "--new"],
        input=script,
        capture_output=True,
        cwd=env.workspace,
        env=env.environ(env.terminal()),
        timeout=60,
        check=False,
    )
    stdout, stderr = result.stdout.decode(), result.stderr.decode()
    assert result.returncode == 0, stderr
    assert "model: " in stderr
    assert stdout.count("You said") == 1, stdout
    assert 'You said: "hi \u00e9".' in stdout


def test_a_piped_line_with_nothing_to_show_is_blank(env: Env) -> None:
    """H178's find: a line of NULs or of an escape code alone was sent to the model as a
    message it showed as empty (``You said: ""``), a turn each; it is a blank line."""
    result = env.run("--new", input="\x00\x00\n\x1b[31m\n\u202e\nhi\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("You said") == 1, result.stdout
    assert 'You said: "hi".' in result.stdout


def test_prune_help_gives_its_default_in_days_as_typed(env: Env) -> None:
    """A helper's report: ``sessions prune --help`` showed ``[default: 30.0]``."""
    result = env.run("sessions", "prune", "--help")
    assert result.returncode == 0, result.stderr
    help_text = " ".join(result.stdout.split())
    assert "[default: 30]" in help_text, result.stdout


def test_invisible_controls_inside_a_message_are_not_sent(env: Env, server: ChatServer) -> None:
    """A helper's report: a NUL (or a bell, an escape code, a carriage return from a
    Windows file) inside a message was sent to the model, which sees what the user never
    did. What is sent is what shows: printable text, tabs and the message's words."""
    result = env.run(
        "--new", input="keep\ttabs\x00 and\x07 words\x1b[31m red\r\n", terminal=env.terminal()
    )
    assert result.returncode == 0, result.stderr
    (request,) = [r for r in server.requests if r["model"] == "test-model"]
    assert request["messages"][-1]["content"] == "keep\ttabs and words red"
