"""Listing, offering and pruning sessions across project directories (blocking file IO).

The StorageActor calls these from worker threads; the CLI calls them directly
when no supervisor runs (then nothing is live). Either way, only a chat's start
(``find_resumable``) and a prune that is not a dry run move corrupt session files and
invalid pointers aside; a listing, ``show`` and ``prune --dry-run`` change no file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import math
import os
import re
import stat
import tempfile
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import orjson

from session.atomic import (
    CORRUPT_SUFFIX,
    UNCOMPACTED_SUFFIX,
    atomic_write,
    check_private_dir,
    ensure_private_dir,
)
from session.compacted import session_turns
from session.encoded import EncodedMessages
from session.errors import (
    CorruptSessionFile,
    FutureSchemaVersion,
    InvalidPointer,
    LeftBehind,
    MayBeHeld,
    SecretsLeft,
    SessionError,
    SessionFileError,
    SessionLive,
    SetAside,
    UnsafeSessionDirectory,
    UnsafeSessionFile,
    unread_pointers_said,
)
from session.file_cap import (
    MAX_SESSION_BYTES,
    OVER_CAP_SUFFIX,
    MovedBack,
    MovedTurn,
    is_over_cap_name,
)
from session.header_index import (
    COPIES_NAME,
    CopyRecord,
    FileIdentity,
    read_copies,
    record_copy,
    update_copies,
)
from session.kept_context import scrub_kept_context
from session.listing import SessionRow, classify, resumable
from session.manager import (
    CONTEXT_NAME,
    MAX_ENTRY_BYTES,
    POINTER_PREFIX,
    CheckpointStore,
    SessionManager,
    file_identity,
    read_regular_file,
)
from session.models import JsonDict, Pointer, SessionHeader, SessionState, utc_now
from session.paths import projects_dir
from session.processes import may_still_run, process_alive
from session.redaction import replace_known_bytes, with_secrets
from session.scrubbed_entries import INDEX_NAME, forget_secrets
from session.workspace_record import record_workspace


@dataclass(frozen=True)
class Resumable:
    offer: SessionState | None
    """The offered session without its messages (``SessionManager.load_without_messages``)."""
    warnings: tuple[str, ...]
    turns: int = 0
    """The offered session's turns (its listing's count: the messages are not loaded)."""
    last_active: datetime | None = None
    """The offered session's last-active time as its listing tells it: its ``updated_at``,
    unless that is in the future (``_not_in_the_future``: not believed)."""
    unanswered: str | None = None
    """The offered session's last user message when it got no reply."""
    taken: str | None = None
    """With nothing offered: why the project's newest session held by another terminal
    is not (``taken_line``): a tab started with ``--yes`` is told, not given a new
    session silently."""
    offer_notes: tuple[str, ...] = ()
    """Said with the offer, only to a tab that is offered it (not to ``--new`` or
    ``--resume ID``): it may be the session of a tab whose pointer could not be read."""


@dataclass(frozen=True)
class SessionListing:
    rows: tuple[SessionRow, ...]
    warnings: tuple[str, ...]
    unknown: Mapping[str, tuple[InvalidPointer, ...]] = dataclasses.field(default_factory=dict)
    """By project: the unreadable pointers of terminals that may still run, so that any
    of its sessions may be theirs (never pruned, offered with a note)."""
    incomplete: bool = False
    """Something of the store could not be read (``unread``): the rows are not all of it."""

    def to_json(self) -> dict[str, object]:
        """The ``list_sessions`` answer (whoever gives it: the front door, the server, the
        files read without a supervisor)."""
        return {
            "sessions": [r.to_json() for r in self.rows],
            "warnings": list(self.warnings),
            "incomplete": self.incomplete,
        }


@dataclass(frozen=True)
class _ProjectRows:
    rows: list[SessionRow]
    warnings: list[str]
    unknown: tuple[InvalidPointer, ...]
    """The unreadable pointers of terminals that may still run (``PointerListing.unknown``)."""
    told: frozenset[str] = frozenset()
    """The names of the session files whose problems ``warnings`` tell (moved aside, refused)."""
    incomplete: bool = False
    """A file or the directory could not be read (``unread``)."""


@dataclass(frozen=True)
class Pruned:
    """What ``prune`` removed, or would remove: orphaned sessions, and the checkpoints of
    sessions with no file at all (``leftovers``: project and session id)."""

    sessions: SessionListing
    leftovers: tuple[tuple[str, str], ...]
    gone_terminals: tuple[GonePointer, ...] = ()
    """The pointers of terminals that are gone, removed (or, dry run, that would be)."""
    kept_copies: tuple[tuple[str, str], ...] = ()
    """Copies a resume kept aside (``<id>.json.uncompacted-<time>``) whose session file is
    gone: project and file name."""
    unread: tuple[str, ...] = ()
    """The listing's lines (among the ``sessions``' warnings)."""
    incomplete: bool = False
    """The listing did not see the whole store (``SessionListing.incomplete``), so no count
    may claim it did."""
    failed: bool = False
    """A removal failed (an ``error:`` line of the prune's own says what stays)."""

    def to_json(self, dry_run: bool) -> dict[str, object]:
        return {
            "pruned": [r.to_json() for r in self.sessions.rows],
            "leftover_checkpoints": [
                {"session_id": session_id, "project": project}
                for project, session_id in self.leftovers
            ],
            "gone_terminal_pointers": [gone.to_json() for gone in self.gone_terminals],
            "leftover_copies": [
                {"file": name, "session_id": name[:12], "project": project}
                for project, name in self.kept_copies
            ],
            "dry_run": dry_run,
            "warnings": list(self.sessions.warnings),
            "listing_warnings": list(self.unread),
            "incomplete": self.incomplete,
            "failed": self.failed,
        }


@dataclass(frozen=True)
class GonePointer:
    """``active_<pid>.json`` of a terminal that is gone (its process ended, or its pid is
    another process's now): it points no living terminal to anything."""

    project: str
    pointer: Pointer

    def to_json(self) -> dict[str, object]:
        return {
            "project": self.project,
            "pid": self.pointer.pid,
            "session_id": self.pointer.session_id,
            "file": f"{POINTER_PREFIX}{self.pointer.pid}.json",
        }


NEW_SESSION_NOTE = "new: no turn saved yet"


def new_session_row(session_id: str, project: Path, since: datetime, pid: int) -> SessionRow:
    """A live session with no file yet (its first turn has not completed)."""
    return SessionRow(
        session_id=session_id,
        project=project.parent.name,
        state="live",
        terminal_pid=pid,
        created_at=since,
        updated_at=since,
        summary=None,
        messages=0,
        turns=0,
        note=NEW_SESSION_NOTE,
    )


def pointer_alive(pointer: Pointer) -> bool:
    return process_alive(pointer.pid, pointer.pid_start_time)


