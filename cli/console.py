"""Terminal input and output: prompt_toolkit on a TTY, one line per message when piped.

Replies go to stdout; everything else (questions, notices, command results) goes
to stdout only when it is a terminal, else to stderr, so a piped stdout carries
replies only. Colour and escapes only on a terminal without ``NO_COLOR``.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, Protocol, TextIO

from cli.printable import StreamPrintable, printable

SLASH_COMMANDS = {
    "/save": "save the session now",
    "/reset": "forget this session and start a new one",
    "/new": "same as /reset",
    "/checkpoint": "list checkpoints, or restore checkpoint N",
    "/compact": "compact the history now",
    "/resume": "show the resume context given to the assistant",
    "/model": "show the model in use",
    "/help": "the commands and keys",
    "/exit": "leave (the session is saved)",
}
LONG_TYPED_BYTES = 1024
"""Keys typed ahead of a reply, waiting in the terminal's input, that ``wait_readable``
takes off it: a paste (what anyone types by hand during a reply stays shorter)."""
TYPED_POLL_S = 0.05
"""How often a reply's wait looks at keys that wait in the terminal's input."""


def other_choices(choices: int) -> str:
    """How the numbers of the other sessions are named: ``2`` or ``2-N``."""
    return "2" if choices == 2 else f"2-{choices}"


def _continuation(width: int, line_number: int, wrap_count: int) -> str:
    """The start of the prompt's rows after its first: ``. `` begins a new line of the
    message (Alt+Enter); a row that only wraps a line too long for the screen begins
    with spaces (a mark there read as a period and a space in the text)."""
    return " " * width if wrap_count else "." * (width - 1) + " "


class Cancelled(Exception):
    """The user pressed Ctrl+C (or Ctrl+D) at a question: what it guards does not happen."""


class Interrupted(Cancelled):
    """Cancelled by Ctrl+C (not Ctrl+D): a run it ends exits as interrupted (130)."""


class UnclearAnswer(Exception):
    """Piped input gave a line that is not y/yes/n/no/empty where an answer was expected."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.answer = answer


class IdleWatcher(Protocol):
    def start(self, end_prompt: Callable[[], object]) -> None: ...

    def stop(self) -> None: ...


class ReplyView(Protocol):
    """How one streamed reply appears: a spinner until text, text, tool-call lines."""

    held_back: bool
    """The text is held until the reply ends (a piped run: stdout gets whole replies)."""
    whole_across_notices: bool
    """A notice that comes meanwhile does not cut the text: it is on stderr while the
    text is held back, or drawn above the reply's unfinished paragraph (a colour
    terminal's live view); else the view ends, and the reply goes on in a new one."""

    def write(self, text: str) -> None: ...

    def tool(self, line: str) -> None: ...

    def end(self) -> None: ...

    def hidden(self) -> contextlib.AbstractContextManager[None]:
        """While the chat is stopped (Ctrl+Z): off the screen, what will be drawn again
        once it is continued (``fg``), so that the shell's lines go below what stays."""
        ...

    def cut(self) -> bool:
        """The supervisor went away mid-reply and the reply is asked for again: end this
        view, dropping what it holds back (a piped run's text; a terminal's is shown).
        Whether some of the reply stays on the screen (its text, a tool line): cut, it
        must be marked so, or it reads as a whole reply."""
        ...


def _end(app: Any) -> None:
    """End a prompt from another thread, unless it has ended already (its loop is gone)."""
    loop = app.loop
    if loop is not None:
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(app.exit)


def private_history_file(path: Path) -> Path:
    """Create ``path`` (and its directory, 0700) as a 0600 file; tighten it if it exists."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    os.close(fd)
    os.chmod(path, 0o600)
    return path


class HistoryScrubber:
    """Scrubs the lines of the input history as the session scrubs its messages: a value
    a pattern finds in a line that looks generated is a secret from then on, while this
    chat runs, replaced in the later lines and in those the file already holds."""

    def __init__(self, known: tuple[str, ...]) -> None:
        self.known = known
        self.found_earlier: tuple[str, ...] = ()
        """The values the last line revealed that earlier lines may hold (longest first)."""
        self.pending: tuple[str, ...] = ()
        """Values a failed rewrite left in the file: scrubbed again at the next line."""
        self.left: str | None = None
        """The line telling that the file keeps a secret, until the chat tells it (once)."""
        self._previous = ""

    def line(self, text: str) -> str:
        from session.redaction import (
            continued_secret,
            cut_token_head,
            longest_first,
            revealed,
            scrub_text,
        )

        continued = continued_secret(self._previous, text, self.known)
        head = None if continued is None else cut_token_head(self._previous)
        if continued is not None:  # the rest of a key cut between two lines
            self.known = longest_first((*self.known, continued))
        self._previous = text
        scrubbed = scrub_text(text, self.known)
        found = tuple(value for value in revealed(text, scrubbed) if value not in self.known)
        if head is not None and head not in self.known:  # the earlier line holds it
            found = (*found, head)
        self.found_earlier = longest_first(found)
        if found:
            self.known = longest_first((*self.known, *found))
        return scrubbed

    def scrub_file(self, path: Path) -> None:
        """Replace ``found_earlier`` (and ``pending``) in the history file's earlier lines
        (rewritten atomically, 0600). A file that cannot be read or written is left as it
        is, the values kept for the next line's try, and ``left`` says so (H170: a secret
        stayed there in plain text without a word)."""
        from session.atomic import atomic_write
        from session.redaction import longest_first, replace_known

        values = longest_first((*self.pending, *self.found_earlier))
        try:
            text = path.read_text(encoding="utf-8")
            scrubbed = replace_known(text, values)
            if scrubbed != text:
                atomic_write(path, scrubbed.encode("utf-8"))
        except (OSError, UnicodeDecodeError) as exc:
            if not self.pending:  # told once, until a try works
                why = (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
                self.left = (
                    f"error: a secret stays in plain text in {path} ({why}); tried again "
                    "at the next line"
                )
            self.pending = values
            return
        self.pending = ()


class PlainReply:
    """Reply text written as it arrives; tool lines on their own line (no escapes).

    ``hold`` (a piped run): the text is held until the reply ends, so that a reply cut
    by the supervisor's death and given again whole is not on stdout twice, once cut."""

    def __init__(self, out: TextIO, side: TextIO, hold: bool = False) -> None:
        self._out = out
        self._side = side
        self._printable = StreamPrintable()
        """No control sequence reaches the terminal, a pipe or a file (a ``cat`` of it
        later would run them)."""
        self._held: list[str] | None = [] if hold else None
        self.held_back = self.whole_across_notices = hold
        self._wrote = False
        self._at_line_start = True
        self._shown = False
        """Whether some of this reply was shown (text not held back, a tool line)."""

    def write(self, text: str) -> None:
        self._shown = self._shown or (self._held is None and bool(text))
        if self._held is not None:
            self._held.append(text)
        else:
            self._out.write(self._printable.feed(text))
            self._out.flush()
        self._wrote = True
        self._at_line_start = text.endswith("\n")

    def cut(self) -> bool:
        if self._held is not None:
            self._held.clear()
            self._wrote, self._at_line_start = False, True
        self.end()
        return self._shown

    def _release(self) -> None:
        if self._held:
            self._out.write(printable("".join(self._held)))
            self._held.clear()
        self._out.write(self._printable.flush())

    def tool(self, line: str) -> None:
        if self._side is self._out:
            self._release()  # in order, where tool lines share stdout
        if not self._at_line_start and self._side is self._out:
            self._out.write("\n")
            self._at_line_start = True
        self._side.write(f"  {printable(line)}\n")
        self._side.flush()
        self._shown = True

    def hidden(self) -> contextlib.AbstractContextManager[None]:
        """Nothing to hide: what was written stays, and the rest follows it."""
        return contextlib.nullcontext()

    def end(self) -> None:
        self._release()
        if self._wrote and not self._at_line_start:
            self._out.write("\n")
        self._out.flush()
        self._wrote = False


