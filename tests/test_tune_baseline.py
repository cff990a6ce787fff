"""engine.autopilot.tune and engine.store.tuned_baselines: the sweep, the choice, the store, and
comparisons against a tuned baseline. The runs are played by the test (no TF, no worker)."""
import pytest

from engine.store import comparisons as cstore
from engine.store import tuned_baselines
from engine.autopilot import tune
from engine.config import RunConfig
from engine.base.errors import ConfigError
from engine.jobs import comparison
from tests.test_comparisons import _play, no_queue  # noqa: F401 - the fixture


def test_the_sweep_is_five_log_spaced_rates_around_the_centre():
    assert tune.sweep_lrs(0.0037649) == [0.000941, 0.00188, 0.00376, 0.00753, 0.0151]


def test_the_fastest_rate_that_reached_the_target_on_every_seed_wins():
    runs = [{"learning_rate": 0.001, "seed": 0, "time_to_accuracy_sec": 2.0},
            {"learning_rate": 0.001, "seed": 1, "time_to_accuracy_sec": 2.2},
            {"learning_rate": 0.004, "seed": 0, "time_to_accuracy_sec": 1.0},
            {"learning_rate": 0.004, "seed": 1, "time_to_accuracy_sec": None},   # missed seed 1: out
            {"learning_rate": 0.002, "seed": 0, "time_to_accuracy_sec": 1.5},
            {"learning_rate": 0.002, "seed": 1, "time_to_accuracy_sec": 1.7}]
    best = tune.choose(runs)
    assert best == {"learning_rate": 0.002, "mean_time_to_accuracy_sec": pytest.approx(1.6), "seeds_reached": [0, 1]}
    assert tune.choose([r for r in runs if r["learning_rate"] == 0.004]) is None


def test_tune_runs_every_rate_on_both_seeds_interleaved_and_stores_the_winner(store_home, store, monkeypatch):
    from engine.jobs import runner
    from engine.lr_find import range_test

    monkeypatch.setattr(range_test, "run", lambda cfg, steps=100: {"suggestion": {"suggested": 0.002}})
    submitted = []

    def submit(configs, roles, store_path=None, group_id=None, **kw):
        submitted.extend(configs)
        return [store.create_run(c.to_json(), role=r, group_id=group_id) for c, r in zip(configs, roles)]

    # Seconds to 0.95 by learning rate; 0.008 misses on seed 1.
    secs = {0.0005: 3.0, 0.001: 2.0, 0.002: 1.2, 0.004: 1.0, 0.008: 0.9}

    def wait(rid, store_path=None):
        cfg = store.get_run(rid)["config"]
        reached = not (cfg["learning_rate"] == 0.008 and cfg["seed"] == 1)
        t = secs[cfg["learning_rate"]]
        store.update_run(rid, status="running", started=1.0)
        store.add_metrics(rid, epochs=[(0, t, 10, 0.5, 0.9, 0.4, 0.96 if reached else 0.80, 0.001)])
        store.finish_run(rid, "completed", summary={"samples_per_sec": 100.0, "target_accuracy": 0.95})
        return store.get_run(rid)

    monkeypatch.setattr(runner, "submit", submit)
    monkeypatch.setattr(runner, "wait", wait)
    cfg = RunConfig(dataset="digits", model="cnn", precision="mixed_bfloat16", epochs=5)
    out = tune.tune(cfg)
    assert out["center"] == 0.002 and out["center_from"] == "lr range test"
    assert out["learning_rates"] == [0.0005, 0.001, 0.002, 0.004, 0.008]
    # Seed 0 from the lowest rate up, seed 1 back down: drift hits every rate alike.
    assert [(c.learning_rate, c.seed) for c in submitted] == [
        (0.0005, 0), (0.001, 0), (0.002, 0), (0.004, 0), (0.008, 0),
        (0.008, 1), (0.004, 1), (0.002, 1), (0.001, 1), (0.0005, 1)]
    # The float32, single-device, constant-LR baseline, stopped at the target.
    assert {(c.precision, c.schedule, c.stop_at_target, c.target_accuracy) for c in submitted} == {
        ("float32", "constant", True, 0.95)}
    assert out["learning_rate"] == 0.004 and out["seeds_reached"] == [0, 1]  # 0.008 missed seed 1
    row = tuned_baselines.get(store, cfg)
    assert (row["learning_rate"], row["id"], row["dataset"], row["batch_size"]) == (0.004, out["tuned_id"], "digits", 128)
    # Another batch size has no tuned rate of its own.
    assert tuned_baselines.get(store, cfg.replace(batch_size=64)) is None


