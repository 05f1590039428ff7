"""``agent-assist sessions``: through the supervisor when one runs, else straight from the files.

Without a supervisor nothing is live. Listing, ``show`` and ``prune --dry-run`` are
read-only either way: a corrupt file is reported, not moved (a chat's start moves it).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from collections.abc import Callable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from cli.printable import json_printable, printable
from cli.quick import fit_this_tab, list_request, with_this_tab
from session.compacted import compacted_turns, session_turns
from supervisor.client import (
    SupervisorBusy,
    SupervisorUnavailable,
    control_connection,
    control_hello,
    hello,
    not_answering,
)
from supervisor.identity import knows
from supervisor.runtime import RuntimeDirError, RuntimePaths, ensure_private_runtime_dir
from supervisor.wire import Frame

LOCK_ATTEMPTS = 50
LOCK_PAUSE_S = 0.02


def not_found_line(workspace: Path | None, session_id: str) -> str:
    """``no session X in this project`` (``in any project`` with no workspace), with where
    it is if another project has it, or why it cannot be opened if its file was moved
    aside as corrupt."""
    from session.models import is_session_id
    from session.paths import projects_dir, state_root

    if workspace is None:
        line = f"no session {session_id[:40]} in any project (agent-assist sessions --all)"
    else:
        line = f"no session {session_id[:40]} in this project ({workspace})"
    if not is_session_id(session_id):
        return line
    here = None if workspace is None else _project(workspace)
    unread = None if here is None else _offline_catalog(read_only=True).unread(here)
    if unread is not None:  # it may be there: say what is known
        path, why = unread
        what = "its sessions directory " if path == here else ""
        return (
            f"cannot tell whether session {session_id} is in this project: {what}{path} "
            f"could not be read ({why})"
        )
    kept = [] if here is None else sorted(here.glob(f"{session_id}.json.corrupt-*"))
    if kept:  # moved aside by a chat's start (or a prune)
        return (
            f"session {session_id} cannot be opened: its file was corrupt and is kept as "
            f"{kept[-1].name}"
        )
    other = project_holding(workspace, session_id)
    if other is not None:
        return f"{line}; it belongs to project {other}{_of_workspace(other)}"
    base = projects_dir(state_root())
    for found in sorted(base.glob(f"*/sessions/{session_id}.json.corrupt-*")):
        if found.parent != here:
            return (
                f"{line}; project {found.parent.parent.name} had it, but its file was "
                f"corrupt and is kept as {found.name}"
            )
    return line


def _of_workspace(project: str) -> str:
    """Where the sessions of ``project`` came from, and what to do to open one."""
    from session.workspace_record import recorded_workspace

    path = recorded_workspace(_project(Path("/"), project).parent)
    if path is None:
        return ": run from that workspace or pass --workspace DIR"
    if os.path.isdir(path):
        return f", of the workspace {printable(path)}: run from there or pass --workspace DIR"
    return (
        f", of the workspace {printable(path)}, which is not there any more (moved, renamed "
        "or deleted): put it back there, or create that directory and pass it as "
        "--workspace DIR"
    )


def sessions_elsewhere(workspace: Path | None) -> int:
    """How many sessions the other projects than ``workspace``'s hold (all of them with
    None): a listing of this one with none tells of them, since a workspace moved or
    renamed is another project and its sessions are not lost."""
    from session.models import is_session_id
    from session.paths import projects_dir, state_root

    here = None if workspace is None else _project(workspace)
    try:
        found = projects_dir(state_root()).glob("*/sessions/*.json")
        return sum(1 for path in found if path.parent != here and is_session_id(path.stem))
    except OSError:
        return 0


class SupervisorStarting(Exception):
    """A supervisor holds its lock but does not answer yet."""


Fit = Callable[[Frame], Frame]
"""The request as a supervisor of the version its welcome tells knows it (``remove_session``
without ``force`` for the version before)."""


def _ask_supervisor(
    paths: RuntimePaths, frame: dict[str, Any], *, reading: bool = False, fit: Fit | None = None
) -> dict[str, Any] | None:
    """The supervisor's answer to one control request (``fit`` to its welcome); None when
    no supervisor runs.

    For a read (``reading``), a runtime directory that cannot be used (not a
    directory, unreachable) counts as no supervisor: listing works without one.
    """
    from session.paths import state_root

    try:
        conn = control_connection(paths)
    except (OSError, RuntimeDirError):
        if not reading:
            raise
        return None
    if conn is None:
        return None
    with conn:
        try:
            welcome = control_hello(conn, hello("control", state_root=state_root().resolve()))
            data: dict[str, Any] = conn.request(fit(welcome) if fit else frame)["data"]
        except TimeoutError:
            raise not_answering(paths) from None
    return data


@contextlib.contextmanager
def _supervisor_lock(paths: RuntimePaths) -> Iterator[None]:
    """Hold ``supervisor.lock`` (the lock a running supervisor holds for its whole life), so
    no supervisor starts while files are deleted without one. SupervisorStarting if one
    holds it."""
    ensure_private_runtime_dir(paths.directory)
    fd = os.open(paths.lock, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise SupervisorStarting from None
        from session.paths import state_root
        from supervisor.home import HomeHeld, home_holder

        root = state_root().resolve()
        holder = home_holder(root)
        if holder is not None:  # it may hand out the sessions this change is about
            raise HomeHeld(root, holder)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def _supervisor_or_lock(
    paths: RuntimePaths, frame: dict[str, Any], fit: Fit | None = None
) -> Iterator[Any]:
    """Yields the supervisor's answer (to ``frame``, ``fit`` to it), or None while holding its
    lock when none runs: a change made offline happens under the lock a supervisor would
    hold."""
    for _ in range(LOCK_ATTEMPTS):
        if (data := _ask_supervisor(paths, frame, fit=fit)) is not None:
            yield data
            return
        try:
            lock = _supervisor_lock(paths)
            lock.__enter__()
        except SupervisorStarting:
            time.sleep(LOCK_PAUSE_S)  # one is starting: ask it again
            continue
        with contextlib.ExitStack() as held:
            held.push(lock)
            yield None
        return
    raise RuntimeDirError(f"a supervisor holds {paths.lock} but does not answer")


def _offline_catalog(read_only: bool) -> Any:
    from session.catalog import SessionCatalog
    from session.paths import state_root
    from session.redaction import secrets_from_environment

    return SessionCatalog(
        state_root(), read_only=read_only, known_secrets=secrets_from_environment()
    )


def _project(workspace: Path | None, name: str | None = None) -> Path:
    """The sessions directory of ``workspace``'s project, or of the project ``name`` (one
    of the two is given)."""
    from session.paths import projects_dir, sessions_dir, state_root

    if name is not None:
        return projects_dir(state_root()) / name / "sessions"
    assert workspace is not None, "a project is named by its workspace or its name"
    return sessions_dir(workspace, state_root())


def _served_elsewhere(paths: RuntimePaths) -> Exception | None:
    """HomeHeld when a supervisor of another runtime directory keeps the sessions: the
    files alone then cannot tell which are live (its terminals' are), nor is a change
    made without it safe."""
    from session.paths import state_root
    from supervisor.home import HomeHeld, home_holder

    root = state_root().resolve()
    holder = home_holder(root)
    if holder is None or holder == str(paths.directory):  # ours: busy, or not answering
        return None
    return HomeHeld(root, holder)


def list_sessions(
    paths: RuntimePaths, workspace: str | Path | None, every: bool, *, ask: bool = True
) -> dict[str, Any]:
    """The listing: the supervisor's, else (none running, busy, or not answering; ``ask``
    False: it was just found not answering) the files', with a warning saying why."""
    frame = list_request(str(workspace) if workspace else None, every)
    busy: list[str] = []
    try:
        if not ask:
            raise not_answering(paths)
        if (data := _ask_listing(paths, frame)) is not None:
            return data
    except SupervisorBusy:
        busy.append(
            "warning: the supervisor is busy (too many connections); "
            "listed from the files (none as live)"
        )
    except SupervisorUnavailable as exc:  # stopped or hung: the files can still be read
        busy.append(f"warning: {exc}; listed from the files (none as live)")
    if not busy and (elsewhere := _served_elsewhere(paths)) is not None:
        busy.append(f"warning: {elsewhere}; listed from the files (none as live)")
    catalog = _offline_catalog(read_only=True)
    projects = None if every or workspace is None else (_project(Path(workspace)),)
    pid = frame.get("terminal_pid")
    listing = catalog.list(projects, {}, terminal_pid=pid if isinstance(pid, int) else None)
    answer: dict[str, Any] = listing.to_json()
    answer["warnings"] = [*busy, *listing.warnings]
    return answer


