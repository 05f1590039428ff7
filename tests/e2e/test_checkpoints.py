"""Checkpoints through the real terminal and supervisor: /save, /checkpoint, restore, life cycle."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from session.manager import CONTEXT_NAME
from tests.e2e.harness import (
    AGENT_ASSIST,
    Client,
    Env,
    Terminal,
    outside_notices,
    running,
    wait_for,
)

WATCHER_LATENCY_S = 1.5

SPEC = "agent_spec.md"


def checkpoints_dir(env: Env, session_id: str) -> Path:
    return env.project.parent / "checkpoints" / session_id


def blobs(env: Env) -> list[str]:
    directory = env.project.parent / "blobs"
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def entries(env: Env, session_id: str) -> list[str]:
    """The session's checkpoint entries (not its kept resume context)."""
    directory = checkpoints_dir(env, session_id)
    names = directory.iterdir() if directory.is_dir() else ()
    return sorted(p.name for p in names if p.name != CONTEXT_NAME)


def two_versions(env: Env) -> str:
    """A session whose spec was v1 at checkpoint 2 and v2 at checkpoint 3 (1 is the automatic
    checkpoint before the first write; the one before the second would have held what 2
    holds, so none was written). Returns its id."""
    result = env.run(
        input=f"write {SPEC}: # v1\n/save\nwrite {SPEC}: # v2\n/save\n", terminal=env.terminal()
    )
    assert result.returncode == 0, result.stderr
    assert "saved as checkpoint 2." in result.stderr
    assert "saved as checkpoint 3." in result.stderr
    (session_id,) = env.session_ids()
    return session_id