WIDE_MARKS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
              (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))
"""Byte order marks of the wider Unicode encodings, longest first, and their codec."""


def wide_input() -> TextIO | None:
    """Piped input that begins with a UTF-16 or UTF-32 byte order mark (a script Windows
    PowerShell's ``Out-File`` or ``>`` saved): a reader of its text, the mark dropped (read
    as UTF-8, every other byte a NUL was sent to the model). None for any other input."""
    peek = getattr(getattr(sys.stdin, "buffer", None), "peek", None)
    if peek is None:
        return None
    head = peek(4)[:4]
    for mark, codec in WIDE_MARKS:
        if head.startswith(mark):
            return io.TextIOWrapper(sys.stdin.buffer, encoding=codec, errors="replace")
    return None


class Console:
    def __init__(
        self,
        interactive: bool | None = None,
        history: Path | None = None,
        toolbar: Callable[[], str] | None = None,
    ) -> None:
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self._piped_read = False
        """A line was read from the piped input (the first may begin with a byte order mark)."""
        self._piped: TextIO = sys.stdin
        """What piped lines are read from: stdin, or its UTF-16/32 reading (``wide_input``)."""
        self.out_tty = sys.stdout.isatty()
        self.color = (
            self.out_tty and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"
        )
        self.history = history
        self.toolbar = toolbar
        self._prompt: Any = None
        self._questions: Any = None
        self._question = ""
        """The question being asked (``ask_yes_no``), said again after a Ctrl+Z."""
        self._dumb_prompt: tuple[Any, str] | None = None
        """On a dumb terminal, the prompt that reads keys and the message written for it:
        drawn again after a stop (prompt_toolkit's dumb prompt draws nothing again)."""
        self._ask_again = False
        """A stop came while the question was asked and its prompt was not up (a Ctrl+Z
        the terminal made a signal, ``kill -TSTP``): it is said again before the prompt."""
        self._view: ReplyView | None = None
        """The reply view drawn last (``reply``): hidden before a Ctrl+Z stops the chat."""
        self.late_interrupt = False
        """A Ctrl+C typed right after Enter, read by the prompt with it (for the reply)."""
        self._held: list[str] = []
        """Lines typed ahead of a reply a Ctrl+C cancelled: each starts a prompt, unsent."""
        self._typed_ahead = ""
        """Keys read from the terminal's input before their prompt (see
        ``interrupted_after_enter``): its first line starts the next prompt."""
        self._drained = b""
        """A long paste taken off the terminal's input while a reply streamed
        (``wait_readable``), for the next prompt."""
        self._held_from: list[Any] | None = None
        """The terminal's settings before the chat held the keys typed (``keys_held``),
        given back to the shell at a stop, a quit and the end: None when not held."""
        self._typed_before_hold = b""
        """Keys typed before the hold: taken off the terminal's input (its line editing
        had made a Ctrl+D on an empty line a NUL), and off the screen (echoed), for the
        next prompt or question to read and draw, as if typed there."""
        self.waiting: Callable[[], contextlib.AbstractContextManager[None]] = (
            contextlib.nullcontext
        )
        """Where a piped read waits (the chat's ``DeferredInterrupts.interruptible``: Ctrl+C
        ends that wait, and is held anywhere else)."""

    @property
    def info_stream(self) -> TextIO:
        """Where lines that are not replies go: stdout on a terminal, else stderr."""
        return sys.stdout if self.out_tty else sys.stderr

    # -- input ----------------------------------------------------------------

    def _ui_output(self) -> Any:
        """Where prompt_toolkit draws the prompt, toolbar and echo: stdout on a terminal,
        else stderr (``agent-assist > out.txt`` keeps replies only in the file)."""
        if self.out_tty:
            return None  # prompt_toolkit's default, stdout
        from prompt_toolkit.output import create_output

        return create_output(stdout=sys.stderr)

    def _session(self) -> Any:
        if self._prompt is None:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.history import InMemoryHistory
            from prompt_toolkit.key_binding import KeyBindings

            from cli.history_file import ScrubbedHistory
            from session.redaction import secrets_from_environment

            keys = KeyBindings()

            @keys.add("c-c", eager=True)
            def _(event: Any) -> None:
                """A typed line is cleared; only at an empty prompt does Ctrl+C leave. Right
                after Enter (read with it), it is for the reply to come: kept for it."""
                buffer = event.current_buffer
                if event.app.is_done:
                    self.late_interrupt = True
                elif buffer.text:
                    buffer.reset()
                else:
                    event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

            @keys.add("c-l")
            def _(event: Any) -> None:
                """Ctrl+L clears the screen and draws the prompt again on its second row.
                On the first, each redraw of the prompt (the next Enter's included) began
                with an erase down from the top-left corner, which tmux takes for a clear
                screen and keeps in its scrollback: a stale toolbar each time (H108)."""
                clear_screen_below_first_row(event.app)

            @keys.add("escape", "enter")
            def _(event: Any) -> None:
                """Alt+Enter (Esc Enter): a new line in the message; Enter sends. (Not Ctrl+J:
                an Enter typed before the prompt is up arrives as Ctrl+J.)"""
                event.current_buffer.insert_text("\n")

            @keys.add("c-z")
            def _(event: Any) -> None:
                """Ctrl+Z stops the chat (its process group, as prompt_toolkit's own does),
                whatever handles SIGTSTP meanwhile (``_stops_drawn_again``)."""
                self._stop_at_prompt(group=True)

            history: Any = (
                ScrubbedHistory(
                    private_history_file(self.history),
                    HistoryScrubber(secrets_from_environment()),
                )
                if self.history is not None
                else InMemoryHistory()
            )
            self._prompt = PromptSession(
                history=history,
                completer=slash_completer(),
                complete_while_typing=True,
                key_bindings=keys,
                prompt_continuation=_continuation,
                bottom_toolbar=self._toolbar_text if self.toolbar else None,
                output=self._ui_output(),
            )
            _quiet_about_cpr(self._prompt)
        return self._prompt

    def _toolbar_text(self) -> str:
        return self.toolbar() if self.toolbar else ""

    def interrupted_after_enter(self) -> bool:
        """On a terminal, right after the prompt returned: whether a Ctrl+C came with the
        Enter. One the prompt read with it is ``late_interrupt``; one typed just after
        the prompt stopped reading sits in the terminal's input as a byte (it was typed
        in the prompt's raw mode: no signal), and the next prompt would read it as
        Ctrl+C at an empty prompt and leave. What else waits there is kept for the next
        prompt, as typed (a Ctrl+C drops it, as the terminal's own does)."""
        late, self.late_interrupt = self.late_interrupt, False
        if not self.interactive:
            return late
        if self._prompt is not None:  # keys the prompt read after the Enter, kept by it
            from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead

            keys = get_typeahead(self._prompt.input)
            if any(key.key == "c-c" for key in keys):
                return True  # dropped with it, as the terminal's own Ctrl+C does
            store_typeahead(self._prompt.input, keys)
        data = _waiting_input()
        if b"\x03" in data:
            self._typed_ahead = ""
            return True
        self._typed_ahead += data.decode("utf-8", "replace")
        return late

    def hold_typed_ahead(self) -> None:
        """A Ctrl+C cancelled the reply: the lines typed ahead while it streamed (kept in
        the terminal's input: ``keys_unechoed`` sets NOFLSH) are not sent by themselves;
        each waits at a prompt of its own, for Enter."""
        if not self.interactive:
            return
        kept = ""
        if self._prompt is not None:  # keys the prompt read with the message's Enter and
            # kept for the next prompt (``interrupted_after_enter``), which would send them
            from prompt_toolkit.input.typeahead import get_typeahead

            kept = "".join(map(_key_typed, get_typeahead(self._prompt.input)))
        typed = kept + self._typed_ahead + self._take_waiting()
        self._typed_ahead = ""
        entries = typed_entries(typed)
        self._held.extend(text for text, e in entries if text.strip() and (text, e) != END_OF_INPUT)

    def take_unsent(self) -> list[str]:
        """The chat ends without the user asking (its supervisor stopped, a SIGTERM): each
        line typed ahead for it and not sent, taken off the terminal's input (left there,
        the shell read and ran each as a command) and kept in the input history (Up)."""
        if not self.interactive:
            return []
        typed = self._typed_before_hold.decode("utf-8", "replace") + self._typed_ahead
        self._typed_before_hold, self._typed_ahead = b"", ""
        if self._prompt is not None:  # keys the prompt read after its Enter, kept by it
            from prompt_toolkit.input.typeahead import get_typeahead

            typed = "".join(map(_key_typed, get_typeahead(self._prompt.input))) + typed
        with contextlib.suppress(OSError):  # a hung-up terminal has nothing to take
            typed += self._take_waiting()
        unsent = [*self._held, *(text for text, _ in typed_entries(typed) if text.strip())]
        self._held.clear()
        if self._prompt is not None:
            for text in unsent:
                with contextlib.suppress(OSError):
                    self._prompt.history.append_string(text)
        return unsent

    def _take_waiting(self) -> str:
        """What was typed ahead and not read yet: the long paste taken off the terminal
        during the reply, then what waits in its input."""
        data, self._drained = self._drained + _waiting_input(), b""
        return data.decode("utf-8", "replace")

    def wait_readable(self, fd: int) -> bool:
        """Wait until ``fd`` (the supervisor's connection) has something to read (True) or,
        on a terminal, over ``LONG_TYPED_BYTES`` typed ahead wait in its input (False): a
        paste, for ``take_typed_ahead``, since a full input queue (4,096 bytes) holds a
        Ctrl+C typed after it as a byte behind the rest, no signal. Shorter type-ahead
        stays in the terminal's input for the next prompt."""
        import select

        typing = sys.stdin.fileno() if self.interactive else None
        while True:
            waiting = 0 if typing is None else _bytes_waiting(typing)
            if waiting >= LONG_TYPED_BYTES:
                return False
            # Typing wakes this wait only while none waits (then the terminal stays
            # readable): keys that wait are looked at again every TYPED_POLL_S.
            watched = [fd] if typing is None or waiting else [fd, typing]
            ready, _, _ = select.select(watched, [], [], TYPED_POLL_S if waiting else None)
            if fd in ready:
                return True
            if typing in ready and not _bytes_waiting(typing):
                typing = None  # readable with nothing to read: hung up

    def take_typed_ahead(self) -> None:
        """Take what was typed ahead off the terminal's input, for the next prompt."""
        self._drained += _waiting_input()

    def read_line(self, prompt: str = "> ", idle: IdleWatcher | None = None) -> str | None:
        """One message; None at end of input. KeyboardInterrupt: Ctrl+C at an empty prompt.

        On a terminal, ``idle`` runs while the prompt waits: what it prints appears
        above the prompt, and it may end the prompt (as end of input).
        """
        if self.interactive:
            from prompt_toolkit.patch_stdout import patch_stdout

            session = self._session()  # before patch_stdout: it draws on stderr, unpatched
            with self._stops_drawn_again(), patch_stdout():
                if idle is not None:
                    idle.start(lambda: _end(session.app))
                if self._held:  # typed ahead of a cancelled reply: shown, not sent
                    line, enter = self._held.pop(0), False
                else:
                    entries = typed_entries(self._typed_ahead)
                    line, enter = entries.pop(0) if entries else ("", False)
                    if (line, enter) == END_OF_INPUT:  # read as typed at the prompt
                        _give_keys(session, "\x04")
                        line, entries = "", []
                    # after this line: for the prompt after it
                    self._typed_ahead = "".join(map(_as_typed, entries))
                try:
                    text: str | None = self._read_with(
                        session,
                        _showing(prompt, line),
                        default=line,
                        accept_default=bool(enter and line),
                    )
                except EOFError:
                    text = None
                finally:
                    if idle is not None:
                        idle.stop()
            self._tell_history_left(session)
            return text
        with self.waiting():
            if not self._piped_read:  # a script saved as UTF-16 is read as it was written
                self._piped = wide_input() or sys.stdin
            line = self._piped.readline()
        if not line:
            return None
        if not self._piped_read:  # a script saved with a byte order mark (Notepad's): the
            line = line.removeprefix("\ufeff")  # mark is no part of its first line
            self._piped_read = True
        # Bytes that are not UTF-8 reach us as lone surrogates, which no frame can carry:
        # each becomes U+FFFD, as a terminal shows them.
        return line.encode("utf-8", "surrogateescape").decode("utf-8", "replace").rstrip("\n")

    def _tell_history_left(self, session: Any) -> None:
        """The line of a secret the input history's rewrite left in it, once, if any."""
        scrubber = getattr(session.history, "scrubber", None)
        if isinstance(scrubber, HistoryScrubber) and scrubber.left is not None:
            line, scrubber.left = scrubber.left, None
            self.warn(line)

    def _read_answer(self, idle: IdleWatcher | None = None) -> str | None:
        """An answer line. On a terminal Ctrl+C and Ctrl+D raise Cancelled; ``idle`` runs
        while the question waits (what it prints appears above it)."""
        if not self.interactive:
            return self.read_line()
        if self._questions is None:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.key_binding import KeyBindings

            keys = KeyBindings()

            @keys.add("c-z")
            def _(event: Any) -> None:
                """Ctrl+Z stops the chat at a question as at the prompt (a key there, not a
                signal: without this, a literal ^Z went into the answer). After ``fg`` the
                question is asked again above its ``>``, which alone prompt_toolkit
                redraws: the shell's lines had pushed the question out of sight."""
                self._stop_at_prompt(group=True)

            self._questions = _quiet_about_cpr(
                PromptSession(key_bindings=keys, output=self._ui_output())
            )
        from prompt_toolkit.patch_stdout import patch_stdout

        questions = self._questions
        with patch_stdout():
            if idle is not None:
                idle.start(lambda: _end(questions.app))
            try:
                self._say_again_if_stopped()
                answer: str = self._read_with(questions, "> ", pre_run=self._say_again_if_stopped)
            except KeyboardInterrupt:
                raise Interrupted from None
            except EOFError:
                raise Cancelled from None
            finally:
                if idle is not None:
                    idle.stop()
        return answer

    def _read_with(self, session: Any, message: str, **options: Any) -> Any:
        """``session.prompt(message, **options)``. On a dumb terminal the message is shown
        only once the prompt reads keys one by one: prompt_toolkit's dumb prompt writes it
        before it leaves the terminal's line editing, and a Ctrl+D typed as it appeared
        was taken by that editing as the end of an empty line (a NUL to the prompt): lost.
        """
        from prompt_toolkit.utils import is_dumb_terminal

        self._give_typed_before_hold(session)
        try:
            if not (self.out_tty and is_dumb_terminal()):  # else the prompt draws its own
                return session.prompt(message, **options)
            with session.input.raw_mode():
                session.output.write(message)
                session.output.flush()
                self._dumb_prompt = (session, message)
                return session.prompt("", **options)
        finally:
            self._dumb_prompt = None
            if self._held_from is not None:  # the prompt's end turned it off
                self._pastes_bracketed(True)

    def _stop_at_prompt(self, group: bool) -> None:
        """From the running prompt's loop: stop the chat (``group``: its process group, as
        prompt_toolkit's own Ctrl+Z does), the prompt taken off the screen; once continued
        the question is said again, if one is asked, and the prompt drawn again. On a dumb
        terminal, whose prompt draws only what is typed next (the ``>`` and the text typed
        at it were gone, H119), both are written once it reads keys again."""
        import asyncio

        from prompt_toolkit.application import run_in_terminal

        dumb = self._dumb_prompt
        stopped = asyncio.ensure_future(  # a future already: typed as one
            run_in_terminal(lambda: self._stop_then_ask_again(group, dumb is None))
        )
        if dumb is not None:
            stopped.add_done_callback(lambda _: self._write_again(*dumb))

    def _stop_then_ask_again(self, group: bool, ask: bool) -> None:
        self._give_back()  # not the prompt's cooked mode (made from its raw one: -ixon)
        stop_here(group)
        if self._question and ask:
            self.say(self._question)

    def _write_again(self, session: Any, message: str) -> None:
        """A dumb terminal's question and prompt, with what was typed at it."""
        question = self._said(self._question) + "\n" if self._question else ""
        session.output.write(question + message + session.default_buffer.text)
        session.output.flush()

    def _say_again_if_stopped(self) -> None:
        """Before the question's prompt is drawn: the question again, if a stop came
        since it was said (the shell's lines are below it now)."""
        if self._ask_again:
            self._ask_again = False
            self.say(self._question)

    @contextlib.contextmanager
    def _stops_drawn_again(self) -> Iterator[None]:
        """While a prompt or a question is up (on a terminal): SIGTSTP as a signal, not a
        key (``kill -TSTP``; a Ctrl+Z typed before the prompt reads keys), stops the
        chat as the prompt's Ctrl+Z does, and after ``fg`` the prompt, and the question
        above it, are drawn again (by default nothing was: the shell's lines stayed
        under a question out of sight, and the prompt's ``>`` was not drawn at all).
        A SIGTSTP handled by another (a reply's, see ``keys_unechoed``) or ignored by
        the user's shell is left as it is."""
        import signal

        if not self.interactive:
            yield
            return
        with _handling(signal.SIGTSTP, self._stop_signalled):
            yield

    def _stop_signalled(self, signum: int, frame: object) -> None:
        """SIGTSTP came: with a prompt up, it is stopped from the prompt's loop, which
        takes the prompt off the screen first and draws it again after ``fg``; before
        it is up (or once it ended), at once, and a question is said again before its
        prompt (``_say_again_if_stopped``)."""
        app = self._running_prompt()
        if app is None:
            with self._terminal_given_back():
                stop_here(group=False)
            self._ask_again = bool(self._question)
            return
        app.loop.call_soon_threadsafe(self._stop_at_prompt, False)

    def _running_prompt(self) -> Any:
        """The prompt_toolkit application running now (the question's or the message's),
        if its loop is there to stop it from."""
        for session in (self._questions, self._prompt):
            if session is not None and session.app.is_running and session.app.loop is not None:
                return session.app
        return None

    @contextlib.contextmanager
    def keys_held(self) -> Iterator[None]:
        """The whole chat (attaching, a cold supervisor's start, the resume question, and
        from each prompt to the next): what the user types outside a prompt is not echoed
        by the terminal, and waits in its input as typed, not as its line editing reads
        it, for the next prompt (or question) to read. Echoed, a text typed ahead was on
        the screen twice, the terminal's echo and the prompt's, a Ctrl+D was that
        editing's end of an empty line, a NUL to the prompt: lost, and a Ctrl+C right
        after Enter showed as ``^C``. Ctrl+C is still a signal. Each prompt finds the
        terminal held and leaves it so; a stop (Ctrl+Z, then ``fg`` holds the keys
        again), a quit (Ctrl+\\) and the end give the shell the terminal as it was."""
        if not self.interactive:
            yield
            return
        self._hold()
        try:
            with self._stops_drawn_again(), self._quits_give_back():
                yield
        finally:
            self.let_go()

    @contextlib.contextmanager
    def _quits_give_back(self) -> Iterator[None]:
        """SIGQUIT (Ctrl+\\ outside a prompt) quits the chat with the terminal as the
        shell left it, what was typed ahead dropped with the chat (no shell command); one
        the user's shell ignores is left as it is."""
        import signal

        with _handling(signal.SIGQUIT, self._quit_signalled):
            yield

    def _quit_signalled(self, signum: int, frame: object) -> None:
        import signal

        with contextlib.suppress(OSError):
            _waiting_input()  # the chat's, gone with it
        self.let_go()
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGQUIT)

    def _stand_ins(self) -> tuple[object, ...]:
        """The handlers of the hold that a reply's own (``keys_unechoed``) stands in for."""
        return (self._stop_signalled, self._quit_signalled)

    def _hold(self) -> None:
        import termios

        try:
            saved = termios.tcgetattr(sys.stdin)
        except (termios.error, OSError, ValueError):
            return
        held = list(saved)
        held[3] &= ~(termios.ECHO | termios.ECHONL | termios.ICANON)
        # A Ctrl+C, Ctrl+Z or Ctrl+\ outside a prompt flushes nothing: neither the keys
        # typed ahead nor what the chat wrote and the terminal has not shown yet (a reply's
        # end, when a Ctrl+C reached the chat just after it: H201).
        held[3] |= termios.NOFLSH
        held[6] = list(held[6])
        held[6][termios.VMIN], held[6][termios.VTIME] = 1, 0
        try:
            termios.tcsetattr(sys.stdin, termios.TCSANOW, held)  # NOW: keep what was typed
        except (termios.error, OSError):
            return
        self._held_from = saved
        self._pastes_bracketed(True)
        typed = _waiting_input()  # all typed before the hold: echoed
        if typed:
            self._typed_before_hold += typed
            if os.environ.get("TERM") != "dumb":
                rows = _echo_rows(typed.decode("utf-8", "replace"), self._echo_width())
                # Row by row: an erase down from the screen's top-left corner is a clear
                # screen to tmux, which keeps the screen in its scrollback, echo included.
                _write_control(self._ui_fd(), "\r\x1b[K" + "\x1b[A\x1b[K" * rows)

    def _pastes_bracketed(self, on: bool) -> None:
        """While the keys are held (``on``), the terminal is asked to bracket a paste, as
        a prompt asks it: lines pasted outside a prompt (as the chat starts, between two
        prompts) wait whole for the next one, as one message; unbracketed, the terminal
        sent each with its Enter, and each was sent as a message of its own (a ``/save``
        among them run). A prompt's end and a reply's end turn it off: they ask again."""
        if os.environ.get("TERM") != "dumb":
            _write_control(self._ui_fd(), BRACKETED_PASTE_ON if on else BRACKETED_PASTE_OFF)

    def _echo_width(self) -> int:
        import shutil

        return shutil.get_terminal_size().columns

    def _give_typed_before_hold(self, session: Any) -> None:
        """The keys typed before the hold, first in what ``session``'s prompt reads (a NUL
        its line editing made of a Ctrl+D is that Ctrl+D again)."""
        typed, self._typed_before_hold = self._typed_before_hold, b""
        if typed:
            _give_keys(session, typed.replace(b"\0", b"\x04").decode("utf-8", "replace"))

    def _give_back(self) -> None:
        """The terminal's settings as they were before the hold, the hold kept (for a
        stop: whatever sets the terminal again after ``fg`` sets it held)."""
        import termios

        if self._held_from is not None:
            self._pastes_bracketed(False)
            with contextlib.suppress(termios.error, OSError, ValueError):
                termios.tcsetattr(sys.stdin, termios.TCSANOW, self._held_from)

    def let_go(self) -> None:
        """End the hold of ``keys_held``: the terminal's settings as they were."""
        import termios

        saved, self._held_from = self._held_from, None
        if saved is not None:
            self._pastes_bracketed(False)
            with contextlib.suppress(termios.error, OSError, ValueError):
                termios.tcsetattr(sys.stdin, termios.TCSANOW, saved)

    @contextlib.contextmanager
    def _terminal_given_back(self) -> Iterator[None]:
        """While the chat is stopped: the terminal as the shell left it, if it is held."""
        if self._held_from is None:
            yield
            return
        self.let_go()
        try:
            yield
        finally:
            self._hold()

    def ask_yes_no(
        self, question: str, default: bool, choices: int = 0, idle: IdleWatcher | None = None
    ) -> bool | int:
        """Say ``question`` and read its answer (see ``_ask_yes_no``). On a terminal, after
        a stop at any moment of it (Ctrl+Z, ``kill -TSTP``) and ``fg``, the question is
        said again above its prompt."""
        with self._stops_drawn_again():
            self._question = question
            try:
                self.say(question)
                return self._ask_yes_no(default, choices, idle)
            finally:
                self._question = ""
                self._ask_again = False

    def _ask_yes_no(
        self, default: bool, choices: int = 0, idle: IdleWatcher | None = None
    ) -> bool | int:
        """Read an answer (the question was printed); an empty line is ``default``.

        With ``choices``, a number from 2 to ``choices`` is also an answer (returned as
        an int). End of input (piped, or Ctrl+D on a terminal) and Ctrl+C cancel the
        question (Cancelled): what it guards does not happen.
        """
        while True:
            line = self._read_answer(idle)
            if line is None:
                raise Cancelled
            answer = line.strip().lower()
            if not answer:
                return default
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False
            if (
                choices
                and answer.isascii()
                and answer.isdigit()
                and len(answer) < 10
                and (1 <= int(answer) <= choices)
            ):
                return True if int(answer) == 1 else int(answer)
            if not self.interactive:
                raise UnclearAnswer(line.strip())  # quoted as typed
            self.say(
                "Please answer y or n" + (f", or {other_choices(choices)}." if choices > 1 else ".")
            )

    # -- output ---------------------------------------------------------------

    def width(self) -> int | None:
        """The terminal's width in columns when stdout is one, else None."""
        if not self.out_tty:
            return None
        import shutil

        return shutil.get_terminal_size().columns

    def info_width(self) -> int | None:
        """The width in columns of the terminal ``say``'s lines are drawn on (stdout's,
        else stderr's when stdout is redirected), or None when that is no terminal."""
        if not self.out_tty:
            return _stderr_width(False)
        import shutil

        return shutil.get_terminal_size().columns

    def say(self, text: str) -> None:
        """A line for the user that is not a reply (questions, command results); on a
        terminal, lines wider than it wrap between words (``/help`` at 40 columns)."""
        print(self._said(text), file=self.info_stream, flush=True)

    def _said(self, text: str) -> str:
        """``text`` as ``say`` writes it."""
        if (width := self.info_width()) is not None:
            text = word_wrap(text, width)
        return printable(text)

    def warn(self, text: str) -> None:
        """A diagnostic line on stderr; on a terminal, wider than it, wrapped between words
        as ``say``'s lines (the terminal's own wrap cut it inside a word). One that fits
        stays one line, as written."""
        if (width := _stderr_width(self.out_tty)) is not None:
            text = word_wrap(text, width)
        print(printable(text), file=sys.stderr, flush=True)

    @contextlib.contextmanager
    def keys_unechoed(self) -> Iterator[None]:
        """While a reply streams: what the user types is not echoed over it, and stays
        in the terminal's input queue, so the next prompt starts with it (type-ahead).
        Ctrl+C still interrupts (signals are left on)."""
        if not self.interactive:
            yield
            return
        import termios

        try:
            saved = termios.tcgetattr(sys.stdin)
        except (termios.error, OSError):
            yield
            return
        quiet = list(saved)
        # Not line by line either: the terminal's line editing keeps no more than 4,095
        # characters of a line (the rest of a longer one typed or pasted meanwhile was
        # dropped, untold); the prompt edits what was typed as it reads it.
        quiet[3] &= ~(termios.ECHO | termios.ECHONL | termios.ICANON)
        quiet[3] |= termios.NOFLSH  # a Ctrl+C cancelling the reply keeps what was typed
        # A paste is told from typed lines as at the prompt (bracketed): its lines are
        # one message that waits for Enter, not one message each.
        bracketed = self._ui_fd() if os.environ.get("TERM") != "dumb" else None

        def quieten() -> None:
            termios.tcsetattr(sys.stdin, termios.TCSANOW, quiet)  # NOW: keep what was typed
            _write_control(bracketed, BRACKETED_PASTE_ON)

        def restore() -> None:
            _write_control(bracketed, BRACKETED_PASTE_OFF)
            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(sys.stdin, termios.TCSANOW, saved)

        def give_back() -> None:  # to the shell: as it was before the chat held the keys
            restore()
            self._give_back()

        def keep_typed() -> None:  # not the shell's to read (and run) while stopped
            self._typed_ahead += self._take_waiting()

        def reply_hidden() -> contextlib.AbstractContextManager[None]:
            return contextlib.nullcontext() if self._view is None else self._view.hidden()

        with _terminal_restored_on_stop(
            give_back, quieten, keep_typed, reply_hidden, self._stand_ins()
        ):
            try:
                quieten()
                yield
            finally:
                if self._drained:  # the rest of a long paste goes with what was taken
                    self._typed_ahead += self._take_waiting()
                restore()
                if self._held_from is not None:  # held still: pastes bracketed still
                    self._pastes_bracketed(True)

    def _ui_fd(self) -> int | None:
        """The terminal prompt_toolkit draws on (see ``_ui_output``), if it is one: its
        file descriptor, written to as is (the live view of a reply redirects
        ``sys.stdout`` and prints what is written there as a line of its own)."""
        fd = 1 if self.out_tty else 2
        try:
            return fd if os.isatty(fd) else None
        except OSError:
            return None

    def reply(self) -> ReplyView:
        """A view for the next streamed reply: Markdown with a spinner on a colour
        terminal (rich is imported only then), plain text otherwise."""
        view: ReplyView
        if self.color:
            from cli.render import RichReply

            view = RichReply(sys.stdout)
        else:
            view = PlainReply(sys.stdout, self.info_stream, hold=not self.interactive)
        self._view = view
        return view


