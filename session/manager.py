"""``SessionManager``: the session and pointer files of one project directory.

Every write is atomic and durable (temp file in the same directory, fsync,
``os.replace``, fsync of the directory). Reads never follow symlinks, accept
only regular files under a size cap, and move a file that does not parse
aside instead of deleting it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import logging
import os
import re
import stat
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import accumulate
from pathlib import Path
from typing import TypeVar

import orjson
from pydantic import ValidationError

from session.atomic import (
    UNCOMPACTED_SUFFIX,
    atomic_write,
    clear_stale_temp,
    clear_stale_workspace_temps_of,
    ensure_private_dir,
    fsync_dir,
    keep_aside,
    quarantine,
    replace_workspace_file,
    temp_path,
    write_creating_directories,
)
from session.checkpoints import (
    CAP_SETTINGS_TOLD,
    CHECKPOINT_FORMAT,
    Checkpoint,
    Listed,
    Reason,
    Unchanged,
    entry_format,
    entry_name,
    first_words,
    next_number,
    number_of,
    number_used_by,
    same_restore_point,
    unknown_number,
)
from session.compacted import session_turns, tail_prompts
from session.encoded import EncodedMessages
from session.errors import (
    CheckpointCapExceeded,
    CheckpointError,
    CorruptSessionFile,
    FutureSchemaVersion,
    InvalidPointer,
    LeftBehind,
    SecretsLeft,
    SessionFileError,
    SetAside,
    UnreadableMessages,
    UnreadableSessionDirectory,
    UnreadSessionFile,
    UnsafeSessionDirectory,
    UnsafeSessionFile,
)
from session.faults import inject
from session.file_cap import MAX_SESSION_BYTES, OVER_CAP_SUFFIX, is_over_cap_name
from session.filesystem import (
    WORKSPACE_GONE,
    held_as_asked,
    in_git_directory,
    is_safe_relative_path,
    safe_relative_paths,
    unreadable,
)
from session.header_index import FileIdentity, read_index, write_index
from session.known_digests import FileIdentity as BlobIdentity
from session.known_digests import Known, KnownDigests, identity
from session.message_shapes import UNKNOWN_SHAPE_NOTE, unknown_shape
from session.models import (
    SCHEMA_VERSION,
    SHA256_RE,
    JsonDict,
    Pointer,
    SessionHeader,
    SessionState,
    is_session_id,
    migrate,
    schema_version_of,
    utc_now,
    validate_session_id,
)
from session.processes import may_still_run
from session.redaction import encoded_forms, scrub_json, scrub_keys, scrub_text, with_secrets
from session.scrubbed_entries import (
    ListedFacts,
    copy_scrubbed_as_written,
    entry_digest,
    listed_facts,
    record_copy_scrubbed,
    record_scrubbed,
    scrubbed_as_written,
)
from session.split_messages import parsed_by_message
from session.unanswered import unanswered_message

log = logging.getLogger("agent_assist.storage")
_DIGEST_RE = re.compile(SHA256_RE)


def _valid_entries(path: Path, manifest: JsonDict) -> JsonDict:
    """A manifest without its entries that hold no SHA-256 (a hand edit): one bad entry
    untracks one file, it does not move the whole session aside."""
    kept = {
        name: digest
        for name, digest in manifest.items()
        if isinstance(digest, str) and _DIGEST_RE.match(digest)
    }
    if len(kept) != len(manifest):
        left = sorted(set(manifest) - set(kept))
        log.warning("%s: manifest entries with no valid digest left out: %s", path.name, left)
    return kept


MAX_MESSAGE_DEPTH = 200
"""How deeply a saved message may nest (a tool call's arguments nest within it). Deeper
is valid JSON that the serializers (orjson, pydantic: about 255 levels) cannot write
back, so such a file is refused by name, untouched, instead of failing later."""
MAX_POINTER_BYTES = 4096
MAX_KEPT_PATHS = 4096
POINTER_PREFIX = "active_"


def _guarded_directories(directory: Path, root: Path | None) -> tuple[Path, ...]:
    if root is None:
        return (directory,)
    try:
        inside = directory.relative_to(root)
    except ValueError:
        return (directory,)
    parts = inside.parts
    return tuple(root.joinpath(*parts[: i + 1]) for i in range(len(parts)))


def file_identity(path: Path) -> FileIdentity | None:
    """(inode, size, mtime, ctime) of a regular file, not following symlinks; else None."""
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


CONTEXT_NAME = "resume-context"
"""Beside a session's checkpoints: the resume context it was given
(``session/kept_context.py``)."""
UNSEEN_NAME = "unseen-reply"
"""Beside a session's checkpoints: the mark of a last reply nobody saw
(``session/unseen_reply.py``)."""


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """Bytes of ``path``, refusing symlinks, non-regular files and files over ``max_bytes``.

    Raises FileNotFoundError when it is missing, UnsafeSessionFile otherwise (its
    UnreadSessionFile when the open or the read failed: a read's EIO was a raw OSError,
    which ended the listing of a chat's start, H171).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if path.is_symlink():
            raise UnsafeSessionFile(path, "it is a symlink") from exc
        raise UnreadSessionFile(path, exc) from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):  # before fdopen, which refuses a directory
        os.close(fd)
        raise UnsafeSessionFile(path, "not a regular file")
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > max_bytes:
            raise UnsafeSessionFile(path, f"{info.st_size} bytes, over the {max_bytes} byte cap")
        try:
            inject("read", path)
            data = handle.read(max_bytes + 1)
        except OSError as exc:
            raise UnreadSessionFile(path, exc) from exc
    if len(data) > max_bytes:
        raise UnsafeSessionFile(path, f"over the {max_bytes} byte cap")
    return data


_NOT_STRUCTURE = bytes(byte for byte in range(256) if byte not in b'[]{}"')
_DEPTH_STEP = [1 if byte in b"[{" else -1 if byte in b"]}" else 0 for byte in range(256)]


def json_depth(data: bytes) -> int:
    """How deeply the containers of valid JSON text ``data`` nest, read off its brackets
    without parsing it (strings skipped): 0 for a scalar, 1 for ``[]``.

    With the escaped backslashes and then the escaped quotes taken out, every quote left
    opens or closes a string, so the brackets outside strings are every other piece
    between quotes. All of it runs in C: a small fraction of walking the parsed value."""
    unescaped = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    brackets = b"".join(unescaped.translate(None, _NOT_STRUCTURE).split(b'"')[::2])
    return max(accumulate(map(_DEPTH_STEP.__getitem__, brackets)), default=0)


_MESSAGES_KEY = b',"recent_messages":['
_AFTER_MESSAGES = b'],"compacted_history_summary":'


def head_of(data: bytes) -> JsonDict | None:
    """A session file's JSON with its messages left out unread, as ``state_parts`` lays the
    file out: cut between its first ``,"recent_messages":[`` and its last
    ``],"compacted_history_summary":`` (the fields before the messages and after them are
    texts, lists of texts and a map of texts, which hold no unescaped quote: the first and
    the last are the file's own keys). None if the text is not laid out so (parse it
    whole). What lies between is not looked at: the caller knows the file whole already."""
    start = data.find(_MESSAGES_KEY)
    end = data.rfind(_AFTER_MESSAGES)
    if start < 0 or end < start + len(_MESSAGES_KEY) - 1:
        return None
    try:
        raw = orjson.loads(data[: start + len(_MESSAGES_KEY)] + data[end:])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(raw, dict) or raw.get("recent_messages") != []:
        return None
    return raw


def messages_too_deep(data: bytes, messages: object, depth: int | None = None) -> bool:
    """Whether a message of ``messages`` (the list the file ``data`` holds, after any
    migration: the one that will be used) nests over ``MAX_MESSAGE_DEPTH`` levels.
    ``depth``: how deep ``data`` nests, when known (``json_depth`` copies the file).

    Messages sit at least two levels down in a file, so a file no deeper than that
    many more levels has none too deep and costs no walk of its messages (the walk
    was most of a listing's time)."""
    return (
        isinstance(messages, list)
        and (json_depth(data) if depth is None else depth) > MAX_MESSAGE_DEPTH + 2
        and any(
            isinstance(m, dict | list) and nests_deeper_than(m, MAX_MESSAGE_DEPTH) for m in messages
        )
    )


def nests_deeper_than(value: object, limit: int) -> bool:
    """Whether JSON-like ``value`` has containers more than ``limit`` levels deep (no recursion)."""
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        assert isinstance(children, Iterable)
        if depth > limit:
            return True
        stack.extend((c, depth + 1) for c in children if isinstance(c, dict | list))
    return False


def encode_state(state: SessionState, encoded: EncodedMessages | None = None) -> bytes:
    """The session file's bytes, fields in schema order (see ``state_parts``)."""
    return b"".join(state_parts(state, encoded))


_FIELDS = tuple(SessionState.model_fields)
_MESSAGES_AT = _FIELDS.index("recent_messages")
_ORJSON_OPTIONS = orjson.OPT_UTC_Z
"""Datetimes as pydantic writes them in JSON mode (UTC as ``Z``; tests check the two agree)."""


def state_parts(
    state: SessionState,
    encoded: EncodedMessages | None = None,
    *,
    scrub: tuple[str, ...] | None = None,
) -> list[bytes]:
    """The session file's bytes as buffers to write one after the other.

    The fields are read off the model and given to orjson as they are (no model
    dump or copy: a turn's save pays for its header only). ``encoded``, when given,
    holds the messages already encoded: its chunks are spliced in as they are, so
    the file costs the encoding of its other fields only. ``scrub``, when given,
    are the secret values each text is scrubbed of on the way (as ``scrub_state``
    does), the encoded messages excepted: they were scrubbed when they were encoded.
    """
    fields = state.__dict__
    values = {name: fields[name] for name in _FIELDS}
    if scrub is not None:
        _scrub_fields(values, scrub, messages=encoded is None)
    if encoded is None:
        return [orjson.dumps(values, option=_ORJSON_OPTIONS)]
    if len(encoded) != len(state.recent_messages):
        raise ValueError("encoded messages must be the state's recent_messages, encoded")
    before = orjson.dumps(
        {name: values[name] for name in _FIELDS[:_MESSAGES_AT]}, option=_ORJSON_OPTIONS
    )
    after = orjson.dumps(
        {name: values[name] for name in _FIELDS[_MESSAGES_AT + 1 :]}, option=_ORJSON_OPTIONS
    )
    return [
        before[:-1] + b',"recent_messages":[' if len(before) > 2 else b'{"recent_messages":[',
        *encoded.parts(),
        b"]," + after[1:] if len(after) > 2 else b"]}",
    ]


_NOT_TEXT = frozenset(
    ("schema_version", "session_id", "created_at", "updated_at", "checkpoint_count", "phase")
)
"""Fields of a fixed shape, which validation checks on load: scrubbing one (a secret
that happens to be part of a session id) would make the file unreadable."""


def _scrub_fields(
    values: dict[str, object], known_secrets: tuple[str, ...], *, messages: bool
) -> None:
    """Scrub, in place, each text of a session's field values: the summaries, the spec's
    path, each decision, the manifest's paths (not its digests) and (unless ``messages``
    is False) every string inside the recent messages. The one list of what is
    scrubbed, for ``scrub_state`` too."""
    for name, value in values.items():
        if name in _NOT_TEXT:
            continue
        if name == "recent_messages":
            if messages:
                values[name] = tuple(scrub_json(list(value), known_secrets))  # type: ignore[call-overload]
        elif name == "file_manifest":
            values[name] = scrub_keys(value, known_secrets)  # type: ignore[arg-type]
        elif isinstance(value, str):
            values[name] = scrub_text(value, known_secrets)
        elif isinstance(value, tuple):
            values[name] = tuple(scrub_json(list(value), known_secrets))
        elif isinstance(value, dict):
            values[name] = scrub_json(value, known_secrets)


def scrub_state(
    state: SessionState, known_secrets: tuple[str, ...] = (), *, messages: bool = True
) -> SessionState:
    """``state`` with credential-looking strings replaced in every text it holds (see
    ``_scrub_fields``; the recent messages unless ``messages`` is False)."""
    values: dict[str, object] = {name: getattr(state, name) for name in _FIELDS}
    _scrub_fields(values, known_secrets, messages=messages)
    return state.model_copy(update=values)


def scrub_header(header: SessionHeader, known_secrets: tuple[str, ...] = ()) -> SessionHeader:
    """A listing's header with its texts scrubbed (files written before scrubbing, or by hand)."""

    def clean(text: str | None) -> str | None:
        return None if text is None else scrub_text(text, known_secrets)

    return dataclasses.replace(
        header,
        summary=clean(header.summary),
        compacted_history_summary=clean(header.compacted_history_summary),
        note=clean(header.note),
        unanswered=clean(header.unanswered),
    )


@dataclass(frozen=True)
class Written:
    """A file the manager wrote, and where a directory found at its name (made by hand) was
    moved aside to make room, if one was: the writer tells the user, in one line."""

    path: Path
    moved_aside: Path | None = None

    def warning(self) -> str | None:
        if self.moved_aside is None:
            return None
        return (
            f"warning: a directory was at {self.path.name}; moved aside to "
            f"{self.moved_aside.name}"
        )


@dataclass(frozen=True)
class Listing:
    """What a directory scan found: the good sessions and one error per bad file."""

    sessions: tuple[SessionHeader, ...]
    problems: tuple[SessionFileError, ...]


@dataclass(frozen=True)
class PointerListing:
    pointers: tuple[Pointer, ...]
    problems: tuple[InvalidPointer, ...]

    @property
    def unknown(self) -> tuple[InvalidPointer, ...]:
        """The unreadable pointers of terminals that may still run: which session each
        holds is not known, so none of the project's may be taken for orphaned."""
        return tuple(problem for problem in self.problems if problem.runs is not None)


class SessionManager:
    """Session files and pointers of one project's ``sessions/`` directory."""

    def __init__(
        self,
        directory: Path,
        *,
        max_session_bytes: int = MAX_SESSION_BYTES,
        read_only: bool = False,
        known_secrets: tuple[str, ...] = (),
        root: Path | None = None,
    ) -> None:
        self.directory = directory
        self._guarded = _guarded_directories(directory, root)
        """``directory`` and its parents below ``root``: none may be a symlink or a file."""
        self.max_session_bytes = max_session_bytes
        self.read_only = read_only
        """A read-only manager reports corrupt files without moving them aside, whatever
        its caller asks (``set_aside``), and writes no ``headers.index``."""
        self.known_secrets = known_secrets
        """Every text written or read through this manager is scrubbed of these values
        and of credential-looking strings: the one choke point of persisted and listed text."""
        self._headers: dict[str, tuple[FileIdentity, SessionHeader]] = {}
        """Headers already read, with the identity of the file they came from."""
        self._index_read = False
        self._index_stale = False
        """Whether ``_headers`` differs from what ``headers.index`` holds (see header_index)."""
        self._paths: dict[str, Path] = {}
        """Each session id's file path, built once (a save's path costs a lookup)."""

    def check_directory(self) -> None:
        """UnsafeSessionDirectory if the directory, or a parent of it inside the state root,
        is a symlink or not a directory (it is never followed). Missing ones are fine."""
        for path in self._guarded:
            try:
                info = os.lstat(path)
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise UnsafeSessionDirectory(path, exc.strerror or "cannot stat") from exc
            if stat.S_ISLNK(info.st_mode):
                raise UnsafeSessionDirectory(path, "it is a symlink")
            if not stat.S_ISDIR(info.st_mode):
                raise UnsafeSessionDirectory(path, "not a directory")

    # -- sessions ---------------------------------------------------------

    def session_path(self, session_id: str) -> Path:
        path = self._paths.get(session_id)
        if path is None:
            path = self.directory / f"{validate_session_id(session_id)}.json"
            if len(self._paths) >= MAX_KEPT_PATHS:
                self._paths.clear()
            self._paths[session_id] = path
        return path

    def exists(self, session_id: str) -> bool:
        return self.session_path(session_id).exists()

    def refuse_newer(self, session_id: str) -> None:
        """FutureSchemaVersion if the session's file was written by a newer version: this
        one cannot read it, so it is not this one's to delete (a damaged file is)."""
        path = self.session_path(session_id)
        try:
            raw = orjson.loads(read_regular_file(path, self.max_session_bytes))
            version = schema_version_of(raw) if isinstance(raw, dict) else 0
        except (OSError, SessionFileError, orjson.JSONDecodeError, ValueError):
            return
        if version > SCHEMA_VERSION:
            raise FutureSchemaVersion(path, version, SCHEMA_VERSION)

    def save(
        self,
        state: SessionState,
        encoded: EncodedMessages | None = None,
        secrets: tuple[str, ...] = (),
    ) -> Written:
        """Write ``state`` durably, scrubbed of this manager's secrets and the writer's own
        ``secrets`` (a terminal's environment, which the supervisor's may lack).
        ``encoded`` (see ``state_parts``) is used when it holds the state's messages
        scrubbed of every one of those values; otherwise every message is scrubbed and
        encoded again."""
        path = self.session_path(state.session_id)
        self.check_directory()
        self._headers.pop(state.session_id, None)
        scrub = with_secrets(self.known_secrets, secrets)
        if (
            encoded is None
            or len(encoded) != len(state.recent_messages)
            or not encoded.known_secrets.issuperset(scrub)
        ):
            encoded = None
        aside = write_creating_directories(path, state_parts(state, encoded, scrub=scrub))
        return Written(path, aside)

    def load(self, session_id: str, *, set_aside: SetAside = "leave") -> SessionState:
        """Load and migrate one session.

        Raises FileNotFoundError, UnsafeSessionFile, FutureSchemaVersion (file
        untouched) or CorruptSessionFile (file moved aside if ``set_aside`` is ``move``;
        left in place otherwise).
        """
        path = self.session_path(session_id)
        self.check_directory()
        with self._corrupt_files(set_aside):
            data = read_regular_file(path, self.max_session_bytes)
            return scrub_state(self._decode(path, data, session_id), self.known_secrets)

    def load_without_messages(
        self, session_id: str, *, set_aside: SetAside = "leave"
    ) -> SessionState:
        """Like ``load``, but the state's ``recent_messages`` are left out: neither validated
        nor scrubbed (what a resumption offer needs; the scrub of a long tail took seconds,
        the offer waited for it and the terminal gave up). Its other texts are scrubbed."""
        path = self.session_path(session_id)
        self.check_directory()
        with self._corrupt_files(set_aside):
            data = read_regular_file(path, self.max_session_bytes)
            raw = self._migrated(path, data)
            state = self._validated(path, {**raw, "recent_messages": []}, session_id)
        return scrub_state(state, self.known_secrets, messages=False)

    def load_for_resume(self, session_id: str, *, set_aside: SetAside = "leave") -> SessionState:
        """Like ``load``, but its ``recent_messages`` as the file holds them, not scrubbed:
        for ``SessionLifecycle.resume`` only, which scrubs the messages it keeps (the
        recent tail) with the terminal's secrets too, once, before any is sent or
        written. Scrubbing them all here first cost a pass over the whole file."""
        path = self.session_path(session_id)
        self.check_directory()
        with self._corrupt_files(set_aside):
            data = read_regular_file(path, self.max_session_bytes)
            state = self._decode(path, data, session_id)
        return scrub_state(state, self.known_secrets, messages=False)

    def load_copy(
        self, path: Path, session_id: str, *, set_aside: SetAside = "leave"
    ) -> SessionState:
        """Load a copy of session ``session_id`` kept elsewhere (a recovery copy), with the
        checks and the migration of ``load``; scrubbed, unless its bytes are those recorded
        as written scrubbed and hold no secret known now (``copy_scrubbed_as_written``)."""
        with self._corrupt_files(set_aside):
            data = read_regular_file(path, self.max_session_bytes)
            state = self._decode(path, data, session_id)
        if copy_scrubbed_as_written(path, data, self.known_secrets):
            return state
        return scrub_state(state, self.known_secrets)

    def write_copy(
        self, path: Path, state: SessionState, secrets: tuple[str, ...] = ()
    ) -> SessionState:
        """Write a copy of ``state`` at ``path`` (a recovery copy), scrubbed as a session file
        is (and of ``secrets``), and record it so (``record_copy_scrubbed``); the state
        written."""
        scrubbed = scrub_state(state, with_secrets(self.known_secrets, secrets))
        data = encode_state(scrubbed)
        atomic_write(path, data)
        record_copy_scrubbed(path, entry_digest(data))
        return scrubbed

    def scrub_copy(
        self, path: Path, session_id: str, secrets: tuple[str, ...], *, recovery: bool = False
    ) -> SessionState | None:
        """Rewrite the copy of session ``session_id`` at ``path`` (a recovery copy, a file a
        resume kept aside) scrubbed of ``secrets`` (values found secret after it was
        written), if it holds any: the state written; None if it held none. OSError or
        SessionFileError (not read, or not as a session's) if it could not be. ``recovery``:
        recorded as ``write_copy`` records."""
        data = read_regular_file(path, self.max_session_bytes)
        needles = encoded_forms(secrets) | {s.encode() for s in secrets if s}
        if not any(needle in data for needle in needles):
            return None
        state = self._decode(path, data, session_id)
        if recovery:
            return self.write_copy(path, state, secrets)
        scrubbed = scrub_state(state, with_secrets(self.known_secrets, secrets))
        atomic_write(path, encode_state(scrubbed))
        return scrubbed

    def load_shown(
        self, session_id: str, *, set_aside: SetAside = "leave"
    ) -> tuple[SessionState, SessionHeader]:
        """What ``sessions show`` prints of a session: the state without its messages (its
        other texts scrubbed) and its listing's header (their count, the turns, the words
        of a message left unanswered: scrubbed). The messages are neither validated nor
        scrubbed, and, once this very file's header is known (``load_header``: read once
        per version of the file), not even parsed: cut out where this version writes them
        (``head_of``). Raises as ``load`` does."""
        header = self.load_header(session_id)
        path = self.session_path(session_id)
        self.check_directory()
        with self._corrupt_files(set_aside):
            data = read_regular_file(path, self.max_session_bytes)
            head = head_of(data)
            raw = self._migrated(path, data, head)
            state = self._validated(path, {**raw, "recent_messages": []}, session_id)
        return scrub_state(state, self.known_secrets, messages=False), header

    def load_header(self, session_id: str) -> SessionHeader:
        """Like ``load``, but validates everything except the messages (only counted).

        A header is read once per version of the file: while the file's identity
        (inode, size, modification and change times) stays the same, the header
        read before is returned, so listing many sessions again costs a stat each.
        """
        path = self.session_path(session_id)
        identity = file_identity(path)
        cached = self._headers.pop(session_id, None)
        if cached is not None and identity is not None and cached[0] == identity:
            self._headers[session_id] = cached
            return cached[1]
        header = scrub_header(self._read_header(path, session_id), self.known_secrets)
        if identity is not None:
            self._headers[session_id] = (identity, header)
            self._index_stale = True
        return header

    def copy_header(self, path: Path, session_id: str) -> SessionHeader:
        """The header of a copy of session ``session_id`` kept elsewhere (a recovery copy),
        read as ``load_header`` reads a session file's (never cached)."""
        return scrub_header(self._read_header(path, session_id), self.known_secrets)

    def _read_header(self, path: Path, session_id: str) -> SessionHeader:
        data = read_regular_file(path, self.max_session_bytes)
        raw = self._migrated(path, data)
        messages = raw.get("recent_messages")
        if not isinstance(messages, list) or not all(isinstance(m, dict) for m in messages):
            raise self._corrupt(path, "invalid content: recent_messages is not a list of objects")
        state = self._validated(path, {**raw, "recent_messages": []}, session_id)
        unknown = unknown_shape(messages)
        updated_at = _not_in_the_future(path, state.updated_at)
        return SessionHeader(
            session_id=state.session_id,
            created_at=min(state.created_at, updated_at),
            updated_at=updated_at,
            summary=state.summary,
            compacted_history_summary=state.compacted_history_summary,
            messages=len(messages),
            turns=None if unknown else session_turns(state.compacted_history_summary, messages),
            note=None if unknown is None else f"{UNKNOWN_SHAPE_NOTE}: {unknown}",
            unanswered=None if unknown else unanswered_message(messages),
        )

    def _unread_header(
        self, session_id: str, error: UnsafeSessionFile | CorruptSessionFile
    ) -> SessionHeader | None:
        """The header of a session file that is still on disk but was not read (refused, or
        corrupt and left in place: by a read-only listing, or for a failure to move it): its
        times from the file itself, a note saying why. None if it is no longer there (moved
        aside)."""
        try:
            info = os.lstat(self.session_path(session_id))
        except OSError:
            return None
        when = datetime.fromtimestamp(info.st_mtime, UTC)
        reason = (
            f"refused: {error.reason}"
            if isinstance(error, UnsafeSessionFile)
            else f"corrupt: not read ({error.reason})"
        )
        return SessionHeader(
            session_id=session_id,
            created_at=when,
            updated_at=when,
            summary=None,
            compacted_history_summary=None,
            messages=0,
            turns=None,
            note=reason,
        )

    def _future_header(self, session_id: str, error: FutureSchemaVersion) -> SessionHeader:
        """A best-effort header of a file from a newer version (never validated, never written)."""
        raw: JsonDict = {}
        try:
            loaded = orjson.loads(read_regular_file(error.path, self.max_session_bytes))
            raw = loaded if isinstance(loaded, dict) else {}
        except (OSError, SessionFileError, orjson.JSONDecodeError):
            pass
        mtime = datetime.fromtimestamp(error.path.stat().st_mtime, UTC)

        def when(key: str) -> datetime:
            try:
                parsed = datetime.fromisoformat(str(raw[key]).replace("Z", "+00:00"))
                return (parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)).astimezone(UTC)
            except (KeyError, ValueError, OverflowError):
                return mtime

        summary = raw.get("summary")
        messages = raw.get("recent_messages")
        return SessionHeader(
            session_id=session_id,
            created_at=when("created_at"),
            updated_at=when("updated_at"),
            summary=summary if isinstance(summary, str) else None,
            compacted_history_summary=None,
            messages=len(messages) if isinstance(messages, list) else 0,
            turns=len(tail_prompts([m for m in messages if isinstance(m, dict)]))
            if isinstance(messages, list)
            else 0,
            note=f"schema_version {error.found} is newer than this agent-assist supports "
            f"({error.supported})",
        )

    def _decode(self, path: Path, data: bytes, session_id: str) -> SessionState:
        return self._validated(path, self._migrated(path, data), session_id)

    def _migrated(self, path: Path, data: bytes, head: JsonDict | None = None) -> JsonDict:
        """The file's JSON brought to the current schema; refuses newer, quarantines bad.
        ``head``: the file's JSON without its messages (``head_of``), to check instead."""
        depth: int | None = None
        if head is not None:
            raw: object = head
        else:
            parsed = parsed_by_message(data)
            try:
                raw, depth = (orjson.loads(data), None) if parsed is None else parsed
            except orjson.JSONDecodeError as exc:
                if str(exc).startswith("depth limit exceeded"):
                    raise UnsafeSessionFile(path, "nested over 1024 levels deep") from exc
                raise self._corrupt(path, str(exc)) from exc
        try:
            if not isinstance(raw, dict):
                raise ValueError("not a JSON object")
            version = schema_version_of(raw)
        except ValueError as exc:
            raise self._corrupt(path, str(exc)) from exc
        if version > SCHEMA_VERSION:
            raise FutureSchemaVersion(path, version, SCHEMA_VERSION)
        try:
            migrated = migrate(raw)
        except (ValueError, TypeError, KeyError) as exc:
            raise self._corrupt(path, f"invalid content: {exc}".splitlines()[0]) from exc
        if head is None and messages_too_deep(data, migrated.get("recent_messages"), depth):
            raise UnsafeSessionFile(path, f"a message nests over {MAX_MESSAGE_DEPTH} levels deep")
        manifest = migrated.get("file_manifest")
        if isinstance(manifest, dict):
            migrated["file_manifest"] = _valid_entries(path, manifest)
        return migrated

    def _validated(self, path: Path, raw: JsonDict, session_id: str) -> SessionState:
        try:
            state = SessionState.model_validate(raw)
        except (ValidationError, ValueError, TypeError) as exc:
            raise self._corrupt(path, f"invalid content: {exc}".splitlines()[0]) from exc
        if state.session_id != session_id:
            raise self._corrupt(path, "session_id does not match the file name")
        return state

    def _corrupt(self, path: Path, reason: str) -> CorruptSessionFile:
        """The file found corrupt, only reported: whether it is moved aside is its
        reader's call (``_dealt_with``)."""
        return CorruptSessionFile(path, None, reason, set_aside="leave")

    def _dealt_with(self, found: CorruptSessionFile, set_aside: SetAside) -> CorruptSessionFile:
        """``found`` moved aside (never deleted) if ``set_aside`` says so and this manager
        may write; else left in place, told as ``set_aside`` says."""
        if set_aside != "move" or self.read_only:
            mode: SetAside = "dry_run" if set_aside == "dry_run" else "leave"
            return CorruptSessionFile(found.path, None, found.reason, set_aside=mode)
        return CorruptSessionFile(found.path, quarantine(found.path, utc_now()), found.reason)

    @contextlib.contextmanager
    def _corrupt_files(self, set_aside: SetAside) -> Iterator[None]:
        """A corrupt file found inside is dealt with as ``set_aside`` says
        (``_dealt_with``), and raised as such."""
        try:
            yield
        except CorruptSessionFile as found:
            raise self._dealt_with(found, set_aside) from found.__cause__

    def delete(self, session_id: str, pointers: Iterable[Pointer] | None = None) -> bool:
        """Remove a session file, then the terminals' pointers to it; True if there was one.
        An OSError removing the file leaves the pointers (the session stays as it was).
        UnsafeSessionFile, and nothing removed, if a directory is at its name: that is not
        ours to delete. ``pointers``: those naming it, when the caller has listed them
        (a prune of many sessions read every pointer again for each one, in square time).
        Once the file is gone, an OSError is ``LeftBehind``: it says what stays, not the
        file (a reset read "nothing was reset" of a session it had deleted, H159)."""
        self.check_directory()
        path = self.session_path(session_id)
        with contextlib.suppress(FileNotFoundError):
            if stat.S_ISDIR(os.lstat(path).st_mode):
                raise UnsafeSessionFile(path, "not a regular file")
        try:  # the file first: one that stays (an OSError) keeps its pointers and copies
            path.unlink()
        except FileNotFoundError:
            found = False
        else:
            found = True
        self._headers.pop(session_id, None)
        try:
            clear_stale_temp(temp_path(path))  # a killed save's: no later save clears it
            self.delete_kept_originals(session_id)
            if pointers is None:
                unpointed = self.delete_pointers_to(session_id, sync=False)
            else:
                unpointed = sum(self.delete_pointer_if_same(p, sync=False) for p in pointers)
            if found or unpointed:  # one fsync of the directory for every removal
                fsync_dir(self.directory)
        except OSError as exc:
            stays = (Path(exc.filename).name,) if exc.filename else ()
            raise LeftBehind(left_after_delete_line(session_id, exc), stays) from exc
        return found

    def delete_kept_originals(self, session_id: str) -> int:
        """Remove the session file's copies kept before a resume compacted its turns
        (``keep_original``): they are the session's, and go with it (``rm``, ``prune``,
        ``/reset``). A corrupt file moved aside is not: it stays. How many were removed."""
        removed = 0
        for kept in (
            *self.directory.glob(f"{session_id}.json{UNCOMPACTED_SUFFIX}*"),
            *self.directory.glob(f"{session_id}.json{OVER_CAP_SUFFIX}*"),  # and moved turns
        ):
            with contextlib.suppress(FileNotFoundError):
                if stat.S_ISREG(os.lstat(kept).st_mode):
                    kept.unlink()
                    removed += 1
        return removed

    def keep_original(self, session_id: str) -> Path:
        """Keep the session file as it is now aside (``<id>.json.uncompacted-<time>``)
        before a save drops turns a resume compacted; the path it is kept at."""
        self.check_directory()
        return keep_aside(self.session_path(session_id), utc_now())

    def delete_pointers_to(self, session_id: str, *, sync: bool = True) -> int:
        """Remove every ``active_<pid>.json`` naming ``session_id`` (unusable ones are left
        for ``list_sessions`` to report); how many were removed. ``sync=False`` leaves the
        directory's fsync to the caller."""
        removed = 0
        for pointer in self.list_pointers().pointers:  # told by listings
            if pointer.session_id == session_id and self.delete_pointer(pointer.pid, sync=False):
                removed += 1
        if removed and sync:
            self.sync_directory()
        return removed

    def names(self) -> list[str]:
        """The names in the directory; FileNotFoundError if it is missing, another OSError
        if it cannot be listed (the listing's ``UnreadableSessionDirectory``)."""
        inject("list", self.directory)
        return os.listdir(self.directory)

    def session_ids(self) -> list[str]:
        """Ids of the session files present (names that are not ids are not listed)."""
        try:
            names = self.names()
        except FileNotFoundError:
            return []
        return sorted(n[:-5] for n in names if n.endswith(".json") and is_session_id(n[:-5]))

    def list_sessions(self, *, set_aside: SetAside = "leave") -> Listing:
        """Every session of the directory, newest first, and what was wrong with the rest.
        Corrupt files are moved aside only if ``set_aside`` is ``move``, and only then is
        ``headers.index`` written: a read-only command changes no file."""
        sessions: list[SessionHeader] = []
        problems: list[SessionFileError] = []
        try:
            self.check_directory()
            present = self.session_ids()
        except UnsafeSessionDirectory as exc:
            return Listing((), (exc,))
        except OSError as exc:  # not listed: a project whose sessions are unknown
            why = exc.strerror or str(exc)
            return Listing((), (UnreadableSessionDirectory(self.directory, why),))
        if not self._index_read:  # a cold listing: headers of unchanged files from the index
            self._index_read = True
            for session_id, (identity, header) in read_index(self.directory).items():
                # written by any process: scrubbed of this one's secrets too
                clean = scrub_header(header, self.known_secrets)
                self._headers.setdefault(session_id, (identity, clean))
        for gone in self._headers.keys() - set(present):
            del self._headers[gone]
            self._index_stale = True
        for session_id in present:
            try:
                header = self.load_header(session_id)
                sessions.append(header)
                if header.note is not None:  # read, and of a shape this version cannot read
                    why = header.note.removeprefix(f"{UNKNOWN_SHAPE_NOTE}: ")
                    problems.append(UnreadableMessages(self.session_path(session_id), why))
            except FileNotFoundError:
                continue
            except FutureSchemaVersion as exc:  # still on disk, so still listed
                problems.append(exc)
                future = self._future_header(session_id, exc)
                sessions.append(scrub_header(future, self.known_secrets))
            except (UnsafeSessionFile, CorruptSessionFile) as exc:
                if isinstance(exc, CorruptSessionFile):
                    exc = self._dealt_with(exc, set_aside)
                problems.append(exc)
                unread = self._unread_header(session_id, exc)
                if unread is not None:  # still at its name (not moved aside): listed
                    sessions.append(unread)
            except SessionFileError as exc:
                problems.append(exc)
        sessions.sort(key=lambda s: s.updated_at, reverse=True)
        if self._index_stale and set_aside == "move" and not self.read_only and present:
            self._index_stale = False
            write_index(self.directory, self._headers)
        return Listing(tuple(sessions), tuple(problems))

    def forget_header(self, session_id: str) -> None:
        """Drop the session's cached header, here and in ``headers.index``: its summary may
        hold a value found secret since (the next listing reads the file again)."""
        self._headers.pop(session_id, None)
        if self.read_only:
            return
        cached = read_index(self.directory)
        if cached.pop(session_id, None) is not None:
            write_index(self.directory, cached)

    # -- pointers ---------------------------------------------------------

    def pointer_path(self, pid: int) -> Path:
        if not isinstance(pid, int) or pid <= 0:
            raise ValueError(f"bad terminal pid {pid!r}")
        return self.directory / f"{POINTER_PREFIX}{pid}.json"

    def write_pointer(self, pointer: Pointer) -> Written:
        path = self.pointer_path(pointer.pid)
        self.check_directory()
        aside = write_creating_directories(path, orjson.dumps(pointer.model_dump(mode="json")))
        return Written(path, aside)

    def read_pointer(self, pid: int) -> Pointer | None:
        """The pointer of terminal ``pid``; None if absent; InvalidPointer if unusable."""
        path = self.pointer_path(pid)
        self.check_directory()
        try:
            data = read_regular_file(path, MAX_POINTER_BYTES)
        except FileNotFoundError:
            return None
        except UnsafeSessionFile as exc:  # its read failed too (EIO): as unusable
            raise InvalidPointer(path, exc.reason) from exc
        return _decode_pointer(path, data, pid)

    def delete_pointer_if_same(self, pointer: Pointer, *, sync: bool = True) -> bool:
        """Remove ``pointer``'s file if it still holds that very pointer (a terminal of the
        same pid may have written its own since it was read); True if it was removed.
        ``sync=False`` leaves the directory's fsync to the caller (``sync_directory``)."""
        try:
            if self.read_pointer(pointer.pid) != pointer:
                return False
        except InvalidPointer:
            return False
        return self.delete_pointer(pointer.pid, sync=sync)

    def delete_pointer(self, pid: int, *, sync: bool = True) -> bool:
        self.check_directory()
        try:
            inject("unlink", self.pointer_path(pid))
            self.pointer_path(pid).unlink()
        except FileNotFoundError:
            return False
        if sync:
            fsync_dir(self.directory)
        return True

    def sync_directory(self) -> None:
        """Make the removals done with ``sync=False`` durable, all with one fsync."""
        fsync_dir(self.directory)

    def list_pointers(self, *, set_aside: SetAside = "leave") -> PointerListing:
        """The terminals' pointers, and the invalid ones as problems (moved aside if
        ``set_aside`` is ``move``)."""
        pointers: list[Pointer] = []
        problems: list[InvalidPointer] = []
        try:
            self.check_directory()
        except UnsafeSessionDirectory:
            return PointerListing((), ())  # told once, by list_sessions
        try:
            names = sorted(self.names())
        except FileNotFoundError:
            names = []
        except OSError:
            return PointerListing((), ())  # told once, by list_sessions
        for name in names:
            if not (name.startswith(POINTER_PREFIX) and name.endswith(".json")):
                continue
            digits = name[len(POINTER_PREFIX) : -5]
            if (
                len(digits) > 10
                or not digits.isdigit()
                or int(digits) <= 0
                or digits != str(int(digits))  # active_09004.json is not active_9004.json
            ):
                problem = InvalidPointer(self.directory / name, "bad pid in name")
                problems.append(self._set_aside(problem, set_aside))
                continue
            try:
                pointer = self.read_pointer(int(digits))
            except InvalidPointer as exc:
                if _written_for_a_running(exc.path, int(digits)):  # left for it to replace
                    problems.append(InvalidPointer(exc.path, exc.reason, runs=int(digits)))
                else:
                    problems.append(self._set_aside(exc, set_aside))
                continue
            if pointer is not None:
                pointers.append(pointer)
        return PointerListing(tuple(pointers), tuple(problems))

    def _set_aside(self, problem: InvalidPointer, set_aside: SetAside) -> InvalidPointer:
        """An invalid pointer moved aside (never deleted) if ``set_aside`` is ``move``, so
        that it is told once, not at every chat start; a read-only command, or a read-only
        manager, leaves it where it is."""
        if set_aside == "dry_run":
            return InvalidPointer(problem.path, problem.reason, set_aside="dry_run")
        if set_aside == "leave" or self.read_only:
            return problem
        moved = quarantine(problem.path, utc_now())
        return problem if moved is None else InvalidPointer(problem.path, problem.reason, moved)


