"""Checkpoints without IO: the entry model, numbering, listing lines, manifest diffs, restore plans.

A checkpoint is one JSON entry, ``<project>/checkpoints/<session_id>/NNNN.json``,
holding the session's state at that moment and ``files``: the SHA-256 of every
tracked file's content, each stored once per project as
``<project>/blobs/<sha256>``. The file functions that read and write them are in
``session/manager.py`` (``CheckpointStore``); this module only decides.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from session.compacted import last_compacted_request, session_turns, tail_prompts
from session.errors import CheckpointError
from session.file_cap import is_over_cap_name
from session.filesystem import in_git_directory
from session.models import SessionState, Sha256Hex, UtcDatetime

CHECKPOINT_FORMAT: Final = 6
"""The newest entry layout: 1 had no ``modes``; 2 keeps each file's permission bits; 3 has
``made`` too (written only when it is not empty: an entry without it stays a 2, which an
agent-assist of format 2 reads); 4 has ``last_request`` too (written only when it is not
empty, likewise); 5 has ``written_over`` too (likewise); 6 has ``moved`` too (likewise). An
agent-assist that knows only N leaves an entry of a higher format untouched (never moves
it aside as damaged)."""
WRITTEN_OVER_FORMAT: Final = 5
"""The format of an entry with ``written_over`` and no ``moved``."""
LAST_REQUEST_FORMAT: Final = 4
"""The format of an entry with ``last_request`` and no ``written_over``."""
MADE_FORMAT: Final = 3
"""The format of an entry with ``made`` and no ``last_request``."""
ENTRY_FORMAT: Final = 2
"""The format of an entry with no ``made``."""
CAP_SETTING: Final = "AGENT_ASSIST_CHECKPOINT_MAX_MB"
CAP_SETTINGS_TOLD: Final = f"{CAP_SETTING} or checkpoint_max_mb in config.toml"
"""Where the cap comes from, as a cap message names it (the environment or the file)."""
DEFAULT_CAP_MB: Final = 500
LISTED: Final = 20
"""The checkpoints ``/checkpoint`` lists, the latest: 200 flooded the screen."""
FIRST_WORDS: Final = 8
FIRST_CHARS: Final = 60
"""At most this many characters of the first words: a message of one long word (a pasted
log line, a URL) made a ``/checkpoint`` line thousands of characters long."""
FILES_NAMED: Final = 20
"""Files a restore's lines name one by one; the others are counted (a restore of 2,000
templates printed 2,000 lines to ask, and one line of 36,000 characters after)."""
GIT_OWN: Final = "git's own file"
"""Why a file inside ``.git`` is never restored, as the restore's lines name it."""
_ENTRY_RE = re.compile(r"^(\d{4,9})\.json\Z")
_USED_RE = re.compile(r"^(\d{4,9})\.json(?:\.corrupt-.*)?\Z", re.DOTALL)
"""An entry's name, or the name it was moved aside to when found damaged."""

Mode = Annotated[int, Field(ge=0, le=0o7777)]
"""A file's permission bits (``stat.S_IMODE``), as an entry keeps them."""

def _over_cap_name(name: str) -> str:
    if not is_over_cap_name(name):
        raise ValueError("not the name of a turn moved beside a session file")
    return name


MovedName = Annotated[str, AfterValidator(_over_cap_name)]
"""``<id>.json.over-cap-<turn>-<digest8>``: checked before a path is built from it."""

Reason = Literal["save", "auto", "restore"]
"""Why a checkpoint was written: ``/save``, before the assistant's first write in a
turn, or just before a restore (so that the restore can be undone)."""


