"""What the model has been told of the tracked files changed outside while a session is
live: an immutable ledger the TerminalActor keeps, with one pure transition per event."""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from session.filesystem import FileDrift, unseen_changes

NOTE_FILES = 20
"""Files a request's note on changes outside names (the rest are counted)."""


@dataclass(frozen=True)
class LiveDrift:
    """The files changed outside, and what the model knows of them. Its table (event:
    transition: what it does):

    - the watcher reports files: ``seen``: a file holding what our tools wrote there last
      is no change (not returned); one holding anything else holds that write no more.
    - ... while a turn runs: ``during_turn``: a file the turn writes is ``deferred`` to
      its end; the others are returned (told now) and kept in ``told_in_turn``.
    - a change is told: ``noted``: in ``changed`` (the next request's ``note`` names it,
      once) and in ``edited`` (``/reset`` names it).
    - a request is sent: ``sent``: ``changed`` and ``untold`` move to ``carried``; the
      note is returned.
    - a turn ends: ``turn_ended``: ``deferred`` and ``told_in_turn`` are returned and
      cleared; what its tools wrote is ours (``written``) and no longer ``edited``; what
      it ``carried`` goes back to ``changed`` and ``untold`` unless the model read it.
    - a context tells a drift (a resume's, a restore's): ``in_context``: ``untold`` is
      that drift at the digests it was found against; ``changed`` is cleared.
    - a resume finds files modified: ``resumed``: ``edited`` is those files.
    - a restore writes files: ``restored_written``: ``written`` takes them.
    - ``/reset``: ``reset``: ``changed``, ``edited`` and ``untold`` are cleared.
    """

    changed: frozenset[str] = frozenset()
    """Files changed outside since the last request: its note names them, once."""
    untold: Mapping[str, str] = field(default_factory=dict)
    """Drift a resume (or a restore) put in the context, which no request has carried yet:
    each file at the digest that context compares with. Saved so, a later resume tells it
    again (leaving at once lost it)."""
    carried: frozenset[str] = frozenset()
    carried_untold: Mapping[str, str] = field(default_factory=dict)
    """The changes outside (and the resume's drift) the running turn's request carries:
    told again by the next request if the turn is not kept."""
    deferred: frozenset[str] = frozenset()
    """Changes seen during a turn at paths it writes: told (or not) when it ends."""
    told_in_turn: frozenset[str] = frozenset()
    """Changes told while the turn ran (its end does not tell them again)."""
    edited: frozenset[str] = frozenset()
    """Files seen changed outside agent-assist (while live, or since the session was last
    saved, at its resume) that no turn's tool wrote since: they hold the user's work,
    which ``/reset`` names before it deletes it."""
    written: Mapping[str, str] = field(default_factory=dict)
    """What the turns' tools wrote last in each file (its SHA-256): the watcher seeing
    that is no change from outside."""

    def seen(
        self, paths: tuple[str, ...], digests: tuple[str, ...]
    ) -> tuple[LiveDrift, tuple[str, ...]]:
        """``paths`` the watcher saw (at ``digests``) but those that hold what a turn's
        tools wrote there last: the watcher's news of a write of ours can come after the
        turn ended (a turn cut short right after it wrote, a model that answers fast), and
        is no change from outside. A file seen holding something else holds that write no
        more: put back to it later (an editor's undo), it changed outside like any other."""
        if len(digests) != len(paths):
            return self, paths
        written = dict(self.written)
        outside = []
        for path, digest in zip(paths, digests, strict=True):
            if written.get(path) == digest:
                continue
            written.pop(path, None)
            outside.append(path)
        return replace(self, written=written), tuple(outside)

    def during_turn(
        self, paths: tuple[str, ...], turn_writes: Iterable[str]
    ) -> tuple[LiveDrift, tuple[str, ...]]:
        """Changes seen while a turn runs: those at paths the turn writes are sorted out
        when it ends; the others, returned, are told now (and not again at its end)."""
        writes = frozenset(turn_writes)
        ours = frozenset(p for p in paths if posixpath.normpath(p) in writes)
        now = tuple(p for p in paths if p not in ours)
        told = self.told_in_turn | set(now)
        return replace(self, deferred=self.deferred | ours, told_in_turn=told), now

    def noted(self, paths: Iterable[str]) -> LiveDrift:
        """Changes outside told the terminal: the next request names them, ``/reset`` too."""
        told = frozenset(paths)
        return replace(self, changed=self.changed | told, edited=self.edited | told)

    @property
    def note(self) -> str:
        """The next request's note on the files changed outside since the last one."""
        if not self.changed:
            return ""
        names = sorted(self.changed)
        listed = ", ".join(names[:NOTE_FILES])
        if len(names) > NOTE_FILES:  # a short note: rm -rf of a tree named all 161 files
            rest = names[NOTE_FILES:]
            places = sorted({name.split("/", 1)[0] + "/" for name in rest if "/" in name})
            where = f" (under {', '.join(places[:5])})" if places else ""
            listed += f" and {len(rest)} more{where}"
        return (
            "Note: these tracked files changed outside the assistant since the last turn: "
            + listed
            + ". Read them again before relying on their content."
        )

    def sent(self) -> tuple[LiveDrift, str]:
        """A request is sent: it carries the note (returned) and the context that tells
        the untold drift, until its turn ends."""
        new = replace(
            self,
            changed=frozenset(),
            untold={},
            carried=self.changed,
            carried_untold=dict(self.untold),
        )
        return new, self.note

    def turn_ended(
        self, written: Iterable[tuple[str, str]], *, read: bool
    ) -> tuple[LiveDrift, frozenset[str], frozenset[str]]:
        """A turn ended, its tools having ``written`` these (path, digest): ours last, they
        hold the user's work no more. ``read``: the model read its request (the turn is
        kept, answered); if not (it failed or was cancelled with nothing kept, or kept
        unanswered), what the request carried is carried by the next one. Returns the new
        ledger, the changes deferred to the end and those told while it ran."""
        wrote = dict(written)
        new = replace(
            self,
            deferred=frozenset(),
            told_in_turn=frozenset(),
            written={**self.written, **wrote},
            edited=self.edited - wrote.keys(),
            carried=frozenset(),
            carried_untold={},
        )
        if not read:
            new = replace(
                new,
                changed=new.changed | self.carried,
                untold={**self.carried_untold, **new.untold},
            )
        return new, self.deferred, self.told_in_turn

    def in_context(self, drift: FileDrift, baseline: Mapping[str, str]) -> LiveDrift:
        """A context (a resume's, a restore's) tells ``drift``, found against ``baseline``:
        it stands for the changes outside so far, and is untold until a request carries it."""
        return replace(self, changed=frozenset(), untold=untold_drift(drift, baseline))

    def resumed(self, drift: FileDrift) -> LiveDrift:
        """A resume found ``drift``: the files it found modified hold the user's work."""
        return replace(self, edited=frozenset(drift.modified))

    def restored_written(self, files: Mapping[str, str]) -> LiveDrift:
        """A restore wrote ``files`` (path, digest): ours last."""
        return replace(self, written={**self.written, **files})

    def reset(self) -> LiveDrift:
        """``/reset``: the new session has no changes outside to tell, nor drift."""
        return replace(self, changed=frozenset(), edited=frozenset(), untold={})

    def as_the_model_knows(
        self,
        manifest: Mapping[str, str],
        saved: Mapping[str, str] | None,
        tracked: frozenset[str],
        untold: Iterable[str] = (),
        wrote: Mapping[str, str] | None = None,
        deleted: Iterable[str] = (),
    ) -> dict[str, str]:
        """``manifest`` as the session file keeps it (``saved``: the manifest saved last,
        None with no session; ``tracked``: the session's tracked paths): each file changed
        outside that the model has not been told of yet (``untold`` too) at the digest it
        knows (what the turn ending ``wrote`` there, else the one saved before), and each
        file of a resume's (a restore's) drift no request has carried yet at the digest
        that drift was found against, so that the next resume tells it (the exit's fresh
        hashes took the change in: the notice was shown, the model never told). Files a
        restore ``deleted`` (ours) are neither kept as gone nor as changed outside."""
        if saved is None:
            return dict(manifest)
        dropped = frozenset(deleted)
        kept = with_gone_kept(manifest, saved, tracked, dropped)
        pending = self.changed.union(untold) - dropped
        if not (pending or self.untold):
            return kept
        known = {**saved, **(wrote or {})}
        baseline = {path: known[path] for path in pending if path in known}
        baseline.update(self.untold)
        told = {path: digest for path, digest in kept.items() if path not in pending}
        return told | baseline


