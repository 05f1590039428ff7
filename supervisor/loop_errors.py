"""The event loop's unhandled errors, logged so that a flood of one kind cannot wipe out the
log: the first of each kind is logged whole, the rest are counted and told once a minute.

Thousands of connections opened and dropped at once made the loop report thousands of
identical tracebacks, which rotated every earlier line out of ``supervisor.log``.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from typing import Any

log = logging.getLogger("agent_assist.supervisor")
_ADDRESS_RE = re.compile(r"0x[0-9a-fA-F]+")
"""An object's address in a message ("Exception in callback <built-in method set_result
of _asyncio.Future object at 0x7f...>"): each differs, the kind is the same (anyio's raw
UNIX stream setting the result of a read a cancel had ended: 901 tracebacks for 5,000
connections dropped at once)."""
QUIET_S = 60.0


class QuietLoopErrors:
    """An asyncio exception handler: each kind (message and exception type) is logged at
    most once per ``QUIET_S``, with how many like it were left out since."""

    def __init__(self, quiet_s: float = QUIET_S) -> None:
        self._quiet_s = quiet_s
        self._last: dict[tuple[str, str], float] = {}
        self._left_out: dict[tuple[str, str], int] = {}

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        message = _ADDRESS_RE.sub("0x…", str(context.get("message", "")))
        kind = (message, type(error).__name__ if error else "")
        now = time.monotonic()
        last = self._last.get(kind)
        if last is not None and now - last < self._quiet_s:
            self._left_out[kind] = self._left_out.get(kind, 0) + 1
            return
        self._last[kind] = now
        left_out = self._left_out.pop(kind, 0)
        if left_out:
            log.error("%d more event-loop errors like the next one were not logged", left_out)
        loop.default_exception_handler(context)


def quiet_loop_errors() -> None:
    """Install ``QuietLoopErrors`` on the running loop."""
    asyncio.get_running_loop().set_exception_handler(QuietLoopErrors())
