"""What ``sessions show`` and a recovery copy's read cost on a big session (H182).

The session of ``bench_checkpoint`` (``--turns`` turns that read 40 files of 250 KB: 7
make 70 MB), saved as the StorageActor saves it, and kept as a recovery copy as a failed
save keeps it. CPU of, median of ``--rounds``, each by a new catalog (a new process's):

- ``sessions show``'s read: before, ``SessionManager.load`` (every message validated and
  scrubbed); now ``SessionCatalog.shown`` after the listing it follows, cold (the header
  parsed once) and with the header known (a supervisor's second show: the messages cut
  out unread);
- the recovery copy read back (``load_copy``): before, scrubbed whole (its record
  removed, as before there was one); now, as recorded written scrubbed;

against ``orjson.loads`` of the file's bytes. Run:

    python -m bench.bench_show [--rounds 3] [--turns 7]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

from bench.bench_checkpoint import big_session
from session.catalog import SessionCatalog
from session.manager import SessionManager
from session.scrubbed_entries import INDEX_NAME


def cpu(fn: Callable[[], object]) -> float:
    started = time.process_time()
    fn()
    return time.process_time() - started


def measure(root: Path, turns: int) -> dict[str, float]:
    write, _ = big_session(turns)
    state = write.state
    project = root / "projects" / "ws_00000000" / "sessions"
    project.mkdir(parents=True)
    path = SessionManager(project).save(state, write.encoded).path
    copy = SessionCatalog(root).keep_unsaved(project, state)
    data = path.read_bytes()
    out = {"bytes": float(len(data)), "parse": cpu(lambda: orjson.loads(data))}
    out["show before"] = cpu(lambda: SessionManager(project).load(state.session_id))
    catalog = SessionCatalog(root)

    def show() -> object:
        catalog.list((project,), {})
        return catalog.shown(project, state.session_id)

    out["show cold"] = cpu(show)
    out["show warm"] = cpu(show)
    out["copy now"] = cpu(
        lambda: SessionCatalog(root).manager(project).load_copy(copy, state.session_id)
    )
    (copy.parent / INDEX_NAME).unlink()
    out["copy before"] = cpu(
        lambda: SessionCatalog(root).manager(project).load_copy(copy, state.session_id)
    )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--turns", type=int, default=7)
    args = parser.parse_args()
    rounds = []
    for _ in range(args.rounds):
        root = Path(tempfile.mkdtemp(prefix="aa-bench-show-"))
        try:
            rounds.append(measure(root, args.turns))
        finally:
            shutil.rmtree(root, ignore_errors=True)

    def median(row: str) -> float:
        return statistics.median(r[row] for r in rounds)

    parse = median("parse")
    print(f"a {median('bytes') / 1e6:.0f} MB session, median of {args.rounds}, CPU")
    print(f"  orjson.loads of the file (limit)        {parse * 1000:8.1f} ms")
    rows = (
        ("show before", "sessions show's read, before (load)"),
        ("show cold", "sessions show's read, header parsed"),
        ("show warm", "sessions show's read, header known"),
        ("copy before", "recovery copy read, scrubbed whole"),
        ("copy now", "recovery copy read, as recorded"),
    )
    for row, label in rows:
        value = median(row)
        print(f"  {label:<39} {value * 1000:8.1f} ms  {value / parse:5.2f}x the parse")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