def unexpected(
    paths: tuple[str, ...], digests: tuple[str, ...], expected: Mapping[str, str] | None
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``paths`` (and their ``digests``) the watcher reports but those seen holding what
    ``expected`` has there: with no watcher (the files compared at each turn), what the
    terminal expects (the watcher's settling after an earlier watch compares against that
    watch's older baseline, and told late a change the comparison before a turn had told
    already: the model was told twice). None (a watcher's reports stand: a change made
    while a turn ran can be in the turn's manifest before its report): every one."""
    if expected is None or len(digests) != len(paths):
        return paths, digests
    fresh = [(p, d) for p, d in zip(paths, digests, strict=True) if expected.get(p) != d]
    return tuple(p for p, _ in fresh), tuple(d for _, d in fresh)


def untold_drift(drift: FileDrift, baseline: Mapping[str, str]) -> dict[str, str]:
    """The files ``drift`` reports changed, at the digest it compared them with."""
    return {path: baseline[path] for path in (*drift.modified, *drift.deleted) if path in baseline}


def with_gone_kept(
    manifest: Mapping[str, str],
    saved: Mapping[str, str],
    tracked: frozenset[str],
    deleted: frozenset[str] = frozenset(),
) -> dict[str, str]:
    """``manifest`` with each ``tracked`` file that is gone now (deleted, or behind a
    directory that became a symlink) at the digest it was ``saved`` with: it stays tracked,
    and the next resume tells what became of it (then, if still gone, it is dropped)."""
    gone = {
        path: digest
        for path, digest in saved.items()
        if path not in manifest and path in tracked and path not in deleted
    }
    return {**manifest, **gone}


def changed_during_turn(
    seen: Iterable[str],
    wrote: Iterable[tuple[str, str]],
    read: Iterable[tuple[str, str]],
    now: Mapping[str, str],
    watched: Mapping[str, str] | None,
    still_tracked: Callable[[str], bool],
) -> tuple[set[str], frozenset[str]]:
    """The files that changed outside during a turn, ``now`` hashed at its end: among
    ``seen`` (changes the watcher saw), every file the turn did not write (reading one is
    no change); each file it ``wrote`` that holds something else now than what it wrote
    last (seen or not: one it made had no watch yet); each file it ``read`` (and did not
    write) that holds something else now than what it read (one not tracked before had no
    watch); and each other file that holds something else now than ``watched`` (the
    watcher's baseline) with its event not settled yet (the watch of now's manifest would
    take it in untold). And which of those ``unseen_changes`` found gone."""
    written = dict(wrote)
    outside = {p for p in seen if p not in written}
    outside |= {p for p, digest in written.items() if now.get(p) != digest}
    outside |= {p for p, digest in read if p not in written and now.get(p) != digest}
    unseen, gone = unseen_changes(watched, now, still_tracked, written)
    return outside | set(unseen), gone
