"""Text from sessions, files and models made safe to show on a terminal or to keep: escape
sequences, control characters and bidi overrides are dropped (a summary or a reply could
otherwise set the window title, move the cursor, write the clipboard of whoever reads it,
or show its text in another order than it is stored). Standard library only."""

from __future__ import annotations

import re

_CONTROL = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: colours, cursor moves
    r"|\x1b[\]PX^_].*?(?:\x07|\x1b\\|\Z)"  # OSC, DCS, SOS, PM, APC: titles, clipboard
    r"|\x1b[ -/]*[0-~]?"  # the other escapes (and a lone ESC)
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # C0 but tab and newline; DEL; C1
    "|[\u202a-\u202e\u2066-\u2069]",  # bidi embeddings, overrides, isolates (not marks)
    re.DOTALL,
)


def printable(text: str) -> str:
    """``text`` without terminal control sequences and bidi overrides; tabs and newlines
    are kept."""
    return _CONTROL.sub("", text)
