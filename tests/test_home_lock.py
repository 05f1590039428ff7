"""One supervisor per state root: the lock in the root names who holds it."""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path

import pytest

from supervisor.home import HOME_LOCK_NAME, HomeHeld, home_holder, take_home_lock


def test_a_second_taker_is_told_the_runtime_directory_of_the_first(tmp_path: Path) -> None:
    fd = take_home_lock(tmp_path, Path("/run/user/1000/agent-assist"))
    assert fd is not None
    try:
        with pytest.raises(HomeHeld, match="runtime directory /run/user/1000/agent-assist"):
            take_home_lock(tmp_path, Path("/tmp/agent-assist-1000"))
        assert home_holder(tmp_path) == "/run/user/1000/agent-assist"
    finally:
        os.close(fd)
    assert home_holder(tmp_path) is None


def test_a_holder_that_has_not_written_its_directory_yet_is_waited_for(tmp_path: Path) -> None:
    """A race of two starts said 'another runtime directory', naming none."""
    fd = os.open(tmp_path / HOME_LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    late = threading.Timer(0.05, lambda: os.pwrite(fd, b"/run/late", 0))
    late.start()
    try:
        with pytest.raises(HomeHeld, match="runtime directory /run/late"):
            take_home_lock(tmp_path, Path("/tmp/other"))
    finally:
        late.join()
        os.close(fd)
