"""The conversation loop of the thin terminal: attach, offer resumption, converse, leave.

It holds no session state beyond the id it is attached to; everything else
lives in the supervisor's TerminalActor.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from cli.console import (
    SLASH_COMMANDS,
    Cancelled,
    Console,
    Interrupted,
    ReplyView,
    UnclearAnswer,
    fit_to_width,
    other_choices,
)
from cli.entry import silence_stdout
from cli.errors import as_error_line, remote_error_text, shown_input, told_cause
from cli.interrupts import DeferredInterrupts
from cli.preload import preload_prompt
from cli.quick import terminal_pid_of
from cli.resume_offer import offer_text, unanswered_words
from cli.summaries import columns, cut
from cli.upgrade import Skew, leave_unopened, skew, switch
from session.environment import secrets_from_environment
from session.leaving import WAITING_FOR_LAST_REPLY
from session.printable import printable
from supervisor.client import (
    Connection,
    ConnectionLost,
    RemoteError,
    connect_or_start,
    control_timeout,
    hello,
    not_answering,
    supervisor_answers,
    unsent_secrets_warning,
)
from supervisor.runtime import RuntimePaths, runtime_paths
from supervisor.stopped import stopped_on_purpose
from supervisor.wire import MAX_MESSAGE_CHARS, ErrorCode, Frame

_COMMANDS_HELP = """\
Commands:
  /save            save the session now and write a checkpoint (conversation and tracked files; none if nothing changed since the latest)
  /reset, /new     forget this session: clear history, delete its saved file and resume context (asks before deleting agent_spec.md / templates/)
  /resume          show the resume context given to the assistant
  /checkpoint      list this session's checkpoints
  /checkpoint n    go back to checkpoint n (asks whether to restore the files too; the present is checkpointed first, so it can be undone)
  /compact         compact the history now (prints the tokens before and after)
  /model           show the model in use
  /help            this help
  /exit            leave (the session is saved; {also})
A message may start with a path (/etc/hosts ...); start it with // to send a message that begins with /word (//save this sends "/save this")."""  # noqa: E501
_KEYS_HELP = """\
Keys: Enter sends; Alt+Enter (or Esc then Enter) starts a new line.
Ctrl+C clears a typed line; at an empty prompt it leaves (right after a reply ended, press it twice). While a reply streams it cancels that reply (lines typed meanwhile wait at the next prompts, unsent), and it cancels a /compact; at a question it cancels the question (nothing is done).
Ctrl+Z stops the chat (fg resumes it).
Up/Down recall earlier messages of this project; Tab completes /commands."""  # noqa: E501
HELP = _COMMANDS_HELP.format(also="Ctrl+D or Ctrl+C at an empty prompt too") + "\n" + _KEYS_HELP
"""``/help`` on a terminal: one line per entry or paragraph, which ``help_text`` wraps to
the terminal (at most ``HELP_WIDTH`` columns)."""
PIPED_HELP = _COMMANDS_HELP.format(also="the end of the input too")
"""``/help`` with stdin not a terminal: no keys (there are none to press)."""
HELP_WIDTH = 88


_CHANGED_NOTICE_RE = re.compile(
    r"note: (?P<file>.+) (?:changed|deleted) "
    r"(?:outside agent-assist|by another agent-assist session \([0-9a-f]{12}\))"
)


def changed_file(notice: str) -> str | None:
    """The file a ``note: FILE changed outside agent-assist`` (or ``deleted``, or ``by
    another agent-assist session (ID)``) notice names, else None."""
    found = _CHANGED_NOTICE_RE.fullmatch(notice)
    return found["file"] if found else None


def fit_toolbar(parts: list[str], width: int | None) -> str:
    """``parts`` as the toolbar's line within ``width`` columns: without ``(/help)``, then
    without the phase, the tokens and the model (in that order), if it does not fit;
    the session and the files changed outside stay, said shorter if need be (the id
    without ``session``, ``N changed outside``; cut with an ellipsis at worst)."""

    line = " " + " · ".join(parts) + "  (/help)"
    if width is None or columns(line) <= width:
        return line
    kept = list(parts)
    for prefix in ("phase ", "", "model "):  # "": the tokens (they begin with a digit)
        line = " " + " · ".join(kept)
        if columns(line) <= width:
            return line
        kept = [
            part
            for part in kept
            if not (part.startswith(prefix) if prefix else part.endswith(" in context"))
        ]
    for shorter in (_without_label, _outside_count, None):
        line = " " + " · ".join(kept)
        if columns(line) <= width or shorter is None:
            break
        kept = [shorter(part) for part in kept]
    return cut(line, width)


def _without_label(part: str) -> str:
    return part.removeprefix("session ")


def _outside_count(part: str) -> str:
    """``2 files changed outside`` as ``2 changed outside``."""
    count, _, rest = part.partition(" ")
    return f"{count} changed outside" if rest.endswith("changed outside") else part


OPENAI_DEFAULT_URL = "https://api.openai.com/v1"


def other_endpoint(models: Iterable[str | None], welcome: Frame) -> str | None:
    """The line that refuses the chat when one of its ``models`` (the model, the summary
    model) speaks to ``OPENAI_BASE_URL`` and the supervisor, started from another
    environment, sends its requests elsewhere than this shell's URL: the requests are the
    supervisor's, and would go to an endpoint this shell did not name (or fail)."""
    if "openai_base_url" not in welcome:
        return None  # a supervisor that does not say
    if not any(model and model.startswith("openai") for model in models):
        return None  # no OpenAI-style model: no request goes to OPENAI_BASE_URL
    ours = os.environ.get("OPENAI_BASE_URL") or OPENAI_DEFAULT_URL
    theirs = welcome["openai_base_url"] or OPENAI_DEFAULT_URL
    if same_endpoint(ours, theirs):
        return None
    from session.redaction import scrub_text  # a URL may hold a password (user:PW@host)

    theirs, ours = scrub_text(theirs), scrub_text(ours)
    named = (
        f"OPENAI_BASE_URL {ours}"
        if os.environ.get("OPENAI_BASE_URL")
        else f"endpoint {ours} (no OPENAI_BASE_URL is set here)"
    )
    return (
        f"the running supervisor sends model requests to {theirs}, not to this shell's "
        f"{named} (it was started from another environment): run "
        "`agent-assist supervisor stop` (it saves every session), then agent-assist "
        f"again, to use this shell's; or set OPENAI_BASE_URL={theirs} to use the supervisor's"
    )


DEFAULT_PORTS = {"http": 80, "https": 443}


def same_endpoint(one: str, other: str) -> bool:
    """Whether two base URLs name one endpoint as the HTTP client reads them: the scheme's
    and the host's case, the scheme's default port and a trailing slash do not count
    (``localhost`` and ``127.0.0.1`` do: the name may resolve to ``::1``)."""
    return _endpoint(one) == _endpoint(other)


def _endpoint(url: str) -> tuple[str, ...]:
    from urllib.parse import urlsplit

    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:  # not a URL the client could use: compared as spelled
        return (url.rstrip("/"),)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    where = "" if port is None or port == DEFAULT_PORTS.get(scheme) else str(port)
    users = parts.netloc.rpartition("@")[0] if "@" in parts.netloc else ""
    return (scheme, users, host, where, parts.path.rstrip("/"), parts.query)


def help_text(width: int | None, keys: bool = True) -> str:
    """``HELP`` (``PIPED_HELP`` without ``keys``) wrapped to ``width`` columns (a
    terminal's), at most ``HELP_WIDTH``."""
    from cli.console import word_wrap

    return word_wrap(HELP if keys else PIPED_HELP, min(width or HELP_WIDTH, HELP_WIDTH))


