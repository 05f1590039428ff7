"""The connection's writer's first step: what a terminal's socket takes at once."""

from __future__ import annotations

import socket

import anyio
import pytest

from supervisor.greeting import unsent


def test_what_the_socket_takes_whole_leaves_nothing_to_wait_for() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        ours.setblocking(False)
        assert unsent(ours, b'{"type":"turn_end"}\n') == b""
        assert theirs.recv(100) == b'{"type":"turn_end"}\n'


def test_a_socket_with_no_room_gives_back_the_rest_unwritten() -> None:
    """A terminal that reads nothing (stopped with Ctrl+Z): the rest is for a write that
    waits (which a stopping supervisor gives up on)."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with ours, theirs:
        ours.setblocking(False)
        data = b"x" * (8 << 20)  # more than any socket buffer
        rest = unsent(ours, data)
        assert 0 < len(rest) < len(data)
        assert data.endswith(rest)
        assert unsent(ours, rest) == rest  # still no room: nothing written


def test_a_peer_gone_is_a_broken_stream() -> None:
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    theirs.close()
    with ours:
        ours.setblocking(False)
        with pytest.raises(anyio.BrokenResourceError):
            unsent(ours, b"x")
