"""The CLI edge: the project's errors as one line for stderr (no click here: see cli/entry.py)."""

from __future__ import annotations

import errno
import os
from collections.abc import Collection

CWD_GONE = (
    "the current directory no longer exists (it was deleted or moved): "
    "cd to it again, or pass --workspace DIR"
)


class CommandError(Exception):
    """A command failed in a way its message already describes."""


def shown_input(value: str, limit: int) -> str:
    """What the user typed or set, as an error line repeats it: quoted, scrubbed of
    credentials and of this environment's secret values, cut to ``limit`` characters (a key
    pasted at a question, or as a command or an argument, was printed back in clear)."""
    from session.redaction import secrets_from_environment
    from session.redaction import shown_input as scrubbed

    return scrubbed(value, limit, secrets_from_environment())


def current_directory() -> str:
    """The current directory, resolved; ``CommandError(CWD_GONE)`` if it was deleted."""
    try:
        return os.path.realpath(os.getcwd())
    except FileNotFoundError:
        raise CommandError(CWD_GONE) from None


def usable_workspace(path: str) -> str:
    """``path``, the workspace; ``CommandError`` if it is not UTF-8 (its bytes that are not
    arrive as lone surrogates, which no frame to the supervisor can carry)."""
    from session.os_paths import is_utf8, shown_path

    if not is_utf8(path):
        raise CommandError(
            f"the workspace {shown_path(path)} is not a UTF-8 path, which agent-assist "
            "cannot use: rename the directory, or pass --workspace DIR"
        )
    return path


def relative_home_note() -> str:
    """``; AGENT_ASSIST_HOME=X is relative ...`` when it is: the likely cause of a home
    that is not the running supervisor's (the same value names another directory from
    each current directory); else nothing."""
    home = os.environ.get("AGENT_ASSIST_HOME", "")
    if not home or os.path.isabs(home) or home.startswith("~"):
        return ""
    return (
        f"; AGENT_ASSIST_HOME={home[:80]} is relative to the current directory, so it names "
        "another directory here than where the supervisor was started: set it to an "
        "absolute path"
    )


def remote_error_text(exc: Exception) -> str:
    """The supervisor's error message, with the likely cause of a refused home added."""
    from supervisor.client import RemoteError
    from supervisor.wire import ErrorCode

    if isinstance(exc, RemoteError) and exc.code == ErrorCode.OTHER_STATE_ROOT:
        return f"{exc}{relative_home_note()}"
    return str(exc)


def as_error_line(text: str) -> str:
    """``error: text``, unless ``text`` already starts with its own ``error:``/``warning:``."""
    return text if text.startswith(("warning:", "error:")) else f"error: {text}"


def told_cause(text: str, told: Collection[str]) -> str | None:
    """``text`` (``error: SUBJECT: CAUSE``) as ``error: SUBJECT (see above)`` when ``told``
    holds ``error: CAUSE`` as a line of its own: the cause is said once; None otherwise."""
    at = text.find(": ", len("error: "))
    while at != -1:
        if f"error: {text[at + 2 :]}" in told:
            return f"{text[:at]} (see above)"
        at = text.find(": ", at + 2)
    return None


OUTPUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO})
"""An OS error naming no file with one of these is the output's (a full disk, /dev/full):
the commands write no file of their own without naming it."""


def error_line(exc: BaseException) -> str | None:
    """``error: ...`` (or the file problem's own ``warning:``/``error:`` line) for the
    errors users can meet; None for a bug, which should keep its traceback."""
    from supervisor.client import ConnectionLost, RemoteError, SupervisorUnavailable
    from supervisor.home import HomeHeld
    from supervisor.runtime import RuntimeDirError, TuningError
    from supervisor.wire import FrameError

    if isinstance(
        exc,
        CommandError
        | SupervisorUnavailable
        | RuntimeDirError
        | TuningError
        | HomeHeld
        | ConnectionLost
        | RemoteError
        | FrameError,
    ):
        return as_error_line(remote_error_text(exc))
    if isinstance(exc, FileNotFoundError):
        if exc.errno is None:  # raised by us, with a message of its own
            return as_error_line(str(exc.args[0] if exc.args else exc))
        if exc.filename is not None:
            return as_error_line(f"{exc.filename}: {exc.strerror}")
        try:  # the OS's, naming no file: the current directory's, most likely
            os.getcwd()
        except FileNotFoundError:
            return as_error_line(CWD_GONE)
        return as_error_line(str(exc.strerror))
    from session.errors import SessionError

    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        return as_error_line(f"{exc.filename}: {exc.strerror}")  # not "[Errno 1] ...: '...'"
    if isinstance(exc, OSError) and exc.strerror and exc.errno in OUTPUT_ERRNOS:
        return as_error_line(f"cannot write the output: {exc.strerror}")  # >/dev/full
    if isinstance(exc, OSError) and exc.strerror:
        return as_error_line(exc.strerror)  # not "[Errno 28] ..."
    if isinstance(exc, SessionError | OSError):
        return as_error_line(str(exc))
    return None
