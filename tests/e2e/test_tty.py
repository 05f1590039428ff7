"""The interactive terminal through a real pty: prompt, streaming, Ctrl+C, Ctrl+D."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import select
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from cli.chat import JUST_ENDED_LINE, JUST_ENDED_S, KEPT_AFTER_CTRL_C
from tests.e2e.harness import AGENT_ASSIST, Env, Terminal, wait_for
from tests.e2e.openai_server import ChatServer

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07|\r")


def _take_controlling_terminal() -> None:
    """In the child: a new session whose controlling terminal is the pty (so ^C is SIGINT)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Pty:
    def __init__(
        self,
        env: Env,
        terminal: Terminal,
        *args: str,
        under: tuple[str, ...] = (),
        term: str = "xterm",
        program: tuple[str, ...] = (AGENT_ASSIST,),
        columns: int = 200,
    ) -> None:
        """``under``: a command that runs agent-assist (a shell of the test's own);
        ``program``: what runs instead of agent-assist."""
        self.master, slave = os.openpty()
        environ = env.environ(
            terminal, TERM=term, COLUMNS=str(columns), LINES="50", PROMPT_TOOLKIT_NO_CPR="1"
        )
        self.process = subprocess.Popen(
            [*under, *program, *args],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=env.workspace,
            env=environ,
            preexec_fn=_take_controlling_terminal,
        )
        os.close(slave)
        self.seen = b""
        self.position = 0

    def expect(self, needle: str, timeout: float = 30.0) -> None:
        """Wait for ``needle`` after the previous match (escape codes ignored)."""
        deadline = time.monotonic() + timeout
        while (found := ANSI.sub(b"", self.seen).find(needle.encode(), self.position)) < 0:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError(
                    f"did not see {needle!r} in {ANSI.sub(b'', self.seen)[-500:]!r}"
                )
            ready, _, _ = select.select([self.master], [], [], remaining)
            if ready:
                try:
                    self.seen += os.read(self.master, 65536)
                except OSError:
                    shown = ANSI.sub(b"", self.seen)[-600:]
                    raise AssertionError(f"pty closed before {needle!r}: {shown!r}") from None
        self.position = found + len(needle)

    def expect_prompt(self) -> None:
        self.expect(">")

    def type(self, text: str) -> None:
        os.write(self.master, text.encode())

    def close(self) -> None:
        """SIGKILL every process of the pty's session: a job-control shell's job has a
        process group of its own, and a chat left running there started a supervisor as
        the cleanup killed the first (H185: two outlived a suite)."""
        wait_for(lambda: not kill_session(self.process.pid), what="the pty's processes to end")
        self.process.wait()
        os.close(self.master)


def sigint_pending(pid: int) -> bool:
    """Whether a SIGINT waits for process ``pid`` (stopped: it is taken at its SIGCONT)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, mask = line.partition(":")
        if name in ("SigPnd", "ShdPnd") and int(mask, 16) & 1 << (signal.SIGINT - 1):
            return True
    return False


def held_keys(master: int) -> bool:
    """Whether the chat on the pty ``master`` holds the keys typed outside a prompt (its
    terminal reads them unechoed, key by key)."""
    lflag = termios.tcgetattr(master)[3]  # the other end's settings
    return not lflag & (termios.ICANON | termios.ECHO)


def kill_session(sid: int) -> list[int]:
    """SIGKILL the running processes of session ``sid``; those it found (none: all ended)."""
    members = in_session(sid)
    for pid in members:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return members


def in_session(sid: int) -> list[int]:
    """The running processes of session ``sid`` (zombies left out: they have ended)."""
    found = []
    for entry in os.listdir("/proc"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            fields = Path(f"/proc/{entry}/stat").read_bytes().rsplit(b")", 1)[1].split()
            if fields[0] != b"Z" and int(fields[3]) == sid:
                found.append(int(entry))
    return found


@pytest.fixture
def server(streaming_server: ChatServer) -> ChatServer:
    return streaming_server


def streaming_after_one_turn(tty: Pty) -> None:
    """One turn answered ("hello tty"), then a slow reply streaming (seen up to word3)."""
    tty.expect("/help for commands.")
    tty.type("hello tty\r")
    tty.expect("echo: hello tty")
    tty.type("be slow please\r")
    tty.expect("word3")


def one_turn(tty: Pty, text: str) -> None:
    """Once the chat is up, ``text`` sent and answered by the offline model; at the prompt."""
    tty.expect("/help for commands.")
    tty.type(f"{text}\r")
    tty.expect(f'You said: "{text}"')
    tty.expect_prompt()


def test_prompt_streaming_ctrl_c_cancels_and_ctrl_d_exits(env: Env, server: ChatServer) -> None:
    tty = Pty(env, env.terminal())
    try:
        streaming_after_one_turn(tty)
        tty.type("\x03")
        tty.expect("[cancelled]")
        tty.expect_prompt()
        tty.type("/help\r")
        tty.expect("/reset, /new")
        tty.expect_prompt()
        tty.type("\x04")
        assert tty.process.wait(timeout=30) == 0
        tty.expect("saved.")
    finally:
        tty.close()
    (session_id,) = env.session_ids()
    messages = str(env.session(session_id)["recent_messages"])
    assert "hello tty" in messages
    assert "word199" not in messages, "the cancelled reply is not kept"


def test_lines_typed_ahead_survive_a_ctrl_c_and_wait_unsent_at_the_next_prompts(
    env: Env, server: ChatServer
) -> None:
    """A helper's find: a line typed and entered while a reply streamed was dropped by the
    Ctrl+C that cancelled the reply (the terminal flushes its input on SIGINT), untold.
    Kept, each waits at a prompt of its own; the user cancelled, so none is sent by itself."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("first typed ahead\rsecond typed\x03")  # the pty takes them in order
        tty.expect("[cancelled]")
        tty.expect("first typed ahead")  # at the next prompt, not sent
        tty.type("\r")
        tty.expect("echo: first typed ahead")
        tty.expect("second typed")
        tty.type(" too\r")
        tty.expect("echo: second typed too")
    finally:
        tty.close()
    assert sum("first typed ahead" in r["messages"][-1]["content"] for r in server.requests) == 1


