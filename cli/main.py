"""The ``agent-assist`` command: a thin click adapter over the plain functions of ``cli/``.

Errors become one line on stderr and exit status 1 (2 for usage errors).
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import click
from click.shell_completion import CompletionItem

from cli import sessions as sessions_ops
from cli import supervisor_cmd
from cli.completion import use_whole_word_completion
from cli.errors import (
    CommandError,
    current_directory,
    error_line,
    shown_input,
    usable_workspace,
)
from cli.printable import printable
from cli.quick import incomplete, prune_failed
from supervisor.runtime import check_tuning, runtime_paths

F = TypeVar("F", bound=Callable[..., Any])
NOT_RUNNING = 3

MODEL_HELP = (
    "pydantic-ai model string, e.g. openai-chat:NAME for any OpenAI-compatible endpoint "
    "at OPENAI_BASE_URL [env AGENT_ASSIST_MODEL; default: offline, the built-in "
    "deterministic model that needs no network and labels its replies]"
)


def complete_session_ids(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[str]:
    """Shell completion: the session ids of the workspace's project."""
    from session.models import is_session_id
    from session.paths import sessions_dir, state_root

    if incomplete.strip("0123456789abcdef"):  # no session id begins so (nor a path)
        return []
    project = sessions_dir(Path(completion_workspace(ctx)).resolve(), state_root())
    return sorted(p.stem for p in project.glob(f"{incomplete}*.json") if is_session_id(p.stem))


