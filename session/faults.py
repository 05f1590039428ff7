"""A fault-injection seam for reliability tests; inert unless ``AGENT_ASSIST_FAULT_FILE`` is set.

When the variable names a file that exists, each of its lines ``STEP ERRNO
[PATH-SUBSTRING]`` makes the atomic write raise that ``OSError`` at that step
(``open``, ``write``, ``fsync``, ``rename``, ``dirsync``; ``unlink``: a pointer's
removal; ``read``: a session or pointer file's read; ``list``: a sessions directory's
listing) for paths containing the substring; ``BUG`` in place of the errno raises a
``RuntimeError`` (a defect of the code, not of the disk), ``HANG`` blocks the step for
good (a supervisor killed in the middle of it). Tests create, change and remove the
file while the supervisor runs, so a fault can come and go. Without the variable this
costs one comparison per step.
"""

from __future__ import annotations

import errno
import os
import threading
from pathlib import Path

_FAULT_FILE = os.environ.get("AGENT_ASSIST_FAULT_FILE") or None


def inject(step: str, path: Path) -> None:
    """Raise the OSError the fault file asks for at ``step`` of writing ``path``, if any."""
    if _FAULT_FILE is None:
        return
    try:
        with open(_FAULT_FILE, encoding="utf-8") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return
    for line in lines:
        fields = line.split()
        if len(fields) < 2 or fields[0] not in (step, "any"):
            continue
        if len(fields) > 2 and fields[2] not in str(path):
            continue
        if fields[1] == "BUG":
            raise RuntimeError(f"injected defect at {step} of {path.name}")
        if fields[1] == "HANG":
            threading.Event().wait()
        code = getattr(errno, fields[1], None)
        if isinstance(code, int):
            raise OSError(code, os.strerror(code), str(path))
