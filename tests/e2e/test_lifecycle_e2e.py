"""Supervisor start/stop, the light terminal, session commands, and files problems, end to end."""

from __future__ import annotations

import ast
import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta

from tests.e2e.harness import AGENT_ASSIST, Env, outside_notices, wait_for


def modules_loaded(
    env: Env, args: list[str], watched: tuple[str, ...], input: str = ""
) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """``agent-assist ARGS`` run in this interpreter, and which of the ``watched`` modules
    (a name, or a package and everything in it) it loaded."""
    code = (
        "import sys, runpy\n"
        f"sys.argv = [{AGENT_ASSIST!r}, *{args!r}]\n"
        "try:\n"
        "    runpy.run_module('cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"watched = {watched!r}\n"
        "loaded = sorted(m for m in sys.modules if m in watched or m.split('.')[0] in watched)\n"
        "print('LOADED', loaded, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        input=input,
        capture_output=True,
        text=True,
        cwd=env.workspace,
        env=env.environ(env.terminal()),
        timeout=60,
        check=False,
    )
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("LOADED ")]
    return result, ast.literal_eval(line.removeprefix("LOADED "))


def test_the_terminal_process_never_imports_pydantic_ai_or_openai(env: Env) -> None:
    heavy = ("pydantic_ai", "openai", "anyio", "httpx", "watchdog")
    result, loaded = modules_loaded(env, [], heavy, input="hello\n")
    assert 'You said: "hello"' in result.stdout, result.stderr
    assert loaded == []


def test_supervisor_stop_saves_live_sessions_and_tells_the_terminal(env: Env) -> None:
    client = env.spawn(terminal=env.terminal())
    client.send("unsaved? no: saved after every turn")
    client.expect("unsaved?")
    (session_id,) = env.session_ids()
    before = env.session(session_id)["updated_at"]
    stopped = env.run("supervisor", "stop")
    assert stopped.returncode == 0, stopped.stderr
    assert stopped.stdout.startswith("supervisor stopped (pid ")
    client.send("are you there?")
    client.expect(
        f"the supervisor was stopped; session {session_id} saved; "
        "the run stopped before the end of its input",
        stderr=True,
    )
    assert client.wait() == 1, "piped, a message the stop kept from its turn fails the run"
    assert env.session(session_id)["updated_at"] >= before
    assert env.run("supervisor", "status").returncode == 3


def test_sigterm_stops_the_supervisor_gracefully(env: Env) -> None:
    client = env.spawn(terminal=env.terminal())
    client.send("hello")
    client.expect("hello")
    pid = env.supervisor_pid()
    assert pid is not None
    os.kill(pid, signal.SIGTERM)
    wait_for(lambda: env.supervisor_pid() is None, what="the pid file to go")
    client.send("are you there?")
    client.expect("the supervisor was stopped", stderr=True)
    assert not (env.runtime / "supervisor.sock").exists()


def test_a_stop_before_the_first_turn_says_nothing_was_saved(env: Env) -> None:
    """It said 'session X saved' of a session that has no file (no turn completed)."""
    client = env.spawn("--new", terminal=env.terminal())
    wait_for(
        lambda: json.loads(env.run("supervisor", "status", "--json").stdout)["terminals"] == 1,
        what="the chat attached",
    )
    assert env.run("supervisor", "stop").returncode == 0
    client.send("are you there?")
    line = client.expect("the supervisor was stopped", stderr=True)
    assert line.startswith("the supervisor was stopped; nothing to save (no turn was completed)")
    assert env.session_ids() == []


def test_status_json_reports_running_pid_socket_and_terminals(env: Env) -> None:
    idle = json.loads(env.run("supervisor", "status", "--json").stdout)
    assert idle["running"] is False and idle["pid"] is None
    client = env.spawn(terminal=env.terminal())
    client.send("hi")
    client.expect("hi")
    result = env.run("supervisor", "status", "--json")
    assert result.returncode == 0
    status = json.loads(result.stdout)
    assert status["running"] is True
    assert status["pid"] == env.supervisor_pid()
    assert status["socket"] == str(env.runtime / "supervisor.sock")
    assert status["terminals"] == 1
    again = env.run("supervisor", "start")
    assert "already running" in again.stdout