def terminal_gone(pointer: Pointer) -> bool:
    """Whether the terminal ``pointer`` names is surely gone, so that its pointer may be
    removed: no process runs at its pid, or the one that does started after the pointer
    was written (its pid was reused). Stricter than ``not pointer_alive``, whose start
    times agree within 0.05 s when both were read against the same boot time: each
    process reads that from the wall clock, and a clock stepped between the pointer's
    write and this check made a living tab look like another process. Such a tab is
    listed as orphaned, but its pointer is not removed. Nor is a pointer that records no
    start time: its terminal had no process when it was written (an identity set with
    ``AGENT_ASSIST_TERMINAL_PID``, a script's), and the same identity finds it again."""
    if pointer.pid_start_time is None:
        return False
    return not may_still_run(pointer.pid, pointer.updated_at.timestamp())


def unread(problem: SessionFileError) -> bool:
    """Whether a listing's ``problem`` is of a file or directory it could not read, so that
    it is not the whole store: an error, but for a newer version's file (listed, with its
    note)."""
    return problem.severity == "error" and not isinstance(problem, FutureSchemaVersion)


def problem_line(error: Exception) -> str:
    """``warning: ...`` / ``error: ...``, the one line a file problem is told in."""
    return f"{getattr(error, 'severity', 'error')}: {error}"


def no_longer_on_disk_line(directory: Path, session_id: str) -> str:
    """This tab's session, whose file is gone: moved aside as corrupt earlier (by a listing,
    another terminal's start), named, or removed by hand. Blocking (a directory read)."""
    aside = sorted(p.name for p in directory.glob(f"{session_id}.json.corrupt-*"))
    where = f": its file was moved aside as corrupt ({aside[-1]})" if aside else ""
    return f"note: this tab's session {session_id} is no longer on disk{where}"


