"""Terminal input and output: prompt_toolkit on a TTY, one line per message when piped."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, Protocol

SLASH_COMMANDS = ["/save", "/reset", "/new", "/checkpoint", "/compact", "/resume", "/help", "/exit"]


class UnclearAnswer(Exception):
    """Piped input gave a line that is not y/yes/n/no/empty where an answer was expected."""

    def __init__(self, answer: str) -> None:
        super().__init__(answer)
        self.answer = answer


class IdleWatcher(Protocol):
    def start(self, end_prompt: Callable[[], object]) -> None: ...

    def stop(self) -> None: ...


class Console:
    def __init__(self, interactive: bool | None = None) -> None:
        self.interactive = sys.stdin.isatty() if interactive is None else interactive
        self._prompt: Any = None

    def _session(self) -> Any:
        if self._prompt is None:
            from prompt_toolkit import PromptSession
            from prompt_toolkit.completion import WordCompleter
            from prompt_toolkit.history import FileHistory

            from session.redaction import scrub_text, secrets_from_environment

            known = secrets_from_environment()

            class ScrubbedHistory(FileHistory):
                """Input history on disk, with credential-looking strings scrubbed."""

                def store_string(self, string: str) -> None:
                    super().store_string(scrub_text(string, known))

            from session.paths import state_root

            history = state_root() / "prompt_history"
            history.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            self._prompt = PromptSession(
                history=ScrubbedHistory(str(history)),
                completer=WordCompleter(SLASH_COMMANDS, sentence=True),
            )
        return self._prompt

    def read_line(self, prompt: str = "> ", idle: IdleWatcher | None = None) -> str | None:
        """One line of input; None at end of input. KeyboardInterrupt passes through.

        On a terminal, ``idle`` runs while the prompt waits: what it prints appears
        above the prompt, and it may end the prompt (as end of input).
        """
        if self.interactive:
            from prompt_toolkit.patch_stdout import patch_stdout

            session = self._session()
            with patch_stdout():
                if idle is not None:
                    idle.start(lambda: session.app.loop.call_soon_threadsafe(session.app.exit))
                try:
                    text: str | None = session.prompt(prompt)
                except EOFError:
                    text = None
                finally:
                    if idle is not None:
                        idle.stop()
            return text
        line = sys.stdin.readline()
        if not line:
            return None
        return line.rstrip("\n")

    def ask_yes_no(self, default: bool) -> bool:
        """Read an answer line (the question was printed); empty or end of input is ``default``."""
        while True:
            answer = self.read_line("" if not self.interactive else "> ")
            if answer is None:
                return default
            answer = answer.strip().lower()
            if not answer:
                return default
            if answer in ("y", "yes"):
                return True
            if answer in ("n", "no"):
                return False
            if not self.interactive:
                raise UnclearAnswer(answer)
            self.say("Please answer y or n.")

    def say(self, text: str) -> None:
        """A line for the user on stdout (prompts, command results)."""
        print(text, flush=True)

    def write(self, text: str) -> None:
        """Streamed reply text, as it arrives."""
        sys.stdout.write(text)
        sys.stdout.flush()

    def warn(self, text: str) -> None:
        """A diagnostic line on stderr."""
        print(text, file=sys.stderr, flush=True)