def _stderr_width(stdout_tty: bool) -> int | None:
    """The width in columns of the terminal stderr writes to, if it is one (``COLUMNS``
    first, as for stdout's)."""
    import shutil

    try:
        if not os.isatty(sys.stderr.fileno()):
            return None
    except (OSError, ValueError):  # no file descriptor (closed, replaced)
        return None
    if stdout_tty or os.environ.get("COLUMNS", "").isdigit():
        return shutil.get_terminal_size().columns
    try:
        return os.get_terminal_size(sys.stderr.fileno()).columns
    except OSError:
        return None


def stderr_wrapped(text: str) -> str:
    """``text`` as a command's last ``error:`` line is shown: on a terminal, wider than
    it, wrapped between words as ``Console.warn``'s lines (the chat's refusals, such as
    another endpoint's, were cut inside words at 40 columns); else as written."""
    width = _stderr_width(sys.stdout.isatty())
    text = printable(text)  # it may quote a value of the environment, a path, a frame's
    return word_wrap(text, width) if width is not None else text


def slash_completer() -> Any:
    """Completes ``/commands`` at the start of the input, each with what it does."""
    from prompt_toolkit.completion import Completer, Completion

    class SlashCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Any]:
            text = document.text_before_cursor
            if not text.startswith("/") or " " in text or "\n" in text:
                return
            for name, meta in SLASH_COMMANDS.items():
                if name.startswith(text):
                    yield Completion(name, start_position=-len(text), display_meta=meta)

    return SlashCompleter()


