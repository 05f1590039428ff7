"""A flood of one event-loop error is logged once a minute, with a count, not each time."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import pytest

from supervisor.loop_errors import QuietLoopErrors


class RecordingLoop:
    """What the handler uses of a loop: its default handler, recording what it is given."""

    def __init__(self) -> None:
        self.logged: list[dict[str, Any]] = []

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        self.logged.append(context)

    def as_loop(self) -> asyncio.AbstractEventLoop:
        return cast(asyncio.AbstractEventLoop, self)


def test_a_flood_of_one_error_is_logged_once_and_then_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = RecordingLoop()
    handler = QuietLoopErrors(quiet_s=3600)
    flood = {"message": "Exception in callback", "exception": asyncio.InvalidStateError()}
    for _ in range(10_000):
        handler(loop.as_loop(), flood)
    other = {"message": "Exception in callback", "exception": ValueError()}
    handler(loop.as_loop(), other)
    assert loop.logged == [flood, other]


def test_after_the_quiet_time_the_next_one_is_logged_with_how_many_were_left_out(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = RecordingLoop()
    handler = QuietLoopErrors(quiet_s=0)
    flood = {"message": "Exception in callback", "exception": asyncio.InvalidStateError()}
    handler(loop.as_loop(), flood)
    handler(loop.as_loop(), flood)
    assert len(loop.logged) == 2  # nothing left out with no quiet time
    quiet = QuietLoopErrors(quiet_s=3600)
    quiet(loop.as_loop(), flood)
    quiet(loop.as_loop(), flood)
    quiet._last.clear()  # as if the quiet time had passed
    with caplog.at_level(logging.ERROR, logger="agent_assist.supervisor"):
        quiet(loop.as_loop(), flood)
    assert "1 more event-loop errors like the next one were not logged" in caplog.text


def test_errors_that_differ_only_in_an_objects_address_are_one_kind() -> None:
    """A helper's attack: 5,000 connections dropped at once logged 901 tracebacks, each
    message naming a different future's address."""
    loop = RecordingLoop()
    handler = QuietLoopErrors(quiet_s=3600)
    for address in range(0x7F5EC5E86200, 0x7F5EC5E86200 + 500 * 0x120, 0x120):
        message = (
            "Exception in callback <built-in method set_result of _asyncio.Future object "
            f"at {address:#x}>"
        )
        handler(loop.as_loop(), {"message": message, "exception": asyncio.InvalidStateError()})
    assert len(loop.logged) == 1
