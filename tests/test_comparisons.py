"""engine.jobs.comparison: interleaved pairs, seeds, the adaptive stop, Stop, storage.

The queue process is played by the test (`_play`): it runs each queued run with
made-up figures and calls the same hook the queue calls after every run, so the
orchestration is checked without TF. tests/test_cli.py-style real runs cover the CLI."""
import math

import pytest

from engine import store_comparisons as cstore
from engine.config import RunConfig
from engine.jobs import comparison, runner
from engine.store import Store


@pytest.fixture
def no_queue(store_home, monkeypatch):
    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)
    return store_home


def _finish(st: Store, rid: int, tta, sps: float):
    """Complete run `rid`: time to 0.95 = `tta` s (None: not reached), steady and
    end-to-end samples/s = `sps` and sps / 2."""
    st.update_run(rid, status="running", started=1.0)
    st.add_metrics(rid, epochs=[(1, tta if tta else 5.0, 10, 0.5, 0.9, 0.4, 0.96 if tta else 0.80, 0.001)])
    st.finish_run(rid, "completed", summary={"samples_per_sec": sps, "end_to_end_samples_per_sec": sps / 2,
                                            "target_accuracy": 0.95})


def _play(st: Store, figures, stop_after=None):
    """Run queued runs in id order: figures(run) -> (tta, sps). `stop_after`: after that
    many runs, cancel the rest the way Stop does (the running one is cancelled)."""
    done = 0
    while True:
        row = st.conn.execute("SELECT id FROM runs WHERE status='queued' ORDER BY id LIMIT 1").fetchone()
        if row is None:
            return
        rid = row[0]
        if stop_after is not None and done == stop_after:
            st.update_run(rid, status="running", started=2.0)
            runner.cancel_active()  # queued ones cancelled; the running one asked to stop
            st.finish_run(rid, "cancelled", "cancelled (worker stopped by signal)", only_if_active=True)
        else:
            _finish(st, rid, *figures(st.get_run(rid)))
        comparison.on_run_end(st, rid)
        done += 1


def test_pairs_alternate_order_use_seed_i_and_fixed_pairs_give_the_t_interval(no_queue, store):
    cfg = RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2, seed=7)
    cid = comparison.start(cfg, pairs=4)
    comp = cstore.get(store, cid)
    assert [p["order"] for p in comp["plan"]] == ["AB", "BA", "AB", "BA"]
    runs = sorted(store.list_runs(), key=lambda r: r["id"])
    assert [(r["role"], r["config"]["seed"]) for r in runs] == [
        ("baseline", 7), ("run", 7), ("run", 8), ("baseline", 8),
        ("baseline", 9), ("run", 9), ("run", 10), ("baseline", 10)]
    assert all(r["config"]["precision"] == ("float32" if r["role"] == "baseline" else "mixed_bfloat16") for r in runs)
    # Each run side is 1.2, 1.25, 1.3, 1.35x faster to the target than its pair's baseline.
    speed = {7: 1.2, 8: 1.25, 9: 1.3, 10: 1.35}

    def figures(run):
        s = speed[run["config"]["seed"]]
        return (10.0, 1000.0) if run["role"] == "baseline" else (10.0 / s, 1000.0 * s)

    _play(store, figures)
    comp = cstore.get(store, cid)
    r = comp["result"]
    assert comp["status"] == "completed" and comp["ended_by"] == "the 4 pairs asked for"
    assert r["pairs"] == 4 and r["pair_ratios"] == pytest.approx([1.2, 1.25, 1.3, 1.35])
    # The hand-computed t interval of tests/test_comparison_stats.py.
    assert r["time_to_accuracy_ci95"] == pytest.approx([1.17507, 1.38076], abs=1e-5)
    assert r["time_to_accuracy_speedup"] == pytest.approx(1.27378, abs=1e-5)
    assert r["steady_ci95"] == pytest.approx([1.17507, 1.38076], abs=1e-5)
    assert r["verdict"] == "faster" and r["measure"] == "time_to_accuracy"
    assert [h["pairs"] for h in r["history"]] == [1, 2, 3, 4] and r["history"][0]["ci95"] is None
    # Every pair's run side names its own pair's baseline.
    for p in comp["plan"]:
        assert store.get_run(p["run_id"])["baseline_id"] == p["baseline_id"]
    assert cstore.for_run(store, comp["plan"][2]["run_id"])["id"] == cid


def test_adaptive_stops_once_precise_and_drops_the_unstarted_runs(no_queue, store):
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2))
    assert len(store.list_runs()) == 10  # 5 pairs queued at most
    # Ratios 1.50, 1.51, 1.52: s0 of their logs 0.00662, so 3 pairs suffice for ±10%.
    speed = {0: 1.50, 1: 1.51, 2: 1.52, 3: 1.0, 4: 1.0}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / speed[run["config"]["seed"]], 100.0))
    comp = cstore.get(store, cid)
    assert comp["status"] == "completed"
    assert comp["ended_by"] == "interval within ±10% after 3 pairs"
    assert len(store.list_runs()) == 6 and all(r["status"] == "completed" for r in store.list_runs())
    r = comp["result"]
    assert r["pairs"] == 3 and r["time_to_accuracy"]["method"] == "stein" and r["verdict"] == "faster"
    assert [p.get("dropped", False) for p in comp["plan"]] == [False, False, False, True, True]


def test_adaptive_noisy_pairs_end_at_the_pair_limit(no_queue, store):
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2))
    speed = {0: 1.33, 1: 1.63, 2: 1.12, 3: 1.25, 4: 0.77}  # the pair ratios
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / speed[run["config"]["seed"]], 100.0))
    comp = cstore.get(store, cid)
    assert comp["ended_by"].startswith("pair limit (5) reached; interval ±")
    assert comp["result"]["pairs"] == 5 and comp["result"]["verdict"] == "no difference"


