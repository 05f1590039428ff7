"""`sessions` without a supervisor: listing reads whatever the runtime directory is; changes
take the supervisor's own lock."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.e2e.harness import Env


@pytest.fixture
def one_session(env: Env) -> str:
    result = env.run("--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert env.run("supervisor", "stop").returncode == 0
    (session_id,) = env.session_ids()
    return session_id


@pytest.mark.parametrize("shape", ["a file", "under a file", "too long a path"])
def test_listing_works_read_only_whatever_the_runtime_directory_is(
    env: Env, one_session: str, shape: str
) -> None:
    blocker = env.base / "blocker"
    blocker.write_text("x")
    runtime = {
        "a file": blocker,
        "under a file": blocker / "run",
        "too long a path": env.base / ("d" * 200),
    }[shape]
    result = env.run("sessions", "--json", AGENT_ASSIST_RUNTIME_DIR=str(runtime))
    assert result.returncode == 0, result.stderr
    assert [row["session_id"] for row in json.loads(result.stdout)] == [one_session]
    shown = env.run("sessions", "show", one_session, AGENT_ASSIST_RUNTIME_DIR=str(runtime))
    assert shown.returncode == 0, shown.stderr


def test_offline_rm_waits_for_the_supervisor_lock(env: Env, one_session: str) -> None:
    fd = os.open(env.runtime / "supervisor.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # as a supervisor that is starting holds it
        refused = env.run("sessions", "rm", one_session)
        assert refused.returncode == 1
        assert refused.stderr.count("\n") == 1 and "supervisor.lock" in refused.stderr
        assert env.session_ids() == [one_session]
    finally:
        os.close(fd)
    removed = env.run("sessions", "rm", one_session)
    assert removed.returncode == 0, removed.stderr
    assert env.session_ids() == []


def test_a_session_is_named_by_the_first_digits_of_its_id(env: Env, one_session: str) -> None:
    """`show`, `--resume` and `rm` wanted all 12 digits; a unique prefix does, as in git."""
    shown = env.run("sessions", "show", one_session[:5])
    assert shown.returncode == 0, shown.stderr
    assert one_session in shown.stdout
    resumed = env.run("--resume", one_session[:4], input="again\n", terminal=env.terminal())
    assert resumed.returncode == 0, resumed.stderr
    assert 'You said: "again"' in resumed.stdout
    assert env.run("supervisor", "stop").returncode == 0
    removed = env.run("sessions", "rm", one_session[:6])
    assert removed.returncode == 0, removed.stderr
    assert removed.stdout == f"Removed session {one_session}.\n"
    assert env.session_ids() == []


def test_a_prefix_two_ids_begin_with_names_them_and_does_nothing(
    env: Env, one_session: str
) -> None:
    (path,) = [p for p in env.project.glob("*.json") if not p.name.startswith("active_")]
    twin = one_session[:6] + ("000000" if one_session[6:] != "000000" else "ffffff")
    data = json.loads(path.read_bytes())
    data["session_id"] = twin
    (env.project / f"{twin}.json").write_text(json.dumps(data))
    refused = env.run("sessions", "rm", one_session[:6])
    assert refused.returncode == 1
    assert refused.stderr == (
        f"error: {one_session[:6]} begins 2 session ids ({', '.join(sorted([one_session, twin]))});"
        " give more of its digits\n"
    )
    assert sorted(env.session_ids()) == sorted([one_session, twin])
    unknown = "abcd" if not one_session.startswith("abcd") else "dcba"
    missing = env.run("sessions", "show", unknown)
    assert missing.returncode == 1
    said = f"error: no session id begins with {unknown} (agent-assist sessions --all)\n"
    assert missing.stderr == said
    short = env.run("sessions", "show", one_session[:3])
    assert short.returncode == 2 and "the first 4 or more of them" in short.stderr


@pytest.mark.parametrize("flags", [(), ("--json",), ("--all",)])
def test_a_corrupt_session_file_is_listed_alike_with_and_without_a_supervisor(
    env: Env, one_session: str, flags: tuple[str, ...]
) -> None:
    """H108's find: with no supervisor the listing printed `error:` and exited 1, with one
    it printed `warning:` and exited 0. Either way now: the other sessions, a row with its
    note for the file that does not parse (H148: none, so a file on disk was hidden from
    ``sessions --json``), one `warning:` line naming it, exit status 0."""
    corrupt = env.project / "aaaaaaaaaaaa.json"
    corrupt.write_text("{")  # left in place by either listing: read-only
    answers = []
    for supervisor in ("none", "running"):
        if supervisor == "running":
            assert env.run("supervisor", "start").returncode == 0
        result = env.run("sessions", *flags)
        assert result.returncode == 0, result.stderr
        (line,) = result.stderr.splitlines()
        assert line.startswith("warning: session file aaaaaaaaaaaa.json is corrupt")
        assert "aaaaaaaaaaaa" in result.stdout and "corrupt: not read" in result.stdout
        answers.append(result.stdout)
    offline, served = answers
    assert offline == served and one_session in offline


def _every_file(root: Path) -> dict[str, str]:
    """Each file under ``root`` (its path below it) and the SHA-256 of its bytes."""
    return {
        str(path.relative_to(root)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


READ_ONLY_COMMANDS = (
    ("sessions",),
    ("sessions", "--json"),
    ("sessions", "--all"),
    ("sessions", "show", "{session}"),
    ("sessions", "show", "aaaaaaaaaaaa"),
    ("sessions", "show", "bbbbbbbbbbbb"),
    ("sessions", "prune", "--dry-run", "--older-than", "0"),
    ("sessions", "prune", "--dry-run", "--older-than", "0", "--all"),
)


def test_read_only_commands_change_no_file_with_or_without_a_supervisor(
    env: Env, one_session: str
) -> None:
    """H123's find: with a supervisor running, `sessions`, `show` and `prune --dry-run`
    moved a corrupt session file and a bad pointer aside and rewrote headers.index;
    without one they changed nothing, and told other lines. Now neither changes a file,
    both tell the same lines, and a chat's start still moves the bad files aside."""
    (env.project / "aaaaaaaaaaaa.json").write_bytes(b"garbage, not json")
    newer = {**env.session(one_session), "schema_version": 99, "session_id": "bbbbbbbbbbbb"}
    (env.project / "bbbbbbbbbbbb.json").write_text(json.dumps(newer))
    pointer = {
        "session_id": "../x",
        "pid": 777,
        "pid_start_time": None,
        "updated_at": "2026-11-29T10:15:00Z",
    }
    (env.project / "active_777.json").write_text(json.dumps(pointer))
    os.utime(env.project / "active_777.json", (0, 0))  # its terminal gone, whatever runs at 777
    (env.project / "headers.index").unlink(missing_ok=True)  # a listing that writes makes it
    told: dict[str, list[tuple[int, str, str]]] = {}
    for supervisor in ("none", "running"):
        if supervisor == "running":
            assert env.run("supervisor", "start").returncode == 0
        before = _every_file(env.home)
        told[supervisor] = []
        for command in READ_ONLY_COMMANDS:
            args = [arg.format(session=one_session) for arg in command]
            result = env.run(*args)
            assert _every_file(env.home) == before, f"{args} with supervisor {supervisor}"
            told[supervisor].append((result.returncode, result.stdout, result.stderr))
    assert told["none"] == told["running"]
    lines = {line for _, _, err in told["none"] for line in err.splitlines()}
    corrupt = "session file aaaaaaaaaaaa.json is corrupt ("
    for told_as, ending in (
        ("warning", "; left in place (a chat started in its project moves it aside)"),
        ("error", "; left in place (a chat started in its project moves it aside)"),  # show
        ("warning", "; would be moved aside"),  # prune --dry-run
    ):
        assert any(x.startswith(f"{told_as}: {corrupt}") and x.endswith(ending) for x in lines)
    pointer_line = "warning: ignoring invalid session pointer active_777.json (bad session id)"
    assert {pointer_line, f"{pointer_line}; would be moved aside"} <= lines
    started = env.run(input="", terminal=env.terminal())
    assert started.returncode == 0, started.stderr
    (moved,) = env.project.glob("aaaaaaaaaaaa.json.corrupt-*")
    (pointer_moved,) = env.project.glob("active_777.json.corrupt-*")
    at_start = started.stderr.splitlines()
    said = f"warning: session file aaaaaaaaaaaa.json is corrupt; moved aside to {moved.name}"
    assert said in at_start
    assert f"{pointer_line}; moved aside to {pointer_moved.name}" in at_start
    assert json.loads((env.project / "bbbbbbbbbbbb.json").read_bytes()) == newer


def test_json_output_carries_no_character_a_terminal_acts_on(env: Env, one_session: str) -> None:
    """H186's leftover: ``--json`` wrote a session's text as it was, and ``json.dumps``
    escapes C0 only: a C1 CSI (``\\x9b``), DEL and a bidi override reached the terminal.
    They are escaped (``\\u009b``): the same value for a JSON reader."""
    path = env.settled(one_session)
    data = json.loads(path.read_bytes())
    weird = "sum\x9b31m\x7fmary \u202etxt"
    data["summary"] = weird
    data["decisions"] = [weird]
    path.write_text(json.dumps(data))
    for args in (("sessions", "--json"), ("sessions", "--all", "--json"),
                 ("sessions", "show", one_session, "--json")):  # fmt: skip
        result = env.run(*args)
        assert result.returncode == 0, result.stderr
        for raw in ("\x9b", "\x7f", "\u202e"):
            assert raw not in result.stdout, (args, result.stdout)
        assert weird in json.dumps(json.loads(result.stdout), ensure_ascii=False), args
