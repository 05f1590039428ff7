"""What the DriftWatcherActor watches, counted per owner: a Watch or an Unwatch updates it
in the time of that owner's paths, and says whether what must be watched changed."""

from __future__ import annotations

from collections.abc import Iterable


class Layout:
    """The tracked files, the directories on the way to them, and the directories to watch
    (from a workspace down), each with how many owners need it. (When it was rebuilt from
    every owner at each Unwatch, 500 terminals leaving one workspace visited 125,000
    entries.)"""

    def __init__(self) -> None:
        self._files: dict[str, int] = {}
        self._directories: dict[str, int] = {}
        self._holders: dict[str, int] = {}
        self.changed = False
        """Whether a path came or went since ``take`` (the watches may have to follow)."""
        self.visited = 0
        """Paths counted in or out so far (the work, for tests and benches)."""

    def add(self, files: Iterable[str], directories: Iterable[str], holders: Iterable[str]) -> None:
        """An owner's paths, counted in."""
        for counts, paths in (
            (self._files, files),
            (self._directories, directories),
            (self._holders, holders),
        ):
            for path in paths:
                self.visited += 1
                had = counts.get(path, 0)
                counts[path] = had + 1
                self.changed = self.changed or had == 0

    def remove(
        self, files: Iterable[str], directories: Iterable[str], holders: Iterable[str]
    ) -> None:
        """An owner's paths (as ``add`` was given them), counted out."""
        for counts, paths in (
            (self._files, files),
            (self._directories, directories),
            (self._holders, holders),
        ):
            for path in paths:
                self.visited += 1
                had = counts.pop(path)
                if had > 1:
                    counts[path] = had - 1
                else:
                    self.changed = True

    def take(self) -> tuple[frozenset[str], frozenset[str], frozenset[str]]:
        """The files, the directories on the way to them, and those to watch, as they are
        now; ``changed`` is reset."""
        self.changed = False
        return frozenset(self._files), frozenset(self._directories), frozenset(self._holders)
