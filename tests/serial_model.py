"""The serial specification of one project's sessions, and a linearizability search over it.

``apply`` is the spec: what one operation (a turn, ``/save``, ``/reset``, an
open, an exit or a disconnect) does to the sessions on disk when operations
happen one at a time, and which answers the client may get. ``linearize``
looks for a serial order of a concurrent history (every operation placed
between its invocation and its answer, each client's operations in its own
order, operations never answered placed anywhere after their invocation or
left out, disconnects always placed) whose final state is what was found on
disk. Pure code over frozen values: no IO, no project imports.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, TypeVar

T = TypeVar("T")

Kind = Literal["hello", "open_new", "open_resume", "turn", "save", "reset", "close", "disconnect"]


@dataclass(frozen=True)
class Op:
    """One operation of one client: what it asked, when, and what it was told (if it was).

    ``invoked`` and ``answered`` are ticks of one clock shared by every client,
    taken just before the request was sent and just after the answer arrived.
    ``result`` is None for an operation never answered (its client went away).
    Results: hello ``("welcome", offer)`` or ``("busy",)``; opens ``("opened", id)``
    or ``("error", code)``; turn ``("ok",)``; save ``("saved", checkpoint)`` or, with
    nothing changed since the latest checkpoint, ``("unchanged", checkpoint)``;
    reset ``("reset", new_id)``; close ``("closed", saved, id)``.
    """

    client: int
    kind: Kind
    arg: str | None
    invoked: int
    answered: int | None = None
    result: tuple[object, ...] | None = None

    @property
    def pending(self) -> bool:
        return self.answered is None

    def __str__(self) -> str:
        span = f"{self.invoked}-{'?' if self.answered is None else self.answered}"
        arg = f"({self.arg})" if self.arg else ""
        return f"[{span}] c{self.client} {self.kind}{arg} -> {self.result}"


@dataclass(frozen=True)
class Held:
    """What a client's TerminalActor holds: its session and the history in memory."""

    session_id: str
    history: tuple[str, ...]
    saved: bool
    deleted: bool
    """Reset: autosave is off until the next turn or ``/save``."""


@dataclass(frozen=True)
class SessionFile:
    messages: tuple[str, ...]
    """The message ids of the stored user turns, in order."""
    checkpoint_count: int


@dataclass(frozen=True)
class Final:
    """What is on disk at the end: session files, checkpoints, pointers."""

    sessions: Mapping[str, SessionFile]
    checkpoints: Mapping[str, tuple[int, ...]]
    """Checkpoint numbers per session directory (sessions with none are absent)."""
    pointers: Mapping[int, str]
    """Client index to the session its pointer names."""


@dataclass(frozen=True)
class Model:
    """The state of the serial spec (hashable, so the search can remember it)."""

    files: frozenset[tuple[str, SessionFile]] = frozenset()
    live: frozenset[tuple[str, int]] = frozenset()
    deleted: frozenset[str] = frozenset()
    used: frozenset[str] = frozenset()
    held: tuple[Held | None, ...] = ()
    pointers: tuple[str | None, ...] = ()
    checkpointed: frozenset[tuple[str, tuple[str, ...]]] = frozenset()
    """Per session, the history its latest checkpoint holds (a ``/save`` with the same
    history writes none)."""

    @classmethod
    def empty(cls, clients: int) -> Model:
        return cls(held=(None,) * clients, pointers=(None,) * clients)

    def file(self, session_id: str) -> SessionFile | None:
        return dict(self.files).get(session_id)

    def holder(self, session_id: str) -> int | None:
        return dict(self.live).get(session_id)

    def final(self) -> Final:
        files = dict(self.files)
        return Final(
            sessions=files,
            checkpoints={
                s: tuple(range(1, f.checkpoint_count + 1))
                for s, f in files.items()
                if f.checkpoint_count
            },
            pointers={c: s for c, s in enumerate(self.pointers) if s is not None},
        )


def _set(items: tuple[T, ...], index: int, value: T) -> tuple[T, ...]:
    return (*items[:index], value, *items[index + 1 :])


def _write(model: Model, held: Held, checkpoint_count: int | None = None) -> Model:
    """The session file of ``held`` written with its history (what every save does)."""
    old = model.file(held.session_id)
    count = (
        checkpoint_count if checkpoint_count is not None else (old.checkpoint_count if old else 0)
    )
    files = {s: f for s, f in model.files if s != held.session_id}
    files[held.session_id] = SessionFile(held.history, count)
    return dataclasses.replace(model, files=frozenset(files.items()))


