"""What a terminal is shown of session and model text: no control sequences."""

from __future__ import annotations

import pytest

from cli.printable import printable


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("\x1b[31mRED\x1b[0m plain", "RED plain"),
        ("\x1b]0;pwned\x07 title", " title"),
        ("\x1b]52;c;aGVsbG8=\x1b\\ clipboard", " clipboard"),
        ("\x1bP1$r\x1b\\dcs", "dcs"),
        ("cursor\x1b[2J\x1b[Hhome", "cursorhome"),
        ("over\rwrite", "overwrite"),
        ("bell\x07 back\x08space", "bell backspace"),
        ("c1 \x9b31m csi", "c1 31m csi"),
        ("an OSC never ended \x1b]0;title", "an OSC never ended "),
        ("lone escape \x1b", "lone escape "),
        ("tabs\tand\nnewlines stay", "tabs\tand\nnewlines stay"),
        ("ünïcödé → and emoji 🙂 stay", "ünïcödé → and emoji 🙂 stay"),
        # bidi overrides and isolates reorder what is shown (H73: a summary with U+202E)
        ("abc\u202edcba\u202c end", "abcdcba end"),
        ("\u2066isolate\u2069 \u202aembed\u202c", "isolate embed"),
        ("marks \u200f\u200e stay", "marks \u200f\u200e stay"),
    ],
)
def test_control_sequences_are_dropped_and_text_is_kept(raw: str, shown: str) -> None:
    assert printable(raw) == shown


@pytest.mark.parametrize(
    "chunks",
    [
        ["hello \x1b", "[31mRED\x1b", "]0;PWNED\x07 mid \x1b[", "2J after"],
        ["a \x1b]8;;http://evil/\x1b", "\\link\x1b]8;;\x1b\\ b"],
        ["no escape at all", " here"],
    ],
)
def test_a_sequence_split_between_chunks_is_dropped_whole(chunks: list[str]) -> None:
    """A helper's find (H50): a reply's escape split between two streamed chunks showed
    its second half (``[31mRED``)."""
    from cli.printable import StreamPrintable

    stream = StreamPrintable()
    shown = "".join(stream.feed(chunk) for chunk in chunks) + stream.flush()
    assert shown == printable("".join(chunks))
