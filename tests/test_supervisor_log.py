"""The supervisor's log: rotated so it never grows without bound, and private."""

from __future__ import annotations

import logging
import stat
import subprocess
import sys
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


def test_stderr_that_is_the_log_follows_it_when_it_rotates(tmp_path: Path) -> None:
    """A supervisor started in the background has the log as its stderr (a failed start's
    ``error:`` line, a traceback go there): after a rotation they reach the new log, not
    ``supervisor.log.1`` (and, later, a deleted file)."""
    log_path = tmp_path / "supervisor.log"
    code = (
        "import logging, os, sys\n"
        "from pathlib import Path\n"
        "from supervisor.daemon import configure_logging\n"
        f"path = Path({str(log_path)!r})\n"
        "fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)\n"
        "os.dup2(fd, 1); os.dup2(fd, 2)\n"
        "configure_logging(path, max_bytes=1000)\n"
        "for n in range(100):\n"
        "    logging.getLogger('agent_assist.test').info('line %d', n)\n"
        "print('error: said on stderr after the rotations', file=sys.stderr, flush=True)\n"
        "print('said on stdout', flush=True)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        stdin=subprocess.DEVNULL,
        capture_output=False,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0
    current = log_path.read_text()
    assert "error: said on stderr after the rotations" in current
    assert "said on stdout" in current
