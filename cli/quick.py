"""``agent-assist sessions`` from a running supervisor with ``os``, ``socket`` and ``json`` only.

Scripts and status bars poll the listing; the bare round trip over the
socket costs about 25 ms, and importing ``pathlib`` and the full client
(``supervisor.client``, ``supervisor.runtime``) added a third to it. This asks
the supervisor directly; whenever anything is not plain (no supervisor, an
error reply, a lost connection) it returns None and the full path
(``cli.sessions``) answers, with its own messages and the read-only listing
of the files.
"""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Mapping

TIMEOUT_S = 10.0
"""As ``supervisor.client.CONTROL_TIMEOUT_S``: then the full path says it in one line."""
MAX_TIMEOUT_S = 1e9
"""``supervisor.runtime.MAX_TUNING_VALUE`` (a test keeps them equal)."""


def control_timeout(environ: Mapping[str, str]) -> float | None:
    """``AGENT_ASSIST_CONTROL_TIMEOUT_S`` as ``supervisor.client.control_timeout`` reads
    it; None for a value it refuses (the full path then says so, in one line)."""
    raw = environ.get("AGENT_ASSIST_CONTROL_TIMEOUT_S", "").strip()
    if not raw:
        return TIMEOUT_S
    try:
        value = float(raw) if len(raw) <= 32 else -1.0
    except ValueError:
        return None
    return value if 0 < value < MAX_TIMEOUT_S else None
PROTOCOL_VERSION = 1
MAX_SERVER_FRAME_BYTES = 64 * 1024 * 1024
"""``supervisor.wire``'s (a test keeps them equal): importing it would import ``typing``."""


def runtime_dir(environ: Mapping[str, str]) -> str:
    """``supervisor.runtime.default_runtime_dir`` as a string (a test keeps them equal)."""
    explicit = environ.get("AGENT_ASSIST_RUNTIME_DIR")
    if explicit:
        return os.path.abspath(explicit)
    xdg = environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg):
        return os.path.join(xdg, "agent-assist")
    import tempfile

    return os.path.join(tempfile.gettempdir(), f"agent-assist-{os.getuid()}")


def state_root(environ: Mapping[str, str]) -> str | None:
    """``session.paths.state_root`` resolved, as a string (a test keeps them equal); None
    where the platform's default is not the XDG one (the full path then answers)."""
    home = environ.get("AGENT_ASSIST_HOME")
    if not home:
        import sys

        if not sys.platform.startswith("linux"):
            return None
        config = environ.get("XDG_CONFIG_HOME", "").strip()
        home = os.path.join(config or os.path.expanduser("~/.config"), "agent-assist")
    return os.path.realpath(os.path.expanduser(home))


def terminal_pid_of(environ: Mapping[str, str]) -> int | None:
    """The terminal's identity (DESIGN 5): ``AGENT_ASSIST_TERMINAL_PID``, else our parent
    (the shell of the tab); None for an override that is no pid."""
    override = environ.get("AGENT_ASSIST_TERMINAL_PID")
    if not override:
        return os.getppid()
    digits = override.isascii() and override.isdigit() and len(override) <= 10
    return int(override) if digits and 0 < int(override) < 2**31 else None


TAB_CAPABILITY = {
    "list_sessions": "list_terminal_pid",
    "remove_session": "tab_terminal_pid",
    "prune_sessions": "tab_terminal_pid",
}
"""The capability (``supervisor.identity.CAPABILITIES``) of a supervisor that takes this
tab's identity in each request that carries it."""


def with_this_tab(frame: dict[str, object]) -> dict[str, object]:
    """``frame`` with this tab's identity (``terminal_pid``), if it has one: the lines about
    its own live session or pointer say they are this tab's (not a terminal that "still
    runs")."""
    pid = terminal_pid_of(os.environ)
    return frame if pid is None else {**frame, "terminal_pid": pid}


def fit_this_tab(frame: Mapping[str, object], welcome: Mapping[str, object]) -> dict[str, object]:
    """``frame`` as the supervisor whose welcome is ``welcome`` takes it: with this tab's
    identity only if it names the request's ``TAB_CAPABILITY`` (the version before, still
    running after an upgrade, refuses the key)."""
    from supervisor.identity import knows

    if knows(welcome, TAB_CAPABILITY[str(frame["type"])]):
        return dict(frame)
    return {key: value for key, value in frame.items() if key != "terminal_pid"}


def list_request(workspace: str | None, every: bool) -> dict[str, object]:
    """The ``list_sessions`` frame, with this tab's identity."""
    return with_this_tab({"type": "list_sessions", "workspace": workspace, "all": every})


def ask_for_sessions(workspace: str | None, every: bool) -> dict[str, object] | None:
    """The supervisor's ``list_sessions`` answer (its ``data``), or None (see the module);
    TimeoutError if it takes the connection but does not answer in time."""
    hello = {
        "type": "hello",
        "protocol": PROTOCOL_VERSION,
        "role": "control",
        "client_pid": os.getpid(),
    }
    root = state_root(os.environ)
    timeout = control_timeout(os.environ)
    if root is None or timeout is None:
        return None
    hello["state_root"] = root
    request = list_request(workspace, every)
    path = os.path.join(runtime_dir(os.environ), "supervisor.sock")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
            sock.settimeout(timeout)
            sock.connect(path)
            sock.sendall(json.dumps(hello).encode() + b"\n" + json.dumps(request).encode() + b"\n")
            with sock.makefile("rb") as lines:
                welcome = json.loads(lines.readline(MAX_SERVER_FRAME_BYTES))
                reply = json.loads(lines.readline(MAX_SERVER_FRAME_BYTES))
    except TimeoutError:
        raise  # a stopped or hung supervisor: the caller lists the files without asking again
    except (OSError, ValueError):
        return None
    if welcome.get("type") != "welcome" or reply.get("type") != "result":
        return None
    data = reply.get("data")
    if not isinstance(data, dict) or not isinstance(data.get("warnings"), list):
        return None
    return data


def incomplete(answer: Mapping[str, object]) -> bool:
    """Whether a listing's (or a prune's) answer says it could not read all of the store (a
    file refused, a directory unreadable; a newer version's file is listed, with its note):
    the command then exits 1, since what it prints is not the whole store."""
    said = answer.get("incomplete")
    if isinstance(said, bool):
        return said
    return _error_lines_say_so(answer.get("listing_warnings", answer.get("warnings")))


def _error_lines_say_so(warnings: object) -> bool:
    """A supervisor of the version before says it only by its lines: an ``error:`` one but a
    newer version's file's (a path that spells those words fools it)."""
    lines = [str(line) for line in warnings] if isinstance(warnings, list) else []
    return any(
        line.startswith("error:") and "newer than this agent-assist supports" not in line
        for line in lines
    )


def prune_failed(answer: Mapping[str, object]) -> bool:
    """Whether a prune's answer says a removal failed (what stays is told), or, from a
    supervisor of the version before, its lines do."""
    said = answer.get("failed")
    if isinstance(said, bool):
        return said
    return _error_lines_say_so(answer.get("warnings"))
