"""engine.autopilot.tune and engine.store.tuned_baselines: the grid, the choice, successive halving,
the reserved tuning seeds, the store, the CLI, and comparisons against a tuned baseline. The runs
are played by the test (no TF, no worker) except in the one worker-marked test."""
import json
import math

import numpy as np
import pytest

from engine.store import comparisons as cstore
from engine.hardware.fingerprint import short
from engine.store import tuned_baselines
from engine.autopilot import tune
from engine.config import RunConfig
from engine.config.seeds import TUNING_SEEDS
from engine.base.errors import ConfigError
from engine.jobs import comparison
from tests.test_comparisons import _play, no_queue  # noqa: F401 - the fixture

S0, S1, S2, S3 = TUNING_SEEDS


def test_the_grid_is_three_schedules_two_lengths_four_peaks_two_smoothings_and_peak_means_the_same():
    from engine.config import lr_math

    assert tune.sweep_lrs(0.0037649) == [0.00188, 0.00376, 0.00753, 0.0151]
    assert len(tune.grid(tune.sweep_lrs(0.002))) == 24  # one length
    # A 15-epoch budget: constant over 15; warmup-cosine and one-cycle over 15 and over 5 (a third).
    g = tune.grid(tune.sweep_lrs(0.002), epochs=15)
    assert len(g) == (1 + 2 * 2) * 4 * 2 == 40
    assert {(c["schedule"], c["epochs"]) for c in g} == {("constant", 15), ("warmup_cosine", 5), ("warmup_cosine", 15),
                                                         ("one_cycle", 5), ("one_cycle", 15)}
    assert tune.schedule_lengths(15) == [5, 15] and tune.schedule_lengths(5) == [2, 5]
    assert tune.schedule_lengths(3) == [3]
    short = tune.config_for(RunConfig(dataset="digits", epochs=15), "warmup_cosine", 0.008, 0.0, 5)
    assert (short.epochs, short.warmup_epochs) == (5, 0.5)
    assert tune.warmup_epochs(3) == 0.3 and tune.warmup_epochs(10) == 1.0
    base = RunConfig(dataset="digits", epochs=3)
    one = tune.config_for(base, "one_cycle", 0.008, 0.1)
    assert (one.learning_rate, one.max_lr, one.warmup_epochs, one.label_smoothing) == (0.008, 0.008, 0.0, 0.1)
    cos = tune.config_for(base, "warmup_cosine", 0.008, 0.0)
    assert (cos.learning_rate, cos.max_lr, cos.warmup_epochs) == (0.008, None, 0.3)
    # The highest LR any step uses is the peak, for every schedule (10 steps per epoch).
    for schedule in tune.SCHEDULES:
        lrs = lr_math.lr_at(tune.config_for(base, schedule, 0.008, 0.0), np.arange(30), 10)
        assert lrs.max() == pytest.approx(0.008, rel=0.01), schedule
    assert lr_math.lr_at(one, [0], 10)[0] == pytest.approx(0.008 / 25)  # one-cycle starts at peak / 25


def _r(key, seed, t):
    schedule, lr, ls, *epochs = key
    return {"schedule": schedule, "learning_rate": lr, "label_smoothing": ls, "epochs": (epochs or [5])[0],
            "seed": seed, "time_to_accuracy_sec": t}