def test_on_a_dumb_terminal_a_line_held_after_a_ctrl_c_is_shown_at_its_prompt(
    env: Env, server: ChatServer
) -> None:
    """A helper's find (H76): with TERM=dumb the prompt draws none of the text it starts
    with: a line typed ahead and held after a Ctrl+C waited invisible, and Enter sent it."""
    tty = Pty(env, env.terminal(), term="dumb")
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("held line here\r\x03")
        tty.expect("[cancelled]")
        tty.expect("held line here")  # not echoed while the reply streamed: only here
        tty.type("\r")
        tty.expect("echo: held line here")
    finally:
        tty.close()


def test_a_line_entered_with_the_message_waits_unsent_after_a_ctrl_c_cancels_the_reply(
    env: Env, server: ChatServer
) -> None:
    """H73's find: a line that came in one read with the message's Enter (typed fast, or
    pasted with no bracketed paste) was kept by the prompt for the next one, which sent it
    by itself once a Ctrl+C had cancelled the reply: the user cancelled, so like any line
    typed ahead of the reply it waits at the next prompt for Enter."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\rtyped with it\r")  # one write: one read of the prompt
        tty.expect("word3")
        tty.type("\x03")
        tty.expect("[cancelled]")
        tty.expect("typed with it")  # at the next prompt
        time.sleep(2)
        assert not any(
            "typed with it" in r["messages"][-1]["content"] for r in server.requests
        ), "sent by itself after the Ctrl+C"
        tty.type(" now\r")
        tty.expect("echo: typed with it now")
    finally:
        tty.close()


def test_a_file_changed_while_a_reply_streams_is_told_at_once_and_the_reply_goes_on(
    env: Env, server: ChatServer
) -> None:
    """DESIGN 6c: the notice comes within a second while the session is live, a reply
    streaming or not; the reply is drawn whole all the same."""
    (env.workspace / "agent_spec.md").write_text("# spec\n")
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        with (env.workspace / "agent_spec.md").open("a") as edit:
            edit.write("edited during the reply\n")
        tty.expect("note: agent_spec.md changed outside agent-assist", timeout=5)
        assert b"word199" not in ANSI.sub(b"", tty.seen), "told while the reply streams"
        tty.expect("word199")
        tty.expect_prompt()
    finally:
        tty.close()
    shown = ANSI.sub(b"", tty.seen)
    assert shown.count(b"changed outside agent-assist") == 1


def test_a_change_shown_before_the_supervisor_died_is_not_shown_again(env: Env) -> None:
    """A helper's find (H51): a change the terminal had shown, not yet told to the model,
    was shown a second time after the re-attach (the model is told it once, as it should)."""
    (env.workspace / "agent_spec.md").write_text("# spec\n")
    tty = Pty(env, env.terminal())
    try:
        one_turn(tty, "hello")
        with (env.workspace / "agent_spec.md").open("a") as edit:
            edit.write("edited at the prompt\n")
        tty.expect("note: agent_spec.md changed outside agent-assist")
        env.kill_supervisor_and_heir()
        tty.type("after the crash\r")
        tty.expect("[changed outside: agent_spec.md]")
        tty.expect_prompt()
    finally:
        tty.close()
    shown = ANSI.sub(b"", tty.seen)
    assert shown.count(b"changed outside agent-assist") == 1


def test_keys_typed_while_a_reply_streams_wait_for_the_next_prompt(
    env: Env, server: ChatServer
) -> None:
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        typed_at = len(ANSI.sub(b"", tty.seen))
        tty.type("next question")  # no Enter: typed ahead while the reply streams
        tty.expect("word199")
        during = ANSI.sub(b"", tty.seen)[typed_at : tty.position]
        assert b"next question" not in during, "not echoed over the streaming reply"
        tty.expect_prompt()
        tty.expect("next question")  # the next prompt starts with what was typed
        tty.type("\r")
        tty.expect("echo: next question")
    finally:
        tty.close()


def _paste(tty: Pty, text: str) -> None:
    """Paste ``text`` as a terminal does: its newlines are Enter keys (CR), and it is
    bracketed only when the program asked for bracketed paste (and did not turn it off)."""
    pasted = text.replace("\n", "\r")
    if tty.seen.rfind(b"\x1b[?2004h") > tty.seen.rfind(b"\x1b[?2004l"):
        pasted = f"\x1b[200~{pasted}\x1b[201~"
    tty.type(pasted)


def test_a_pasted_text_whose_first_line_is_a_command_is_that_command_with_an_argument(
    env: Env,
) -> None:
    """H81's find: a paste of "/save" then more lines was answered "error: unknown command
    /save" and, on the next line, "this (try /help)": the name was cut at the first space,
    not at the newline. It is /save given an argument, which runs nothing, in one line."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.expect_prompt()
        _paste(tty, "/save\nthis is the second line")
        tty.type("\r")
        tty.expect("error: /save takes no argument")
        tty.expect("nothing was done")
        assert b"unknown command" not in tty.seen
    finally:
        tty.close()