def _not_in_the_future(path: Path, when: datetime) -> datetime:
    """A session's last-active time as a listing orders, offers and prunes it by: ``when``
    (its ``updated_at``), unless it is in the future (a clock set wrong, a hand edit), which
    no save wrote: then when the file was last written, or now if that is ahead too. Left
    as it was, such a session was listed first, offered before every newer one at each
    start until resumed, and never pruned."""
    now = utc_now()
    if when <= now:
        return when
    with contextlib.suppress(OSError, OverflowError, ValueError):
        written = datetime.fromtimestamp(os.stat(path, follow_symlinks=False).st_mtime, UTC)
        return min(written, now)
    return now


def _written_for_a_running(path: Path, pid: int) -> bool:
    """Whether the terminal ``pid`` the pointer ``path`` was written for may still run."""
    try:
        written = os.lstat(path).st_mtime
    except FileNotFoundError:
        return False
    except OSError:
        written = time.time()
    return may_still_run(pid, written)


def _decode_pointer(path: Path, data: bytes, pid: int) -> Pointer:
    try:
        raw: JsonDict = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InvalidPointer(path, "not JSON") from exc
    if not isinstance(raw, dict):
        raise InvalidPointer(path, "not a JSON object")
    if not is_session_id(raw.get("session_id")):
        raise InvalidPointer(path, "bad session id")
    try:
        pointer = Pointer.model_validate(raw)
    except ValidationError as exc:
        raise InvalidPointer(path, "bad fields") from exc
    if pointer.pid != pid:
        raise InvalidPointer(path, "pid does not match the file name")
    return pointer