class Checkpoint(BaseModel):
    """One checkpoint entry, exactly as stored."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1, 2, 3, 4, 5, 6] = ENTRY_FORMAT
    number: int = Field(ge=1)
    created_at: UtcDatetime
    reason: Reason
    files: dict[str, Sha256Hex]
    """Every tracked file that existed then: ``{relative_path: sha256}`` (its blob)."""
    modes: dict[str, Mode] = Field(default_factory=dict)
    """The permission bits of each file of ``files`` then (``{relative_path: 0o755}``):
    the entry's, not the blob's, which is shared by every file of that content. Empty in
    an entry of format 1, written before modes were kept: a restore leaves the mode as it
    is now (a file made again gets the default, 0666 less the umask)."""
    sizes: dict[Sha256Hex, int]
    """The size in bytes of each blob ``files`` refers to."""
    made: tuple[str, ...] = ()
    """Files absent then that the restore this checkpoint was written before (its undo)
    was to make: a restore of this checkpoint deletes them, asking first, as it writes
    back the others (format 3; empty otherwise)."""
    written_over: tuple[str, ...] = ()
    """The files the restore this checkpoint was written before (its undo) was to write
    back or delete: none when the restore took the conversation back alone (``n`` to
    ``Restore files too?``), so that files still as they were then do not read as a
    restore cut short (format 5; empty otherwise, and in entries written before it)."""
    last_request: str = ""
    """The first words of the last user message then, kept only when ``state``'s tail
    holds none (a compaction took the whole tail, and a summary model's narrative need
    not name it): format 4; empty otherwise."""
    moved: tuple[MovedName, ...] = ()
    """The files beside the session file (``<id>.json.over-cap-*``, ``MovedTurn``) that
    held the conversation's oldest turns then, oldest first: the session file's cap had
    moved them out of it, so ``state``'s tail lacks them while the chat still sent them.
    A restore puts them back before the tail (format 6; empty otherwise, and in entries
    written before it, whose restore goes on without them)."""
    state: SessionState

    @property
    def turns(self) -> int:
        """The session's turns then, those a compaction took out of the tail included
        (a checkpoint made after a compaction said ``0 turns``)."""
        return session_turns(self.state.compacted_history_summary, self.state.recent_messages)

    @property
    def last_user(self) -> str:
        """The first words of the last user message: the tail's, or after a compaction took
        the whole tail, those the entry kept (``last_request``), else the last request its
        offline narrative names (an entry written before the words were kept)."""
        return first_words(self.last_user_text)

    @property
    def last_user_text(self) -> str:
        """The text ``last_user`` takes its first words from."""
        text = last_user_text(self.state.recent_messages) or self.last_request
        return text or last_compacted_request(self.state.compacted_history_summary) or ""


class Listed(BaseModel):
    """A checkpoint as its line lists it: the fields of its head (what ``encode_checkpoint``
    writes before the state), its turns and its last request's first words."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    number: int = Field(ge=1)
    created_at: UtcDatetime
    reason: Reason
    files: dict[str, Sha256Hex]
    modes: dict[str, Mode] = Field(default_factory=dict)
    turns: int = Field(ge=0)
    last_user: str
    readable: bool = True
    """False when its messages are not ones this agent-assist reads (a newer version's, an
    edit by hand): a restore refuses it, and its line says so instead of a count of turns."""

    @classmethod
    def of(cls, checkpoint: Checkpoint, readable: bool = True) -> Listed:
        return cls(
            number=checkpoint.number,
            created_at=checkpoint.created_at,
            reason=checkpoint.reason,
            files=checkpoint.files,
            modes=checkpoint.modes,
            turns=checkpoint.turns if readable else 0,
            last_user=checkpoint.last_user,
            readable=readable,
        )


@dataclass(frozen=True)
class Unchanged:
    """No checkpoint was written: the session's latest one already holds what it would
    have (``same_restore_point``), and restoring that one gives the same."""

    latest: Checkpoint


def same_restore_point(old: Checkpoint, new: Checkpoint) -> bool:
    """Whether restoring ``old`` gives what restoring ``new`` would: the same files, with the
    same contents and modes, the same files to delete, and the same conversation state;
    their numbers, times and reasons aside, and the summary: it tells the same turns (a
    summary model's landing after the offline one, or a restore's offline one against
    the model's it restored, made a checkpoint of identical turns and files)."""
    return _restore_point(old) == _restore_point(new)


def _restore_point(checkpoint: Checkpoint) -> tuple[object, ...]:
    state = checkpoint.state.model_copy(
        update={
            "checkpoint_count": 0,
            "updated_at": checkpoint.state.created_at,
            "summary": None,
            "recent_messages": tuple(map(_as_taken_back, checkpoint.state.recent_messages)),
        }
    )
    return (
        checkpoint.files,
        checkpoint.modes,
        checkpoint.made,
        checkpoint.last_request,
        checkpoint.moved,
        state,
    )


RESET_WHEN_TAKEN_BACK: Final = ("model_id", "workspace_ref")
"""The keys of a model response that a history taken from disk (a resume, a restore) has
reset to None (pydantic-ai's ``sanitize_messages``; ``session/history.py``): a checkpoint
written after a resume lacks what the one before it kept, and restores the same."""


