"""``agent-assist supervisor start|stop|status``: plain functions over the client."""

from __future__ import annotations

import time
from typing import Any

from session.processes import process_alive, process_start_time
from supervisor.client import (
    START_TIMEOUT_S,
    Connection,
    SupervisorUnavailable,
    asked_status,
    connect_or_start,
    not_answering,
)
from supervisor.runtime import RuntimePaths, check_tuning

STOP_TIMEOUT_S = 30.0


def status(paths: RuntimePaths) -> dict[str, Any]:
    asked = asked_status(paths)
    if asked is None:
        return {
            "running": False,
            "pid": None,
            "socket": str(paths.socket),
            "terminals": 0,
            "version": None,
        }
    conn, said = asked
    conn.close()
    return said


def version_line(status: dict[str, Any]) -> str:
    """What a running supervisor is: ``agent-assist 0.1.0 (build 5a34dafdab14)``."""
    build = status.get("build")
    return f"agent-assist {status.get('version') or 'unknown'}" + (
        f" (build {build})" if build else ""
    )


def start(paths: RuntimePaths) -> tuple[dict[str, Any], bool, tuple[str, ...], str | None]:
    """Start the supervisor unless one runs (of this version: ``cli/upgrade.py``). A bad
    tuning variable (the supervisor's own) is refused here, in one line, rather than by a
    detached process that can only write it to its log; a bad setting of the chats' is
    returned, to be said as a warning (the supervisor starts without it, and logs it too);
    last, the note of one of another version, if one runs."""
    import os

    from cli.upgrade import switch
    from session.paths import state_root
    from session.settings import supervisor_settings

    _, problems = supervisor_settings(state_root(), os.environ)
    check_tuning()
    conn, started = connect_or_start(paths, START_TIMEOUT_S)
    conn.close()
    switched = None if started else switch(paths)
    if switched is not None and switched.restarted:
        conn, started = connect_or_start(paths, START_TIMEOUT_S)
        conn.close()
    return status(paths), started, problems, None if switched is None else switched.line


class InUse(Exception):
    """A stop ``if_idle`` refused: ``terminals`` are attached, or a session still open."""

    def __init__(self, terminals: int) -> None:
        super().__init__(f"{terminals} terminals attached")
        self.terminals = terminals


def stop(paths: RuntimePaths) -> int | None:
    """Stop the supervisor (it saves every live session first); its pid, or None if none ran."""
    asked = asked_status(paths)
    if asked is None:
        return None
    conn, said = asked
    with conn:
        return stop_on(conn, paths, said)


def stop_on(
    conn: Connection, paths: RuntimePaths, said: dict[str, Any], if_idle: bool = False
) -> int:
    """Stop the supervisor whose status ``said`` was just read on the control connection
    ``conn`` (the one judged, not one started since), and wait until it has exited; its
    pid. ``if_idle`` (for a supervisor that knows it: ``stop_if_idle``): only if it serves
    no terminal and holds no session, else InUse."""
    pid = int(said["pid"])
    started = process_start_time(pid)  # while it answers: surely the supervisor's
    try:
        conn.sock.settimeout(STOP_TIMEOUT_S)  # it saves every live session first
        answer = conn.request({"type": "stop", **({"if_idle": True} if if_idle else {})})
    except TimeoutError:
        raise not_answering(paths) from None
    data = answer.get("data")
    if isinstance(data, dict) and data.get("stopping") is False:
        raise InUse(int(data.get("terminals") or 0))
    conn.close()
    wait_gone(pid, started, STOP_TIMEOUT_S)
    return pid


def wait_gone(pid: int, start_time: float | None, timeout: float) -> None:
    """Until process ``pid``, started at ``start_time``, has exited; SupervisorUnavailable
    after ``timeout`` s. A process that reused the number since is not waited for, and a
    zombie of our own child counts as exited."""
    deadline = time.monotonic() + timeout
    while process_alive(pid, start_time):
        if time.monotonic() > deadline:
            raise SupervisorUnavailable(f"the supervisor (pid {pid}) did not stop in time")
        time.sleep(0.02)
