"""The session file's size cap, which the writer keeps to: what a save writes, the next
start reads back. Pure: ``within_cap`` decides which messages a file over it does without."""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass

import orjson

from session.encoded import EncodedMessages
from session.models import JsonDict

MAX_SESSION_BYTES = 256 * 1024 * 1024
"""The largest session file read, and written. Above what this version saves at the largest
budget (``MAX_CONTEXT_TOKENS``: a request of some 40 MB, the turns after the boundary and
the default overlap before it): at 32 MiB, one turn that read 140 files within that budget
was saved as 34 MB and refused at the next start (H166). A 200 MB file resumes in about
2 s of CPU and 650 MB of memory at its peak. A file that would pass it is trimmed by its
writer (``within_cap``)."""
HEADROOM_DIVISOR = 64
"""Of the cap, the share kept free for what the save adds after the lifecycle measured the
file (the terminal's secrets scrubbed on the way, a marker longer than a short secret)."""
ELIDED = (
    "[{size:,} bytes of {what} left out of the saved session to keep its file under its "
    "{cap} cap{hint}]"
)
"""What a body left out of the file reads as, to the model after a resume (the chat that
left it out still sends it) and to the open that shows a last reply: what it was, why it
is not there, and for a tool's output what to do (as the request's own elisions say)."""
_WHAT = {
    "tool-return": ("tool output", "; call the tool again if you need them"),
    "text": ("this reply's text", ""),
    "thinking": ("this reply's thinking", ""),
    "tool-call": ("this call's arguments", ""),
}
_ELIDED_RE = re.compile(
    r"\[(?P<size>[0-9,]+) bytes (?:of [^\[\]]*? )?left out of the "
    r"(?:saved session to keep its file|session file to keep it) under its "
    r"(?P<cap>[0-9.,]+ (?:MiB|bytes)) cap(?:; [^\[\]]*)?\]"
)
"""``ELIDED``, and the shorter marker of files written before H174 (``[N bytes left out of
the session file to keep it under its CAP cap]``)."""
MIN_ELIDED = 1024
"""A body smaller than this is left as it is: its marker would save next to nothing."""
_MODEL_BODIES = {"text": "content", "thinking": "content", "tool-call": "args"}
"""The parts of the model's replies whose body may be left out, after every tool return."""


OVER_CAP_SUFFIX = ".over-cap-"
"""``<id>.json.over-cap-<turn>-<digest8>``, beside the session file: a turn of the user's
messages the file had no room for (``MovedTurn``); removed with the session."""
_OVER_CAP_NAME = re.compile(
    rf"^[a-f0-9]{{12}}\.json{re.escape(OVER_CAP_SUFFIX)}[1-9][0-9]{{0,11}}-[a-f0-9]{{8}}$"
)


@dataclass(frozen=True)
class MovedTurn:
    """A turn moved out of the session file, whole, to a file of its own beside it: the
    user's messages alone left the file over its cap. Named for its number and content,
    so writing it again (the next save, a retry) writes the same file."""

    name: str
    messages: EncodedMessages

    @classmethod
    def of(cls, session_id: str, turn: int, messages: EncodedMessages) -> MovedTurn:
        digest = hashlib.sha256(messages.joined()).hexdigest()[:8]
        return cls(f"{session_id}.json{OVER_CAP_SUFFIX}{turn}-{digest}", messages)

    def data(self) -> bytes:
        """The file's bytes: a JSON array of the turn's messages, as the session file holds
        them (``ModelMessagesTypeAdapter`` reads it)."""
        return b"[" + self.messages.joined() + b"]"


def is_over_cap_name(name: str) -> bool:
    """Whether ``name`` is one ``MovedTurn.of`` gives (checked before a path is built)."""
    return _OVER_CAP_NAME.fullmatch(name) is not None


@dataclass(frozen=True)
class MovedBack:
    """Turns read back from beside a session file for a restore (``Checkpoint.moved``)."""

    turns: tuple[tuple[str, tuple[JsonDict, ...]], ...]
    """Each turn read, oldest first: its file's name and its messages, as the session
    file holds them."""
    missing: tuple[str, ...] = ()
    """The names of those gone or unreadable: the restore goes on without them."""


@dataclass(frozen=True)
class Trimmed:
    """What a save left out of a session file to keep it under its cap."""

    cap: int
    turns: int = 0
    """Already compacted turns (the overlap, the turn sent again) left out whole."""
    tool_returns: int = 0
    """Tool returns whose bodies were left out."""
    replies: int = 0
    """Bodies of the model's replies (text, thinking, a tool call's arguments) left out."""
    moved: tuple[tuple[int, EncodedMessages], ...] = ()
    """The oldest turns moved out whole (their number, their messages), when the user's
    messages alone were over the cap (``MovedTurn``)."""


def cap_words(cap: int) -> str:
    """``cap`` as a line says it: ``256 MiB``."""
    return f"{cap / 2**20:g} MiB" if cap >= 2**20 else f"{cap:,} bytes"


def trimmed_line(trimmed: Trimmed, session_id: str = "") -> str:
    """Told once a chat, at the first save that trims: what the file goes without (and,
    at the first that moves turns, where they are: nothing the user typed goes unsaid)."""
    moved = len(trimmed.moved)
    if moved:
        turns, them = ("oldest turn", "it") if moved == 1 else (f"{moved} oldest turns", "them")
        return (
            f"note: the session file is kept under its {cap_words(trimmed.cap)} cap: your "
            f"{turns} moved beside it to {session_id}.json{OVER_CAP_SUFFIX}* (this chat still "
            f"sends {them}; a resume does not)"
        )
    left = [
        f"{count} {one if count == 1 else many}"
        for count, one, many in (
            (trimmed.turns, "already summarized turn", "already summarized turns"),
            (trimmed.tool_returns, "tool return's body", "tool returns' bodies"),
            (trimmed.replies, "reply body", "reply bodies"),
        )
        if count
    ]
    return (
        f"note: the session file is kept under its {cap_words(trimmed.cap)} cap: "
        f"{', '.join(left)} left out of it (this chat still sends them; your messages are kept)"
    )