def _ask_listing(paths: RuntimePaths, frame: dict[str, object]) -> dict[str, Any] | None:
    """The supervisor's listing; one that does not know the tab's identity (the version
    before, running after an upgrade) is asked without it."""
    return _ask_supervisor(paths, dict(frame), reading=True, fit=partial(fit_this_tab, frame))


def project_holding(workspace: Path | None, session_id: str) -> str | None:
    """The name of the other project than ``workspace``'s (any, with None) whose sessions
    directory holds ``session_id``'s file (session ids are unique across projects), if
    any."""
    from session.models import is_session_id
    from session.paths import projects_dir, state_root

    if not is_session_id(session_id):
        return None
    here = None if workspace is None else _project(workspace)
    for found in sorted(projects_dir(state_root()).glob(f"*/sessions/{session_id}.json")):
        if found.parent != here:
            return found.parent.parent.name
    return None


def _one_session(
    kind: str, workspace: Path | None, session_id: str, project_name: str | None
) -> dict[str, Any]:
    """The frame that asks about one session (``show_session``, ``remove_session``)."""
    return {
        "type": kind,
        "workspace": workspace and str(workspace),
        "session_id": session_id,
        "project": project_name,
    }


def show_session(
    paths: RuntimePaths,
    workspace: Path | None,
    session_id: str,
    project_name: str | None = None,
) -> dict[str, Any]:
    """``project_name``: the session's project, when it is not the workspace's (or there
    is no workspace)."""
    frame = _one_session("show_session", workspace, session_id, project_name)
    if (data := _ask_supervisor(paths, frame, reading=True)) is not None:
        return data
    from session.models import validate_session_id

    catalog = _offline_catalog(read_only=True)
    project = _project(workspace, project_name)
    validate_session_id(session_id)
    rows, _ = catalog.rows(project, {})  # first: the headers it reads are the show's
    shown = catalog.shown(project, session_id)
    row = next((r.to_json() for r in rows if r.session_id == session_id), None)
    from session.checkpoints import listing_items

    checkpoints = catalog.checkpoints(project).listed(session_id)
    elsewhere = _served_elsewhere(paths)
    return {
        "row": row,
        "session": shown,
        "checkpoints": listing_items(checkpoints.checkpoints),
        "warnings": [
            *([f"warning: {elsewhere}; shown from the files (not as live)"] if elsewhere else []),
            *checkpoints.problems,
        ],
    }


