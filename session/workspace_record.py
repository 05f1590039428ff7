"""``<project>/workspace``: the path of the workspace a project directory's sessions belong
to. A project's name keeps only the workspace's base name and a hash of its path, so
once the workspace is moved, renamed or deleted nothing else says where its sessions came
from; listings and errors name it from here. A hint, never trusted for anything else:
written atomically without fsync, read as text, ignored when unreadable or not a regular
file (a named pipe opened as a file waits for a writer: the save recording it, and the
supervisor, waited for ever)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from session.atomic import atomic_write
from session.errors import SessionError
from session.manager import read_regular_file

RECORD_NAME = "workspace"
MAX_RECORD_BYTES = 64 * 1024


def record_workspace(project_dir: Path, workspace: Path) -> None:
    """Write ``workspace``'s path into ``project_dir`` unless it is there already (a project
    directory not created yet is left so: it holds no session)."""
    if not project_dir.is_dir():
        return
    path = str(workspace.resolve())
    if recorded_workspace(project_dir) == path:
        return
    with contextlib.suppress(OSError):
        atomic_write(project_dir / RECORD_NAME, (path + "\n").encode(), durable=False)


def recorded_workspace(project_dir: Path) -> str | None:
    """The workspace path recorded in ``project_dir``, if any could be read."""
    try:
        data = read_regular_file(project_dir / RECORD_NAME, MAX_RECORD_BYTES)
    except (OSError, SessionError):
        return None
    text = data.decode("utf-8", "replace").strip()
    return text if text.startswith("/") and "\n" not in text else None
