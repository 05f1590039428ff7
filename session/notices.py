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
HOLD_S = 0.5
"""How long a held change waits for the others of its flood (told within a second)."""
PLACES = 5
"""Top directories a flood's line names (the rest are counted)."""


@dataclass
class NoticeFlood:
    """The notices of the last ``FLOOD_S``, and the changes held for one line."""

    told: deque[float] = field(default_factory=deque)
    held: dict[str, str] = field(default_factory=dict)
    """Each held file, and how it changed (``changed``, ``deleted``)."""

    def one_line_each(self, now: float) -> bool:
        """Whether a change seen at ``now`` gets a line of its own (and counts as told)."""
        while self.told and now - self.told[0] >= FLOOD_S:
            self.told.popleft()
        if len(self.told) >= FLOOD_FILES or self.held:
            return False
        self.told.append(now)
        return True

    def hold(self, path: str, how: str) -> bool:
        """Hold ``path`` for the flood's line; True if it is the first held (the caller
        asks for ``take`` in ``HOLD_S``)."""
        first = not self.held
        self.held[path] = how
        return first

    def take(self) -> dict[str, str]:
        held, self.held = self.held, {}
        return held


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
