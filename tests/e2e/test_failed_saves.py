"""Saves that fail (a full disk, a read-only directory) lose nothing: retried, then kept aside."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.e2e.harness import AGENT_ASSIST, Client, Env, wait_for


def prompts_in(data: dict[str, object]) -> list[str]:
    messages = data["recent_messages"]
    assert isinstance(messages, list)
    return [
        part["content"]
        for message in messages
        for part in message["parts"]
        if part.get("part_kind") == "user-prompt"
    ]


def test_exit_with_unsaved_turns_says_where_they_are_kept_and_fails(env: Env) -> None:
    env.faults().write_text("rename ENOSPC /sessions/\n")
    tab = env.terminal()
    result = subprocess.run(
        [AGENT_ASSIST, "--new"],
        input="first message\nsecond message\n",
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,  # as on a terminal: both on one screen
        text=True,
        cwd=env.workspace,
        env=env.environ(tab),
        timeout=60,
        check=False,
    )
    assert result.returncode == 1
    lines = result.stdout.splitlines()
    assert any(line.startswith("error: could not update the session on disk") for line in lines)
    assert all(line.startswith("error:") or "error:" not in line for line in lines), lines
    (last,) = [line for line in lines if "could not be saved" in line]
    kept = Path(last.rsplit(" kept in ", 1)[1])
    assert prompts_in(json.loads(kept.read_bytes())) == ["first message", "second message"]
    assert env.session_ids() == []
    # a late summary write may still be failing after the terminal left: once the
    # supervisor has stopped, none is in flight, and none may have left its temp file
    assert env.run("supervisor", "stop").returncode == 0
    assert not [p for p in env.project.iterdir() if p.name.endswith(".tmp")]


def test_a_save_that_fails_by_a_defect_loses_no_turn_and_leaves_the_session_free(
    env: Env,
) -> None:
    """H83's find: a save that raised something other than a disk error (there, a file
    name orjson could not encode) crashed the TerminalActor in its emergency save too:
    every turn was lost and the session was listed live for as long as the supervisor
    ran. A defect in a save is a failed save like any other."""
    env.faults().write_text("write BUG /sessions/\n")
    tab = env.terminal()
    result = env.run("--new", input="first message\nsecond message\n", terminal=tab)
    assert result.returncode == 1
    assert "injected defect" in result.stderr
    (last,) = [line for line in result.stderr.splitlines() if "could not be saved" in line]
    kept = Path(last.rsplit(" kept in ", 1)[1])
    assert prompts_in(json.loads(kept.read_bytes())) == ["first message", "second message"]
    status = json.loads(env.run("supervisor", "status", "--json").stdout)
    assert status["terminals"] == 0
    assert status.get("live_sessions", 0) == 0


def test_a_failed_save_is_retried_by_the_next_turn(env: Env) -> None:
    fault_file = env.faults()
    fault_file.write_text("write EIO /sessions/\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("first message")
    client.expect("could not update the session on disk", stderr=True)
    fault_file.unlink()
    client.send("second message")
    client.expect("[offline model]")
    client.expect("[offline model]")
    client.close_stdin()
    assert client.wait() == 0
    (session_id,) = env.session_ids()
    assert prompts_in(env.session(session_id)) == ["first message", "second message"]


def test_a_save_that_works_again_says_so_and_save_says_why_it_failed(env: Env) -> None:
    """A helper's report (H56): once a save had failed, nothing said when saving worked
    again; and /save, failing for the reason told at the turn before, said only "the save
    failed"."""
    fault_file = env.faults()
    fault_file.write_text("write EIO /sessions/\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("first message")
    client.expect("could not update the session on disk", stderr=True)
    client.send("/save")
    client.expect("could not update the session on disk", stderr=True)
    client.expect("error: the save failed; the session is kept in memory", stderr=True)
    fault_file.unlink()
    client.send("second message")
    client.expect("note: the session is saved again", stderr=True)
    client.close_stdin()
    assert client.wait() == 1  # piped: a failed /save fails the run
    assert "Traceback" not in "\n".join(client.drain_stderr())


def assert_the_three_messages_are_saved(env: Env) -> None:
    (session_id,) = env.session_ids()
    assert prompts_in(env.session(session_id)) == [
        "first message",
        "second message",
        "third message",
    ]


STEPS = ["open", "write", "fsync", "rename", "dirsync"]
ERRNOS = ["ENOSPC", "EIO", "EROFS"]
ALL_CASES = os.environ.get("AGENT_ASSIST_ALL_FAULTS") == "1"


@pytest.mark.parametrize(
    ("step", "code"),
    [(s, e) for s in STEPS for e in ERRNOS]
    if ALL_CASES
    else [(s, ERRNOS[i % len(ERRNOS)]) for i, s in enumerate(STEPS)],
)
def test_a_fault_at_any_step_of_a_save_loses_no_turn(env: Env, step: str, code: str) -> None:
    fault_file = env.faults()
    fault_file.write_text(f"{step} {code} /sessions/\n")
    client = env.spawn("--new", terminal=env.terminal())
    for text in ("first message", "second message"):
        client.send(text)
        client.expect(f'You said: "{text}"')
    fault_file.unlink()
    client.send("third message")
    client.expect('You said: "third message"')
    client.close_stdin()
    assert client.wait() == 0
    assert_the_three_messages_are_saved(env)
    # the summary's write after the terminal left may be in flight until the supervisor stops
    assert env.run("supervisor", "stop").returncode == 0
    assert not [p.name for p in env.project.iterdir() if p.name.endswith(".tmp")]


def summarized(sessions: Path) -> bool:
    """Whether the one session file in ``sessions`` has its summary."""
    files = [p for p in sessions.glob("*.json") if not p.name.startswith("active_")]
    return len(files) == 1 and bool(json.loads(files[0].read_bytes())["summary"])


def chat_with_a_broken_sessions_directory(env: Env) -> Client:
    """A chat whose first turn was saved, after which ``sessions/`` became a file."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("first message")
    client.expect("[offline model]")
    sessions = env.project
    wait_for(lambda: summarized(sessions), what="the first turn's summary written after it")
    replacement = sessions.with_name("sessions.new")
    replacement.write_text("not a directory\n")
    exchange(replacement, sessions)  # at once: a late write never finds sessions/ missing
    replacement.rename(sessions.with_name("sessions.bak"))
    return client


def exchange(a: Path, b: Path) -> None:
    """Swap the two paths atomically (Linux ``renameat2`` with ``RENAME_EXCHANGE``). A
    rename away and a file written in its place left a moment with no ``sessions/``: a
    save then (the summary written a second after a turn) passed the directory's check
    and failed on the file made meanwhile, told in other words than the next refusal."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    at_fdcwd, rename_exchange = -100, 2
    if libc.renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange):
        errno = ctypes.get_errno()
        raise OSError(errno, os.strerror(errno), str(a))