def test_text_pasted_while_a_reply_streams_waits_whole_at_the_next_prompt(
    env: Env, server: ChatServer
) -> None:
    """H74's find: three lines pasted while a reply streamed were sent as three messages
    (three turns, three replies) once it ended, where the same paste at the prompt is one
    message that waits for Enter; and a line longer than 4,095 characters typed or pasted
    meanwhile was sent cut there, untold (the terminal's line editing keeps no more of a
    line). The paste waits whole at the next prompt, as one message."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        _paste(tty, "first pasted line\nsecond line\nthird line")
        tty.expect("word199")
        tty.expect("third line")  # at the next prompt
        time.sleep(2)
        contents = [r["messages"][-1].get("content") for r in server.requests]
        assert not any("pasted line" in str(c) for c in contents), "sent by itself"
        tty.type("\r")
        tty.expect("echo: first pasted line")
        wait_for(lambda: "first pasted line" in str(server.requests[-1]["messages"][-1]))
        assert server.requests[-1]["messages"][-1]["content"] == (
            "first pasted line\nsecond line\nthird line"
        )
        tty.expect_prompt()
        long_line = "start " + "abcdefghij" * 600 + " end"
        tty.type("be slow please\r")
        tty.expect("word3")
        _paste(tty, long_line)
        tty.expect("word199")
        tty.type("\r")
        wait_for(lambda: "start abc" in str(server.requests[-1]["messages"][-1]))
        assert server.requests[-1]["messages"][-1]["content"] == long_line
    finally:
        tty.close()


def test_text_pasted_while_a_reply_streams_waits_whole_after_a_ctrl_c(
    env: Env, server: ChatServer
) -> None:
    """H74: the lines typed ahead of a reply a Ctrl+C cancelled wait at the next prompts,
    one each; a paste among them is one of them, whole, and a line edited as it was
    typed (Backspace) waits as edited."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("typedX\x7f line\r")
        _paste(tty, "pasted one\npasted two")
        tty.type("\x03")
        tty.expect("[cancelled]")
        tty.expect("typed line")
        tty.type("\r")
        tty.expect("echo: typed line")
        tty.expect("pasted two")  # the paste, at the prompt after
        tty.type("\r")
        wait_for(lambda: "pasted one" in str(server.requests[-1]["messages"][-1]))
        assert server.requests[-1]["messages"][-1]["content"] == "pasted one\npasted two"
    finally:
        tty.close()


def test_a_ctrl_c_after_a_long_paste_while_a_reply_streams_cancels_it(
    env: Env, server: ChatServer
) -> None:
    """A left-out of session 21 (H76): a paste of over 4 KB during a reply filled the
    terminal's input queue (4,096 bytes), and a Ctrl+C typed after it waited behind the
    paste, no signal: the reply ran on to its end, and the next prompt read the Ctrl+C as
    a key (clearing the paste). The Ctrl+C cancels the reply, and the paste waits whole."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        long_paste = "begin " + "0123456789" * 900 + " Z"
        _paste(tty, long_paste)
        tty.type("\x03")
        tty.expect("[cancelled]", timeout=5)  # the reply takes 10 s to its end
        tty.expect("Z")  # the paste's end, held at the next prompt (its start scrolled off)
        tty.type("\r")
        wait_for(lambda: "begin 0123" in str(server.requests[-1]["messages"][-1]))
        assert server.requests[-1]["messages"][-1]["content"] == long_paste
    finally:
        tty.close()


def test_a_ctrl_c_after_a_long_paste_while_compact_waits_cancels_it(
    env: Env, server: ChatServer
) -> None:
    """The same as for a reply, for the wait of ``/compact`` (cancelled by a Ctrl+C since
    the summary model may take 15 s): a paste of over 4 KB meanwhile held the Ctrl+C
    behind it in the terminal's input, no signal."""
    env.extra.update(AGENT_ASSIST_SUMMARY_MODEL="openai-chat:summary-model")
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("hello tty\r")
        tty.expect("echo: hello tty")
        server.hang_summaries = True
        tty.type("/compact\r")
        wait_for(lambda: any(r["model"] == "summary-model" for r in server.requests))
        long_paste = "begin " + "0123456789" * 900 + " Z"
        _paste(tty, long_paste)
        tty.type("\x03")
        tty.expect("Compaction cancelled; nothing was changed.", timeout=10)  # not 15 s
        tty.expect("Z")  # the paste's end, held at the next prompt
        server.hang_summaries = False
        tty.type("\r")
        wait_for(lambda: "begin 0123" in str(server.requests[-1]["messages"][-1]))
        assert server.requests[-1]["messages"][-1]["content"] == long_paste
    finally:
        tty.close()


def test_lines_edited_with_the_cursor_keys_wait_as_edited_after_a_ctrl_c(
    env: Env, server: ChatServer
) -> None:
    """H76's find: a line typed ahead of a reply a Ctrl+C cancelled, edited with Left,
    Home or End as it was typed, waited garbled ('helo', Left, 'l' waited as 'helol'):
    those keys were dropped, where the prompt (the reply left uncancelled) moves the
    cursor. It waits as the prompt would have read it."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("helo\x1b[Dl\r")  # Left
        tty.type("abc def\x1b[HX\x1b[FY\r")  # Home, End
        tty.type("one two\x1b[1;5D\x1b[1;5Dzero \x05 three\x01\x1b[3~O")  # Ctrl+Left, Delete
        tty.type("\x03")
        tty.expect("[cancelled]")
        for sent in ("hello", "Xabc defY", "Oero one two three"):
            tty.expect(sent)  # at the next prompt
            tty.type("\r")
            tty.expect(f"echo: {sent}")
            assert server.requests[-1]["messages"][-1]["content"] == sent
    finally:
        tty.close()


JOB_CONTROL_SHELL = """
import os, signal, subprocess, sys, termios
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
child = subprocess.Popen(sys.argv[1:], process_group=0)
os.tcsetpgrp(0, child.pid)
while True:
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    ended = not os.WIFSTOPPED(status)
    os.tcsetpgrp(0, os.getpgrp())  # as dash does: the terminal back, its modes as they are
    lflag = termios.tcgetattr(0)[3]
    print(("ended by " + str(os.WTERMSIG(status) if os.WIFSIGNALED(status) else None))
          if ended else "stopped",
          f"echo {bool(lflag & termios.ECHO)} icanon {bool(lflag & termios.ICANON)}",
          sep="; ", flush=True)
    os.set_blocking(0, False)
    try:
        print(f"the shell read {os.read(0, 4096)!r}", flush=True)
    except BlockingIOError:
        print("the shell read nothing", flush=True)
    os.set_blocking(0, True)
    if ended:
        break
    os.tcsetpgrp(0, child.pid)  # fg
    os.killpg(child.pid, signal.SIGCONT)