def clear_screen_below_first_row(app: Any) -> None:
    """Clear the screen (its lines go to the scrollback, as a clear's do) and put the
    cursor at the start of its second row, where ``app`` draws itself again."""
    renderer, output = app.renderer, app.output
    renderer.erase()
    output.erase_screen()
    output.cursor_goto(2, 1)  # 1-based
    output.flush()
    renderer.request_absolute_cursor_position()


def stop_here(group: bool) -> None:
    """Stop (``group``: the whole process group) until continued (``fg``), as SIGTSTP's
    default action does, whatever handles SIGTSTP meanwhile."""
    import signal

    handler = signal.signal(signal.SIGTSTP, signal.SIG_DFL)
    try:
        os.kill(0 if group else os.getpid(), signal.SIGTSTP)  # stopped here, until fg
    finally:
        signal.signal(signal.SIGTSTP, handler)


def _showing(prompt: str, line: str) -> str:
    """The prompt that starts with ``line`` in its buffer: on a dumb terminal, whose
    prompt draws none of the text it starts with (a line held after a Ctrl+C waited
    there unseen, and Enter sent it), the line is drawn as part of the prompt."""
    from prompt_toolkit.utils import is_dumb_terminal

    return prompt + line if line and is_dumb_terminal() else prompt


BRACKETED_PASTE_ON = "\x1b[?2004h"
BRACKETED_PASTE_OFF = "\x1b[?2004l"
_PASTE_START, _PASTE_END = "\x1b[200~", "\x1b[201~"
_ESCAPE_RE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|O.|.)?", re.DOTALL)
"""A key's escape sequence (an arrow, a function key, Alt with a key), or a lone Esc."""