def elided(text: str) -> tuple[int, str] | None:
    """The size and the cap's words of ``text`` if it is an ``ELIDED`` marker, else None."""
    found = _ELIDED_RE.fullmatch(text)
    return None if found is None else (int(found["size"].replace(",", "")), found["cap"])


def within_cap(
    tail: EncodedMessages,
    cuts: Sequence[int],
    room: int,
    cap: int,
    turns: Sequence[tuple[int, int]] = (),
) -> tuple[EncodedMessages, Trimmed | None]:
    """``tail`` within ``room`` bytes (None: it was). First the oldest turns that may go
    whole (``cuts``: where the turns after each of them start, oldest first: the turns
    already compacted), then the largest tool returns' bodies, then the largest bodies of
    the model's replies, each replaced by ``ELIDED``, the last reply last (what an open
    shows of the turn it waited for). The user's messages are never left out: when they
    alone are over ``room``, the oldest turns (``turns``: where each starts in ``tail``, and
    its number) are moved out whole (``Trimmed.moved``), the last one always kept (one
    message is one frame, far under the cap). With none to move, ``tail`` is given back as
    it stands (None: nothing was left out, nothing is told)."""
    sizes = list(tail.message_sizes())
    total = _joined(sizes)
    if total <= room:
        return tail, None
    dropped, cut = 0, 0
    for at in cuts:
        if total <= room:
            break
        total -= _joined(sizes[cut:]) - _joined(sizes[at:])
        dropped, cut = dropped + 1, at
    tail, sizes = tail[cut:], sizes[cut:]
    if total <= room:
        return tail, Trimmed(cap, turns=dropped)
    messages = list(tail.json)
    counts = {"tool": 0, "model": 0}
    for kind in ("tool", "model"):
        for size, index, part in sorted(
            _bodies(messages, kind), key=lambda body: _last_reply_last(body, len(messages) - 1)
        ):
            if total <= room:
                break
            if size < MIN_ELIDED:
                continue
            messages[index] = _elided(messages[index], part, size, cap)
            new = len(orjson.dumps(messages[index]))
            total += new - sizes[index]
            sizes[index] = new
            counts[kind] += 1
    kept = EncodedMessages.of(messages, tail.known_secrets) if any(counts.values()) else tail
    starts = [(at - cut, number) for at, number in turns if at >= cut]
    if starts and starts[0][0] > 0:
        starts[0] = (0, starts[0][1])  # what comes before the first start goes with it
    moved: list[tuple[int, EncodedMessages]] = []
    first = 0
    for (start, number), (end, _) in itertools.pairwise(starts):
        if total <= room:
            break
        moved.append((number, kept[start:end]))
        total -= _joined(sizes[first:]) - _joined(sizes[end:])
        first = end
    if not (dropped or counts["tool"] or counts["model"] or moved):
        return tail, None  # nothing could go: nothing to tell
    trimmed = Trimmed(cap, dropped, counts["tool"], counts["model"], tuple(moved))
    return kept[first:], trimmed


def _last_reply_last(body: tuple[int, int, int], last: int) -> tuple[bool, int, int, int]:
    """The order bodies are left out in: the largest first, the oldest of equal ones, the
    last message's (the reply an open shows) after every other."""
    size, index, part = body
    return index == last, -size, index, part


def _joined(sizes: Sequence[int]) -> int:
    """The bytes of messages of ``sizes`` joined with commas."""
    return sum(sizes) + max(0, len(sizes) - 1)


def _bodies(messages: Sequence[JsonDict], kind: str) -> list[tuple[int, int, int]]:
    """(size, message, part) of each body of ``kind`` (``tool``: a tool's return;
    ``model``: a reply's text, thinking or tool call arguments) in ``messages``."""
    found = []
    for index, message in enumerate(messages):
        parts = message.get("parts")
        if not isinstance(parts, list):
            continue
        for at, part in enumerate(parts):
            if not isinstance(part, dict):
                continue
            key = _body_key(message, part, kind)
            if key is not None and part.get(key) is not None:
                found.append((len(orjson.dumps(part[key])), index, at))
    return found


def _body_key(message: JsonDict, part: JsonDict, kind: str) -> str | None:
    part_kind = part.get("part_kind")
    if kind == "tool":
        tool_return = message.get("kind") == "request" and part_kind == "tool-return"
        return "content" if tool_return else None
    if message.get("kind") != "response" or not isinstance(part_kind, str):
        return None
    return _MODEL_BODIES.get(part_kind)


def _elided(message: JsonDict, at: int, size: int, cap: int) -> JsonDict:
    """``message`` with the body of its part ``at`` replaced by the ``ELIDED`` marker (a
    tool call's arguments by ``{"elided": marker}``: still JSON arguments)."""
    parts = list(message["parts"])
    part = dict(parts[at])
    what, hint = _WHAT.get(str(part.get("part_kind")), ("a body", ""))
    marker = ELIDED.format(size=size, what=what, cap=cap_words(cap), hint=hint)
    if part.get("part_kind") == "tool-call":
        part["args"] = {"elided": marker}
    else:
        part["content"] = marker
    parts[at] = part
    return {**message, "parts": parts}