"""
"""A shell with job control that keeps no terminal modes of its own (as dash): what a
stopped or ended job leaves is what the user types in."""


def test_ctrl_z_or_ctrl_backslash_during_a_reply_gives_the_terminal_back_as_it_was(
    env: Env, server: ChatServer
) -> None:
    """H76's find: Ctrl+Z while a reply streamed stopped the chat with the terminal as the
    reply had set it (no echo, no line editing, bracketed paste on), and so did Ctrl+\\'s
    quit: in dash the user typed blind, Backspace did not edit. Given back as it was; fg
    sets it for the reply again, which goes on. A line typed ahead before the Ctrl+Z is
    the chat's, sent after the reply, not read and run by the shell (H76)."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, env.terminal(), under=shell)
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("typed before the stop\r\x1a")
        tty.expect("stopped; echo True icanon True")
        tty.expect("the shell read nothing")  # kept for the chat, not run by the shell
        tty.expect("word19")  # continued
        lflag = termios.tcgetattr(tty.master)[3]
        assert not lflag & (termios.ECHO | termios.ICANON), "set for the reply again"
        tty.type("after fg\r")  # typed ahead, unechoed
        tty.expect("word199")
        tty.expect("echo: typed before the stop")
        tty.expect("echo: after fg")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("echo typed before the quit\r\x1c")
        tty.expect(f"ended by {int(signal.SIGQUIT)}; echo True icanon True")
        tty.expect("the shell read nothing")  # a message typed ahead is no shell command
        assert tty.seen.rfind(b"\x1b[?2004l") > tty.seen.rfind(b"\x1b[?2004h")
    finally:
        tty.close()


ESCAPE = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])|\x1b\][^\x07]*\x07|\x1b[()][A-Z0-9]")


def screen_rows(seen: bytes) -> list[str]:
    """The rows a terminal shows after ``seen``, as far as the chat's output needs: text,
    CR, LF, cursor up and down, erasing in the line and below (other escapes change no
    text). The screen is as tall as it needs: nothing scrolls off."""
    rows: list[list[str]] = [[]]
    row = column = 0
    position = 0
    text = seen.decode("utf-8", "replace")
    for match in ESCAPE.finditer(text + "\x1b[0m"):
        for char in text[position : match.start()]:
            if char == "\r":
                column = 0
            elif char == "\n":
                row += 1
                rows.extend([] for _ in range(row + 1 - len(rows)))
            elif char == "\b":
                column = max(column - 1, 0)
            elif char.isprintable():
                line = rows[row]
                line.extend(" " for _ in range(column + 1 - len(line)))
                line[column] = char
                column += 1
        position = match.end()
        argument, command = (match.group(1) or "", match.group(2)) if match.group(2) else ("", "")
        count = int(argument) if argument.isdigit() else 1
        if command == "A":
            row = max(row - count, 0)
        elif command == "B":
            row += count
            rows.extend([] for _ in range(row + 1 - len(rows)))
        elif command == "C":
            column += count
        elif command == "D":
            column = max(column - count, 0)
        elif command == "K" and argument in ("", "0"):
            del rows[row][column:]
        elif command == "K" and argument == "2":
            rows[row] = []
        elif command == "J" and argument in ("", "0"):
            del rows[row][column:]
            rows[row + 1 :] = []
    return ["".join(line).rstrip() for line in rows]


def test_a_reply_stopped_by_ctrl_z_is_shown_once_after_fg(env: Env, server: ChatServer) -> None:
    """A helper's find (H87): after Ctrl+Z during a streaming reply and ``fg``, the reply's
    paragraph was drawn again under the shell's lines, and its cut copy stayed above
    them (the redraw erased the shell's lines instead). Its paragraph is off the screen
    while the chat is stopped, and drawn once after ``fg``."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, env.terminal(), under=shell)
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("\x1a")
        tty.expect("the shell read nothing")  # then fg
        tty.expect("word199")
        tty.expect_prompt()
        rows = screen_rows(tty.seen)
    finally:
        tty.close()
    assert sum("word0 word1" in row for row in rows) == 1, rows
    stopped = next(n for n, row in enumerate(rows) if row.startswith("stopped;"))
    assert "word0 word1" not in "".join(rows[:stopped]), "not above the shell's lines"
    assert "the shell read nothing" in rows[stopped + 1], "the shell's lines are kept"


@pytest.mark.parametrize("stop", ["Ctrl+Z", "kill -TSTP"])
@pytest.mark.parametrize("question", ["Resume previous session? [Y/n]", "[y/N]"])
def test_a_question_is_asked_again_after_a_stop_and_fg(env: Env, question: str, stop: str) -> None:
    """Helpers' finds: after Ctrl+Z at a question and ``fg``, only its ``>`` was drawn
    again, under the shell's lines, the question itself out of sight (H87); after a
    SIGTSTP that came as a signal (``kill -TSTP`` from another shell), nothing at all was
    drawn, neither the question nor its prompt (H95)."""
    term = env.terminal()
    assert env.run("--new", input="write agent_spec.md: # spec\n", terminal=term).returncode == 0
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, term, under=shell)
    try:
        tty.expect("Resume previous session? [Y/n]")
        if question == "[y/N]":
            tty.type("y\r")
            tty.expect("Resumed session")
            tty.type("/reset\r")
            tty.expect("Also delete agent_spec.md? [y/N]")
        tty.expect_prompt()
        if stop == "Ctrl+Z":
            tty.type("\x1a")  # a key for the prompt, not the terminal's signal
        else:
            os.kill(the_job(tty.process), signal.SIGTSTP)
        tty.expect("stopped; echo True icanon True")
        tty.expect("the shell read nothing")  # then fg
        tty.expect(question, timeout=10)
        tty.expect_prompt()
        tty.type("n\r")
        tty.expect("New session")
    finally:
        tty.close()


def test_ctrl_z_at_a_question_stops_the_chat_as_at_the_prompt(env: Env) -> None:
    """H81's find: Ctrl+Z at the resume offer (or any y/n question) did not stop the chat,
    as it does at the prompt: a literal ``^Z`` went into the answer, and the ``fg`` typed
    after it made the answer ``^Zfg``. It stops the chat; after ``fg`` the question is
    still asked, and answered."""
    term = env.terminal()
    assert env.run("--new", input="keep me\n", terminal=term).returncode == 0
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, term, under=shell)
    try:
        tty.expect("Resume previous session? [Y/n]")
        tty.expect_prompt()
        tty.type("\x1a")
        tty.expect("stopped; echo True icanon True")
        tty.expect("the shell read nothing")  # then fg
        tty.expect_prompt()  # the question, drawn again
        tty.type("y\r")
        tty.expect("Resumed session")
        tty.expect_prompt()
        tty.type("\x04")
        tty.expect("ended by None")
    finally:
        tty.close()


def the_job(shell: subprocess.Popen[bytes]) -> int:
    """The pid of the one job ``JOB_CONTROL_SHELL`` runs."""
    children = f"/proc/{shell.pid}/task/{shell.pid}/children"
    return int(wait_for(lambda: open(children).read().split(), what="the job")[0])


def test_the_prompt_is_drawn_again_after_a_stop_signal_and_fg(env: Env) -> None:
    """H95's find: after a SIGTSTP that came as a signal at the prompt (``kill -TSTP``)
    and ``fg``, the prompt was not drawn again: what was typed next showed with no ``>``
    and without what had been typed before."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, env.terminal(), "--new", under=shell)
    try:
        tty.expect("/help for commands.")
        tty.expect_prompt()
        tty.type("half typed")
        tty.expect("half typed")
        os.kill(the_job(tty.process), signal.SIGTSTP)
        tty.expect("stopped; echo True icanon True")
        tty.expect("the shell read nothing")  # then fg
        tty.expect("> half typed", timeout=10)
        tty.type(" then sent\r")
        tty.expect('You said: "half typed then sent"')
    finally:
        tty.close()