def test_start_and_stop_json_say_what_they_did(env: Env) -> None:
    """DESIGN 5a writes `supervisor run|start|stop|status [--json]`: start and stop took no
    --json (a usage error, exit 2)."""
    socket = str(env.runtime / "supervisor.sock")
    started = env.run("supervisor", "start", "--json")
    assert started.returncode == 0, started.stderr
    first = json.loads(started.stdout)
    assert first["running"] is True and first["started"] is True
    assert first["pid"] == env.supervisor_pid() and first["socket"] == socket
    again = json.loads(env.run("supervisor", "start", "--json").stdout)
    assert again["started"] is False and again["pid"] == first["pid"]
    stopped = env.run("supervisor", "stop", "--json")
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout) == {
        "running": False,
        "stopped": True,
        "pid": first["pid"],
        "socket": socket,
    }
    none = json.loads(env.run("supervisor", "stop", "--json").stdout)
    assert none["stopped"] is False and none["pid"] is None


def test_a_second_supervisor_run_refuses(env: Env) -> None:
    assert env.run("supervisor", "start").returncode == 0
    second = env.run("supervisor", "run", timeout=30)
    assert second.returncode == 1
    assert second.stderr.strip() == (
        f"error: a supervisor is already running (pid {env.supervisor_pid()}, "
        f"socket {env.runtime / 'supervisor.sock'})"
    )


def test_supervisor_run_on_a_terminal_logs_there_too(env: Env) -> None:
    """In the foreground it printed nothing: every line went to supervisor.log alone."""
    import pty

    main, secondary = pty.openpty()
    run = subprocess.Popen(
        [AGENT_ASSIST, "supervisor", "run"],
        env=env.environ(),
        stdin=subprocess.DEVNULL,
        stdout=secondary,
        stderr=secondary,
    )
    os.close(secondary)
    try:
        seen = b""
        deadline = time.monotonic() + 20
        while b"listening on" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([main], [], [], 0.5)
            if ready:
                seen += os.read(main, 4096)
        assert b"listening on" in seen, seen
    finally:
        run.terminate()
        run.wait(timeout=20)
        os.close(main)


def test_sessions_show_rm_and_prune(env: Env) -> None:
    old_tab, new_tab = env.terminal(), env.terminal()
    env.run(input="old work\n", terminal=old_tab)
    (old,) = env.session_ids()
    env.run(input="new work\n", terminal=new_tab)
    (new,) = set(env.session_ids()) - {old}
    old_tab.close()
    path = env.settled(old)
    data = json.loads(path.read_bytes())
    data["updated_at"] = (datetime.now(UTC) - timedelta(days=40)).isoformat()
    path.write_text(json.dumps(data))

    shown = env.run("sessions", "show", old)
    assert shown.returncode == 0, shown.stderr
    assert f"Session      {old}" in shown.stdout and "orphaned" in shown.stdout

    dry = env.run("sessions", "prune", "--older-than", "30", "--dry-run")
    assert "Would remove 1 orphaned session " in dry.stdout and old in dry.stdout
    assert sorted(env.session_ids()) == sorted([old, new])
    pruned = env.run("sessions", "prune", "--older-than", "30")
    assert "Removed 1 orphaned session " in pruned.stdout
    assert env.session_ids() == [new], "the idle session is never pruned"

    everything = env.run("sessions", "prune", "--older-than", "0")
    assert "Removed 0" in everything.stdout, "idle sessions stay whatever their age"
    removed = env.run("sessions", "rm", new)
    assert removed.returncode == 0 and env.session_ids() == []
    missing = env.run("sessions", "rm", new)
    assert missing.returncode == 1 and missing.stderr.startswith("error:")
    env.run("supervisor", "start")  # answered by the supervisor: show had no hint
    for command in ("show", "rm"):
        bad = env.run("sessions", command, "../../etc")
        assert bad.returncode == 2, "a usage error, told before anything runs"
        assert "'../../etc' is not a session id (12 hex digits" in bad.stderr