@contextlib.contextmanager
def _terminal_restored_on_stop(
    restore: Callable[[], None],
    again: Callable[[], None],
    keep: Callable[[], None],
    hidden: Callable[[], contextlib.AbstractContextManager[None]],
    stand_in_for: tuple[object, ...] = (),
) -> Iterator[None]:
    """While a reply streams, Ctrl+Z and Ctrl+\\ are signals (at the prompt they are
    keys): the terminal is given back as it was (echo, line editing, no bracketed paste)
    before the chat stops or quits, so the shell is not left typing blind; ``fg`` sets it
    for the reply again. (A shell that saves a stopped job's terminal, bash, hid this;
    dash and sh did not.) What was typed ahead is taken first (``keep``): left in the
    terminal's input, the shell read it, and ran each line ended with Enter (after a
    quit it is dropped with the chat, rather than run). Before a stop, the reply's view
    takes off the screen what it draws again after ``fg`` (``hidden``). Handlers in
    ``stand_in_for`` (the chat's hold's) are replaced meanwhile, as the default is."""
    import signal
    from types import FrameType

    def stop(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            keep()
        with hidden():
            restore()
            signal.signal(signal.SIGTSTP, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTSTP)  # stopped here, until continued (fg)
            signal.signal(signal.SIGTSTP, stop)
            with contextlib.suppress(OSError):
                again()

    def quit_(signum: int, frame: FrameType | None) -> None:
        with contextlib.suppress(OSError):
            keep()  # the chat's, gone with it: a message typed ahead is no shell command
        restore()
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGQUIT)

    with (
        _handling(signal.SIGTSTP, stop, over=stand_in_for),
        _handling(signal.SIGQUIT, quit_, over=stand_in_for),
    ):
        yield


