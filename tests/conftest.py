"""Shared fixtures: the anyio backend, a guard against blocking the event loop, no real LLM."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

import pydantic_ai.models
import pytest

pydantic_ai.models.ALLOW_MODEL_REQUESTS = False

SLOW_CALLBACK_S = 0.05


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _SlowCallbacks(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if message.startswith("Executing"):
            self.messages.append(message)


@contextlib.asynccontextmanager
async def blocking_calls() -> AsyncIterator[list[str]]:
    """Collect every step of the running event loop that blocked for more than 50 ms.

    asyncio's debug mode times every callback; blocking file or socket IO made
    inside the loop (instead of in a worker thread) shows up here.
    """
    loop = asyncio.get_running_loop()
    previous = loop.get_debug(), loop.slow_callback_duration
    # A garbage collection of the whole test process is not a blocking call of the
    # code under test: collect now, and keep the collector out of the measured steps.
    gc.collect()
    gc.disable()
    loop.set_debug(True)
    loop.slow_callback_duration = SLOW_CALLBACK_S
    handler = _SlowCallbacks()
    logger = logging.getLogger("asyncio")
    logger.addHandler(handler)
    try:
        yield handler.messages
    finally:
        gc.enable()
        logger.removeHandler(handler)
        loop.set_debug(previous[0])
        loop.slow_callback_duration = previous[1]


@pytest.fixture
async def no_blocking() -> AsyncIterator[None]:
    """Fail the test if the event loop was blocked for more than 50 ms at a time."""
    async with blocking_calls() as blocked:
        yield
    assert blocked == [], "the event loop was blocked:\n" + "\n".join(blocked)


@pytest.fixture
def directory_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The directories ``os.scandir`` reads from now on, in order."""
    read: list[str] = []
    scandir = os.scandir

    def counted(path: Any) -> Any:
        read.append(os.fsdecode(path))
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counted)
    return read



@pytest.fixture
def scrubbed_messages(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many session messages each scrub of messages (a session file's, as loaded, or a
    history's, as encoded) went over from now on, in order."""
    import session.encoded
    import session.manager

    counts: list[int] = []
    for module in (session.encoded, session.manager):
        scrub_json = module.scrub_json

        def counted(value: Any, known_secrets: Any = (), _scrub: Any = scrub_json) -> Any:
            if isinstance(value, list) and value and all("kind" in m for m in value):
                counts.append(len(value))
            return _scrub(value, known_secrets)

        monkeypatch.setattr(module, "scrub_json", counted)
    return counts


@pytest.fixture
def scrubbed_texts(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts compaction (``session.compaction``) scrubs from now on, in order."""
    import session.compaction

    texts: list[str] = []
    scrub_text = session.compaction.scrub_text  # type: ignore[attr-defined]

    def counted(text: str, known_secrets: Any = ()) -> str:
        texts.append(text)
        return scrub_text(text, known_secrets)

    monkeypatch.setattr(session.compaction, "scrub_text", counted)
    return texts


@pytest.fixture
def files_opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files ``os.open`` opens from now on, in order."""
    opened: list[str] = []
    real_open = os.open

    def counted(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        opened.append(os.fsdecode(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", counted)
    return opened