STOPPED_BEFORE_THE_PROMPT = """
import os, signal, sys
from cli.console import Console

class StoppedAsThePromptStarts:
    \"\"\"Called by the question right before its prompt is drawn: a SIGTSTP then.\"\"\"

    stopped = False

    def start(self, end_prompt):
        if not self.stopped:
            self.stopped = True
            os.kill(os.getpid(), signal.SIGTSTP)

    def stop(self):
        pass

answer = Console().ask_yes_no("Go on? [y/N]", default=False, idle=StoppedAsThePromptStarts())
print(f"answered {answer}", flush=True)
"""


def test_a_question_stopped_before_its_prompt_is_drawn_is_asked_again_after_fg(
    env: Env,
) -> None:
    """H95's find: a SIGTSTP that came after a question was said and before its prompt
    was up (a Ctrl+Z typed then is the terminal's signal, not a key) left only the
    prompt's ``>`` after ``fg``, under the shell's lines: the question out of sight."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    program = (sys.executable, "-c", STOPPED_BEFORE_THE_PROMPT)
    tty = Pty(env, env.terminal(), under=shell, program=program)
    try:
        tty.expect("Go on? [y/N]")
        tty.expect("stopped; echo True icanon True")
        tty.expect("the shell read nothing")  # then fg
        tty.expect("Go on? [y/N]", timeout=10)
        tty.expect_prompt()
        tty.type("y\r")
        tty.expect("answered True")
    finally:
        tty.close()


def test_ctrl_c_at_an_empty_prompt_exits_and_saves(env: Env) -> None:
    tty = Pty(env, env.terminal())
    try:
        one_turn(tty, "keep me")
        time.sleep(JUST_ENDED_S)  # the time a user reads the reply in
        tty.type("\x03")
        assert tty.process.wait(timeout=30) == 130  # as interrupted: the session is saved
    finally:
        tty.close()
    (session_id,) = env.session_ids()
    assert "keep me" in str(env.session(session_id)["recent_messages"])


def test_a_ctrl_c_meant_for_a_reply_that_had_just_ended_does_not_leave(env: Env) -> None:
    """H81's rough edge: a Ctrl+C pressed to stop a reply that ended a moment before
    reached the empty prompt and left the chat. Right after a reply it says so; a second
    Ctrl+C leaves (as Claude Code and Codex ask for)."""
    tty = Pty(env, env.terminal())
    try:
        one_turn(tty, "keep me")
        tty.type("\x03")
        tty.expect(JUST_ENDED_LINE.format(what="the reply"))
        tty.expect_prompt()
        assert tty.process.poll() is None
        tty.type("\x03")
        assert tty.process.wait(timeout=30) == 130
    finally:
        tty.close()


def test_ctrl_c_twice_during_a_reply_leaves(env: Env, server: ChatServer) -> None:
    """H147: the first Ctrl+C cancelled the reply at once, so the second (a double press,
    as Claude Code leaves on) reached the prompt within a second of the reply's end and
    got "the reply had just ended; Ctrl+C again to leave": a reply the user's own Ctrl+C
    stopped is no reply that ended before a Ctrl+C meant for it. It leaves, saved."""
    tty = Pty(env, env.terminal())
    try:
        streaming_after_one_turn(tty)
        tty.type("\x03")
        tty.expect("[cancelled]")
        tty.expect_prompt()
        tty.type("\x03")
        assert tty.process.wait(timeout=30) == 130
    finally:
        tty.close()
    assert JUST_ENDED_LINE.format(what="the reply") not in ANSI.sub(b"", tty.seen).decode()
    (session_id,) = env.session_ids()
    assert "hello tty" in str(env.session(session_id)["recent_messages"])


def test_a_ctrl_c_right_after_a_command_names_the_command(env: Env) -> None:
    """H85: the note after a command said "the reply had just ended"."""
    tty = Pty(env, env.terminal())
    try:
        one_turn(tty, "hello")
        tty.type("/save\r")
        tty.expect("checkpoint 1")
        tty.expect_prompt()
        tty.type("\x03")
        tty.expect("note: /save had just ended; Ctrl+C again to leave")
    finally:
        tty.close()


def test_a_piped_run_leaves_at_its_first_sigint_even_right_after_a_reply(env: Env) -> None:
    """H85: a script's SIGINT to a piped run right after a reply was taken for a Ctrl+C
    meant for the reply: the run went on reading its input."""
    client = env.spawn("--new", terminal=env.terminal())
    client.send("hello")
    client.expect('You said: "hello"')
    # One that lands as the turn ends is for what is over (dropped, by design): again
    # until it lands at the read of the next line, where it leaves with no note.
    while client.process.poll() is None:
        client.process.send_signal(signal.SIGINT)
        with contextlib.suppress(subprocess.TimeoutExpired):
            client.process.wait(timeout=0.5)
    assert client.wait() == 130
    assert not any("had just ended" in line for line in client.drain_stderr())


def test_the_input_history_file_is_scrubbed(env: Env) -> None:
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("token ghp_abcdefghijklmnopqrstuvwxyz0123456789AB\r")
        tty.expect("You said")
        tty.expect_prompt()
        tty.type("\x04")
        tty.process.wait(timeout=30)
    finally:
        tty.close()
    history = (env.project.parent / "prompt_history").read_text()  # per project
    assert "token [REDACTED]" in history
    assert "ghp_" not in history


def test_the_input_history_keeps_no_value_found_secret_in_another_line(env: Env) -> None:
    """H96: the session file had a value a pattern found in one line replaced where it
    stood alone in the next one (and in the one before), the input history kept it there."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        for line in (
            "first try Zq9Xv7Lm2Pk4 here",
            "the password for staging is Zq9Xv7Lm2Pk4",
            "use Zq9Xv7Lm2Pk4 again",
            "first half sk-proj-PrOmPtHiStFiRsT",
            "second part 99PrOmPtHiStSeCoNd88",
        ):
            tty.type(line + "\r")
            tty.expect("You said")
            tty.expect_prompt()
        tty.type("\x04")
        tty.process.wait(timeout=30)
    finally:
        tty.close()
    history = (env.project.parent / "prompt_history").read_text()
    assert "Zq9Xv7Lm2Pk4" not in history and "PrOmPtHiSt" not in history
    assert "+use [REDACTED] again" in history and "+first try [REDACTED] here" in history


