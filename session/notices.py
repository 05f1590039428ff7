"""The notices the terminal is told, and when (``Notices``): the changes outside, one line
per file and burst until a flood, then one line for the rest of it (``sed -i`` over 2,000
tracked files printed 2,000 lines), and those held while a reply streams. Pure."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from itertools import dropwhile, islice, takewhile

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
BURST_S = 2.0
"""Changes of one file less than this far apart are one burst: one notice."""


@dataclass(frozen=True)
class Told:
    """What a transition of ``Notices`` has the terminal told, and the timers it asks for."""

    lines: tuple[str, ...] = ()
    """Lines to tell now, in order."""
    flood: str | None = None
    """A flood's one line for the changes it held, if it is due now."""
    files: tuple[str, ...] = ()
    """The files ``flood`` stands for (not named in it)."""
    take_in: float | None = None
    """In how long to ``take`` what the flood holds (a line is due)."""
    check_in: float | None = None
    """In how long to check whether the flood went quiet (``checked``)."""


@dataclass(frozen=True)
class Notices:
    """The notices told lately, and those held back: an immutable ledger the TerminalActor
    keeps, with one pure transition per event, each taking the clock (``now``, seconds)
    and returning the new ledger and what to tell (``Told``). Its table (event: transition:
    what it does):

    - files changed outside: ``changed``: each file gets a notice, unless it last changed
      less than ``BURST_S`` ago and its last notice told it changed the same way by the
      same writer (a burst: one notice). A notice is a line of its own unless
      ``FLOOD_FILES`` lines were told in the last ``FLOOD_S`` or a flood goes on (a change
      held less than ``FLOOD_S`` ago): then it is held for the flood's line. The first
      change held since the last line asks for that line in ``HOLD_S``, doubled for each
      line this flood told already (up to ``MAX_HOLD_S``); a change held with no check
      for the flood's end under way starts one, in ``FLOOD_S``. A line of its own ends
      any flood before.
    - the flood's line is due: ``take``: what it holds is told in one line.
    - the check for the flood's end: ``checked``: a flood quiet for ``FLOOD_S`` is over
      and what it holds is told now; one not quiet yet asks for the check again when it
      will be; one that holds nothing (a line took it) ends the check.
    - a background notice (a compaction, the summary model): ``between_turns``: held while
      a reply streams (it cut the reply's text in two), else told.
    - a turn ends: ``turn_over``: the background notices held are told.
    """

    bursts: Mapping[str, tuple[float, str, str]] = field(default_factory=dict)
    """Each file seen changing outside in the last ``BURST_S``, oldest first: when it last
    changed (a burst gives one notice), and how its last notice told it (``changed``,
    ``deleted``, ``UNREADABLE``) and by whom (the other session's id, "" outside
    agent-assist): a burst that makes a deleted file again, deletes a changed one, or
    changes by hand what another session wrote, says so. A file quiet for longer is told
    afresh: it is dropped (copied per report, the ledger is as small as the burst)."""
    told: tuple[float, ...] = ()
    """When the lines of their own of the last ``FLOOD_S`` were told."""
    held: Mapping[str, str] = field(default_factory=dict)
    """Each file a flood holds for its line, and how it changed."""
    last_held: float | None = None
    lines: int = 0
    """The lines this flood has told (its held changes taken)."""
    checking: bool = False
    """Whether a check for the flood's end is under way."""
    background: tuple[str, ...] = ()
    """Background notices that came while a reply streamed: told after it."""

    def changed(
        self,
        paths: Iterable[str],
        now: float,
        gone: frozenset[str] = frozenset(),
        unread: frozenset[str] = frozenset(),
        writers: Mapping[str, str] | None = None,
    ) -> tuple[Notices, Told]:
        """``paths`` changed outside at ``now``: a file in ``gone`` (the watcher saw it no
        more) is told as deleted, or as made unreadable if it is in ``unread`` (there, but
        it cannot be read: a ``chmod 000``); ``writers``: the other agent-assist session
        that wrote a file, told as its change (outside this session, not outside
        agent-assist)."""
        old = sum(1 for _ in takewhile(lambda b: now - b[1][0] >= BURST_S, self.bursts.items()))
        bursts = dict(islice(self.bursts.items(), old, None))
        told = list(dropwhile(lambda at: now - at >= FLOOD_S, self.told))  # the last FLOOD_S
        held = dict(self.held)
        last_held, lines, checking = self.last_held, self.lines, self.checking
        own: list[str] = []
        take_in: float | None = None
        for path in sorted(set(paths)):
            last = bursts.pop(path, None)  # put back last: the oldest stay first
            how = UNREADABLE if path in unread else "deleted" if path in gone else "changed"
            writer = (writers or {}).get(path, "")
            if last is not None and now - last[0] < BURST_S and last[1:] == (how, writer):
                bursts[path] = (now, *last[1:])
                continue  # the same burst
            bursts[path] = (now, how, writer)
            flooding = last_held is not None and now - last_held < FLOOD_S
            if not (flooding or held or len(told) >= FLOOD_FILES):
                lines = 0  # any flood before has ended
                told.append(now)
                own.append(changed_line(path, how, writer))
                continue
            if not held:  # the first held since the last line: that line is due
                take_in = min(HOLD_S * 2**lines, MAX_HOLD_S)
            held[path] = how
            last_held = now
        check_in = None
        if held and not checking:
            checking, check_in = True, FLOOD_S
        new = replace(
            self,
            bursts=bursts,
            told=tuple(told),
            held=held,
            last_held=last_held,
            lines=lines,
            checking=checking,
        )
        return new, Told(tuple(own), take_in=take_in, check_in=check_in)

    def take(self) -> tuple[Notices, Told]:
        """The flood's line is due: what it holds, told in one line (none if nothing)."""
        if not self.held:
            return self, Told()
        told = Told(flood=flood_line(self.held), files=tuple(sorted(self.held)))
        return replace(self, held={}, lines=self.lines + 1), told

    def checked(self, now: float) -> tuple[Notices, Told]:
        """The check for the flood's end, at ``now``: over once quiet for ``FLOOD_S``."""
        if not self.held or self.last_held is None:
            return replace(self, checking=False), Told()
        left = self.last_held + FLOOD_S - now
        if left > 0:
            return self, Told(check_in=left)
        return replace(self, checking=False).take()

    def between_turns(self, line: str, in_turn: bool) -> tuple[Notices, Told]:
        """A background notice: held while a reply streams (``in_turn``), else told."""
        if in_turn:
            return replace(self, background=(*self.background, line)), Told()
        return self, Told((line,))

    def turn_over(self) -> tuple[Notices, Told]:
        """A turn ended: the background notices held during it are told."""
        return replace(self, background=()), Told(self.background)


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