def test_the_best_median_among_those_that_reached_on_3_of_4_seeds_wins_and_a_failure_is_a_miss():
    a, b, c, d, e = (("constant", 0.002, 0.0), ("warmup_cosine", 0.004, 0.1), ("one_cycle", 0.008, 0.0),
                     ("constant", 0.004, 0.1), ("one_cycle", 0.004, 0.1))
    runs = [_r(a, s, t) for s, t in zip(TUNING_SEEDS, (10.0, 12.0, 11.0, 13.0))]      # 4 of 4, median 11.5
    runs += [_r(b, s, t) for s, t in zip(TUNING_SEEDS, (8.0, 9.0, None, 10.0))]       # 3 of 4: [8, 9, 10, inf] -> 9.5
    runs += [_r(c, s, t) for s, t in zip(TUNING_SEEDS, (5.0, None, None, 6.0))]       # 2 of 4: out, however fast
    runs += [_r(e, s, t) for s, t in zip(TUNING_SEEDS, (1.0, 1.0, None, None))]       # two failed runs: out
    runs += [_r(d, S0, 1.0)]                                                           # pruned after round 1: out
    best = tune.choose(runs)
    assert {k: best[k] for k in ("schedule", "learning_rate", "label_smoothing", "median_time_to_accuracy_sec",
                                 "reached", "seeds_reached")} == {
        "schedule": "warmup_cosine", "learning_rate": 0.004, "label_smoothing": 0.1,
        "median_time_to_accuracy_sec": 9.5, "reached": {"seeds": 3, "of": 4}, "seeds_reached": [S0, S1, S3]}
    # sd of ln 8, ln 9, ln 10 (n - 1): by hand 0.11163 (mean 2.19308; deviations -0.11364, 0.00414, 0.10950).
    assert best["spread"]["min_sec"] == 8.0 and best["spread"]["max_sec"] == 10.0
    assert best["spread"]["sd_log"] == pytest.approx(0.11163, abs=1e-5)
    # Without b, a's 11.5 wins; with b's seed 1 also missed, b (2 of 4) is out.
    assert tune.choose([r for r in runs if r["schedule"] != "warmup_cosine"])["median_time_to_accuracy_sec"] == 11.5
    assert tune.choose([{**r, "time_to_accuracy_sec": None} if r["seed"] == S1 and r["learning_rate"] == 0.004
                        else r for r in runs])["learning_rate"] == 0.002
    assert tune.choose([r for r in runs if r["learning_rate"] == 0.008]) is None


def test_successive_halving_keeps_the_fastest_tenth_that_reached():
    assert (tune.keep_count(40), tune.keep_count(2), tune.keep_count(11)) == (4, 1, 2)
    assert tune.plan_runs(40, 4) == 40 + 4 * 3 == 52
    assert tune.plan_runs(40, 4, n_reached=3) == 40 + 3 * 3  # only 3 reached in round 1
    assert tune.min_reached(4) == 3 and tune.min_reached(2) == 2 and tune.min_reached(1) == 1
    keys = [("constant", lr, 0.0) for lr in (0.001, 0.002, 0.004, 0.008, 0.016, 0.032)]
    times = (5.0, 3.0, None, 2.0, 3.0, None)  # 0.004 and 0.032 missed
    kept = tune.survivors([_r(k, S0, t) for k, t in zip(keys, times)], 11)
    # The fastest 2 (a tenth of 11, rounded up) of those that reached; a tie (3.0) keeps the grid's order.
    assert [k["learning_rate"] for k in kept] == [0.008, 0.002]


def _fake_runner(store, monkeypatch, seconds):
    """runner.submit/wait played in the store: `seconds(config dict)` -> time to 0.95 (None: missed)."""
    from engine.jobs import runner

    submitted = []

    def submit(configs, roles, store_path=None, group_id=None, **kw):
        submitted.extend(configs)
        return [store.create_run(c.to_json(), role=r, group_id=group_id) for c, r in zip(configs, roles)]

    def wait(rid, store_path=None):
        t = seconds(store.get_run(rid)["config"])
        store.update_run(rid, status="running", started=1.0)
        store.add_metrics(rid, epochs=[(0, t or 5.0, 10, 0.5, 0.9, 0.4, 0.96 if t else 0.80, 0.001)])
        store.finish_run(rid, "completed", summary={"samples_per_sec": 100.0, "target_accuracy": 0.95})
        return store.get_run(rid)

    monkeypatch.setattr(runner, "submit", submit)
    monkeypatch.setattr(runner, "wait", wait)
    return submitted


