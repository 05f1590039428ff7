"""Where persisted state lives: the root and each workspace's project directory."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import platformdirs

APP_NAME = "agent-assist"


def state_root(environ: os._Environ[str] | dict[str, str] | None = None) -> Path:
    """``$AGENT_ASSIST_HOME``, else the platform user config dir (``~/.config/agent-assist``)."""
    env = os.environ if environ is None else environ
    home = env.get("AGENT_ASSIST_HOME")
    if home:
        return Path(home).expanduser()
    return Path(platformdirs.user_config_dir(APP_NAME))


def project_name(workspace: Path) -> str:
    """``<name>_<hash8>``: the workspace's base name and 8 hex digits of its resolved path."""
    resolved = workspace.resolve()
    digest = hashlib.sha256(str(resolved).encode("utf-8")).hexdigest()[:8]
    name = resolved.name or "root"
    return f"{name}_{digest}"


def projects_dir(root: Path) -> Path:
    return root / "projects"


def sessions_dir(workspace: Path, root: Path | None = None) -> Path:
    """``<root>/projects/<name>_<hash8>/sessions/`` for ``workspace``."""
    base = state_root() if root is None else root
    return projects_dir(base) / project_name(workspace) / "sessions"
