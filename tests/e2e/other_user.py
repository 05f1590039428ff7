"""Connecting to the supervisor's socket as a real other user: a forked child that drops to
``nobody`` (root only), so the supervisor's SO_PEERCRED check meets a genuine foreign uid."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import socket
from dataclasses import dataclass
from pathlib import Path

FALLBACK_UID = 65534
"""``nobody`` on most systems, used when no such account is listed."""


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int


def other_account() -> Account:
    """``nobody``, or uid/gid 65534 when the password database has no such name."""
    try:
        entry = pwd.getpwnam("nobody")
    except KeyError:
        return Account(str(FALLBACK_UID), FALLBACK_UID, FALLBACK_UID)
    return Account(entry.pw_name, entry.pw_uid, entry.pw_gid)


def cannot_become_another_user() -> str | None:
    """Why this process cannot act as another user, or None when it can."""
    account = other_account()
    if os.geteuid() != 0:
        return (
            f"not root (uid {os.geteuid()}): becoming another user ({account.name}, "
            f"uid {account.uid}) needs root; CI runs as root and runs this test"
        )
    if account.uid == os.geteuid():
        return f"the other account {account.name} has this process's own uid {account.uid}"
    return None


def _child(account: Account, path: Path, payload: bytes, report: int) -> None:
    """In the forked child: drop to ``account``, connect, send, read until the supervisor
    closes, and report what happened as one JSON object on ``report``."""
    outcome: dict[str, object]
    try:
        os.setgroups([])
        os.setgid(account.gid)
        os.setuid(account.uid)
    except OSError as exc:
        outcome = {"setuid_failed": f"{exc}"}
    else:
        received = b""
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(20)
                sock.connect(str(path))
                # The supervisor refuses a foreign uid before it reads anything: the write
                # may find the connection already closed, the refusal still waits to be read.
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    sock.sendall(payload)
                while True:
                    try:
                        chunk = sock.recv(65536)
                    except ConnectionResetError:  # closed with our bytes unread: the end
                        break
                    if not chunk:
                        break
                    received += chunk
            outcome = {"uid": os.getuid(), "received": received.decode(errors="replace")}
        except OSError as exc:
            outcome = {"uid": os.getuid(), "error": f"{exc!r}", "received": received.decode()}
    os.write(report, json.dumps(outcome).encode())


def connect_as_other_user(path: Path, payload: bytes) -> dict[str, object]:
    """Run the connection in a child that is ``other_account()``; what it saw."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        try:
            os.close(read_end)
            _child(other_account(), path, payload, write_end)
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    with os.fdopen(read_end, "rb") as pipe:
        while chunk := pipe.read(65536):
            chunks.append(chunk)
    os.waitpid(pid, 0)
    outcome: dict[str, object] = json.loads(b"".join(chunks) or b"{}")
    return outcome
