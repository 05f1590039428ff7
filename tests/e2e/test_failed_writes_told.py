"""A write or a removal that failed for good is told in one line that names the file and
what stays, and a piped run ends with status 1; a save that was retried and then worked
is not a failure of the run."""

from __future__ import annotations

import re

from tests.e2e.harness import Env

SECRET = "Jq4Wn8Zt2Rk6Vy"


def test_a_secret_a_checkpoint_keeps_in_plain_text_is_told_and_fails_the_run(env: Env) -> None:
    """A value named a password after a checkpoint held it: the checkpoint's rewrite
    failed, the secret stayed on disk in plain text, and the run said only `could not
    update the session on disk` (the retried save's words) and exited 0."""
    fault_file = env.faults()
    client = env.spawn("--new", terminal=env.terminal())
    client.send(f"remember {SECRET} for later")
    client.expect("[offline model]")
    client.send("/save")
    client.expect("checkpoint 1", stderr=True)
    fault_file.write_text("rename EIO /checkpoints/\n")
    client.send(f"the password for staging is {SECRET}")
    line = client.expect("error:", stderr=True)
    client.close_stdin()
    assert client.wait() == 1
    (session_id,) = env.session_ids()
    entry = env.project.parent / "checkpoints" / session_id / "0001.json"
    assert SECRET.encode() in entry.read_bytes()  # what the line says stays
    assert re.fullmatch(
        rf"error: a secret stays in plain text in checkpoint 1 of session {session_id} "
        rf"\(.*{re.escape(entry.name)}: .*Input/output error\); /reset or "
        rf"`agent-assist sessions rm {session_id}` removes it",
        line,
    ), line
    assert SECRET not in (env.project / f"{session_id}.json").read_text()


def test_a_checkpoint_whose_scrub_fails_leaves_the_others_scrubbed(env: Env) -> None:
    """The first checkpoint whose rewrite failed ended the scrub: the later ones kept the
    secret too, and no line named them."""
    fault_file = env.faults()
    client = env.spawn("--new", terminal=env.terminal())
    for number, text in enumerate((f"remember {SECRET} for later", f"and {SECRET} again"), 1):
        client.send(text)
        client.expect("[offline model]")
        client.send("/save")
        client.expect(f"checkpoint {number}", stderr=True)
    fault_file.write_text("rename EIO /0001.json\n")
    client.send(f"the password for staging is {SECRET}")
    line = client.expect("error:", stderr=True)
    client.close_stdin()
    assert client.wait() == 1
    assert "in checkpoint 1 of session" in line, line
    (session_id,) = env.session_ids()
    entries = env.project.parent / "checkpoints" / session_id
    assert SECRET.encode() in (entries / "0001.json").read_bytes()
    assert SECRET.encode() not in (entries / "0002.json").read_bytes()


def test_a_pointer_left_at_exit_is_told_and_fails_the_run(env: Env) -> None:
    """A chat with no turn leaves no session: its pointer's removal failed, and the run
    said `could not update the session on disk` (a retried save's words: nothing retries
    it) and exited 0, the pointer left naming a session that has no file."""
    env.faults().write_text("unlink EIO active_\n")
    tab = env.terminal()
    result = env.run("--new", input="", terminal=tab)
    assert result.returncode == 1
    pointer = env.project / f"active_{tab.pid}.json"
    assert pointer.exists()
    errors = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.stderr
    assert re.fullmatch(
        rf"error: {pointer.name} not removed \(Input/output error\); it stays, naming "
        r"session [0-9a-f]{12}, which has no file",
        errors[0],
    ), errors


def test_a_tab_pointer_never_written_is_told_at_exit_and_fails_the_run(env: Env) -> None:
    """The session saved, its tab's pointer never: the line at its failure said a save
    would retry it (none did once the session was saved) and the run exited 0."""
    env.faults().write_text("write EIO active_\n")
    tab = env.terminal()
    result = env.run("--new", input="first message\n", terminal=tab)
    assert result.returncode == 1
    (session_id,) = env.session_ids()
    pointer = env.project / f"active_{tab.pid}.json"
    assert not pointer.exists()
    (last,) = [line for line in result.stderr.splitlines() if line.endswith("orphaned)")]
    assert last == (
        f"error: {pointer.name} not written (Input/output error); session {session_id} is "
        "saved, but this tab does not point to it (it is listed as orphaned)"
    )
    (row,) = env.sessions_json()
    assert row["state"] == "orphaned"


def test_a_retried_pointer_written_at_last_fails_nothing(env: Env) -> None:
    """A tab's pointer whose writes failed while the session was saved, and worked again
    before the exit: the exit writes it, and the run is fine."""
    fault_file = env.faults()
    fault_file.write_text("write EIO active_\n")
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    client.send("first message")
    client.expect("[offline model]")
    client.expect("could not update the session on disk", stderr=True)
    fault_file.unlink()
    client.close_stdin()
    assert client.wait() == 0
    assert (env.project / f"active_{tab.pid}.json").exists()


def test_reset_tells_a_pointer_it_could_not_remove_once(env: Env) -> None:
    """`/reset` whose pointer could not be removed said so twice: the delete's line (what
    stays) and `could not update the session on disk` (a save's words) for the same
    pointer."""
    fault_file = env.faults()
    tab = env.terminal()
    client = env.spawn("--new", terminal=tab)
    client.send("first message")
    client.expect("[offline model]")
    (session_id,) = env.session_ids()
    fault_file.write_text("unlink EIO active_\n")
    client.send("/reset")
    client.expect("Session reset", stderr=True)
    client.close_stdin()
    assert client.wait() == 1
    told = [line for line in client.drain_stderr() if line.startswith("error:")]
    assert told == [
        f"error: active_{tab.pid}.json not removed (Input/output error); session "
        f"{session_id} is gone, that file stays"
    ], told
