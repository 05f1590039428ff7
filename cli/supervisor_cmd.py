"""``agent-assist supervisor start|stop|status``: plain functions over the client."""

from __future__ import annotations

import time
from typing import Any

from session.processes import process_alive
from supervisor.client import (
    START_TIMEOUT_S,
    SupervisorUnavailable,
    connect_or_start,
    hello,
    try_connect,
)
from supervisor.runtime import RuntimePaths

STOP_TIMEOUT_S = 30.0


def status(paths: RuntimePaths) -> dict[str, Any]:
    conn = try_connect(paths)
    if conn is None:
        return {"running": False, "pid": None, "socket": str(paths.socket), "terminals": 0}
    with conn:
        conn.request(hello("control"))
        data: dict[str, Any] = conn.request({"type": "status"})["data"]
        return data


def start(paths: RuntimePaths) -> tuple[dict[str, Any], bool]:
    """Start the supervisor unless one runs; a bad setting is refused here, in one line,
    rather than by a detached process that can only write it to its log."""
    import os

    from session.paths import state_root
    from session.settings import load_settings

    load_settings(state_root(), os.environ)
    conn, started = connect_or_start(paths, START_TIMEOUT_S)
    conn.close()
    return status(paths), started


def stop(paths: RuntimePaths) -> int | None:
    """Stop the supervisor (it saves every live session first); its pid, or None if none ran."""
    conn = try_connect(paths)
    if conn is None:
        return None
    with conn:
        conn.request(hello("control"))
        pid = int(conn.request({"type": "status"})["data"]["pid"])
        conn.request({"type": "stop"})
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while process_alive(pid):  # a zombie of our own child counts as exited
        if time.monotonic() > deadline:
            raise SupervisorUnavailable(f"the supervisor (pid {pid}) did not stop in time")
        time.sleep(0.02)
    return pid