def remove_session(
    paths: RuntimePaths,
    workspace: Path | None,
    session_id: str,
    project_name: str | None = None,
    force: bool = False,
) -> bool:
    """``project_name``: the session's project, when it is not the workspace's (or there
    is no workspace); ``force``: even one a running terminal may hold, its pointer
    unreadable (never a live one)."""
    from session.models import validate_session_id

    validate_session_id(session_id)
    frame = _one_session("remove_session", workspace, session_id, project_name)
    frame["force"] = force
    frame = with_this_tab(frame)

    def fit(welcome: Frame) -> Frame:
        fitted = fit_this_tab(frame, welcome)
        if knows(welcome, "remove_force"):
            return fitted
        # The version before (still running after an upgrade) refuses the key and removes
        # any session but a live one: the doubt is checked here first.
        if not force:
            project = _project(workspace, project_name)
            _offline_catalog(read_only=True).refuse_if_maybe_held(
                project, session_id, frame.get("terminal_pid")
            )
        return {key: value for key, value in fitted.items() if key != "force"}

    return _remove(paths, frame, workspace, force, fit)


def _remove(
    paths: RuntimePaths, frame: dict[str, Any], workspace: Path | None, force: bool, fit: Fit
) -> bool:
    """``remove_session``'s request to the supervisor (``fit`` to it), or its removal from
    the files."""
    with _supervisor_or_lock(paths, frame, fit) as data:
        if data is not None:
            return bool(data["removed"])
        catalog = _offline_catalog(read_only=False)
        session_id, project = frame["session_id"], _project(workspace, frame["project"])
        removed = catalog.remove_session(
            project, session_id, if_saved=True, force=force, terminal_pid=frame.get("terminal_pid")
        )
        if not removed:
            raise FileNotFoundError(f"no session {session_id} in this project")
        return True


