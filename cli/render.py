"""Replies rendered with rich as they stream: a spinner until the first token, then Markdown.

Imported only when stdout is a colour terminal (rich costs start-up time).
Finished blocks (up to the last blank line outside a code fence) are printed
for good; only the block still being written is redrawn.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import TextIO

from rich.console import Console, ConsoleOptions, RenderableType, RenderResult
from rich.control import Control
from rich.live import Live
from rich.live_render import LiveRender
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from cli.printable import StreamPrintable, printable

REFRESH_PER_SECOND = 12
CODE_THEME = "monokai"
PLAIN_ABOVE = 64 * 1024
"""A finished block longer than this (characters) is printed as plain text, not Markdown."""


class Blocks:
    """``stable_prefix`` of a text that grows, found from what was added: each line is
    read once (recounting the fences at every chunk made a long code block quadratic)."""

    def __init__(self) -> None:
        self.text = ""
        self._scan = 0
        """Where the first line not read yet starts."""
        self._fenced = False
        self._stable = 0
        self.fence = ""
        """The line that opened the code block ``text`` ends in, if it ends in one."""

    def add(self, chunk: str) -> None:
        self.text += chunk
        text = self.text
        while (end := text.find("\n", self._scan)) >= 0:
            line = text[self._scan : end]
            if line.lstrip().startswith(("```", "~~~")):
                self._fenced = not self._fenced
                self.fence = line if self._fenced else ""
            elif not line and self._scan > 0 and not self._fenced:
                self._stable = end + 1
            self._scan = end + 1

    def take_finished(self) -> str:
        """The finished blocks, removed from ``text``."""
        cut, self._stable = self._stable, 0
        finished, self.text = self.text[:cut], self.text[cut:]
        self._scan -= cut
        return finished

    def take_all(self) -> str:
        rest, self.text = self.text, ""
        self._scan, self._fenced, self._stable, self.fence = 0, False, 0, ""
        return rest


class _Unfinished:
    """The block being written, parsed as Markdown only when the live view draws it (a
    dozen times a second), not at every chunk, and drawn to at most half a screenful of
    rows: its last ones (the whole of it is printed once it is finished). A live view
    taller than the screen left each redraw in the scrollback, and the window narrowed
    to half its width makes the view's rows twice as many. A code block taller than
    that is parsed from its opening fence and its last lines that fit: drawing all of it
    at each refresh took seconds for a long one.

    After a finished block of the reply it is drawn one blank row below it, where it
    will be printed once finished (drawn right under it, each paragraph jumped one row
    down as it was finished). Its rows fit the width even as a terminal that gives each
    code point its own width draws them (see ``_drawn_width``)."""

    def __init__(self, blocks: Blocks, spaced: Callable[[], bool]) -> None:
        self._blocks = blocks
        self._spaced = spaced

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text, fence = self._blocks.text, self._blocks.fence
        room = max((console.height - 6) // 2, 4)  # twice as tall after a narrowing: shown
        if fence and text.count("\n") > room:
            text = fence + "\n" + "\n".join(text.rsplit("\n", room)[1:])
        markdown = Markdown(text, code_theme=CODE_THEME)
        width = options.max_width
        lines = console.render_lines(markdown, options.update_width(width), pad=False)
        for _ in range(3):  # drawn narrower while a row is wider than the screen
            drawn = (_drawn_width(line) for line in lines[-room:])  # those shown
            over = max(drawn, default=0) - options.max_width
            if over <= 0 or width - over < 8:
                break
            width -= over
            lines = console.render_lines(markdown, options.update_width(width), pad=False)
        blank = [all(map(_is_padding, line)) for line in lines]
        lines = lines[blank.index(False) :] if False in blank else []  # as ``_Spaced``
        spaced = bool(lines) and self._spaced()
        # Its last screenful of rows, not of lines: at a narrow width a line takes rows
        # (a code line two or three), and a region taller than the screen left a copy of
        # itself in the scrollback at each redraw. Rows end where their text does:
        # padded to the width, a line with a character the terminal draws wider than
        # rich counts it (an emoji with a skin tone) wrapped, and was left behind too.
        shown = [_unpadded(line) for line in lines[-(room - spaced) :]]
        if spaced:
            yield Segment.line()
        for row, line in enumerate(shown, start=1):
            yield from line
            if row < len(shown):
                yield Segment.line()


def _drawn_width(line: list[Segment]) -> int:
    """The columns ``line`` takes on a terminal that gives each code point its own width
    (tmux draws an emoji with a skin tone as two emoji, four columns where rich counts
    two): at least rich's count. A live row wider than the terminal as drawn wraps there,
    and the redraw, which erases the rows rich counted, left the first one behind."""
    from wcwidth import wcwidth

    return sum(
        max(segment.cell_length, sum(max(wcwidth(char), 0) for char in segment.text))
        for segment in line
        if not segment.control
    )


class _Spaced:
    """A finished block as the reply shows it: one blank line after the block before it,
    as rich puts between a Markdown's blocks (printed one by one as they were finished,
    paragraphs ran together, while a list or a table brought a blank line of its own),
    and its rows not padded to the width."""

    def __init__(self, block: RenderableType, *, after_another: bool) -> None:
        self._block = block
        self._after_another = after_another

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        lines = console.render_lines(self._block, options, pad=False)
        blank = [all(map(_is_padding, line)) for line in lines]
        start = blank.index(False) if False in blank else len(lines)
        end = len(lines) - blank[::-1].index(False) if False in blank else start
        if self._after_another:
            yield Segment.line()
        for line in lines[start:end]:  # its own blank rows above and below it: not twice
            yield from _unpadded(line)  # padded, a narrower window reflowed blank rows in
            yield Segment.line()  # a renderable ends its own lines (``print`` adds none)


def _unpadded(line: list[Segment]) -> list[Segment]:
    """``line`` without the plain spaces that pad it to the width (a code block's
    background, which they paint, is kept)."""
    end = len(line)
    while end and _is_padding(line[end - 1]):
        end -= 1
    kept = line[:end]
    if kept and not kept[-1].control and not _painted(kept[-1]):
        last = kept[-1]
        kept[-1] = Segment(last.text.rstrip(" "), last.style)
    return kept


def _painted(segment: Segment) -> bool:
    return segment.style is not None and segment.style.bgcolor is not None


def _is_padding(segment: Segment) -> bool:
    return not segment.control and not segment.text.strip(" ") and not _painted(segment)


class ReflowedRegion(LiveRender):
    """rich's live region, erased as a terminal shows it after the window narrowed. A
    terminal that reflows (tmux, VTE, kitty, iTerm2, Windows Terminal) wraps each line
    drawn anew at the new width, so the region spans more rows than were drawn; erasing
    only those left a cut copy of the reply on the screen above the redrawn one."""

    def __init__(self, console: Console, renderable: RenderableType) -> None:
        super().__init__(renderable, vertical_overflow="visible")
        self._console = console
        self._drawn_width = 0
        self._line_widths: list[int] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        widths, width = [], 0
        for segment in super().__rich_console__(console, options):
            if isinstance(segment, Segment):  # it yields nothing else
                if segment.text == "\n" and not segment.control:
                    widths.append(width)
                    width = 0
                else:
                    width += segment.cell_length
            yield segment
        self._line_widths, self._drawn_width = [*widths, width], options.max_width

    def _rows_now(self) -> None:
        """The region's height as the terminal shows it at its width now."""
        width = self._console.width
        if self._shape is None or width <= 0 or width >= self._drawn_width:
            return
        rows = sum(max(1, -(-drawn // width)) for drawn in self._line_widths)
        self._shape = (width, max(rows, self._shape[1]))

    def position_cursor(self) -> Control:
        self._rows_now()
        return super().position_cursor()

    def restore_cursor(self) -> Control:
        self._rows_now()
        return super().restore_cursor()


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
        self._blocks = Blocks()
        self._unfinished = _Unfinished(self._blocks, lambda: self._committed)
        self._printable = StreamPrintable()
        self._spinner = Spinner("dots", Text(" thinking…", style="dim"), style="dim")
        self._live = Live(
            self._spinner,
            console=self._console,
            refresh_per_second=REFRESH_PER_SECOND,
            transient=True,
            vertical_overflow="visible",
        )
        self._committed = False
        """Whether a finished block of this reply was printed (the next is spaced from it)."""
        self._shown = False
        """Whether some of this reply was drawn (its text, a tool line)."""
        # rich keeps its region in a private attribute; ours is erased as reflowed.
        self._live._live_render = ReflowedRegion(self._console, self._spinner)
        self._live.start()

    held_back = False
    whole_across_notices = True
    """Lines printed while the live view runs (``Live`` redirects stdout and stderr) go
    above it: after the reply's finished paragraphs, before the one it is writing."""

    def _markdown(self, text: str) -> Markdown:
        return Markdown(text, code_theme=CODE_THEME)

    def _commit(self, text: str) -> None:
        if not text.strip():
            return
        if len(text) > PLAIN_ABOVE:  # highlighting 250 KB of code took 14 s
            block: RenderableType = Text(text.rstrip("\n"))
        else:
            block = self._markdown(text.rstrip("\n"))
        self._live.console.print(_Spaced(block, after_another=self._committed))
        self._committed = True

    def write(self, text: str) -> None:
        self._shown = self._shown or bool(text)
        self._blocks.add(self._printable.feed(text))
        if finished := self._blocks.take_finished():
            self._commit(finished)
        self._live.update(self._unfinished if self._blocks.text else self._spinner)

    def tool(self, line: str) -> None:
        self._shown = True
        self._commit(self._blocks.take_all())
        self._live.console.print(Text(f"  {printable(line)}", style="dim"))
        self._live.update(self._spinner)

    @contextlib.contextmanager
    def hidden(self) -> Iterator[None]:
        """The live view (the paragraph being written, or the spinner) erased while the
        chat is stopped: the shell's lines then come below the paragraphs printed for
        good, and the first refresh after ``fg`` draws the view whole below them. (Left
        drawn, that refresh erased as many rows up from the shell's lines, those lines
        instead of the view, and drew the paragraph again under its cut copy.) Its lock
        is held meanwhile: a refresh between the erasing and the stop would draw it
        again."""
        live = self._live
        if not live.is_started:
            yield
            return
        with live._lock:
            region = live._live_render
            with contextlib.suppress(OSError):  # a terminal gone: nothing to erase
                live.console.control(region.position_cursor())
            region._shape = None  # nothing of it is on the screen now
            yield

    def cut(self) -> bool:
        self.end()  # on a terminal the cut text was seen: it keeps its own line
        return self._shown

    def end(self) -> None:
        if not self._live.is_started:
            return
        self._live.update(Text(""))
        self._live.stop()
        self._commit(self._blocks.take_all())
