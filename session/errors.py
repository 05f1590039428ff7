"""The typed errors of the session core; each renders as one line naming the file.

    SessionError
    ├── InvalidSessionId           an id that is not 12 lowercase hex digits
    ├── IllegalTransition          a lifecycle event not allowed in the current phase
    ├── SessionLive                another terminal holds the session live
    │   └── SupersededWriter       a late write of an actor the session was opened by since
    ├── SessionDeleted             a write for a session deleted by ``/reset``
    ├── MayBeHeld                  an ``rm`` of a session a running terminal may hold
    ├── LeftBehind                 a removal that left a file behind (what stays)
    ├── SecretsLeft                files of a session whose scrub failed: a secret stays in them
    ├── SessionFileError           a problem with one file on disk (``.path``)
    │   ├── CorruptSessionFile     did not parse; moved aside to ``.moved_to`` (or left)
    │   ├── FutureSchemaVersion    newer schema than this code; left untouched
    │   ├── UnreadableMessages     messages of a shape this version does not know; listed only
    │   ├── UnsafeSessionFile      a symlink, not a regular file, or over the size cap
    │   │   └── UnreadSessionFile  its open or read failed (EIO): what it holds is unknown
    │   ├── InvalidPointer         an ``active_<pid>.json`` that is ignored
    │   ├── UnsafeSessionDirectory a sessions/project directory that is a symlink or a file
    │   └── UnreadableSessionDirectory  a sessions directory that cannot be listed
    └── CheckpointError            an unknown or malformed checkpoint number, a damaged entry
        └── CheckpointCapExceeded  a checkpoint that would pass the session's size cap

``severity`` says how the CLI prefixes the line (``warning:`` or ``error:``).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Literal

Severity = Literal["warning", "error"]

SetAside = Literal["move", "leave", "dry_run"]
"""What a reader does with a corrupt session file or an invalid pointer it finds: ``move``
it aside (a chat's start, a prune), ``leave`` it in place and say so (a listing, ``show``:
a read-only command changes no file), or leave it and say that it would be moved
(``prune --dry-run``)."""


class SessionError(Exception):
    """Base of every error raised by the session core."""

    severity: Severity = "error"


class InvalidSessionId(SessionError):
    def __init__(self, value: object) -> None:
        super().__init__(f"invalid session id {str(value)[:40]!r} (expected 12 hex digits)")
        self.value = value


class IllegalTransition(SessionError):
    def __init__(self, event: str, phase: str) -> None:
        super().__init__(f"cannot {event} while the session is {phase}")
        self.event = event
        self.phase = phase


class SessionLive(SessionError):
    def __init__(self, session_id: str, holder_pid: int) -> None:
        super().__init__(f"session {session_id} is live in another terminal (pid {holder_pid})")
        self.session_id = session_id
        self.holder_pid = holder_pid


class LiveInThisTab(SessionLive):
    """``sessions rm`` of the session live in the very tab that asks (its terminal
    identity): said as this tab's, not as "another terminal"'s."""

    def __init__(self, session_id: str, holder_pid: int) -> None:
        SessionError.__init__(
            self,
            f"session {session_id} is this tab's live session (terminal {holder_pid}): "
            "end its chat first",
        )
        self.session_id = session_id
        self.holder_pid = holder_pid


class SupersededWriter(SessionLive):
    """A late write (an exit's, a summary's) of a terminal actor the session was claimed
    by since: refused, and said as such (it named the late writer as the live holder)."""

    def __init__(self, session_id: str, writer_pid: int) -> None:
        SessionError.__init__(
            self,
            f"session {session_id} was opened again since terminal {writer_pid} wrote it; "
            "that terminal's late write is refused",
        )
        self.session_id = session_id
        self.holder_pid = writer_pid


class SessionDeleted(SessionError):
    def __init__(self, session_id: str) -> None:
        super().__init__(f"session {session_id} was deleted by /reset; not writing it again")
        self.session_id = session_id


class LeftBehind(SessionError):
    """A session removed (its file is gone) with some of what it leaves still on disk:
    the message is the ``error: ...`` line saying what stays, ``stays`` the names of the
    files it names (None: not known by name)."""

    def __init__(self, message: str, stays: tuple[str, ...] = ()) -> None:
        super().__init__(message)
        self.stays = stays


class SecretsLeft(SessionError):
    """Files of a session that still hold a value found secret after they were written:
    their rewrite failed. ``left``: the checkpoints, by number; ``files``: each other file
    (``NAME (why)``). The message is the ``error: ...`` line naming them and what stays."""

    def __init__(
        self, session_id: str, left: dict[int, OSError] | None = None, files: Sequence[str] = ()
    ) -> None:
        places = list(files)
        if left:
            numbers = sorted(left)
            first = left[numbers[0]]
            where = Path(first.filename).name if first.filename else "its entry"
            which = "checkpoint" if len(numbers) == 1 else "checkpoints"
            places.insert(
                0,
                f"{which} {', '.join(map(str, numbers))} of session {session_id} "
                f"({where}: {first.strerror or first})",
            )
        super().__init__(
            f"error: a secret stays in plain text in {'; '.join(places)}; /reset or "
            f"`agent-assist sessions rm {session_id}` removes it"
        )
        self.left = left or {}
        self.files = tuple(files)


class SessionFileError(SessionError):
    def __init__(self, path: Path, message: str) -> None:
        super().__init__(message)
        self.path = path


class CorruptSessionFile(SessionFileError):
    severity: Severity = "warning"

    def __init__(
        self, path: Path, moved_to: Path | None, reason: str, set_aside: SetAside = "move"
    ) -> None:
        if set_aside == "leave":  # a read-only command: a chat's start moves it aside
            message = (
                f"session file {path.name} is corrupt ({reason}); left in place (a chat "
                "started in its project moves it aside)"
            )
        elif set_aside == "dry_run":
            message = f"session file {path.name} is corrupt ({reason}); would be moved aside"
        elif moved_to is None:
            message = f"session file {path.name} is corrupt ({reason}); could not move it aside"
        else:
            message = f"session file {path.name} is corrupt; moved aside to {moved_to.name}"
        super().__init__(path, message)
        self.moved_to = moved_to
        self.reason = reason
        self.left = set_aside != "move"
        """Left in place on purpose (a read-only command): no failure."""
        if moved_to is None and not self.left:  # could not be dealt with: a failure
            self.severity = "error"


class FutureSchemaVersion(SessionFileError):
    def __init__(self, path: Path, found: int, supported: int) -> None:
        super().__init__(
            path,
            f"session file {path.name} has schema_version {found}, newer than this "
            f"agent-assist supports ({supported}); left untouched",
        )
        self.found = found
        self.supported = supported


class UnreadableMessages(SessionFileError):
    """A session file whose messages are of a shape this version does not know (a newer
    pydantic-ai's): listed with its note, never offered, pruned nor rewritten."""

    severity: Severity = "warning"

    def __init__(self, path: Path, why: str) -> None:
        super().__init__(
            path,
            f"session file {path.name} holds messages this agent-assist cannot read ({why}); "
            "left untouched",
        )


class UnsafeSessionFile(SessionFileError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, f"refusing session file {path.name} ({reason}); left untouched")
        self.reason = reason


class UnreadSessionFile(UnsafeSessionFile):
    """A file whose open or read failed (EIO, permission denied): refused, and what it
    holds is unknown (it may hold a secret still). ``error`` is the OSError."""

    def __init__(self, path: Path, error: OSError) -> None:
        super().__init__(path, error.strerror or str(error))
        self.error = error


class InvalidPointer(SessionFileError):
    severity: Severity = "warning"

    def __init__(
        self,
        path: Path,
        reason: str,
        moved_to: Path | None = None,
        set_aside: SetAside = "move",
        runs: int | None = None,
    ) -> None:
        head = f"ignoring invalid session pointer {path.name} ({reason})"
        aside = f"; moved aside to {moved_to.name}" if moved_to is not None else ""
        if set_aside == "dry_run":
            aside = "; would be moved aside"
        if runs is not None:
            aside = f"; terminal {runs} still runs: left in place, its session unknown"
        super().__init__(path, f"{head}{aside}")
        self.head = head
        """DESIGN's words, which every rendering of the line begins with."""
        self.reason = reason
        self.moved_to = moved_to
        self.runs = runs
        """The pid of the terminal that wrote it, which may still run (``may_still_run``):
        it may hold any session of its project."""

    def line_for(self, terminal_pid: int | None) -> str:
        """The ``warning:`` line as terminal ``terminal_pid`` is told it (None: no
        terminal's, a listing's): the pointer of that very terminal is its own, which its
        next open replaces, not another terminal's that "still runs"."""
        if self.runs is not None and self.runs == terminal_pid:
            own = "it is this tab's, replaced when this tab opens a session"
            return f"{self.severity}: {self.head}; {own}"
        return f"{self.severity}: {self}"


def unread_pointers_said(
    unknown: Collection[InvalidPointer], terminal_pid: int | None = None
) -> tuple[str, str]:
    """What is unknown of a project's sessions: ``pointer active_N.json could not be read
    and terminal N still runs`` (or of several), and whose session one may be. The
    pointer of ``terminal_pid`` (the tab that asks) alone is said as this tab's."""
    if [problem.runs for problem in unknown] == [terminal_pid] and terminal_pid is not None:
        (own,) = unknown
        return f"this tab's pointer {own.path.name} could not be read", "this tab's session"
    names = ", ".join(problem.path.name for problem in unknown)
    pids = ", ".join(str(problem.runs) for problem in unknown)
    if len(unknown) == 1:
        return f"pointer {names} could not be read and terminal {pids} still runs", "its session"
    return (
        f"pointers {names} could not be read and terminals {pids} still run",
        "one of theirs",
    )


class MayBeHeld(SessionError):
    """``sessions rm ID`` of a session no readable pointer names while a terminal that still
    runs has a pointer that cannot be read: it may be that terminal's (idle) session."""

    def __init__(
        self,
        session_id: str,
        unknown: Collection[InvalidPointer],
        terminal_pid: int | None = None,
    ) -> None:
        said, whose = unread_pointers_said(unknown, terminal_pid)
        super().__init__(
            f"session {session_id} not removed: {said}, so it may be {whose}; "
            f"agent-assist sessions rm --force {session_id} removes it anyway"
        )
        self.session_id = session_id
        self.unknown = tuple(unknown)


class UnsafeSessionDirectory(SessionFileError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, f"refusing sessions directory {path} ({reason}); left untouched")
        self.reason = reason


class UnreadableSessionDirectory(SessionFileError):
    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(path, f"cannot read sessions directory {path} ({reason}); left untouched")
        self.reason = reason


class CheckpointError(SessionError):
    """A checkpoint that cannot be used: an unknown or malformed number, a damaged entry."""


RAISE_THE_CAP = "raise the cap and start agent-assist again"
"""What lifts the size cap: a chat sends its settings when it starts, so a cap raised
in the environment or in config.toml counts from the next start of agent-assist."""


class CheckpointCapExceeded(CheckpointError):
    def __init__(self, session_id: str, would_use: int, cap: int, setting: str) -> None:
        used, capped = megabytes_apart(would_use, cap)
        self.over = (
            f"session {session_id}'s checkpoints would take {used} MB, over the {capped} MB cap"
        )
        """How far over the cap, in words."""
        self.setting = setting
        """Where the cap is set, in words."""
        super().__init__(
            f"checkpoint not written: {self.over} ({setting}); {RAISE_THE_CAP}, or start a "
            "new session"
        )
        self.would_use = would_use
        self.cap = cap



def megabytes(size: int, digits: int = 3) -> str:
    """``size`` bytes in MB to ``digits`` significant digits, never in exponent form
    (``0.0213``, ``1.2``, ``2000``: ``.3g`` alone wrote ``2e+03``)."""
    rounded = float(f"{size / 1e6:.{digits}g}")
    return f"{rounded:f}".rstrip("0").rstrip(".")


def megabytes_apart(first: int, second: int) -> tuple[str, str]:
    """Two sizes in MB with as many digits as it takes to tell them apart (500.3 MB over a
    500 MB cap was told as 500 MB over it)."""
    shown = megabytes(first), megabytes(second)
    for digits in range(4, 16):
        if shown[0] != shown[1] or first == second:
            break
        shown = megabytes(first, digits), megabytes(second, digits)
    return shown