def _as_taken_back(message: Mapping[str, Any]) -> Mapping[str, Any]:
    if message.get("kind") != "response":
        return message
    return {**message, **dict.fromkeys(RESET_WHEN_TAKEN_BACK)}


def entry_name(number: int) -> str:
    return f"{number:04d}.json"


def number_of(name: str) -> int | None:
    """The checkpoint number an entry's file name holds; None for anything else (temp files)."""
    match = _ENTRY_RE.match(name)
    return int(match[1]) if match and int(match[1]) > 0 else None


def number_used_by(name: str) -> int | None:
    """The checkpoint number an entry's file name holds, or held before the entry was moved
    aside as damaged (``0003.json.corrupt-<time>``); None for anything else."""
    match = _USED_RE.match(name)
    return int(match[1]) if match and int(match[1]) > 0 else None


def next_number(existing: Iterable[int], checkpoint_count: int) -> int:
    """Numbers only grow: one past the highest on disk (``existing``: entries, and those
    moved aside as damaged) or recorded in the session."""
    return max(max(existing, default=0), checkpoint_count) + 1


def parse_number(arg: str) -> int:
    """The N of ``/checkpoint N``; CheckpointError (one line) if it is not a positive integer."""
    text = arg.strip()
    if len(text) > 40 or not text.isascii() or not text.isdigit() or int(text) == 0:
        from session.redaction import secrets_from_environment, shown_input

        shown = shown_input(arg, 40, secrets_from_environment())
        raise CheckpointError(f"/checkpoint takes a checkpoint number (1, 2, ...), not {shown}")
    return int(text)


def ranges(numbers: Iterable[int]) -> str:
    """``1-3, 5``: sorted numbers with consecutive runs joined."""
    runs: list[list[int]] = []
    for number in sorted(set(numbers)):
        if runs and number == runs[-1][1] + 1:
            runs[-1][1] = number
        else:
            runs.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def unknown_number(number: int, existing: Sequence[int]) -> CheckpointError:
    if not existing:
        return CheckpointError(f"no checkpoint {number}; this session has no checkpoints")
    has = f"checkpoint {existing[0]}" if len(existing) == 1 else f"checkpoints {ranges(existing)}"
    return CheckpointError(f"no checkpoint {number}; this session has {has}")


# -- what a checkpoint holds, in words ---------------------------------------


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    prompts = tail_prompts(messages)
    return prompts[-1] if prompts else ""


def entry_format(
    made: Sequence[str],
    last_request: str,
    written_over: Sequence[str] = (),
    moved: Sequence[str] = (),
) -> int:
    """The oldest format that holds what an entry keeps, so that older versions read it."""
    if moved:
        return CHECKPOINT_FORMAT
    if written_over:
        return WRITTEN_OVER_FORMAT
    if last_request:
        return LAST_REQUEST_FORMAT
    return MADE_FORMAT if made else ENTRY_FORMAT


def named(paths: Sequence[str]) -> str:
    """``a.md, b.md``: the first ``FILES_NAMED`` paths, then how many more there are."""
    shown = ", ".join(paths[:FILES_NAMED])
    rest = len(paths) - FILES_NAMED
    return shown if rest <= 0 else f"{shown} and {rest:,} more"


def failed_lines(failed: Mapping[str, str]) -> list[str]:
    """The files a restore could not write, one ``error:`` line each with its reason, the
    first ``FILES_NAMED`` of them, then one line that counts the rest."""
    lines = [f"error: {path} not restored, left as it is ({why})." for path, why in failed.items()]
    rest = len(lines) - FILES_NAMED
    if rest <= 0:
        return lines
    plural = "files" if rest > 1 else "file"
    return [*lines[:FILES_NAMED], f"error: {rest:,} more {plural} not restored, left as they are."]


def moved_missing_line(number: int, missing: Sequence[str], turns: range = range(0)) -> str:
    """The line of a restore that could not read back some of checkpoint ``number``'s
    oldest turns, moved beside the session file by its cap (``Checkpoint.moved``):
    ``turns``, those the conversation goes on without (``turns_missing``; the turns
    before one missing go with it), when its stamps say."""
    if turns:
        what = _oldest(turns)
    else:
        what = "its oldest turn" if len(missing) == 1 else f"{len(missing)} of its oldest turns"
    return (
        f"note: checkpoint {number}'s conversation is restored without {what}: "
        f"{named(missing)} could not be read."
    )