def test_a_comparison_against_the_tuned_baseline_uses_its_rate_and_says_so(no_queue, store):  # noqa: F811
    cfg = RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2)
    with pytest.raises(ConfigError) as e:
        comparison.start(cfg, pairs=3, baseline_kind="tuned")
    assert str(e.value) == ("baseline: 'tuned' has no learning rate stored for digits/mlp, global batch 128, adam; "
                            "run python -m engine tune-baseline --dataset digits --model mlp --batch-size 128 "
                            "--optimizer adam first")
    assert store.list_runs() == []  # refused before anything was queued
    tuned_baselines.put(store, cfg, 0.003, 0.95, {}, "host")
    cid = comparison.start(cfg, pairs=3, baseline_kind="tuned")
    runs = store.list_runs()
    assert {r["config"]["learning_rate"] for r in runs if r["role"] == "baseline"} == {0.003}
    assert {r["config"]["learning_rate"] for r in runs if r["role"] == "run"} == {0.001}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (8.0, 125.0))
    r = cstore.get(store, cid)["result"]
    assert r["baseline_kind"] == "tuned" and r["baseline_label"] == "tuned Adam 0.003"
    assert r["tuned_baseline"]["learning_rate"] == 0.003
    from engine.report.stats import comparison_headline

    assert comparison_headline(r)["text"] == "1.25x faster (+25% to +25%), 3 pairs vs tuned Adam 0.003"


@pytest.mark.worker
def test_the_cli_refuses_a_tuned_baseline_that_is_not_stored_in_one_line(tmp_path):
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "engine", "run", "--dataset", "digits", "--model", "cnn",
                          "--baseline", "tuned", "--pairs", "3"], capture_output=True, text=True, timeout=120,
                         env={**os.environ, "SPEEDLAB_HOME": str(tmp_path)})
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: baseline: 'tuned' has no learning rate stored for digits/cnn, global batch 128, adam; run python -m "
        "engine tune-baseline --dataset digits --model cnn --batch-size 128 --optimizer adam first"]


def test_a_winner_at_the_edge_of_the_sweep_extends_it(store_home, store, monkeypatch):
    from engine.jobs import runner
    from engine.lr_find import range_test

    monkeypatch.setattr(range_test, "run", lambda cfg, steps=100: {"suggestion": {"suggested": 0.002}})
    submitted = []

    def submit(configs, roles, store_path=None, group_id=None, **kw):
        submitted.extend((c.learning_rate, c.seed) for c in configs)
        return [store.create_run(c.to_json(), role=r, group_id=group_id) for c, r in zip(configs, roles)]

    def wait(rid, store_path=None):
        lr = store.get_run(rid)["config"]["learning_rate"]
        reached = lr <= 0.016  # faster the higher the rate, up to 0.016; 0.032 diverges
        store.update_run(rid, status="running", started=1.0)
        store.add_metrics(rid, epochs=[(0, 0.01 / lr, 10, 0.5, 0.9, 0.4, 0.96 if reached else 0.1, lr)])
        store.finish_run(rid, "completed", summary={"samples_per_sec": 100.0, "target_accuracy": 0.95})
        return store.get_run(rid)

    monkeypatch.setattr(runner, "submit", submit)
    monkeypatch.setattr(runner, "wait", wait)
    out = tune.tune(RunConfig(dataset="digits", model="cnn", epochs=5))
    # 0.008 won the first sweep at its top edge: 0.016 was tried and won, then 0.032, which missed.
    assert submitted[10:] == [(0.016, 0), (0.016, 1), (0.032, 0), (0.032, 1)]
    assert out["learning_rates"] == [0.0005, 0.001, 0.002, 0.004, 0.008, 0.016, 0.032]
    assert out["learning_rate"] == 0.016
