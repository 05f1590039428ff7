"""``SessionLifecycle``: one terminal's session as pure transitions that return effects.

Rules (the table ``TRANSITIONS`` is the source of truth):

* A lifecycle starts ``unstarted``. ``start_fresh`` or ``resume`` make it
  ``active``; ``exit`` makes it ``closed``, and nothing follows ``closed``
  except a late ``record_summary``.
* Every transition returns a new lifecycle and the effects the caller must
  perform, in order (write or delete a session file or the pointer). The
  lifecycle never does IO; the caller passes in what IO found (the stored
  state, the file drift, the manifest, the clock).
* ``reset`` (``/reset``, ``/new``) deletes the saved session and pointer, clears
  history and resume context, starts a new id and sets ``session_deleted``:
  autosave (``exit``, ``record_summary``) then writes nothing until a turn
  completes or the user saves explicitly.
* ``exit`` of a session that was never saved and holds no messages writes no
  file (an empty session is not worth listing); it drops the pointer.
* The pointer is written when a session starts or resumes and with the first
  save after a ``reset``; later saves leave it alone.
* The in-memory history is bounded (``PersistPolicy.memory_turns``), so a long
  session costs the same per turn as a short one.
* A summary recorded while active is kept for the next write; one recorded
  after ``exit`` is written at once (durability never waits for a summary).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum

import orjson
from pydantic_ai.messages import ModelMessage

from session.errors import IllegalTransition
from session.filesystem import FileDrift
from session.history import (
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_TURNS,
    dump_messages,
    load_messages,
    recent_start,
    reconstruct_history,
)
from session.models import JsonDict, SessionState
from session.resume import build_resume_context


class Phase(StrEnum):
    UNSTARTED = "unstarted"
    ACTIVE = "active"
    CLOSED = "closed"


class Event(StrEnum):
    START = "start a fresh session"
    RESUME = "resume a session"
    TURN = "complete a turn"
    SAVE = "save"
    RESET = "reset"
    SUMMARY = "record a summary"
    EXIT = "exit"
    CHECKPOINT = "record a checkpoint"
    RESTORE = "restore a checkpoint"


TRANSITIONS: dict[tuple[Phase, Event], Phase] = {
    (Phase.UNSTARTED, Event.START): Phase.ACTIVE,
    (Phase.UNSTARTED, Event.RESUME): Phase.ACTIVE,
    (Phase.UNSTARTED, Event.EXIT): Phase.CLOSED,
    (Phase.ACTIVE, Event.TURN): Phase.ACTIVE,
    (Phase.ACTIVE, Event.SAVE): Phase.ACTIVE,
    (Phase.ACTIVE, Event.RESET): Phase.ACTIVE,
    (Phase.ACTIVE, Event.SUMMARY): Phase.ACTIVE,
    (Phase.ACTIVE, Event.EXIT): Phase.CLOSED,
    (Phase.CLOSED, Event.SUMMARY): Phase.CLOSED,
    (Phase.ACTIVE, Event.CHECKPOINT): Phase.ACTIVE,
    (Phase.ACTIVE, Event.RESTORE): Phase.ACTIVE,
}


@dataclass(frozen=True)
class WriteSession:
    state: SessionState
    encoded_messages: tuple[bytes, ...] | None = None
    """``state.recent_messages`` already encoded, message by message (or None)."""


@dataclass(frozen=True)
class DeleteSession:
    session_id: str


@dataclass(frozen=True)
class WritePointer:
    session_id: str


@dataclass(frozen=True)
class DeletePointer:
    pass


Effect = WriteSession | DeleteSession | WritePointer | DeletePointer


@dataclass(frozen=True)
class PersistPolicy:
    """How much history a save keeps and which secret values it scrubs."""

    max_turns: int | None = DEFAULT_MAX_TURNS
    max_chars: int | None = DEFAULT_MAX_CHARS
    known_secrets: tuple[str, ...] = ()
    memory_turns: int = 4 * DEFAULT_MAX_TURNS
    """Turns kept in memory (for summaries); older ones are on disk nowhere but in
    the summary and decisions, until compaction keeps them as a summary."""


@dataclass(frozen=True)
class Transition:
    lifecycle: SessionLifecycle
    effects: tuple[Effect, ...]


@dataclass(frozen=True)
class SessionLifecycle:
    """What a TerminalActor holds: the session, its in-memory history and flags."""

    phase: Phase = Phase.UNSTARTED
    state: SessionState | None = None
    history: tuple[ModelMessage, ...] = ()
    history_json: tuple[JsonDict, ...] = ()
    """``history`` dumped and scrubbed, message by message, once each."""
    history_encoded: tuple[bytes, ...] = ()
    """``history_json`` encoded, so that a save encodes only the new messages."""
    tail_start: int = 0
    """Where the recent whole turns within the policy's budgets start in ``history``:
    what the next request sends and what a save keeps (kept by ``_move``)."""
    resume_context: str = ""
    session_deleted: bool = False
    saved: bool = False
    tracked_paths: frozenset[str] = frozenset()
    policy: PersistPolicy = field(default_factory=PersistPolicy)

    # -- queries ----------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        return self.state.session_id if self.state is not None else None

    def request_history(self) -> list[ModelMessage]:
        """The ``message_history`` for the next agent run: the recent whole turns.

        ``history`` holds only what ``resume`` reconstructed and what agent runs
        produced, so cutting at a turn start keeps it valid.
        """
        return list(self.history[self.tail_start :])

    def write(
        self, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> WriteSession:
        """The session file to write now: the recent tail, scrubbed and already encoded,
        and the fresh manifest."""
        state = self._require_state().model_copy(
            update={
                "updated_at": now,
                "file_manifest": dict(manifest),
                "agent_spec_path": agent_spec_path,
                "recent_messages": self.history_json[self.tail_start :],
            }
        )
        return WriteSession(state, self.history_encoded[self.tail_start :])

    def _dump(
        self, messages: Sequence[ModelMessage]
    ) -> tuple[tuple[JsonDict, ...], tuple[bytes, ...]]:
        """The ``history_json`` and ``history_encoded`` entries of ``messages``."""
        dumped = tuple(dump_messages(messages, self.policy.known_secrets))
        return dumped, tuple(orjson.dumps(message) for message in dumped)

    # -- transitions ------------------------------------------------------

    def start_fresh(self, now: datetime, session_id: str | None = None) -> Transition:
        state = SessionState.new(now, session_id)
        new = self._move(
            Event.START,
            state=state,
            history=(),
            history_json=(),
            history_encoded=(),
            resume_context="",
            saved=False,
        )
        return Transition(new, (WritePointer(state.session_id),))

    def resume(self, stored: SessionState, drift: FileDrift | None) -> Transition:
        history = tuple(
            reconstruct_history(
                load_messages(stored.recent_messages),
                max_turns=self.policy.max_turns,
                max_chars=self.policy.max_chars,
            )
        )
        history_json, history_encoded = self._dump(history)
        new = self._move(
            Event.RESUME,
            state=stored,
            history=history,
            history_json=history_json,
            history_encoded=history_encoded,
            resume_context=build_resume_context(stored, drift),
            saved=True,
            tracked_paths=frozenset(stored.file_manifest),
        )
        return Transition(new, (WritePointer(stored.session_id),))

    def complete_turn(
        self,
        new_messages: Sequence[ModelMessage],
        *,
        now: datetime,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
        decisions: Iterable[str] = (),
        touched: Iterable[str] = (),
    ) -> Transition:
        """A turn finished: keep its messages and save (autosave is re-enabled)."""
        state = self._check(Event.TURN)
        fresh = (d.strip() for d in decisions if d.strip())
        merged = tuple(dict.fromkeys([*state.decisions, *fresh]))
        history = (*self.history, *new_messages)
        new_json, new_encoded = self._dump(new_messages)
        history_json = (*self.history_json, *new_json)
        history_encoded = (*self.history_encoded, *new_encoded)
        keep = recent_start(history, max_turns=self.policy.memory_turns, max_chars=None)
        new = self._move(
            Event.TURN,
            state=state.model_copy(update={"decisions": merged}),
            history=history[keep:],
            history_json=history_json[keep:],
            history_encoded=history_encoded[keep:],
            session_deleted=False,
            tracked_paths=self.tracked_paths | frozenset(touched),
        )
        return new._written(now, manifest, agent_spec_path)

    def save(
        self, *, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> Transition:
        """Explicit ``/save``: rebuild manifest and spec path, re-enable autosave."""
        new = self._move(Event.SAVE, session_deleted=False)
        return new._written(now, manifest, agent_spec_path)

    def reset(self, now: datetime, session_id: str | None = None) -> Transition:
        old = self._check(Event.RESET)
        new = self._move(
            Event.RESET,
            state=SessionState.new(now, session_id),
            history=(),
            history_json=(),
            history_encoded=(),
            resume_context="",
            session_deleted=True,
            saved=False,
            tracked_paths=frozenset(),
        )
        return Transition(new, (DeleteSession(old.session_id), DeletePointer()))

    def record_summary(
        self,
        summary: str,
        *,
        now: datetime,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
    ) -> Transition:
        """A summary arrived. While active it rides on the next write; after exit it is
        a second write of a session already on disk."""
        state = self._check(Event.SUMMARY)
        new = self._move(Event.SUMMARY, state=state.model_copy(update={"summary": summary}))
        if new.phase is Phase.ACTIVE or new.session_deleted or not new.saved:
            return Transition(new, ())
        return Transition(new, (new.write(now, manifest, agent_spec_path),))

    def exit(
        self, *, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> Transition:
        """The terminal went away (exit, Ctrl+C, crash): the autosave path."""
        new = self._move(Event.EXIT)
        if self.phase is Phase.UNSTARTED or self.session_deleted:
            return Transition(new, ())
        if not self.saved and not self.history:
            return Transition(new, (DeletePointer(),))
        return new._written(now, manifest, agent_spec_path)

    def record_checkpoint(self, number: int) -> Transition:
        """Checkpoint ``number`` was written: ``checkpoint_count`` follows (the next write
        of the session carries it)."""
        state = self._check(Event.CHECKPOINT)
        count = max(number, state.checkpoint_count)
        new = self._move(
            Event.CHECKPOINT, state=state.model_copy(update={"checkpoint_count": count})
        )
        return Transition(new, ())

    def restore(
        self,
        stored: SessionState,
        drift: FileDrift | None,
        *,
        now: datetime,
        manifest: Mapping[str, str],
        agent_spec_path: str | None,
    ) -> Transition:
        """``/checkpoint N``: the conversation goes back to checkpoint N's state.

        State and history are replaced wholesale through the path ``resume`` takes
        (so the next request carries N's history and N's resume context); the
        session keeps its id, creation time and checkpoint count, keeps tracking
        the files it tracks now, and is saved (autosave is re-enabled).
        """
        current = self._check(Event.RESTORE)
        state = stored.model_copy(
            update={
                "session_id": current.session_id,
                "created_at": current.created_at,
                "checkpoint_count": max(current.checkpoint_count, stored.checkpoint_count),
            }
        )
        resumed = dataclasses.replace(self, phase=Phase.UNSTARTED).resume(state, drift).lifecycle
        new = dataclasses.replace(
            resumed,
            phase=self._target(Event.RESTORE),
            session_deleted=False,
            saved=self.saved,
            tracked_paths=self.tracked_paths | resumed.tracked_paths,
        )
        return new._written(now, manifest, agent_spec_path)

    # -- helpers ----------------------------------------------------------

    def _written(
        self, now: datetime, manifest: Mapping[str, str], agent_spec_path: str | None
    ) -> Transition:
        write = self.write(now, manifest, agent_spec_path)
        new = dataclasses.replace(self, state=write.state, saved=True)
        if self.saved:
            return Transition(new, (write,))
        return Transition(new, (write, WritePointer(write.state.session_id)))

    def _target(self, event: Event) -> Phase:
        target = TRANSITIONS.get((self.phase, event))
        if target is None:
            raise IllegalTransition(event.value, self.phase.value)
        return target

    def _check(self, event: Event) -> SessionState:
        """Refuse ``event`` if the table does not allow it here; return the current state."""
        self._target(event)
        return self._require_state()

    def _move(self, event: Event, **changes: object) -> SessionLifecycle:
        history = changes.get("history")
        if isinstance(history, tuple):
            changes["tail_start"] = recent_start(
                history, max_turns=self.policy.max_turns, max_chars=self.policy.max_chars
            )
        return dataclasses.replace(self, phase=self._target(event), **changes)  # type: ignore[arg-type]

    def _require_state(self) -> SessionState:
        if self.state is None:
            raise IllegalTransition("use the session", self.phase.value)
        return self.state
