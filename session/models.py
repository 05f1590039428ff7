"""The persisted shapes: ``SessionState`` (schema v3 session file), ``Pointer``, and migration.

Schema history (what older versions lacked, and how ``migrate`` fills it in):

* v1 had no ``schema_version`` field, kept the whole history under ``messages``,
  had no ``decisions`` and might carry naive timestamps (they were UTC).
* v2 added ``schema_version`` and ``decisions`` and renamed ``messages`` to
  ``recent_messages`` (the tail); it lacked ``compacted_history_summary``,
  ``checkpoint_count`` and ``phase``.
* v3 is current.
"""

from __future__ import annotations

import math
import re
import secrets
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, Final, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from session.errors import InvalidSessionId

SCHEMA_VERSION: Final = 3
SESSION_ID_RE = re.compile(r"^[a-f0-9]{12}\Z")
SHA256_RE = r"^[a-f0-9]{64}$"

JsonDict = dict[str, Any]
WorkPhase = Literal["design", "code", "deploy"]
"""The phase of the work a session is in (``phase`` in the session file)."""


def validate_session_id(value: str) -> str:
    """Return ``value`` if it is a session id (12 lowercase hex digits), else raise."""
    if not isinstance(value, str) or not SESSION_ID_RE.match(value):
        raise InvalidSessionId(value)
    return value


def is_session_id(value: object) -> bool:
    return isinstance(value, str) and SESSION_ID_RE.match(value) is not None


def new_session_id() -> str:
    """Twelve random hex digits from ``secrets``."""
    return secrets.token_hex(6)


def utc_now() -> datetime:
    return datetime.now(UTC)


def _to_utc(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamp must be timezone-aware")
    try:
        return value.astimezone(UTC)
    except OverflowError as exc:  # year 1 or 9999 with an offset
        raise ValueError("timestamp out of range") from exc


def _check_id(value: str) -> str:
    if not SESSION_ID_RE.match(value):
        raise ValueError("session id must be 12 lowercase hex digits")
    return value


SessionId = Annotated[str, AfterValidator(_check_id)]
UtcDatetime = Annotated[datetime, AfterValidator(_to_utc)]
Sha256Hex = Annotated[str, Field(pattern=SHA256_RE)]


class SessionState(BaseModel):
    """One session file, exactly the fields of DESIGN.md section 4 (schema v3)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    schema_version: Literal[3] = SCHEMA_VERSION
    session_id: SessionId
    created_at: UtcDatetime
    updated_at: UtcDatetime
    agent_spec_path: str | None = None
    file_manifest: dict[str, Sha256Hex] = Field(default_factory=dict)
    summary: str | None = None
    decisions: tuple[str, ...] = ()
    recent_messages: tuple[JsonDict, ...] = ()
    compacted_history_summary: str | None = None
    checkpoint_count: int = Field(default=0, ge=0)
    phase: WorkPhase | None = None

    @classmethod
    def new(cls, now: datetime, session_id: str | None = None) -> SessionState:
        return cls(
            session_id=session_id or new_session_id(),
            created_at=now,
            updated_at=now,
        )

    def has_content(self) -> bool:
        """Whether there is anything worth resuming or keeping on disk: a conversation, or
        tracked files (a session taken back to a checkpoint before its first turn)."""
        return bool(
            self.recent_messages
            or self.summary
            or self.compacted_history_summary
            or self.decisions
            or self.file_manifest
            or self.agent_spec_path
        )


@dataclass(frozen=True)
class SessionHeader:
    """What a listing needs of a session file: everything but its messages, and their count.

    Listing validates only this, so a project with hundreds of sessions lists fast.
    """

    session_id: str
    created_at: datetime
    updated_at: datetime
    summary: str | None
    compacted_history_summary: str | None
    messages: int
    turns: int | None
    """User turns: those of ``messages`` and those its compacted summary covers; None when
    they cannot be counted (messages of a shape this version does not know, a file not
    read)."""
    note: str | None = None
    """Why the session cannot be opened by this version (it is still listed), or where its
    only copy is (``kept_only``)."""
    unanswered: str | None = None
    """The user's message of the last turn when it got no reply (``session/unanswered.py``)."""
    kept_only: bool = False
    """No file, only a recovery copy (none of its saves worked; ``note`` says where): it
    opens from the copy, so it is offered and pruned as a session with a file is."""


class Pointer(BaseModel):
    """``active_<pid>.json``: which session the terminal ``pid`` uses. A field it does not
    know (a newer version's) is ignored: a pointer carries no schema version."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    session_id: SessionId
    pid: int = Field(gt=0)
    pid_start_time: float | None
    updated_at: UtcDatetime


def schema_version_of(raw: JsonDict) -> int:
    """The schema version a raw session dict claims (v1 files carry none)."""
    version = raw.get("schema_version", 1)
    if isinstance(version, float) and version > SCHEMA_VERSION:  # 4.0, or 2**70 (a float
        return int(version) if math.isfinite(version) else sys.maxsize  # to orjson): newer
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise ValueError(f"bad schema_version {version!r}")
    return version


def _assume_utc(value: Any) -> Any:
    """v1 wrote naive ISO timestamps that meant UTC."""
    if isinstance(value, str):
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        if parsed.tzinfo is None:
            return parsed.replace(tzinfo=UTC).isoformat()
    return value


def _v1_to_v2(raw: JsonDict) -> JsonDict:
    out = {k: v for k, v in raw.items() if k != "messages"}
    out["schema_version"] = 2
    out["created_at"] = _assume_utc(raw.get("created_at"))
    out["updated_at"] = _assume_utc(raw.get("updated_at"))
    out["decisions"] = []
    out["recent_messages"] = raw.get("messages", [])
    return out


def _v2_to_v3(raw: JsonDict) -> JsonDict:
    out = dict(raw)
    out["schema_version"] = 3
    out.setdefault("compacted_history_summary", None)
    out.setdefault("checkpoint_count", 0)
    out.setdefault("phase", None)
    return out


_MIGRATIONS = {1: _v1_to_v2, 2: _v2_to_v3}


def migrate(raw: JsonDict) -> JsonDict:
    """Bring a raw session dict of any older version up to the current schema.

    The caller refuses versions newer than ``SCHEMA_VERSION`` before calling this.
    """
    version = schema_version_of(raw)
    if version > SCHEMA_VERSION:
        raise ValueError(f"schema_version {version} is newer than {SCHEMA_VERSION}")
    while version < SCHEMA_VERSION:
        raw = _MIGRATIONS[version](raw)
        version = schema_version_of(raw)
    return raw
