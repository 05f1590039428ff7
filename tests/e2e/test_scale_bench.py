"""bench/scale.py at a tiny scale (20 terminals, 5 in turns at once), so the bench cannot rot."""

from __future__ import annotations

import math

from bench.scale import report, run


def test_the_scale_bench_saves_every_session_and_prints_each_figure() -> None:
    result = run(terminals=20, active=5, rounds=4, baseline_turns=5)

    assert result.problems == []
    assert result.saved == 20
    assert len(result.stop.closed_s) == 20  # every terminal was told its session was saved
    assert len(result.baseline) == 5
    assert len(result.loaded) == len(result.first_frames) == 5 * 4
    figures = [
        result.per_terminal_kb,
        result.work_per_turn,
        result.stop.exit_s,
        result.stop.cpu_s,
        result.raw_writes_s,
        *result.baseline,
        *result.overhead,
        *result.first_frames,
    ]
    assert all(math.isfinite(figure) for figure in figures)
    assert all(0 < seconds < 60 for seconds in [*result.loaded, result.stop.exit_s])
    assert result.attached_kb > 0 and result.empty_kb > 0
    lines = report(result)
    # (the overall line, last, ends "within target" too when every figure is within)
    verdicts = [line for line in lines[:-1] if line.endswith(("within target", "OVER target"))]
    assert [line.split(":")[0] for line in verdicts] == [
        "memory",
        "turn overhead over the one-terminal median",
        "stop to exit with 20 of 20 sessions saved whole",
    ]
    assert lines[-1].startswith("overall: ")
