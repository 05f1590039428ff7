"""The real agent-assist command against the real supervisor: sessions survive everything."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from tests.e2e.harness import AGENT_ASSIST, Client, Env, outside_notices, running, wait_for

RESUME_PROMPT = "Resume previous session? [Y/n]"


def test_a_fresh_session_is_saved_on_exit_with_its_turn(env: Env) -> None:
    term = env.terminal()
    result = env.run(input="hello there\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert '[offline model] You said: "hello there"' in result.stdout
    (session_id,) = env.session_ids()
    saved = env.session(session_id)
    assert saved["schema_version"] == 3
    assert "hello there" in str(saved["recent_messages"])
    pointer = (env.project / f"active_{term.pid}.json").read_text()
    assert session_id in pointer


def test_an_unused_session_leaves_no_file(env: Env) -> None:
    result = env.run(input="", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert env.session_ids() == []


def test_resume_yes_keeps_the_session_and_its_history(env: Env) -> None:
    term = env.terminal()
    env.run(input="first message\n", terminal=term)
    (session_id,) = env.session_ids()
    result = env.run(input="\nsecond message\n", terminal=term)
    assert result.returncode == 0, result.stderr
    lines = result.stderr.splitlines()  # questions go to stderr when stdout is piped
    assert lines[0].startswith("Previous session found (last active: ")
    assert lines[0].endswith(" UTC)")
    assert lines[1] == "  1 turn · summary: first message"
    assert lines[2] == RESUME_PROMPT
    assert not result.stdout.startswith("Previous"), "piped stdout carries replies only"
    assert "(turn 2 of this conversation" in result.stdout
    assert f"[resume context: session {session_id}]" in result.stdout
    assert env.session_ids() == [session_id]
    assert "second message" in str(env.session(session_id)["recent_messages"])


def test_resume_no_starts_a_new_session_and_orphans_the_old(env: Env) -> None:
    term = env.terminal()
    env.run(input="first message\n", terminal=term)
    (old,) = env.session_ids()
    result = env.run(input="n\nfresh start\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert "(turn 1 of this conversation" in result.stdout
    assert "[resume context" not in result.stdout
    (new,) = set(env.session_ids()) - {old}
    states = {row["session_id"]: row["state"] for row in env.sessions_json()}
    assert states == {old: "orphaned", new: "idle"}


def test_a_new_tab_is_offered_the_newest_orphaned_session(env: Env) -> None:
    first_tab = env.terminal()
    env.run(input="in the first tab\n", terminal=first_tab)
    first_tab.close()
    (session_id,) = env.session_ids()
    result = env.run(input="y\n/exit\n", terminal=env.terminal())
    assert RESUME_PROMPT in result.stderr
    assert env.session_ids() == [session_id]


def test_resume_context_shows_drift_after_an_outside_edit(env: Env) -> None:
    term = env.terminal()
    script = (
        "write agent_spec.md: # Research agent\nwrite notes/tools.md: search\ndecide Use tools\n"
    )
    env.run(input=script, terminal=term)
    (env.workspace / "agent_spec.md").write_text("# Research agent, edited by hand\n")
    (env.workspace / "notes" / "tools.md").unlink()
    result = env.run(input="y\n/resume\n", terminal=term)
    assert result.returncode == 0, result.stderr
    out = result.stderr  # command results go to stderr when stdout is piped
    assert "# Resumed Session Context" in out
    assert "Agent specification file: agent_spec.md" in out
    assert "## Key Decisions Made\n- Use tools" in out
    assert (
        "## File Changes Since Last Session\n- agent_spec.md: modified\n- notes/tools.md: deleted"
        in out
    )
    assert "IMPORTANT: You are resuming a previous session." in out


def test_resuming_clears_the_temps_a_killed_write_left_beside_tracked_files(env: Env) -> None:
    """A supervisor killed mid-write (a tool's write, a checkpoint's restore) leaves a temp
    beside the file; resuming the session removes it once it is a minute old."""
    term = env.terminal()
    env.run(input="write notes/tools.md: search\n", terminal=term)
    notes = env.workspace / "notes"
    old = notes / ".tools.md.0123abcd.agent-assist.tmp"
    young = notes / ".tools.md.4567cdef.agent-assist.tmp"
    other = notes / ".other.md.89abcdef.agent-assist.tmp"  # no tracked file of that name
    for leftover in (old, young, other):
        leftover.write_text("half a write")
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    os.utime(other, (an_hour_ago, an_hour_ago))
    result = env.run(input="y\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert not old.exists()
    assert young.exists()  # perhaps another writer's, in flight
    assert other.exists()
    assert (notes / "tools.md").read_text() == "search\n"


def test_a_temp_a_killed_write_left_in_templates_is_not_tracked_as_a_template(env: Env) -> None:
    """A supervisor killed mid-restore leaves a temp beside a template file; the template
    directory's listing took it for a template: tracked, checkpointed, and told to the model
    as ``deleted`` once the next resume cleared it."""
    term = env.terminal()
    templates = env.workspace / "templates"
    templates.mkdir()
    (templates / "triage.md").write_text("# Triage\n")
    leftover = templates / ".triage.md.0123abcd.agent-assist.tmp"
    leftover.write_text("half a write")
    an_hour_ago = time.time() - 3600
    os.utime(leftover, (an_hour_ago, an_hour_ago))
    result = env.run(input="hello\n/save\n", terminal=term)
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert list(env.session(session_id)["file_manifest"]) == ["templates/triage.md"]
    result = env.run(input="y\n/resume\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert "1 tracked file unchanged" in result.stderr
    assert "agent-assist.tmp" not in result.stderr


def test_reset_deletes_file_and_pointer_and_autosave_does_not_resurrect(env: Env) -> None:
    term = env.terminal()
    env.run(input="write agent_spec.md: # Spec\n", terminal=term)
    (old,) = env.session_ids()
    result = env.run(input="y\n/reset\nn\n/resume\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert "Also delete agent_spec.md? [y/N]" in result.stderr
    assert "Session reset" in result.stderr
    assert "No resume context" in result.stderr
    assert env.session_ids() == []
    assert not (env.project / f"active_{term.pid}.json").exists()
    assert (env.workspace / "agent_spec.md").exists(), "answered no: the spec stays"
    later = env.run(input="", terminal=term)
    assert RESUME_PROMPT not in later.stderr
    assert old not in env.session_ids()


def test_a_spec_that_cannot_be_deleted_is_named_and_the_reset_is_still_done(env: Env) -> None:
    """A helper's attack: an undeletable agent_spec.md ended /reset in "internal error"
    after the session was deleted, and the terminal kept showing the old session."""
    term = env.terminal()
    env.run(input="write agent_spec.md: # Spec\n", terminal=term)
    (old,) = env.session_ids()
    spec = env.workspace / "agent_spec.md"
    if subprocess.run(["chattr", "+i", str(spec)], capture_output=True).returncode != 0:
        pytest.skip("chattr +i is not available here")
    try:
        result = env.run(input="y\n/reset\ny\nhello again\n", terminal=term)
    finally:
        subprocess.run(["chattr", "-i", str(spec)], check=True)
    assert result.returncode == 1, result.stderr  # an error line was printed
    assert "Session reset" in result.stderr
    assert "error: could not delete agent_spec.md (Operation not permitted)" in result.stderr
    assert "internal error" not in result.stderr
    assert old not in env.session_ids()
    assert spec.read_text() == "# Spec\n"


def test_reset_deletes_the_spec_when_confirmed_and_a_later_turn_saves_again(env: Env) -> None:
    term = env.terminal()
    env.run(input="write agent_spec.md: # Spec\n", terminal=term)
    result = env.run(input="y\n/new\ny\nstarting over\n", terminal=term)
    assert "Deleted agent_spec.md." in result.stderr
    assert not (env.workspace / "agent_spec.md").exists()
    (session_id,) = env.session_ids()
    assert "starting over" in str(env.session(session_id)["recent_messages"])
    assert "# Spec" not in str(env.session(session_id)["recent_messages"])


def test_kill_9_of_a_terminal_keeps_its_last_completed_turn(env: Env) -> None:
    term = env.terminal()
    client = env.spawn(terminal=term)
    client.send("remember the number 42")
    client.expect("remember the number 42")
    client.kill9()
    (session_id,) = wait_for(env.session_ids, what="a session file")
    assert "remember the number 42" in str(env.session(session_id)["recent_messages"])
    rows = wait_for(
        lambda: [r for r in env.sessions_json() if r["state"] == "idle"], what="detached"
    )
    assert rows[0]["terminal_pid"] == term.pid
    again = env.run(input="y\nwhat was it?\n", terminal=term)
    assert "(turn 2 of this conversation" in again.stdout


def test_kill_9_of_the_supervisor_then_the_next_turn_works(env: Env) -> None:
    client = env.spawn(terminal=env.terminal())
    client.send("before the crash")
    client.expect("before the crash")
    first = env.supervisor_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    client.send("after the crash")
    line = client.expect("after the crash")
    assert "(turn 2 of this conversation" in line
    client.expect("the supervisor went away", stderr=True)
    second = wait_for(env.supervisor_pid)
    assert second != first
    client.close_stdin()
    assert client.wait() == 0


def test_kill_9_of_the_supervisor_before_the_input_ends_still_saves_and_names_the_session(
    env: Env,
) -> None:
    """A helper's attack (H78): a supervisor killed after the last reply, before a piped
    run's input ended, made the run end in silence (exit 0): no `Session ID saved.` line
    for the script that reads it, and no exit save. The heir restores the session from
    disk and saves it, as the next message would have made it do."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("the last message")
    client.expect("the last message")
    first = env.supervisor_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: not running(first), what="the supervisor's death")
    client.close_stdin()
    (session_id,) = env.session_ids()
    client.expect(f"Session {session_id} saved.", stderr=True, timeout=10)
    assert client.wait() == 0