def _release(model: Model, client: int) -> Model:
    return dataclasses.replace(model, live=frozenset(x for x in model.live if x[1] != client))


def apply(model: Model, op: Op, fresh: str) -> Model | None:
    """The state after ``op``, or None if ``op``'s answer is impossible in ``model``.

    ``fresh`` names a new session an unanswered open or reset may have created.
    """
    c = op.client
    held = model.held[c]
    result = op.result
    match op.kind:
        case "hello":
            if result is None:
                return model
            if result[0] != "welcome":
                return None
            offer = result[1]
            if offer is not None and (model.file(str(offer)) is None or model.holder(str(offer))):
                return None
            return model
        case "open_new":
            if held is not None:
                return None
            if result is not None and result[0] != "opened":
                return None
            session_id = fresh if result is None else str(result[1])
            if session_id in model.used:
                return None
            return dataclasses.replace(
                model,
                live=model.live | {(session_id, c)},
                used=model.used | {session_id},
                held=_set(model.held, c, Held(session_id, (), saved=False, deleted=False)),
                pointers=_set(model.pointers, c, session_id),
            )
        case "open_resume":
            assert op.arg is not None
            if held is not None:
                return None
            stored = model.file(op.arg)
            holder = model.holder(op.arg)
            if holder is not None:
                refused: tuple[object, ...] = ("error", "session_live")
            elif stored is None:
                refused = ("error", "not_found")
            else:
                if result is not None and result != ("opened", op.arg):
                    return None
                return dataclasses.replace(
                    model,
                    live=model.live | {(op.arg, c)},
                    held=_set(
                        model.held, c, Held(op.arg, stored.messages, saved=True, deleted=False)
                    ),
                    pointers=_set(model.pointers, c, op.arg),
                )
            return model if result is None or result == refused else None
        case "turn":
            assert op.arg is not None
            if held is None or (result is not None and result != ("ok",)):
                return None
            now = Held(held.session_id, (*held.history, op.arg), saved=True, deleted=False)
            model = _write(model, now)
            return dataclasses.replace(
                model,
                held=_set(model.held, c, now),
                pointers=_set(model.pointers, c, held.session_id),
            )
        case "save":
            if held is None:
                return None
            stored = model.file(held.session_id)
            latest = stored.checkpoint_count if stored else 0
            if latest and dict(model.checkpointed).get(held.session_id) == held.history:
                told: tuple[object, ...] = ("unchanged", latest)
                number = latest
            else:
                told, number = ("saved", latest + 1), latest + 1
                points = {s: h for s, h in model.checkpointed if s != held.session_id}
                points[held.session_id] = held.history
                model = dataclasses.replace(model, checkpointed=frozenset(points.items()))
            if result is not None and result != told:
                return None
            now = dataclasses.replace(held, saved=True, deleted=False)
            model = _write(model, now, number)
            return dataclasses.replace(
                model,
                held=_set(model.held, c, now),
                pointers=_set(model.pointers, c, held.session_id),
            )
        case "reset":
            if held is None or (result is not None and result[0] != "reset"):
                return None
            new = fresh if result is None else str(result[1])
            if new in model.used:
                return None
            old = held.session_id
            model = _release(model, c)
            return dataclasses.replace(
                model,
                files=frozenset(x for x in model.files if x[0] != old),
                checkpointed=frozenset(x for x in model.checkpointed if x[0] != old),
                deleted=model.deleted | {old},
                used=model.used | {new},
                live=model.live | {(new, c)},
                held=_set(model.held, c, Held(new, (), saved=False, deleted=True)),
                # deleting a session deletes every terminal's pointer to it
                pointers=tuple(None if p == old else p for p in _set(model.pointers, c, None)),
            )
        case "close" | "disconnect":
            if held is None:  # nothing was open
                return model if result is None or result == ("closed", False, None) else None
            model = _release(model, c)
            model = dataclasses.replace(model, held=_set(model.held, c, None))
            if held.deleted:
                wrote = False
            elif not held.saved and not held.history:
                wrote = False
                model = dataclasses.replace(model, pointers=_set(model.pointers, c, None))
            else:
                wrote = True
                model = _write(model, held)
                model = dataclasses.replace(
                    model, pointers=_set(model.pointers, c, held.session_id)
                )
            expected = ("closed", wrote, held.session_id if wrote else None)
            return model if result is None or result == expected else None
    raise AssertionError(op.kind)