def _oldest(turns: range) -> str:
    """``its oldest turn (turn 1)``, ``its 2 oldest turns (turns 1-2)``."""
    if len(turns) == 1:
        return f"its oldest turn (turn {turns.start})"
    return f"its {len(turns)} oldest turns (turns {turns.start}-{turns[-1]})"


def turns_missing_line(number: int, missing: range) -> str:
    """The line of a restore of checkpoint ``number`` whose tail lacks the turns before it
    (``turns_missing``): an entry written before ``moved`` (format 6) after the session
    file's cap had moved them aside, or one taken when the chat no longer sent them."""
    held = "it" if len(missing) == 1 else "them"
    return (
        f"note: checkpoint {number}'s conversation is restored without {_oldest(missing)}: the "
        f"checkpoint does not hold {held}."
    )


def changed_lines(changed: Sequence[str], to_delete: Iterable[str]) -> list[str]:
    """The files a restore left because they changed after its question (the answer was
    to what the question named, as ``/reset``'s): those it was to write back, then those
    it was to delete (``to_delete``), one line each kind."""
    deleting = set(to_delete)
    kept = [path for path in changed if path not in deleting]
    undeleted = [path for path in changed if path in deleting]
    lines = [f"{named(kept)} changed after the question; not restored."] if kept else []
    if undeleted:
        lines.append(f"{named(undeleted)} changed after the question; not deleted.")
    return lines


def first_words(text: str, words: int = FIRST_WORDS, chars: int = FIRST_CHARS) -> str:
    """The first ``words`` words of ``text``, at most ``chars`` characters of them, and
    `` ...`` when there is more."""
    parts = text.split()
    shown = " ".join(parts[:words])
    more = len(parts) > words
    if len(shown) > chars:
        shown, more = shown[:chars].rstrip(), True
    return shown + (" ..." if more else "")


# -- manifests ---------------------------------------------------------------


@dataclass(frozen=True)
class FileDiff:
    """How ``new`` differs from ``old`` (two ``{path: sha256}`` manifests)."""

    modified: tuple[str, ...] = ()
    added: tuple[str, ...] = ()
    deleted: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        return len(self.modified) + len(self.added) + len(self.deleted)


def diff_manifests(old: Mapping[str, str], new: Mapping[str, str]) -> FileDiff:
    return FileDiff(
        modified=tuple(sorted(p for p in old.keys() & new.keys() if old[p] != new[p])),
        added=tuple(sorted(new.keys() - old.keys())),
        deleted=tuple(sorted(old.keys() - new.keys())),
    )


def listing_items(checkpoints: Sequence[Checkpoint | Listed]) -> list[dict[str, object]]:
    """The checkpoints as data (``sessions show --json``), oldest first: number, time,
    turns, files changed since the previous one, why it was written, the last message's
    first words."""
    items: list[dict[str, object]] = []
    previous: Checkpoint | Listed | None = None  # the first has none to be counted against
    for checkpoint in sorted(checkpoints, key=lambda c: c.number):
        items.append(
            {
                "number": checkpoint.number,
                "created_at": checkpoint.created_at.isoformat().replace("+00:00", "Z"),  # as rows
                "turns": checkpoint.turns if _readable(checkpoint) else None,
                "files_changed": (
                    0 if previous is None else files_changed(previous, checkpoint)
                ),
                "reason": checkpoint.reason,
                "last_user": checkpoint.last_user or None,
            }
        )
        previous = checkpoint
    return items


def _readable(checkpoint: Checkpoint | Listed) -> bool:
    """A ``Listed`` knows whether its messages are readable; a ``Checkpoint`` that is not
    ``Listed`` was read to be restored, or written: its messages were."""
    return not isinstance(checkpoint, Listed) or checkpoint.readable


def files_changed(old: Checkpoint | Listed, new: Checkpoint | Listed) -> int:
    """Files whose content or mode differs from ``old`` to ``new``, added and deleted ones
    included."""
    diff = diff_manifests(old.files, new.files)
    both = old.files.keys() & new.files.keys()
    return diff.count + len(mode_changes(old.modes, new.modes, both, skip=diff.modified))


def mode_changes(
    then: Mapping[str, int],
    now: Mapping[str, int],
    paths: Iterable[str],
    *,
    skip: Iterable[str] = (),
) -> dict[str, tuple[int, int]]:
    """``{path: (mode then, mode now)}`` for each of ``paths`` (not in ``skip``) whose mode is
    known at both moments and differs (an entry of format 1 knows none)."""
    skipped = set(skip)
    return {
        p: (then[p], now[p])
        for p in sorted(paths)
        if p not in skipped and p in then and p in now and then[p] != now[p]
    }


