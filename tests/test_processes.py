"""Process identity: a pointer's pid counts only while the same process runs."""

from __future__ import annotations

import os
import subprocess
import sys

from session.processes import process_alive, process_start_time


def test_a_running_process_is_alive_with_its_own_start_time() -> None:
    started = process_start_time(os.getpid())
    assert started is not None
    assert process_alive(os.getpid(), started)


def test_a_reused_pid_with_another_start_time_is_not_the_old_process() -> None:
    started = process_start_time(os.getpid())
    assert started is not None
    assert not process_alive(os.getpid(), started - 3600)
    assert not process_alive(os.getpid(), started + 5)


def test_a_dead_process_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    started = process_start_time(child.pid)
    child.wait()
    assert not process_alive(child.pid, started)
    assert process_start_time(child.pid) is None


def test_a_zombie_is_not_alive() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    os.waitid(os.P_PID, child.pid, os.WEXITED | os.WNOWAIT)
    try:
        assert not process_alive(child.pid)
    finally:
        child.wait()


def test_nonsense_pids_are_not_alive() -> None:
    assert not process_alive(0)
    assert not process_alive(-1)