def test_a_sessions_directory_that_became_a_file_keeps_the_turns_aside_at_exit(
    env: Env,
) -> None:
    """A save refused because ``sessions/`` is no longer a directory was not kept at exit:
    the turns were lost and the run exited 0."""
    client = chat_with_a_broken_sessions_directory(env)
    client.send("second message")
    client.expect("could not update the session on disk", stderr=True)
    client.close_stdin()
    assert client.wait() == 1
    last = client.expect("could not be saved", stderr=True)
    kept = Path(last.rsplit(" kept in ", 1)[1])
    assert prompts_in(json.loads(kept.read_bytes())) == ["first message", "second message"]


def test_a_disk_failure_that_repeats_is_told_once(env: Env) -> None:
    """The same refusal was told for every write: seven lines for a run of two turns."""
    client = chat_with_a_broken_sessions_directory(env)
    for text in ("second message", "third message"):
        client.send(text)
        client.expect(text)
    client.close_stdin()
    assert client.wait() == 1
    client.expect("could not be saved", stderr=True)
    told = [line for line in client.drain_stderr() if "could not update the session" in line]
    assert len(told) == 1, told


def test_turns_whose_saves_failed_survive_a_supervisor_killed_before_the_exit(env: Env) -> None:
    """Unsaved turns were kept aside only at the exit: a supervisor killed before it lost
    every turn whose save had failed."""
    fault_file = env.faults()
    fault_file.write_text("rename ENOSPC /sessions/\n")
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    for text in ("first message", "second message"):
        client.send(text)
        client.expect(f'You said: "{text}"')
    env.kill_supervisor_and_heir()
    client.kill9()
    fault_file.unlink()
    recovered = env.project.parent / "recovered"
    (kept,) = recovered.glob("*.json")  # one copy, written again at each failed save
    copy = json.loads(kept.read_bytes())
    assert prompts_in(copy) == ["first message", "second message"]
    assert "second message" in copy["summary"], "its summary a turn behind (H58)"
    listing = env.run("sessions", terminal=tab)
    assert f"kept in {kept}" in listing.stderr


def test_a_chat_whose_supervisor_died_goes_on_with_the_turns_kept_aside(env: Env) -> None:
    """A helper's report: after the supervisor and its heir were killed, the re-attached
    chat went on from the session file, without the turns whose saves had failed (and
    without a word); its next reply said "turn 2"."""
    fault_file = env.faults()
    client = env.spawn("--new", terminal=env.terminal())
    client.send("first message")
    client.expect('You said: "first message"')  # saved
    fault_file.write_text("rename ENOSPC /sessions/\n")
    client.send("second message")
    client.expect('You said: "second message"')  # kept aside only
    env.kill_supervisor_and_heir()
    fault_file.unlink()
    client.send("third message")
    client.expect("going on with the turns kept in", stderr=True)
    client.expect("(turn 3 of this conversation")
    client.close_stdin()
    assert client.wait() == 0
    assert_the_three_messages_are_saved(env)
    assert "has turns its file lacks" not in env.run("sessions").stderr


