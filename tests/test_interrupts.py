"""Ctrl+C during a turn is taken in a wait for the supervisor, never while the reply is
drawn (a helper's report: a Ctrl+C landing while a long reply was drawn left the chat,
where it should have cancelled the reply)."""

from __future__ import annotations

import os
import signal

import pytest

from cli.interrupts import DeferredInterrupts


def ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # delivered before kill returns (to this thread)


def test_a_ctrl_c_while_the_reply_is_drawn_waits_for_the_next_wait() -> None:
    with DeferredInterrupts() as interrupts:
        ctrl_c()  # no KeyboardInterrupt here, halfway through drawing
        with pytest.raises(KeyboardInterrupt), interrupts.interruptible():
            pytest.fail("a Ctrl+C that came before the wait interrupts it at once")
        with interrupts.interruptible():
            pass  # taken once


def test_a_ctrl_c_in_a_wait_interrupts_it() -> None:
    with DeferredInterrupts() as interrupts:
        with pytest.raises(KeyboardInterrupt), interrupts.interruptible():
            ctrl_c()
        with interrupts.interruptible():
            pass  # and is not taken a second time


def test_one_still_waiting_at_the_turns_end_is_dropped_and_the_handler_put_back() -> None:
    before = signal.getsignal(signal.SIGINT)
    with DeferredInterrupts():
        ctrl_c()
    assert signal.getsignal(signal.SIGINT) is before
    with DeferredInterrupts() as interrupts, interrupts.interruptible():
        pass


def test_take_and_clear_answer_for_a_ctrl_c_held_meanwhile() -> None:
    with DeferredInterrupts() as interrupts:
        assert not interrupts.take()
        ctrl_c()
        assert interrupts.take() and not interrupts.take()
        ctrl_c()
        interrupts.clear()
        with interrupts.interruptible():
            pass  # cleared: it was for what is over