def _seconds(c):
    """warmup_cosine at 0.004 over the whole 5 epochs is fastest (over 2 epochs, 0.05 s slower); with
    smoothing 0.1 (1.9 s) it misses 2 seeds, without (2.0 s) 1 seed: the winner, by its median of
    [2.0, 2.01, 2.02, miss] = 2.015."""
    s, lr, ls, seed = c["schedule"], c["learning_rate"], c["label_smoothing"], c["seed"]
    t = {"constant": 3.0, "warmup_cosine": 2.0, "one_cycle": 2.5}[s] + 0.5 * abs(math.log2(lr / 0.004))
    t += -0.1 * (ls > 0) + 0.01 * (seed - S0) + 0.05 * (c["epochs"] != 5)
    if (s, lr) == ("warmup_cosine", 0.004) and (seed in (S1, S2) if ls else seed == S3):
        return None
    return t


def test_tune_halves_the_grid_and_stores_the_winner_with_its_schedule(store_home, store, monkeypatch):
    from engine.lr_find import range_test

    monkeypatch.setattr(range_test, "run", lambda cfg, steps=100: {"suggestion": {"suggested": 0.002}})
    submitted = _fake_runner(store, monkeypatch, _seconds)
    plans, progress = [], []
    cfg = RunConfig(dataset="digits", model="cnn", precision="mixed_bfloat16", epochs=5)
    out = tune.tune(cfg, on_plan=plans.append, on_run=progress.append)
    assert out["center"] == 0.002 and out["center_from"] == "lr range test"
    assert out["learning_rates"] == [0.001, 0.002, 0.004, 0.008]
    # The estimate before the first run: 52 runs at the rough default (the store knew no run).
    assert plans == [{"runs": 52, "configs": 40, "run_sec": 20.0, "run_sec_from": "a rough default of 20 s a run",
                      "estimate_sec": 1040.0}]
    assert [(p["index"], p["of"]) for p in progress] == [(i, 52) for i in range(1, 53)] and progress[-1]["left_sec"] == 0
    # Round 1: the 40 configurations on the first tuning seed, shuffled; float32, one device, stopped at 0.95.
    r1 = [(c.schedule, c.learning_rate, c.label_smoothing, c.epochs) for c in submitted[:40]]
    assert sorted(r1) == sorted((g["schedule"], g["learning_rate"], g["label_smoothing"], g["epochs"])
                                for g in tune.grid(out["learning_rates"], epochs=5)) and r1 != sorted(r1)
    assert {c.seed for c in submitted[:40]} == {S0}
    assert {(c.precision, c.devices, c.stop_at_target, c.target_accuracy) for c in submitted} == {
        ("float32", 1, True, 0.95)}
    # Round 2: the best 4 on the 3 other seeds, their order reversed every seed.
    kept = [(k["schedule"], k["learning_rate"], k["label_smoothing"], k["epochs"]) for k in out["survivors"]]
    assert kept[:3] == [("warmup_cosine", 0.004, 0.1, 5), ("warmup_cosine", 0.004, 0.1, 2),
                        ("warmup_cosine", 0.004, 0.0, 5)] and len(kept) == 4
    r2 = [((c.schedule, c.learning_rate, c.label_smoothing, c.epochs), c.seed) for c in submitted[40:]]
    assert r2 == [(k, S1) for k in kept] + [(k, S2) for k in kept[::-1]] + [(k, S3) for k in kept]
    assert (out["schedule"], out["learning_rate"], out["label_smoothing"], out["warmup_epochs"]) == (
        "warmup_cosine", 0.004, 0.0, 0.5)
    assert out["median_time_to_accuracy_sec"] == pytest.approx(2.015)
    assert out["reached"] == {"seeds": 3, "of": 4} and out["tuning_seeds"] == list(TUNING_SEEDS)
    assert out["spread"]["min_sec"] == 2.0 and out["spread"]["max_sec"] == pytest.approx(2.02)
    row = tuned_baselines.get(store, cfg)
    assert (row["id"], row["learning_rate"], row["schedule"], row["warmup_epochs"], row["label_smoothing"],
            row["tuning_seeds"], row["reached"]) == (out["tuned_id"], 0.004, "warmup_cosine", 0.5, 0.0,
                                                     list(TUNING_SEEDS), {"seeds": 3, "of": 4})
    assert row["spread"]["max_sec"] == pytest.approx(2.02)
    # The tuned baseline of a comparison: the stored schedule, peak, warmup and smoothing, over 5 epochs.
    base, used = comparison.baseline_of(cfg.replace(epochs=8), "tuned")
    assert (base.precision, base.schedule, base.learning_rate, base.warmup_epochs, base.label_smoothing,
            base.epochs, used["id"]) == ("float32", "warmup_cosine", 0.004, 0.5, 0.0, 5, out["tuned_id"])
    assert tuned_baselines.get(store, cfg.replace(batch_size=64)) is None  # another batch size: none


