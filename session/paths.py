"""Where persisted state lives: the root and each workspace's project directory."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import platformdirs

from session.errors import SessionError
from session.os_paths import is_utf8, shown_path

APP_NAME = "agent-assist"


def state_root(environ: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """``$AGENT_ASSIST_HOME``, else the platform user config dir (``~/.config/agent-assist``)."""
    env = os.environ if environ is None else environ
    home = env.get("AGENT_ASSIST_HOME")
    if home:
        try:
            root = Path(home).expanduser()
        except RuntimeError as exc:  # "~user" of no such user
            raise SessionError(f"AGENT_ASSIST_HOME {home[:80]!r}: {exc}") from None
        where = "AGENT_ASSIST_HOME"
    else:
        root = Path(platformdirs.user_config_dir(APP_NAME))
        where = "the default"
    if not is_utf8(str(root)):
        raise SessionError(
            f"the state root {shown_path(str(root))} ({where}) is not a UTF-8 path, which "
            "agent-assist cannot use: set AGENT_ASSIST_HOME to a directory whose path is UTF-8"
        )
    return root


MAX_NAME_BYTES = 255 - len("_12345678")
"""The base name's part of a project directory's name, in bytes (a longer one is cut)."""


def project_name(workspace: Path) -> str:
    """``<name>_<hash8>``: the workspace's base name (its first 246 bytes) and 8 hex digits
    of its resolved path."""
    resolved = workspace.resolve()
    # fsencode is UTF-8 for every valid name, and keeps the raw bytes of a name that is not
    # UTF-8 (a surrogate-escaped str cannot be encoded as UTF-8).
    digest = hashlib.sha256(os.fsencode(resolved)).hexdigest()[:8]
    name = "".join(
        c if c.isprintable() and not "\ud800" <= c <= "\udfff" else "_"
        for c in (resolved.name or "root")
    )
    while len(os.fsencode(name)) > MAX_NAME_BYTES:  # a directory name may take 255 bytes
        name = name[:-1]
    return f"{name}_{digest}"


_PROJECT_NAME = re.compile(r"[^/\x00]{0,246}_[0-9a-f]{8}")


def is_project_name(name: str) -> bool:
    """Whether ``name`` is a project directory's name (``project_name``'s form): nothing
    that could lead out of the projects directory."""
    return _PROJECT_NAME.fullmatch(name) is not None and len(os.fsencode(name)) <= 255


def projects_dir(root: Path) -> Path:
    return root / "projects"


def sessions_dir(workspace: Path, root: Path | None = None) -> Path:
    """``<root>/projects/<name>_<hash8>/sessions/`` for ``workspace``."""
    base = state_root() if root is None else root
    return projects_dir(base) / project_name(workspace) / "sessions"
