"""Seeded interleavings, long mode: ``python -m bench.interleavings [--seeds 1000] [--seed 1]``.

Same harness and checker as the CI mode (``tests/test_interleavings.py``), more
seeds: seeds ``--seed`` .. ``--seed + --seeds - 1``, each a fresh supervisor in
process and 2-4 clients doing turns, ``/save``, ``/reset``, resumes and
disconnects at once. Prints one JSON object (the figures of
docs/RELIABILITY.md), then the report of each failing seed (its history and
what was on disk) on stderr, and exits 1 if any seed failed.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import anyio

from tests.interleavings import run_campaign


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--seeds", type=int, default=1000, help="how many seeds")
    parser.add_argument("--seed", type=int, default=1, help="the first seed")
    args = parser.parse_args()
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="interleavings-") as base:
        campaign = anyio.run(run_campaign, args.seed, args.seeds, Path(base))
    summary = {
        "first_seed": args.seed,
        **campaign.summary(),
        "seconds": round(time.monotonic() - started, 1),
    }
    print(json.dumps(summary))
    for run in campaign.failures:
        print(run.report(), file=sys.stderr)
    return 1 if campaign.failures else 0


if __name__ == "__main__":
    sys.exit(main())