def test_stop_keeps_the_complete_pairs(no_queue, store):
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=4)
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (8.0, 125.0), stop_after=3)
    comp = cstore.get(store, cid)
    r = comp["result"]
    assert comp["status"] == "stopped"
    assert comp["ended_by"] == "stopped by the user; 1 complete pair kept"
    assert r["pairs"] == 1 and r["time_to_accuracy_speedup"] == pytest.approx(1.25)
    assert [row["status"] for row in r["pair_rows"]] == ["complete", "incomplete", "not run", "not run"]


def test_a_pair_whose_run_misses_the_target_is_counted(no_queue, store):
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=3)
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          ((None if run["config"]["seed"] == 1 else 8.0), 125.0))
    r = cstore.get(store, cid)["result"]
    assert r["pairs"] == 3
    assert r["pair_ratios"] == [pytest.approx(1.25), None, pytest.approx(1.25)]
    assert r["time_to_accuracy"]["not_reached"] == 1
    assert r["time_to_accuracy"]["missing"] == [{"pair": 1, "side": "run"}]
    from engine.report.stats import comparison_headline

    h = comparison_headline(r)
    assert h["text"] == "1.25x faster [1.25–1.25], 2 pairs"  # two identical ratios: zero width
    assert h["note"] == "1 pair without a ratio (run did not reach the target)"


def test_a_a_comparison_runs_the_baseline_on_both_sides(no_queue, store):
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), kind="aa", pairs=3)
    assert {r["config"]["precision"] for r in store.list_runs()} == {"float32"}
    _play(store, lambda run: (10.0 * (1.02 if run["role"] == "run" else 1.0), 100.0))
    comp = cstore.get(store, cid)
    assert comp["kind"] == "aa" and cstore.latest_noise(store, comp["hostname"])["id"] == cid
    assert comp["result"]["time_to_accuracy_ci95"] == pytest.approx([1 / 1.02, 1 / 1.02])
    assert math.isclose(comp["result"]["time_to_accuracy"]["half_width"], 0.0, abs_tol=1e-12)


def test_a_bundle_of_a_comparisons_runs_carries_the_comparison(no_queue, store, tmp_path):
    from engine.bundle import export_runs, import_bundle

    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=3)
    speed = {0: 1.2, 1: 1.3, 2: 1.25}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / speed[run["config"]["seed"]], 100.0))
    here = cstore.get(store, cid)
    ids = here["result"]["baseline_ids"] + here["result"]["run_ids"]
    manifest = export_runs(store, ids, tmp_path / "b.zip")
    assert manifest["comparisons"] == [f"comparisons/{cid}.json"]
    assert "comparisons" not in export_runs(store, ids[:-1], tmp_path / "part.zip")  # not all its runs
    other = Store(tmp_path / "other" / "runs.sqlite")
    try:
        mapping = dict(import_bundle(other, tmp_path / "b.zip"))
        (there,) = cstore.list_all(other)
        assert [p["run_id"] for p in there["plan"]] == [mapping[p["run_id"]] for p in here["plan"]]
        for key in ("time_to_accuracy_speedup", "time_to_accuracy_ci95", "pair_ratios", "verdict", "pairs"):
            assert there["result"][key] == pytest.approx(here["result"][key])
        assert there["ended_by"] == here["ended_by"] == "the 3 pairs asked for"
    finally:
        other.close()


def test_runs_page_lists_the_stored_comparison_with_its_headline(no_queue, store):
    from tests.test_pages import app, no_errors

    comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=4)
    speed = {0: 1.2, 1: 1.25, 2: 1.3, 3: 1.35}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else
          (10.0 / speed[run["config"]["seed"]], 100.0))
    at = app("views/runs/runs.py")
    no_errors(at)
    (table,) = [d.value for d in at.dataframe if "headline" in d.value.columns]
    assert list(table["headline"]) == ["1.27x faster [1.18–1.38], 4 pairs"]
    assert list(table["verdict"]) == ["faster"] and list(table["pairs"]) == [4]
    assert list(table["ended by"]) == ["the 4 pairs asked for"]


def test_the_time_budget_ends_an_adaptive_comparison_at_a_pair_boundary(no_queue, store):
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), budget_s=100)
    cstore.update(store, cid, created=cstore.get(store, cid)["created"] - 80)  # 80 s gone by pair 1's end
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (8.0, 125.0))
    comp = cstore.get(store, cid)
    # 80 s for one pair: a second would end near 160 s, past the budget.
    assert comp["ended_by"] == "time budget (100 s) reached after 1 pair"
    assert comp["result"]["pairs"] == 1 and len(store.list_runs()) == 2


def test_stop_between_two_runs_still_ends_the_comparison(no_queue, store):
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=3)
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (8.0, 125.0), stop_after=99)
    comp = cstore.get(store, cid)
    assert comp["status"] == "completed"
    cid = comparison.start(RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2), pairs=3)
    plan = cstore.get(store, cid)["plan"]
    for rid in (plan[0]["baseline_id"], plan[0]["run_id"]):
        _finish(store, rid, 10.0, 100.0)
        comparison.on_run_end(store, rid)
    runner.cancel_active()  # only queued runs left: no run ends, the queue's hook does not run
    assert cstore.get(store, cid)["status"] == "running"
    assert comparison.running(store) is None  # settled on the next look
    comp = cstore.get(store, cid)
    assert comp["status"] == "stopped" and comp["ended_by"] == "stopped by the user; 1 complete pair kept"
