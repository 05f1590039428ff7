"""A supervisor of another version than this terminal's, still running after an upgrade.

Its welcome or status tells what it is (``supervisor/identity.py``). One of
another build of this installation (or of the version before, which tells
nothing) is stopped the normal way, which saves every session, when no terminal
uses it and it holds no session; the next connect starts this version. One in
use is used as it is, and the user told how to switch. One of another
installation (another virtual environment) is never stopped: it is that one's.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Mapping
from dataclasses import dataclass
from enum import Enum

from cli.supervisor_cmd import InUse, stop_on
from supervisor.client import (
    Connection,
    ConnectionLost,
    RemoteError,
    SupervisorUnavailable,
    asked_status,
    control_timeout,
)
from supervisor.identity import SOURCE, knows, package_version, source_build
from supervisor.runtime import RuntimePaths
from supervisor.wire import FrameError


class Skew(Enum):
    SAME = "same"
    OTHER_VERSION = "other version"
    """Another build of this installation, or the version before (which told no build)."""
    OTHER_INSTALLATION = "other installation"


@functools.cache
def this_build() -> str:
    return source_build()


def skew(said: Mapping[str, object]) -> Skew:
    """What the supervisor whose welcome (or status) is ``said`` is to this terminal."""
    build = said.get("build")
    if build is None:
        return Skew.OTHER_VERSION
    if said.get("source") != SOURCE:
        return Skew.OTHER_INSTALLATION if build != this_build() else Skew.SAME
    return Skew.SAME if build == this_build() else Skew.OTHER_VERSION


def labels(said: Mapping[str, object]) -> tuple[str, str]:
    """The supervisor's version and this terminal's, as told to the user: with their builds
    when the versions are the same (a ``git pull`` of an editable install)."""
    theirs, ours = str(said.get("version") or "unknown"), package_version()
    if theirs != ours:
        return theirs, ours
    build = said.get("build")
    return (
        f"{theirs} (build {build})" if build else f"{theirs} (an earlier build)",
        f"{ours} (build {this_build()})",
    )


def stoppable(said: Mapping[str, object]) -> bool:
    """Whether the supervisor whose status is ``said`` is to be stopped for this version:
    another of this installation, started by a terminal (the version before told nothing of
    it: the first chat starts it), serving no terminal and holding no session."""
    return (
        skew(said) is Skew.OTHER_VERSION
        and said.get("detached") is not False
        and not said.get("terminals")
        and not said.get("live_sessions")
    )


def restarted_line(said: Mapping[str, object]) -> str:
    old, new = labels(said)
    return f"note: restarted the supervisor (agent-assist {old} -> {new})"


def kept_line(said: Mapping[str, object], terminals: int) -> str:
    """Why the supervisor of another version is used as it is, and how to switch."""
    old, new = labels(said)
    if skew(said) is Skew.OTHER_INSTALLATION:
        return (
            f"note: the supervisor runs agent-assist {old} of another installation "
            f"({said.get('source')}), not this one's {new}; this terminal uses it as it is "
            "(agent-assist supervisor stop, then agent-assist, switches to this one)"
        )
    if said.get("detached") is False:
        return (
            f"note: the supervisor runs agent-assist {old}, not {new}, in the foreground "
            "(agent-assist supervisor run: systemd's?), so it stays: restart it there to "
            "switch (systemctl --user restart agent-assist)"
        )
    if terminals:
        users = f"{terminals} terminal{'s use' if terminals > 1 else ' uses'} it"
        until = "none does"
    else:
        users, until = "it still saves a session", "it is done"
    return (
        f"note: the supervisor runs agent-assist {old}, not {new}, and {users}, so it stays: "
        f"the first start once {until} switches; agent-assist supervisor stop switches now "
        "(it saves every session; the chats attached end)"
    )


def status_note(said: Mapping[str, object]) -> str | None:
    """``supervisor status``'s word on a running supervisor of another version."""
    kind = skew(said)
    if kind is Skew.SAME:
        return None
    new = labels(said)[1]
    if kind is Skew.OTHER_INSTALLATION:
        return f"note: it is another installation's ({said.get('source')}), not this one's {new}"
    return (
        f"note: this agent-assist is {new}: the first start once no terminal uses the "
        "supervisor switches to it (agent-assist supervisor stop switches now)"
    )


def leave_unopened(conn: Connection) -> None:
    """Leave a terminal connection before opening any session, and wait for the supervisor
    to close it: it has let this tab go by then, and its status counts the others only."""
    with contextlib.suppress(ConnectionLost, FrameError, TimeoutError, OSError):
        conn.sock.settimeout(control_timeout())
        conn.send({"type": "close"})
        while True:
            conn.receive()


@dataclass(frozen=True)
class Switch:
    restarted: bool
    """The supervisor was stopped: the next connect starts this version."""
    line: str


def switch(paths: RuntimePaths) -> Switch | None:
    """Stop the running supervisor if it is of another version of this installation and
    unused (``cli.supervisor_cmd.stop``: it saves every session), else say why it stays.
    None if it is this version after all, or gone (the next connect starts this one)."""
    try:
        asked = asked_status(paths)
    except (SupervisorUnavailable, ConnectionLost, RemoteError, FrameError, OSError):
        return None
    if asked is None:
        return None
    conn, said = asked
    with conn:
        kind = skew(said)
        if kind is Skew.SAME:
            return None
        terminals = int(said.get("terminals") or 0)
        if stoppable(said):
            try:  # on this connection: this supervisor, not one another terminal started since
                stop_on(conn, paths, said, if_idle=knows(said, "stop_if_idle"))
            except InUse as refused:  # a terminal attached meanwhile
                terminals = refused.terminals
            except ConnectionLost:  # stopped meanwhile (another terminal switched it)
                return None
            else:
                return Switch(True, restarted_line(said))
    return Switch(False, kept_line(said, terminals))
