"""The supervisor's log: rotated so it never grows without bound, and private."""

from __future__ import annotations

import logging
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from supervisor.daemon import LOG_BACKUPS, configure_logging


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    for handler in root.handlers:
        handler.close()
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restore_root_logger")
def test_the_log_rotates_into_a_few_private_files(tmp_path: Path) -> None:
    log_path = tmp_path / "supervisor.log"
    configure_logging(log_path, max_bytes=1000)
    for number in range(200):
        logging.getLogger("agent_assist.test").info("line %d of a long-running supervisor", number)
    files = sorted(tmp_path.iterdir())
    assert [f.name for f in files] == ["supervisor.log"] + [
        f"supervisor.log.{n}" for n in range(1, LOG_BACKUPS + 1)
    ]
    for file in files:
        assert file.stat().st_size <= 1000
        assert stat.S_IMODE(file.stat().st_mode) == 0o600
    assert "line 199 of" in log_path.read_text()