def test_the_next_start_goes_on_with_the_turns_a_killed_terminal_could_not_save(
    env: Env,
) -> None:
    """A helper's report: with the disk full, the terminal killed with kill -9 and the
    space freed, the next start resumed the session file, without the two turns whose
    saves had failed (they were only in the recovery copy, which the listing then told
    to copy over the file, dropping the turn made since)."""
    fault_file = env.faults()
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    client.send("first message")
    client.expect('You said: "first message"')  # saved
    fault_file.write_text("rename ENOSPC /sessions/\n")
    client.send("second message")
    client.expect('You said: "second message"')  # kept aside only
    client.kill9()  # its exit's save fails too: the turns are in the recovery copy only
    again = env.spawn("--yes", terminal=tab)  # attached once that exit has ended
    again.expect("going on with the turns kept in", stderr=True)
    fault_file.unlink()  # the space freed
    again.send("third message")
    again.expect("(turn 3 of this conversation")
    again.close_stdin()
    assert again.wait() == 0
    assert_the_three_messages_are_saved(env)
    listing = env.run("sessions", terminal=tab).stderr
    assert "has turns its file lacks" not in listing and "went on" not in listing


def test_a_directory_made_at_the_session_files_name_is_moved_aside_and_told(env: Env) -> None:
    """A helper's attack: a directory made by hand where a live session's file was got
    moved aside by the next save with no word to the user (the design asks for one line
    naming the file and what was done)."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("first message")
    client.expect("[offline model]")
    (session_id,) = env.session_ids()
    path = env.settled(session_id)
    path.unlink()
    path.mkdir()
    (path / "kept.txt").write_text("whatever was put here")
    client.send("second message")
    told = f"warning: a directory was at {session_id}.json; moved aside to "
    line = client.expect(told, stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    (aside,) = env.project.glob(f"{session_id}.json.corrupt-*")
    assert aside.name in line
    assert (aside / "kept.txt").read_text() == "whatever was put here"
    assert prompts_in(env.session(session_id)) == ["first message", "second message"]



def test_a_chat_whose_first_saves_all_failed_keeps_its_turns_when_its_supervisor_dies(
    env: Env,
) -> None:
    """H148: with the disk full from the first turn on, the session file was never
    written, only its recovery copy; after the supervisor and its heir were killed the
    re-attached chat said the session was "no longer on disk (removed meanwhile)" and went
    on in a new session, without the turns the user had been answered."""
    fault_file = env.faults()
    fault_file.write_text("rename ENOSPC /sessions/\n")
    client = env.spawn("--new", terminal=env.terminal())
    for text in ("first message", "second message"):
        client.send(text)
        client.expect(f'You said: "{text}"')  # kept aside only
    env.kill_supervisor_and_heir()
    fault_file.unlink()
    client.send("third message")
    client.expect("(turn 3 of this conversation")
    client.close_stdin()
    assert client.wait() == 0
    assert "no longer on disk" not in "\n".join(client.drain_stderr())
    assert_the_three_messages_are_saved(env)


def _kept_only_in_a_copy(env: Env, *texts: str) -> tuple[Path, str]:
    """A chat on a full disk from its start (no save works) says ``texts``, then its
    terminal is killed: its session is kept only in a recovery copy. The copy and the id."""
    fault_file = env.faults()
    fault_file.write_text("rename ENOSPC /sessions/\n")
    client = env.spawn("--new", terminal=env.terminal())
    for text in texts:
        client.send(text)
        client.expect(f'You said: "{text}"')
    client.kill9()
    env.run("supervisor", "stop")  # the killed terminal's exit has ended: its copy is kept
    fault_file.unlink()
    (kept,) = (env.project.parent / "recovered").glob("*.json")  # and copies.index
    return kept, kept.name.split("-", 1)[0]


def test_resume_by_id_goes_on_with_a_session_kept_only_in_its_recovery_copy(env: Env) -> None:
    """H148: a terminal killed on a full disk left its session in a recovery copy only
    (no save ever worked); the listing's warning said "resuming the session goes on with
    them", and ``--resume ID`` answered "no session ID in this project"."""
    _, session_id = _kept_only_in_a_copy(env, "first message", "second message")
    again = env.spawn("--resume", session_id, terminal=env.terminal())
    again.send("third message")
    again.expect("(turn 3 of this conversation")
    again.close_stdin()
    assert again.wait() == 0
    assert env.session_ids() == [session_id]
    assert_the_three_messages_are_saved(env)


