"""Ctrl+C during a chat, taken only where the chat can take it: in a blocking wait (for the
supervisor, for a piped line), never halfway through drawing a reply, sending a frame or
ending the prompt (which left the chat, or lost the Ctrl+C)."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any


class DeferredInterrupts:
    """While entered, SIGINT raises ``KeyboardInterrupt`` only inside ``interruptible()``;
    one that comes elsewhere waits there (the next ``interruptible()`` raises it at once),
    or is taken with ``take()``, or dropped with ``clear()`` (meant for what is over)."""

    def __init__(self) -> None:
        self._pending = 0
        self._raise_now = False
        self._previous: Any = None
        self._installed = False

    def __enter__(self) -> DeferredInterrupts:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_interrupt)
            self._installed = True
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)
            self._installed = False
        self._pending = 0

    def take(self) -> bool:
        """Whether a Ctrl+C came (it is then taken)."""
        if self._pending:
            self._pending -= 1
            return True
        return False

    def hold(self) -> None:
        """A Ctrl+C that came another way (read as a key with the Enter): held like one."""
        self._pending += 1

    def clear(self) -> None:
        self._pending = 0

    @contextmanager
    def interruptible(self) -> Iterator[None]:
        """A blocking wait that Ctrl+C interrupts (one that came meanwhile, at once)."""
        if self._pending:
            self._pending -= 1
            raise KeyboardInterrupt
        self._raise_now = True
        try:
            yield
        finally:
            self._raise_now = False

    def _on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        if self._raise_now:
            self._raise_now = False
            raise KeyboardInterrupt
        self._pending += 1
