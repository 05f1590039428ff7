"""What a supervisor is, as its welcome and status tell it: version, build, source, capabilities.

Standard library only: the terminal computes its own build to compare them.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

PACKAGES = ("actors", "cli", "session", "supervisor")
"""The project's packages, beside one another wherever it is installed."""
SOURCE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
"""Where this process's code is installed (the directory holding ``PACKAGES``)."""
DETACHED_VARIABLE = "AGENT_ASSIST_DETACHED"
"""Set by a terminal that starts the supervisor (``spawn_detached``), inherited by its heir;
unset, the supervisor was run in the foreground (``supervisor run``: systemd's, say)."""
CAPABILITIES = ("remove_force", "stop_if_idle", "list_terminal_pid", "tab_terminal_pid")
"""What this supervisor knows that the version before it did not (it said none):
``remove_session``'s ``force``; ``stop``'s ``if_idle``; ``list_sessions``' ``terminal_pid``;
``remove_session``'s and ``prune_sessions``' ``terminal_pid``.
Add a name with each such change: a client sends it only to a supervisor that says it."""


def source_build(source: str = SOURCE) -> str:
    """A fingerprint of the code at ``source``: each module's name, size and modification
    time (no content is read: about 0.3 ms). An upgrade (``pip install -U``, a ``git pull``
    of an editable install) changes it, whatever the package version says."""
    digest = hashlib.blake2b(digest_size=6)
    for package in PACKAGES:
        try:
            with os.scandir(os.path.join(source, package)) as entries:
                modules = sorted(
                    (entry.name, entry.stat()) for entry in entries if entry.name.endswith(".py")
                )
        except OSError:
            modules = []
        for name, stat in modules:
            digest.update(f"{package}/{name}:{stat.st_size}:{stat.st_mtime_ns}\n".encode())
    return digest.hexdigest()


def package_version() -> str:
    """What ``agent-assist --version`` says (importlib.metadata: about 40 ms to import in a
    terminal, a few in the supervisor)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("agent-assist")
    except PackageNotFoundError:
        return "unknown"


@dataclass(frozen=True)
class Identity:
    """A supervisor's, taken when its code was loaded (an heir's when it started, not
    when it took over)."""

    version: str
    build: str
    source: str = SOURCE
    capabilities: tuple[str, ...] = field(default=CAPABILITIES)
    detached: bool = True
    """Started by a terminal; False: run in the foreground, by the user or systemd, who
    restarts it there (a terminal that stopped it would start one outside the unit)."""

    @classmethod
    def of_this_process(cls) -> Identity:
        detached = os.environ.get(DETACHED_VARIABLE) == "1"
        return cls(package_version(), source_build(), detached=detached)

    def as_fields(self) -> dict[str, object]:
        """The keys a welcome and a status answer carry."""
        return {
            "version": self.version,
            "build": self.build,
            "source": self.source,
            "capabilities": list(self.capabilities),
            "detached": self.detached,
        }


def knows(said: Mapping[str, object], capability: str) -> bool:
    """Whether the supervisor whose welcome (or status) is ``said`` has ``capability``. A
    welcome with no version is from the version before any was told: it knows none."""
    capabilities = said.get("capabilities")
    return isinstance(capabilities, list) and capability in capabilities