EXIT_INTERRUPTED = 130
"""The exit status of a chat a Ctrl+C (SIGINT) ended, wherever it came: at the prompt, at a
question before a session was open, twice during a reply (128 + SIGINT, as a shell's)."""
SAVE_RETRIED = "error: could not update the session on disk"
"""A failed save (actors/terminal.py) is retried at the next turn and at exit: the run
fails only if turns are still unsaved at its end (the ``closed`` frame says so)."""
NOTHING_SAVED_AS_TOLD = re.compile(r"error: session [0-9a-f]{12} could not be saved \(see above\)")
"""The exit's line for a session none of whose writes worked and that had no turn to keep
(actors/terminal.py), its cause the start's line: that line said it all (H186)."""
REATTACH_ATTEMPTS = 5
BUSY_WAIT_S = 2.0
"""A terminal refused because another agent-assist is attached for it (or the supervisor
at its cap of connections) says hello again for this long: the tab's previous one may
have just left (killed, Ctrl+C) before the supervisor saw its connection end."""
BUSY_RETRY_S = 0.1
RESET_CUT_AFTER_DELETE = (
    "/reset was interrupted after session {old} was deleted: the session is reset "
    "(new session {new})"
)
"""A ``/reset`` the supervisor died in once its delete was done (the re-attach found the
session gone): "please run it again" would say nothing was done."""
RESET_FILES_MAY_REMAIN = "the files it was to delete may remain; /reset asks about them again"
RESTORED = "Restored the conversation to checkpoint "
FILES_RESTORED = "Files restored: "
RESEND_ATTEMPTS = 3
JUST_ENDED_S = 1.0
"""A Ctrl+C at an empty prompt this soon after a reply or a command ended was meant for
it (a reply that ended as the key was pressed): it does not leave; a second one does."""
JUST_ENDED_LINE = "note: {what} had just ended; Ctrl+C again to leave"
"""Said for the first Ctrl+C right after a reply (``the reply``) or a command (``/save``)."""
KEPT_AFTER_CTRL_C = "note: the reply had ended before the Ctrl+C reached it; it is kept"
"""After a reply whose Ctrl+C came too late to cancel it: shown whole, as the model keeps it."""
CANCELLED_COMMANDS = frozenset({"compact"})
"""Commands a Ctrl+C cancels (the summary model may take its time; nothing is changed until
it answers); the others write or ask, and are done before a Ctrl+C could matter."""
SENT_AGAIN_COMMANDS = frozenset({"checkpoint", "resume", "compact"})
"""Commands sent again, once, when the supervisor dies before it answers them (as a message
is): ``/checkpoint`` (the list, without N) and ``/resume`` only read; a ``/compact`` the
supervisor saved before it died finds nothing to compact. ``/save``, ``/reset`` and
``/checkpoint N`` are not: whether they were done is not known, and they ask or write."""
TERMINAL_COMMANDS = ("exit", "quit", "help", "model")
"""The commands the terminal runs itself; like the supervisor's, they take no argument."""
CUT_OFF = "[cut off: the chat ended before the reply did; the message is kept, marked unanswered]"
"""Where a reply the end of the chat cut would have been (on a terminal, after its partial
text; piped, stdout gets none of it: it is not a reply)."""
CUT_OFF_AFTER_TOOLS = (
    "[cut off: the chat ended before the reply did; the message is kept as far as it got "
    "if a tool of its reply had run, else marked unanswered]"
)
"""The same, for a reply that had called a tool: whether the tool ran before the end is
the supervisor's to know (the turn is then kept as far as it got)."""
CUT_BY_RESTART = (
    "[cut off: the supervisor went away during this reply; the message is answered again below]"
)
"""Where a reply the supervisor's death cut stays on the screen (its message is sent again
to the supervisor that follows): the cut text is no whole reply, and the reply that
follows is a second one, not more of it."""
CUT_BY_RESTART_AFTER_TOOLS = (
    "[cut off: the supervisor went away during this reply; a tool of it had run, so it is "
    "answered again only if the supervisor saved it]"
)
"""The same, for a reply that had called a tool: it is not run again (``saved_only``)."""
LOST_TWICE = (
    "error: lost the supervisor twice during this reply; "
    "the message was not answered (send it again)"
)
REFUSED_FRAME_CODES = frozenset(
    {
        ErrorCode.BAD_FRAME,
        ErrorCode.FRAME_TOO_LARGE,
        ErrorCode.UNKNOWN_TYPE,
        ErrorCode.INVALID_REQUEST,
    }
)
"""Codes of an error frame that refuses what this client sent (not a crash of the supervisor);
all but ``invalid_request`` end the connection, which is then re-opened quietly."""
WATCH_POLL_S = 0.1
CLOSE_TIMEOUT_S = 30.0


class ChatError(Exception):
    """Ends the chat with one line on stderr and exit status 1."""


class SessionRefused(ChatError):
    """The supervisor refused to open a session: its ``error`` frame's message and code."""

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message)
        self.code = code


class AnswerStops(ChatError):
    """The user's answer to a question (no, or piped, a line that is not an answer) stops
    the run: it is never taken for a session that cannot be used, with a new one started
    instead."""


class OtherEndpoint(ChatError):
    """The supervisor sends model requests elsewhere than this shell's OPENAI_BASE_URL: the
    chat is refused (at its start, or at a re-attach to a supervisor another shell
    started), before anything is sent to it."""


class OpenRefused(Exception):
    """The open the supervisor's front door had answered was refused once the supervisor
    could do it for real (a cold start): taken as the open's own refusal."""


class WouldAsk(Exception):
    """A re-attach made where no question can be asked (the prompt's watch) would need one."""


class ChatEnded(Exception):
    """The supervisor was stopped on purpose: say so and exit (0 on a terminal; piped, 1:
    what was read last, a message or an answer, was not done, nor the rest of the input)."""


@dataclass(frozen=True)
class ChatOptions:
    workspace: Path
    model: str | None
    new: bool
    resume: str | None
    yes: bool
    model_source: str = "option"
    settings: dict[str, object] | None = None
    """The other settings the chat resolved (sent in its hello: they apply to its session)."""


def terminal_pid() -> int:
    """The terminal's identity: ``AGENT_ASSIST_TERMINAL_PID``, else our parent (the shell)."""
    pid = terminal_pid_of(os.environ)
    if pid is None:
        override = os.environ.get("AGENT_ASSIST_TERMINAL_PID", "")
        raise ChatError(f"AGENT_ASSIST_TERMINAL_PID must be a pid, not {shown_input(override, 40)}")
    return pid


COMMAND_NAMES = frozenset(name[1:] for name in SLASH_COMMANDS) | {"quit"}
PREVIOUS_SESSION_WAIT_S = 30.0
"""How much longer a terminal waits for its welcome once the supervisor answered a control
request (it is closing this tab's previous session: 15 s at most)."""
OTHER_TOOLS_NAMES = {
    "clear": "/reset (it also deletes the saved session and its checkpoints)",
    "q": "/exit",
    "rewind": "/checkpoint N",
    "undo": "/checkpoint N",
}
"""What users of other assistants type, and ours that does it (said, never run for them)."""


def command_close_to(name: str) -> str | None:
    """The commands a mistyped ``/name`` is close to: those it begins (``/res``: ``/reset
    or /resume``), else the nearest (``/sav``: ``/save``), else the one whose beginning it
    is close to (``/chek``: ``/checkpoint``); None if none is."""
    begun = sorted(command for command in COMMAND_NAMES if command.startswith(name))
    if len(name) >= 2 and begun:
        return " or ".join(f"/{command}" for command in begun)
    import difflib  # only for a mistyped command: not on the start's path

    close = difflib.get_close_matches(name, sorted(COMMAND_NAMES), n=1, cutoff=0.6)
    if close:
        return f"/{close[0]}"
    if len(name) < 3:
        return None
    # A mistyped beginning (``/chek``: too short beside all of ``checkpoint``).
    begins = {command[: len(name)]: command for command in sorted(COMMAND_NAMES)}
    close = difflib.get_close_matches(name, sorted(begins), n=1, cutoff=0.75)
    return f"/{begins[close[0]]}" if close else None


def command_name_and_argument(line: str) -> tuple[str, str]:
    """``/name args`` as its name (lower case) and the rest, split at the first
    whitespace: a newline too (a paste whose first line is ``/save``)."""
    name, *rest = line[1:].split(maxsplit=1)
    return name.lower(), rest[0] if rest else ""


def is_command(line: str) -> bool:
    """``/name`` or ``/name args``: a slash command. A line that starts with a path
    (``/etc/hosts is ...``, or ``/tmp is ...`` when ``/tmp`` is not a command and exists)
    or with ``//`` (the escape: ``//save`` sends ``/save``) is a message."""
    word = line.strip().split(maxsplit=1)[0] if line.strip() else ""
    if not (word.startswith("/") and "/" not in word[1:] and len(word) > 1):
        return False
    return word[1:].lower() in COMMAND_NAMES or not os.path.lexists(word)


def spaced_command(line: str) -> str | None:
    """The command a line that begins ``/ name`` (a slash, a space, a command's name)
    meant: a typo of ``/name``, not a message to send (``// name`` sends ``/ name``)."""
    words = line.lower().split(maxsplit=2)
    if len(words) < 2 or words[0] != "/" or words[1] not in COMMAND_NAMES:
        return None
    return words[1]


def message_text(line: str) -> str:
    """What a message line sends: ``//`` at its start (after spaces) sends one ``/``."""
    stripped = line.lstrip()
    return stripped[1:] if stripped.startswith("//") else line


def too_long_line(text: str, interactive: bool) -> str | None:
    """The one line refusing a message (or command line) too long to send, or None."""
    if len(text) <= MAX_MESSAGE_CHARS:  # and so within the frame's bytes (see the cap)
        return None
    kept = " (it is in your history: Up recalls it)" if interactive else ""
    return (
        f"error: message not sent: {len(text):,} characters is over the limit of "
        f"{MAX_MESSAGE_CHARS:,}; put the text in a file in the workspace and ask the "
        f"assistant to read it{kept}"
    )


UNSENT_LINE = "note: not sent, the chat ended: "
"""Begins the line of each line typed ahead that a chat the user did not end left unsent."""
UNSENT_CHARS = 200


def stopped_line(closed: Frame, session_id: str | None) -> str:
    """What a chat says when the supervisor was stopped (``closed`` its last frame)."""
    if not closed.get("saved"):  # a session with no completed turn has nothing to keep
        return "the supervisor was stopped; nothing to save (no turn was completed)"
    return f"the supervisor was stopped; session {closed.get('session_id') or session_id} saved"


def unsaved_line(closed: Frame, session_id: str | None) -> str:
    """The one line for a session whose last turns could not be saved."""
    where = closed.get("kept_at")
    if where:
        return (
            f"error: session {session_id} could not be saved; its unsaved turns are kept in {where}"
        )
    return f"error: session {session_id} could not be saved; its unsaved turns are lost"


