"""The autopilot's re-runs, said before Start and counted down (issue 43, item 4: the
budget is honest). Hand-computed from the newest baseline runs (medians: 30 s wall, 20 s of it to the
target), so 10 s of per-run overhead."""
from __future__ import annotations

import pytest

from engine.autopilot import rerun_time
from engine.config import RunConfig
from engine.store import Store


def _baseline(store: Store, dataset="digits", model="cnn", role="baseline", wall=30.0, ttt=20.0) -> int:
    rid = store.create_run(RunConfig(dataset=dataset, model=model).to_json(), role=role, status="completed")
    store.update_run(rid, started=100.0, ended=100.0 + wall, summary={"time_to_target_sec": ttt, "train_sec": ttt})
    return rid


def test_planned_runs_count_every_round():
    assert rerun_time.planned_runs(5, 3, 4, tuned=True, explain=True) == {"runoff": 3, "confirm": 35}
    assert rerun_time.planned_runs(5, 3, 4, tuned=False, explain=False) == {"runoff": 3, "confirm": 10}
    assert rerun_time.planned_runs(0, 1, 4, tuned=True, explain=True) == {"runoff": 0, "confirm": 0}
    # The runoff re-runs each finalist on every one of its seeds.
    assert rerun_time.planned_runs(5, 3, 4, tuned=False, explain=False, seeds=2) == {"runoff": 6, "confirm": 10}


def test_before_start_ranges_from_the_recent_baseline_runs(tmp_path):
    with Store(tmp_path / "runs.sqlite") as s:
        assert rerun_time.before_start(s, "digits", "cnn", 5, True, False, 3) is None  # nothing measured yet
        for _ in range(5):
            _baseline(s, wall=99.0, ttt=90.0)       # older than the newest 5: not read
        _baseline(s, model="mlp")                   # another model
        _baseline(s, role="run", wall=5.0, ttt=2.0)  # not a baseline
        _baseline(s, wall=31.0, ttt=21.0)
        _baseline(s, wall=80.0, ttt=75.0)           # one slow run (it missed the target): the median ignores it
        _baseline(s, wall=29.0, ttt=19.0)
        _baseline(s, wall=30.0, ttt=18.0)
        rid = _baseline(s, wall=28.0, ttt=20.0)     # medians: wall 30 s, training 20 s
        est = rerun_time.before_start(s, "digits", "cnn", 5, True, False, 3)
        # low: 3 + 5 x (2 + 2 techniques) = 23 runs; 5 baselines x 30 s + 18 x (10 + 0.2 x 20) s = 402 s
        # high: 3 + 5 x (2 + 5) = 38 runs; 150 s + 33 x (10 + 0.7 x 20) s = 942 s
        assert est == {"low_s": pytest.approx(402.0), "high_s": pytest.approx(942.0), "runs_low": 23,
                       "runs_high": 38, "baseline_run": rid, "baseline_runs": 5, "baseline_wall_s": 30.0,
                       "baseline_elapsed_s": 30.0}
        tuned = rerun_time.before_start(s, "digits", "cnn", 5, True, True, 3)
        # a tuned baseline each round: 10 baseline runs x 30 s + 18 x 14 s = 552 s, 28 runs
        assert (tuned["low_s"], tuned["runs_low"]) == (pytest.approx(552.0), 28)
        assert rerun_time.before_start(s, "digits", "cnn", 0, False, False, 1) is None  # nothing after the search


def test_left_in_confirm_extrapolates_the_runs_done():
    conf = {"planned": 20, "started": 1000.0, "runs": [{}] * 4}
    assert rerun_time.left_in_confirm(conf, now=1100.0) == pytest.approx(400.0)  # 16 left x 25 s
    assert rerun_time.left_in_confirm({**conf, "runs": []}, now=1100.0) is None
    assert rerun_time.left_in_confirm({"runs": [{}]}, now=1100.0) is None  # a state from before the plan was kept
    assert rerun_time.minutes(40) == "40 s" and rerun_time.minutes(720) == "12 min"


def test_the_baseline_figure_is_the_runs_tables_wall_and_the_wait_is_said_apart(tmp_path):
    # Issue 57: "baseline runs took 24 s" where the Runs table said 4.5-8.8 s: the 24 s was claim
    # to end, most of it waiting for a spare worker's imports.
    with Store(tmp_path / "runs.sqlite") as s:
        for wall, elapsed in ((4.5, 22.0), (6.0, 24.0), (8.8, 27.0)):
            rid = s.create_run(RunConfig().to_json(), role="baseline", status="completed")
            s.update_run(rid, started=100.0, ended=100.0 + elapsed,
                         summary={"time_to_target_sec": 3.0, "train_sec": 3.0, "wall_sec": wall})
        # A row with no start time (an imported one): no clock to read, not "1,796,561,185 s waiting".
        rid = s.create_run(RunConfig().to_json(), role="baseline", status="completed")
        s.update_run(rid, ended=1_796_561_187.0, summary={"time_to_target_sec": 3.0, "wall_sec": 2.0})
        est = rerun_time.before_start(s, "digits", "cnn", 5, False, False, 3)
    assert (est["baseline_wall_s"], est["baseline_elapsed_s"]) == (6.0, 24.0)  # medians of the three
    # 3 runoff + 5 x 2 confirming: 5 baselines x 24 s + 8 winner-like x (21 + 0.2 x 3) s = 292.8 s
    assert est["low_s"] == pytest.approx(292.8)
