"""The mark of a reply nobody saw (its turn finished for a terminal gone, H152): kept in
``checkpoints/<id>/unseen-reply`` until the next open of the session shows it, once."""

from __future__ import annotations

import os
from pathlib import Path

from session.atomic import ensure_private_dir
from session.manager import UNSEEN_NAME


def mark_unseen(directory: Path) -> None:
    """Mark the session whose checkpoints are in ``directory``: its last reply is unseen.
    Not synced: a mark lost to a power cut only leaves a reply unshown (it is in the
    session), and the turn's end, which a successor waits for, stays quick."""
    ensure_private_dir(directory)
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
    os.close(os.open(directory / UNSEEN_NAME, flags, 0o600))


def take_unseen(directory: Path) -> bool:
    """Whether the session's last reply was marked unseen; the mark is removed (it is
    shown once). Anything but a regular file at its name is no mark, and is left."""
    path = directory / UNSEEN_NAME
    try:
        if not os.path.isfile(path) or os.path.islink(path):
            return False
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True