class SessionCatalog:
    """Every project's sessions under one state root."""

    def __init__(
        self, root: Path, *, read_only: bool = False, known_secrets: tuple[str, ...] = ()
    ) -> None:
        self.root = root
        self.read_only = read_only
        self.known_secrets = known_secrets
        self._managers: dict[Path, SessionManager] = {}
        self._checkpoints: dict[Path, CheckpointStore] = {}
        self._recorded: set[Path] = set()
        """Projects whose workspace path this catalog has recorded (``note_workspace``)."""
        self._facts = CopyFacts()

    def manager(self, project: Path) -> SessionManager:
        if project not in self._managers:
            self._managers[project] = SessionManager(
                project,
                read_only=self.read_only,
                known_secrets=self.known_secrets,
                root=self.root,
            )
        return self._managers[project]

    def note_workspace(self, project: Path, workspace: Path) -> None:
        """Record ``workspace`` as the workspace of ``project`` (a ``sessions/`` directory
        with a session saved in it), once in this catalog's life
        (``session/workspace_record.py``)."""
        if project in self._recorded or self.read_only:
            return
        self._recorded.add(project)
        record_workspace(project.parent, workspace)

    def checkpoints(self, project: Path) -> CheckpointStore:
        """The checkpoints of ``project`` (a ``sessions/`` directory): beside it."""
        if project not in self._checkpoints:
            self._checkpoints[project] = CheckpointStore(
                project.parent, self.known_secrets, read_only=self.read_only
            )
        return self._checkpoints[project]

    def remove_session(
        self,
        project: Path,
        session_id: str,
        *,
        if_saved: bool = False,
        force: bool = False,
        terminal_pid: int | None = None,
    ) -> bool:
        """Delete a session's file and its checkpoints, then the contents no remaining
        checkpoint refers to. True if there was a session file; ``if_saved`` (the user's
        ``sessions rm``): without one, or with one of a newer version, nothing is deleted,
        nor (``MayBeHeld``, unless ``force``) one a running terminal may hold, its pointer
        unreadable. Raises ``LeftBehind`` once the file is gone if what it leaves could
        not all go. ``terminal_pid``: the tab that asks (``refuse_if_maybe_held``)."""
        manager = self.manager(project)
        copied = bool(self._copies(project, session_id))  # its saves failed: one kept aside
        if if_saved and not (copied or _on_disk(manager, session_id)):
            return False
        if not if_saved:  # /reset: an OSError here is a session file that stays
            stays: list[str] = []
            named: tuple[str, ...] = ()
            try:
                removed = manager.delete(session_id)
            except LeftBehind as exc:  # the file went, not all beside it
                removed = True
                stays.append(str(exc))
                named = exc.stays
            left = self._leftovers(project, session_id)
            stays += [left] if left is not None else []
            if stays:  # the file is gone: so is the session
                raise LeftBehind("\n".join(stays), named)
            return removed or copied
        manager.refuse_newer(session_id)
        if not force:
            self.refuse_if_maybe_held(project, session_id, terminal_pid)
        removed, problem = self._remove(project, session_id)  # the user's rm: what stayed
        if problem is not None:
            raise SessionError(problem)
        return removed or copied

    def refuse_if_maybe_held(
        self, project: Path, session_id: str, terminal_pid: int | None = None
    ) -> None:
        """``MayBeHeld`` if no living terminal's pointer names the session (it would be
        listed orphaned) while a terminal that may still run has a pointer that cannot be
        read: as ``prune`` keeps such sessions, ``rm`` does not take one unasked."""
        pointers = self.manager(project).list_pointers()
        if not pointers.unknown:
            return
        if any(p.session_id == session_id and pointer_alive(p) for p in pointers.pointers):
            return  # idle, its tab known: rm takes it, as any idle session
        raise MayBeHeld(session_id, pointers.unknown, terminal_pid)

    def _remove(
        self,
        project: Path,
        session_id: str,
        *,
        collect: bool = True,
        pointers: tuple[Pointer, ...] | None = None,
    ) -> tuple[bool, str | None]:
        """Delete the session's file and pointers, then its checkpoints (and, ``collect``,
        the contents no checkpoint refers to any more). Whether its file was there and is
        gone, and the line (``error: ...``) saying what an OS error (a read-only or
        immutable directory) left in place, if one did. ``pointers``: those naming the
        session, if listed already."""
        try:
            removed = self.manager(project).delete(session_id, pointers)
        except OSError as exc:
            return False, not_removed_line(session_id, exc)
        except LeftBehind as exc:  # the file went, not all beside it: said, and the rest
            left = self._leftovers(project, session_id, collect)
            return True, "\n".join(filter(None, (str(exc), left)))
        return removed, self._leftovers(project, session_id, collect)

    def _leftovers(self, project: Path, session_id: str, collect: bool = True) -> str | None:
        """Remove what a session whose file is gone leaves: its recovery copies, its
        checkpoints (and, ``collect``, the contents no checkpoint refers to any more); the
        line (``error: ...``) saying what an OS error left in place, if one did."""
        try:
            self.delete_copies(project, session_id)
        except OSError as exc:
            return copies_left_line(session_id, exc)
        try:
            self.checkpoints(project).delete_session(session_id)
        except OSError as exc:
            return checkpoints_left_line(session_id, exc)
        return self._collect(project) if collect else None

    def _collect(self, project: Path) -> str | None:
        """Remove the contents no checkpoint of ``project`` refers to; the line saying
        an OS error kept them, if one did."""
        try:
            self.checkpoints(project).collect_garbage()
        except OSError as exc:
            return f"error: {_os_reason(exc)}; stored contents no checkpoint uses stay"
        return None

    def project_dirs(self, projects: tuple[Path, ...] | None) -> list[Path]:
        return list(projects) if projects is not None else self._every_project()[0]

    def _every_project(self) -> tuple[list[Path], list[str]]:
        """Every project's sessions directory, and an error line for each place that
        should hold one but cannot be listed (the projects directory, a project or its
        ``sessions`` a file): ``--all`` skipped them silently."""
        base = projects_dir(self.root)
        try:
            entries = sorted(base.iterdir())
        except FileNotFoundError:
            return [], []  # nothing saved yet
        except OSError as exc:
            return [], [problem_line(UnsafeSessionDirectory(base, str(exc.strerror)))]
        directories: list[Path] = []
        problems: list[str] = []
        for entry in entries:
            sessions = entry / "sessions"
            if sessions.is_dir():
                directories.append(sessions)
                continue
            if entry.is_dir() and not os.path.lexists(sessions):
                continue
            bad = sessions if entry.is_dir() else entry
            if not bad.name.startswith("."):
                problems.append(problem_line(UnsafeSessionDirectory(bad, "not a directory")))
        return directories, problems

    def rows(
        self, project: Path, live: dict[str, int], set_aside: SetAside = "leave"
    ) -> tuple[list[SessionRow], list[str]]:
        """The rows of ``project``'s sessions, and the lines telling its bad files (moved
        aside only if ``set_aside`` is ``move``: a chat's start, a prune)."""
        found = self._project_rows(project, live, set_aside)
        return found.rows, found.warnings

    def _project_rows(
        self,
        project: Path,
        live: dict[str, int],
        set_aside: SetAside,
        terminal_pid: int | None = None,
    ) -> _ProjectRows:
        """``terminal_pid``: the terminal the lines are for (a chat's start), whose own
        unreadable pointer they say is its own (``InvalidPointer.line_for``)."""
        manager = self.manager(project)
        listing = manager.list_sessions(set_aside=set_aside)
        pointers = manager.list_pointers(set_aside=set_aside)
        warnings = [problem_line(p) for p in listing.problems]
        warnings += [problem.line_for(terminal_pid) for problem in pointers.problems]
        headers = {header.session_id: header for header in listing.sessions}
        kept = self._kept_only(project, headers)
        rows = classify(
            project.parent.name, (*listing.sessions, *kept), pointers.pointers, live, pointer_alive
        )
        warnings += recovered_lines(self.root, project, headers, self._facts)
        told = frozenset(problem.path.name for problem in listing.problems)
        incomplete = any(map(unread, listing.problems))
        if not self.read_only:
            for place in recovered_places(self.root, project):
                drop_stale_records(place, self._facts.records(place))
        return _ProjectRows(rows, warnings, pointers.unknown, told, incomplete)

    def _kept_only(self, project: Path, listed: Collection[str]) -> list[SessionHeader]:
        """The headers of the sessions with no file but a recovery copy (none of their saves
        worked): still on disk, so listed, from their newest copy, with a note saying where
        it is; offered and pruned as the others are (a resume goes on with the copy)."""
        manager = self.manager(project)
        newest: dict[str, SessionHeader] = {}
        for copy in recovered_copies(self.root, project):
            if copy.session_id in listed or manager.exists(copy.session_id):
                continue
            try:
                header = manager.copy_header(copy.path, copy.session_id)
            except (OSError, SessionFileError):
                continue  # the listing's warning names it (recovered_lines), or nothing does
            seen = newest.get(copy.session_id)
            if seen is None or header.updated_at > seen.updated_at:
                note = f"kept only in {copy.path} when its saves failed"
                newest[copy.session_id] = dataclasses.replace(header, note=note, kept_only=True)
        return list(newest.values())

    def list(
        self,
        projects: tuple[Path, ...] | None,
        live: dict[str, int],
        new: Mapping[str, tuple[Path, datetime, int]] | None = None,
        set_aside: SetAside = "leave",
        *,
        terminal_pid: int | None = None,
    ) -> SessionListing:
        """The sessions of ``projects`` (None: every project), and the ``new`` ones among
        them (live, with no file until their first turn: project, start, terminal pid).
        Read-only unless ``set_aside`` is ``move`` (``rows``). ``terminal_pid``: the tab
        the lines are for (``InvalidPointer.line_for``)."""
        rows: list[SessionRow] = []
        warnings: list[str] = []
        if projects is None:
            directories, warnings = self._every_project()
        else:
            directories = list(projects)
        unknown: dict[str, tuple[InvalidPointer, ...]] = {}
        incomplete = bool(warnings)  # places that should hold a project, unreadable
        for project in directories:
            found = self._project_rows(project, live, set_aside, terminal_pid)
            rows += found.rows
            warnings += found.warnings
            incomplete = incomplete or found.incomplete
            if found.unknown:
                unknown[project.parent.name] = found.unknown
        listed = {row.session_id for row in rows}
        rows += [
            new_session_row(session_id, project, since, pid)
            for session_id, (project, since, pid) in (new or {}).items()
            if session_id not in listed and (projects is None or project in projects)
        ]
        rows.sort(key=lambda r: r.updated_at, reverse=True)
        return SessionListing(tuple(rows), tuple(warnings), unknown, incomplete)

    def keep_unsaved(
        self,
        project: Path,
        state: SessionState,
        secrets: tuple[str, ...] = (),
        name: str | None = None,
    ) -> Path:
        """Write a session whose saves failed where it can be recovered from: the first of
        ``recovered_places`` that takes it, as ``name`` (a copy kept before is replaced),
        else under a new name. OSError (the last one's) if none does."""
        name = name or unsaved_name(state.session_id)
        error: OSError | None = None
        for place in recovered_places(self.root, project):
            try:
                if place.parent.name.startswith("agent-assist-recovered-"):
                    # in a shared directory: someone may have put it there
                    ensure_private_dir(place.parent)
                    check_private_dir(place.parent)
                ensure_private_dir(place)
                path = place / name
                _record(path, self.manager(project).write_copy(path, state, secrets))
                return path
            except OSError as exc:
                error = exc
        assert error is not None
        raise error

    def keep_moved_turn(
        self, project: Path, moved: MovedTurn, secrets: tuple[str, ...] = ()
    ) -> Path:
        """Write a turn the session file has no room for beside it (``MovedTurn``), durably,
        scrubbed as the file is; one already there is the same turn (its name says its
        number and content), left as it is."""
        if not is_over_cap_name(moved.name):
            raise ValueError(f"not a moved turn's name: {moved.name!r}")
        self.manager(project).check_directory()
        path = project / moved.name
        if os.path.lexists(path):
            return path
        scrub = with_secrets(self.known_secrets, secrets)
        if not moved.messages.known_secrets.issuperset(scrub):
            moved = MovedTurn(moved.name, EncodedMessages.scrub(moved.messages.json, scrub))
        atomic_write(path, moved.data())
        return path

    def moved_turns(self, project: Path, session_id: str, names: Iterable[str]) -> MovedBack:
        """The messages of the turns ``names`` moved beside session ``session_id``'s file
        (``MovedTurn``), oldest first, as a checkpoint names them (``Checkpoint.moved``); a
        turn whose file is gone or not one this version wrote is named in ``missing``."""
        turns: list[tuple[str, tuple[JsonDict, ...]]] = []
        missing: list[str] = []
        for name in names:
            raw: object = None
            if is_over_cap_name(name) and name.startswith(f"{session_id}."):
                with contextlib.suppress(OSError, UnsafeSessionFile, orjson.JSONDecodeError):
                    raw = orjson.loads(read_regular_file(project / name, MAX_SESSION_BYTES))
            if isinstance(raw, list) and raw and all(isinstance(m, dict) for m in raw):
                turns.append((name, tuple(raw)))
            else:
                missing.append(name)
        return MovedBack(tuple(turns), tuple(missing))

    def scrub_written(self, project: Path, session_id: str, secrets: tuple[str, ...]) -> int:
        """Scrub ``secrets`` (values a turn revealed) from every file the session wrote before
        they were known (its file is written again by the save before): its cached header,
        the turns moved beside its file (``MovedTurn``), the copies a resume kept aside
        (``.uncompacted-``), its recovery copies, the resume context kept for it, and its
        checkpoints (how many of those were rewritten). ``SecretsLeft`` (the line naming
        each file that keeps one, and why) if any could not be read or rewritten: every
        file is tried."""
        manager = self.manager(project)
        manager.forget_header(session_id)
        scrub = with_secrets(self.known_secrets, secrets)
        left: list[str] = []
        for path in sorted(project.glob(f"{session_id}.json{OVER_CAP_SUFFIX}*")):
            with _told_if_left(path.name, left):
                _scrub_moved_turn(path, scrub)
        for path in sorted(project.glob(f"{session_id}.json{UNCOMPACTED_SUFFIX}*")):
            with _told_if_left(path.name, left), _unparsed_scrubbed(path, scrub):
                manager.scrub_copy(path, session_id, secrets)
        for copy in recovered_copies(self.root, project):
            if copy.session_id == session_id:
                with _told_if_left(str(copy.path), left), _unparsed_scrubbed(copy.path, scrub):
                    written = manager.scrub_copy(copy.path, session_id, secrets, recovery=True)
                    if written is not None:
                        _record(copy.path, written)
        context = self.checkpoints(project).session_dir(session_id)
        with _told_if_left(str(context / CONTEXT_NAME), left):
            if not scrub_kept_context(context, scrub):
                scrub_unparsed(context / CONTEXT_NAME, scrub)
        checkpoints: dict[int, OSError] = {}
        rewritten = 0
        try:
            rewritten = self.checkpoints(project).scrub_session(session_id, secrets)
        except SecretsLeft as exc:
            checkpoints = exc.left
        for path in self._set_aside_files(project, session_id):  # after: a damaged entry
            with _told_if_left(str(path), left):  # is moved aside by that scrub
                scrub_unparsed(path, scrub)
        with _told_if_left(str(context.parent / INDEX_NAME), left):
            forget_secrets(context.parent, scrub)  # a line's words kept for an entry
        if left or checkpoints:
            raise SecretsLeft(session_id, checkpoints, left)
        return rewritten

    def _set_aside_files(self, project: Path, session_id: str) -> tuple[Path, ...]:
        """The session's files moved aside as corrupt: its file's, its checkpoints', its
        recovery copies' (``<name>.corrupt-<time>``)."""
        checkpoints = self.checkpoints(project).session_dir(session_id)
        places = [
            (project, f"{session_id}.json{CORRUPT_SUFFIX}*"),
            (checkpoints, f"*{CORRUPT_SUFFIX}*"),
            *((p, f"{session_id}-*.json{CORRUPT_SUFFIX}*") for p in recovered_places(
                self.root, project
            )),
        ]
        return tuple(path for place, pattern in places for path in sorted(place.glob(pattern)))

    def stored(self, project: Path, session_id: str) -> bool:
        """Whether ``project`` holds the session: its file, or a recovery copy of one whose
        file was never written (none of its saves worked: a full disk from its first turn)."""
        return self.manager(project).exists(session_id) or bool(self._copies(project, session_id))

    def load(
        self, project: Path, session_id: str, messages: str, set_aside: SetAside
    ) -> SessionState:
        """The session with its ``messages`` as ``LoadSession`` asks (``scrubbed``,
        ``unscrubbed``, ``none``); one with no file, from its newest recovery copy (the chat
        went on from the copy: the user had been answered those turns)."""
        manager = self.manager(project)
        load = {
            "scrubbed": manager.load,
            "unscrubbed": manager.load_for_resume,
            "none": manager.load_without_messages,
        }[messages]
        try:
            return load(session_id, set_aside=set_aside)
        except FileNotFoundError:
            copies = self._copies(project, session_id)
            if not copies or manager.exists(session_id):
                raise
            return manager.load_copy(max(copies)[1], session_id, set_aside=set_aside)

    def shown(self, project: Path, session_id: str) -> dict[str, object]:
        """What ``sessions show`` prints of the session, as JSON: its fields but its
        messages (``SessionManager.load_shown``), with ``messages`` (their count) and
        ``turns``; of one with no file, from its newest recovery copy. Changes no file."""
        manager = self.manager(project)
        try:
            state, header = manager.load_shown(session_id)
        except FileNotFoundError:
            copies = self._copies(project, session_id)
            if not copies or manager.exists(session_id):
                raise
            path = max(copies)[1]
            state = manager.load_copy(path, session_id)
            header = manager.copy_header(path, session_id)
        shown = state.model_dump(mode="json", exclude={"recent_messages"})
        return {**shown, "messages": header.messages, "turns": header.turns}

    def unanswered(self, project: Path, session_id: str) -> str | None:
        """The session's last user message if it got no reply, from its header (of one
        with no file, its newest recovery copy's, as ``load`` opens it)."""
        manager = self.manager(project)
        try:
            return manager.load_header(session_id).unanswered
        except FileNotFoundError:
            copies = self._copies(project, session_id)
            if not copies or manager.exists(session_id):
                raise
            return manager.copy_header(max(copies)[1], session_id).unanswered

    def _copies(self, project: Path, session_id: str) -> tuple[tuple[datetime, Path], ...]:
        """The session's readable recovery copies, with when each was written."""
        return tuple(
            (kept.updated_at, copy.path)
            for copy in recovered_copies(self.root, project)
            if copy.session_id == session_id and (kept := self._facts(copy.path)) is not None
        )

    def delete_copies(self, project: Path, session_id: str) -> None:
        """Remove the session's recovery copies: the session is gone (``/reset``, ``sessions
        rm``, a prune), and a copy kept would bring it back, transcript and all."""
        removed: set[Path] = set()
        for copy in recovered_copies(self.root, project):
            if copy.session_id == session_id:
                with contextlib.suppress(FileNotFoundError):
                    copy.path.unlink()
                removed.add(copy.path.parent)
        for place in removed:
            drop_stale_records(place, self._facts.records(place))

    def recovery_ahead(
        self, project: Path, state: SessionState
    ) -> tuple[Path, SessionState] | None:
        """The newest recovery copy of ``state``'s session that is ahead of it: kept after
        ``state`` was written (its saves failed since: it holds what the file lacks). A
        copy the session file was written after is not (the session went on from the
        file, or took the copy: taking it would drop what was done since)."""
        ahead = [
            (kept_at, path)
            for kept_at, path in self._copies(project, state.session_id)
            if kept_at > state.updated_at
        ]
        if not ahead:
            return None
        _, path = max(ahead)
        return path, self.manager(project).load_copy(path, state.session_id, set_aside="move")

    def gone_pointers(
        self, project: Path, attached: Collection[int]
    ) -> tuple[GonePointer, ...]:
        """The pointers of ``project`` whose terminal is gone: no process runs at its pid
        with its start time, and no terminal of that pid is ``attached``. A living
        terminal's pointer is never one of them."""
        return tuple(
            GonePointer(project.parent.name, pointer)
            for pointer in self.manager(project).list_pointers().pointers
            if pointer.pid not in attached and terminal_gone(pointer)
        )

    def remove_gone_pointers(
        self, project: Path, attached: Collection[int], but: Collection[str] = ()
    ) -> tuple[tuple[GonePointer, ...], tuple[str, ...]]:
        """Remove the pointers of ``project``'s terminals that are gone (``gone_pointers``),
        except those to the sessions ``but`` names: those removed, and a line for each one
        an OS error kept. A pointer written again meanwhile (a new terminal at that pid)
        is left."""
        manager = self.manager(project)
        removed: list[GonePointer] = []
        problems: tuple[str, ...] = ()
        for gone in self.gone_pointers(project, attached):
            if gone.pointer.session_id in but:
                continue
            try:
                if manager.delete_pointer_if_same(gone.pointer, sync=False):
                    removed.append(gone)
            except (OSError, SessionFileError) as exc:
                name = f"{POINTER_PREFIX}{gone.pointer.pid}.json"
                why = _os_reason(exc) if isinstance(exc, OSError) else str(exc)
                problems += (f"error: pointer {name} not removed ({why}); it stays",)
        if removed:  # one fsync for them all (a removal lost to a crash is made again)
            manager.sync_directory()
        return tuple(removed), problems

    def find_resumable(self, project: Path, terminal_pid: int, live: dict[str, int]) -> Resumable:
        manager = self.manager(project)
        if not self.read_only:  # a terminal opens a session here: gone tabs' pointers go
            self.remove_gone_pointers(project, {*live.values(), terminal_pid})
        # A chat starts: bad files go aside, and its own unreadable pointer is told as its own.
        found = self._project_rows(project, live, "move", terminal_pid)
        rows, warnings = found.rows, found.warnings
        try:
            own = manager.read_pointer(terminal_pid)
        except SessionFileError:
            own = None  # already reported by the listing
        own_alive = own is not None and pointer_alive(own)
        chosen = resumable(rows, own, own_alive)
        holder = live.get(own.session_id) if own is not None and own_alive else None
        if own is not None and holder is not None and holder != terminal_pid:
            warnings.append(
                f"note: this tab's session {own.session_id} is live in another terminal "
                f"(pid {holder}); it is not offered here"
            )
        mine = next((r for r in rows if own is not None and r.session_id == own.session_id), None)
        if own_alive and holder is None and mine is not None and not mine.opens:
            warnings.append(  # the line above names the file: say it is this tab's session
                f"note: this tab's session {mine.session_id} cannot be opened ({mine.note}); "
                "it stays on disk, untouched"
            )
        told = own is not None and f"{own.session_id}.json" in found.told  # moved aside now
        if own_alive and own is not None and mine is None and not told:
            if self.unread(project) is not None:  # not looked for: its error line says why
                warnings.append(
                    f"note: this tab's session {own.session_id} is not offered: its sessions "
                    "directory could not be read (the error above)"
                )
            else:
                warnings.append(no_longer_on_disk_line(manager.directory, own.session_id))
        taken = None
        if chosen is None and holder is None:  # a tab started with the others: one took it
            taken = taken_line(rows, terminal_pid)
        offer = None
        row = next((r for r in rows if r.session_id == chosen), None)
        if chosen is not None:
            try:  # from its recovery copy if it has no file (``kept_only``)
                offer = self.load(project, chosen, "none", "move")
            except (OSError, SessionError) as exc:  # changed since the listing
                warnings.append(problem_line(exc))
        notes: tuple[str, ...] = ()
        if offer is not None and (own is None or chosen != own.session_id):  # an orphan
            notes = tuple(
                f"note: the session offered may be the one terminal {held.runs} holds: its "
                f"pointer {held.path.name} could not be read"
                for held in found.unknown
                if held.runs != terminal_pid
            )
        turns = (row.turns if row else None) or 0
        return Resumable(
            offer,
            tuple(warnings),
            turns,
            row.updated_at if row else None,
            row.unanswered if row else None,
            taken,
            notes,
        )

    def prune(
        self,
        projects: tuple[Path, ...] | None,
        days: float,
        dry_run: bool,
        live: dict[str, int],
        terminal_pid: int | None = None,
    ) -> Pruned:
        """Delete orphaned sessions idle for more than ``days``; never live or idle ones, and
        never a file from a newer version (it is not ours to judge). The checkpoints of a
        session with no file left (an interrupted ``rm``, a first turn that never completed)
        go too once as old, and are named like the sessions. Every project's contents no
        checkpoint refers to go (a checkpoint cut short by a crash left its blobs).
        ``terminal_pid``: the tab that asks, whose own unreadable pointer its lines say is
        its own."""
        if math.isnan(days) or days < 0:
            raise SessionError(f"--older-than must be a number of days, not {days}")
        set_aside: SetAside = "dry_run" if dry_run else "move"
        listing = self.list(projects, live, set_aside=set_aside, terminal_pid=terminal_pid)
        try:
            cutoff = utc_now() - timedelta(days=days)
        except OverflowError:  # more days than the calendar holds: nothing is that old
            cutoff = datetime.min.replace(tzinfo=UTC)
        pruned = []
        problems: list[str] = []
        touched: set[Path] = set()
        attempted: set[str] = set()
        pointed: dict[Path, dict[str, tuple[Pointer, ...]]] = {}
        held_back: dict[str, tuple[InvalidPointer, ...]] = {}
        for row in listing.rows:
            if row.state != "orphaned" or row.updated_at >= cutoff or not row.opens:
                continue
            if row.project in listing.unknown:  # a running tab's session may be this one
                held_back[row.project] = listing.unknown[row.project]
                continue
            project = projects_dir(self.root) / row.project / "sessions"
            if (unread := self._unreadable(project, row.session_id, set_aside)) is not None:
                problems.append(unread)
                continue
            if not dry_run:
                touched.add(project)
                attempted.add(row.session_id)
                if project not in pointed:  # read once a project, not once a session
                    pointed[project] = self._pointers_by_session(project)
                removed, problem = self._remove(
                    project,
                    row.session_id,
                    collect=False,
                    pointers=pointed[project].get(row.session_id, ()),
                )
                if problem is not None:  # a read-only or immutable directory: said
                    problems.append(problem)
                if not (removed or (row.kept_only and problem is None)):  # its copies went
                    continue
            pruned.append(row)
        leftovers: tuple[tuple[str, str], ...] = ()
        gone_terminals: tuple[GonePointer, ...] = ()
        kept_copies: tuple[tuple[str, str], ...] = ()
        for project in self.project_dirs(projects):
            if not self._readable(project):  # the listing's error line names it
                continue
            for name in self._leftover_copies(project, live, cutoff):
                if not dry_run:
                    try:
                        (project / name).unlink()
                    except FileNotFoundError:
                        continue
                    except OSError as exc:
                        problems.append(f"error: {name} not removed ({_os_reason(exc)}); it stays")
                        continue
                kept_copies += ((project.parent.name, name),)
            # The pointers to the sessions it removes go with them (or their removal told
            # why not): not named again.
            with_sessions = attempted | {row.session_id for row in pruned}
            if dry_run:
                gone_terminals += tuple(
                    gone
                    for gone in self.gone_pointers(project, live.values())
                    if gone.pointer.session_id not in with_sessions
                )
            else:
                removed_pointers, pointer_problems = self.remove_gone_pointers(
                    project, live.values(), but=with_sessions
                )
                gone_terminals += removed_pointers
                problems += pointer_problems
            if not dry_run:  # contents a checkpoint cut short left, whatever else goes
                touched.add(project)
            for session_id in self._leftover_checkpoints(project, live, cutoff):
                if session_id in attempted:
                    continue  # its session's removal above took them, or told why not
                if not dry_run:
                    touched.add(project)
                    try:
                        self.checkpoints(project).delete_session(session_id)
                    except OSError as exc:
                        problems.append(checkpoints_left_line(session_id, exc))
                        continue
                leftovers += ((project.parent.name, session_id),)
        problems += filter(None, map(self._collect, sorted(touched)))
        kept = [held_line(project, held, terminal_pid) for project, held in held_back.items()]
        warnings = (*listing.warnings, *kept, *problems)
        return Pruned(
            SessionListing(tuple(pruned), warnings),
            leftovers,
            gone_terminals,
            kept_copies,
            unread=listing.warnings,
            incomplete=listing.incomplete,
            failed=any(line.startswith("error:") for line in problems),
        )

    def _readable(self, project: Path) -> bool:
        """Whether ``project`` (a ``sessions/`` directory) can be looked in (or is not there
        yet): one that cannot is left as it is by a prune, its contents too."""
        return self.unread(project) is None

    def unread(self, project: Path) -> tuple[Path, str] | None:
        """Why ``project`` (a ``sessions/`` directory) cannot be looked in: the path that
        failed (it, or a parent in the state root) and the reason; None if it can be (or
        is not there yet)."""
        try:
            self.manager(project).check_directory()
            self.manager(project).names()
        except FileNotFoundError:
            return None
        except UnsafeSessionDirectory as exc:
            return exc.path, exc.reason
        except OSError as exc:
            return project, exc.strerror or str(exc)
        return None

    def _pointers_by_session(self, project: Path) -> dict[str, tuple[Pointer, ...]]:
        """The pointers of ``project``, by the session each names."""
        found: dict[str, tuple[Pointer, ...]] = {}
        for pointer in self.manager(project).list_pointers().pointers:
            found[pointer.session_id] = (*found.get(pointer.session_id, ()), pointer)
        return found

    def _unreadable(self, project: Path, session_id: str, set_aside: SetAside) -> str | None:
        """The line saying why a session that ``prune`` would remove is kept: its file
        cannot be read whole by this version (the listing reads headers only: messages of
        a newer version, or damaged by hand, looked like any old session's). None when it
        can: its messages are validated as a resume would."""
        from pydantic import ValidationError

        from session.history import load_messages  # the message model: only for a candidate

        try:
            state = self.manager(project).load_for_resume(session_id, set_aside=set_aside)
            load_messages(state.recent_messages)
        except FileNotFoundError:
            return None  # gone since the listing: nothing to remove, nothing to tell
        except ValidationError:
            why = "holds messages this agent-assist cannot read"
        except (OSError, SessionError) as exc:
            why = f"cannot be read ({exc})"
        else:
            return None
        return f"warning: session file {session_id}.json {why}; not pruned, left untouched"

    def _leftover_copies(
        self, project: Path, live: Mapping[str, int], cutoff: datetime
    ) -> tuple[str, ...]:
        """The copies a resume kept aside (``<id>.json.uncompacted-<time>``, regular files)
        of sessions with no file at all (not even one moved aside as corrupt: the copy may
        then be all that can be read of it), not live, and left alone since ``cutoff``
        (their change time: a hard link's is when its session file was deleted)."""
        try:
            self.manager(project).check_directory()
            names = self.manager(project).names()
        except (OSError, SessionFileError):  # missing, or not a directory: told by the listing
            return ()
        return tuple(
            name
            for name in sorted(names)
            if (found := _KEPT_COPY.match(name)) is not None
            and found[1] not in live
            and not any(n == f"{found[1]}.json" or n.startswith(f"{found[1]}.json.corrupt-")
                        for n in names)
            and _regular_and_changed_before(project / name, cutoff)
        )

    def _leftover_checkpoints(
        self, project: Path, live: dict[str, int], cutoff: datetime
    ) -> tuple[str, ...]:
        """Sessions with checkpoints, no file at all (not even one moved aside), no live
        terminal, and no checkpoint written since ``cutoff``."""
        store = self.checkpoints(project)
        try:
            self.manager(project).check_directory()
            names = self.manager(project).names()
        except FileNotFoundError:
            names = []
        except (OSError, SessionFileError):  # a file or a symlink where sessions/ should be
            return ()
        return tuple(
            session_id
            for session_id in store.session_ids()
            if session_id not in live
            and not any(n.startswith(f"{session_id}.json") for n in names)
            and _changed_before(store.session_dir(session_id), cutoff)
        )