@dataclass
class Verdict:
    """The search's answer: a serial order whose final state is the one on disk, or why not."""

    order: tuple[Op, ...] | None
    explored: int
    nearest: Final | None = None
    """With no such order: the final state of a complete serial order (closest found)."""
    nearest_order: tuple[Op, ...] = ()
    gave_up: bool = False
    """The search hit its limit of states: no order found, but not all were tried."""

    @property
    def serializable(self) -> bool:
        return self.order is not None


@dataclass
class _Search:
    clients: tuple[tuple[Op, ...], ...]
    observed: Final
    limit: int
    explored: int = 0
    seen: set[tuple[tuple[int, ...], Model]] = field(default_factory=set)
    nearest: tuple[int, Final, tuple[Op, ...]] | None = None

    def run(
        self, model: Model, positions: tuple[int, ...], order: tuple[Op, ...]
    ) -> tuple[Op, ...] | None:
        key = (positions, model)
        if key in self.seen or self.explored > self.limit:
            return None
        self.seen.add(key)
        self.explored += 1
        if all(p == len(ops) for p, ops in zip(positions, self.clients, strict=True)):
            final = model.final()
            if final == self.observed:
                return order
            distance = _distance(final, self.observed)
            if self.nearest is None or distance < self.nearest[0]:
                self.nearest = (distance, final, order)
            return None
        # An operation may go next only if no other unplaced, answered operation was
        # answered before it was invoked (real-time order).
        horizon = min(
            (
                op.answered
                for ops, p in zip(self.clients, positions, strict=True)
                for op in ops[p:]
                if op.answered is not None
            ),
            default=None,
        )
        for c, (ops, p) in enumerate(zip(self.clients, positions, strict=True)):
            if p == len(ops):
                continue
            op = ops[p]
            if horizon is not None and op.invoked > horizon:
                continue
            after = (*positions[:c], p + 1, *positions[c + 1 :])
            placed = apply(model, op, fresh=f"~{c}.{p}")
            if placed is not None:
                found = self.run(placed, after, (*order, op))
                if found is not None:
                    return found
            if op.pending and op.kind != "disconnect":  # never answered: it may not have happened
                found = self.run(model, after, order)
                if found is not None:
                    return found
        return None


def _distance(a: Final, b: Final) -> int:
    keys = set(a.sessions) | set(b.sessions)
    d = sum(a.sessions.get(k) != b.sessions.get(k) for k in keys)
    d += sum(
        a.checkpoints.get(k) != b.checkpoints.get(k)
        for k in set(a.checkpoints) | set(b.checkpoints)
    )
    d += sum(a.pointers.get(k) != b.pointers.get(k) for k in set(a.pointers) | set(b.pointers))
    return d


def by_client(history: Iterable[Op], clients: int) -> tuple[tuple[Op, ...], ...]:
    ops: list[list[Op]] = [[] for _ in range(clients)]
    for op in sorted(history, key=lambda o: o.invoked):
        ops[op.client].append(op)
    return tuple(tuple(o) for o in ops)


def misplaced_busy(ops: Sequence[Op]) -> Op | None:
    """A ``busy`` answer to a hello is right only while the client's previous connection,
    which it left by hanging up, may still be attached: its exit runs concurrently, so
    such a hello changes nothing and is not placed in the serial order. The first
    ``busy`` told at any other time, if any."""
    after_hangup = False
    for op in ops:
        if op.result == ("busy",):
            if not after_hangup:
                return op
        elif op.kind in ("disconnect", "close"):
            after_hangup = op.kind == "disconnect"
        elif op.kind == "hello" and op.result is not None:
            after_hangup = False
    return None


def linearize(
    history: Sequence[Op], clients: int, observed: Final, limit: int = 2_000_000
) -> Verdict:
    """A serial order of ``history`` that ends in ``observed``, if there is one."""
    ordered = by_client(history, clients)
    if any(misplaced_busy(ops) is not None for ops in ordered):
        return Verdict(None, 0)
    ordered = tuple(tuple(op for op in ops if op.result != ("busy",)) for ops in ordered)
    search = _Search(ordered, observed, limit)
    order = search.run(Model.empty(clients), (0,) * clients, ())
    verdict = Verdict(order, search.explored, gave_up=search.explored > limit)
    if order is None and search.nearest is not None:
        verdict.nearest, verdict.nearest_order = search.nearest[1], search.nearest[2]
    return verdict
