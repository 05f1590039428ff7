"""How many lines the changes outside make: one per file, until a flood, then one line for
the rest of it (``sed -i`` over 2,000 tracked files printed 2,000 lines). Pure."""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass, field

FLOOD_FILES = 20
"""Files told one line each within ``FLOOD_S`` (as many as the model's note names); those
after them wait for one line."""
FLOOD_S = 1.0
"""A flood lasts until its files have been quiet this long."""
HOLD_S = 0.5
"""How long the first held changes of a flood wait for the others (told within a second);
each later line of a flood that goes on waits twice as long, up to ``MAX_HOLD_S``."""
MAX_HOLD_S = 4.0
PLACES = 5
"""Top directories a flood's line names (the rest are counted)."""


@dataclass
class NoticeFlood:
    """The notices of the last ``FLOOD_S``, and the changes a flood holds for one line.

    Rules: a change gets a line of its own unless ``FLOOD_FILES`` lines were told in the
    last ``FLOOD_S`` or a flood goes on (a change held less than ``FLOOD_S`` ago); then
    it is held. The first change held since the last line asks for the next one after
    ``HOLD_S``, doubled for each line the flood told already (a 30 s ``sed -i`` over
    20,000 files told 20 lines of their own each second, and a count between them).
    A flood that goes quiet for ``FLOOD_S`` is over: what it holds is told then, not at
    the end of a hold of up to ``MAX_HOLD_S`` (the last line of a ``sed -i`` came 4 s
    after its last change); one check for that end runs at a time (``check_the_end``,
    ``over_in``)."""

    told: deque[float] = field(default_factory=deque)
    held: dict[str, str] = field(default_factory=dict)
    """Each held file, and how it changed (``changed``, ``deleted``)."""
    last_held: float | None = None
    lines: int = 0
    """The lines this flood has told (its held changes taken)."""
    checking: bool = False
    """Whether a check for the flood's end is under way."""

    def one_line_each(self, now: float) -> bool:
        """Whether a change seen at ``now`` gets a line of its own (and counts as told)."""
        while self.told and now - self.told[0] >= FLOOD_S:
            self.told.popleft()
        flooding = self.last_held is not None and now - self.last_held < FLOOD_S
        if flooding or self.held or len(self.told) >= FLOOD_FILES:
            return False
        self.lines = 0  # any flood before has ended
        self.told.append(now)
        return True

    def hold(self, path: str, how: str, now: float) -> float | None:
        """Hold ``path`` for the flood's next line; if it is the first held since the last
        line, in how long to ``take`` them (else None: that is asked for already)."""
        first = not self.held
        self.held[path] = how
        self.last_held = now
        return min(HOLD_S * 2**self.lines, MAX_HOLD_S) if first else None

    def check_the_end(self) -> bool:
        """Whether to start a check for the end of the flood that holds changes now (in
        ``FLOOD_S``, then as long as ``over_in`` says): none is under way."""
        if self.checking or not self.held:
            return False
        self.checking = True
        return True

    def over_in(self, now: float) -> float | None:
        """For the check: how long until the flood has been quiet for ``FLOOD_S``; 0.0 when
        it has (what it holds is to be taken now); None when it holds nothing (a line
        took it: the check ends)."""
        if not self.held or self.last_held is None:
            self.checking = False
            return None
        left = self.last_held + FLOOD_S - now
        if left > 0:
            return left
        self.checking = False
        return 0.0

    def take(self) -> dict[str, str]:
        held, self.held = self.held, {}
        self.lines += bool(held)
        return held


UNREADABLE = "made unreadable"
"""How a tracked file is told that is there but can no longer be read (a ``chmod 000``):
the model and the user lose it as if deleted, and the user must know why."""


def changed_line(path: str, how: str, session_id: str | None = None) -> str:
    """The notice of one file that changed (``how``: changed, deleted, ``UNREADABLE``) outside this
    session: outside agent-assist, or in another of its sessions (``session_id``), which
    is no change outside agent-assist."""
    if session_id:
        return f"note: {path} {how} by another agent-assist session ({session_id})"
    return f"note: {path} {how} outside agent-assist"


def flood_line(held: Mapping[str, str]) -> str:
    """The one line of a flood's held changes: how many, how, and under which top
    directories."""
    count = len(held)
    deleted = sum(how == "deleted" for how in held.values())
    files = f"{count:,} more tracked file{'' if count == 1 else 's'}"
    if deleted == count:
        line = f"note: {files} deleted outside agent-assist"
    else:
        line = f"note: {files} changed outside agent-assist"
        if deleted:
            line += f", {deleted:,} of them deleted"
    places = sorted({path.split("/", 1)[0] + "/" for path in held if "/" in path})
    if places:
        shown = ", ".join(places[:PLACES])
        more = f" and {len(places) - PLACES} more" if len(places) > PLACES else ""
        line += f" (under {shown}{more})"
    return line