@contextlib.contextmanager
def _handling(signum: int, handler: Any, over: tuple[object, ...] = ()) -> Iterator[None]:
    """``handler`` for signal ``signum`` meanwhile, in the main thread only, and only over
    the default, itself or one in ``over``: a signal the user's shell ignores, or one
    another handles, is left as it is."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(
        signum
    ) not in (signal.SIG_DFL, handler, *over):
        yield
        return
    previous = signal.signal(signum, handler)
    try:
        yield
    finally:
        signal.signal(signum, previous)


def _echo_rows(typed: str, width: int) -> int:
    """How many rows above its last the terminal's echo of ``typed`` ends, begun at the
    start of a row: each control key echoed as ``^X``, Enter as a new row, a Ctrl+D (a
    NUL by then) not at all."""
    typed = typed.replace("\0", "").replace("\r", "\n")
    lines = re.sub(r"[\x01-\x08\x0b-\x1f\x7f]", "^X", typed).split("\n")
    return len(lines) - 1 + sum(max(len(line) - 1, 0) // max(width, 1) for line in lines)


def _write_control(fd: int | None, sequence: str) -> None:
    if fd is None:
        return
    with contextlib.suppress(OSError):
        os.write(fd, sequence.encode())


_MOVES = {
    **dict.fromkeys(("\x1b[D", "\x1bOD", "\x02"), "left"),
    **dict.fromkeys(("\x1b[C", "\x1bOC", "\x06"), "right"),
    **dict.fromkeys(("\x1b[H", "\x1bOH", "\x1b[1~", "\x1b[7~", "\x01"), "home"),
    **dict.fromkeys(("\x1b[F", "\x1bOF", "\x1b[4~", "\x1b[8~", "\x05"), "end"),
    **dict.fromkeys(("\x1b[3~", "\x04"), "delete"),
    **dict.fromkeys(("\x1b[1;5D", "\x1bb"), "word left"),
    **dict.fromkeys(("\x1b[1;5C", "\x1bf"), "word right"),
    "\x0b": "kill to end",
}
_WORD_RE = re.compile(r"[a-zA-Z0-9_]+|[^a-zA-Z0-9_\s]+")
"""A word to the prompt's Ctrl+Left and Ctrl+Right (Alt+B, Alt+F)."""
"""The prompt's keys that move in the line or delete at the cursor (emacs keys too)."""