def held_line(
    project: str, unknown: Collection[InvalidPointer], terminal_pid: int | None = None
) -> str:
    """Why no orphaned session of ``project`` is pruned: the unreadable pointers of
    terminals that still run, any of whose sessions may be one of them (``terminal_pid``:
    the tab that asks, whose own is said as this tab's)."""
    said, whose = unread_pointers_said(unknown, terminal_pid)
    return (
        f"warning: no orphaned session of project {project} pruned: {said}, so any of "
        f"them may be {whose}"
    )


def _on_disk(manager: SessionManager, session_id: str) -> bool:
    """Whether the session's file is there; a directory that cannot be looked in raises
    (UnsafeSessionDirectory, OSError): "no session" would claim what was not seen."""
    manager.check_directory()
    try:
        os.lstat(manager.session_path(session_id))
    except FileNotFoundError:
        return False
    return True


def _os_reason(exc: OSError) -> str:
    """``0001.json: Operation not permitted``: the file an OS error names, and why."""
    where = f"{Path(exc.filename).name}: " if exc.filename else ""
    return f"{where}{exc.strerror or exc}"


def not_removed_line(session_id: str, exc: OSError) -> str:
    """``error: ...`` for a session a removal could not delete (its file stays)."""
    return f"error: session {session_id} not removed ({_os_reason(exc)}); it stays as it was"