def mode_text(mode: int) -> str:
    """``0755``: permission bits as ``chmod`` takes them."""
    return f"{mode:04o}"


def listing_lines(checkpoints: Sequence[Checkpoint | Listed], session_id: str) -> list[str]:
    """``/checkpoint``: oldest first, one line each beginning with the number, the latest
    ``LISTED`` of them; one line before them counts the earlier ones and says where they
    are all listed (``sessions show``)."""
    lines = item_lines(listing_items(checkpoints))
    earlier = len(lines) - LISTED
    if earlier <= 0:
        return lines
    numbers = ranges(sorted(c.number for c in checkpoints)[:earlier])
    plural = "s" if earlier > 1 else ""
    return [
        f"  ... {earlier:,} earlier checkpoint{plural} ({numbers}); "
        f"agent-assist sessions show {session_id} lists them all",
        *lines[earlier:],
    ]


UNREADABLE = "messages unreadable"
"""A checkpoint's line in place of its turns when its messages are not ones this version
reads (``Listed.readable``): ``0 turns`` said it held nothing."""


def item_lines(items: Sequence[Mapping[str, object]]) -> list[str]:
    """``listing_items`` as the lines ``/checkpoint`` and ``sessions show`` print."""
    if not items:
        return ["No checkpoints in this session yet (/save writes one)."]
    width = max(len(str(item["number"])) for item in items)
    lines = []
    for item in items:
        turns, changed, words = item["turns"], item["files_changed"], item["last_user"]
        moment = datetime.fromisoformat(str(item["created_at"]))
        counted = UNREADABLE if turns is None else f"{turns} turn{'' if turns == 1 else 's'}"
        lines.append(
            f"  {item['number']:>{width}}  {format_time(moment)}"
            f"  {counted}"
            f"  {changed} file{'' if changed == 1 else 's'} changed"
            f"  ({item['reason']})" + (f"  '{words}'" if words else "")  # not repr: no \x1b
        )
    return lines


def format_time(moment: datetime) -> str:
    return f"{moment.year:04d}-{moment:%m-%d %H:%M:%S} UTC"


# -- restoring ---------------------------------------------------------------


@dataclass(frozen=True)
class RestorePlan:
    """What a file restore of checkpoint N would do to the workspace now."""

    modified: tuple[str, ...]
    """Files of N whose content, or only mode, differs now: written back."""
    deleted: tuple[str, ...]
    """Files of N missing now: written back."""
    left_alone: tuple[str, ...]
    """Tracked files that did not exist at N: never touched, only named."""
    in_the_way: Mapping[str, str] = field(default_factory=dict)
    """Files of N whose place, or one of whose directories' place, holds what is not a
    file now (``a symlink is there now``), and git's own files (inside ``.git``: a model
    may read them, nothing of agent-assist writes them): never written, only named."""
    mode_only: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """Files of ``modified`` whose content is N's and only the mode differs: ``{path:
    (mode at N, mode now)}``. A restore writes them back as a content change (atomically,
    with N's mode), so they are asked about as one."""
    to_delete: tuple[str, ...] = ()
    """Files of N's ``made`` that are there now (N undoes a restore that made them):
    deleted, asked about with the files written back."""
    asked: Mapping[str, str | None] = field(default_factory=dict)
    """What each file of ``written_over`` held when the plan was made (its digest, None if
    absent): one that holds something else by the answer is left as it is, named."""

    @property
    def to_write(self) -> tuple[str, ...]:
        return tuple(sorted(p for p in (*self.modified, *self.deleted) if p not in self.in_the_way))

    @property
    def written_over(self) -> tuple[str, ...]:
        """The files a ``y`` changes: those written back and those deleted."""
        return tuple(sorted((*self.to_write, *self.to_delete)))

    def lines(self, number: int) -> list[str]:
        """One line per file, the first ``FILES_NAMED`` of them, then one that counts the
        rest by kind."""
        lines = [self._line(p, "modified" + self._mode_note(p, number)) for p in self.modified]
        lines += [self._line(p, "deleted") for p in self.deleted]
        lines += [f"  {p}: not in checkpoint {number}; left alone" for p in self.left_alone]
        lines += [f"  {p}: {made_by_the_restore(number)}" for p in self.to_delete]
        if len(lines) <= FILES_NAMED:
            return lines
        return [*lines[:FILES_NAMED], self._rest_line(len(lines) - FILES_NAMED, number)]

    def _rest_line(self, rest: int, number: int) -> str:
        """``  and 1,980 more files: 1,975 modified, 5 not in checkpoint 1``."""
        kinds = [
            (len(self.modified), "modified"),
            (len(self.deleted), "deleted"),
            (len(self.left_alone), f"not in checkpoint {number}"),
            (len(self.to_delete), "to delete"),
        ]
        skip = FILES_NAMED  # the files named, taken off the kinds in the order listed
        counts: list[str] = []
        for count, kind in kinds:
            shown = min(count, skip)
            skip -= shown
            if count - shown:
                counts.append(f"{count - shown:,} {kind}")
        return f"  and {rest:,} more file{'' if rest == 1 else 's'}: {', '.join(counts)}"

    def _mode_note(self, path: str, number: int) -> str:
        """`` (mode only: 0644 now, 0755 at checkpoint 1)`` for a file whose mode alone differs."""
        if path not in self.mode_only:
            return ""
        then, now = self.mode_only[path]
        return f" (mode only: {mode_text(now)} now, {mode_text(then)} at checkpoint {number})"

    def _line(self, path: str, how: str) -> str:
        if path in self.in_the_way:
            return f"  {path}: {how}; {self.in_the_way[path]}, left alone"
        return f"  {path}: {how}"