def test_no_configuration_on_enough_seeds_stores_nothing(store_home, store, monkeypatch):
    _fake_runner(store, monkeypatch, lambda c: 1.0 if c["seed"] == S0 else None)  # reached only on seed 1 of 4
    with pytest.raises(tune.TuneError) as e:
        tune.tune(RunConfig(dataset="digits", epochs=3), center=0.001, schedules=("constant",), smoothings=(0.0,))
    assert str(e.value) == ("no configuration reached 0.95 on 3 of the 4 tuning seeds in 3 epochs (rates 0.0005, "
                            "0.001, 0.002, 0.004); give more --epochs or a lower --target-accuracy")
    assert tuned_baselines.get(store, RunConfig(dataset="digits")) is None


def test_an_old_constant_lr_row_still_reads_as_a_constant_lr_tuned_baseline(store_home, store, monkeypatch):
    import os

    from engine.hardware.fingerprint import UNKNOWN_SETTING

    cfg = RunConfig(dataset="digits", epochs=4)
    tuned_baselines.put(store, cfg, 0.003, 0.95, {"seeds": [0, 1], "seeds_reached": [0, 1],
                                                  "learning_rates": [0.001, 0.003]}, os.uname().nodename)
    row = tuned_baselines.get(store, cfg)
    monkeypatch.delenv(UNKNOWN_SETTING, raising=False)
    with pytest.raises(ConfigError) as e:  # stored before fingerprints: used only when opted in
        comparison.baseline_of(cfg, "tuned")
    assert str(e.value).startswith("baseline: 'tuned' for digits/cnn was tuned on another machine (machine unknown), "
                                   "not this one (")
    assert str(e.value).endswith("; run python -m engine tune-baseline here, or set SPEEDLAB_USE_UNKNOWN_MACHINE=1 "
                                 "to use one stored before fingerprints")
    monkeypatch.setenv(UNKNOWN_SETTING, "1")
    assert (row["schedule"], row["warmup_epochs"], row["max_lr"], row["label_smoothing"], row["tuning_seeds"],
            row["reached"], row["spread"]) == ("constant", 0.0, None, 0.0, [0, 1], {"seeds": 2, "of": 2}, None)
    base, _ = comparison.baseline_of(cfg, "tuned")
    assert (base.schedule, base.learning_rate, base.label_smoothing, base.epochs) == ("constant", 0.003, 0.0, 4)
    assert tuned_baselines.describe(row) == "constant learning rate 0.003"


def test_a_comparison_or_autopilot_on_a_tuning_seed_is_refused_in_one_line(no_queue, store):  # noqa: F811
    from engine.autopilot.search import check_settings

    cfg = RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2)
    with pytest.raises(ConfigError) as e:
        comparison.start(cfg.replace(seed=899999), pairs=3)  # seeds 899999, 900000, 900001
    assert str(e.value) == ("seed: 899999 gives a comparison of 3 pairs tuning seed 900000 (seeds 900000-900003 are "
                            "reserved for tune-baseline); use a seed of at most 899997 or above 900003")
    with pytest.raises(ConfigError) as e:  # A/A: the run side on seed + 1000 + i
        comparison.start(cfg.replace(seed=899000), kind="aa", pairs=2)
    assert str(e.value).startswith("seed: 899000 gives a comparison of 2 pairs tuning seed 900000 ") \
        and str(e.value).endswith("use a seed of at most 898998 or above 900003")
    assert store.list_runs() == []  # refused before anything was queued
    comparison.start(cfg.replace(seed=899997), pairs=3)  # up to 899999: fine
    # The autopilot: the search's seed, 3 re-runs after it, then 4 runoff seeds (899993 + 7 = 900000).
    with pytest.raises(ConfigError) as e:
        check_settings(600, 0.95, 3, seed=899993)
    assert str(e.value) == ("seed: 899993 gives the autopilot tuning seed 900000 (seeds 900000-900003 are reserved "
                            "for tune-baseline); use a seed of at most 899992 or above 900003")
    check_settings(600, 0.95, 3, seed=899992)
    check_settings(600, 0.95, 3, seed=900004)