def taken_line(rows: Iterable[SessionRow], terminal_pid: int) -> str | None:
    """Why the project's newest session held by another terminal is not offered to
    ``terminal_pid``: live there, or idle (that tab is opening it, or left it), if any.
    An idle one is no chat's: it is kept for the tab whose pointer names it (as a new
    tab is offered only orphans), and ``--resume`` takes it here."""
    held = [r for r in rows if r.state != "orphaned" and r.terminal_pid != terminal_pid]
    if not held:
        return None
    newest = max(held, key=lambda r: r.updated_at)
    if newest.state == "live":
        return str(SessionLive(newest.session_id, newest.terminal_pid or 0))
    return (
        f"session {newest.session_id} is idle, kept for another terminal "
        f"(pid {newest.terminal_pid}); agent-assist --resume {newest.session_id} opens it here"
    )


def reset_refused_line(session_id: str, exc: Exception) -> str:
    """``error: ...`` for a ``/reset`` that could not delete the saved session: nothing
    was reset (its history, file and pointer stay)."""
    if isinstance(exc, UnsafeSessionFile):
        reason = f"{exc.path.name}: {exc.reason}"
    elif isinstance(exc, OSError):
        reason = _os_reason(exc)
    else:
        reason = str(exc)
    return f"error: /reset did not remove session {session_id} ({reason}); nothing was reset"