def test_a_secret_the_input_history_keeps_when_its_rewrite_fails_is_told_and_tried_again(
    env: Env,
) -> None:
    """H170: a value found secret in a line stayed in plain text in an earlier line of
    the input history when the history's rewrite failed, and nothing said so."""
    faults = env.faults()
    history = env.project.parent / "prompt_history"
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("first try Zq9Xv7Lm2Pk4 here\r")
        tty.expect("You said")
        tty.expect_prompt()
        faults.write_text("rename EIO prompt_history\n")
        tty.type("the password for staging is Zq9Xv7Lm2Pk4\r")
        tty.expect(
            f"error: a secret stays in plain text in {history} (Input/output error); "
            "tried again at the next line"
        )
        tty.expect("You said")
        tty.expect_prompt()
        assert "Zq9Xv7Lm2Pk4" in history.read_text()  # what the line said
        faults.unlink()
        tty.type("and now\r")
        tty.expect("You said")
        tty.expect_prompt()
        tty.type("\x04")
        tty.process.wait(timeout=30)
    finally:
        tty.close()
    assert "Zq9Xv7Lm2Pk4" not in history.read_text()


def test_while_the_prompt_waits_notices_appear_and_a_stop_ends_the_chat(env: Env) -> None:
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("write agent_spec.md: # Spec\r")
        tty.expect("wrote agent_spec.md")
        tty.expect_prompt()
        time.sleep(0.5)  # the watch on the new file is set up after the turn (outside process)
        (env.workspace / "agent_spec.md").write_text("# Spec, edited elsewhere\n")
        tty.expect("note: agent_spec.md changed outside agent-assist")
        stopped = env.run("supervisor", "stop")
        assert stopped.returncode == 0, stopped.stderr
        tty.expect("the supervisor was stopped; session")
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()


def test_ctrl_c_as_the_supervisor_dies_cancels_the_reply_and_the_chat_goes_on(
    env: Env, server: ChatServer
) -> None:
    """A Ctrl+C that meets a lost supervisor (while the cancel is sent, or while the
    terminal re-attaches) cancels that reply; it used to end the chat ("Aborted!")."""
    env.extra["AGENT_ASSIST_HEIR"] = "0"  # re-attaching starts a supervisor: a longer window
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        pid = env.supervisor_pid()
        assert pid is not None
        os.kill(pid, signal.SIGKILL)
        tty.type("\x03")
        tty.expect("[cancelled]")
        tty.expect_prompt()
        tty.type("hello again\r")
        tty.expect("the supervisor went away")  # the user is told, as on any loss
        tty.expect("echo: hello again")
        tty.expect_prompt()
        tty.type("\x04")
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()
    assert sum(1 for r in server.requests if "slow" in str(r["messages"][-1])) == 1


def test_a_failed_saves_notice_is_told_once_beside_the_whole_reply(env: Env) -> None:
    """A colour terminal's view held the reply's text until the turn ended: the notice of
    the turn's failed save was printed above the reply (c1fc739). Since 1fe058d a colour
    terminal draws a notice above the paragraph being written, whole; the line this test
    then found after the reply was the same refusal told again by a later write (the
    summary's, after the pointer's failure in between), which H170 tells once."""
    faults = env.faults()
    faults.write_text("rename EIO /sessions/\n")
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("hello tty\r")
        tty.expect('You said: "hello tty". (turn 1 of this conversation;')
        tty.expect_prompt()
        tty.type("\x04")
        tty.expect("could not be saved; its unsaved turns are kept in")
    finally:
        tty.close()
    seen = ANSI.sub(b"", tty.seen).decode()
    told = re.findall(r"could not update the session on disk: .*?/(\w+\.json)'", seen)
    assert sorted(told) == sorted(set(told)), told  # each refusal once
    assert any(name.startswith("active_") for name in told), told
    assert any(not name.startswith("active_") for name in told), told