def test_a_live_session_cannot_be_removed(env: Env) -> None:
    client = env.spawn(terminal=env.terminal())
    client.send("busy")
    client.expect("busy")
    (session_id,) = env.session_ids()
    result = env.run("sessions", "rm", session_id)
    assert result.returncode == 1
    assert f"session {session_id} is live in another terminal" in result.stderr
    assert env.session_ids() == [session_id]


def test_a_corrupt_session_is_moved_aside_and_reported_in_one_line(env: Env) -> None:
    term = env.terminal()
    env.run(input="hello\n", terminal=term)
    (session_id,) = env.session_ids()
    env.settled(session_id).write_bytes(b'{"schema_version": 3, "sess')
    result = env.run(input="", terminal=term)
    assert result.returncode == 0
    (line,) = [x for x in result.stderr.splitlines() if "corrupt" in x]
    assert line.startswith(f"warning: session file {session_id}.json is corrupt; moved aside to ")
    (moved,) = env.project.glob(f"{session_id}.json.corrupt-*")
    assert moved.read_bytes() == b'{"schema_version": 3, "sess'


def test_a_session_from_a_newer_version_is_refused_and_untouched(env: Env) -> None:
    term = env.terminal()
    env.run(input="hello\n", terminal=term)
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    data = json.loads(path.read_bytes())
    data["schema_version"] = 99
    raw = json.dumps(data).encode()
    path.write_bytes(raw)
    result = env.run("--resume", session_id, input="", terminal=term)
    assert result.returncode == 1
    told = (
        f"error: session file {session_id}.json has schema_version 99, newer than this "
        "agent-assist supports (3); left untouched"
    )
    assert result.stderr.splitlines() == [told]  # a helper saw two lines (DESIGN 5a: one)
    elsewhere = env.run("--resume", session_id, input="", terminal=env.terminal())
    assert elsewhere.returncode == 1
    assert elsewhere.stderr.splitlines() == [told]
    listing = env.run("sessions")
    assert "schema_version 99" in listing.stderr
    assert session_id in listing.stdout, "a file on disk is never hidden from the listing"
    assert "[schema_version 99 is newer" in listing.stdout
    (row,) = env.sessions_json()
    assert row["session_id"] == session_id and row["note"].startswith("schema_version 99")
    offer = env.run(input="", terminal=env.terminal())
    assert "Resume previous session?" not in offer.stderr, "not offered: it cannot be opened"
    pruned = env.run("sessions", "prune", "--older-than", "0")
    assert "Removed 0" in pruned.stdout
    assert path.read_bytes() == raw


def test_a_session_from_a_newer_version_is_not_removed(env: Env) -> None:
    """A helper's report: `sessions rm` deleted a file this version cannot read (and so
    cannot judge), which the design says is never overwritten."""
    env.run(input="hello\n", terminal=env.terminal())
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    raw = json.dumps({**json.loads(path.read_bytes()), "schema_version": 99}).encode()
    path.write_bytes(raw)
    told = (
        f"error: session file {session_id}.json has schema_version 99, newer than this "
        "agent-assist supports (3); left untouched"
    )
    for supervisor in ("running", "stopped"):
        result = env.run("sessions", "rm", session_id)
        assert (result.returncode, result.stderr.strip()) == (1, told), supervisor
        assert path.read_bytes() == raw
        env.run("supervisor", "stop")


def test_an_invalid_pointer_is_reported_and_ignored(env: Env) -> None:
    term = env.terminal()
    env.project.mkdir(parents=True)
    (env.project / f"active_{term.pid}.json").write_text(
        json.dumps(
            {
                "session_id": "../../../etc",
                "pid": term.pid,
                "pid_start_time": None,
                "updated_at": "2026-11-29T10:00:00Z",
            }
        )
    )
    result = env.run(input="hello\n", terminal=term)
    assert result.returncode == 0
    assert (
        f"warning: ignoring invalid session pointer active_{term.pid}.json (bad session id)"
        in result.stderr
    )
    assert len(env.session_ids()) == 1