def test_the_headline_names_the_tuned_schedule_peak_smoothing_and_seeds():
    from engine.report.comparison import baseline_label

    seeds = {"schedule": "warmup_cosine", "tuning_seeds": list(TUNING_SEEDS)}
    cos = {"optimizer": "adam", "schedule": "warmup_cosine", "learning_rate": 0.004, "label_smoothing": 0.1}
    assert baseline_label("tuned", cos, seeds) == "tuned warmup-cosine Adam 0.004, label smoothing 0.1, 4 seeds"
    one = {"optimizer": "sgd", "schedule": "one_cycle", "learning_rate": 0.05, "max_lr": 0.05, "label_smoothing": 0.0}
    assert baseline_label("tuned", one, seeds) == "tuned one-cycle SGD 0.05, 4 seeds"
    const = {"optimizer": "adam", "schedule": "constant", "learning_rate": 0.003}
    assert baseline_label("tuned", const, {"schedule": "constant", "tuning_seeds": [0, 1]}) == \
        "tuned constant-LR Adam 0.003, 2 seeds"
    # A comparison stored before schedules were tuned, and the untuned baselines, read as before.
    assert baseline_label("tuned", const, {"learning_rate": 0.003}) == "tuned Adam 0.003"
    assert baseline_label("default", {"optimizer": "adam", "learning_rate": 1e-3}) == "Keras-default Adam 1e-3"
    assert baseline_label("default", const) == "untuned Adam 0.003"


def test_a_comparison_against_the_tuned_baseline_uses_its_schedule_and_says_so(no_queue, store):  # noqa: F811
    cfg = RunConfig(model="mlp", precision="mixed_bfloat16", epochs=2)
    with pytest.raises(ConfigError) as e:
        comparison.start(cfg, pairs=3, baseline_kind="tuned")
    assert str(e.value) == ("baseline: 'tuned' has no learning rate stored for digits/mlp, global batch 128, adam; "
                            "run python -m engine tune-baseline --dataset digits --model mlp --batch-size 128 "
                            "--optimizer adam first")
    assert store.list_runs() == []  # refused before anything was queued
    tuned_baselines.put(store, cfg, 0.004, 0.95, {
        "schedule": "warmup_cosine", "warmup_epochs": 0.2, "max_lr": None, "label_smoothing": 0.1, "epochs": 2,
        "tuning_seeds": list(TUNING_SEEDS), "reached": {"seeds": 4, "of": 4},
        "spread": {"min_sec": 9.0, "max_sec": 11.0, "sd_log": 0.08}, "fingerprint": short()}, "host")
    cid = comparison.start(cfg, pairs=3, baseline_kind="tuned")
    runs = store.list_runs()
    assert {(r["config"]["schedule"], r["config"]["learning_rate"], r["config"]["warmup_epochs"],
             r["config"]["label_smoothing"]) for r in runs if r["role"] == "baseline"} == {
        ("warmup_cosine", 0.004, 0.2, 0.1)}
    assert {r["config"]["learning_rate"] for r in runs if r["role"] == "run"} == {0.001}
    _play(store, lambda run: (10.0, 100.0) if run["role"] == "baseline" else (8.0, 125.0))
    r = cstore.get(store, cid)["result"]
    assert r["baseline_kind"] == "tuned"
    assert r["baseline_label"] == "tuned warmup-cosine Adam 0.004, label smoothing 0.1, 4 seeds"
    assert r["tuned_baseline"]["schedule"] == "warmup_cosine" and r["tuned_baseline"]["reached"]["seeds"] == 4
    from engine.report.headline import comparison_headline

    assert comparison_headline(r)["text"] == ("1.25x faster (+25% to +25%), 3 pairs vs tuned warmup-cosine Adam "
                                              "0.004, label smoothing 0.1, 4 seeds")


