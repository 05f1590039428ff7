"""The short CI campaign: kill -9 of terminal and supervisor at random points (seeded)."""

from __future__ import annotations

import os

from tests.chaos import run_campaign
from tests.e2e.harness import Env

CI_CYCLES = int(os.environ.get("AGENT_ASSIST_CHAOS_CYCLES", "100"))
WEIGHTS = {"terminal": 0.55, "supervisor": 0.15, "both": 0.05, "none": 0.25}


def test_kill_9_at_random_points_loses_and_duplicates_nothing(env: Env) -> None:
    report = run_campaign(env, CI_CYCLES, seed=20261201, weights=WEIGHTS)
    assert report.clean, report
    assert report.cycles == CI_CYCLES
    assert report.acknowledged > CI_CYCLES // 4  # the checker really checked turns