def test_an_outside_edit_during_a_live_session_is_noticed(env: Env) -> None:
    client = env.spawn(terminal=env.terminal())
    client.send("write agent_spec.md: # Spec")
    client.expect("wrote agent_spec.md")
    (env.workspace / "agent_spec.md").write_text("# Spec, edited in vim\n")
    # Piped, a notice comes out with the next line's answer: told then, however late the
    # watcher's news (a pause and one message missed it on a loaded machine).
    outside_notices(client, "agent_spec.md", "(auto)")


def test_the_quick_listing_answers_exactly_like_the_click_command(env: Env) -> None:
    env.run(input="hello\n", terminal=env.terminal())
    for flags in ([], ["--json"], ["--all"], ["--json", "--all"]):
        quick = env.run("sessions", *flags)
        through_click = env.run("sessions", "-w", str(env.workspace), *flags)
        assert quick.returncode == through_click.returncode == 0
        assert quick.stdout == through_click.stdout
    assert env.run("supervisor", "stop").returncode == 0
    assert (
        env.run("sessions", "--json").stdout
        == env.run("sessions", "--json", "-w", str(env.workspace)).stdout
    )


def test_the_quick_listing_through_a_supervisor_imports_no_path_library(env: Env) -> None:
    """``sessions --json`` answered by a running supervisor stays a bare client: the
    check of the workspace's path (H75) imported session.paths, pathlib and platformdirs
    (16 ms, twice the listing's own time)."""
    env.run(input="hello\n", terminal=env.terminal())
    path_library = ("pathlib", "platformdirs", "session.paths")
    result, loaded = modules_loaded(env, ["sessions", "--json"], path_library)
    assert '"session_id"' in result.stdout, result.stderr
    assert loaded == []


def test_help_names_the_offline_model_and_usage_errors_exit_2(env: Env) -> None:
    helped = env.run("--help")
    assert helped.returncode == 0
    assert "offline, the built-in" in " ".join(helped.stdout.split())
    for command in ("chat", "sessions", "supervisor"):
        assert command in helped.stdout
    assert env.run("--no-such-flag").returncode == 2
    both = env.run("--new", "--resume", "a1b2c3d4e5f6")
    assert both.returncode == 2


def test_a_session_whose_messages_cannot_be_read_is_refused_in_one_line(env: Env) -> None:
    term = env.terminal()
    env.run(input="hello\n", terminal=term)
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    data = json.loads(path.read_bytes())
    data["recent_messages"] = [{"kind": "not-a-message"}]
    raw = json.dumps(data).encode()
    path.write_bytes(raw)
    result = env.run("--resume", session_id, input="", terminal=term)
    assert result.returncode == 1
    assert result.stderr.strip().endswith(
        f"session file {session_id}.json holds messages this agent-assist cannot read; "
        "left untouched"
    )
    assert path.read_bytes() == raw
    listed = env.sessions_json()
    assert [r["session_id"] for r in listed] == [session_id], "still listed, never hidden"
    started = env.run(input="hello again\n", terminal=term)
    assert started.returncode == 0
    assert "Resume previous session?" not in started.stderr, "not offered: it would be refused"
    assert "(turn 1 of this conversation" in started.stdout


