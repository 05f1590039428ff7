"""The long fault campaign: ``python -m bench.chaos [--cycles 1000] [--seed N] [--weights ...]``.

Same harness and checker as the CI campaign (``tests/e2e/test_chaos.py``), more
cycles. The weights may name the pid-reuse kinds ``tab-reuse`` and
``supervisor-reuse`` too (root only: they choose pids through ns_last_pid).
Prints one JSON object (the figures of docs/RELIABILITY.md) and exits 1 if
anything was lost, duplicated, torn, left behind, crashed, hung or misattributed.
"""

from __future__ import annotations

import argparse
import json
import sys

from tests.chaos import PID_REUSE_KINDS, run_campaign
from tests.e2e.harness import Env

DEFAULT_WEIGHTS = "terminal=0.55,supervisor=0.15,both=0.05,none=0.25"


def parse_weights(text: str) -> dict[str, float]:
    weights = {}
    for item in text.split(","):
        name, _, value = item.partition("=")
        if name not in ("terminal", "supervisor", "both", "none", *PID_REUSE_KINDS):
            raise SystemExit(f"unknown fault {name!r}")
        weights[name] = float(value)
    return weights


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=20261201)
    parser.add_argument("--weights", default=DEFAULT_WEIGHTS)
    args = parser.parse_args()
    env = Env.create()
    try:
        report = run_campaign(env, args.cycles, args.seed, parse_weights(args.weights))
    finally:
        env.cleanup()
    print(json.dumps({"seed": args.seed, "weights": args.weights, **report.summary()}))
    names = ("lost", "duplicated", "torn", "unparsable", "temps_left", "crashes", "hung")
    for name in (*names, "misattributed"):
        for item in getattr(report, name)[:5]:
            print(f"{name}: {item}", file=sys.stderr)
    return 0 if report.clean else 1


if __name__ == "__main__":
    sys.exit(main())