def prune_sessions(
    paths: RuntimePaths, workspace: Path | None, every: bool, days: float, dry_run: bool
) -> dict[str, Any]:
    """``workspace``: its project's orphans; None (with ``every``): every project's."""
    frame = with_this_tab(
        {
            "type": "prune_sessions",
            "workspace": workspace and str(workspace),
            "all": every,
            "older_than_days": days,
            "dry_run": dry_run,
        }
    )

    fit = partial(fit_this_tab, frame)
    checked: contextlib.AbstractContextManager[Any]
    if dry_run:
        answer = _ask_supervisor(paths, frame, reading=True, fit=fit)
        if answer is None and (elsewhere := _served_elsewhere(paths)) is not None:
            raise elsewhere  # as the prune itself: what it would remove, only that one knows
        checked = contextlib.nullcontext(answer)
    else:
        checked = _supervisor_or_lock(paths, frame, fit)
    with checked as data:
        if data is not None:
            return dict(data)
        catalog = _offline_catalog(read_only=dry_run)
        projects = None if every else (_project(workspace),)
        pruned = catalog.prune(projects, days, dry_run, {}, frame.get("terminal_pid"))
    result: dict[str, Any] = pruned.to_json(dry_run)
    return result


PIPED_SUMMARY_WIDTH = 80
MIN_SUMMARY_WIDTH = 12
PROJECT_CUT_WIDTH = 28
"""The screen columns a long project name is cut to when the table would not fit."""


def _clip(text: str | None, width: int) -> str:
    from cli.summaries import clip

    return clip(text or "", width)


def screen_width() -> int | None:
    """The terminal's width when stdout is one, else None (the tables and the lines wider
    than it are fit to it)."""
    import shutil
    import sys

    if not sys.stdout.isatty():
        return None
    return shutil.get_terminal_size().columns


NOTHING_READ = "No sessions listed: the error above says what could not be read."
"""An empty listing that is not the store's whole: `No sessions.` would say it is empty."""
NOTHING_PRUNED_UNREAD = "No sessions {what}: the error above says what could not be read."
"""A prune that removed none and could not read the whole store (``what``: ``removed``,
``listed for removal``): `Removed 0 ...` would say there was nothing to remove."""