class _TypedLine:
    """A line being typed, with its cursor, edited as the prompt edits it."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.cursor = 0

    def insert(self, chars: Iterable[str]) -> None:
        for char in chars:
            self.text.insert(self.cursor, char)
            self.cursor += 1

    def _line_start(self) -> int:
        return "".join(self.text[: self.cursor]).rfind("\n") + 1

    def _line_end(self) -> int:
        at = "".join(self.text).find("\n", self.cursor)
        return len(self.text) if at < 0 else at

    def delete_before(self, count: int) -> None:
        count = min(count, self.cursor)
        del self.text[self.cursor - count : self.cursor]
        self.cursor -= count

    def edit(self, key: str) -> None:
        if key == "\x7f" or key == "\x08":  # Backspace
            self.delete_before(1)
        elif key == "\x15":  # Ctrl+U: to the start of the line (at it: the new line)
            start = self._line_start()
            self.delete_before(self.cursor - start if self.cursor > start else 1)
        elif key == "\x17":  # Ctrl+W: the word before the cursor, and the blanks after it
            before = "".join(self.text[: self.cursor])
            word = re.search(r"\S+\s*$", before)
            self.delete_before(len(before) - word.start() if word else self.cursor)
        elif (move := _MOVES.get(key)) == "left":
            self.cursor = max(self.cursor - 1, self._line_start())
        elif move == "right":
            self.cursor = min(self.cursor + 1, self._line_end())
        elif move == "home":
            self.cursor = self._line_start()
        elif move == "end":
            self.cursor = self._line_end()
        elif move == "word left":  # to the start of this word or the one before
            word = _WORD_RE.search("".join(self.text[: self.cursor])[::-1])
            self.cursor -= word.end() if word else 0
        elif move == "word right":  # to the end of the next word
            word = _WORD_RE.search("".join(self.text[self.cursor + 1 :]))
            self.cursor += word.end() + 1 if word else 0
        elif move == "delete":
            del self.text[self.cursor : self.cursor + 1]
        elif move == "kill to end":  # at the line's end: its new line
            end = self._line_end()
            del self.text[self.cursor : end if end > self.cursor else end + 1]


END_OF_INPUT = ("\x04", False)
"""The entry of ``typed_entries`` for a Ctrl+D at an empty line: the chat ends there."""


def typed_entries(typed: str) -> list[tuple[str, bool]]:
    """What was typed ahead of a prompt, as the prompt would have read it: each line with
    whether Enter ended it. A bracketed paste is text whatever newlines it holds (its
    lines are one message, as at the prompt), Alt+Enter a new line in the message;
    Backspace, Delete, Ctrl+U, Ctrl+W and Ctrl+K edit, Left, Right, Home, End, Ctrl+Left
    and Ctrl+Right move in the line (their emacs keys too); a Ctrl+D at an empty line
    ends them (``END_OF_INPUT``); other keys are dropped."""
    entries: list[tuple[str, bool]] = []
    line = _TypedLine()
    at = 0
    while at < len(typed):
        char = typed[at]
        if typed.startswith(_PASTE_START, at):
            end = typed.find(_PASTE_END, at)
            end = len(typed) if end < 0 else end
            pasted = typed[at + len(_PASTE_START) : end].replace("\r\n", "\n")
            line.insert(c for c in pasted.replace("\r", "\n") if c in "\n\t" or c.isprintable())
            at = end + len(_PASTE_END)
            continue
        if typed.startswith(("\x1b\r", "\x1b\n"), at):  # Alt+Enter
            line.insert("\n")
            at += 2
            continue
        if char == "\x1b":
            match = _ESCAPE_RE.match(typed, at)
            sequence = match[0] if match else char
            line.edit(sequence)
            at += len(sequence)
            continue
        if char in "\r\n":
            entries.append(("".join(line.text), True))
            line = _TypedLine()
        elif char == "\x04" and not line.text:  # the prompt's end of input: the rest is not
            entries.append(END_OF_INPUT)  # read (one typed in a line deletes, as there)
            return entries
        elif char.isprintable():
            line.insert(char)
        else:
            line.edit(char)
        at += 1
    if line.text:
        entries.append(("".join(line.text), False))
    return entries


def _give_keys(session: Any, typed: str) -> None:
    """``typed``, first in what ``session``'s prompt reads next, as typed there."""
    from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
    from prompt_toolkit.input.vt100_parser import Vt100Parser

    keys: list[Any] = []
    parser = Vt100Parser(keys.append)
    parser.feed(typed)
    parser.flush()
    store_typeahead(session.input, keys + get_typeahead(session.input))


