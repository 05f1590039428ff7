"""The harness's cleanup: a test's environment leaves no process of its own running."""

from __future__ import annotations

import subprocess
import sys

from tests.e2e.harness import Env, wait_for

KEEPS_STARTING_OTHERS = """
import subprocess, sys
while True:  # as a chat does that finds its supervisor gone: starts one, detached
    subprocess.Popen(["sleep", "3600"], start_new_session=True)
    print("started one", flush=True)
"""


def test_a_process_that_keeps_starting_detached_ones_leaves_none_after_the_cleanup() -> None:
    """H185's find: the cleanup read ``/proc`` once, so a detached process started after
    that read (a supervisor, by a chat left running that had seen its supervisor killed)
    outlived it; two were found running after a suite."""
    env = Env.create()
    starter = subprocess.Popen(
        [sys.executable, "-c", KEEPS_STARTING_OTHERS],
        env=env.environ(),
        stdout=subprocess.PIPE,
        text=True,
    )
    assert starter.stdout is not None
    wait_for(lambda: len(env.processes()) > 10, what="detached processes")
    left = env.cleanup()
    starter.wait()
    assert env.processes() == {}
    assert left, "the starter and its processes were left running by the test"


def test_a_chat_left_running_is_named_by_the_cleanup() -> None:
    """A chat the test started outside ``Env.spawn`` (in a pty, by a shell of its own) and
    left running is named, for the test to fail with; the ones it spawned are not."""
    env = Env.create()
    spawned = env.spawn("--new", terminal=env.terminal())
    spawned.send("hello")
    spawned.expect("hello")
    left_running = env.spawn("--new", terminal=env.terminal())
    left_running.send("hello")
    left_running.expect("hello")
    env.clients.remove(left_running)  # as one started by other means
    left = env.cleanup()
    left_running.wait()
    assert [line.split()[0] for line in left] == [str(left_running.process.pid)]