def waiting_at_the_reset_question(env: Env) -> Client:
    """A piped chat with one turn done, asked whether /reset may delete agent_spec.md."""
    (env.workspace / "agent_spec.md").write_text("# Spec\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("first turn")
    client.expect("first turn")
    client.send("/reset")
    client.expect("Also delete agent_spec.md? [y/N]", stderr=True)
    return client


def test_a_crash_while_a_question_waits_leaves_the_command_undone_and_the_chat_going(
    env: Env,
) -> None:
    """Before, the answer's send failed and the chat ended: 'lost the supervisor: [Errno
    32] Broken pipe', exit 1."""
    client = waiting_at_the_reset_question(env)
    env.kill_supervisor_and_heir()
    client.send("n")
    client.expect("error: /reset was interrupted; please run it again", stderr=True)
    client.send("after the crash")
    assert "(turn 2 of this conversation" in client.expect("after the crash")
    client.close_stdin()
    assert client.wait() == 1  # piped, a command that did not run fails the run
    assert (env.workspace / "agent_spec.md").exists()
    assert not any("Broken pipe" in line for line in client.drain_stderr())


def test_a_stop_while_a_question_waits_ends_the_chat_as_a_stop_does(env: Env) -> None:
    client = waiting_at_the_reset_question(env)
    assert env.run("supervisor", "stop").returncode == 0
    client.send("n")
    client.expect("the supervisor was stopped; session ", stderr=True)
    assert client.wait() == 1  # piped: the stop cut the run short of its input's end
    assert not any("lost the supervisor" in line for line in client.drain_stderr())


def test_ten_clients_starting_at_once_make_one_supervisor(env: Env) -> None:
    clients = [env.spawn(terminal=env.terminal()) for _ in range(10)]
    for n, client in enumerate(clients):
        client.send(f"client {n}")
    for n, client in enumerate(clients):
        client.expect(f"client {n}")
        client.close_stdin()
    assert all(client.wait() == 0 for client in clients)
    log = (env.runtime / "supervisor.log").read_text()
    assert log.count("listening on") == 1
    assert len(env.session_ids()) == 10


def test_two_terminals_in_one_project_have_separate_sessions(env: Env) -> None:
    a = env.spawn(terminal=env.terminal())
    b = env.spawn(terminal=env.terminal())
    a.send("I am terminal A")
    b.send("I am terminal B")
    a.expect("I am terminal A")
    b.expect("I am terminal B")
    rows = env.sessions_json()
    assert [r["state"] for r in rows] == ["live", "live"]
    for client in (a, b):
        client.close_stdin()
        assert client.wait() == 0
    texts = sorted(str(env.session(i)["recent_messages"]) for i in env.session_ids())
    assert "terminal A" in texts[0] and "terminal B" not in texts[0]
    assert "terminal B" in texts[1] and "terminal A" not in texts[1]


def test_a_second_terminal_cannot_resume_a_live_session(env: Env) -> None:
    a = env.spawn(terminal=env.terminal())
    a.send("holding this session")
    a.expect("holding this session")
    (session_id,) = env.session_ids()
    refused = env.run("--resume", session_id, input="n\n", terminal=env.terminal())
    assert refused.returncode == 1
    assert f"session {session_id} is live in another terminal" in refused.stderr
    assert "Start a new session instead? [Y/n]" in refused.stderr
    offered = env.run("--resume", session_id, input="y\nmine now\n", terminal=env.terminal())
    assert offered.returncode == 0, offered.stderr
    assert "(turn 1 of this conversation" in offered.stdout
    assert len(env.session_ids()) == 2
    a.send("still mine")
    a.expect("(turn 2 of this conversation")


def test_sessions_states_follow_the_terminal_process(env: Env) -> None:
    term = env.terminal()
    client = env.spawn(terminal=term)
    client.send("hello")
    client.expect("hello")
    (row,) = env.sessions_json()
    assert (row["state"], row["terminal_pid"]) == ("live", term.pid)
    client.close_stdin()
    assert client.wait() == 0
    (row,) = env.sessions_json()
    assert (row["state"], row["terminal_pid"]) == ("idle", term.pid)
    term.close()
    (row,) = env.sessions_json()
    assert (row["state"], row["terminal_pid"]) == ("orphaned", None)


def test_sessions_work_read_only_without_a_supervisor(env: Env) -> None:
    term = env.terminal()
    env.run(input="hello\n", terminal=term)
    assert env.run("supervisor", "stop").returncode == 0
    assert env.run("supervisor", "status").returncode == 3
    (row,) = env.sessions_json()
    assert row["state"] == "idle"
    assert {
        "session_id",
        "project",
        "state",
        "terminal_pid",
        "created_at",
        "updated_at",
        "summary",
    } <= set(row)
    assert not (env.runtime / "supervisor.sock").exists()
    table = env.run("sessions")
    assert row["session_id"] in table.stdout and "idle" in table.stdout


def test_a_message_that_starts_with_a_path_is_sent_and_a_double_slash_escapes(env: Env) -> None:
    """'/etc/hosts is ...' was refused as an unknown command, with no way to send it."""
    result = env.run(
        "--new", input="/etc/hosts is where the config lives\n//save this please\n"
    )
    assert result.returncode == 0, result.stderr
    assert 'You said: "/etc/hosts is where the config lives"' in result.stdout
    assert 'You said: "/save this please"' in result.stdout
    assert "checkpoint" not in result.stderr


def test_piped_bytes_that_are_not_utf8_are_sent_replaced_not_a_traceback(env: Env) -> None:
    result = subprocess.run(
        [AGENT_ASSIST, "--new"],
        input=b"caf\xe9 latin1 \x9b\n",
        capture_output=True,
        cwd=env.workspace,
        env=env.environ(env.terminal()),
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert 'You said: "caf\ufffd latin1 \ufffd"' in result.stdout.decode()
    assert b"Traceback" not in result.stderr


def test_a_live_sessions_summary_is_listed_after_its_first_turn(env: Env) -> None:
    """A helper's report: the listing showed no summary for a live session after its first
    turns, and a stale one later (the summary waited for the next turn's save)."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("design a triage agent for support tickets")
    client.expect("[offline model]")
    (session_id,) = env.session_ids()

    def summary() -> str | None:
        (row,) = [r for r in env.sessions_json() if r["session_id"] == session_id]
        assert row["state"] == "live"
        found: str | None = row["summary"]
        return found

    assert "triage agent" in wait_for(summary, what="the summary of turn 1")
    client.close_stdin()


def test_a_session_taken_by_another_terminal_while_the_supervisor_was_down_is_said_so(
    env: Env,
) -> None:
    """A helper's report: the terminal that found its session live elsewhere after a
    re-attach said it "had not been saved yet" (it had; another terminal holds it)."""
    first = env.spawn("--yes", terminal=env.terminal())
    first.send("before the crash")
    first.expect("before the crash")
    (session_id,) = wait_for(env.session_ids, what="a session file")
    env.kill_supervisor_and_heir()
    other = env.spawn("--resume", session_id, terminal=env.terminal())
    other.send("taken here")
    other.expect("taken here")
    first.send("after the crash")
    first.expect("after the crash")
    first.close_stdin()
    assert first.wait() == 0
    told = "\n".join(first.drain_stderr())
    assert f"session {session_id} is live in another terminal" in told
    assert "had not been saved yet" not in told
    assert "continuing in new session" in told
    other.close_stdin()
    assert other.wait() == 0


def test_a_session_removed_while_the_supervisor_was_down_is_not_said_unsaved(env: Env) -> None:
    """A helper's report (H44): after `sessions rm` of a saved session while the supervisor
    was down, the terminal's re-attach said it "had not been saved yet"."""
    tab = env.terminal()
    first = env.spawn("--new", terminal=tab)
    first.send("before the crash")
    first.expect("before the crash")
    (session_id,) = wait_for(env.session_ids, what="a session file")
    env.kill_supervisor_and_heir()
    tab.close()  # the tab's shell is gone: its session is orphaned, and may be removed
    assert env.run("sessions", "rm", session_id).returncode == 0
    first.send("after the rm")
    first.expect("after the rm")
    first.close_stdin()
    assert first.wait() == 0
    told = "\n".join(first.drain_stderr())
    assert f"session {session_id} is no longer on disk (removed meanwhile)" in told
    assert "had not been saved yet" not in told


def test_resume_of_a_live_session_of_another_project_names_its_project(env: Env) -> None:
    """A helper's report (H45): --resume of another project's live session offered a new
    session as if it were this project's, live elsewhere; one that is not live is named as
    another project's."""
    first = env.spawn("--new", terminal=env.terminal())
    first.send("in the first project")
    first.expect("in the first project")
    (session_id,) = wait_for(env.session_ids, what="a session file")
    elsewhere = env.base / "ws-other"
    elsewhere.mkdir()
    result = env.run("--workspace", str(elsewhere), "--resume", session_id, input="")
    assert result.returncode == 1
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: no session {session_id} in this project (")
    assert f"it belongs to project {env.project.parent.name}" in line
    first.close_stdin()
    assert first.wait() == 0


def test_resume_of_this_projects_live_session_with_no_turn_yet_says_it_is_live(env: Env) -> None:
    """A helper's find (H47): a live session with no turn saved (no file yet) was "no
    session" to --resume in its own project; it is live in another terminal."""
    first = env.spawn("--new", terminal=env.terminal())
    (row,) = wait_for(env.sessions_json, what="the new session listed")
    session_id = row["session_id"]
    result = env.run("--resume", session_id, input="n\n", terminal=env.terminal())
    assert f"note: session {session_id} is live in another terminal" in result.stderr
    elsewhere = env.base / "ws-other"
    elsewhere.mkdir()
    other = env.run("--workspace", str(elsewhere), "--resume", session_id, input="")
    assert other.returncode == 1
    assert other.stderr.startswith(f"error: no session {session_id} in this project ("), (
        other.stderr
    )
    first.close_stdin()
    assert first.wait() == 0


@pytest.mark.parametrize("how", ["--new", "--yes"])
def test_a_file_changed_while_the_supervisor_was_down_is_told_after_the_reattach(
    env: Env, how: str
) -> None:
    """A helper's find (H49): an edit made while the supervisor was dead got no notice
    line, and a resumed session's next request carried no note of it (its rebuilt resume
    context named the file as before the session, if at all)."""
    (env.workspace / "agent_spec.md").write_text("# spec\n")
    tab = env.terminal()
    if how == "--yes":  # a session to resume, resumed
        assert env.run("--new", input="first chat\n", terminal=tab).returncode == 0
    client = env.spawn(how, terminal=tab)
    client.send("before the crash")
    client.expect("before the crash")
    env.kill_supervisor_and_heir()
    with (env.workspace / "agent_spec.md").open("a") as edit:
        edit.write("edited while no supervisor ran\n")
    client.send("after the crash")
    client.expect("after the crash")
    client.close_stdin()
    assert client.wait() == 0
    told = client.drain_stderr()
    assert told.count("note: agent_spec.md changed outside agent-assist") == 1, told
    assert "[changed outside: agent_spec.md]" in client.stdout_lines[-1]


@pytest.mark.parametrize("how", ["--new", "--yes"])
def test_a_file_deleted_while_the_supervisor_was_down_is_told_once_not_at_each_crash(
    env: Env, how: str
) -> None:
    """A helper's find (H51): a tracked file deleted during one outage was told again as
    changed outside after every later crash (its old digest stayed in the manifest)."""
    tab = env.terminal()
    if how == "--yes":
        assert env.run("--new", input="first chat\n", terminal=tab).returncode == 0
    client = env.spawn(how, terminal=tab)
    client.send("write notes.md: n1")
    client.expect("wrote notes.md")
    env.kill_supervisor_and_heir()
    (env.workspace / "notes.md").unlink()
    client.send("after the first crash")
    client.expect("after the first crash")
    env.kill_supervisor_and_heir()
    client.send("after the second crash")
    client.expect("after the second crash")
    client.close_stdin()
    assert client.wait() == 0
    told = client.drain_stderr()
    assert told.count("note: notes.md changed outside agent-assist") == 1, told
    assert "[changed outside: notes.md]" not in client.stdout_lines[-1]


def test_another_assistants_command_name_is_told_what_it_is_here(env: Env) -> None:
    """A helper's report (H59): /clear, what Claude Code users type, was only "unknown"."""
    result = env.run("--new", input="/clear\n/nosuch\n", terminal=env.terminal())
    assert result.returncode == 1  # piped: an unknown command fails the run
    assert "error: unknown command /clear (did you mean /reset (it also deletes" in result.stderr
    assert "error: unknown command /nosuch (try /help)" in result.stderr


def test_a_slash_alone_is_told_as_no_command_not_sent(env: Env) -> None:
    """H187's find: a lone ``/`` (a command begun, Enter pressed too soon) went to the
    model as the message "/"."""
    result = env.run("--new", input="/\n  /  \nstill here\n", terminal=env.terminal())
    assert result.returncode == 1  # piped: an unknown command fails the run
    assert result.stderr.count("error: unknown command / (try /help)") == 2, result.stderr
    assert 'You said: "/' not in result.stdout
    assert 'You said: "still here"' in result.stdout


def test_a_mistyped_command_is_answered_with_the_command_it_is_close_to(env: Env) -> None:
    """H81's find: /sav, /chekpoint and /exitt were only "unknown command ... (try /help)";
    a typo is told the command it is close to (and still runs nothing); H98's: so is a
    mistyped beginning (/chek)."""
    typed = "/sav\n/chekpoint\n/chek\n/exitt\n/res\nstill here\n"
    result = env.run("--new", input=typed, terminal=env.terminal())
    assert result.returncode == 1  # piped: an unknown command fails the run
    assert "error: unknown command /sav (did you mean /save? try /help)" in result.stderr
    assert "error: unknown command /chekpoint (did you mean /checkpoint? try /help)" in (
        result.stderr
    )
    assert "error: unknown command /chek (did you mean /checkpoint? try /help)" in (
        result.stderr
    )
    assert "error: unknown command /exitt (did you mean /exit? try /help)" in result.stderr
    assert "unknown command /res (did you mean /reset or /resume? try /help)" in result.stderr
    assert 'You said: "still here"' in result.stdout  # /exitt did not leave
    assert "checkpoint 1" not in result.stderr  # /sav saved nothing


def test_a_tool_call_the_tools_refused_is_shown_as_refused(env: Env) -> None:
    """A helper's report (H54, H61): a write refused (its path a symlink) was shown only
    as ``write_file l.md (1 B)``, which reads as done; the model had been told otherwise."""
    (env.workspace / "target.md").write_text("kept\n")
    (env.workspace / "l.md").symlink_to("target.md")
    result = env.run("--new", input="write l.md: x\n", terminal=env.terminal())
    assert "  write_file l.md (2 B)" in result.stderr
    assert (
        "  ↳ write_file: error: cannot write l.md: is a symlink; not following it"
        in result.stderr
    )
    assert (env.workspace / "target.md").read_text() == "kept\n"


def test_the_assistant_does_not_write_agent_assists_own_state_inside_the_workspace(
    env: Env,
) -> None:
    """H81's find: run from a directory that holds the state root (`cd ~; agent-assist`,
    with the default ~/.config/agent-assist), the assistant's write_file wrote config.toml
    there (`write .config/agent-assist/config.toml: bogus = 1`: every later start failed),
    and could as well have rewritten a session file or a pointer, of which the StorageActor
    is the only writer. Refused, and told, as a write inside .git is."""
    home = env.home.relative_to(env.base)
    result = env.run(
        "--new",
        input=f"hello\nwrite {home}/config.toml: bogus = 1\n",
        terminal=env.terminal(),
        cwd=env.base,  # a workspace that holds the state root
    )
    assert f"↳ write_file: error: '{home}/config.toml' is inside agent-assist's own" in (
        result.stderr
    )
    assert not (env.home / "config.toml").exists()
    assert env.run("config", "show").returncode == 0


def test_the_assistant_does_not_read_agent_assists_own_state_inside_the_workspace(
    env: Env,
) -> None:
    """H81's find: in a workspace that holds the state root, the assistant's read_file of
    the session's own file made it a tracked file, and each save of the session was then
    told as a change outside agent-assist (to the user and to the model). Refused."""
    tab = env.terminal()
    assert env.run("--new", input="hello\n", terminal=tab, cwd=env.base).returncode == 0
    (session_file,) = (env.home / "projects").glob("*/sessions/" + "[0-9a-f]" * 12 + ".json")
    relative = session_file.relative_to(env.base)
    result = env.run(
        "--resume",
        session_file.stem,
        input=f"read {relative}\nsecond\nthird\n",
        terminal=tab,
        cwd=env.base,
    )
    assert result.returncode == 0, result.stderr
    assert f"↳ read_file: error: '{relative}' is inside agent-assist's own state" in (
        result.stderr
    )
    assert "changed outside" not in result.stderr


def test_the_assistant_does_not_make_a_workspace_again_once_it_is_gone(env: Env) -> None:
    """H81's find: with the workspace deleted (or moved) while the chat ran, the
    assistant's next write_file made the directory again, holding only that file: a
    stray directory where the user had removed one. The write is refused and told."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write agent_spec.md: v1")
    client.expect("wrote agent_spec.md")
    shutil.rmtree(env.workspace)
    client.send("write notes.md: after")
    client.expect("cannot write notes.md", stderr=True)
    client.close_stdin()
    client.wait()
    assert not env.workspace.exists()


def test_the_offline_models_reply_to_a_turn_that_called_a_tool_says_it_was_told_of_drift(
    env: Env,
) -> None:
    """The README: the offline model's reply ends with ``[changed outside: FILES]`` when
    it was told. A turn that called a tool answered with the tool's result alone (H111)."""
    client = env.spawn("--new")
    client.send("write notes.md: first")
    client.expect("wrote notes.md")
    (env.workspace / "notes.md").write_text("edited by hand\n")
    outside_notices(client, "notes.md", "(auto)")
    client.send("read notes.md")
    client.expect("read_file:")
    client.send("and now?")
    client.expect("and now?")
    client.close_stdin()
    assert client.wait() == 0
    replies = "\n".join(client.stdout_lines)
    told = replies.split("read_file:", 1)[1]
    assert told.count("[changed outside: notes.md]") == 1, replies
    assert "[changed outside: notes.md]" not in told.split("You said")[1], replies


def test_a_file_another_session_wrote_is_told_as_its_change_not_outside_agent_assist(
    env: Env,
) -> None:
    """H111: a tracked file written by another agent-assist terminal in the same
    workspace was told as "changed outside agent-assist", which agent-assist had not
    been. It is told as that session's change; a change by hand after it still is one
    outside agent-assist."""
    first = env.spawn("--new", terminal=env.terminal())
    first.send("write notes.md: from the first terminal")
    first.expect("wrote notes.md")
    other = env.run("--new", input="write notes.md: from the second\n", terminal=env.terminal())
    assert other.returncode == 0, other.stderr
    other_session = other.stderr.strip().splitlines()[-1].split()[1]
    notice = f"note: notes.md changed by another agent-assist session ({other_session})"

    def told() -> bool:
        first.send("/checkpoint")
        first.expect("(auto)", stderr=True)
        return notice in first.drain_stderr()

    wait_for(told, what="the notice of the other session's write")
    (env.workspace / "notes.md").write_text("by hand\n")
    outside_notices(first, "notes.md", "(auto)")
    first.close_stdin()
    assert first.wait() == 0


def test_piped_help_names_no_keys(env: Env) -> None:
    """A new user's trial (H127): piped, /help listed Alt+Enter, Ctrl+Z and Up/Down, keys
    there is no terminal to press."""
    result = env.run("--new", input="/help\n")
    assert result.returncode == 0, result.stderr
    said = result.stdout + result.stderr
    assert "/checkpoint n" in said and "the end of the input too" in said
    for key in ("Alt+Enter", "Ctrl+", "Up/Down", "Tab"):
        assert key not in said
