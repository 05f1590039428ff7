"""The CLI edge: the project's errors as one line for stderr (no click here: see cli/entry.py)."""

from __future__ import annotations


class CommandError(Exception):
    """A command failed in a way its message already describes."""


def error_line(exc: BaseException) -> str | None:
    """``error: ...`` (or the file problem's own ``warning:``/``error:`` line) for the
    errors users can meet; None for a bug, which should keep its traceback."""
    from supervisor.client import ConnectionLost, RemoteError, SupervisorUnavailable
    from supervisor.runtime import RuntimeDirError

    if isinstance(
        exc, CommandError | SupervisorUnavailable | RuntimeDirError | ConnectionLost | RemoteError
    ):
        return f"error: {exc}"
    if isinstance(exc, FileNotFoundError):
        return f"error: {exc.args[0] if exc.args else exc}"
    from session.errors import SessionError

    if isinstance(exc, SessionError | OSError):
        text = str(exc)
        return text if text.startswith(("warning:", "error:")) else f"error: {text}"
    return None