def test_a_supervisor_killed_while_the_prompt_waits_is_replaced_at_once(env: Env) -> None:
    """The session was not live again until the next message: another tab could take it."""
    tty = Pty(env, env.terminal())
    try:
        one_turn(tty, "hello tty")
        (session_id,) = env.session_ids()
        first = env.supervisor_pid()
        assert first is not None
        os.kill(first, signal.SIGKILL)
        tty.expect("warning: the supervisor went away; ")  # nothing typed: the watch saw it
        tty.expect(f"restored session {session_id}")
        rows = env.sessions_json()
        assert [(row["session_id"], row["state"]) for row in rows] == [(session_id, "live")]
        tty.type("after the crash\r")
        tty.expect('You said: "after the crash". (turn 2 of this conversation')
    finally:
        tty.close()


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_a_terminating_signal_at_the_prompt_leaves_as_an_exit_does(
    env: Env, signum: int
) -> None:
    """SIGTERM ended the chat at once: the toolbar stayed on the screen and nothing said
    the session was saved."""
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("remember this\r")
        tty.expect("You said")
        tty.expect_prompt()
        tty.process.send_signal(signum)
        tty.expect("saved.")
        assert tty.process.wait(timeout=30) == 128 + signum
    finally:
        tty.close()
    (session_id,) = env.session_ids()
    assert "remember this" in str(env.session(session_id)["recent_messages"])


def test_sigterm_while_a_reply_streams_drops_that_reply_and_keeps_the_rest(
    env: Env, server: ChatServer
) -> None:
    tty = Pty(env, env.terminal())
    try:
        streaming_after_one_turn(tty)
        tty.process.send_signal(signal.SIGTERM)
        tty.expect("saved.")
        assert tty.process.wait(timeout=30) == 128 + signal.SIGTERM
    finally:
        tty.close()
    (session_id,) = env.session_ids()
    messages = str(env.session(session_id)["recent_messages"])
    assert "hello tty" in messages and "word199" not in messages


def test_a_cancelled_turns_writes_are_its_own_and_tracked(env: Env, server: ChatServer) -> None:
    """A helper's report: Ctrl+C after the assistant's write told that write as a change
    "outside agent-assist" (and noted it to the model); a file a cancelled turn made was
    not tracked (never watched, not in the manifest)."""
    spec = env.workspace / "agent_spec.md"
    spec.write_text("v1\n")
    server.tool_returns_go.clear()  # the model's answer to a write waits: Ctrl+C cuts it
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        for path in ("agent_spec.md", "notes.md"):
            tty.type(f"write: {path}: by the assistant\r")
            written = env.workspace / path
            wait_for(
                lambda written=written: written.exists()  # type: ignore[misc]
                and written.read_text() == "by the assistant\n",
                what=f"the write of {path}",
            )
            tty.type("\x03")
            tty.expect("[cancelled]")
            tty.expect_prompt()
        time.sleep(1.5)  # what the watcher makes of the writes comes within a second
        (env.workspace / "notes.md").write_text("edited outside\n")
        tty.expect("note: notes.md changed outside agent-assist")
        server.tool_returns_go.set()
        tty.type("and now?\r")
        tty.expect("echo: and now?")
        tty.expect_prompt()
        tty.type("\x04")
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()
    shown = ANSI.sub(b"", tty.seen).decode(errors="replace")
    assert "agent_spec.md changed outside" not in shown
    system = server.system_text()
    assert "changed outside the assistant since the last turn: notes.md." in system, system
    (session_id,) = env.session_ids()
    assert set(env.session(session_id)["file_manifest"]) == {"agent_spec.md", "notes.md"}


def test_a_ctrl_c_that_comes_after_the_reply_ended_shows_the_reply_kept_whole(
    env: Env, server: ChatServer
) -> None:
    """H122's find: a Ctrl+C that reached the supervisor after the turn had ended (it was
    saved) dropped the text that came after the key, and no line followed: the user saw a
    reply cancelled, or cut short, that the model keeps whole and answers from."""
    server.tool_returns_go.clear()  # the answer to the decision's return waits
    tty = Pty(env, env.terminal())
    try:
        tty.expect("/help for commands.")
        tty.type("decide: use a queue\r")
        tty.expect('record_decision "use a queue"')
        os.kill(tty.process.pid, signal.SIGSTOP)  # the terminal reads nothing now
        try:
            server.tool_returns_go.set()
            wait_for(
                lambda: any(
                    "recorded" in str(env.session(s)["recent_messages"]) for s in env.session_ids()
                ),
                what="the whole turn saved",
            )
            tty.type("\x03")
            # The terminal makes the key a SIGINT on its own time (a kernel worker): sent
            # on with the SIGCONT at once, it reached the chat after the reply, now and then.
            wait_for(lambda: sigint_pending(tty.process.pid), what="the Ctrl+C's SIGINT")
        finally:
            os.kill(tty.process.pid, signal.SIGCONT)
        tty.expect("recorded")
        tty.expect(KEPT_AFTER_CTRL_C)
        tty.expect_prompt()
        tty.type("\x04")
        assert tty.process.wait(timeout=30) == 0
    finally:
        tty.close()
    assert b"[cancelled]" not in tty.seen