def test_the_cli_prints_an_estimate_progress_and_the_json_fields(store_home, store, monkeypatch, capsys):
    from engine.cli.main import main

    _fake_runner(store, monkeypatch, _seconds)
    assert main(["tune-baseline", "--dataset", "digits", "--model", "cnn", "--epochs", "5", "--center-lr",
                 "0.002", "--json"]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out.strip().splitlines()[-1])
    assert {k: out[k] for k in ("schedule", "learning_rate", "label_smoothing", "warmup_epochs", "tuning_seeds",
                                "reached", "target_accuracy", "center_from")} == {
        "schedule": "warmup_cosine", "learning_rate": 0.004, "label_smoothing": 0.0, "warmup_epochs": 0.5,
        "tuning_seeds": list(TUNING_SEEDS), "reached": {"seeds": 3, "of": 4}, "target_accuracy": 0.95,
        "center_from": "given"}
    assert len(out["runs"]) == 52 and out["tuned_id"] == 1 and set(out["spread"]) == {"min_sec", "max_sec", "sd_log"}
    assert not set(out["tuning_seeds"]) & set(range(0, 1000))  # no comparison's or autopilot's default seeds
    err = cap.err.splitlines()
    assert err[0] == ("tune-baseline: about 52 runs (40 configurations on 1 seed, the best tenth on 3 more), "
                      "about 17 min (at 20 s a run, a rough default of 20 s a run)")
    assert err[1].startswith("run 1 of 52, about ") and len(err) == 53
    # --quiet: nothing on stderr but the result line on stdout.
    assert main(["tune-baseline", "--dataset", "digits", "--model", "cnn", "--epochs", "5", "--center-lr",
                 "0.002", "--quiet"]) == 0
    cap = capsys.readouterr()
    assert cap.err == "" and cap.out.startswith("tuned baseline for digits/cnn, global batch 128, adam: "
                                                "warmup_cosine over 5 epochs, peak lr 0.004, warmup 0.5 epochs; "
                                                "median 2.0 s")
    # Round 1's 40 lines name each decaying schedule's length: 2 schedules x 4 rates x 2 smoothings per length.
    assert sum(" over 5 epochs, " in line for line in err[1:41]) == 16
    assert sum(" over 2 epochs, " in line for line in err[1:41]) == 16


def test_the_cli_refuses_a_tuned_baseline_that_is_not_stored_in_one_line(store_home):
    from tests.helpers import cli

    out = cli.engine("run", "--dataset", "digits", "--model", "cnn", "--baseline", "tuned", "--pairs", "3")
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == [
        "error: baseline: 'tuned' has no learning rate stored for digits/cnn, global batch 128, adam; run python -m "
        "engine tune-baseline --dataset digits --model cnn --batch-size 128 --optimizer adam first"]


@pytest.mark.worker
def test_a_real_tune_on_two_tiny_configurations_stores_a_schedule(store_home, store):
    """End to end with workers: 2 configurations (one-cycle at 2 peaks, smoothing 0.1) on 2 tuning
    seeds, 1 epoch of digits to a low target: 2 runs in round 1, the better 1 on the second seed."""
    cfg = RunConfig(dataset="digits", model="mlp", epochs=1, target_accuracy=0.3)
    out = tune.tune(cfg, center=0.004, seeds=TUNING_SEEDS[:2], factors=(1.0, 2.0), schedules=("one_cycle",),
                    smoothings=(0.1,))
    assert len(out["runs"]) == 3 and {r["status"] for r in out["runs"]} == {"completed"}
    row = tuned_baselines.get(store, cfg)
    assert (row["schedule"], row["label_smoothing"], row["max_lr"]) == ("one_cycle", 0.1, row["learning_rate"])
    assert row["learning_rate"] in (0.004, 0.008) and row["reached"] == {"seeds": 2, "of": 2}
    assert {r["group_id"] for r in store.list_runs()} == {out["group_id"]} and out["group_id"].startswith("tune-")
