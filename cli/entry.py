"""The ``agent-assist`` console entry: one hot, read-only query skips click, the rest uses it.

``agent-assist sessions [--json] [--all]`` is what scripts and status bars
poll, and importing click alone costs more than the whole round trip to the
supervisor, so exactly that form is answered here with the same functions
and output as the click command. Anything else (other flags, ``--help``,
usage errors) goes to ``cli.main``.
"""

from __future__ import annotations

import os
import sys

QUICK_FLAGS = {"--json", "--all"}


def write_out(text: str) -> None:
    """``text`` and its newline on stdout in one write (``print`` makes two when stdout is
    unbuffered, ``PYTHONUNBUFFERED``: a reader that left after the first, as ``| head -1``
    does, then failed the second, and the command's status with it, now and then)."""
    sys.stdout.write(text + "\n")


def write_error(line: str) -> None:
    """An ``error:`` line on stderr, wrapped between words on a terminal narrower than
    it, as the click commands' error lines are (the terminal cut it inside a word)."""
    from cli.console import stderr_wrapped

    print(stderr_wrapped(line), file=sys.stderr)


def write_warnings(warnings: list[str]) -> None:
    """The listing's ``warning:`` lines on stderr, each wrapped as ``write_error``'s."""
    if warnings:
        from cli.console import stderr_wrapped

        for warning in warnings:
            print(stderr_wrapped(warning), file=sys.stderr)


def quick_sessions(flags: list[str]) -> int:
    from cli.errors import CommandError, as_error_line, current_directory, usable_workspace
    from cli.quick import incomplete

    every = "--all" in flags
    try:
        workspace = None if every else usable_workspace(current_directory())  # --all: none
    except CommandError as exc:
        write_error(as_error_line(str(exc)))
        return 1
    answering = True
    if "--json" in flags:
        from cli.quick import ask_for_sessions

        try:
            answer = ask_for_sessions(workspace, every)
        except TimeoutError:
            answer, answering = None, False
        if answer is not None:
            import json

            warnings = answer["warnings"]
            assert isinstance(warnings, list)  # checked by ask_for_sessions
            write_warnings([str(w) for w in warnings])
            from cli.printable import json_printable

            text = json.dumps(answer["sessions"], indent=2, ensure_ascii=False)
            write_out(json_printable(text))  # as ops.dumps
            return 1 if incomplete(answer) else 0
    from cli import sessions as ops
    from cli.errors import error_line
    from supervisor.runtime import runtime_paths

    try:
        data = ops.list_sessions(runtime_paths(), workspace, every, ask=answering)
    except Exception as exc:
        line = error_line(exc)
        if line is None:
            raise
        write_error(line)
        return 1
    write_warnings(data["warnings"])
    sessions = data["sessions"]
    whole = not incomplete(data)
    if "--json" in flags:
        write_out(ops.dumps(sessions))
    else:
        from pathlib import Path  # cli.sessions has it loaded

        elsewhere = (
            0 if sessions or workspace is None or not whole
            else ops.sessions_elsewhere(Path(workspace))
        )
        write_out(ops.render_table(sessions, every, elsewhere=elsewhere, whole=whole))
    return 0 if whole else 1


def quick_supervisor_run() -> int:
    """``agent-assist supervisor run`` without click: it is on the path of every cold start
    and every re-attach after a crash, where each import is waited for."""
    import gc

    gc.disable()  # imports build many objects and free few; run_supervisor enables it again
    from cli.errors import error_line
    from supervisor.daemon import AlreadyRunning, run_supervisor
    from supervisor.home import HOME_HELD_EXIT, HomeHeld
    from supervisor.runtime import runtime_paths

    try:
        run_supervisor(runtime_paths())
    except AlreadyRunning as exc:
        write_error(f"error: {exc}")
        return 1
    except HomeHeld as exc:
        write_error(f"error: {exc}")
        return HOME_HELD_EXIT
    except Exception as exc:
        line = error_line(exc)
        if line is None:
            raise
        write_error(line)
        return 1
    return 0


EXIT_BROKEN_PIPE = 1  # as click's own commands exit on a closed pipe


def dispatch() -> None:
    args = sys.argv[1:]
    if args[:1] == ["sessions"] and set(args[1:]) <= QUICK_FLAGS:
        sys.exit(quick_sessions(args[1:]))
    if args == ["supervisor", "run"]:
        sys.exit(quick_supervisor_run())
    from cli.main import run

    run()


def main() -> None:
    """Run the command; a reader that closed our stdout (``| head``) ends us quietly, and
    a stdout that cannot be written (a full disk, ``>/dev/full``) in one error line."""
    stand_in_for_closed_streams()
    try:
        try:
            dispatch()
        finally:
            sys.stdout.flush()  # here, not at exit, where a closed pipe cannot be caught
    except BrokenPipeError:
        silence_stdout()
        sys.exit(EXIT_BROKEN_PIPE)
    except OSError as exc:  # what the commands leave: writing their output, in practice
        silence_stdout()
        where = f"{exc.filename}: " if exc.filename else "cannot write the output: "
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        sys.exit(1)


def stand_in_for_closed_streams() -> None:
    """A standard stream the caller closed (``<&-``, ``>&-``) reads as empty and takes
    writes to nowhere, as ``/dev/null`` (Python leaves it None: every command failed
    with a traceback, and ``supervisor status`` lost its 0/3 exit status)."""
    for fd, name in ((0, "stdin"), (1, "stdout"), (2, "stderr")):
        if getattr(sys, name) is not None:
            continue
        null = os.open(os.devnull, os.O_RDWR)
        if null != fd:
            os.dup2(null, fd)
            os.close(null)
        setattr(sys, name, open(fd, "r" if fd == 0 else "w", closefd=False))  # noqa: SIM115


def silence_stdout() -> None:
    """Nothing more goes to stdout (what it holds would fail again at exit)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