def made_by_the_restore(number: int) -> str:
    """How a restore's question names a file of checkpoint ``number``'s ``made``: absent
    then, and made by the restore it undoes or, deleted since, by a later one (which of
    them is not known, so neither is named)."""
    return f"not in checkpoint {number}, absent before the restore it undoes; deleted"


def restore_plan(
    at_checkpoint: Mapping[str, str],
    now: Mapping[str, str],
    in_the_way: Mapping[str, str] | None = None,
    *,
    modes_then: Mapping[str, int] | None = None,
    modes_now: Mapping[str, int] | None = None,
    made: Iterable[str] = (),
) -> RestorePlan:
    """Compare N's files with the workspace's tracked files now (missing ones absent);
    ``in_the_way``: what stands at the places of missing ones (``what_is_at`` of
    ``session/filesystem.py``); ``modes_then`` (N's ``modes``) and ``modes_now`` (the
    files' permission bits now): a file whose mode alone differs is ``modified`` too;
    ``made`` (N's): the files the restore N undoes made, deleted if they are there."""
    diff = diff_manifests(at_checkpoint, now)
    same = at_checkpoint.keys() & now.keys()
    mode_only = mode_changes(modes_then or {}, modes_now or {}, same, skip=diff.modified)
    modified = tuple(sorted((*diff.modified, *mode_only)))
    blocked = {p: what for p, what in (in_the_way or {}).items() if p in diff.deleted}
    blocked.update({p: GIT_OWN for p in (*modified, *diff.deleted) if in_git_directory(p)})
    made_set = set(made)
    to_delete = tuple(p for p in diff.added if p in made_set and not in_git_directory(p))
    left_alone = tuple(p for p in diff.added if p not in to_delete)
    plan = RestorePlan(modified, diff.deleted, left_alone, blocked, mode_only, to_delete)
    return replace(plan, asked={path: now.get(path) for path in plan.written_over})


# -- the size cap -------------------------------------------------------------


def cap_bytes(environ: Mapping[str, str] | None = None) -> int:
    """The per-session cap from ``AGENT_ASSIST_CHECKPOINT_MAX_MB`` (default 500 MB).

    A bad value raises ValueError naming the setting.
    """
    raw = (os.environ if environ is None else environ).get(CAP_SETTING, "").strip()
    if not raw:
        return DEFAULT_CAP_MB * 1_000_000
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < math.inf:
        raise ValueError(f"{CAP_SETTING} must be a positive number of megabytes, not {raw!r}")
    return megabytes_in_bytes(value)


def megabytes_in_bytes(megabytes: float) -> int:
    """A cap in megabytes (> 0), in bytes: at least one (0 would read as "not set")."""
    return max(1, int(megabytes * 1_000_000))


def usage(checkpoints: Iterable[Checkpoint], entry_bytes: int) -> int:
    """Bytes a session's checkpoints take: their entries plus each distinct blob once."""
    sizes: dict[str, int] = {}
    for checkpoint in checkpoints:
        sizes.update(checkpoint.sizes)
    return entry_bytes + sum(sizes.values())