def copies_left_line(session_id: str, exc: OSError) -> str:
    """``error: ...`` for recovery copies a removal could not delete (the session file is
    gone; a copy lists the session again, from what it kept)."""
    return (
        f"error: the recovery copies of session {session_id} not removed ({_os_reason(exc)}); "
        "they stay"
    )


def checkpoints_left_line(session_id: str, exc: OSError) -> str:
    """``error: ...`` for checkpoints a removal could not delete (the session file, if
    any, is gone: ``sessions prune`` removes them once it can)."""
    return (
        f"error: the checkpoints of session {session_id} not removed ({_os_reason(exc)}); "
        "they stay, and sessions prune removes them once it can"
    )


_KEPT_COPY = re.compile(
    rf"^([a-f0-9]{{12}})\.json{re.escape(UNCOMPACTED_SUFFIX)}\d{{8}}T\d{{6}}Z(-\d+)?$"
)


def _regular_and_changed_before(path: Path, cutoff: datetime) -> bool:
    try:
        info = os.lstat(path)
    except OSError:  # gone meanwhile
        return False
    return stat.S_ISREG(info.st_mode) and datetime.fromtimestamp(info.st_ctime, UTC) < cutoff


def _changed_before(directory: Path, cutoff: datetime) -> bool:
    try:
        return datetime.fromtimestamp(os.stat(directory).st_mtime, UTC) < cutoff
    except OSError:  # gone meanwhile
        return False