def test_a_ctrl_c_during_a_reattach_is_the_first_of_two_that_leave(
    env: Env, server: ChatServer
) -> None:
    """H149's leftover: a Ctrl+C while the terminal re-attached (the supervisor died during
    a reply) cancelled the wait, but the next Ctrl+C at the prompt was taken for one meant
    for a reply that had just ended (``note: the reply had just ended; Ctrl+C again to
    leave``). As with two Ctrl+C during a reply, the second leaves: exit 130, saved."""
    env.extra["AGENT_ASSIST_HEIR"] = "0"  # re-attaching starts a supervisor
    tty = Pty(env, env.terminal())
    lock: int | None = None
    try:
        streaming_after_one_turn(tty)
        lock = os.open(env.runtime / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
        fcntl.flock(lock, fcntl.LOCK_EX)  # the re-attach waits to start a supervisor
        pid = env.supervisor_pid()
        assert pid is not None and env.ours(pid)
        os.kill(pid, signal.SIGKILL)
        tty.expect("the supervisor went away during this reply")
        tty.type("\x03")
        tty.expect("[cancelled]")
        tty.expect_prompt()
        fcntl.flock(lock, fcntl.LOCK_UN)
        tty.type("\x03")
        tty.expect("saved")  # the last line, either way (below)
        assert tty.process.wait(timeout=30) == 130
    finally:
        if lock is not None:
            os.close(lock)
        tty.close()
    shown = ANSI.sub(b"", tty.seen).decode()
    assert JUST_ENDED_LINE.format(what="the reply") not in shown
    assert "Traceback" not in shown, "the prompt's watch had no connection to read"
    (session_id,) = env.session_ids()
    # Left with no connection, or with one the prompt's watch re-attached meanwhile:
    # the last line names the session either way.
    assert (
        f"session {session_id} is as saved after its last turn" in shown
        or f"Session {session_id} saved." in shown
    ), shown[-400:]
    assert "hello tty" in str(env.session(session_id)["recent_messages"])


def test_lines_typed_ahead_of_a_chat_a_supervisor_stop_ends_are_told_not_run_by_the_shell(
    env: Env, server: ChatServer
) -> None:
    """H176's find: lines typed ahead while a reply streamed, when ``supervisor stop``
    (from another shell) ended the chat, were left in the terminal's input: the shell read
    each as a command and ran it, and the chat said nothing of them. Taken off the input,
    they are named, each in its line, and kept in the input history for Up."""
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, env.terminal(), under=shell)
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("echo typed before the stop\rhalf typed")
        stopped = env.run("supervisor", "stop")
        assert stopped.returncode == 0, stopped.stderr
        tty.expect("the supervisor was stopped")
        tty.expect('note: not sent, the chat ended: "echo typed before the stop"')
        tty.expect('note: not sent, the chat ended: "half typed"')
        tty.expect("ended by None")
        tty.expect("the shell read nothing")
        history = (env.project.parent / "prompt_history").read_text()
        assert "+echo typed before the stop\n" in history and "+half typed\n" in history
    finally:
        tty.close()


def test_lines_typed_ahead_of_a_chat_a_stop_ends_unsaved_are_told_not_run_by_the_shell(
    env: Env, server: ChatServer
) -> None:
    """H178's find: a supervisor stop that could not save the session ends the chat with
    an error, not the stop's note; the lines typed ahead were left in the terminal's
    input (the hold had read them: lost without a word), and the chat's close after the
    stop's last frame said the stop's other, false line: ``nothing to save``."""
    faults = env.faults()
    faults.write_text("rename EIO /sessions/\n")
    shell = (sys.executable, "-c", JOB_CONTROL_SHELL)
    tty = Pty(env, env.terminal(), under=shell)
    try:
        tty.expect("/help for commands.")
        tty.type("be slow please\r")
        tty.expect("word3")
        tty.type("echo typed before the stop\r")
        env.run("supervisor", "stop")
        tty.expect("its unsaved turns are kept in")
        tty.expect('note: not sent, the chat ended: "echo typed before the stop"')
        tty.expect("ended by None")
        tty.expect("the shell read nothing")
    finally:
        tty.close()
    assert b"nothing to save" not in tty.seen


def test_a_stop_while_the_chat_waits_outside_a_prompt_keeps_the_keys_typed_ahead(
    env: Env, server: ChatServer
) -> None:
    """H201's find: outside a prompt and a reply (attaching, between a reply's end and the
    next prompt) the held terminal let a Ctrl+C, Ctrl+Z or Ctrl+\\ flush its queues: the keys
    typed ahead, and what the chat had written that the terminal had not shown yet. A
    Ctrl+C that reached the chat just after a reply (the terminal sends it on its own time)
    took the reply's end off the screen. Here a Ctrl+Z while the chat waits for a stopped
    supervisor: what was typed ahead still starts the first prompt."""
    env.extra["AGENT_ASSIST_CONTROL_TIMEOUT_S"] = "120"  # the stopped supervisor is waited for
    assert env.run("supervisor", "start").returncode == 0
    supervisor = env.supervisor_pid()
    assert supervisor is not None and env.ours(supervisor)
    os.kill(supervisor, signal.SIGSTOP)  # the chat waits for its welcome, keys held
    tty = Pty(env, env.terminal())
    slave = os.open(os.readlink(f"/proc/{tty.process.pid}/fd/0"), os.O_RDWR | os.O_NOCTTY)
    try:
        try:
            wait_for(lambda: held_keys(tty.master), what="the chat holding the keys")
            tty.type("typed ahead\x1a")  # then Ctrl+Z
            wait_for(lambda: not waiting_input(slave), what="the Ctrl+Z taken")
        finally:
            os.kill(supervisor, signal.SIGCONT)
        tty.expect("/help for commands.")
        # drawn with the prompt, or typed at it once drawn (the prompt read them late)
        tty.expect("typed ahead")
        tty.type("\r")
        tty.expect("echo: typed ahead")
        tty.expect_prompt()
        tty.type("\x04")
        assert tty.process.wait(timeout=30) == 0
    finally:
        os.close(slave)
        tty.close()


def waiting_input(slave: int) -> int:
    """The bytes typed on the pty and not read yet (``slave``: its terminal end)."""
    return int.from_bytes(fcntl.ioctl(slave, termios.FIONREAD, bytes(4)), sys.byteorder)
