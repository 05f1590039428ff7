"""The short CI campaign: kill -9 of terminal and supervisor at random points (seeded)."""

from __future__ import annotations

import os

import pytest

from tests.chaos import run_campaign
from tests.e2e.harness import Env
from tests.e2e.pids import pid_reuse_unavailable

CI_CYCLES = int(os.environ.get("AGENT_ASSIST_CHAOS_CYCLES", "100"))
WEIGHTS = {"terminal": 0.55, "supervisor": 0.15, "both": 0.05, "none": 0.25}
PID_REUSE_CYCLES = int(os.environ.get("AGENT_ASSIST_PID_REUSE_CYCLES", "40"))
PID_REUSE_WEIGHTS = {"tab-reuse": 0.3, "supervisor-reuse": 0.15, "terminal": 0.2, "none": 0.35}


def test_kill_9_at_random_points_loses_and_duplicates_nothing(env: Env) -> None:
    report = run_campaign(env, CI_CYCLES, seed=20261201, weights=WEIGHTS)
    assert report.clean, report
    assert report.cycles == CI_CYCLES
    assert report.acknowledged > CI_CYCLES // 4  # the checker really checked turns


@pytest.mark.skipif(
    pid_reuse_unavailable() is not None, reason=f"no real pid reuse: {pid_reuse_unavailable()}"
)
def test_pids_reused_by_new_tabs_and_strangers_lose_nothing_and_fool_nothing(env: Env) -> None:
    report = run_campaign(env, PID_REUSE_CYCLES, seed=20261202, weights=PID_REUSE_WEIGHTS)
    assert report.clean, report
    assert report.kills["tab-reuse"] > 0 and report.kills["supervisor-reuse"] > 0
    assert report.acknowledged > PID_REUSE_CYCLES // 4