_RECOVERED_NAME = re.compile(r"^([a-f0-9]{12})-(\d{8}T\d{6}Z)\.json$")


def unsaved_name(session_id: str) -> str:
    """The name of a new recovery copy of ``session_id``: the id and the time."""
    return f"{session_id}-{utc_now().strftime('%Y%m%dT%H%M%SZ')}.json"


def recovered_places(root: Path, project: Path) -> list[Path]:
    """Where the copies of ``project``'s sessions whose saves failed are kept, first
    choice first: ``<project>/../recovered``, else under ``<root>/recovered`` or
    ``<tmp>/agent-assist-recovered-<uid>-<root's hash8>`` (one per home: another home's
    copies are not this one's), in a directory named for the project."""
    name = project.parent.name
    home = hashlib.sha256(os.fsencode(os.path.abspath(root))).hexdigest()[:8]
    return [
        project.parent / "recovered",
        root / "recovered" / name,
        Path(tempfile.gettempdir()) / f"agent-assist-recovered-{os.getuid()}-{home}" / name,
    ]


@dataclass(frozen=True)
class RecoveryCopy:
    """A copy of a session kept in ``recovered_places`` when its saves failed."""

    path: Path
    session_id: str
    kept_at: datetime


def recovered_copies(root: Path, project: Path) -> list[RecoveryCopy]:
    """The recovery copies in ``recovered_places``, as their names say."""
    found: list[RecoveryCopy] = []
    for place in recovered_places(root, project):
        try:
            if place.parent.name.startswith("agent-assist-recovered-"):
                check_private_dir(place.parent)  # not one someone else made
            names = sorted(os.listdir(place))
        except OSError:
            continue
        for name in names:
            if (match := _RECOVERED_NAME.match(name)) is not None:
                kept_at = datetime.strptime(match[2], "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
                found.append(RecoveryCopy(place / name, match[1], kept_at))
    return found


def recovered_lines(
    root: Path,
    project: Path,
    headers: Mapping[str, SessionHeader],
    facts: Callable[[Path], _CopyFacts | None] | None = None,
) -> list[str]:
    """A line for each copy of a session kept in ``recovered_places`` (its saves failed)
    that its session file (``headers``, the listing's) has not caught up with.

    A copy kept after the file was last written holds what is nowhere else: a warning
    says that resuming the session goes on with it (it used to say to copy it over the
    file, next to the resume's own note that it went on with it). A copy the
    file was written after, holding more turns than the file, is of turns the session
    went on without (resumed from its file by an older version, or restored to an
    earlier checkpoint): a note says the copy is left as it is, never to copy it over
    (that would drop what was done since). A file written since with as many turns, or
    the copy put back, is caught up: nothing is said."""
    lines = []
    for copy in recovered_copies(root, project):
        kept = (facts or _copy_facts)(copy.path)
        if kept is None:
            continue  # not a session file: nothing to put back
        header = headers.get(copy.session_id)
        if header is not None and header.updated_at >= kept.updated_at:
            if header.turns is None or header.turns >= kept.turns:
                continue  # caught up (a copy put back: the same time and turns)
            line = (
                f"note: session {copy.session_id} went on from its file without the turns "
                f"kept in {copy.path} when its saves failed; that copy is left as it is "
                "(do not copy it over the file: what was done since would be lost)"
            )
        else:
            line = (
                f"warning: session {copy.session_id} has turns its file lacks, kept in "
                f"{copy.path} when its saves failed; resuming the session goes on with them"
            )
        session_file = project / f"{copy.session_id}.json"
        if os.path.lexists(session_file) and _same_bytes(session_file, copy.path):
            continue  # the copy put back (cp -p too), its file not read as a session's
        lines.append(line)
    return lines


_COMPARED_BYTES = 1024 * 1024
"""How much of each file ``_same_bytes`` holds at a time."""


def _same_bytes(one: Path, other: Path) -> bool:
    """Whether two regular files hold the same bytes (False if either cannot be read),
    compared a piece at a time: two copies of 200 MB held whole took 400 MB."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        if os.lstat(one).st_size != os.lstat(other).st_size:
            return False  # most often: neither is opened
        with (
            open(os.open(one, flags), "rb") as first,
            open(os.open(other, flags), "rb") as second,
        ):
            infos = os.fstat(first.fileno()), os.fstat(second.fileno())
            if not all(stat.S_ISREG(i.st_mode) for i in infos):
                return False
            if infos[0].st_size != infos[1].st_size or infos[0].st_size > MAX_SESSION_BYTES:
                return False
            while piece := first.read(_COMPARED_BYTES):
                if piece != second.read(_COMPARED_BYTES):
                    return False
            return not second.read(1)
    except OSError:
        return False


@dataclass(frozen=True)
class _CopyFacts:
    turns: int
    updated_at: datetime


class CopyFacts:
    """``_copy_facts`` of each recovery copy, read once per version of the file: while its
    identity (inode, size, modification and change times) stays the same the facts read
    before are given, so the claim, the load and the recovery check of one resume (and
    every listing) parse a copy of many megabytes once, not each time. The files decide:
    a copy written again, replaced or touched is read again."""

    LIMIT = 256

    def __init__(self) -> None:
        self._read: dict[Path, tuple[FileIdentity, _CopyFacts | None]] = {}
        self._indexes: dict[Path, tuple[FileIdentity, dict[str, CopyRecord]]] = {}

    def records(self, place: Path) -> dict[str, CopyRecord]:
        """``place``'s copies index, read again only once it changed (each copy's lookup
        read it whole: N copies, N reads)."""
        identity = file_identity(place / COPIES_NAME)
        if identity is None:
            self._indexes.pop(place, None)
            return {}
        known = self._indexes.get(place)
        if known is None or known[0] != identity:
            if len(self._indexes) >= self.LIMIT:
                del self._indexes[next(iter(self._indexes))]
            known = self._indexes[place] = identity, read_copies(place)
        return known[1]

    def __call__(self, path: Path) -> _CopyFacts | None:
        identity = file_identity(path)
        if identity is None:
            self._read.pop(path, None)
            return None  # gone, or not a regular file: nothing to read
        known = self._read.get(path)
        if known is not None and known[0] == identity:
            return known[1]
        record = self.records(path.parent).get(path.name)
        facts = _CopyFacts(record[1], record[2]) if record and record[0] == identity else None
        facts = facts or _copy_facts(path)
        if len(self._read) >= self.LIMIT:
            del self._read[next(iter(self._read))]
        self._read[path] = (identity, facts)
        return facts


def _record(path: Path, state: SessionState) -> None:
    """Record what a listing needs of the copy just written at ``path`` (``copies.index``)."""
    identity = file_identity(path)
    if identity is not None:
        turns = session_turns(state.compacted_history_summary, list(state.recent_messages))
        record_copy(path.parent, path.name, (identity, turns, state.updated_at))


@contextlib.contextmanager
def _told_if_left(name: str, left: list[str]) -> Iterator[None]:
    """A rewrite of the file ``name`` that fails is added to ``left`` (``NAME (why)``), and
    the next file is tried."""
    try:
        yield
    except FileNotFoundError:
        pass  # gone meanwhile: it keeps nothing
    except (OSError, SessionFileError, orjson.JSONDecodeError) as exc:
        why = (exc.strerror or str(exc)) if isinstance(exc, OSError) else _reason_of(exc)
        left.append(f"{name} ({why})")


def _reason_of(exc: Exception) -> str:
    """Why a file could not be read, in a few words (a refused file's reason)."""
    reason = getattr(exc, "reason", None)
    return reason if isinstance(reason, str) else str(exc)


def scrub_unparsed(path: Path, secrets: tuple[str, ...]) -> None:
    """Rewrite ``path``, a file of the session that does not parse (moved aside as corrupt,
    or damaged where it is), with ``secrets`` replaced in its bytes wherever a written form
    of one stands (``replace_known_bytes``), if it holds any: nothing else of it changes,
    and it is kept, never deleted. A symlink is no file of ours: left."""
    try:
        data = read_regular_file(path, MAX_ENTRY_BYTES)
    except UnsafeSessionFile:
        if path.is_symlink():
            return
        raise
    clean = replace_known_bytes(data, secrets)
    if clean != data:
        atomic_write(path, clean)


@contextlib.contextmanager
def _unparsed_scrubbed(path: Path, secrets: tuple[str, ...]) -> Iterator[None]:
    """A copy found corrupt inside (``CorruptSessionFile``) is scrubbed in its bytes
    (``scrub_unparsed``) instead."""
    try:
        yield
    except CorruptSessionFile:
        scrub_unparsed(path, secrets)


def _scrub_moved_turn(path: Path, secrets: tuple[str, ...]) -> None:
    """Rewrite the moved turn at ``path`` scrubbed of ``secrets``, if it holds any (in its
    bytes, ``scrub_unparsed``, if it does not parse as one)."""
    if not is_over_cap_name(path.name):
        return
    data = read_regular_file(path, MAX_SESSION_BYTES)
    try:
        raw = orjson.loads(data)
    except orjson.JSONDecodeError:
        raw = None
    if not isinstance(raw, list) or not all(isinstance(m, dict) for m in raw):
        scrub_unparsed(path, secrets)  # not one this version wrote: its bytes
        return
    clean = EncodedMessages.scrub([m for m in raw if isinstance(m, dict)], secrets)
    if list(clean.json) != raw:
        atomic_write(path, MovedTurn(path.name, clean).data())


def drop_stale_records(place: Path, records: Mapping[str, CopyRecord]) -> None:
    """Rewrite ``place``'s copies index without the records that no longer match a file
    (the copy gone, replaced, written again by hand: a ``stat`` decides), if ``records``
    (the index as a listing read it) holds any; under its lock, as read again there."""
    if all(file_identity(place / name) == record[0] for name, record in records.items()):
        return
    update_copies(
        place,
        lambda now: {n: r for n, r in now.items() if file_identity(place / n) == r[0]},
    )


def _copy_facts(path: Path) -> _CopyFacts | None:
    """The turns a recovery copy holds and when it was written; None when it cannot be
    read (or says no time)."""
    try:
        raw = orjson.loads(read_regular_file(path, MAX_SESSION_BYTES))
    except (OSError, SessionFileError, orjson.JSONDecodeError):
        return None
    if not isinstance(raw, dict):
        return None
    messages = raw.get("recent_messages")
    summary = raw.get("compacted_history_summary")
    try:
        updated_at = datetime.fromisoformat(str(raw.get("updated_at")))
    except ValueError:
        return None
    if updated_at.tzinfo is None:
        updated_at = updated_at.replace(tzinfo=UTC)
    turns = session_turns(
        summary if isinstance(summary, str) else None,
        [m for m in messages if isinstance(m, dict)] if isinstance(messages, list) else [],
    )
    return _CopyFacts(turns, updated_at)