def test_sessions_rm_removes_a_session_kept_only_in_its_recovery_copy(env: Env) -> None:
    """H148: a session whose every save failed was out of reach of ``sessions rm`` ("no
    session ID in this project") and its copy, the whole transcript, stayed for good; a
    copy left by a removed session would now bring it back at ``--resume ID``."""
    kept, session_id = _kept_only_in_a_copy(env, "first message")
    removed = env.run("sessions", "rm", session_id)
    assert removed.returncode == 0, removed.stderr
    assert not kept.exists()
    again = env.run("sessions", "show", session_id)
    assert again.returncode == 1 and "no session" in again.stderr


def test_a_session_kept_only_in_its_recovery_copy_is_listed(env: Env) -> None:
    """H148: ``sessions`` said "No sessions." under the warning that named the copy of a
    session none of whose saves had worked: a session still on disk, hidden from the
    listing (and from ``--json``)."""
    kept, session_id = _kept_only_in_a_copy(env, "first message")
    listing = env.run("sessions", "--json")
    assert listing.returncode == 0, listing.stderr
    (row,) = json.loads(listing.stdout)
    assert (row["session_id"], row["turns"], row["state"]) == (session_id, 1, "orphaned")
    assert str(kept) in row["note"]


@pytest.mark.parametrize("broken", ["projects", "sessions"])
def test_a_chat_that_can_save_nothing_fails_though_no_turn_was_made(
    env: Env, broken: str
) -> None:
    """H165: with the store's directory a file, a chat given empty input said `error: could
    not update the session on disk: ...` (its pointer) and exited 0, as if that write were
    retried and made good as a failed save is: its session could never be saved."""
    unusable = env.project if broken == "sessions" else env.home / "projects"
    unusable.parent.mkdir(parents=True)
    unusable.write_text("not a directory\n")
    result = env.run("--new", input="", terminal=env.terminal())
    assert result.returncode == 1
    (told,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert told == (
        f"error: refusing sessions directory {unusable} (not a directory); left untouched"
    )


def test_a_chat_that_could_not_be_saved_says_it_in_one_line(env: Env) -> None:
    """H170 left: `error: session ID could not be saved (see above)` was followed by
    `Nothing to save (no turn was completed).`, which contradicts it; then (H186) that line
    itself followed the start's, which said it all: with no turn, nothing else stays
    unsaved. One line, and the run fails."""
    env.project.parent.mkdir(parents=True)
    env.project.write_text("not a directory\n")
    result = env.run("--new", input="", terminal=env.terminal())
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        f"error: refusing sessions directory {env.project} (not a directory); left untouched"
    ], result.stderr


def test_a_chat_that_can_save_nothing_says_its_cause_once(env: Env) -> None:
    """H170: the chat above said its cause three times: the start's listing, its pointer's
    write (`could not update the session on disk: ...`) and its exit's line."""
    env.project.parent.mkdir(parents=True)
    env.project.write_text("not a directory\n")
    result = env.run("--new", input="first message\n", terminal=env.terminal())
    assert result.returncode == 1
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert errors[0] == (
        f"error: refusing sessions directory {env.project} (not a directory); left untouched"
    )
    assert [line for line in errors if "not a directory" in line] == errors[:1], errors
    assert len(errors) == 2 and "its unsaved turns are kept in" in errors[1], errors


def test_a_new_tab_is_offered_a_session_kept_only_in_its_recovery_copy(env: Env) -> None:
    """H174: such a session (none of its saves worked, its terminal gone) is the user's
    latest conversation, orphaned, and resumable from its copy (``--resume ID``); a new tab
    was offered nothing and began a new session. It is offered like any orphan."""
    _, session_id = _kept_only_in_a_copy(env, "first message", "second message")
    again = env.run(input="y\nthird message\n", terminal=env.terminal())
    assert again.returncode == 0, again.stderr
    assert "Resume previous session? [Y/n]" in again.stdout + again.stderr
    assert "(turn 3 of this conversation" in again.stdout
    assert env.session_ids() == [session_id]
    assert_the_three_messages_are_saved(env)


def test_prune_removes_an_old_session_kept_only_in_its_recovery_copy(env: Env) -> None:
    """H174: ``sessions prune`` left such a session, orphaned and as old as any it removed,
    for good (its copy, the whole transcript, with it). It goes as an orphan does, copy
    and all; ``--dry-run`` names it and removes nothing."""
    kept, session_id = _kept_only_in_a_copy(env, "first message")
    dry = env.run("sessions", "prune", "--older-than", "0", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert session_id in dry.stdout and kept.exists()
    pruned = env.run("sessions", "prune", "--older-than", "0")
    assert pruned.returncode == 0, pruned.stderr
    assert session_id in pruned.stdout
    assert not kept.exists()
    assert json.loads(env.run("sessions", "--json").stdout) == []