def complete_models(
    ctx: click.Context, param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    """Shell completion of ``--model``: ``offline``, the models the settings name (the
    config file's, the environment's), then the provider prefixes (``openai-chat:``
    first; every provider pydantic-ai knows once something is typed), from
    ``session/model_names.py``: no pydantic-ai is imported."""
    from session.model_names import KNOWN_PROVIDERS, OFFLINE

    offered = {OFFLINE: "the built-in model: no network"}
    for model, where in configured_models():
        offered.setdefault(model, f"from {where}")
    offered.setdefault("openai-chat:", "Chat Completions at OPENAI_BASE_URL")
    if incomplete:
        for provider in sorted(KNOWN_PROVIDERS):
            offered.setdefault(f"{provider}:", "a pydantic-ai provider")
    return [
        CompletionItem(model, help=what)
        for model, what in offered.items()
        if model.startswith(incomplete)
    ]


def configured_models() -> list[tuple[str, str]]:
    """The model and summary model the settings name, with where from (none from a
    settings file or value that does not read: completion says nothing of it)."""
    from cli.config_cmd import source_label
    from session.errors import SessionError
    from session.paths import state_root
    from session.settings import load_settings

    try:
        settings = load_settings(state_root(), os.environ)
    except (SessionError, OSError):  # a bad setting is told by the command, not by Tab
        return []
    return [
        (model, source_label(settings, name))
        for name, model in (("model", settings.model), ("summary_model", settings.summary_model))
        if model and settings.source_of(name) != "default"
    ]


def completion_workspace(ctx: click.Context) -> Path:
    """The workspace a command being completed would use: the innermost ``--workspace``
    given (``sessions -w DIR show``, ``-w DIR sessions show``, ``sessions show -w DIR``),
    else the current directory."""
    at: click.Context | None = ctx
    while at is not None:
        chosen = at.params.get("workspace")
        if chosen is not None and at.get_parameter_source("workspace") not in (
            None,
            click.core.ParameterSource.DEFAULT,
        ):
            return Path(chosen)
        at = at.parent
    return Path(".")


MAX_DAYS = 1_000_000


class Days(click.ParamType[float]):
    """A finite number of days from 0 to ``MAX_DAYS`` (``nan``, ``inf`` and ``1e400`` are
    usage errors, not values to send the supervisor)."""

    name = "days"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        if isinstance(value, float):
            return value
        try:
            days = float(value)
        except ValueError:
            days = math.nan
        if not (math.isfinite(days) and 0 <= days <= MAX_DAYS):
            self.fail(
                f"{shown_input(str(value), 40)} is not a number of days from 0 to {MAX_DAYS}",
                param,
                ctx,
            )
        return days


SHORTEST_PREFIX = 4
"""A session id may be given by its first digits, at least this many (``full_id``)."""
_ID_OR_PREFIX = re.compile(f"[0-9a-f]{{{SHORTEST_PREFIX},12}}")


class SessionId(click.ParamType[str]):
    """A session id: 12 hex digits, or its first 4 or more (``../x`` is a usage error,
    told before anything runs)."""

    name = "id"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> str:
        text = str(value).strip()
        if not _ID_OR_PREFIX.fullmatch(text):
            self.fail(
                f"{shown_input(str(value), 40)} is not a session id (12 hex digits, or the first "
                f"{SHORTEST_PREFIX} or more of them)",
                param,
                ctx,
            )
        return text


def full_id(given: str) -> str:
    """``given``, or the one session id of any project that begins with it: a unique
    prefix names a session, as a commit's does in git."""
    if len(given) == 12:
        return given
    listed = sessions_ops.list_sessions(runtime_paths(), None, True)
    found = sorted({str(row["session_id"]) for row in listed["sessions"]})
    matches = [session_id for session_id in found if session_id.startswith(given)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        if incomplete(listed):  # it may be in what could not be read: say what
            for line in listed["warnings"]:
                if line.startswith("error:"):
                    _warn(line)
            raise CommandError(
                f"no session id that could be read begins with {given}; the error above "
                "says what could not be read"
            )
        raise CommandError(f"no session id begins with {given} (agent-assist sessions --all)")
    shown = ", ".join(matches[:4]) + (", ..." if len(matches) > 4 else "")
    raise CommandError(
        f"{given} begins {len(matches)} session ids ({shown}); give more of its digits"
    )


SESSION_ID = SessionId()


def _warn(line: str) -> None:
    """A ``warning:``, ``note:`` or ``error:`` line on stderr, wrapped between words on a
    terminal narrower than it, its continuation rows indented past the label."""
    from cli.console import stderr_wrapped

    click.echo(stderr_wrapped(line), err=True)


def one_line_errors(fn: F) -> F:
    """Translate the project's errors to one line on stderr and exit status 1."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except BrokenPipeError:
            raise  # our reader went away: cli/entry.py ends quietly
        except Exception as exc:
            line = error_line(exc)
            if line is None:
                raise
            _warn(line)
        sys.exit(1)

    return wrapper  # type: ignore[return-value]


def resolved(workspace: Path) -> Path:
    """``workspace`` made absolute, symlinks resolved; a relative one from a current
    directory that was deleted is one clear error, not ``error: 2``."""
    if not workspace.is_absolute():
        workspace = Path(current_directory()) / workspace
    return Path(usable_workspace(str(workspace.resolve())))


WORKSPACE_HELP = "The agent's workspace [default: the current directory]."
"""The ``--workspace`` help of every command whose default is the current directory."""


def workspace_option(fn: F) -> F:
    return click.option(
        "--workspace",
        "-w",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=Path("."),
        help=WORKSPACE_HELP,
    )(fn)


def chat_options(fn: F) -> F:
    for option in reversed(
        [
            click.option(
                "--workspace",
                "-w",
                type=click.Path(exists=True, file_okay=False, path_type=Path),
                default=Path("."),
                help=WORKSPACE_HELP,
            ),
            click.option(
                "--model",
                "-m",
                metavar="MODEL",
                default=None,
                help=MODEL_HELP,
                shell_complete=complete_models,
            ),
            click.option("--new", is_flag=True, help="Start a new session without asking."),
            click.option(
                "--resume",
                "resume_id",
                metavar="ID",
                type=SESSION_ID,
                default=None,
                help="Resume this session.",
                shell_complete=complete_session_ids,
            ),
            click.option(
                "--yes",
                "-y",
                is_flag=True,
                help=(
                    "Resume the previous session without asking; with --resume of a session "
                    "live elsewhere, start a new one without asking."
                ),
            ),
        ]
    ):
        fn = option(fn)
    return fn


def _chat(workspace: Path, model: str | None, new: bool, resume_id: str | None, yes: bool) -> None:
    if new and resume_id:
        raise click.UsageError("--new and --resume cannot be used together")
    if new and yes:
        raise click.UsageError("--new and --yes cannot be used together (--yes resumes)")
    from cli import config_cmd
    from cli.chat import ChatError, ChatOptions, run_chat  # not needed by the other commands

    if resume_id is not None:
        resume_id = full_id(resume_id)
    settings = config_cmd.load({"model": model})
    check_tuning()  # the chat may start the supervisor, which reads them all
    source = config_cmd.source_label(settings, "model")
    config_cmd.check_sdks(settings)
    options = ChatOptions(
        resolved(workspace), settings.model, new, resume_id, yes, source, settings.for_chat()
    )
    try:
        code = run_chat(options)
    except ChatError as exc:
        raise CommandError(str(exc)) from exc
    sys.exit(code)


class Commands(click.Group):
    """A group that tells a command word naming one of its options as that option
    (`agent-assist version`: click's nearest command was `sessions`)."""

    group_class = type  # its subgroups are Commands too

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        option = f"--{args[0]}" if args else ""
        if self.get_command(ctx, args[0]) is None and any(
            option in param.opts for param in self.get_params(ctx)
        ):
            ctx.fail(f"No such command {args[0]!r}. Did you mean {option!r}?")
        return super().resolve_command(ctx, args)


@click.group(
    cls=Commands,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(
    None, "--version", "-V", package_name="agent-assist", prog_name="agent-assist"
)
@chat_options
@click.pass_context
@one_line_errors
def main(
    ctx: click.Context,
    workspace: Path,
    model: str | None,
    new: bool,
    resume_id: str | None,
    yes: bool,
) -> None:
    """agent-assist: design LLM agents in your terminal, with sessions that survive
    exits, Ctrl+C and crashes. Without a command it starts a chat (same as `chat`)."""
    if ctx.invoked_subcommand is None:
        _chat(workspace, model, new, resume_id, yes)
        return
    given = _given(ctx, CHAT_PARAMS)
    applies: tuple[str, ...] = ()
    if ctx.invoked_subcommand == "chat":
        applies = CHAT_PARAMS
    elif ctx.invoked_subcommand == "sessions":
        applies = ("workspace",)
    for name in given:
        if name not in applies:
            option = "--resume" if name == "resume_id" else f"--{name}"
            after = TAKEN_AFTER.get((ctx.invoked_subcommand or "", name))
            raise click.UsageError(
                f"{option} does not apply to `{ctx.invoked_subcommand}`"
                + (f"; put it after `{after}`" if after else "")
            )
    ctx.obj = {name: ctx.params[name] for name in given}


CHAT_PARAMS = ("workspace", "model", "new", "resume_id", "yes")
TAKEN_AFTER = {("config", "model"): "config show"}
"""Where an option given before a command that does not take it is taken instead."""


def _given(ctx: click.Context, names: tuple[str, ...]) -> list[str]:
    """The options of ``names`` given on the command line (not left at their default)."""
    return [
        name
        for name in names
        if ctx.get_parameter_source(name) is click.core.ParameterSource.COMMANDLINE
    ]


@main.command(short_help="Attach, offer to resume, converse (the default command).")
@chat_options
@click.pass_context
@one_line_errors
def chat(
    ctx: click.Context,
    workspace: Path,
    model: str | None,
    new: bool,
    resume_id: str | None,
    yes: bool,
) -> None:
    """Attach to the supervisor (starting it if needed), offer resumption, converse."""
    before = dict(ctx.obj or {})  # given before `chat`: `agent-assist -w DIR chat --new`
    for name in _given(ctx, CHAT_PARAMS):
        before.pop(name, None)  # given after `chat` too: that one counts
    values = {**ctx.params, **before}
    _chat(values["workspace"], values["model"], values["new"], values["resume_id"], values["yes"])


# -- sessions -------------------------------------------------------------------


@main.group(
    invoke_without_command=True,
    short_help="List sessions (live, idle, orphaned); show, rm, prune them.",
)
@workspace_option
@click.option("--all", "every", is_flag=True, help="Every project, not just this workspace's.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON array.")
@click.pass_context
@one_line_errors
def sessions(ctx: click.Context, workspace: Path, every: bool, as_json: bool) -> None:
    """List sessions: live (attached now), idle (its terminal still runs), orphaned."""
    given: Path | None = workspace if _given(ctx, ("workspace",)) else None
    if given is None and ctx.obj:  # `agent-assist -w DIR sessions`
        given = ctx.obj.get("workspace")
    if ctx.invoked_subcommand is not None:
        ctx.obj = given  # None: the subcommand's own, else the current directory
        return
    workspace = given or workspace
    listed = None if every else resolved(workspace)  # --all needs no workspace
    data = sessions_ops.list_sessions(runtime_paths(), listed, every)
    for warning in data["warnings"]:
        _warn(warning)
    whole = not incomplete(data)
    if as_json:
        click.echo(sessions_ops.dumps(data["sessions"]))
    else:
        rows = data["sessions"]
        elsewhere = 0 if rows or every or not whole else sessions_ops.sessions_elsewhere(listed)
        click.echo(sessions_ops.render_table(rows, every, elsewhere=elsewhere, whole=whole))
    if not whole:
        sys.exit(1)  # a file or directory that could not be read: the listing is not whole


workspace_override = click.option(
    "--workspace",
    "-w",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help=(
        "The agent's workspace [default: the one given before `sessions`, else the "
        "current directory]."
    ),
)


@contextlib.contextmanager
def _not_found_hint(workspace: Path | None, session_id: str) -> Iterator[None]:
    """An unknown session becomes one line that says which project holds it, if any."""
    from supervisor.client import RemoteError
    from supervisor.wire import ErrorCode

    try:
        yield
    except (FileNotFoundError, RemoteError) as exc:
        if isinstance(exc, RemoteError) and exc.code != ErrorCode.NOT_FOUND:
            raise
        raise CommandError(sessions_ops.not_found_line(workspace, session_id)) from exc


T = TypeVar("T")


def _in_any_project(
    act: Callable[[str | None], T], workspace: Path | None, session_id: str
) -> T:
    """``act`` on the session in the workspace's project; if it is not there but another
    project holds it (session ids are unique), there, saying so (its workspace may be
    elsewhere, or gone). With no workspace, in the project that holds it."""
    from supervisor.client import RemoteError
    from supervisor.wire import ErrorCode

    if workspace is None:
        holder = sessions_ops.project_holding(None, session_id)
        if holder is None:
            raise FileNotFoundError(f"no session {session_id}")
        return act(holder)
    try:
        return act(None)
    except (FileNotFoundError, RemoteError) as exc:
        if isinstance(exc, RemoteError) and exc.code != ErrorCode.NOT_FOUND:
            raise
        other = sessions_ops.project_holding(workspace, session_id)
        if other is None:
            raise
        _warn(f"note: session {session_id} is in project {other}")
        return act(other)


def _workspace(ctx: click.Context, workspace: Path | None) -> Path:
    return resolved(Path(workspace or ctx.obj or "."))


def _workspace_if_any(ctx: click.Context, workspace: Path | None) -> Path | None:
    """The workspace given (after `sessions` or before it), else the current directory;
    None when none was given and the current directory is gone: a session named by its
    id needs no workspace (ids are unique across projects)."""
    if workspace is None and ctx.obj is None:
        try:
            current_directory()
        except CommandError:
            return None
    return _workspace(ctx, workspace)


@sessions.command("show")
@click.argument("session_id", type=SESSION_ID, shell_complete=complete_session_ids)
@workspace_override
@click.option("--json", "as_json", is_flag=True, help="Print the session as JSON.")
@click.pass_context
@one_line_errors
def sessions_show(
    ctx: click.Context, session_id: str, workspace: Path | None, as_json: bool
) -> None:
    """Show one session (ID: its 12 digits, or the first 4 or more)."""
    from supervisor.client import RemoteError
    from supervisor.wire import ErrorCode

    where = _workspace_if_any(ctx, workspace)
    session_id = full_id(session_id)
    with _not_found_hint(where, session_id):
        try:
            data = _in_any_project(
                lambda project: sessions_ops.show_session(
                    runtime_paths(), where, session_id, project
                ),
                where,
                session_id,
            )
        except (FileNotFoundError, RemoteError) as exc:
            if isinstance(exc, RemoteError) and exc.code != ErrorCode.NOT_FOUND:
                raise
            # No file: a new session, live before its first turn, is in the listing only
            # (asked for here, not before every show: a second scan of the directory).
            if (new := _new_live_session(where, session_id)) is None:
                raise
            shown: dict[str, Any] = {"row": new, "session": None, "checkpoints": [], "warnings": []}
            click.echo(sessions_ops.dumps(shown) if as_json else _new_session_line(new))
            return
    if as_json:
        click.echo(sessions_ops.dumps(data))
    else:
        click.echo(sessions_ops.render_show(data, sessions_ops.screen_width()))
    for warning in data.get("warnings", ()):
        _warn(warning)


def _say(text: str) -> None:
    """A line on stdout; on a terminal, wider than it, wrapped between words (the
    terminal's own wrap cut it inside one: ``so`` / ``cket``)."""
    if (width := sessions_ops.screen_width()) is not None:
        from cli.console import word_wrap

        text = word_wrap(text, width)
    click.echo(printable(text))


def _new_live_session(workspace: Path | None, session_id: str) -> dict[str, Any] | None:
    """The listing's row of ``session_id`` if it is a new session, live, with no file yet
    (listed by the supervisor before its first turn); with no workspace, of any project."""
    from session.catalog import NEW_SESSION_NOTE

    try:
        listed = sessions_ops.list_sessions(runtime_paths(), workspace, workspace is None)
    except Exception:  # the show itself says what is wrong
        return None
    return next(
        (
            row
            for row in listed["sessions"]
            if row["session_id"] == session_id and row.get("note") == NEW_SESSION_NOTE
        ),
        None,
    )


def _new_session_line(row: dict[str, Any]) -> str:
    return (
        f"Session {row['session_id']} is new: live in terminal {row['terminal_pid']} since "
        f"{row['last_active']}, with no turn saved yet (nothing more to show)."
    )


@sessions.command("rm", short_help="Delete one session (never a live one).")
@click.argument("session_id", type=SESSION_ID, shell_complete=complete_session_ids)
@click.option(
    "--force",
    is_flag=True,
    help="Even if a running terminal may hold it (its session pointer cannot be read).",
)
@workspace_override
@click.pass_context
@one_line_errors
def sessions_rm(ctx: click.Context, session_id: str, force: bool, workspace: Path | None) -> None:
    """Delete one session (never a live one; ID: its 12 digits, or the first 4 or more)."""
    where = _workspace_if_any(ctx, workspace)
    session_id = full_id(session_id)
    with _not_found_hint(where, session_id):
        _in_any_project(
            lambda project: sessions_ops.remove_session(
                runtime_paths(), where, session_id, project, force
            ),
            where,
            session_id,
        )
    click.echo(f"Removed session {session_id}.")


@sessions.command("prune")
@click.option(
    "--older-than",
    "days",
    type=Days(),
    default="30",  # as typed: a float showed "[default: 30.0]"
    show_default=True,
    metavar="DAYS",
    help="Only sessions last active more than DAYS days ago.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
@click.option("--all", "every", is_flag=True, help="Every project, not just this workspace's.")
@workspace_override
@click.pass_context
@one_line_errors
def sessions_prune(
    ctx: click.Context, days: float, dry_run: bool, every: bool, workspace: Path | None
) -> None:
    """Delete orphaned sessions last active over DAYS days ago.

    Never a live or idle session.
    """
    data = sessions_ops.prune_sessions(
        runtime_paths(), None if every else _workspace(ctx, workspace), every, days, dry_run
    )
    for warning in data["warnings"]:
        _warn(warning)
    verb = "Would remove" if dry_run else "Removed"
    count = len(data["pruned"])
    sessions = f"{count} orphaned session{'' if count == 1 else 's'}"
    shown = f"{int(days):,}" if days == int(days) else f"{days:g}"  # not 1e+06
    unit = "day" if days == 1 else "days"
    # Not "idle for over": idle is a state prune never touches (a living tab's session).
    if count or not incomplete(data):
        _say(f"{verb} {sessions} last active over {shown} {unit} ago.")
    else:  # it could not look: a count of 0 would say there was nothing to remove
        what = "listed for removal" if dry_run else "removed"
        _say(sessions_ops.NOTHING_PRUNED_UNREAD.format(what=what))
    for row in data["pruned"]:
        _say(f"  {row['session_id']}  {row['project']}  {row['last_active']}")
    if leftovers := data.get("leftover_checkpoints", []):
        many = len(leftovers) != 1
        _say(
            f"{verb} the checkpoints of {len(leftovers)} session{'s' if many else ''} with no "
            "session file left (an interrupted rm, or a first turn that never completed):"
        )
        for item in leftovers:
            _say(f"  {item['session_id']}  {item['project']}")
    if copies := data.get("leftover_copies", []):
        many = len(copies) != 1
        _say(
            f"{verb} {len(copies)} cop{'ies' if many else 'y'} of session files a resume kept "
            f"aside, whose session file is gone (deleted by hand):"
        )
        for item in copies:
            _say(f"  {item['file']}  {item['project']}")
    if gone := data.get("gone_terminal_pointers", []):
        many = len(gone) != 1
        whose = "of terminals that are gone" if many else "of a terminal that is gone"
        each = "each names" if many else "it names"
        _say(
            f"{verb} {len(gone)} pointer{'s' if many else ''} {whose} ({each} the session "
            "its closed tab last used; the session stays):"
        )
        for item in gone:
            _say(f"  {item['file']}  {item['project']}  -> {item['session_id']}")
    if incomplete(data) or prune_failed(data):
        sys.exit(1)  # a file it could not read was left alone: as the listing says


# -- config ---------------------------------------------------------------------


@main.group(short_help="The settings and where each comes from.")
def config() -> None:
    """Settings: defaults < <root>/config.toml < environment < options."""


@config.command("show", short_help="Every setting, its value and its source.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@click.option(
    "--model",
    "-m",
    metavar="MODEL",
    default=None,
    help="Show the settings as with this --model.",
    shell_complete=complete_models,
)
@one_line_errors
def config_show(as_json: bool, model: str | None) -> None:
    """Every setting, its value and where it came from (default, file, env, option)."""
    from cli import config_cmd

    data = config_cmd.report({"model": model})
    click.echo(
        sessions_ops.dumps(data)
        if as_json
        else config_cmd.render(data, sessions_ops.screen_width())
    )
    for problem in config_cmd.sdk_problems(config_cmd.load({"model": model})):
        _warn(f"warning: a chat would refuse this: {problem}")


# -- supervisor -----------------------------------------------------------------


@main.group(short_help="The per-user daemon terminals attach to.")
def supervisor() -> None:
    """The per-user supervisor daemon that terminals attach to."""


@supervisor.command("run")
@one_line_errors
def supervisor_run() -> None:
    """Run the supervisor in the foreground (for systemd)."""
    from supervisor.daemon import AlreadyRunning, run_supervisor
    from supervisor.home import HOME_HELD_EXIT, HomeHeld

    try:
        run_supervisor(runtime_paths())
    except AlreadyRunning as exc:
        raise CommandError(str(exc)) from exc
    except HomeHeld as exc:
        _warn(f"error: {exc}")
        sys.exit(HOME_HELD_EXIT)


@supervisor.command("start")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON: status --json's, and started."
)
@one_line_errors
def supervisor_start(as_json: bool) -> None:
    """Start the supervisor in the background (if it is not running)."""
    info, started, problems, note = supervisor_cmd.start(runtime_paths())
    for problem in problems:
        _warn(f"warning: {problem}")
    if note is not None:
        _warn(note)
    if as_json:
        click.echo(sessions_ops.dumps({**info, "started": started}))
        return
    state = "started" if started else "already running"
    _say(f"supervisor {state} (pid {info['pid']}, socket {info['socket']})")


@supervisor.command("stop")
@click.option(
    "--json", "as_json", is_flag=True, help="Print JSON: running, stopped, pid, socket."
)
@one_line_errors
def supervisor_stop(as_json: bool) -> None:
    """Stop the supervisor after saving every live session."""
    paths = runtime_paths()
    pid = supervisor_cmd.stop(paths)
    if as_json:
        stopped = {"running": False, "stopped": pid is not None, "pid": pid}
        click.echo(sessions_ops.dumps({**stopped, "socket": str(paths.socket)}))
        return
    _say("supervisor is not running" if pid is None else f"supervisor stopped (pid {pid})")


@supervisor.command("status")
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@one_line_errors
def supervisor_status(as_json: bool) -> None:
    """Is the supervisor running? Exit status 0 if so, 3 if not."""
    info = supervisor_cmd.status(runtime_paths())
    if as_json:
        click.echo(sessions_ops.dumps(info))
    elif info["running"]:
        count = info["terminals"]
        terminals = f"{count} terminal{'' if count == 1 else 's'}"
        _say(f"running (pid {info['pid']}, {terminals} attached, socket {info['socket']})")
        _say(supervisor_cmd.version_line(info))
        from cli.upgrade import status_note

        if (note := status_note(info)) is not None:
            _warn(note)
        from cli.errors import relative_home_note
        from session.paths import state_root

        theirs, ours = info.get("state_root"), str(state_root().resolve())
        if theirs and theirs != ours:  # it runs, but refuses this home's chats and listings
            _warn(
                f"warning: it keeps sessions in {theirs}, not in {ours} "
                "(AGENT_ASSIST_HOME): chats and listings with this home are refused; "
                "stop it, or give this home its own AGENT_ASSIST_RUNTIME_DIR"
                + relative_home_note()
            )
    else:
        _say(f"not running (socket {info['socket']})")
    sys.exit(0 if info["running"] else NOT_RUNNING)


def run() -> None:
    """``main`` as a command line: errors click finds in the arguments are one line too
    (``error: ... (see 'agent-assist --help')``, exit status 2), not click's usage block."""
    use_whole_word_completion()
    try:
        code = main.main(standalone_mode=False)
    except click.exceptions.NoArgsIsHelpError as exc:  # `agent-assist config`: its help
        print(exc.format_message(), file=sys.stderr)
        sys.exit(exc.exit_code)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "agent-assist"
        message = " ".join(exc.format_message().split()).removesuffix(".")
        _warn(f"error: {message} (see '{where} --help')")
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        _warn(f"error: {' '.join(exc.format_message().split())}")
        sys.exit(exc.exit_code)
    except click.Abort:
        print("Aborted!", file=sys.stderr)
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)


if __name__ == "__main__":
    run()