def seven_turns_mostly_compacted(env: Env) -> str:
    """A piped session of seven turns, compacted every two; returns what it printed."""
    turns = "".join(f"turn {n}\n" for n in range(1, 8))
    result = env.run(
        input=turns,
        terminal=env.terminal(),
        AGENT_ASSIST_COMPACTION_INTERVAL="2",
        AGENT_ASSIST_COMPACTION_OVERLAP="0",
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_sessions_show_counts_the_turns_a_compaction_took_out_of_the_tail(env: Env) -> None:
    """A compacted session showed only its tail (``Messages 0``): it looked empty."""
    seven_turns_mostly_compacted(env)
    assert env.run("supervisor", "stop").returncode == 0  # every compaction written
    (session_id,) = env.session_ids()
    shown = env.run("sessions", "show", session_id)
    (line,) = [line for line in shown.stdout.splitlines() if line.startswith("Turns")]
    assert re.fullmatch(r"Turns +7 \([1-7] compacted into the summary\)", line), line


def test_the_sessions_listing_counts_the_turns_a_compaction_took_out_of_the_tail(
    env: Env,
) -> None:
    """The listing's MSGS column counted the saved tail: 0 once a session was compacted."""
    seven_turns_mostly_compacted(env)
    assert env.run("supervisor", "stop").returncode == 0  # every compaction written
    (cold,) = env.sessions_json()  # no supervisor: the files are read
    assert cold["turns"] == 7
    table = env.run("sessions").stdout.splitlines()
    assert re.match(r"SESSION +STATE +TERMINAL +LAST ACTIVE +TURNS +SUMMARY", table[0])
    assert re.match(r"[0-9a-f]{12} +idle +[0-9]+ +\S+ \S+ UTC +7 ", table[1]), table[1]
    env.run("supervisor", "start")
    (warm,) = env.sessions_json()
    assert warm["turns"] == 7


def test_sessions_show_prints_times_as_the_listing_does(env: Env) -> None:
    """``sessions show`` printed raw ISO stamps (``2026-12-02T07:42:33.503121Z``)."""
    assert env.run(input="hello\n", terminal=env.terminal()).returncode == 0
    (session_id,) = env.session_ids()
    shown = env.run("sessions", "show", session_id).stdout.splitlines()
    (listed,) = env.sessions_json()
    for label in ("Created", "Last active"):
        (line,) = [line for line in shown if line.startswith(label)]
        assert re.fullmatch(rf"{label} +\d{{4}}-\d\d-\d\d \d\d:\d\d UTC", line), line
    assert f"Last active  {listed['last_active']}" in shown


def test_the_offline_model_counts_the_turns_a_compaction_took_out_of_the_history(
    env: Env,
) -> None:
    """It counted the prompts left in the request: ``turn 2`` at the seventh turn."""
    last = seven_turns_mostly_compacted(env).splitlines()[-1]
    assert 'You said: "turn 7". (turn 7 of this conversation' in last, last


def test_an_edit_after_the_workspace_was_deleted_and_made_again_is_noticed(env: Env) -> None:
    """A helper's report: once the whole workspace was deleted (told) and made again,
    edits gave no notice until the next turn."""
    client = env.spawn(terminal=env.terminal())
    client.send("write agent_spec.md: # Spec")
    client.expect("wrote agent_spec.md")
    shutil.rmtree(env.workspace)
    outside_notices(client, "agent_spec.md", "(auto)", how="deleted")
    env.workspace.mkdir()
    wait_for(lambda: env.watching(env.workspace), what="the workspace made again watched")
    (env.workspace / "agent_spec.md").write_text("# Spec, made again\n")
    outside_notices(client, "agent_spec.md", "(auto)")
    client.send("what changed?")
    client.expect("what changed?")
    client.close_stdin()
    assert client.wait() == 0
    notes = [line for line in client.drain_stderr() if line.endswith(" outside agent-assist")]
    assert notes == [
        "note: agent_spec.md deleted outside agent-assist",
        "note: agent_spec.md changed outside agent-assist",  # made again
    ], notes


def test_a_new_session_is_listed_live_before_its_first_turn(env: Env) -> None:
    """A helper's report: a session just opened was in no listing (nor in --all) until its
    first turn, though the supervisor counted it live."""
    tab = env.terminal()
    chat = env.spawn("--new", terminal=tab)
    (row,) = wait_for(lambda: env.sessions_json(), what="the new session listed")
    assert (row["state"], row["terminal_pid"], row["turns"]) == ("live", tab.pid, 0)
    assert [r["session_id"] for r in env.sessions_json("--all")] == [row["session_id"]]
    shown = env.run("sessions", "show", row["session_id"])
    assert shown.returncode == 0, shown.stderr
    assert f"Session {row['session_id']} is new: live in terminal {tab.pid}" in shown.stdout
    as_json = json.loads(env.run("sessions", "show", row["session_id"], "--json").stdout)
    assert as_json["row"]["state"] == "live" and as_json["session"] is None
    chat.close_stdin()
    assert chat.wait() == 0
    assert env.sessions_json() == [], "it left with no turn: nothing is kept"