class LeaveNow(Exception):
    """The user pressed Ctrl+C twice while a command ran: leave without waiting for it."""


class _Watch:
    """Reads the connection in a thread of its own between ``start`` and ``stop``, while
    the main thread waits for input and does not touch it: one reader at a time."""

    def __init__(self, chat: Chat) -> None:
        self._chat = chat
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, end_prompt: Callable[[], object]) -> None:
        self._stopping.clear()
        self._thread = threading.Thread(target=self._run, args=(end_prompt,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _run(self, end_prompt: Callable[[], object]) -> None:
        raise NotImplementedError

    @staticmethod
    def _poll(conn: Connection) -> Frame | None:
        """The next frame, or None after ``WATCH_POLL_S`` without one (so that ``stop``
        is seen); ConnectionLost or OSError if the connection went."""
        return conn.receive() if conn.readable(WATCH_POLL_S) else None


class SupervisorWatch(_Watch):
    """While the prompt waits: shows what the supervisor sends and ends the prompt on a stop."""

    def __init__(self, chat: Chat) -> None:
        super().__init__(chat)
        self.stopped_frame: Frame | None = None

    def _run(self, end_prompt: Callable[[], object]) -> None:
        if not self._chat.connected:  # a re-attach a Ctrl+C cut short: the next message's
            return
        conn = self._chat.conn
        while not self._stopping.is_set():
            try:
                frame = self._poll(conn)
            except (ConnectionLost, OSError):
                if (stopped := self._chat.stopped_frame()) is not None:
                    self.stopped_frame = stopped  # its closed frame unread: told on disk
                    end_prompt()
                    return
                # A crash: re-attach now, so that the session is live again at once
                # (another tab could take it meanwhile), unless that needs a question;
                # then, or if it fails, the next message re-attaches.
                try:
                    self._chat.reattach_quietly()
                except Exception:
                    self._chat.lost()
                    return
                conn = self._chat.conn
                continue
            if frame is None:
                continue
            if frame["type"] == "closed":
                self.stopped_frame = frame
                end_prompt()
                return
            self._chat.show(frame)


class QuestionWatch(_Watch):
    """While a command's question waits: shows the notices that arrive (a file changed
    outside, within a second, not after the answer). The first other frame is given back
    to the connection for the command's loop, and the watch reads no further; a stop's
    ``closed`` also ends the question (as unanswered: the loop then tells the stop). A
    lost connection is found by the answer's send."""

    def _run(self, end_prompt: Callable[[], object]) -> None:
        conn = self._chat.conn
        while not self._stopping.is_set():
            try:
                frame = self._poll(conn)
            except (ConnectionLost, OSError):
                return
            if frame is None:
                continue
            if frame["type"] != "notice":
                conn.put_back(frame)
                if frame["type"] == "closed":
                    end_prompt()
                return
            self._chat.show(frame)


class Chat:
    def __init__(self, options: ChatOptions, console: Console, paths: RuntimePaths) -> None:
        self.options = options
        self.console = console
        self.paths = paths
        self.session_id: str | None = None
        self._conn: Connection | None = None
        self._model = options.model or os.environ.get("AGENT_ASSIST_MODEL") or None
        self._pid = terminal_pid()
        self._busy: tuple[RemoteError, int | None] | None = None
        """The first refusal of this attach because another agent-assist is attached for
        this terminal, and the pid of the supervisor that refused (see
        ``_hello_when_free``): kept while a lost connection makes the attach start over."""
        self._chosen: str | None = None
        """The session the start chose to open: its id, or "" for a new one. Kept when the
        supervisor goes away before it is open: the re-attach opens that one, not what the
        new supervisor's offer holds at the same place (another tab may have taken the
        offered session meanwhile: the offer and its numbers are others then), nor asks
        again what was answered (a new session instead of one live elsewhere)."""
        self.a_turn_failed = False
        """A message was refused or its turn failed: a piped run exits 1 (not only when
        the last one did: a failure mid-script is not hidden by a later success)."""
        self._ended: tuple[str, float] | None = None
        """What ended last (the reply, or ``/command``), and when (``JUST_ENDED_S``)."""
        self._stopped_by_ctrl_c = False
        """The last reply was cancelled by the user's Ctrl+C (or one came too late for it):
        a Ctrl+C right after is the second of two, which leaves, not one meant for it."""
        self.input_tokens: int | None = None
        self.phase: str | None = None
        self.changed_outside: set[str] = set()
        self._shown_before_reattach: set[str] = set()
        """Files whose change was shown before the supervisor went away: the new one tells
        them again (its note to the model is kept), not shown twice."""
        self._gone_at_reattach: str | None = None
        self._learned: tuple[str, ...] = ()
        """Values the supervisor found secret in this chat's turns (``turn_end``'s
        ``secrets``), kept in memory only and told in every hello after, with the shell's
        own: a supervisor that took over (the heir) knows them from nothing else."""
        """The session the last re-attach could not go on with (gone from disk, or never
        saved): it went on in a new one."""
        self._hung_up = False  # the supervisor closed the connection after refusing a frame
        self._refused_open: Frame | None = None
        """The refusal of the open the front door had answered (``open_refused``), until
        it is handled as the open's own refusal."""
        self.resumed = False
        """The session opened is one resumed (its last reply may have asked something)."""
        self.on_disk = False
        """The session has a file (it was resumed, or a turn of it was acknowledged: each
        is saved before its end), as far as this terminal knows."""
        self.context: str | int = "fresh"
        """The kind of resume context the model is given, kept across a re-attach (the
        protocol's ``Continuing``): "fresh" (none), "resumed", or a restored checkpoint's
        number."""
        self.questions_asked = 0
        """Yes/no questions asked so far (a piped answer line with none to answer is
        not sent as a message: see ``_stray_answer``)."""
        self._interrupts = DeferredInterrupts()
        """Ctrl+C during a turn: taken in the waits for the supervisor only."""
        self._told: set[str] = set()
        """The start's warnings told already (an open refused for one is not told twice)."""
        self._about_asked: list[str] = []
        """The start's lines naming the --resume'd session (see ``_tell_about_asked``)."""
        self._supervisor_pid: int | None = None
        """The pid of the supervisor this chat attached to last (its welcome's)."""
        self._told_version = False
        """The chat was told it uses a supervisor of another version (told once)."""
        self._lost = False
        """The supervisor went away during a reply that was then given up (lost twice,
        or cancelled meanwhile): re-attach before the next message, and say so."""
        self._called_tools = False
        """The reply being received has called a tool (shown as a tool-call line)."""
        self.reply_left_running = False
        """SIGHUP (the window closed) came while a reply ran: the chat leaves with no
        ``close`` frame, as a terminal gone does, and the supervisor lets the turn finish
        and saves it (a ``close`` would cut it)."""
        self.unsent: list[str] = []
        """Lines typed ahead that the chat's end left unsent (``run``), for ``tell_unsent``."""
        self._not_sent: list[str] = []
        """The message whose send a re-attach ended (the user's answer to its question, a
        stop, a failure): read, and not sent; first of ``unsent``."""
        self._ended_by_stop = False
        """The supervisor's stop ended the chat (``_stopped_line``)."""
        console.toolbar = self.toolbar

    @property
    def conn(self) -> Connection:
        assert self._conn is not None
        return self._conn

    @property
    def connected(self) -> bool:
        """Whether the chat holds a connection (a re-attach cut short by a Ctrl+C left none)."""
        return self._conn is not None

    # -- attaching ------------------------------------------------------------

    def _welcome_after_a_wait(self, conn: Connection) -> Frame:
        """No welcome within ``control_timeout()``. A supervisor that answers a control
        request is finishing this tab's previous session (its exit waits for a turn or a
        ``/compact`` it cut): say so and wait for it (a helper was told to kill a
        supervisor that was not hung). One that does not answer is stopped or hung."""
        if not supervisor_answers(self.paths):
            raise ChatError(str(not_answering(self.paths)))
        self.console.warn(
            "note: the supervisor is still closing this tab's previous agent-assist; waiting"
        )
        conn.sock.settimeout(PREVIOUS_SESSION_WAIT_S)
        try:
            welcome = conn.receive()
        except TimeoutError:
            raise ChatError(str(not_answering(self.paths))) from None
        if welcome["type"] == "error":
            raise RemoteError(welcome.get("code", "internal"), welcome.get("message", ""))
        return welcome

    def _connect(self, tell_warnings: bool = True) -> tuple[Frame, bool]:
        conn, started, welcome = self._hello_when_free()
        if skew(welcome) is not Skew.SAME:
            conn, started, welcome = self._on_this_version(started)
        self._supervisor_pid = welcome.get("supervisor_pid")
        conn.sock.settimeout(None)  # replies may take the model's time
        # At every attach, a re-attach too: a supervisor another shell started meanwhile
        # (this one's died) sends this chat's messages to that shell's endpoint.
        summary_model = (self.options.settings or {}).get("summary_model")
        if elsewhere := other_endpoint((self._model, str(summary_model or "")), welcome):
            self._disconnect()  # nothing to close there: no session was opened
            raise OtherEndpoint(elsewhere)  # before any question or message
        if tell_warnings:
            if unsent := unsent_secrets_warning(secrets_from_environment()):
                self.console.warn(unsent)
            for warning in welcome.get("warnings", []):
                if self.options.resume and self.options.resume in warning:
                    self._about_asked.append(warning)  # told with the open's outcome
                    continue
                self.console.warn(warning)
                self._told.add(warning)  # another session's file: the run's own work is fine
        return welcome, started

    def _on_this_version(self, started: bool) -> tuple[Connection, bool, Frame]:
        """The supervisor that welcomed this chat is of another version (after an upgrade):
        it is left before anything is opened there, switched to this version if nobody uses
        it (``cli/upgrade.py``), and attached to again; why it was not is told once."""
        leave_unopened(self.conn)
        self._disconnect()
        switched = switch(self.paths)
        conn, started_now, welcome = self._hello_when_free()
        if switched is not None and switched.restarted:
            self.console.warn(switched.line)
            return conn, True, welcome
        if switched is not None and not self._told_version:
            self._told_version = True
            self.console.warn(switched.line)
        return conn, started or started_now, welcome

    def _hello_when_free(self) -> tuple[Connection, bool, Frame]:
        """Connect (starting the supervisor if need be) and say hello, again for up to
        ``BUSY_WAIT_S`` while the supervisor answers that this tab's last agent-assist
        is still attached: the connection, whether it started the supervisor, the
        welcome. Only the supervisor that refused it last may welcome it then: one that
        took over from it (it died meanwhile) has not seen the other agent-assist
        re-attach yet, and the tab is that one's (the first refusal is raised instead);
        an heir that refused it too saw the other re-attach, and its welcome means the
        other left."""
        busy_until = time.monotonic() + BUSY_WAIT_S
        while True:
            conn, started = connect_or_start(self.paths)
            self._conn = conn
            try:
                welcome = self._hello(conn)
            except RemoteError as exc:
                if exc.code != ErrorCode.BUSY or time.monotonic() > busy_until:
                    raise
                # The latest supervisor to refuse has seen the other agent-assist attached:
                # its welcome later means that one left (the first refusal is the one told).
                first = exc if self._busy is None else self._busy[0]
                self._busy = (first, serving_pid(self.paths))
                self._disconnect()
                time.sleep(BUSY_RETRY_S)
                continue
            if self._busy is not None:
                refusal, refused_by = self._busy
                self._busy = None
                if refused_by is not None and welcome.get("supervisor_pid") != refused_by:
                    self._disconnect()
                    raise refusal
            return conn, started, welcome

    def _disconnect(self) -> None:
        """Close the connection and hold none: a closed one left as the chat's made a
        Ctrl+C in the pause before the next ('error: Bad file descriptor' as it left)."""
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def _hello(self, conn: Connection) -> Frame:
        """Say hello as this terminal; the welcome."""
        conn.sock.settimeout(control_timeout())  # a stopped or hung supervisor is told
        try:
            return conn.request(
                hello(
                    "terminal",
                    terminal_pid=self._pid,
                    workspace=str(self.options.workspace),
                    model=self._model,
                    settings=self.options.settings,
                    secrets=(*secrets_from_environment(), *self._learned),
                    state_root=resolved_state_root(),
                )
            )
        except TimeoutError:
            return self._welcome_after_a_wait(conn)

    def attach(self) -> None:
        """First attach: choose between the offered session and a new one.

        A supervisor that goes away meanwhile is started again and the attach
        redone, keeping the answer already given (a piped line is read once)."""
        if self.console.interactive:
            preload_prompt()  # overlaps the prompt's imports with the wait on the supervisor
        for attempt in range(REATTACH_ATTEMPTS):
            try:
                self._attach_once()
                return
            except ConnectionLost:
                if attempt + 1 == REATTACH_ATTEMPTS:
                    raise
                self._disconnect()
                time.sleep(0.05 * (attempt + 1))

    def _attach_once(self) -> None:
        welcome, _ = self._connect()
        if self._chosen is None:
            self._chosen = self.options.resume or self._choose(welcome)
        if not self._chosen:
            self._open("new", None)
            return
        if self.options.resume:
            self._open("resume", self._chosen)
            return
        try:
            self._open("resume", self._chosen)
        except AnswerStops:
            raise
        except ChatError as exc:  # the chosen file cannot be used: say so, then ask
            self.console.warn(as_error_line(str(exc)))
            self._new_instead()

    def _choose(self, welcome: Frame) -> str:
        """The session to open, from ``welcome``'s offer (asking, unless --yes or --new
        answer): its id, or "" for a new session."""
        offer = welcome.get("offer")
        if self.options.new or not offer:
            if not self.options.new and self.options.yes and welcome.get("taken"):
                self.console.warn(f"note: {welcome['taken']}")  # --yes asked to resume it
                self.console.warn("Starting a new session instead (--yes).")
            return ""
        others = welcome.get("others") or []
        for note in offer.get("notes") or ():  # of the offer: said where it is made
            self.console.warn(note)
        if self.options.yes:  # the offer is not shown: what only it says is said here
            if unanswered := offer.get("unanswered"):
                self._tell_unanswered(str(offer["session_id"]), str(unanswered))
            return str(offer["session_id"])
        resume = self._answer(
            "Resume previous session? [Y/n]",
            said=offer_text(
                offer, others, welcome.get("more_others") or 0, self.console.width()
            ),
            default=True,
            suggestion="--yes or --new",
            choices=1 + len(others),
        )
        if resume is False:
            return ""
        chosen = offer if resume is True else others[resume - 2]
        return str(chosen["session_id"])

    def _tell_unanswered(self, session_id: str, message: str) -> None:
        """Where no offer was shown (``--yes``, ``--resume ID``): the line that says what
        its ``last message unanswered`` line would have."""
        self.console.warn(
            f"note: resuming session {session_id}; its last message got no "
            f'reply: "{unanswered_words(message, self.console.width())}"'
        )

    def _new_instead(self) -> None:
        """Open a new session in place of the one chosen, which could not be opened, once
        the user says so (``--yes`` says so): they chose to go on with that one, and a new
        session started without a word looked like it."""
        if self.options.yes:
            self.console.warn("Starting a new session instead (--yes).")
        elif not self._answer(
            "Start a new session instead? [Y/n]", default=True, suggestion="--new"
        ):
            raise AnswerStops("not starting a session")
        self._chosen = ""  # a re-attach opens a new one too
        self._open("new", None)

    def _answer(
        self,
        question: str,
        *,
        default: bool,
        suggestion: str | None,
        choices: int = 0,
        watch: QuestionWatch | None = None,
        said: str | None = None,
    ) -> bool | int:
        """``said`` (default: ``question``, the question itself) is said, then a yes/no
        answer read. Piped, a line that is not one stops the run (ChatError): it is
        neither taken as an answer nor lost silently."""
        self.questions_asked += 1
        try:
            return self.console.ask_yes_no(
                said or question, default=default, choices=choices, idle=watch
            )
        except UnclearAnswer as exc:
            what = question.removesuffix(" [Y/n]").removesuffix(" [y/N]")
            hint = (
                f"; run with {suggestion} to skip the question"
                if suggestion
                else "; the run stops here (--yes and --new answer only the resume question)"
            )
            accepted = f"y, n or {other_choices(choices)}" if choices > 1 else "y or n"
            raise AnswerStops(
                f"{shown_input(exc.answer, 60)} is not an answer to {what!r} ({accepted}){hint}"
            ) from None

    def _open(
        self,
        mode: str,
        session_id: str | None,
        ask: bool = True,
        announce: bool = True,
        continuing: bool = False,
    ) -> str | None:
        """Open the session; if it is live elsewhere, ask about a new one (WouldAsk instead
        when ``ask`` is False). ``announce``: on a terminal, say which session it is (a
        re-attach says it in its own line). ``continuing``: it is the session this
        terminal never left, after the supervisor went away (it goes on as it was).
        Returns ``session_id`` if a new session was opened because that one was live in
        another terminal."""
        elsewhere: str | None = None
        frame: Frame = {"type": "open", "mode": mode, "session_id": session_id}
        if continuing:
            frame["continuing"] = self.context
        self.conn.send(frame)
        waiting = False  # for the last reply of the session's terminal gone (Ctrl+C: cut it)
        while True:
            try:
                frame = self.conn.receive()
                if frame["type"] == "notice":
                    waiting = waiting or frame["text"] == WAITING_FOR_LAST_REPLY
                    self.show(frame)  # piped, an error line (a failed write) fails the run
                    continue
            except KeyboardInterrupt:
                if not waiting:
                    raise
                waiting = False  # a second Ctrl+C leaves
                self.conn.send({"type": "cancel"})
                continue
            if frame["type"] == "opened":
                self._tell_about_asked()
                if frame["session_id"] != session_id or not continuing:
                    self.context = "resumed" if frame["resumed"] else "fresh"
                if frame["session_id"] != self.session_id:
                    self.on_disk = False
                self.session_id = frame["session_id"]
                self.resumed = bool(frame["resumed"])
                self.on_disk = self.on_disk or self.resumed
                self.phase = frame.get("phase")
                if frame.get("unanswered") and self.options.resume == self.session_id:
                    self._tell_unanswered(self.session_id, str(frame["unanswered"]))
                if self.console.interactive and announce:
                    what = "Resumed" if frame["resumed"] else "New"
                    self.console.warn(f"{what} session {self.session_id}. /help for commands.")
                    for line in frame.get("drift") or ():
                        self.console.warn(f"  {line.removeprefix('- ')}")
                self._show_last_reply(frame.get("last_reply"))
                return elsewhere
            if frame["type"] != "error":
                continue
            if frame["message"] in self._about_asked:  # the --resume'd session's problem
                raise ChatError(frame["message"])  # one line, not the start's too
            self._tell_about_asked()
            if frame["code"] == ErrorCode.SESSION_LIVE:
                if not ask:
                    raise WouldAsk(frame["message"])
                # A note, not an error: a new session instead is offered (and "n" is one).
                self.console.warn(f"note: {frame['message']}")
                elsewhere = session_id
                question = "Start a new session instead? [Y/n]"
                if self.options.yes:  # --yes answers the questions at the start
                    self.console.warn("Starting a new session instead (--yes).")
                else:
                    if not self._answer(question, default=True, suggestion="--new"):
                        raise AnswerStops("not starting a session")
                if self.session_id is None:  # the start's: an attach done again opens new
                    self._chosen = ""
                self.conn.send({"type": "open", "mode": "new", "session_id": None})
                continue
            self._refused(frame, session_id)

    def _show_last_reply(self, last: Frame | None) -> None:
        """The reply the open waited for (its terminal gone let it finish), or that ended
        so before it, unseen, under its heading line, shown as a reply is (piped: on
        stdout); or the line said instead of a reply it did not get."""
        if not last:
            return
        if last.get("heading") and last.get("text"):
            self.console.warn(last["heading"])
        if last.get("text"):
            view = self.console.reply()
            view.write(last["text"])
            view.end()
        if last.get("note"):
            self.console.warn(last["note"])

    def _refused(self, frame: Frame, session_id: str | None) -> NoReturn:
        """The ChatError of an ``open`` of ``session_id`` refused with ``frame``."""
        if frame["code"] == ErrorCode.NOT_FOUND and session_id:
            from cli.sessions import not_found_line

            raise SessionRefused(not_found_line(self.options.workspace, session_id), frame["code"])
        code = frame["code"]
        if frame["message"] in self._told and session_id:  # the start's warning said why
            raise SessionRefused(f"session {session_id} cannot be resumed (see above)", code)
        raise SessionRefused(frame["message"], code)

    def _after_refused_open(self) -> None:
        """The open the front door had answered was refused for real: as if the open had
        been refused at once (the supervisor already running): with ``--resume``, the
        chat ends with its one line (ChatError); a session chosen from the offer gets
        its line and the question whether to start a new one instead."""
        frame, self._refused_open = self._refused_open, None
        assert frame is not None
        chosen, self.session_id = self.session_id, None  # no session was opened
        self.on_disk = self.resumed = False
        if frame["message"] in self._about_asked:  # the --resume'd session's problem
            self._about_asked.clear()
            raise ChatError(frame["message"])
        self._tell_about_asked()
        try:
            if frame["code"] == ErrorCode.SESSION_LIVE:
                self.console.warn(f"note: {frame['message']}")
                self._new_instead()
                return
            self._refused(frame, chosen)
        except AnswerStops:
            raise
        except ChatError as exc:
            if self.options.resume:
                raise
            self.console.warn(as_error_line(str(exc)))
            self._new_instead()

    def _tell_about_asked(self) -> None:
        """The start's lines about the --resume'd session, held until its open answered."""
        for warning in self._about_asked:
            self.console.warn(warning)
            self._told.add(warning)
        self._about_asked.clear()

    def reattach_quietly(self) -> None:
        """Re-attach at once, from the prompt's watch: WouldAsk if that needs a question
        (the session is live elsewhere now), which the next message then asks. Done, it
        is also the re-attach a reply lost before asked of the next message."""
        self._reattach(ask=False)
        self._lost = False

    def lost(self) -> None:
        """The supervisor went away: the next message re-attaches first."""
        self._lost = True

    def stopped_frame(self) -> Frame | None:
        """The ``closed`` frame a deliberate stop of this chat's supervisor could not
        write to it (it was stopped with Ctrl+Z, reading nothing, and the stop does not
        wait for it: ``supervisor/stopped.py``); None if the supervisor went away
        otherwise (a crash). The stop saved the session as it saves every other one."""
        if not stopped_on_purpose(self.paths.directory, self._supervisor_pid):
            return None
        saved = self.on_disk
        if not saved and self.session_id is not None:  # a turn cut by the stop may be kept
            from session.paths import sessions_dir, state_root

            directory = sessions_dir(self.options.workspace, state_root())
            saved = (directory / f"{self.session_id}.json").is_file()
        return {"type": "closed", "saved": saved, "session_id": self.session_id}

    def _reattach(self, quiet: bool = False, ask: bool = True) -> None:
        """The supervisor went away: start one, re-attach, restore the session from disk;
        ChatEnded instead if it was stopped on purpose (no supervisor is started behind
        the back of the user who stopped it).

        A dying supervisor may still accept a connection and then reset it, so
        this tries a few times. ``quiet``: it hung up on a frame it refused; no warning.
        """
        if (stopped := self.stopped_frame()) is not None:
            self._other(stopped)
        previous, saved = self.session_id, self.on_disk
        self._gone_at_reattach = None
        self._shown_before_reattach = set(self.changed_outside)
        elsewhere: str | None = None
        refused: SessionRefused | None = None
        for attempt in range(REATTACH_ATTEMPTS):
            self._disconnect()
            try:
                _, started = self._connect(tell_warnings=False)  # told at the start
                try:
                    if previous:
                        elsewhere = self._open(
                            "resume", previous, ask=ask, announce=False, continuing=True
                        )
                    else:
                        self._open("new", None, announce=False)
                except AnswerStops:
                    raise
                except ChatError as exc:
                    refused = exc if isinstance(exc, SessionRefused) else None
                    self._open("new", None, announce=False)
                except Cancelled:  # at "Start a new session instead?": nothing is opened
                    raise ChatError("cancelled; no session is open") from None
                break
            except ConnectionLost:
                time.sleep(0.05 * (attempt + 1))
            except OtherEndpoint:
                if ask:  # the prompt's watch (not asking) leaves it to the next message's
                    self._tell_left_as_saved(previous if saved else None)
                raise
        else:
            raise ChatError("could not re-attach to the supervisor")
        if quiet and previous == self.session_id:
            return
        how = "started a new one and " if started else ""
        if previous == self.session_id:
            self.console.warn(
                f"warning: the supervisor went away; {how}restored session {self.session_id}"
            )
        elif previous and previous == elsewhere:  # its note said where
            self.console.warn(
                f"warning: the supervisor went away; {how}continuing in new session "
                f"{self.session_id}"
            )
        elif refused is not None and refused.code != ErrorCode.NOT_FOUND and saved:
            why = str(refused).removeprefix("error: ")
            self.console.warn(
                f"warning: the supervisor went away; {how}session {previous} could not be "
                f"resumed ({why}), continuing in new session {self.session_id}"
            )
        else:
            self._gone_at_reattach = previous
            what = "is no longer on disk (removed meanwhile)" if saved else "had not been saved yet"
            self.console.warn(
                f"warning: the supervisor went away; {how}session {previous} {what}, "
                f"continuing in new session {self.session_id}"
            )

    def _tell_left_as_saved(self, session_id: str | None) -> None:
        """The supervisor went away and the chat cannot go on with the one that took its
        place: the session stays as its last turn saved it (and no message is sent)."""
        what = f"session {session_id} is as saved after its last turn" if session_id else (
            "no turn of this session had been saved"
        )
        self.console.warn(f"warning: the supervisor went away; {what}; nothing more was sent")

    # -- the loop -------------------------------------------------------------

    def toolbar(self) -> str:
        """The bottom line of the prompt: session, model, files changed outside; what does
        not fit the terminal's width is left out, the least needed first."""
        parts = [f"session {self.session_id or '-'}", f"model {self._model or 'offline'}"]
        if self.phase:
            parts.append(f"phase {self.phase}")
        if self.input_tokens:
            tokens = self.input_tokens
            parts.append(f"{tokens:,} token{'' if tokens == 1 else 's'} in context")
        if self.changed_outside:
            count = len(self.changed_outside)
            parts.append(f"{count} file{'' if count == 1 else 's'} changed outside")
        return fit_toolbar(parts, self.console.width())

    def run(self) -> int:
        with self.console.keys_held():  # typed ahead of each prompt: for it, unechoed
            try:
                return self._run()
            except Terminated as exc:
                if exc.signum != signal.SIGHUP:  # a terminal that is gone has none
                    self.unsent = self.console.take_unsent()
                raise
            except (ChatEnded, ChatError):  # an end the user did not ask for
                self.unsent = [*self._not_sent, *self.console.take_unsent()]
                raise
            finally:
                if self._ended_by_stop and not self.unsent:
                    self.unsent = self.console.take_unsent()

    def tell_unsent(self) -> None:
        """Each line typed ahead that the chat's end left unsent (``run``), in its line."""
        recalled = " (in your history: Up recalls it)" if self.console.interactive else ""
        for text in self.unsent:
            shown = printable(text.replace("\n", " ")).strip()
            shown = shown if len(shown) <= UNSENT_CHARS else f"{shown[: UNSENT_CHARS - 1]}…"
            self.console.warn(f'{UNSENT_LINE}"{shown}"{recalled}')
        self.unsent = []

    def _stopped_line(self, closed: Frame) -> str:
        """``stopped_line``, and the chat noted as ended by the supervisor's stop."""
        self._ended_by_stop = True
        return stopped_line(closed, self.session_id)

    def _run(self) -> int:
        try:
            self.attach()
        except (Cancelled, KeyboardInterrupt) as stop:  # at a question, or while attaching
            self.console.warn("Cancelled; no session was opened (nothing on disk was changed).")
            self.close()
            return EXIT_INTERRUPTED if isinstance(stop, Interrupted | KeyboardInterrupt) else 0
        try:
            with self._interrupts:
                self.console.waiting = self._interrupts.interruptible
                try:
                    return self._loop()
                finally:
                    self.console.waiting = contextlib.nullcontext
        except KeyboardInterrupt:  # twice while a reply ran: leave now
            self.close()  # the session is saved as on any exit
            return EXIT_INTERRUPTED
        except LeaveNow as leaving:  # twice while a command ran: it cannot be waited for
            self.leave_now(str(leaving))
            return EXIT_INTERRUPTED
        except AnswerStops as stop:  # told first: the last line names the saved session
            self.console.warn(as_error_line(str(stop)))
            self.unsent = self._not_sent  # told last (``tell_unsent``)
            self.close()
            return 1
        except ChatError:
            self.close()  # the session is saved as on any exit, then the error is told
            raise
        except ConnectionLost as exc:
            self.close()
            raise ChatError(f"lost the supervisor: {exc}") from None

    def _loop(self) -> int:
        watch = SupervisorWatch(self)
        # Piped: a "y" for a question not asked (a resumed session's last reply may have).
        may_be_stray = self.questions_asked == 0 and not self.resumed
        interrupted = False  # left by a Ctrl+C (SIGINT), not /exit or the end of input
        while True:
            self._interrupts.clear()  # one that came meanwhile was for what is over
            self.console.late_interrupt = False
            try:
                line = self.console.read_line("> ", watch)
            except KeyboardInterrupt:
                if (ended := self._just_ended()) is not None:
                    self.console.warn(JUST_ENDED_LINE.format(what=ended))
                    continue
                interrupted = True
                break
            if watch.stopped_frame is not None:
                self._other(watch.stopped_frame)
            if line is None:
                break
            # What is sent is what shows, typed or piped: no NUL, bell, escape code or a
            # Windows file's carriage return the user never saw; tabs and newlines stay.
            line = printable(line)
            if self.console.interrupted_after_enter():  # a Ctrl+C typed with the Enter
                if not line.strip():
                    interrupted = True
                    break  # at an empty prompt: leave, as there
                self._interrupts.hold()  # for what the line does: taken at its first wait
            if not line.strip():  # a NUL or an escape code alone is a blank line too
                continue
            if refused := too_long_line(line, self.console.interactive):
                self.console.warn(refused)
                self.a_turn_failed = True
                continue
            if may_be_stray and self._stray_answer(line):
                continue
            if (meant := spaced_command(line)) is not None:
                self._unknown_command(f"'/ {meant}'", f"/{meant}")
                continue
            if line.strip() == "/":  # a command begun, Enter pressed too soon
                self._unknown_command("/", None)
                continue
            if is_command(line):
                asked = self.questions_asked
                try:
                    done = self._slash(line.strip())
                except OpenRefused:
                    self._after_refused_open()
                    done = self._slash(line.strip())
                if not done:
                    break
                self._ended = ("/" + command_name_and_argument(line.strip())[0], time.monotonic())
                may_be_stray = self.questions_asked == asked  # it asked nothing
                continue
            may_be_stray = False
            try:
                self._turn(message_text(line))
            except OpenRefused:  # the session was not opened: the message goes to the new one
                self._after_refused_open()
                self._turn(message_text(line))
            self._ended = None if self._stopped_by_ctrl_c else ("the reply", time.monotonic())
        if self.close():
            return 1
        if interrupted:
            return EXIT_INTERRUPTED
        return 1 if self.a_turn_failed and not self.console.interactive else 0

    def _unknown_command(self, typed: str, meant: str | None) -> None:
        """Say that ``typed`` is no command (and what it may have meant); piped, the run
        fails."""
        hint = f"did you mean {meant}? " if meant else ""
        shown = shown_input(typed, 80)[1:-1]  # a key pasted after a / is no command
        self.console.warn(f"error: unknown command {shown} ({hint}try /help)")
        self.a_turn_failed = True

    def _just_ended(self) -> str | None:
        """What ended less than ``JUST_ENDED_S`` ago on a terminal (the reply, or the
        command), if anything: once (the Ctrl+C after it leaves). Piped, None: a script's
        SIGINT stops the run."""
        ended, self._ended = self._ended, None
        if ended is None or not self.console.interactive:
            return None
        what, at = ended
        return what if time.monotonic() - at < JUST_ENDED_S else None

    def _stray_answer(self, line: str) -> bool:
        """Piped, right after the start or a command that asked nothing: a ``y``/``n``
        line written for a question that was not asked (no session to resume; files that
        already match a checkpoint) is told in one line and not sent as a message."""
        word = line.strip().lower()
        if self.console.interactive or word not in ("y", "yes", "n", "no"):
            return False
        self.console.warn(f"note: {word!r} answers no question (none was asked); not sent")
        return True

    def _send(self, frame: Frame) -> None:
        """Send, after showing what arrived while we waited for input (notices, a stop).
        OpenRefused if the session's open was refused meanwhile: nothing is sent."""
        if self._refused_open is not None:
            raise OpenRefused()
        if self._hung_up:
            self._hung_up = False
            self._reattach(quiet=True)
        if self._lost:
            self._lost = False
            self._reattach()
        try:
            while self.conn.readable():
                self._other(self.conn.receive())
            if self._refused_open is not None:
                raise OpenRefused()
            self.conn.send(frame)
        except ConnectionLost:
            self._resend(frame)

    def _resend(self, frame: Frame) -> None:
        """Re-attach and send ``frame`` again, re-attaching again (a few times) if the
        new supervisor dies before it takes the frame."""
        for _ in range(RESEND_ATTEMPTS):
            self._reattach()
            try:
                self.conn.send(frame)
                return
            except ConnectionLost:
                continue
        raise ChatError("lost the supervisor each time the terminal re-attached")

    def _turn(self, text: str) -> None:
        # The id makes a re-send after a re-attach a retry, not a second turn: a turn the
        # supervisor saved before it died is answered from the session.
        frame = {"type": "user_message", "text": text, "id": secrets.token_hex(8)}
        self._stopped_by_ctrl_c = False
        if self._interrupts.take():  # a Ctrl+C with the Enter, or since: it is not sent
            self.a_turn_failed = self._stopped_by_ctrl_c = True  # as a reply cancelled
            self.console.warn("[cancelled]")
            return
        try:
            self._send(frame)  # whole: a Ctrl+C meanwhile cancels the reply once it is sent
        except (ChatEnded, ChatError):  # a re-attach first ended the chat: never sent
            self._not_sent = [text]
            raise
        views = [self.console.reply()]
        self._called_tools = False
        try:
            with self.console.keys_unechoed():
                self._receive_turn(frame, views)
        except Terminated as exc:
            if exc.signum == signal.SIGHUP:  # the window closed: the reply goes on, and is kept
                self.reply_left_running = True
                raise
            with contextlib.suppress(OSError):  # a hung-up terminal takes no more output
                views[-1].cut()  # piped, the partial text held back is no reply: dropped
                self.console.warn(CUT_OFF_AFTER_TOOLS if self._called_tools else CUT_OFF)
            raise
        except ChatEnded:  # the supervisor stopped
            with contextlib.suppress(OSError):  # a hung-up terminal takes no more output
                views[-1].cut()  # piped, the partial text held back is no reply: dropped
                # With no tool called, the turn is surely not kept: no hedge to puzzle over.
                self.console.warn(CUT_OFF_AFTER_TOOLS if self._called_tools else CUT_OFF)
            raise
        finally:
            views[-1].end()

    def _next_frame(self) -> Frame:
        """The next frame of a reply or a command's answer. A Ctrl+C interrupts the wait
        for it, and only the wait: one taken just after a read would lose what was read.
        Meanwhile a long paste is taken off the terminal's input (``wait_readable``)."""
        while True:
            with self._interrupts.interruptible():
                framed = self.conn.readable() or self.console.wait_readable(
                    self.conn.sock.fileno()
                )
            if framed:
                return self.conn.receive()
            self.console.take_typed_ahead()

    def _receive_turn(self, frame: Frame, views: list[ReplyView]) -> None:
        """Show the reply to ``frame`` in ``views[-1]``; a reply asked for again after a
        re-attach gets a view of its own, so it does not run on from the cut one."""
        view = views[-1]
        retried = False
        cancelled = False
        held: list[str] = []  # the text that came after the Ctrl+C: shown if the turn is kept
        while True:
            try:
                reply = self._next_frame()
            except KeyboardInterrupt:
                if cancelled:
                    raise
                cancelled = self._stopped_by_ctrl_c = True
                self.console.hold_typed_ahead()  # lines typed meanwhile wait, unsent
                with contextlib.suppress(ConnectionLost):  # if lost, the receive tells it
                    self.conn.send({"type": "cancel"})
                continue
            except ConnectionLost:
                if cancelled:  # the reply the user cancelled is not asked for again
                    return self._unanswered("[cancelled]", view)
                if retried:
                    return self._unanswered(LOST_TWICE, view)
                retried = True
                try:  # a Ctrl+C from here on, ending the cut view included, cancels
                    if view.cut():  # shown, the cut text keeps its own line; held, it goes
                        self.console.warn(
                            CUT_BY_RESTART_AFTER_TOOLS if self._called_tools else CUT_BY_RESTART
                        )
                    with self._interrupts.interruptible():
                        self._reattach()
                    # Its tools had run: they must not run again (answered if it was saved).
                    self.conn.send({**frame, "saved_only": True} if self._called_tools else frame)
                except ConnectionLost:
                    return self._unanswered(LOST_TWICE, view)
                except KeyboardInterrupt:  # the user's first Ctrl+C: the next one leaves
                    self._stopped_by_ctrl_c = True
                    return self._unanswered("[cancelled]", view)
                view = self.console.reply()
                views.append(view)
                continue
            kind = reply["type"]
            if kind == "text_delta" and cancelled:
                held.append(reply["text"])  # not drawn (a fast model's could take seconds)
                continue  # unless the turn ended before the cancel reached it
            if kind == "text_delta":
                view.write(reply["text"])
            elif kind == "tool_call":
                self._called_tools = True
                view.tool(reply["text"])
            elif kind == "turn_end" and self._refused_open is not None:
                view.cut()  # the message was never taken: no session was open
                raise OpenRefused()
            elif kind == "error" and reply.get("open_refused"):
                self._refused_open = reply  # the message's own answer (no session) follows
            elif kind == "turn_end":
                self._shown_before_reattach.clear()  # the re-attach's own notices came first
                if learned := reply.get("secrets"):
                    self._learned += tuple(s for s in learned if isinstance(s, str))
                if reply["status"] == "ok":
                    self.on_disk = True  # saved before the supervisor said it ended
                    if held:  # a Ctrl+C too late: the reply is kept whole, so shown whole
                        view.write("".join(held))
                    view.end()
                else:
                    view.cut()  # the turn is not kept: piped, its text is no reply
                    self.a_turn_failed = True
                if reply.get("input_tokens"):
                    self.input_tokens = reply["input_tokens"]
                self.phase = reply.get("phase") or self.phase
                if reply["status"] == "cancelled":
                    self.console.warn("[cancelled]")
                elif reply["status"] == "error":
                    self.console.warn(as_error_line(str(reply.get("error"))))
                elif cancelled:
                    self.console.warn(KEPT_AFTER_CTRL_C)
                for note in reply.get("notes", ()):  # below the reply, not above its end
                    self.show({"type": "notice", "text": note})
                return
            elif kind == "error" and reply.get("code") in REFUSED_FRAME_CODES:
                view.end()  # the message was refused: no turn follows
                self.a_turn_failed = True
                self._hung_up = reply["code"] != ErrorCode.INVALID_REQUEST
                self.console.warn(f"error: message not sent: {reply['message']}")
                return
            elif reply["type"] in ("notice", "error"):
                # A notice (a failed save, a file changed outside) gets a line of its
                # own. Piped, the text held back stays held (it goes to stdout when the
                # reply is whole); a colour terminal draws the notice above the paragraph
                # being written; else it comes after the text so far, and the reply goes
                # on below it.
                if view.whole_across_notices:
                    self._other(reply)
                    continue
                view.end()
                self._other(reply)
                view = self.console.reply()
                views.append(view)
            else:
                self._other(reply)

    def _unanswered(self, line: str, view: ReplyView | None = None) -> None:
        """End a reply no supervisor will give, with one line; the next message
        re-attaches first. Piped, the text it held back is dropped: no whole reply."""
        if view is not None:
            view.cut()
        self.a_turn_failed = True
        self._lost = True
        self.console.warn(line)

    def show(self, frame: Frame) -> None:
        """A notice or an error for the user (piped, an error line fails the run)."""
        if frame["type"] == "notice":
            text = frame["text"]
            if text.startswith("error:"):  # a cause the start told is not said again
                shorter = told_cause(text, self._told)
                if text.startswith(SAVE_RETRIED):
                    if shorter is not None:
                        return  # retried, refused as the start said: nothing new
                else:
                    self.a_turn_failed = True
                    text = shorter or text
                    if NOTHING_SAVED_AS_TOLD.fullmatch(text):
                        return  # the run fails on the start's one line
            if (changed := changed_file(text)) is not None:
                if frame.get("at_reattach") and changed in self._shown_before_reattach:
                    self._shown_before_reattach.discard(changed)  # the re-attach's word of
                    return  # a change shown before: seen already (a later one is shown)
                self.changed_outside.add(changed)
            self.changed_outside.update(frame.get("files", ()))  # a flood's line: unnamed
            self.console.warn(text)
        elif frame["type"] == "error" and frame.get("open_refused"):
            self._refused_open = frame  # told as the open's refusal, where it is handled
        elif frame["type"] == "error":
            self.a_turn_failed = True
            self.console.warn(as_error_line(frame["message"]))

    def _other(self, frame: Frame) -> None:
        kind = frame["type"]
        if kind in ("notice", "error"):
            self.show(frame)
        elif kind == "closed":
            if frame.get("unsaved"):  # the stop's last word: nothing is left to close
                self._disconnect()
                raise ChatError(unsaved_line(frame, self.session_id).removeprefix("error: "))
            raise ChatEnded(self._stopped_line(frame))

    def _slash(self, line: str) -> bool:
        """Run a slash command; False means leave."""
        name, arg = command_name_and_argument(line)
        if name in TERMINAL_COMMANDS and arg.strip():  # /exit strategy ... is not a leave
            self.console.warn(
                f"error: /{name} takes no argument (a message that starts with / is "
                "sent as //...); nothing was done"
            )
            self.a_turn_failed = True
            return True
        if name in ("exit", "quit"):
            return False
        if name == "help":
            self.console.say(help_text(self.console.width(), self.console.interactive))
            return True
        if name == "model":
            self.console.say(
                f"model: {self._model or 'offline'} (from {self.options.model_source}); "
                "set it with --model, AGENT_ASSIST_MODEL or model in config.toml"
            )
            return True
        if name == "new":
            name = "reset"
        if name not in ("save", "reset", "checkpoint", "compact", "resume"):
            self._unknown_command(f"/{name}", OTHER_TOOLS_NAMES.get(name) or command_close_to(name))
            return True
        command = {"type": "command", "name": name, "arg": arg.strip() or None}
        self._send(command)
        interrupted = False
        said_yes = False  # to its question: a /reset cut short may have left files
        again = name in SENT_AGAIN_COMMANDS and not arg.strip()
        while True:
            try:
                with self.console.keys_unechoed():  # typed meanwhile: for the next prompt
                    frame = self._next_frame()
            except ConnectionLost:
                if again:  # changes nothing twice: sent again to the supervisor that follows
                    again = False
                    self._reattach_after_loss()
                    self._send(command)
                    continue
                self._command_interrupted(name, said_yes)
                return True
            except KeyboardInterrupt:
                if interrupted:
                    raise LeaveNow(name) from None
                interrupted = True
                if name in CANCELLED_COMMANDS:  # its answer says what came of it
                    self.console.hold_typed_ahead()  # as a cancelled reply's: unsent
                    with contextlib.suppress(ConnectionLost):  # if lost, the receive tells
                        self.conn.send({"type": "cancel"})
                    continue
                self.console.warn(
                    f"/{name} cannot be interrupted and is still running; "
                    "Ctrl+C again to leave (the session is saved)"
                )
                continue
            if frame["type"] == "error" and frame.get("open_refused"):
                self._refused_open = frame  # the command's own answer (no session) follows
                continue
            if frame["type"] == "error" and frame.get("code") in REFUSED_FRAME_CODES:
                self._hung_up = frame["code"] != ErrorCode.INVALID_REQUEST
                self.console.warn(f"error: /{name} not run: {frame['message']}")
                self.a_turn_failed = True
                return True
            if frame["type"] == "command_result" and self._refused_open is not None:
                raise OpenRefused()  # not run: no session was open
            if frame["type"] == "command_result":
                self._command_result(name, frame, arg)
                return True
            if frame["type"] == "confirm":
                reply = {"type": "confirm_reply", "id": frame["id"], "answer": False}
                try:
                    answer = self._answer(
                        frame["question"],
                        default=False,
                        suggestion=None,
                        watch=QuestionWatch(self),
                    )
                    reply["answer"] = said_yes = answer is True
                except Cancelled:
                    reply["cancel"] = True
                try:
                    self.conn.send(reply)
                except ConnectionLost:  # the supervisor went while the question waited
                    self._command_interrupted(name, said_yes)
                    return True
            else:
                self._other(frame)

    def _command_interrupted(self, name: str, said_yes: bool = False) -> None:
        """The supervisor went during ``/name``: a stop ends the chat (its ``closed`` frame
        may still wait to be read); after a crash, re-attach and say the command did not
        finish, or, for a ``/reset`` whose session the re-attach found gone (its delete
        was done), that the session is reset (``said_yes``: files it was to delete may
        remain)."""
        before = self.session_id
        self._reattach_after_loss()
        if name == "reset" and before is not None and self._gone_at_reattach == before:
            self.context = "fresh"
            self.phase, self.input_tokens = None, None
            self.changed_outside.clear()
            line = RESET_CUT_AFTER_DELETE.format(old=before, new=self.session_id)
            if not said_yes:
                self.console.warn(f"note: {line}.")
                return
            self.console.warn(f"error: {line}, but {RESET_FILES_MAY_REMAIN}")
        else:
            self.console.warn(f"error: /{name} was interrupted; please run it again")
        self.a_turn_failed = True

    def _reattach_after_loss(self) -> None:
        """Show what the lost connection still held (a stop's ``closed`` frame ends the
        chat), then re-attach."""
        with contextlib.suppress(ConnectionLost):
            while self.conn.readable():
                self._other(self.conn.receive())
        self._reattach()

    def _command_result(self, name: str, frame: Frame, arg: str = "") -> None:
        """Show a command's result and keep the toolbar true to the session it leaves."""
        text = frame["text"]
        width = self.console.info_width()  # of the terminal the lines are drawn on
        if name == "checkpoint" and not arg.strip() and self.console.interactive and width:
            text = fit_to_width(text, width)  # a line each
        self.console.say(text)
        if any(line.startswith("error:") for line in text.splitlines()):
            self.a_turn_failed = True  # piped, a failed command fails the run as a turn does
        if name == "reset" and text.startswith("Session reset"):
            self.session_id = text.rsplit("New session ", 1)[-1][:12]
            self.on_disk = False
            self.context = "fresh"
            self.phase, self.input_tokens = None, None
            self.changed_outside.clear()
        elif name == "checkpoint" and text.startswith(RESTORED):
            self.phase, self.input_tokens = frame.get("phase"), None  # the checkpoint's
            number = text.removeprefix(RESTORED).split(" ", 1)[0]  # "3", from "3 (2 turns)"
            self.context = int(number) if number.isdigit() else "resumed"
            for line in text.splitlines():  # files written back are as the checkpoint had them
                if line.startswith(FILES_RESTORED):
                    restored = line.removeprefix(FILES_RESTORED).removesuffix(".").split(", ")
                    self.changed_outside.difference_update(restored)
        elif frame.get("phase"):
            self.phase = frame["phase"]
        if frame.get("input_tokens"):  # a compaction's: the context is smaller now
            self.input_tokens = frame["input_tokens"]

    def leave_now(self, command: str) -> None:
        """Leave without waiting for the supervisor, busy with ``/command``: it saves the
        session when it is done, as for a terminal that went away."""
        if self._conn is not None:
            with contextlib.suppress(ConnectionLost, OSError):
                self.conn.send({"type": "close"})
            self.conn.close()
        which = f"session {self.session_id}" if self.session_id else "the session"
        self.console.warn(f"Left; {which} is saved once /{command} ends.")

    def hang_up(self) -> None:
        """Leave with no ``close`` frame: the supervisor sees a terminal gone."""
        if self._conn is not None:
            self._conn.close()

    def close(self, again: bool = True) -> bool:
        """Leave: the supervisor saves (as on any exit) and says so before we go. If it
        went away meanwhile (killed, crashed), its heir or a new one restores the session
        from disk and saves it, as the next message would (``again``: once).

        True when turns could not be saved (they were told, and where they are kept)."""
        if self._conn is None:  # none to leave by: a re-attach a Ctrl+C cut short
            if self._lost and self.session_id is not None and self.on_disk:
                self._tell_left_as_saved(self.session_id)
            return False
        lost = False
        try:
            self.conn.sock.settimeout(CLOSE_TIMEOUT_S)  # never hang on the way out
            sent = False
            while True:
                if not sent and not self.conn.readable():
                    self.conn.send({"type": "close"})
                    sent = True
                frame = self.conn.receive()
                if frame["type"] == "closed" and self._refused_open is not None:
                    refused, self._refused_open = self._refused_open, None
                    self.console.warn(as_error_line(refused["message"]))  # nothing to save
                    return True
                if frame["type"] == "closed":
                    if frame.get("unsaved"):
                        self.console.warn(unsaved_line(frame, self.session_id))
                        return True
                    if not sent:  # the supervisor was stopped while we waited
                        self.console.warn(self._stopped_line(frame))
                    elif frame["saved"]:  # piped too: a script learns its session id
                        self.console.warn(f"Session {frame['session_id']} saved.")
                    elif self.session_id is not None and not frame.get("told"):
                        # said, not guessed from silence; not after "could not be saved"
                        self.console.warn("Nothing to save (no turn was completed).")
                    break
                self._other(frame)
        except ConnectionLost:
            if (stopped := self.stopped_frame()) is not None:
                self.console.warn(self._stopped_line(stopped))
            else:
                lost = again
        except (KeyboardInterrupt, TimeoutError):
            pass
        finally:
            self.conn.close()
        return self._close_after_reattach() if lost else False

    def _close_after_reattach(self) -> bool:
        """The supervisor went away as the chat ended: the session's turns are on disk
        (each was saved before its reply ended), but the exit's save and its last line,
        which names the session for a script, were lost with it (a run ended silently)."""
        if self.session_id is None or not self.on_disk:
            return False  # nothing saved to restore: a new session without a turn
        try:
            self._reattach(quiet=True, ask=False)
        except (ChatError, WouldAsk, ConnectionLost, OSError):
            self.console.warn(
                f"warning: the supervisor went away as the chat ended; session "
                f"{self.session_id} is as saved after its last turn"
            )
            return False
        return self.close(again=False)


def serving_pid(paths: RuntimePaths) -> int | None:
    """The pid ``supervisor.pid`` names, if that process runs (a killed supervisor's
    file stays until the one after it writes its own)."""
    try:
        pid = int(paths.pid_file.read_text())
        os.kill(pid, 0)
    except (OSError, ValueError, OverflowError):
        return None
    return pid


def resolved_state_root() -> Path:
    """Where this client keeps sessions, as the supervisor compares it (``hello``)."""
    from session.paths import state_root

    return state_root().resolve()


def history_file(workspace: Path) -> Path:
    """The project's input history: ``<root>/projects/<name>_<hash8>/prompt_history``."""
    from session.paths import sessions_dir, state_root

    legacy = state_root() / "prompt_history"  # before history was per project
    if legacy.is_file():
        legacy.chmod(0o600)
    return sessions_dir(workspace, state_root()).parent / "prompt_history"


class Terminated(Exception):
    """SIGTERM or SIGHUP: the chat leaves as on an exit (the supervisor saves and says so)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"signal {signum}")
        self.signum = signum


@contextlib.contextmanager
def ended_by_signals() -> Iterator[None]:
    """While the chat runs, SIGTERM and SIGHUP raise Terminated (their default ended the
    process at once: the prompt's toolbar was left on the screen and nothing said the
    session was saved)."""
    import signal

    def terminate(signum: int, frame: object) -> None:
        current = sys.modules.get("prompt_toolkit.application.current")
        app = current.get_app_or_none() if current is not None else None
        if app is not None and app.is_running and app.future is not None and not app.future.done():
            # Raised here it would land in one of the prompt's tasks, which reports it
            # and waits for Enter: the prompt ends with it instead.
            app.exit(exception=Terminated(signum))
            return
        raise Terminated(signum)

    previous = {s: signal.signal(s, terminate) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def run_chat(options: ChatOptions) -> int:
    console = Console()
    if console.interactive:
        console.history = history_file(options.workspace)
    chat = Chat(options, console, runtime_paths())
    try:
        with ended_by_signals():
            status = chat.run()
        chat.tell_unsent()
        return status
    except Terminated as exc:  # SIGTERM or SIGHUP: leave as an exit does
        if chat.reply_left_running:
            chat.hang_up()
            return 128 + exc.signum
        with contextlib.suppress(OSError):  # a hung-up terminal takes no more output
            chat.close()
            chat.tell_unsent()
        return 128 + exc.signum
    except BrokenPipeError:  # the reader of our replies went away (``| head -1``)
        silence_stdout()  # what is still to print goes nowhere
        chat.close()  # saved as on any exit, and said on stderr
        chat.console.warn("the output was closed; the run stopped before the end of its input")
        return 1
    except ChatEnded as exc:
        if chat.console.interactive:
            chat.console.warn(str(exc))
            chat.tell_unsent()
            return 0
        chat.console.warn(f"{exc}; the run stopped before the end of its input")
        chat.tell_unsent()
        return 1
    except ChatError as exc:
        if not chat.unsent:
            raise
        chat.console.warn(as_error_line(str(exc)))  # the error first, as a stop's line
        chat.tell_unsent()
        return 1
    except RemoteError as exc:
        raise ChatError(remote_error_text(exc)) from exc
    except ConnectionLost as exc:
        raise ChatError(f"lost the supervisor: {exc}") from exc
