"""A supervisor of another installation (another virtual environment's agent-assist, on the
same runtime directory): this one's terminals use it as it is and never stop it (two
installations would stop each other's, turn and turn about)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from supervisor.identity import PACKAGES, Identity, source_build
from tests.e2e.harness import Env

REPO = Path(__file__).resolve().parents[2]


def test_a_chat_uses_another_installations_supervisor_and_never_stops_it(env: Env) -> None:
    other = env.base / "other"
    for package in PACKAGES:
        shutil.copytree(REPO / package, other / package, ignore=shutil.ignore_patterns("*.pyc"))
    with open(other / "cli" / "upgrade.py", "a") as module:
        module.write("# another version\n")
    started = subprocess.run(
        [sys.executable, "-m", "cli", "supervisor", "start"],
        env=env.environ(PYTHONPATH=str(other)),
        cwd=env.workspace,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert started.returncode == 0, started.stderr
    serving = env.supervisor_pid()
    chat = env.run("--new", input="hi\n")
    assert chat.returncode == 0, chat.stderr
    this = Identity.of_this_process()
    theirs = f"{this.version} (build {source_build(str(other))})"
    told = [line for line in chat.stderr.splitlines() if line.startswith("note: the supervisor")]
    assert told == [
        f"note: the supervisor runs agent-assist {theirs} of another installation "
        f"({os.path.realpath(other)}), not this one's {this.version} (build {this.build}); "
        "this terminal uses it as it is (agent-assist supervisor stop, then agent-assist, "
        "switches to this one)"
    ], chat.stderr
    assert 'You said: "hi"' in chat.stdout
    assert env.supervisor_pid() == serving
