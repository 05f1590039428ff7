"""Paths that are not UTF-8 (a directory named with a Latin-1 byte, say): a frame to or from
the supervisor carries UTF-8 only, so a workspace, a state root or a runtime directory whose
path is not is refused in one line, before any supervisor is asked or started, never a
traceback, nor a supervisor that runs and cannot be stopped."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

import pytest

from tests.e2e.harness import AGENT_ASSIST, Env

UNDECODABLE = b"caf\xe9".decode("utf-8", "surrogateescape")
"""``café`` in Latin-1: what ``os.listdir`` and ``getcwd`` give for such a name."""


def one_error_line(result: subprocess.CompletedProcess[str], needle: str) -> None:
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), lines
    assert needle in lines[0] and "\\xe9" in lines[0], lines


@pytest.mark.parametrize("supervisor", ["running", "stopped"])
def test_a_workspace_whose_path_is_not_utf8_is_refused_in_one_line(
    env: Env, supervisor: str
) -> None:
    if supervisor == "running":
        assert env.run("supervisor", "start").returncode == 0
    workspace = env.base / UNDECODABLE
    workspace.mkdir()
    tab = env.terminal()
    for args in (
        ["-w", str(workspace), "--new"],
        ["-w", str(workspace), "sessions"],
        ["sessions", "show", "-w", str(workspace), "0a1b"],
        ["sessions", "prune", "-w", str(workspace)],
    ):
        one_error_line(env.run(*args, input="hello\n", terminal=tab), "the workspace")
    for args in ([], ["sessions"], ["sessions", "--json"]):  # the current directory
        result = subprocess.run(
            [AGENT_ASSIST, *args],
            input="hello\n",
            text=True,
            capture_output=True,
            cwd=workspace,
            env=env.environ(tab),
            timeout=60,
            check=False,
        )
        one_error_line(result, "the workspace")
    running = env.run("supervisor", "status")
    assert running.returncode == (0 if supervisor == "running" else 3), running.stderr


def test_a_state_root_whose_path_is_not_utf8_is_refused_and_starts_no_supervisor(
    env: Env,
) -> None:
    home = str(env.base / f"home-{UNDECODABLE}")
    for args in (["supervisor", "start"], ["--new"], ["sessions"], ["config", "show"]):
        result = env.run(*args, input="hello\n", terminal=env.terminal(), AGENT_ASSIST_HOME=home)
        one_error_line(result, "AGENT_ASSIST_HOME")
    assert env.supervisor_pid() is None


def test_a_runtime_directory_whose_path_is_not_utf8_starts_no_supervisor_it_cannot_stop(
    env: Env,
) -> None:
    runtime = env.base / f"run-{UNDECODABLE}"
    try:
        for args in (["supervisor", "start"], ["--new"], ["supervisor", "stop"]):
            result = env.run(
                *args,
                input="hello\n",
                terminal=env.terminal(),
                AGENT_ASSIST_RUNTIME_DIR=str(runtime),
            )
            one_error_line(result, "AGENT_ASSIST_RUNTIME_DIR")
        assert not (runtime / "supervisor.pid").exists()
    finally:  # before the fix a supervisor ran there that `supervisor stop` could not stop
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((runtime / "supervisor.pid").read_text()), signal.SIGKILL)
        with contextlib.suppress(OSError, ValueError):
            os.kill(int((runtime / "heir.pid").read_text()), signal.SIGKILL)


def test_a_workspace_under_a_utf8_name_still_works(env: Env) -> None:
    workspace = env.base / "café ünï"
    workspace.mkdir()
    result = env.run("-w", str(workspace), "--new", input="hello\n", terminal=env.terminal())
    assert result.returncode == 0, result.stderr
    listed = env.run("-w", str(workspace), "sessions", "--json")
    assert listed.returncode == 0 and '"café ünï_' in listed.stdout, listed.stderr
