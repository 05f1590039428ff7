"""Accepting connections without crashing: a cap on open connections, and descriptor
exhaustion in ``accept`` met with a pause instead of an exception (standard library and
anyio only: it runs before the model stack loads)."""

from __future__ import annotations

import contextlib
import errno
import logging
import resource
from collections.abc import Awaitable, Callable

import anyio
from anyio.abc import SocketListener, SocketStream, TaskGroup

log = logging.getLogger("agent_assist.accept")
MAX_CONNECTIONS = 4096
RESERVED_FDS = 64
"""Descriptors kept for files, logs and watches: connections may use the rest."""
ACCEPT_BACKOFF_S = 0.1
ACCEPT_ERRNOS = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})
TRANSIENT_ACCEPT_ERRNOS = frozenset({errno.ECONNABORTED, errno.EINTR, errno.EAGAIN, errno.EPROTO})
BUSY_FRAME = (
    b'{"type":"error","code":"busy","message":"too many connections to the supervisor; '
    b'try again shortly"}\n'
)


def connection_cap(limit: int = MAX_CONNECTIONS) -> int:
    """How many connections may be open at once: ``limit``, within the descriptor limit."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limit
    return max(8, min(limit, soft - RESERVED_FDS))


async def _turn_away(stream: SocketStream) -> None:
    with anyio.move_on_after(1), contextlib.suppress(Exception):
        async with stream:
            await stream.send(BUSY_FRAME)


async def accept_forever(
    listener: SocketListener,
    handle: Callable[[SocketStream], Awaitable[None]],
    tg: TaskGroup,
    cap: int,
) -> None:
    """Accept until cancelled. Over ``cap`` open connections a new one gets one ``busy``
    error and is closed; running out of descriptors pauses accepting, never crashes."""
    open_now = 0
    turned_away = 0
    exhausted = False

    async def serve(stream: SocketStream) -> None:
        nonlocal open_now
        open_now += 1
        try:
            await handle(stream)
        finally:
            open_now -= 1

    while True:
        try:
            stream = await listener.accept()
        except anyio.ClosedResourceError:
            return
        except (OSError, anyio.BrokenResourceError) as exc:
            cause = exc if isinstance(exc, OSError) else exc.__cause__
            code = cause.errno if isinstance(cause, OSError) else None
            if code in TRANSIENT_ACCEPT_ERRNOS:
                continue
            if code not in ACCEPT_ERRNOS:
                raise
            if not exhausted:
                log.warning("accept failed (%s); pausing new connections", cause)
            exhausted = True
            await anyio.sleep(ACCEPT_BACKOFF_S)
            continue
        exhausted = False
        if open_now >= cap:
            turned_away += 1
            if turned_away == 1 or turned_away % 1000 == 0:
                log.warning("%d connections open; turning new ones away", cap)
            tg.start_soon(_turn_away, stream)
        else:
            tg.start_soon(serve, stream)
