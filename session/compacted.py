"""The header of a compacted summary: how a session file says which turns its
compaction covers. Light (no model stack): the welcome's turn count reads it."""

from __future__ import annotations

import re
from typing import Final

COMPACTION_HEADER_START: Final = "Conversation so far (turns "
"""How a compaction's text begins (``session/compaction.py``), boilerplate in a summary."""
HEADER_RE: Final = re.compile(
    r"^Conversation so far \(turns ([0-9]{1,12})-([0-9]{1,12}), compacted\)"
)


def compacted_turns(text: str | None) -> int:
    """How many turns the compacted summary ``text`` covers (its last turn's number; the
    turns after it are kept whole); 0 without a summary or with one of another form."""
    header = HEADER_RE.match(text or "")
    return int(header[2]) if header else 0
