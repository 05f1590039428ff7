"""Replies rendered with rich as they stream: a spinner until the first token, then Markdown.

Imported only when stdout is a colour terminal (rich costs start-up time).
Finished blocks (up to the last blank line outside a code fence) are printed
for good; only the block still being written is redrawn.
"""

from __future__ import annotations

from typing import TextIO

from rich.console import Console
from rich.live import Live
from rich.markdown import Markdown
from rich.spinner import Spinner
from rich.text import Text

from cli.printable import StreamPrintable, printable

REFRESH_PER_SECOND = 12
CODE_THEME = "monokai"


def stable_prefix(text: str) -> int:
    """Where the finished blocks of ``text`` end: after the last blank line that is not
    inside a code fence (0 if there is none)."""
    end = len(text)
    while (cut := text.rfind("\n\n", 0, end)) >= 0:
        fences = sum(
            1 for line in text[:cut].splitlines() if line.lstrip().startswith(("```", "~~~"))
        )
        if fences % 2 == 0:
            return cut + 2
        end = cut
    return 0


class RichReply:
    def __init__(self, out: TextIO) -> None:
        self._console = Console(file=out, highlight=False, soft_wrap=False)
        self._pending = ""
        self._printable = StreamPrintable()
        self._spinner = Spinner("dots", Text(" thinking…", style="dim"), style="dim")
        self._live = Live(
            self._spinner,
            console=self._console,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
            vertical_overflow="visible",
        )
        self._live.start()

    held_back = False
    whole_across_notices = True
    """Lines printed while the live view runs (``Live`` redirects stdout and stderr) go
    above it: after the reply's finished paragraphs, before the one it is writing."""

    def _markdown(self, text: str) -> Markdown:
        return Markdown(text, code_theme=CODE_THEME)

    def _commit(self, text: str) -> None:
        if text.strip():
            self._live.console.print(self._markdown(text.rstrip("\n")))

    def write(self, text: str) -> None:
        self._pending += self._printable.feed(text)
        cut = stable_prefix(self._pending)
        if cut:
            self._commit(self._pending[:cut])
            self._pending = self._pending[cut:]
        self._live.update(self._markdown(self._pending) if self._pending else self._spinner)

    def tool(self, line: str) -> None:
        self._commit(self._pending)
        self._pending = ""
        self._live.console.print(Text(f"  {printable(line)}", style="dim"))
        self._live.update(self._spinner)

    def cut(self) -> None:
        self.end()  # on a terminal the cut text was seen: it keeps its own line

    def end(self) -> None:
        if not self._live.is_started:
            return
        self._live.update(Text(""))
        self._live.stop()
        self._commit(self._pending)
        self._pending = ""