def test_save_writes_the_next_checkpoint_and_the_session_records_its_number(env: Env) -> None:
    term = env.terminal()
    result = env.run(input="hello\n/save\nmore\n/save\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert "saved as checkpoint 1." in result.stderr
    assert "saved as checkpoint 2." in result.stderr
    (session_id,) = env.session_ids()
    assert env.session(session_id)["checkpoint_count"] == 2
    assert entries(env, session_id) == ["0001.json", "0002.json"]


def test_a_save_with_nothing_changed_since_the_latest_checkpoint_writes_none(env: Env) -> None:
    """H109's find: /save three times in a row wrote three identical checkpoints."""
    result = env.run(input=f"write {SPEC}: # v1\n/save\n/save\n/save\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    told = f"Session {session_id} saved; nothing changed since checkpoint 2."
    assert "saved as checkpoint 2." in result.stderr
    assert result.stderr.splitlines().count(told) == 2
    assert entries(env, session_id) == ["0001.json", "0002.json"]
    assert env.session(session_id)["checkpoint_count"] == 2


def test_no_automatic_checkpoint_is_written_when_the_latest_holds_the_same(env: Env) -> None:
    """H109's find: the checkpoint before a write copied the /save just before it; the
    one restore point, the /save's, still takes the write back."""
    result = env.run(
        input=f"write {SPEC}: # v1\n/save\nwrite {SPEC}: # v2\n/checkpoint 2\ny\n",
        terminal=env.terminal(),
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert "/checkpoint 3 undoes this." in result.stderr  # no 3 between
    assert (env.workspace / SPEC).read_text() == "# v1\n"
    reasons = [
        json.loads((checkpoints_dir(env, session_id) / name).read_bytes())["reason"]
        for name in entries(env, session_id)
    ]
    assert reasons == ["auto", "save", "restore"]


def test_a_save_after_a_resume_with_nothing_changed_writes_none(env: Env) -> None:
    """A history read back from disk loses what pydantic-ai lets only the running agent
    set (a response's model_id): the /save after each resume wrote a copy."""
    term = env.terminal()
    assert "saved as checkpoint 1." in env.run(input="hello\n/save\n", terminal=term).stderr
    (session_id,) = env.session_ids()
    env.run("supervisor", "stop")
    again = env.run("--resume", session_id, input="/save\n", terminal=term)
    assert f"Session {session_id} saved; nothing changed since checkpoint 1." in again.stderr
    assert entries(env, session_id) == ["0001.json"]


def test_a_save_right_after_a_restore_names_the_checkpoint_restored_and_writes_none(
    env: Env,
) -> None:
    """H120: /save right after /checkpoint 1 wrote checkpoint 3, a copy of 1 (the latest,
    2, is the restore's undo)."""
    term = env.terminal()
    result = env.run(input="hello\n/save\nmore\n/checkpoint 1\n/save\n", terminal=term)
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    assert "/checkpoint 2 undoes this." in result.stderr
    assert f"Session {session_id} saved; nothing changed since checkpoint 1." in result.stderr
    assert entries(env, session_id) == ["0001.json", "0002.json"]


def test_a_mode_changed_alone_is_saved_as_a_new_checkpoint(env: Env) -> None:
    (env.workspace / SPEC).write_text("# v1\n")
    term = env.terminal()
    assert "saved as checkpoint 1." in env.run(input="/save\n", terminal=term).stderr
    (env.workspace / SPEC).chmod(0o755)
    assert "saved as checkpoint 2." in env.run(input="y\n/save\n", terminal=term).stderr


def test_checkpoint_lists_oldest_first_one_line_each_beginning_with_its_number(env: Env) -> None:
    term = env.terminal()
    empty = env.run(input="/checkpoint\n", terminal=term)
    assert "No checkpoints in this session yet" in empty.stderr
    session_id = two_versions(env)
    result = env.run("--resume", session_id, input="/checkpoint\n", terminal=env.terminal())
    lines = [line for line in result.stderr.splitlines() if line.startswith("  ")]
    assert [line.split()[0] for line in lines] == ["1", "2", "3"]
    assert "0 turns" in lines[0] and "0 files changed" in lines[0]
    assert "1 turn " in lines[1] and "1 file changed" in lines[1]
    assert "'write agent_spec.md: # v1'" in lines[1]
    assert "2 turns" in lines[2] and "'write agent_spec.md: # v2'" in lines[2]


def test_checkpoint_lists_the_latest_twenty_and_counts_the_earlier_ones(env: Env) -> None:
    """H116: /checkpoint in a session of 200 checkpoints printed 200 lines."""
    saves = "".join(f"message {n}\n/save\n" for n in range(1, 26))
    result = env.run(input=f"{saves}/checkpoint\n", terminal=env.terminal(), timeout=120)
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    listed = result.stderr.split("saved as checkpoint 25.\n")[1].splitlines()
    assert listed[0] == (
        f"  ... 5 earlier checkpoints (1-5); agent-assist sessions show {session_id} lists them all"
    )
    assert [line.split()[0] for line in listed[1:21]] == [str(n) for n in range(6, 26)]
    shown = env.run("sessions", "show", session_id).stdout
    assert re.search(r"\n +1  \d{4}-\d\d-\d\d .*'message 1'", shown), shown


def test_restore_without_files_brings_back_the_conversation_only(env: Env) -> None:
    session_id = two_versions(env)
    result = env.run(
        "--resume", session_id, input="/checkpoint 2\nn\nwhere are we?\n", terminal=env.terminal()
    )
    assert result.returncode == 0, result.stderr
    assert "Tracked files differ from checkpoint 2:" in result.stderr
    assert "  agent_spec.md: modified" in result.stderr
    assert "Restore files too? [y/N]" in result.stderr
    assert "Restored the conversation to checkpoint 2 (1 turn); /checkpoint 4 undoes this." in (
        result.stderr
    )
    assert "Files left as they are: agent_spec.md." in result.stderr
    assert "(turn 2 of this conversation" in result.stdout
    assert (env.workspace / SPEC).read_text() == "# v2\n"
    saved = env.session(session_id)
    assert "where are we?" in str(saved["recent_messages"])
    assert "# v2" not in str(saved["recent_messages"])
    assert saved["checkpoint_count"] == 4


def test_a_restore_with_the_workspace_deleted_says_files_are_not_restored_and_asks_nothing(
    env: Env,
) -> None:
    """A tester's find (H152): ``rm -rf`` of the workspace while the chat is open, then
    ``/checkpoint N``: nothing was said about the files, so the ``y`` typed for the
    expected ``Restore files too?`` went to the model as a message. One line now says
    the files are not restored, and no question is asked."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write agent_spec.md: # v1")
    client.expect("wrote agent_spec.md")
    client.send("/save")
    client.expect("checkpoint 2", stderr=True)
    shutil.rmtree(env.workspace)
    client.send("/checkpoint 2")
    client.expect("Restored the conversation to checkpoint 2 (1 turn)", stderr=True)
    line = f"Files not restored: the workspace {env.workspace} is not there any more"
    client.expect(line, stderr=True)
    client.send("y")  # what a user expecting the question types: not sent
    client.expect("note: 'y' answers no question (none was asked); not sent", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    said = client.drain_stderr()
    assert not [s for s in said if "Restore files too?" in s], said
    assert [s for s in said if s.startswith("Files not restored:")] == [
        f"{line} (moved or deleted)."
    ]
    (session_id,) = env.session_ids()
    prompts = [
        part["content"]
        for message in env.session(session_id)["recent_messages"]
        for part in message["parts"]
        if part.get("part_kind") == "user-prompt"
    ]
    assert prompts == ["write agent_spec.md: # v1"], prompts  # no "y" sent


def test_a_restore_with_no_file_to_restore_says_so(env: Env) -> None:
    """H152: a restore whose files are as at the checkpoint said nothing of them."""
    result = env.run(input="write agent_spec.md: # v1\n/save\n/checkpoint 2\n")
    assert result.returncode == 0, result.stderr
    assert "Restore files too?" not in result.stderr
    assert "Tracked files are as at checkpoint 2: none to restore." in result.stderr


def test_after_a_restore_the_context_says_taken_back_to_the_checkpoint_not_resumed(
    env: Env,
) -> None:
    term = env.terminal()
    result = env.run(input="hello\n/save\nmore\n/checkpoint 1\n/resume\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert "Restored the conversation to checkpoint 1" in result.stderr
    (session_id,) = env.session_ids()
    assert "# Restored Checkpoint Context" in result.stderr
    assert f"This session (ID: {session_id}) was taken back to checkpoint 1." in result.stderr
    assert "This is a resumed session" not in result.stderr


def test_restore_with_files_writes_them_back_and_can_be_undone(env: Env) -> None:
    session_id = two_versions(env)
    mode_at_2 = (env.workspace / SPEC).stat().st_mode & 0o777
    (env.workspace / SPEC).chmod(0o640)
    result = env.run(
        "--resume", session_id, input="/checkpoint 2\ny\nnext\n", terminal=env.terminal()
    )
    assert result.returncode == 0, result.stderr
    assert "Files restored: agent_spec.md." in result.stderr
    assert (env.workspace / SPEC).read_text() == "# v1\n"
    assert (env.workspace / SPEC).stat().st_mode & 0o777 == mode_at_2 != 0o640  # as it was
    assert "changed outside" not in result.stderr
    assert "(turn 2 of this conversation" in result.stdout

    undo = env.run(
        "--resume", session_id, input="/checkpoint 4\ny\nagain\n", terminal=env.terminal()
    )
    assert "Restored the conversation to checkpoint 4 (2 turns)" in undo.stderr
    assert (env.workspace / SPEC).read_text() == "# v2\n"
    assert (env.workspace / SPEC).stat().st_mode & 0o777 == 0o640
    assert "(turn 3 of this conversation" in undo.stdout


def test_a_checkpoint_whose_messages_cannot_be_read_is_refused_and_changes_nothing(
    env: Env,
) -> None:
    """Its entry parses (a newer version's part kind, an edit by hand) but its messages are
    not pydantic-ai's: the restore asked ``Restore files too?``, then failed after the
    ``y`` with ``error: internal error (ValidationError ...)``."""
    session_id = two_versions(env)
    path = checkpoints_dir(env, session_id) / "0002.json"
    raw = json.loads(path.read_bytes())
    raw["state"]["recent_messages"][0]["parts"][0]["part_kind"] = "speech-from-the-future"
    path.write_text(json.dumps(raw))
    before = entries(env, session_id)
    result = env.run(
        "--resume", session_id, input="/checkpoint 2\ny\nnext\n", terminal=env.terminal()
    )
    assert (
        "error: checkpoint 2 not restored; nothing changed: it holds messages this "
        "agent-assist cannot read; left untouched"
    ) in result.stderr.splitlines(), result.stderr
    assert "internal error" not in result.stderr
    assert (env.workspace / SPEC).read_text() == "# v2\n"
    assert entries(env, session_id) == before and path.read_text() == json.dumps(raw)
    assert "(turn 3 of this conversation" in result.stdout


def test_a_checkpoint_whose_messages_cannot_be_read_is_listed_as_unreadable(
    env: Env,
) -> None:
    """It was listed as holding ``0 turns`` (its messages were counted as none)."""
    session_id = two_versions(env)
    path = checkpoints_dir(env, session_id) / "0002.json"
    raw = json.loads(path.read_bytes())
    raw["state"]["recent_messages"][0]["parts"][0]["part_kind"] = "speech-from-the-future"
    path.write_text(json.dumps(raw))
    result = env.run("--resume", session_id, input="/checkpoint\n", terminal=env.terminal())
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("  2  ")]
    assert "  messages unreadable  " in line and "turn" not in line, line
    shown = env.run("sessions", "show", session_id, "--json")
    listed = {c["number"]: c for c in json.loads(shown.stdout)["checkpoints"]}
    assert listed[2]["turns"] is None and isinstance(listed[3]["turns"], int)


def test_a_file_that_did_not_exist_at_the_checkpoint_is_left_alone_and_named(env: Env) -> None:
    session_id = two_versions(env)
    result = env.run("--resume", session_id, input="write notes.md: later\n/checkpoint 2\ny\n")
    assert "notes.md: not in checkpoint 2; left alone" in result.stderr
    assert "Not in checkpoint 2, left alone: notes.md." in result.stderr
    assert (env.workspace / "notes.md").read_text() == "later\n"
    assert (env.workspace / SPEC).read_text() == "# v1\n"


def test_a_file_not_restored_is_an_error_line_and_fails_a_piped_run(env: Env) -> None:
    """A helper's report: the README says a piped run with files not restored exits 1;
    a file refused was a plain line, and the run exited 0."""
    fault_file = env.faults()
    (env.workspace / "sub").mkdir()
    result = env.run(input="write sub/notes.md: v1\n/save\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    (env.workspace / "sub" / "notes.md").write_text("v2\n")
    fault_file.write_text("rename EIO sub/notes.md\n")  # the disk refuses the restore's write
    result = env.run("--resume", session_id, input="/checkpoint 2\ny\n", terminal=env.terminal())
    assert "error: sub/notes.md not restored, left as it is (" in result.stderr
    assert result.returncode == 1
    assert (env.workspace / "sub" / "notes.md").read_text() == "v2\n"


@pytest.mark.parametrize("in_the_way", ["symlink", "file"])
def test_a_file_whose_directory_was_replaced_is_named_and_never_offered_for_restoring(
    env: Env, in_the_way: str
) -> None:
    """A helper's report (H61): a tracked file whose directory became a symlink (or a
    file) was listed as deleted, offered, and then refused."""
    sub = env.workspace / "sub"
    sub.mkdir()
    result = env.run(input="write sub/notes.md: v1\n/save\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    shutil.rmtree(sub)
    elsewhere = env.base / "elsewhere"
    elsewhere.mkdir()
    if in_the_way == "symlink":
        sub.symlink_to(elsewhere)
    else:
        sub.write_text("a file now\n")
    result = env.run("--resume", session_id, input="/checkpoint 2\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert f"sub/notes.md: deleted; a {in_the_way} is at sub now, left alone" in result.stderr
    assert "Restore files too?" not in result.stderr
    assert list(elsewhere.iterdir()) == []  # nothing written through the symlink


def test_a_tracked_file_replaced_by_a_symlink_is_named_and_never_offered_for_restoring(
    env: Env,
) -> None:
    """A helper's report (H57): the file was listed as deleted, the user answered y to
    "Restore files too?", and the restore then refused it (it never writes over a
    symlink)."""
    result = env.run(input="write notes.md: v1\n/save\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    (env.workspace / "notes.md").unlink()
    (env.workspace / "other.md").write_text("other\n")
    (env.workspace / "notes.md").symlink_to("other.md")
    result = env.run("--resume", session_id, input="/checkpoint 2\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert "notes.md: deleted; a symlink is there now, left alone" in result.stderr
    assert "Restore files too?" not in result.stderr
    assert "Restored the conversation to checkpoint 2" in result.stderr
    assert (env.workspace / "notes.md").is_symlink()


def test_restore_works_after_the_supervisor_is_killed_and_restarted(env: Env) -> None:
    session_id = two_versions(env)
    first = env.supervisor_pid()
    assert first is not None
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: not os.path.exists(f"/proc/{first}"), what="the supervisor to die")
    result = env.run("--resume", session_id, input="/checkpoint 2\ny\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert env.supervisor_pid() != first
    assert "Files restored: agent_spec.md." in result.stderr
    assert (env.workspace / SPEC).read_text() == "# v1\n"


def test_a_restore_after_an_outside_edit_was_noted_gives_no_second_notice(env: Env) -> None:
    """The watcher's baseline was the outside edit it had told: the restore's own write
    then read as one more change outside agent-assist."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send(f"write {SPEC}: # v1")
    client.send("/save")
    client.expect("saved as checkpoint 2.", stderr=True)
    with (env.workspace / SPEC).open("a") as spec:
        spec.write("edited outside\n")

    outside_notices(client, SPEC, "(save)")
    client.send("/checkpoint 2")
    client.send("y")
    client.expect("Files restored: agent_spec.md.", stderr=True)
    # What the watcher makes of the restore's write comes within a second (DESIGN 6c):
    # listen that long, a command at a time, before the last message.
    until = time.monotonic() + WATCHER_LATENCY_S
    while time.monotonic() < until:
        client.send("/checkpoint")
        client.expect("(restore)", stderr=True)
    client.send("after the restore")
    client.expect('You said: "after the restore"')
    client.close_stdin()
    assert client.wait() == 0
    assert (env.workspace / SPEC).read_text() == "# v1\n"
    notes = [line for line in client.drain_stderr() if "changed outside" in line]
    assert notes == [f"note: {SPEC} changed outside agent-assist"], "the edit's, once"


def test_an_unknown_or_malformed_number_gets_one_line_and_changes_nothing(env: Env) -> None:
    session_id = two_versions(env)
    before = (entries(env, session_id), len(env.session(session_id)["recent_messages"]), 3)
    result = env.run(
        "--resume", session_id, input="/checkpoint 9\n/checkpoint two\n", terminal=env.terminal()
    )
    assert result.returncode == 1, "piped, a command that answers error: fails the run"
    assert "error: no checkpoint 9; this session has checkpoints 1-3" in result.stderr.splitlines()
    assert (
        "error: /checkpoint takes a checkpoint number (1, 2, ...), not 'two'"
        in result.stderr.splitlines()
    )
    saved = env.session(session_id)
    assert (entries(env, session_id), len(saved["recent_messages"]), saved["checkpoint_count"]) == (
        before
    )
    assert (env.workspace / SPEC).read_text() == "# v2\n"


def test_a_number_of_thousands_of_digits_is_refused_and_the_chat_goes_on(env: Env) -> None:
    """Found by an acceptance check: int() refused it first, the handler failed, and the
    terminal waited for ever for the command's result."""
    huge = "9" * 4400
    result = env.run(
        "--new", input=f"/checkpoint {huge}\nhello after\n", terminal=env.terminal(), timeout=60
    )
    assert result.returncode == 1, "piped, a command that answers error: fails the run"
    assert f"not '{'9' * 40}...'" in result.stderr
    assert "internal error" not in result.stderr
    assert 'You said: "hello after"' in result.stdout


def test_an_unchanged_file_is_stored_once_however_many_checkpoints(env: Env) -> None:
    (env.workspace / SPEC).write_text("# the same\n")
    result = env.run(input="/save\nhello\n/save\nagain\n/save\n", terminal=env.terminal())
    assert "saved as checkpoint 3." in result.stderr
    assert len(blobs(env)) == 1


def test_reset_deletes_the_sessions_checkpoints_and_their_contents(env: Env) -> None:
    term = env.terminal()
    session_id = two_versions(env)
    result = env.run("--resume", session_id, input="/reset\nn\n", terminal=term)
    assert "Session reset" in result.stderr
    assert not checkpoints_dir(env, session_id).exists()
    assert blobs(env) == []
    assert (env.workspace / SPEC).read_text() == "# v2\n"


def test_rm_deletes_checkpoints_but_keeps_contents_another_session_refers_to(env: Env) -> None:
    session_id = two_versions(env)
    other = env.run("--new", input="/save\n", terminal=env.terminal())
    assert "saved as checkpoint 1." in other.stderr
    (other_id,) = set(env.session_ids()) - {session_id}
    kept = json.loads((checkpoints_dir(env, other_id) / "0001.json").read_bytes())["files"]
    result = env.run("sessions", "rm", session_id)
    assert result.returncode == 0, result.stderr
    assert not checkpoints_dir(env, session_id).exists()
    assert blobs(env) == sorted(kept.values())


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_rm_of_a_session_whose_file_was_moved_aside_deletes_nothing(
    env: Env, supervisor: str
) -> None:
    """Its checkpoints may be what repairs it: `rm` said "no session" and had deleted them."""
    session_id = two_versions(env)
    session_file = env.project / f"{session_id}.json"
    session_file.rename(session_file.with_name(f"{session_id}.json.corrupt-20261202T150414Z"))
    if supervisor == "stopped":
        env.run("supervisor", "stop")
    kept = entries(env, session_id)
    result = env.run("sessions", "rm", session_id)
    assert result.returncode == 1
    assert "its file was corrupt" in result.stderr
    assert entries(env, session_id) == kept != []
    assert blobs(env) != []


def test_prune_deletes_checkpoints_and_contents_of_pruned_sessions(env: Env) -> None:
    term = env.terminal()
    result = env.run(input=f"write {SPEC}: # v1\n/save\n", terminal=term)
    (session_id,) = env.session_ids()
    term.close()  # the session is orphaned now
    env.run("supervisor", "stop")
    result = env.run("sessions", "prune", "--older-than", "0")
    assert result.returncode == 0, result.stderr
    assert env.session_ids() == []
    assert not checkpoints_dir(env, session_id).exists()
    assert blobs(env) == []


def test_kill_9_mid_checkpoint_leaves_every_listed_checkpoint_restorable(env: Env) -> None:
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(300):
        (templates / f"t{n:03}.md").write_bytes(bytes([65 + n % 26]) * 65536)
    term = env.terminal()
    client = env.spawn(terminal=term)
    client.send("/save")
    client.expect("saved as checkpoint 1.", stderr=True)  # piped: command results on stderr
    for n in range(300):
        (templates / f"t{n:03}.md").write_bytes(b"second version %d\n" % n * 4000)
    stored = len(blobs(env))
    client.send("/save")
    wait_for(lambda: len(blobs(env)) > stored + 10, what="the checkpoint's blobs")
    supervisor = env.supervisor_pid()
    assert supervisor is not None
    os.kill(supervisor, signal.SIGKILL)
    client.kill9()
    (session_id,) = env.session_ids()
    for name in entries(env, session_id):
        if name.endswith(".json"):
            json.loads((checkpoints_dir(env, session_id) / name).read_bytes())  # all whole

    listing = env.run("--resume", session_id, input="/checkpoint\n", terminal=term)
    numbers = [line.split()[0] for line in listing.stderr.splitlines() if line.startswith("  ")]
    assert numbers and numbers[0] == "1"
    for number in numbers:
        shutil.rmtree(templates)
        result = env.run("--resume", session_id, input=f"/checkpoint {number}\ny\n", terminal=term)
        assert result.returncode == 0, result.stderr
        entry = json.loads(
            (checkpoints_dir(env, session_id) / f"{int(number):04}.json").read_bytes()
        )
        for relative, digest in entry["files"].items():
            data = (env.workspace / relative).read_bytes()
            assert hashlib.sha256(data).hexdigest() == digest, relative


def test_a_checkpoint_the_disk_refuses_is_one_line_naming_what_failed(env: Env) -> None:
    """A helper's attack: an unwritable checkpoints directory said only ``error: [Errno
    13] Permission denied: '...'``. (A file in its place: the tests run as root.)"""
    assert env.run("--new", input="hello\n", terminal=env.terminal()).returncode == 0
    (env.project.parent / "checkpoints").write_text("not a directory\n")
    result = env.run("--yes", input="/save\n", terminal=env.terminal())
    assert result.returncode == 1
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith("error: checkpoint not written: Not a directory: ")
    assert "[Errno" not in result.stderr
    assert "saved (no checkpoint written)." in result.stderr


def test_the_size_cap_refuses_a_checkpoint_in_one_line_and_the_session_is_still_saved(
    env: Env,
) -> None:
    (env.workspace / SPEC).write_bytes(b"x" * 150_000)
    result = env.run(
        input="/save\nhello\n", terminal=env.terminal(), AGENT_ASSIST_CHECKPOINT_MAX_MB="0.1"
    )
    assert result.returncode == 1, result.stderr  # piped, an error line fails the run
    (line,) = [line for line in result.stderr.splitlines() if "cap" in line]
    assert line.startswith("error: checkpoint not written: ")
    assert (
        "over the 0.1 MB cap (AGENT_ASSIST_CHECKPOINT_MAX_MB or checkpoint_max_mb in config.toml)"
        in line
    )
    assert "saved (no checkpoint written)." in result.stderr
    (session_id,) = env.session_ids()
    assert entries(env, session_id) == []
    assert blobs(env) == []
    assert "hello" in str(env.session(session_id)["recent_messages"])


def test_the_cap_lines_say_a_raised_cap_counts_from_the_next_start_and_it_does(
    env: Env,
) -> None:
    """H103: the lines of /save and of the automatic checkpoint over the cap said "raise
    the cap", which a running chat never sees (it sent its settings when it started); the
    line of a restore refused at the cap said to start agent-assist again."""
    (env.workspace / SPEC).write_bytes(b"x" * 150_000)
    term = env.terminal()
    capped = env.run(
        input=f"/save\nread {SPEC}\nwrite {SPEC}: # small\n",
        terminal=term,
        AGENT_ASSIST_CHECKPOINT_MAX_MB="0.1",
    )
    lines = [line for line in capped.stderr.splitlines() if "over the 0.1 MB cap" in line]
    assert len(lines) == 2, capped.stderr  # /save's, then the automatic one's
    raise_it = "raise the cap and start agent-assist again, or start a new session"
    assert lines[0].endswith(raise_it)
    assert f"{raise_it}; the assistant's write goes ahead" in lines[1]
    (session_id,) = env.session_ids()
    again = env.run(
        "--resume", session_id, input="/save\n", terminal=term, AGENT_ASSIST_CHECKPOINT_MAX_MB="1"
    )
    assert "saved as checkpoint 1." in again.stderr, again.stderr


def test_the_first_write_of_a_turn_is_preceded_by_a_checkpoint_of_what_files_held(
    env: Env,
) -> None:
    (env.workspace / SPEC).write_text("# v1\n")
    result = env.run(input=f"hello\nwrite {SPEC}: # v2\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    entry = json.loads((checkpoints_dir(env, session_id) / "0001.json").read_bytes())
    assert entry["reason"] == "auto"
    blob = env.project.parent / "blobs" / entry["files"][SPEC]
    assert blob.read_bytes() == b"# v1\n"  # before the turn that wrote v2
    assert "hello" in str(entry["state"]["recent_messages"])
    assert "# v2" not in str(entry["state"]["recent_messages"])
    assert blob.stat().st_mode & 0o777 == 0o600


def test_a_write_is_refused_when_its_automatic_checkpoint_fails_on_the_disk(env: Env) -> None:
    """The checkpoint before a write is what lets the write be undone: without it, the
    file is left as it was (it used to be written anyway)."""
    (env.workspace / SPEC).write_text("# v1\n")
    term = env.terminal()
    assert env.run(input="hello\n", terminal=term).returncode == 0
    (env.project.parent / "blobs").write_text("a file where the contents' directory goes")
    result = env.run(input=f"y\nwrite {SPEC}: # v2\n", terminal=term)
    assert (env.workspace / SPEC).read_text() == "# v1\n"
    assert f"{SPEC} was not written: the checkpoint that would let this write be undone" in (
        result.stdout
    )
    assert "error: " in result.stderr  # the checkpoint's failure, told in one line


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_sessions_show_json_gives_checkpoints_as_data(env: Env, supervisor: str) -> None:
    """They were the /checkpoint list's text lines, for a script to parse."""
    session_id = two_versions(env)
    if supervisor == "stopped":
        env.run("supervisor", "stop")
    shown = env.run("sessions", "show", session_id, "--json")
    assert shown.returncode == 0, shown.stderr
    checkpoints = json.loads(shown.stdout)["checkpoints"]
    assert [c["number"] for c in checkpoints] == [1, 2, 3]
    assert [c["reason"] for c in checkpoints] == ["auto", "save", "save"]
    assert all(isinstance(c["created_at"], str) and c["turns"] >= 0 for c in checkpoints)
    shown_at = json.loads(shown.stdout)["session"]["updated_at"]
    assert shown_at.endswith("Z") and all(c["created_at"].endswith("Z") for c in checkpoints), (
        "times written one way (a helper saw +00:00 beside Z)"
    )
    text = env.run("sessions", "show", session_id).stdout
    assert "Checkpoints (agent-assist --resume ID, then /checkpoint N):" in text
    assert re.search(r"\n  3  \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC  \d+ turns?", text), text


def test_an_agent_spec_made_outside_after_the_start_is_told(env: Env) -> None:
    """A helper's report: agent_spec.md created after the session started was never
    watched (it is tracked "when it exists"), nor after /save had added it."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect('You said: "hello"')
    (env.workspace / SPEC).write_text("# made in an editor\n")
    outside_notices(client, SPEC, "checkpoints")
    client.close_stdin()
    assert client.wait() == 0


def test_a_flood_of_changes_outside_is_told_in_a_few_lines_that_count_every_file(
    env: Env,
) -> None:
    """H79's find: ``sed -i`` over 2,000 tracked files printed 2,000 notice lines. The
    first files of a flood get a line each; the rest, one line that counts them."""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(200):
        (templates / f"t{n:03}.md").write_text(f"template {n}\n")
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect('You said: "hello"')
    client.send("/save")
    client.expect("saved as checkpoint 1.", stderr=True)
    for n in range(200):
        (templates / f"t{n:03}.md").write_text(f"template {n}, edited by hand\n")
    lines: list[str] = []
    single = re.compile(r"note: templates/t\d{3}\.md changed outside agent-assist")
    flood = re.compile(r"note: ([\d,]+) more tracked files? changed outside agent-assist")

    def told() -> int:
        client.send("/checkpoint")
        client.expect("(save)", stderr=True)
        lines[:] = client.drain_stderr()  # every line so far
        floods = [flood.fullmatch(line.split(" (under")[0]) for line in lines]
        counted = sum(int(m.group(1).replace(",", "")) for m in floods if m)
        return sum(bool(single.fullmatch(line)) for line in lines) + counted

    wait_for(lambda: told() >= 200, what="every file told")
    assert told() == 200
    singles = [line for line in lines if single.fullmatch(line)]
    assert len(singles) < 50, f"{len(singles)} lines, one per file"
    assert any("(under templates/)" in line for line in lines)
    client.close_stdin()
    assert client.wait() == 0


def test_a_template_file_saved_into_the_manifest_is_watched_from_then_on(env: Env) -> None:
    """A helper's report: /save added a file made after the start to the manifest, but
    the watcher was never told: its later edits went unnoticed."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect('You said: "hello"')
    (env.workspace / "templates").mkdir()
    (env.workspace / "templates" / "triage.md").write_text("v1\n")
    client.send("/save")
    client.expect("saved as checkpoint 1.", stderr=True)
    (env.workspace / "templates" / "triage.md").write_text("v2, edited outside\n")
    outside_notices(client, "templates/triage.md", "(save)")
    client.close_stdin()
    assert client.wait() == 0


@pytest.mark.parametrize("leave", ["/exit", "supervisor stop"])
def test_an_outside_change_the_model_was_not_told_of_is_drift_at_the_resume(
    env: Env, leave: str
) -> None:
    """A helper's report: a change told on the terminal and then the exit (or a stop)
    before the next message: the exit's fresh hashes took it in, and the model never
    heard of it (the resume said every file was unchanged)."""
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    client.send(f"write {SPEC}: # v1")
    client.expect(f"wrote {SPEC}")
    with (env.workspace / SPEC).open("a") as spec:
        spec.write("edited outside\n")
    outside_notices(client, SPEC, "(auto)")  # the write made checkpoint 1
    if leave == "/exit":
        client.send("/exit")
    else:
        assert env.run("supervisor", "stop").returncode == 0
    client.close_stdin()  # piped, an idle chat reads the stop's news with its next line
    client.wait()
    offer = env.run(input="y\n/resume\n", terminal=tab)
    assert f"  {SPEC}: modified" in offer.stderr.splitlines(), offer.stderr
    assert f"- {SPEC}: modified" in offer.stderr.splitlines(), "in the model's context"


def test_a_resumes_drift_no_message_carried_is_told_at_the_next_resume(env: Env) -> None:
    """A helper's attack: a resume that reported `n.md: modified` and was left at once
    saved the new hashes: the next resume said the file was unchanged, and the model was
    never told."""
    tab = env.terminal()
    env.run("--new", input="write n.md: x\n", terminal=tab)
    with (env.workspace / "n.md").open("a") as edit:
        edit.write("more\n")
    for _ in range(2):  # resumed and left with no message, twice
        offer = env.run(input="y\n", terminal=tab)
        assert "  n.md: modified" in offer.stderr.splitlines(), offer.stderr
    told = env.run(input="y\nwhat now?\n", terminal=tab)
    assert 'You said: "what now?"' in told.stdout
    after = env.run(input="y\n", terminal=tab)
    assert "  1 tracked file unchanged" in after.stderr.splitlines(), "told once a message was"


def test_an_outside_change_left_by_a_restore_is_told_at_the_next_resume(env: Env) -> None:
    """A helper's attack: /checkpoint N (files left as they are) after an outside edit
    saved the new hashes: the next resume said the file was unchanged."""
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    client.send(f"write {SPEC}: # v1")
    client.expect(f"wrote {SPEC}")
    client.send("/save")
    client.expect("saved as checkpoint 2.", stderr=True)
    with (env.workspace / SPEC).open("a") as spec:
        spec.write("edited outside\n")
    outside_notices(client, SPEC, "(save)")
    client.send("/checkpoint 2")
    client.send("n")
    client.expect("/checkpoint 3 undoes this.", stderr=True)
    client.send("/exit")
    client.close_stdin()
    assert client.wait() == 0
    offer = env.run(input="y\n", terminal=tab)
    assert f"  {SPEC}: modified" in offer.stderr.splitlines(), offer.stderr


def test_a_tracked_file_deleted_and_made_again_outside_is_told(env: Env) -> None:
    """A helper's attack: a tracked file deleted (and told) was no longer watched: made
    again outside, it gave no notice."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write b.md: b")
    client.expect("wrote b.md")
    client.send("/save")  # answered once the watch on the new file is in place
    client.expect("saved as checkpoint 2.", stderr=True)
    (env.workspace / "b.md").unlink()
    outside_notices(client, "b.md", "(auto)", how="deleted")
    client.send("go on")
    client.expect("[changed outside: b.md]")
    (env.workspace / "b.md").write_text("B reborn\n")
    asked = 0

    def told_again() -> bool:  # (a notice within 2 s of the last is one burst: the model)
        nonlocal asked
        asked += 1
        client.send(f"and now {asked}?")
        return "[changed outside: b.md]" in client.expect(f"and now {asked}?")

    wait_for(told_again, what="the model told of b.md made again")
    client.close_stdin()
    assert client.wait() == 0


def test_prune_names_the_leftover_checkpoints_of_a_session_with_no_file(env: Env) -> None:
    """An interrupted `rm` leaves checkpoints with no session: a dry run counts them, as the
    prune that removes them then says, and a young leftover waits for --older-than."""
    term = env.terminal()
    env.run(input=f"write {SPEC}: # v1\n/save\n", terminal=term)
    (session_id,) = env.session_ids()
    term.close()
    env.run("supervisor", "stop")
    (env.project / f"{session_id}.json").unlink()  # as a `sessions rm` cut short would

    young = env.run("sessions", "prune", "--dry-run")
    assert young.returncode == 0, young.stderr
    assert "the checkpoints of" not in young.stdout  # (its closed tab's pointer is named)

    dry = env.run("sessions", "prune", "--older-than", "0", "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "Would remove the checkpoints of 1 session with no session file left" in dry.stdout
    assert f"  {session_id}  " in dry.stdout
    assert checkpoints_dir(env, session_id).exists()

    done = env.run("sessions", "prune", "--older-than", "0")
    assert done.returncode == 0, done.stderr
    assert "Removed the checkpoints of 1 session with no session file left" in done.stdout
    assert not checkpoints_dir(env, session_id).exists()
    assert blobs(env) == []


def test_a_value_found_secret_later_is_scrubbed_from_earlier_checkpoints(env: Env) -> None:
    """A helper's find: a value said in passing, then named as a password, was scrubbed from
    the session file but kept by the checkpoints written before, and a later chat's restore
    of one put it back into the session file."""
    secret = "Jq4Wn8Zt2Rk6Vy"
    term = env.terminal()
    result = env.run(
        "--new",
        input=f"remember {secret} for later\n/save\nwrite a.md: hello\n"
        f"the password for staging is {secret}\n/save\n",
        terminal=term,
    )
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    held = [p for p in env.home.rglob("*") if p.is_file() and secret.encode() in p.read_bytes()]
    assert held == []

    restored = env.run("--resume", session_id, input="/checkpoint 1\n", terminal=term)
    assert restored.returncode == 0, restored.stderr
    assert secret not in (env.project / f"{session_id}.json").read_text()


def model_told_of(client: Client, path: str) -> None:
    """Send messages until the model's note names ``path`` as changed outside (a notice
    within 2 s of the file's last one is the same burst: the model's note is the check)."""
    asked = 0

    def told() -> bool:
        nonlocal asked
        asked += 1
        client.send(f"and now {asked}?")
        return f"[changed outside: {path}]" in client.expect(f"and now {asked}?")

    wait_for(told, what=f"the model told of {path}")


def test_an_outside_edit_put_back_to_what_the_assistant_wrote_is_told(env: Env) -> None:
    """A helper's attack (H79): the assistant wrote X, an edit outside made it Y (told, and
    read by the model), then the file was put back to X outside (an editor's undo): no
    notice, and the model went on believing the file held Y. What the tools wrote last
    was taken for no change long after the file had held something else."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write b.md: X")
    client.expect("wrote b.md")
    client.send("/save")  # answered once the watch on the new file is in place
    client.expect("saved as checkpoint 2.", stderr=True)
    (env.workspace / "b.md").write_text("Y\n")
    outside_notices(client, "b.md", "(save)")
    client.send("read b.md")
    client.expect("read_file: Y")
    (env.workspace / "b.md").write_text("X\n")
    model_told_of(client, "b.md")
    client.close_stdin()
    assert client.wait() == 0


def test_an_outside_write_of_what_the_assistant_wrote_before_a_restore_is_told(
    env: Env,
) -> None:
    """A helper's attack (H79): after a restore put b.md back to V1, the file made X outside
    (what the assistant's last write, undone by the restore, held) gave no notice."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write b.md: V1")
    client.expect("wrote b.md")
    client.send("write b.md: X")  # checkpoint 2 (auto) holds V1
    client.expect("wrote b.md")
    client.send("/checkpoint 2")
    client.send("y")
    client.expect("Files restored: b.md.", stderr=True)
    assert (env.workspace / "b.md").read_text() == "V1\n"
    client.send("after the restore")
    client.expect('You said: "after the restore"')
    (env.workspace / "b.md").write_text("X\n")
    model_told_of(client, "b.md")
    client.close_stdin()
    assert client.wait() == 0


def test_a_file_inside_git_the_model_read_is_named_and_never_restored(env: Env) -> None:
    """A helper's attack (H79): the model had read .git/config (or HEAD, a ref) once; a
    restore answered y wrote the old content back into the repository, which the
    assistant never writes into, and which checkpoints never touch."""
    git = env.workspace / ".git"
    git.mkdir()
    (git / "config").write_text("[core]\n\tbare = false\n")
    result = env.run(input="read .git/config\n/save\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    (session_id,) = env.session_ids()
    (git / "config").write_text('[core]\n\tbare = false\n[user]\n\tname = "set since"\n')
    result = env.run("--resume", session_id, input="/checkpoint 1\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    assert ".git/config: modified; git's own file, left alone" in result.stderr
    assert "Restore files too?" not in result.stderr
    assert "Restored the conversation to checkpoint 1" in result.stderr
    assert "set since" in (git / "config").read_text()


def test_a_change_after_the_supervisor_went_away_is_shown_though_the_file_was_before(
    env: Env,
) -> None:
    """A helper's attack (H79): a file whose change was shown before the supervisor was
    killed had the new supervisor's next notice of it hidden, taken for the re-attach's
    word of the old change; with nothing to tell at the re-attach (the model had been
    told), the notice hidden was that of a new change."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("write b.md: X")
    client.expect("wrote b.md")
    client.send("/save")
    client.expect("saved as checkpoint 2.", stderr=True)
    (env.workspace / "b.md").write_text("Y\n")
    outside_notices(client, "b.md", "(save)")
    client.send("go on")
    client.expect("[changed outside: b.md]")  # told: the file's digest is the model's now
    first = env.supervisor_pid()
    heir = wait_for(env.heir_pid, what="the heir")
    assert first is not None and heir != first
    os.kill(first, signal.SIGKILL)
    wait_for(lambda: not running(first), what="the supervisor to die")
    wait_for(lambda: env.supervisor_pid() == heir, what="the heir to take over")
    client.send("/checkpoint")  # the re-attach: nothing to tell of b.md, the model knows it
    client.expect("the supervisor went away", stderr=True)
    client.expect("(save)", stderr=True)
    notice = "note: b.md changed outside agent-assist"
    shown = client.drain_stderr().count(notice)
    (env.workspace / "b.md").write_text("Z\n")

    def shown_again() -> bool:  # piped, a notice comes out with the next command's answer
        client.send("/checkpoint")
        client.expect("(save)", stderr=True)
        return client.drain_stderr().count(notice) > shown

    wait_for(shown_again, what="the notice of the change made after the re-attach")
    client.close_stdin()
    assert client.wait() == 0


def test_a_restore_over_a_file_made_again_untracked_can_be_undone(env: Env) -> None:
    """A helper's attack: a file of checkpoint N deleted (so no longer tracked when the
    session was resumed), then made again by hand, was overwritten by ``/checkpoint N``
    with ``y`` while the checkpoint that undoes the restore did not keep it: the
    user's new content was gone for good."""
    notes = env.workspace / "notes.md"
    notes.write_text("old notes\n")
    term = env.terminal()
    assert env.run("--new", input="read notes.md\n/save\n", terminal=term).returncode == 0
    notes.unlink()
    assert env.run("--yes", input="hello\n", terminal=term).returncode == 0
    notes.write_text("precious new notes\n")

    restore = env.run("--yes", input="/checkpoint 1\ny\n", terminal=term)
    assert "Files restored: notes.md." in restore.stderr
    assert notes.read_text() == "old notes\n"
    (undo,) = re.findall(r"/checkpoint (\d+) undoes this", restore.stderr)

    undone = env.run("--yes", input=f"/checkpoint {undo}\ny\n", terminal=term)
    assert undone.returncode == 0, undone.stderr
    assert notes.read_text() == "precious new notes\n"


def test_a_restore_of_many_files_is_told_in_a_few_lines(env: Env) -> None:
    """A helper's attack: restoring 2,000 templates asked with 2,000 lines and then named
    every file restored in one line of 36,000 characters."""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(25):
        (templates / f"t{n:02}.md").write_text(f"v1 {n}\n")
    term = env.terminal()
    assert env.run("--new", input="/save\n", terminal=term).returncode == 0
    for n in range(25):
        (templates / f"t{n:02}.md").write_text(f"v2 {n}\n")

    result = env.run("--yes", input="/checkpoint 1\ny\n", terminal=term)
    assert result.returncode == 0, result.stderr
    assert "  and 5 more files: 5 modified\n" in result.stderr
    assert "templates/t20.md" not in result.stderr
    (restored,) = [line for line in result.stderr.splitlines() if line.startswith("Files restored")]
    assert restored.endswith("templates/t19.md and 5 more.")
    assert all((templates / f"t{n:02}.md").read_text() == f"v1 {n}\n" for n in range(25))


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_prune_removes_contents_a_checkpoint_cut_short_left_though_no_session_goes(
    env: Env, supervisor: str
) -> None:
    """A helper's attack: a supervisor killed while a checkpoint wrote 60 large files left
    80 MB of contents and a temp file that no entry refers to; `sessions prune` removed
    nothing, since it collects only in projects where it removed a session."""
    session_id = two_versions(env)
    referenced = blobs(env)
    stored = env.project.parent / "blobs"
    data = b"a content whose checkpoint entry was never written\n"
    (stored / hashlib.sha256(data).hexdigest()).write_bytes(data)
    (stored / f".{'0' * 64}.1a2b3c4d.tmp").write_bytes(data[:10])
    if supervisor == "stopped":
        env.run("supervisor", "stop")

    result = env.run("sessions", "prune")
    assert result.returncode == 0, result.stderr
    assert "Removed 0 orphaned sessions" in result.stdout
    assert blobs(env) == referenced
    assert entries(env, session_id) == ["0001.json", "0002.json", "0003.json"]


def test_an_automatic_checkpoint_over_the_cap_says_the_write_goes_ahead_without_undo(
    env: Env,
) -> None:
    """A helper's attack: over the cap, the checkpoint before the assistant's write was
    told exactly as a /save's (``checkpoint not written: ...``), so nothing said that
    it was the automatic one, nor that the write it guards went ahead with no way back."""
    (env.workspace / SPEC).write_bytes(b"x" * 150_000)
    result = env.run(
        input=f"read {SPEC}\nwrite {SPEC}: # small\n",
        terminal=env.terminal(),
        AGENT_ASSIST_CHECKPOINT_MAX_MB="0.1",
    )
    assert (env.workspace / SPEC).read_text() == "# small\n"  # the write still happens
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert "over the 0.1 MB cap" in line
    assert line.endswith(
        "; the assistant's write goes ahead without the automatic checkpoint before it: "
        "no /checkpoint can undo it"
    )


def test_a_restore_at_the_cap_is_done_and_its_undo_written_past_the_cap(env: Env) -> None:
    """H103 (H90): at the cap no restore was possible (its undo checkpoint did not fit, and
    freeing room with /reset would delete the checkpoint to restore); the line said to
    raise the cap and start again. The undo of a restore is written past the cap."""
    spec = env.workspace / SPEC
    spec.write_bytes(b"x" * 60_000)
    term = env.terminal()
    saved = env.run(input=f"read {SPEC}\n/save\n", terminal=term)
    assert "saved as checkpoint 1." in saved.stderr
    spec.write_bytes(b"y" * 60_000)
    result = env.run(
        "--yes",
        input="/checkpoint 1\ny\n/checkpoint 2\ny\n",
        terminal=term,
        AGENT_ASSIST_CHECKPOINT_MAX_MB="0.1",
    )
    assert result.returncode == 0, result.stderr
    assert "Restored the conversation to checkpoint 1 (1 turn); /checkpoint 2 undoes this." in (
        result.stderr
    )
    assert "Restored the conversation to checkpoint 2 (1 turn); /checkpoint 3 undoes this." in (
        result.stderr
    )
    assert spec.read_bytes() == b"y" * 60_000  # the restore undone


def test_undoing_a_restore_deletes_the_files_it_made_and_that_can_be_undone(env: Env) -> None:
    """H103 (H90): a restore made again a file deleted since the checkpoint; restoring the
    checkpoint that undoes it left the file there ("not in checkpoint 3, left alone")."""
    term = env.terminal()
    env.run(input="write notes.md: n1\n/save\n", terminal=term)
    (env.workspace / "notes.md").unlink()
    (session_id,) = env.session_ids()
    result = env.run(
        "--resume",
        session_id,
        input="/checkpoint 2\ny\n/checkpoint 3\ny\n",
        terminal=term,
    )
    assert result.returncode == 0, result.stderr
    assert "  notes.md: not in checkpoint 3, absent before the restore it undoes; deleted" in (
        result.stderr
    )
    assert "Files deleted (absent before the restore checkpoint 3 undoes): notes.md." in (
        result.stderr
    )
    assert not (env.workspace / "notes.md").exists()
    again = env.run("--resume", session_id, input="/checkpoint 4\ny\n", terminal=term)
    assert "Files restored: notes.md." in again.stderr, again.stderr
    assert (env.workspace / "notes.md").read_text() == "n1\n"


def test_a_file_an_undo_deleted_is_no_longer_tracked(env: Env) -> None:
    """H108's find: after the undo of a restore deleted a file the restore had made, the
    session kept it in its manifest at the content the restore wrote, so the next start
    told "notes.md: deleted" (and a supervisor that took over, "changed outside") of a
    file agent-assist itself had deleted."""
    term = env.terminal()
    env.run(input="write notes.md: n1\n/save\n", terminal=term)
    (env.workspace / "notes.md").unlink()
    (session_id,) = env.session_ids()
    result = env.run(
        "--resume", session_id, input="/checkpoint 2\ny\n/checkpoint 3\ny\n", terminal=term
    )
    assert result.returncode == 0, result.stderr
    assert not (env.workspace / "notes.md").exists()
    assert "notes.md" not in env.session(session_id)["file_manifest"]
    offer = env.run(input="n\n", terminal=term)
    assert "Resume previous session?" in offer.stderr
    assert "notes.md: deleted" not in offer.stderr


def start_supervisor_without_root_file_access(env: Env) -> None:
    """Start ``env``'s supervisor as an ordinary user's would run: as root, without the
    capabilities that let root read and write any file (mode bits count then)."""
    command = [AGENT_ASSIST, "supervisor", "start"]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("as root, setpriv is needed to run without CAP_DAC_OVERRIDE")
        caps = "-dac_override,-dac_read_search"
        command = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", *command]
    started = subprocess.run(command, env=env.environ(), capture_output=True, text=True)
    assert started.returncode == 0, started.stderr


def test_a_file_that_cannot_be_read_is_never_written_over_by_a_restore(env: Env) -> None:
    """A helper's attack: a tracked file made unreadable (mode 000) read as deleted, so
    /checkpoint N with y wrote N's content over it while the checkpoint that undoes the
    restore, which could not read it either, did not keep it: its content was lost."""
    start_supervisor_without_root_file_access(env)
    plans = env.workspace / "plans.md"
    plans.write_text("plans v1\n")
    term = env.terminal()
    assert env.run("--new", input="read plans.md\n/save\n", terminal=term).returncode == 0
    plans.write_text("my newest plans, the only copy\n")
    plans.chmod(0)

    result = env.run("--yes", input="/checkpoint 1\ny\n", terminal=term)
    assert "  plans.md: deleted; a file agent-assist cannot read is there now, left alone" in (
        result.stderr
    )
    plans.chmod(0o600)
    assert plans.read_text() == "my newest plans, the only copy\n"


def test_the_assistant_never_writes_over_a_file_its_checkpoint_cannot_read(env: Env) -> None:
    """A helper's attack: the automatic checkpoint before a write skipped a file it could
    not read (mode 000), and the write went ahead: what the file held could not be
    taken back. The write is refused, as when the checkpoint fails on the disk."""
    start_supervisor_without_root_file_access(env)
    locked = env.workspace / "locked.md"
    locked.write_text("the only copy\n")
    locked.chmod(0)

    result = env.run("--new", input="write locked.md: replaced\n", terminal=env.terminal())
    assert "locked.md was not written: the checkpoint that would let this write be undone" in (
        result.stdout
    )
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line == "error: checkpoint not written: cannot read locked.md (Permission denied)"
    locked.chmod(0o600)
    assert locked.read_text() == "the only copy\n"


def test_a_restore_whose_undo_cannot_be_written_is_refused_before_it_asks(env: Env) -> None:
    """H105: a checkpoint directory agent-assist cannot write was found only after ``y``
    (the dry run of the undo checkpoint wrote nothing, so it could not see it)."""
    start_supervisor_without_root_file_access(env)
    plans = env.workspace / "plans.md"
    plans.write_text("plans v1\n")
    term = env.terminal()
    assert env.run("--new", input="read plans.md\n/save\n", terminal=term).returncode == 0
    plans.write_text("plans v2\n")
    (session_id,) = env.session_ids()
    directory = checkpoints_dir(env, session_id)
    directory.chmod(0o500)
    try:
        result = env.run("--yes", input="/checkpoint 1\ny\n", terminal=term)
    finally:
        directory.chmod(0o700)
    assert "Restore files too?" not in result.stderr
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert line.startswith(
        "error: checkpoint 1 not restored; nothing changed: the checkpoint that would undo "
        "the restore cannot be written ("
    )
    assert "Permission denied" in line
    assert plans.read_text() == "plans v2\n"
    assert entries(env, session_id) == ["0001.json"]


def restore_cut_short(env: Env) -> tuple[Terminal, Path]:
    """A restore of checkpoint 1 (400 templates, written at /save) cut by ``kill -9`` of the
    supervisor, its heir and the terminal among its writes; the terminal's identity, and
    the templates' directory."""
    templates = env.workspace / "templates"
    templates.mkdir()
    for n in range(400):
        (templates / f"t{n:03}.md").write_bytes(b"first %d\n" % n * 2000)
    term = env.terminal()
    client = env.spawn(terminal=term)
    client.send("/save")
    client.expect("saved as checkpoint 1.", stderr=True)
    client.send("hello")
    client.expect("You said", timeout=30)
    for n in range(400):
        (templates / f"t{n:03}.md").write_bytes(b"second %d\n" % n * 2000)
    client.send("/checkpoint 1")
    client.expect("Restore files too?", stderr=True)
    client.send("y")
    first_back = lambda: any(  # noqa: E731
        p.read_bytes().startswith(b"first") for p in templates.iterdir() if p.suffix == ".md"
    )
    wait_for(first_back, what="a file written back")
    env.kill_supervisor_and_heir()
    client.kill9()
    return term, templates


def test_a_restore_cut_short_by_kill_9_leaves_the_conversation_it_asked_for(env: Env) -> None:
    """H105: a supervisor killed among a restore's writes left the session file with the
    conversation before the restore and ``checkpoint_count`` 1: the files written back were
    told as "changed outside agent-assist", and nothing named checkpoint 2, their undo. The
    session is saved as the restore leaves it before any file is written."""
    restore_cut_short(env)

    (session_id,) = env.session_ids()
    session = env.session(session_id)
    entry = json.loads((checkpoints_dir(env, session_id) / "0001.json").read_bytes())
    assert session["checkpoint_count"] == 2  # its undo, written before the files
    assert session["recent_messages"] == entry["state"]["recent_messages"]


def test_a_file_edited_while_the_restore_question_waits_is_not_written_over(env: Env) -> None:
    """H165: ``Restore files too?`` named what the files held when it was asked; a file
    edited while it waited (by hand, by an editor) was written over on `y`, that edit kept
    only by the undo checkpoint and never named (``/reset`` keeps such a file, H157)."""
    session_id = two_versions(env)
    client = env.spawn("--resume", session_id, terminal=env.terminal())
    client.send("/checkpoint 2")
    client.expect("Restore files too? [y/N]", stderr=True)
    (env.workspace / SPEC).write_text("# edited while asked\n")
    client.send("y")
    client.expect("agent_spec.md changed after the question; not restored.", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    assert (env.workspace / SPEC).read_text() == "# edited while asked\n"
    assert "Files restored" not in "\n".join(client.stderr_lines)


def test_only_the_files_edited_while_the_restore_question_waits_are_kept(env: Env) -> None:
    """The others are written back as asked (checkpoint 3 is the /save of v1 and one)."""
    result = env.run(
        input=f"write {SPEC}: # v1\nwrite notes.md: one\n/save\n"
        f"write {SPEC}: # v2\nwrite notes.md: two\n/save\n",
        terminal=env.terminal(),
    )
    assert result.returncode == 0, result.stderr
    assert "saved as checkpoint 3." in result.stderr
    (session_id,) = env.session_ids()
    client = env.spawn("--resume", session_id, terminal=env.terminal())
    client.send("/checkpoint 3")
    client.expect("Restore files too? [y/N]", stderr=True)
    (env.workspace / "notes.md").write_text("mine\n")
    client.send("y")
    client.expect("notes.md changed after the question; not restored.", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    assert "Files restored: agent_spec.md." in client.stderr_lines
    assert (env.workspace / SPEC).read_text() == "# v1\n"
    assert (env.workspace / "notes.md").read_text() == "mine\n"


def test_a_file_to_delete_edited_while_the_restore_question_waits_is_not_deleted(
    env: Env,
) -> None:
    """Undoing a restore deletes the files it made (H103); one edited while the question
    waited is the user's work now: kept, and named."""
    term = env.terminal()
    env.run(input="write notes.md: n1\n/save\n", terminal=term)
    (env.workspace / "notes.md").unlink()
    (session_id,) = env.session_ids()
    result = env.run("--resume", session_id, input="/checkpoint 2\ny\n", terminal=term)
    assert "Files restored: notes.md." in result.stderr
    client = env.spawn("--resume", session_id, terminal=term)
    client.send("/checkpoint 3")
    client.expect("Restore files too? [y/N]", stderr=True)
    (env.workspace / "notes.md").write_text("mine\n")
    client.send("y")
    client.expect("notes.md changed after the question; not deleted.", stderr=True)
    client.close_stdin()
    assert client.wait() == 0
    assert (env.workspace / "notes.md").read_text() == "mine\n"