def render_table(
    rows: list[dict[str, Any]],
    every: bool,
    width: int | None = None,
    elsewhere: int = 0,
    whole: bool = True,
) -> str:
    """The sessions as a table; the summary column fits ``width`` (default: the
    terminal's, when stdout is one). On a narrow terminal the table first writes its
    times shorter (``12-02 07:42``), then leaves out the TERMINAL, TURNS and PROJECT
    columns, in that order, before the summary shrinks below its minimum; narrower
    still, lines are cut at the width (a wrapped table is unreadable). With no row, it
    says how many sessions other projects hold (``elsewhere``); from a listing that is
    not ``whole`` (an ``error:`` line said what it could not read), it claims none."""
    if not rows:
        if not whole:
            return NOTHING_READ
        if every or not elsewhere:
            return "No sessions."
        held = "1 session" if elsewhere == 1 else f"{elsewhere:,} sessions"
        return (
            f"No sessions in this project; other projects hold {held} "
            "(agent-assist sessions --all lists them)."
        )
    from cli.summaries import columns, cut, pad

    width = width or screen_width()
    cut_projects = every and width is not None
    # Shorter times, then long project names cut (their hash kept), then whole columns
    # go, least needed first, before the summary gets shorter than its minimum: a cell
    # cut in the middle (`orphane…`) reads as nothing.
    lines: list[list[str]] = []
    widths: list[int] = []  # both set by the first layout tried: there is always one
    for short_times, with_pid, with_turns, with_project, project_cut in (
        (False, True, True, every, False),
        (True, True, True, every, False),
        (True, True, True, every, cut_projects),
        (True, False, True, every, cut_projects),
        (True, False, False, every, cut_projects),
        (True, False, False, False, False),
    ):
        lines = _table_lines(rows, with_project, short_times, with_pid, with_turns)
        if project_cut:
            for line in lines[1:]:
                line[1] = project_cell(line[1])
        widths = [max(columns(line[i]) for line in lines) for i in range(len(lines[0]) - 1)]
        if width is None or sum(w + 2 for w in widths) + MIN_SUMMARY_WIDTH <= width:
            break
    room = PIPED_SUMMARY_WIDTH
    if width is not None:
        room = max(width - sum(w + 2 for w in widths), MIN_SUMMARY_WIDTH)
    for line in lines:
        line[-1] = _clip(line[-1], room)
    text = [
        "  ".join(pad(cell, w) for cell, w in zip(line[:-1], widths, strict=True))
        + "  "
        + line[-1]
        for line in lines
    ]
    if width is not None:  # narrower still than the fixed columns: cut, never wrap
        text = [cut(line, width) for line in text]
    return "\n".join(text).rstrip()


def project_cell(project: str) -> str:
    """A project's name cut to ``PROJECT_CUT_WIDTH`` screen columns, its ``_hash8`` kept
    (which tells it from every other project): ``verylongname…_6bc5b239``."""
    from cli.summaries import columns, cut

    if columns(project) <= PROJECT_CUT_WIDTH:
        return project
    name, _, digest = project.rpartition("_")
    return cut(name, PROJECT_CUT_WIDTH - len(digest) - 1) + "_" + digest


def _table_lines(
    rows: list[dict[str, Any]],
    with_project: bool,
    short_times: bool,
    with_pid: bool,
    with_turns: bool = True,
) -> list[list[str]]:
    """The header and a line of cells per row (the summary last, not yet clipped)."""
    from cli.summaries import listed_headline

    def line(
        session: str, project: str, state: str, pid: str, active: str, turns: str, summary: str
    ) -> list[str]:
        return [
            session,
            *([project] if with_project else []),
            state,
            *([pid] if with_pid else []),
            active,
            *([turns] if with_turns else []),
            summary,
        ]

    active_header = "ACTIVE (UTC)" if short_times else "LAST ACTIVE"
    lines = [line("SESSION", "PROJECT", "STATE", "TERMINAL", active_header, "TURNS", "SUMMARY")]
    for row in rows:
        turns = None if row.get("note") else row.get("turns")  # a new one's note says it
        headline = listed_headline(row["summary"], turns)
        active = row["last_active"]
        if short_times:  # 2026-03-31 14:22 UTC -> 03-31 14:22
            active = active.removesuffix(" UTC")[5:]
        lines.append(
            line(
                row["session_id"],
                row["project"],
                row["state"],
                str(row["terminal_pid"] or "-"),
                active,
                _turns_cell(row.get("turns")),
                f"[{row['note']}] {headline}" if row.get("note") else headline,
            )
        )
    return [[printable(cell) for cell in cells] for cells in lines]


def _turns_cell(turns: object) -> str:
    """The TURNS cell: ``-`` when they are not known (a file this version cannot read, or
    a supervisor older than the column, which sends none)."""
    return "-" if turns is None else str(turns)