# -- checkpoints --------------------------------------------------------------

CHECKPOINTS_DIR = "checkpoints"
BLOBS_DIR = "blobs"
MAX_ENTRY_BYTES = MAX_SESSION_BYTES + 64 * 1024 * 1024
"""The largest checkpoint entry read: its session's state, which may be as large as a
session file is (``MAX_SESSION_BYTES``), and its own fields (the files, their modes and
sizes). At 64 MiB, the checkpoint of a 70 MB session was written and refused at its
restore (H169)."""
MAX_BLOB_BYTES = 64 * 64 * 1024 * 1024
"""The largest content a checkpoint keeps: what ``read_blob`` reads back."""


@dataclass(frozen=True)
class CheckpointListing:
    checkpoints: tuple[Checkpoint, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class ListedCheckpoints:
    checkpoints: tuple[Listed, ...]
    problems: tuple[str, ...]


@dataclass(frozen=True)
class RestoredFiles:
    """What a restore wrote, and each file it could not write with the reason."""

    written: tuple[str, ...]
    failed: dict[str, str]
    deleted: tuple[str, ...] = ()
    """The files of the checkpoint's ``made`` it deleted."""
    changed: tuple[str, ...] = ()
    """The files left as they are because they changed after the question (``asked``)."""


class CheckpointStore:
    """Checkpoints and blobs of one project directory (``<project>/``, beside ``sessions/``).

    ``checkpoints/<session_id>/NNNN.json`` are the entries, ``blobs/<sha256>`` the
    file contents, one per content and shared by every session of the project.
    Blobs are written (and their directory synced) before the entry that refers
    to them, so an entry that is listed is always complete.
    """

    def __init__(
        self,
        project_dir: Path,
        known_secrets: tuple[str, ...] = (),
        known: KnownDigests | None = None,
        *,
        read_only: bool = False,
    ) -> None:
        """Every state written or read through this store is scrubbed of credentials (and
        of these values), as session files are; file contents are kept as they are.
        ``known``: where the digests of the files read are kept (a new one by default).
        ``read_only``: its reads record nothing (``sessions`` with no supervisor)."""
        self.known_secrets = known_secrets
        self.read_only = read_only
        self.checkpoints_dir = project_dir / CHECKPOINTS_DIR
        self.blobs_dir = project_dir / BLOBS_DIR
        self._usage: dict[str, tuple[int, dict[str, int]]] = {}
        """Per session: the bytes of its entries and the blobs they refer to (by sha)."""
        self._checked: dict[str, BlobIdentity] = {}
        """Per blob (by sha): what ``lstat`` said of it when this store last wrote it or
        found it whole. Unchanged since (same inode, size, mtime and ctime: no write, no
        rename over it, no ``touch``), it still holds what it held then, and the next
        checkpoint of that content does not read it again to know."""
        self._known = KnownDigests() if known is None else known
        """The digests of the workspace files read for a checkpoint, while they stay as
        they were (a checkpoint with nothing changed does not read them again)."""
        self._held: dict[str, tuple[BlobIdentity, Checkpoint]] = {}
        """Per session: the entry this store last wrote or read whole, with what ``lstat``
        said of its file then. While the file is unchanged it holds that checkpoint, which
        the next one is compared with without reading (and scrubbing) it back."""

    def session_dir(self, session_id: str) -> Path:
        return self.checkpoints_dir / validate_session_id(session_id)

    def blob_path(self, digest: str) -> Path:
        if not _SHA256.match(digest):
            raise CheckpointError(f"bad blob name {digest[:70]!r}")
        return self.blobs_dir / digest

    def numbers(self, session_id: str) -> list[int]:
        try:
            names = os.listdir(self.session_dir(session_id))
        except FileNotFoundError:
            return []
        return sorted(n for n in map(number_of, names) if n is not None)

    def numbers_used(self, session_id: str) -> list[int]:
        """``numbers``, and those of the entries moved aside as damaged: none is reused (a
        crash can leave the session file's ``checkpoint_count`` below the highest entry)."""
        try:
            names = os.listdir(self.session_dir(session_id))
        except FileNotFoundError:
            return []
        return sorted({n for n in map(number_used_by, names) if n is not None})

    def session_ids(self) -> list[str]:
        try:
            names = os.listdir(self.checkpoints_dir)
        except FileNotFoundError:
            return []
        return sorted(n for n in names if is_session_id(n))

    def load(self, session_id: str, number: int) -> Checkpoint:
        """One entry; CheckpointError if there is none, or it is damaged (then moved aside)."""
        path = self.session_dir(session_id) / entry_name(number)
        try:
            data = read_regular_file(path, MAX_ENTRY_BYTES)
        except FileNotFoundError:
            raise unknown_number(number, self.numbers(session_id)) from None
        except UnsafeSessionFile as exc:
            raise CheckpointError(f"checkpoint {number}: {exc}") from exc
        try:
            parsed = parsed_by_message(data, within="state")
            raw, depth = (orjson.loads(data), None) if parsed is None else parsed
            state = raw["state"]
            newer_format = (
                isinstance(raw.get("format"), int | float)
                and not isinstance(raw["format"], bool)
                and raw["format"] > CHECKPOINT_FORMAT
            )
            if newer_format or schema_version_of(state) > SCHEMA_VERSION:
                raise CheckpointError(
                    f"checkpoint {number} was written by a newer agent-assist; left untouched"
                )
            migrated = migrate(state)
            if messages_too_deep(data, migrated.get("recent_messages"), depth):
                raise CheckpointError(
                    f"checkpoint {number}: a message nests over {MAX_MESSAGE_DEPTH} levels "
                    "deep; left untouched"
                )
            checkpoint = Checkpoint.model_validate({**raw, "state": migrated})
            if checkpoint.number != number or checkpoint.state.session_id != session_id:
                raise ValueError("number or session does not match the file")
            if not scrubbed_as_written(path, data, self.known_secrets):
                clean = scrubbed_checkpoint(checkpoint, self.known_secrets)  # older
                self._record_if_clean(path, data, checkpoint, clean)
                checkpoint = clean
        except (orjson.JSONDecodeError, ValidationError, ValueError, TypeError, KeyError) as exc:
            moved = quarantine(path, utc_now())
            where = f"moved aside to {moved.name}" if moved else "could not move it aside"
            raise CheckpointError(f"checkpoint {number} is damaged; {where}") from exc
        return checkpoint

    def _record_if_clean(
        self, path: Path, data: bytes, read: Checkpoint, clean: Checkpoint
    ) -> None:
        """Record the entry at ``path`` (its bytes ``data``) as scrubbed when the scrub it
        was read with changed nothing (``clean`` is ``read``) and its messages are ones
        this version reads (the record's turns are listed): an entry written before the
        records (session 38) was scrubbed whole at every read. Its file is left as it is;
        one that a scrub changes is scrubbed at each read, as before."""
        if self.read_only or clean != read:
            return
        from session.history import messages_readable  # the message model: once an entry

        if messages_readable(read.state.recent_messages):
            record_scrubbed(path, entry_digest(data), ListedFacts.of(read))

    def listing(self, session_id: str) -> CheckpointListing:
        """The session's checkpoints, oldest first, and one line per damaged one."""
        found: list[Checkpoint] = []
        problems: list[str] = []
        for number in self.numbers(session_id):
            try:
                found.append(self.load(session_id, number))
            except CheckpointError as exc:
                problems.append(f"warning: {exc}")
        return CheckpointListing(tuple(found), tuple(problems))

    def listed(self, session_id: str) -> ListedCheckpoints:
        """The session's checkpoints as ``/checkpoint`` and ``sessions show`` list them,
        oldest first, and one line per damaged one: each from its head and what its writer
        recorded of it (``listed_facts``) while its file is as written; read whole
        otherwise (as ``listing``)."""
        found: list[Listed] = []
        problems: list[str] = []
        for number in self.numbers(session_id):
            try:
                found.append(self._listed(session_id, number))
            except CheckpointError as exc:
                problems.append(f"warning: {exc}")
        return ListedCheckpoints(tuple(found), tuple(problems))

    def _listed(self, session_id: str, number: int) -> Listed:
        path = self.session_dir(session_id) / entry_name(number)
        facts = listed_facts(path, self.known_secrets)
        if facts is not None:
            try:
                read = read_entry_head(path, number, entry_head)
                if read is not None and read[1].get("format") == facts.format:
                    # scrubbed of the secrets learned since, then cut
                    words = first_words(scrub_text(facts.last_user, self.known_secrets))
                    return Listed.model_validate(
                        {**read[1], "turns": facts.turns, "last_user": words}
                    )
            except (OSError, UnsafeSessionFile, ValidationError):
                pass  # read whole: moved aside if damaged
        from session.history import messages_readable  # the message model: read whole only

        checkpoint = self.load(session_id, number)
        return Listed.of(checkpoint, messages_readable(checkpoint.state.recent_messages))

    def _session_usage(self, session_id: str) -> tuple[int, dict[str, int]]:
        if session_id not in self._usage:
            entry_bytes = 0
            sizes: dict[str, int] = {}
            directory = self.session_dir(session_id)
            for number in self.numbers(session_id):
                path = directory / entry_name(number)
                try:
                    head = read_entry_sizes(path, number)
                    if head is None:  # no head of ours: read whole (moved aside if damaged)
                        head = (path.stat().st_size, self.load(session_id, number).sizes)
                except (OSError, UnsafeSessionFile, CheckpointError):
                    continue  # gone, or damaged: not counted
                entry_bytes += head[0]
                sizes.update(head[1])
            self._usage[session_id] = (entry_bytes, sizes)
        return self._usage[session_id]

    def usage(self, session_id: str) -> int:
        entry_bytes, sizes = self._session_usage(session_id)
        return entry_bytes + sum(sizes.values())

    def scrub_session(self, session_id: str, secrets: tuple[str, ...]) -> int:
        """Rewrite the session's checkpoints that hold any of ``secrets`` (values found
        secret after they were written) scrubbed of them; how many were rewritten. A
        damaged entry is left to ``load``'s handling."""
        # as written in the entry: a tool call's arguments are escaped twice, and may
        # hold a letter as ``\u00e9``
        needles = encoded_forms(secrets) | {s.encode() for s in secrets if s}
        rewritten = 0
        left: dict[int, OSError] = {}  # every entry is tried: one failure leaves no other
        for number in self.numbers(session_id):
            path = self.session_dir(session_id) / entry_name(number)
            try:
                data = read_regular_file(path, MAX_ENTRY_BYTES)
            except UnreadSessionFile as exc:  # unread: it may hold the secret still
                left[number] = exc.error
                continue
            except UnsafeSessionFile:
                continue
            if not any(needle in data for needle in needles):
                continue
            try:
                checkpoint = self.load(session_id, number)
            except CheckpointError:
                continue
            clean = scrubbed_checkpoint(checkpoint, with_secrets(self.known_secrets, secrets))
            entry = encode_checkpoint(clean)
            try:
                atomic_write(path, entry)
            except OSError as exc:
                left[number] = exc
                continue
            record_scrubbed(path, entry_digest(entry), ListedFacts.of(clean))
            rewritten += 1
        if rewritten:
            self._usage.pop(session_id, None)
        if left:
            raise SecretsLeft(session_id, left)
        return rewritten

    def write(
        self,
        state: SessionState,
        workspace: Path,
        paths: Iterable[str],
        *,
        reason: Reason,
        cap: int,
        now: datetime,
        secrets: tuple[str, ...] = (),
        keep: Iterable[str] = (),
        dry_run: bool = False,
        made: Iterable[str] = (),
        last_request: str = "",
        encoded: EncodedMessages | None = None,
        moved: Iterable[str] = (),
    ) -> Checkpoint:
        """Write the next checkpoint of ``state`` with the content of ``paths`` (those that
        are safe, regular files now), its texts scrubbed as a session file's are (``secrets``:
        the writer's own). CheckpointCapExceeded leaves nothing written, and so does
        CheckpointError for a file of ``keep`` (about to be written over) that is there
        but cannot be read. ``dry_run``: the same checks, and the checkpoint that would be
        written, but nothing is (a restore asks nothing whose undo could not be kept):
        it reads no file, taking each one's digest from ``state.file_manifest`` (which its
        caller has just hashed) and its size and mode from ``lstat``. ``made``: files a
        restore about to follow will make (the checkpoint is its undo, ``reason``
        ``restore``), kept as the entry's ``made`` if they are not there now. The
        checkpoint that undoes a restore is never refused for the cap: a restore at the
        cap would be impossible (freeing room would delete the checkpoint to restore).
        ``last_request``: the last user message, kept (its first words, scrubbed) only when
        ``state``'s tail holds none, for the checkpoint's line. ``encoded``: ``state``'s
        messages already scrubbed and encoded (``usable_encoding``), spliced as they are.
        ``moved``: the names of the turns the session file's cap moved beside it that the
        conversation still holds before ``state``'s tail (``Checkpoint.moved``), already
        written there."""
        checkpoint, contents, spliced = self._next_checkpoint(
            state,
            workspace,
            paths,
            reason=reason,
            cap=cap,
            now=now,
            secrets=secrets,
            keep=keep,
            dry_run=dry_run,
            made=made,
            last_request=last_request,
            encoded=encoded,
            moved=moved,
        )
        return self._store(checkpoint, contents, spliced, cap=cap, now=now, dry_run=dry_run)

    def write_unless_unchanged(
        self,
        state: SessionState,
        workspace: Path,
        paths: Iterable[str],
        *,
        reason: Reason,
        cap: int,
        now: datetime,
        secrets: tuple[str, ...] = (),
        keep: Iterable[str] = (),
        last_request: str = "",
        restored: int | None = None,
        encoded: EncodedMessages | None = None,
        moved: Iterable[str] = (),
    ) -> Checkpoint | Unchanged:
        """``write``, unless the session's latest checkpoint already holds the same restore
        point (``same_restore_point``: files, modes and conversation state), or checkpoint
        ``restored`` does (the one the conversation was taken back to: the latest is then
        the restore's undo): then nothing is written, not even at the cap, and the answer
        names that checkpoint."""
        checkpoint, contents, spliced = self._next_checkpoint(
            state,
            workspace,
            paths,
            reason=reason,
            cap=cap,
            now=now,
            secrets=secrets,
            keep=keep,
            last_request=last_request,
            encoded=encoded,
            moved=moved,
        )
        latest = self._latest(state.session_id, checkpoint.number - 1)
        for same in (latest, self._whole(state.session_id, restored)):
            if same is not None and same_restore_point(same, checkpoint):
                # a blob damaged since is written anew: the checkpoint named must restore
                self._store_blobs(contents, now)
                return Unchanged(same)
        return self._store(checkpoint, contents, spliced, cap=cap, now=now)

    def _whole(
        self, session_id: str, number: int | None, *, hold: bool = False
    ) -> Checkpoint | None:
        """Checkpoint ``number`` if there is one, whole; None otherwise. The entry held
        (``_held``) while its file is as it was; ``hold``: the one read is held from now on
        (the latest: an older one compared once would take its place)."""
        if number is None or number not in self.numbers(session_id):
            return None
        path = self.session_dir(session_id) / entry_name(number)
        before = blob_identity(path)
        held = self._held.get(session_id)
        if held is not None and before is not None and held[0] == before:
            return held[1]
        try:
            checkpoint = self.load(session_id, number)
        except CheckpointError:
            return None
        if hold and before is not None and blob_identity(path) == before:  # not changed meanwhile
            self._held[session_id] = (before, checkpoint)
        return checkpoint

    def _latest(self, session_id: str, number: int) -> Checkpoint | None:
        """Checkpoint ``number`` when it is the session's latest whole entry (the highest
        number used, not one moved aside as damaged); None otherwise."""
        if number < 1:
            return None
        return self._whole(session_id, number, hold=True)  # damaged: the next one is written

    def _next_checkpoint(
        self,
        state: SessionState,
        workspace: Path,
        paths: Iterable[str],
        *,
        reason: Reason,
        cap: int,
        now: datetime,
        secrets: tuple[str, ...],
        keep: Iterable[str],
        last_request: str,
        dry_run: bool = False,
        made: Iterable[str] = (),
        encoded: EncodedMessages | None = None,
        moved: Iterable[str] = (),
    ) -> tuple[Checkpoint, dict[str, bytes], EncodedMessages | None]:
        """The next checkpoint of ``state``, the contents it refers to (none for a dry
        run), read and checked as ``write`` says, and its messages' encoding to splice
        (None: they are scrubbed and encoded again); nothing written."""
        session_id = state.session_id
        keep = tuple(keep)
        for relative in safe_relative_paths(workspace, sorted(set(keep))):
            if (why := unreadable(workspace, relative)) is not None:
                raise CheckpointError(f"cannot read {relative} ({why})")
        named = scrub_keys(dict.fromkeys(paths, ""), with_secrets(self.known_secrets, secrets))
        # as the manifest's: a name that holds a secret is not kept (a file is restored
        # by its name)
        safe = safe_relative_paths(workspace, sorted(named))
        largest = MAX_BLOB_BYTES if reason == "restore" else cap
        try:
            if dry_run:
                contents: dict[str, bytes] = {}
                files, modes, sizes = planned_files(
                    workspace, safe, state.file_manifest, largest
                )
            else:
                contents, files, modes, sizes = read_files(
                    workspace, safe, largest, self._known, self._stored
                )
        except OverCap as exc:
            used = self.usage(session_id) + exc.size
            raise CheckpointCapExceeded(session_id, used, cap, CAP_SETTINGS_TOLD) from None
        number = next_number(self.numbers_used(session_id), state.checkpoint_count)
        to_make = safe_relative_paths(workspace, sorted(set(made)))
        absent = tuple(path for path in to_make if path not in files)
        # a restore's undo names what the restore was to change: ``keep``
        over = safe_relative_paths(workspace, sorted(set(keep))) if reason == "restore" else []
        written_over = tuple(over)
        all_secrets = with_secrets(self.known_secrets, secrets)
        words = "" if tail_prompts(state.recent_messages) else last_request
        words = first_words(scrub_text(words, all_secrets))
        spliced = usable_encoding(state, encoded, all_secrets)
        moved = tuple(moved)
        for name in moved:
            if not is_over_cap_name(name) or not name.startswith(f"{session_id}."):
                raise ValueError(f"not a moved turn of session {session_id}: {name!r}")
        checkpoint = Checkpoint(
            format=entry_format(absent, words, written_over, moved),
            made=absent,
            moved=moved,
            written_over=written_over,
            last_request=words,
            number=number,
            created_at=now,
            reason=reason,
            files=files,
            modes=modes,
            sizes=sizes,
            state=scrub_state(
                state.model_copy(
                    update={"checkpoint_count": number, "file_manifest": files, "updated_at": now}
                ),
                all_secrets,
                messages=spliced is None,  # scrubbed of them all when they were encoded
            ),
        )
        return checkpoint, contents, spliced

    def _store(
        self,
        checkpoint: Checkpoint,
        contents: dict[str, bytes],
        spliced: EncodedMessages | None = None,
        *,
        cap: int,
        now: datetime,
        dry_run: bool = False,
    ) -> Checkpoint:
        """Write ``checkpoint`` (its blobs, then its entry) unless it would pass the cap;
        ``spliced``: its messages, encoded (``encode_checkpoint``)."""
        session_id = checkpoint.state.session_id
        reason = checkpoint.reason
        entry = encode_checkpoint(checkpoint, spliced)
        entry_bytes, sizes = self._session_usage(session_id)
        new_sizes = {**sizes, **checkpoint.sizes}
        would_use = entry_bytes + len(entry) + sum(new_sizes.values())
        if would_use > cap and reason != "restore":
            raise CheckpointCapExceeded(session_id, would_use, cap, CAP_SETTINGS_TOLD)
        if dry_run:
            self._check_writable(session_id, checkpoint.sizes)
            return checkpoint
        self._store_blobs(contents, now)
        path = self.session_dir(session_id) / entry_name(checkpoint.number)
        self._held.pop(session_id, None)
        write_creating_directories(path, entry)
        record_scrubbed(path, entry_digest(entry), ListedFacts.of(checkpoint))
        self._usage[session_id] = (entry_bytes + len(entry), new_sizes)
        written = blob_identity(path)
        if written is not None:
            self._held[session_id] = (written, checkpoint)
        return checkpoint

    def _store_blobs(self, contents: dict[str, bytes], now: datetime) -> None:
        """Each of ``contents`` stored once, by its SHA-256 (those there and whole are left
        as they are), and the blob directory synced if one was written."""
        wrote_blob = False
        blobs = os.fspath(self.blobs_dir)
        for digest, data in contents.items():  # digests of our own hashing: valid names
            if self._holds(os.path.join(blobs, digest), digest, data):
                continue  # stored once per content
            blob = self.blob_path(digest)
            if os.path.lexists(blob):
                # Damaged since it was written: every checkpoint of this content would
                # refer to it. Kept aside (never deleted) and written anew.
                quarantine(blob, now)
            try:
                atomic_write(blob, data, sync_dir=False)
            except FileNotFoundError:
                ensure_private_dir(blob.parent)
                atomic_write(blob, data, sync_dir=False)
            self._remember(blob, digest)
            wrote_blob = True
        if wrote_blob:
            fsync_dir(self.blobs_dir)

    def _check_writable(self, session_id: str, digests: Iterable[str]) -> None:
        """OSError if the entry, or a blob of ``digests`` not stored yet, could not be
        written now: each directory it would go into takes a temp file, removed at once
        (a dry run sees what the modes of the store's directories refuse)."""
        directories = [self.session_dir(session_id)]
        if any(not os.path.lexists(self.blob_path(digest)) for digest in digests):
            directories.append(self.blobs_dir)
        for directory in directories:
            while not directory.exists() and directory != directory.parent:
                directory = directory.parent  # made when the checkpoint is written
            handle, temp = tempfile.mkstemp(prefix=".writable.", suffix=".tmp", dir=directory)
            os.close(handle)
            os.unlink(temp)

    def check_blobs(self, checkpoint: Checkpoint, paths: Iterable[str]) -> None:
        """CheckpointError naming the first of ``paths`` whose stored content is missing, is
        not a regular file or is not of its size (not read: a restore reads and checks it
        whole before it writes anything)."""
        for relative in sorted(set(paths)):
            digest = checkpoint.files[relative]
            try:
                info = os.lstat(self.blob_path(digest))
            except FileNotFoundError:
                info = None
            if info is None or not stat.S_ISREG(info.st_mode):
                raise CheckpointError(f"the stored content {digest[:12]} of {relative} is missing")
            if info.st_size != checkpoint.sizes.get(digest, info.st_size):
                raise CheckpointError(f"the stored content {digest[:12]} of {relative} is damaged")

    def _holds(self, blob: str, digest: str, data: bytes) -> bool:
        """Whether the blob is there and holds exactly ``data``: read and compared once,
        then known by its ``lstat`` while nothing changes it (a checkpoint with nothing
        changed read back every blob it refers to)."""
        identity = blob_identity(blob)
        if identity is None:
            return False
        if self._checked.get(digest) == identity:
            return True
        if not _holds(blob, data):
            return False
        self._checked[digest] = identity
        return True

    def _stored(self, digest: str) -> bool:
        """Whether the blob of ``digest`` is known whole (written or checked by this store,
        and unchanged since), so a file of that content need not be read to store it."""
        identity = self._checked.get(digest)  # a digest of this store's own hashing
        return identity is not None and identity == blob_identity(
            os.path.join(self.blobs_dir, digest)
        )

    def _remember(self, blob: Path, digest: str) -> None:
        """The blob was just written whole: known by its ``lstat`` from now on."""
        identity = blob_identity(blob)
        if identity is None:
            self._checked.pop(digest, None)
        else:
            self._checked[digest] = identity

    def read_blob(self, digest: str) -> bytes:
        """A blob's bytes, checked against its name; CheckpointError if missing or damaged."""
        try:
            data = read_regular_file(self.blob_path(digest), MAX_BLOB_BYTES)
        except (FileNotFoundError, UnsafeSessionFile) as exc:
            raise CheckpointError(f"the stored content {digest[:12]} is missing") from exc
        if hashlib.sha256(data).hexdigest() != digest:
            aside = quarantine(self.blob_path(digest), utc_now())
            kept = f"; moved aside to {aside.name}" if aside else ""
            raise CheckpointError(f"the stored content {digest[:12]} is damaged{kept}")
        return data

    def restore_files(
        self,
        workspace: Path,
        checkpoint: Checkpoint,
        paths: Iterable[str],
        delete: Iterable[str] = (),
        asked: Mapping[str, str | None] | None = None,
    ) -> RestoredFiles:
        """Write ``paths`` back to their content and mode at ``checkpoint``, each atomically
        (a checkpoint that kept no mode, of format 1, leaves the mode as it is now). Every
        blob is read and checked first, so a missing one writes nothing; then a file that
        cannot be written (a symlink or a directory there now, a symlinked directory, a
        full disk) is named with its reason and the others are still written. ``delete``:
        files of the checkpoint's ``made`` (a restore it undoes made them) to delete; a
        path it does not name, or where no regular file is, is left alone. ``asked``: what
        each file held when the restore was asked for; one that holds something else now
        is neither written nor deleted (``changed``): the answer was not about it."""
        wanted = {p: self.read_blob(checkpoint.files[p]) for p in sorted(set(paths))}
        written: list[str] = []
        failed: dict[str, str] = {}
        directories: dict[Path, None] = {}
        if not workspace.is_dir():  # deleted or moved: its directories are made, not it
            return RestoredFiles((), dict.fromkeys(wanted, WORKSPACE_GONE))
        changed: list[str] = []
        to_delete = set(delete) & set(checkpoint.made)
        deleted = delete_made_files(workspace, to_delete, failed, asked or {}, changed)
        try:
            for relative, data in wanted.items():
                if in_git_directory(relative):
                    failed[relative] = "it is inside a .git directory"
                    continue
                if not is_safe_relative_path(workspace, relative):
                    failed[relative] = "its directory is a symlink or outside the workspace"
                    continue
                target = workspace / relative
                if asked and relative in asked and not held_as_asked(target, asked[relative]):
                    changed.append(relative)
                    continue
                try:
                    target.parent.mkdir(parents=True, exist_ok=True)
                    replace_workspace_file(
                        target,
                        data,
                        mode=checkpoint.modes.get(relative),
                        sync_dir=False,
                        clear_temps=False,
                    )
                except OSError as exc:
                    failed[relative] = exc.strerror or str(exc)
                    continue
                directories[target.parent] = None
                written.append(relative)
        finally:
            for directory in directories:  # each directory synced once, for all its files
                fsync_dir(directory)
            # and read once for the temps killed writes left (once a file: squared time)
            clear_stale_workspace_temps_of(workspace / relative for relative in written)
        return RestoredFiles(tuple(written), failed, deleted, tuple(sorted(changed)))

    def delete_session(self, session_id: str) -> int:
        """Remove the session's checkpoints (not the blobs: see ``collect_garbage``)."""
        directory = self.session_dir(session_id)
        self._usage.pop(session_id, None)
        self._held.pop(session_id, None)
        removed = 0
        try:
            names = os.listdir(directory)
        except FileNotFoundError:
            return 0
        for name in names:
            temp = name.startswith(".") and name.endswith(".tmp")
            if number_of(name) is None and not temp and name not in (CONTEXT_NAME, UNSEEN_NAME):
                continue  # a damaged entry moved aside is kept, as a session file's is
            with contextlib.suppress(FileNotFoundError, IsADirectoryError):
                (directory / name).unlink()  # a directory in an entry's place is not ours
                removed += number_of(name) is not None
        with contextlib.suppress(OSError):
            directory.rmdir()  # left, with what was moved aside, if not empty
            fsync_dir(self.checkpoints_dir)
        return removed

    def collect_garbage(self) -> int:
        """Remove the blobs no remaining checkpoint of the project refers to (and temp files
        left by a crash). A damaged entry keeps every blob: nothing is judged unreferenced
        while an entry cannot be read."""
        referenced: set[str] = set()
        for session_id in self.session_ids():
            listing = self.listed(session_id)
            if listing.problems:
                return 0
            for checkpoint in listing.checkpoints:
                referenced.update(checkpoint.files.values())
        try:
            names = os.listdir(self.blobs_dir)
        except FileNotFoundError:
            return 0
        removed = 0
        for name in names:
            if name in referenced:
                continue
            if _SHA256.match(name) or (name.startswith(".") and name.endswith(".tmp")):
                with contextlib.suppress(FileNotFoundError):
                    (self.blobs_dir / name).unlink()
                    removed += 1
        if removed:
            fsync_dir(self.blobs_dir)
        return removed


_SHA256 = re.compile(r"^[a-f0-9]{64}\Z")
STATE_KEY = b',"state":'
"""What ends an entry's head: ``encode_checkpoint`` writes the state last."""


def entry_sizes(data: bytes, start: int, number: int) -> dict[str, int] | None:
    """The ``sizes`` of the head that ``data`` (an entry's first bytes) holds, looking for
    its end from ``start``; None if it holds none whole (``entry_head``)."""
    head = entry_head(data, start, number)
    sizes = None if head is None else head.get("sizes")
    if isinstance(sizes, dict) and all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 and _SHA256.match(d)
        for d, n in sizes.items()
    ):
        return sizes
    return None