def _as_typed(entry: tuple[str, bool]) -> str:
    """An entry of ``typed_entries`` as keys that give it again."""
    text, entered = entry
    if "\n" in text:
        text = _PASTE_START + text + _PASTE_END
    return text + ("\r" if entered else "")


def _key_typed(key: Any) -> str:
    """A key prompt_toolkit read, as typed: a paste it read is bracketed again."""
    from prompt_toolkit.keys import Keys

    if key.key == Keys.BracketedPaste:
        return f"{_PASTE_START}{key.data}{_PASTE_END}"
    return str(key.data)


def _bytes_waiting(fd: int) -> int:
    """How many bytes wait in the terminal ``fd``'s input (0 if that cannot be known)."""
    import fcntl
    import termios

    try:
        return int.from_bytes(fcntl.ioctl(fd, termios.FIONREAD, bytes(4)), sys.byteorder)
    except OSError:
        return 0


def _waiting_input() -> bytes:
    """What waits in the terminal's input, line or not, read at once (b"" if none)."""
    import termios

    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (OSError, ValueError, termios.error):
        return b""
    now = list(saved)
    now[3] &= ~(termios.ICANON | termios.ECHO)
    now[6] = list(now[6])
    now[6][termios.VMIN] = 0
    now[6][termios.VTIME] = 0
    try:
        termios.tcsetattr(fd, termios.TCSANOW, now)
        return os.read(fd, 65536)
    except (OSError, termios.error):
        return b""
    finally:
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(fd, termios.TCSANOW, saved)


_HANGING_RE = re.compile(
    r"(?:warning|error|note): |\s*\S+(?: \S+)?\s{2,}(?=\S)|\s*(?:[-*]|\d+[.)]) |\s*"
)
"""Where a line's continuation rows start: after a diagnostic's label (``warning: ``),
under its second column (``  /save   save the session``), after a list marker, or at its
indentation."""


def _quiet_about_cpr(session: Any) -> Any:
    """``session`` (a ``PromptSession``), not telling a terminal that never answers its
    cursor position requests so: prompt_toolkit then draws without them, as it does, but
    printed ``WARNING: your terminal doesn't support cursor position requests (CPR).``
    after two seconds at the prompt, a line the user can do nothing with. Its asks go on
    (the bottom toolbar needs the answer of a terminal that gives one), so not
    ``PROMPT_TOOLKIT_NO_CPR=1``, which stays the user's to set."""
    session.app.renderer.cpr_not_supported_callback = None
    return session


def word_wrap(text: str, width: int) -> str:
    """``text`` with each line wider than ``width - 1`` wrapped between words, its rows
    after the first indented as ``_HANGING_RE`` says (a word wider than a row is cut)."""
    import textwrap

    from cli.summaries import columns

    room = max(width - 1, 20)
    rows: list[str] = []
    for line in text.split("\n"):
        if columns(line) <= room:  # screen columns: a combining accent takes none
            rows.append(line)
            continue
        hanging = _HANGING_RE.match(line)
        indent = " " * (len(hanging[0]) if hanging and len(hanging[0]) <= room // 2 else 0)
        rows.extend(
            textwrap.wrap(
                line,
                room,
                subsequent_indent=indent,
                break_on_hyphens=False,
                drop_whitespace=True,
            )
            or [line]
        )
    return "\n".join(rows)


_FULL_TIME = re.compile(r"^(\s*\d+  )\d{4}-(\d\d-\d\d \d\d:\d\d):\d\d UTC  ")
"""A listing row's number and time (``2026-12-05 02:23:33 UTC``)."""

_ROW = re.compile(
    r"(?P<number>\s*\d+)  \d{4}-(?P<time>\d\d-\d\d \d\d:\d\d):\d\d UTC"
    r"  (?P<turns>\d+ turns?)  (?P<files>\d+ files? changed)  (?P<reason>\(\w+\))"
    r"(?P<words>  '.*)?"
)
"""A listing row (``session.checkpoints.item_lines``): number, time, turns, files changed,
reason, and the last message's first words if any."""

MIN_WORDS_WIDTH = 12
"""The fewest columns a row's first words are cut to before a field goes to make room (as
the sessions table's summary, ``MIN_SUMMARY_WIDTH``)."""

_LAYOUTS: tuple[tuple[str, ...], ...] = (
    ("number", "time", "turns", "files", "reason"),
    ("number", "time", "turns", "reason"),
    ("number", "time", "reason"),
)
"""The fields of a fitted row, least needed left out first: files changed, then turns.
The number (what ``/checkpoint N`` takes), the time, the reason and the first words are
what tell checkpoints apart."""


def fit_to_width(text: str, width: int) -> str:
    """Each row of a listing in ``text`` (a line that begins with its number, after
    spaces) fitted to ``width - 1`` screen columns, so that none wraps on a terminal
    that wide; other lines (a message: "No checkpoints in this session yet") are left
    whole, to wrap. When a row does not fit, every row says its time shorter (``12-05
    02:23``, as the sessions table does), so the columns after it line up; when the first
    words of a row would still get fewer than ``MIN_WORDS_WIDTH`` columns, every row
    leaves out its files changed, then its turns (``_LAYOUTS``), as the table leaves out
    columns. A row still too wide is cut with an ellipsis."""
    from cli.summaries import columns, cut

    room = max(width - 1, 20)
    lines = text.split("\n")
    rows = [i for i, line in enumerate(lines) if line.lstrip()[:1].isdigit()]
    if all(columns(lines[i]) <= room for i in rows):
        return text
    found = {i: row for i in rows if (row := _ROW.fullmatch(lines[i])) is not None}
    layout = _LAYOUTS[-1]
    for fields in _LAYOUTS:
        if all(_fits(_fields_of(row, fields), row["words"], room) for row in found.values()):
            layout = fields
            break
    for i in rows:
        row = found.get(i)
        if row is None:  # not of this version's shape: its time alone said shorter
            line = _FULL_TIME.sub(r"\1\2  ", lines[i], count=1)
        else:
            line = _fields_of(row, layout) + (row["words"] or "")
        lines[i] = cut(line, room)
    return "\n".join(lines)


def _fields_of(row: re.Match[str], fields: tuple[str, ...]) -> str:
    return "  ".join(row[field] for field in fields)


def _fits(fixed: str, words: str | None, room: int) -> bool:
    """Whether a row of ``fixed`` fields leaves its ``words`` (``  'first words'``) their
    whole width or ``MIN_WORDS_WIDTH`` columns."""
    from cli.summaries import columns

    wanted = 0 if words is None else min(columns(words), MIN_WORDS_WIDTH + 2)
    return columns(fixed) + wanted <= room
