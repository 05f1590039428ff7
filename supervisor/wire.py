"""Framing shared by the supervisor and the thin client: one JSON object per line.

Standard library only, so the terminal stays light. A frame is a UTF-8 JSON
object terminated by ``\\n``: at most ``MAX_FRAME_BYTES`` long (newline included)
from a client, ``MAX_SERVER_FRAME_BYTES`` from the supervisor; the size is checked
before anything past the cap is buffered.
"""

from __future__ import annotations

import json
from typing import Any, Final

PROTOCOL_VERSION: Final = 1
MAX_FRAME_BYTES: Final = 2 * 1024 * 1024
"""The longest frame a client may send: the supervisor refuses a longer one. A message of
``MAX_MESSAGE_CHARS`` characters fits whatever they are (a control character takes 6
bytes as an escape: 1.2 MB; at 1 MiB, 190,000 of them were refused as "over the limit
of 200,000")."""
MAX_SERVER_FRAME_BYTES: Final = 64 * 1024 * 1024
"""The longest frame the supervisor sends, and a client accepts: the listing of a few
thousand sessions, a manifest of thousands of files are over a MiB. Reply text goes in
frames of at most ``TEXT_FRAME_CHARS`` characters, however much of it is waiting."""
TEXT_FRAME_CHARS: Final = 128 * 1024
"""At most 512 KiB as JSON (a character takes at most 4 bytes, or 6 as an escape)."""
MAX_MESSAGE_CHARS: Final = 200_000
"""The longest user message a terminal may send (checked by the client before sending)."""
MIN_SECRET_CHARS: Final = 8
MAX_SECRET_CHARS: Final = 4096
MAX_HELLO_SECRET_BYTES: Final = 256 * 1024
"""All of a hello's secret values, encoded: a quarter of the frame cap."""
MAX_HELLO_SECRETS: Final = MAX_HELLO_SECRET_BYTES // (MIN_SECRET_CHARS + 2)
"""Secret values a hello may carry (the terminal's credential-named variables): as many
as ``MAX_HELLO_SECRET_BYTES`` holds, each encoded with its quotes. (It was 64: a shell
with more credential-named variables had the rest of their values saved in clear.)"""

Frame = dict[str, Any]


class ErrorCode:
    """Stable codes carried by ``error`` frames."""

    BAD_FRAME = "bad_frame"
    FRAME_TOO_LARGE = "frame_too_large"
    UNKNOWN_TYPE = "unknown_type"
    PROTOCOL_VERSION = "protocol_version"
    HELLO_REQUIRED = "hello_required"
    NOT_ALLOWED = "not_allowed"
    INVALID_REQUEST = "invalid_request"
    SESSION_LIVE = "session_live"
    NOT_FOUND = "not_found"
    SESSION_FILE = "session_file"
    BUSY = "busy"
    INTERNAL = "internal"
    ANSWER_TOO_LARGE = "answer_too_large"
    OTHER_STATE_ROOT = "other_state_root"


class FrameError(Exception):
    """A frame that cannot be accepted; ``code`` is an ``ErrorCode``."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def encode_frame(frame: Frame) -> bytes:
    data = json.dumps(frame, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n"
    if len(data) > MAX_FRAME_BYTES:
        raise FrameError(ErrorCode.FRAME_TOO_LARGE, f"frame of {len(data)} bytes is over the cap")
    return data


def decode_frame(line: bytes) -> Frame:
    try:
        value = json.loads(line)
    except (UnicodeDecodeError, ValueError) as exc:
        raise FrameError(ErrorCode.BAD_FRAME, "frame is not valid JSON") from exc
    if not isinstance(value, dict) or not isinstance(value.get("type"), str):
        raise FrameError(ErrorCode.BAD_FRAME, "frame must be a JSON object with a 'type'")
    return value


class LineBuffer:
    """Splits received bytes into frames, refusing a line longer than the cap."""

    def __init__(self, max_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max = max_bytes

    def feed(self, data: bytes) -> list[bytes]:
        self._buffer += data
        lines: list[bytes] = []
        while (end := self._buffer.find(b"\n")) >= 0:
            lines.append(bytes(self._buffer[: end + 1]))
            del self._buffer[: end + 1]
        if len(self._buffer) >= self._max:
            raise FrameError(ErrorCode.FRAME_TOO_LARGE, "frame is over the size cap")
        return lines