def entry_head(data: bytes, start: int, number: int) -> JsonDict | None:
    """The head that ``data`` (an entry's first bytes) holds, looking for its end from
    ``start``; None if it holds none whole. ``STATE_KEY`` inside a string is escaped, and
    one inside the head's objects (a file named ``state``) leaves them open: the first
    that closes a JSON object of checkpoint ``number`` ends the head."""
    at = data.find(STATE_KEY, start)
    while at >= 0:
        try:
            head = orjson.loads(data[:at] + b"}")
        except orjson.JSONDecodeError:
            head = None
        if isinstance(head, dict) and head.get("number") == number:
            return head
        at = data.find(STATE_KEY, at + 1)
    return None


def blob_identity(blob: str | Path) -> BlobIdentity | None:
    """What ``lstat`` says of a blob, or None if nothing is there."""
    try:
        return identity(os.lstat(blob))
    except OSError:
        return None


def _holds(blob: str | Path, data: bytes) -> bool:
    """Whether the blob file holds exactly ``data`` (False if it cannot be read whole)."""
    try:
        return read_regular_file(Path(blob), len(data) + 1) == data
    except (OSError, UnsafeSessionFile):
        return False


class OverCap(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(f"{size} bytes")
        self.size = size


def left_after_delete_line(session_id: str, exc: OSError) -> str:
    """``error: ...`` for what a removal left beside a session file it deleted (a pointer
    to it, a copy kept before a resume compacted it): the session is gone, that stays."""
    what = Path(exc.filename).name if exc.filename else "a file beside it"
    return (
        f"error: {what} not removed ({exc.strerror or exc}); session {session_id} is gone, "
        "that file stays"
    )


def delete_made_files(
    workspace: Path,
    paths: Iterable[str],
    failed: dict[str, str],
    asked: Mapping[str, str | None],
    changed: list[str],
) -> tuple[str, ...]:
    """Delete the regular files among ``paths`` (safe ones, never inside ``.git``, never a
    symlink or a directory), each directory synced once; those that could not be deleted
    go into ``failed`` with why, those that no longer hold what ``asked`` says they held
    into ``changed``. The ones deleted, in order."""
    deleted: list[str] = []
    directories: dict[str, None] = {}
    for relative in safe_relative_paths(workspace, sorted(paths)):
        if in_git_directory(relative):
            continue
        path = os.path.join(workspace, relative)
        if relative in asked and not held_as_asked(path, asked[relative]):
            changed.append(relative)
            continue
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue
            os.unlink(path)
        except FileNotFoundError:
            continue
        except OSError as exc:
            failed[relative] = exc.strerror or str(exc)
            continue
        directories[os.path.dirname(path)] = None
        deleted.append(relative)
    for directory in directories:
        fsync_dir(directory)
    return tuple(deleted)


def read_files(
    workspace: Path,
    paths: Iterable[str],
    cap: int,
    known: KnownDigests | None = None,
    stored: Callable[[str], bool] = lambda digest: False,
) -> tuple[dict[str, bytes], dict[str, str], dict[str, int], dict[str, int]]:
    """The contents (by digest), digests, modes and sizes (by digest) of the regular files
    among ``paths`` (safe ones); OverCap if one holds more than ``cap`` bytes. A file
    ``known`` shows unchanged since it was read is not read again when its content is
    ``stored`` already (it then has no entry in the contents)."""
    contents: dict[str, bytes] = {}
    files: dict[str, str] = {}
    modes: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for relative in paths:
        path = os.path.join(workspace, relative)
        if known is not None and (same := known.lookup(path)) and stored(same.digest):
            if same.size > cap:
                raise OverCap(same.size)
            files[relative], modes[relative] = same.digest, same.mode
            sizes[same.digest] = same.size
            continue
        opened_at = known.clock() if known is not None else 0
        found = read_workspace_file(workspace, relative, cap)
        if found is None:
            continue
        data, modes[relative], info = found
        digest = hashlib.sha256(data).hexdigest()
        files[relative] = digest
        contents[digest] = data
        sizes[digest] = len(data)
        if known is not None and len(data) == info.st_size:  # read as fstat saw it
            known.remember(path, info, Known(digest, modes[relative], len(data)), opened_at)
    return contents, files, modes, sizes


def planned_files(
    workspace: Path, paths: Iterable[str], digests: Mapping[str, str], cap: int
) -> tuple[dict[str, str], dict[str, int], dict[str, int]]:
    """``read_files`` without reading: the digests, modes and sizes (by digest) of the
    regular files among ``paths`` (safe ones) that ``digests`` knows, as ``lstat`` gives
    them now; OverCap if one holds more than ``cap`` bytes."""
    files: dict[str, str] = {}
    modes: dict[str, int] = {}
    sizes: dict[str, int] = {}
    for relative in paths:
        digest = digests.get(relative)
        try:
            info = os.lstat(os.path.join(workspace, relative))
        except OSError:
            continue
        if digest is None or not stat.S_ISREG(info.st_mode):
            continue
        if info.st_size > cap:
            raise OverCap(info.st_size)
        files[relative], modes[relative] = digest, stat.S_IMODE(info.st_mode)
        sizes[digest] = info.st_size
    return files, modes, sizes


def read_workspace_file(
    workspace: Path, relative: str, max_bytes: int
) -> tuple[bytes, int, os.stat_result] | None:
    """A workspace file's bytes, permission bits and ``fstat`` (taken before reading) if it
    is a regular file (a symlink is not followed), else None; OverCap if it holds more
    than ``max_bytes``. The caller checked the path is safe."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(os.path.join(workspace, relative), flags)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > max_bytes:
            raise OverCap(info.st_size)
        data = handle.read()  # sized by fstat, not by the (large) cap
    if len(data) > max_bytes:
        raise OverCap(len(data))
    return data, stat.S_IMODE(info.st_mode), info


def scrubbed_checkpoint(checkpoint: Checkpoint, known_secrets: tuple[str, ...]) -> Checkpoint:
    """``checkpoint`` with every text it keeps scrubbed, as a session file's are."""
    return checkpoint.model_copy(
        update={
            "state": scrub_state(checkpoint.state, known_secrets),
            "last_request": scrub_text(checkpoint.last_request, known_secrets),
        }
    )


_Head = TypeVar("_Head")


def read_entry_sizes(path: Path, number: int) -> tuple[int, dict[str, int]] | None:
    """An entry's size in bytes and its ``sizes``, read from its head alone (the fields
    ``encode_checkpoint`` writes before the state, read a MiB at a time): what the cap
    counts, without parsing the session's state. None when no head of checkpoint
    ``number`` is found."""
    read = read_entry_head(path, number, entry_sizes)
    return None if read is None else (read[0], read[1])


def read_entry_head(
    path: Path, number: int, field: Callable[[bytes, int, int], _Head | None]
) -> tuple[int, _Head] | None:
    """An entry's size in bytes and what ``field`` takes from its head (``entry_sizes``,
    ``entry_head``), read a MiB at a time up to the state; None when ``field`` finds
    nothing in the head of checkpoint ``number``."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafeSessionFile(path, "not a regular file")
        data = b""
        while len(data) < min(info.st_size, MAX_ENTRY_BYTES):
            block = os.read(fd, 1 << 20)
            if not block:
                break
            searched = max(0, len(data) - len(STATE_KEY))
            data += block
            found = field(data, searched, number)
            if found is not None:
                return info.st_size, found
    finally:
        os.close(fd)
    return None


def usable_encoding(
    state: SessionState, encoded: EncodedMessages | None, secrets: tuple[str, ...]
) -> EncodedMessages | None:
    """``encoded`` when it is ``state``'s messages themselves (the very tuple its ``json``
    holds) scrubbed of every one of ``secrets``; otherwise None: they are scrubbed and
    encoded again."""
    if encoded is None or encoded.json is not state.recent_messages:
        return None
    return encoded if encoded.known_secrets.issuperset(secrets) else None


def encode_checkpoint(checkpoint: Checkpoint, encoded: EncodedMessages | None = None) -> bytes:
    """The entry's bytes; the state is encoded as the session file is (``encode_state``,
    splicing ``encoded``, the state's messages already encoded, when given).
    An entry of format 1 (rewritten scrubbed) stays one: no ``modes``, which an
    agent-assist of that format would take for damage."""
    exclude = {"state"}
    if checkpoint.format < 6:
        exclude.add("moved")  # an agent-assist of format 5 or less: damage
    if checkpoint.format < 5:
        exclude.add("written_over")  # an agent-assist of format 4 or less: damage
    if checkpoint.format < 4:
        exclude.add("last_request")  # an agent-assist of format 2 or 3 would take it for damage
    if checkpoint.format < 3:
        exclude.add("made")  # an agent-assist of format 2 would take it for damage
    if checkpoint.format < 2:
        exclude.add("modes")
    head = orjson.dumps(checkpoint.model_dump(mode="json", exclude=exclude))
    return head[:-1] + b',"state":' + encode_state(checkpoint.state, encoded) + b"}"