def turns_line(session: dict[str, Any], row: dict[str, Any] | None = None) -> str:
    """``18 (16 compacted into the summary)``: a compacted session's tail alone looked empty.
    ``-`` when its listing ``row`` could not count them (messages this version cannot
    read: their count would be a guess, and was ``0``)."""
    if row is not None and row.get("note") and row.get("turns") is None:
        return "-"
    summary = session.get("compacted_history_summary")
    if "recent_messages" in session:  # from a supervisor of a version before H182
        turns: int | None = session_turns(summary, session["recent_messages"])
    else:
        turns = session.get("turns")
    if turns is None:
        return "-"
    compacted = compacted_turns(summary)
    return f"{turns} ({compacted} compacted into the summary)" if compacted else str(turns)


def message_count(session: dict[str, Any]) -> int:
    """The messages of the saved tail: counted by the supervisor (a version before H182
    sent them all)."""
    if "recent_messages" in session:
        return len(session["recent_messages"])
    return int(session["messages"])


def _when(iso: str) -> str:
    """A stored time as the listing and the resume offer print it (``2026-03-31 14:22 UTC``)."""
    from datetime import datetime

    from session.resume import format_utc

    try:
        return format_utc(datetime.fromisoformat(iso.replace("Z", "+00:00")))
    except ValueError:
        return iso


def render_show(data: dict[str, Any], width: int | None = None) -> str:
    """One session as ``sessions show`` prints it; with ``width`` (a terminal's), its lines
    wrapped between words and its checkpoints fitted as ``/checkpoint`` fits them, so
    that no word is cut at the terminal's edge."""
    session = data["session"]
    row = data.get("row") or {}
    lines = [
        f"Session      {session['session_id']}",
        f"State        {row.get('state', 'unknown')}"
        + (f" (terminal {row['terminal_pid']})" if row.get("terminal_pid") else ""),
        f"Project      {row.get('project', '')}",
        f"Created      {_when(session['created_at'])}",
        f"Last active  {_when(session['updated_at'])}",
        f"Agent spec   {session['agent_spec_path'] or '-'}",
        f"Phase        {session['phase'] or '-'}",
        f"Turns        {turns_line(session, row)}",
        # The last message got no reply: its first words, as the resume offer says them.
        *([f'Unanswered   "{row["unanswered"]}"'] if row.get("unanswered") else []),
        f"Messages     {message_count(session)} (recent tail)",
        f"Checkpoints  {session['checkpoint_count']}",
    ]
    if row.get("note"):  # why it cannot be opened (a session shown, not listed, is whole)
        lines.insert(2, f"Note         {row['note']}")
    from session.resume import without_decisions_line

    summary = (
        without_decisions_line(session["summary"]) if session["decisions"] else session["summary"]
    )
    if summary and summary.strip():  # its decisions line is the section below
        lines += ["", "Summary:", summary.strip()]
    if session["decisions"]:
        lines += ["", "Decisions:", *(f"- {d}" for d in session["decisions"])]
    if session["file_manifest"]:
        lines += ["", "Tracked files:", *(f"- {p}" for p in sorted(session["file_manifest"]))]
    rows: list[str] = []
    if data.get("checkpoints") and session["checkpoint_count"]:
        from session.checkpoints import item_lines

        items = data["checkpoints"]
        lines += ["", "Checkpoints (agent-assist --resume ID, then /checkpoint N):"]
        # A supervisor of an older version sends the lines themselves.
        rows = items if all(isinstance(i, str) for i in items) else item_lines(items)
    text, listing = printable("\n".join(lines)), printable("\n".join(rows))
    if width is not None:
        from cli.console import fit_to_width, word_wrap

        text, listing = word_wrap(text, width), fit_to_width(listing, width)
    return "\n".join([text, listing]) if rows else text


def dumps(value: Any) -> str:
    """``--json``'s text: nothing in it a terminal acts on (``json_printable``)."""
    return json_printable(json.dumps(value, indent=2, ensure_ascii=False))
