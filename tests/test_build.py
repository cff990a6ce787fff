"""Everything composes, on both backends: precision x label smoothing x mixup x replicas
(an all-pairs cover of the 24 combinations: tests/helpers/combinations.py, 9), each trained
two real steps through the engine's own `prepare`; and on JAX, a worker never imports
TensorFlow, the same seeded digits run reaches the same accuracy on both backends, and the
LR the optimizer really uses is the schedule's.

Two fresh processes, started together and awaited together (the device layout, Keras's
backend and XLA's simulated device count are fixed per process, at import): each first runs
the digits run through the real worker entry point (the process is a fresh worker until it
ends), with two CPU devices set before (the worker's own 1-device setup then changes
nothing), then the matrix. TensorFlow's matrix runs on two logical CPU devices; JAX's is
kept small (JAX compiles each train step for seconds on a 2-core CPU).
"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.combinations import COMBINATIONS, uncovered_pairs
from tests.helpers.xla_flops import FAST_COMPILE

pytestmark = pytest.mark.worker  # lane: docs/testing.md
# find_spec, not importorskip: collecting this file must not import JAX (docs/testing.md)
HAS_JAX = importlib.util.find_spec("jax") is not None
needs_jax = pytest.mark.skipif(not HAS_JAX, reason="JAX is not installed: pip install -r requirements-dev.txt")

# A stored run executed by the real worker entry point in this fresh process: `worker_out`.
WORKER = textwrap.dedent("""
    import json, sqlite3, sys
    from engine.config import RunConfig
    from engine.store import Store
    cfg = RunConfig.from_json(sys.argv[1])
    store = Store()
    rid = store.create_run(cfg.to_json(), status="running")
    store.close()
    from engine.jobs import worker
    worker.main([str(rid), str(Store().path)])
    store = Store()
    run = store.get_run(rid)
    execs = store.metrics("executions", rid)
    worker_out = {"status": run["status"], "error": run["error"], "summary": run["summary"],
                  "environment": run["environment"], "waits": [e["data_wait"] for e in execs],
                  "warmups": [e["warmup"] for e in execs],
                  "tf_imported": "tensorflow" in sys.modules, "jax_imported": "jax" in sys.modules,
                  "pandas_imported": "pandas" in sys.modules,
                  "sklearn_imported": [m for m in ("sklearn", "scipy.stats") if m in sys.modules],
                  "gc_enabled": __import__("gc").isenabled()}
""")

# The TensorFlow digits run (WORKER; backends.use keeps JAX and pandas out first, as a worker's
# does), then each combination on one device or MirroredStrategy over the 2 logical CPUs.
TF_MATRIX = textwrap.dedent("""
    from engine.training import backends
    backends.use("tensorflow")
    import tensorflow as tf
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
""") + WORKER + textwrap.dedent("""
    import keras
    from engine.config import RunConfig
    from engine.training.devices import DeviceSetup
    from engine.training.build import prepare

    class FirstLoss(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.losses = getattr(self, "losses", []) + [float(logs["loss"])]

    out = []
    for precision, eps, alpha, replicas in json.loads(sys.argv[2]):
        if replicas == 1:
            strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
        else:
            strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"],
                                                      cross_device_ops=tf.distribute.ReductionToOneDevice())
        setup = DeviceSetup(strategy, "CPU", replicas, replicas > 1, 1)
        cfg = RunConfig(model="mlp", batch_size=64, epochs=1, precision=precision, devices=replicas,
                        label_smoothing=eps, mixup_alpha=alpha, seed=3)
        keras.backend.clear_session()
        prep = prepare(cfg, setup)
        _, y = next(iter(prep.train_ds))
        y = tf.concat(strategy.experimental_local_results(y), 0) if replicas > 1 else y
        cb = FirstLoss()
        prep.model.fit(prep.train_ds, epochs=1, steps_per_epoch=2, verbose=0, callbacks=[cb])
        out.append({"precision": precision, "eps": eps, "alpha": alpha, "replicas": replicas,
                    "losses": cb.losses, "compute": prep.model.dtype_policy.compute_dtype,
                    "mixed_rows": int(tf.reduce_sum(tf.cast(tf.reduce_max(y, 1) < 0.999, tf.int32))),
                    "row_sum_err": float(tf.reduce_max(tf.abs(tf.reduce_sum(y, 1) - 1.0))),
                    "smoothing": float(prep.model.loss.label_smoothing),
                    "out_dtype": keras.backend.standardize_dtype(prep.model.outputs[0].dtype)})
    print(json.dumps({"combos": out, "worker": worker_out}))
""")

# The JAX digits run (WORKER) with the 2 simulated devices the matrix needs set before; then the
# combinations, two steps each; device mixup of one batch; then the LR the optimizer really uses
# under one-cycle with 2 steps per execution.
JAX_MATRIX = textwrap.dedent("""
    from engine.training import backends
    backends.use("jax", "cpu", 2)
""") + WORKER + textwrap.dedent("""
    import jax
    import keras
    import numpy as np
    from engine.config import RunConfig
    from engine.training import jax_devices
    from engine.training.build import prepare
    from engine.training.train import _lr_table
    from engine.training.recorder import Recorder
    from engine.data.device_mixup import mix

    class Losses(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.losses = getattr(self, "losses", []) + [float(logs["loss"])]

    out = []
    for precision, eps, alpha, replicas in json.loads(sys.argv[2]):
        keras.backend.clear_session()
        setup = jax_devices.configure("cpu", replicas)
        cfg = RunConfig(backend="jax", model="mlp", batch_size=64, epochs=1, precision=precision,
                        devices=replicas, label_smoothing=eps, mixup_alpha=alpha, seed=3)
        prep = prepare(cfg, setup)
        cb = Losses()
        prep.model.fit(prep.train_ds.repeat(), epochs=1, steps_per_epoch=2, verbose=0, callbacks=[cb])
        out.append({"precision": precision, "eps": eps, "alpha": alpha, "replicas": replicas,
                    "losses": cb.losses, "compute": prep.model.dtype_policy.compute_dtype,
                    "smoothing": float(prep.model.loss.label_smoothing),
                    "loss_scaled": type(prep.model.optimizer).__name__ == "LossScaleOptimizer",
                    "mixup_on": prep.plan["mixup_on"],
                    "out_dtype": keras.backend.standardize_dtype(prep.model.outputs[0].dtype)})

    # Device mixup of one batch, compiled as the train step compiles it (one compile, not one per
    # op): rows still sum to 1, every row mixed, deterministic per step.
    x, y = prep.train_ds[0]
    gen = keras.random.SeedGenerator(0)
    mixed = jax.jit(lambda x, y, step: mix(x, y, 0.2, 3, step, gen))
    mx, my = mixed(x, y, 0)
    mx2, my2 = mixed(x, y, 0)
    _, my3 = mixed(x, y, 1)
    my, my2, my3 = (np.asarray(v) for v in (my, my2, my3))
    mixup = {"row_sum_err": float(np.abs(my.sum(1) - 1).max()), "mixed_rows": int((my.max(1) < 0.999).sum()),
             "rows": len(my), "same_step_equal": bool(np.array_equal(my, my2)),
             "next_step_differs": bool(not np.allclose(my, my3))}

    # One-cycle SGD (scheduled LR and momentum in keras.ops), 2 steps per execution, one replica.
    keras.backend.clear_session()
    setup = jax_devices.configure("cpu", 1)
    cfg = RunConfig(backend="jax", model="mlp", batch_size=128, epochs=2, optimizer="sgd",
                    schedule="one_cycle", max_lr=0.05, steps_per_execution=2, seed=1)
    prep = prepare(cfg, setup)

    class UsedLR(keras.callbacks.Callback):  # what the optimizer's schedule gives for the last step run
        rows = []
        def on_train_batch_end(self, batch, logs=None):
            opt = self.model.optimizer
            it = int(opt.iterations.numpy())
            self.rows.append((it, float(opt._learning_rate(it - 1)), float(opt.momentum_schedule(it - 1))))
    rows = []
    rec = Recorder(cfg.batch_size, prep.steps_per_epoch, lambda t, r: rows.append(r) if t == "executions" else None,
                   lr_fn=_lr_table(cfg, prep.steps_per_epoch),
                   epoch_samples=prep.plan["n_train"])
    used = UsedLR()
    prep.model.fit(prep.train_ds, epochs=2, verbose=0, callbacks=[rec, used])
    from engine.config import lr_math
    steps = [it - 1 for it, _, _ in used.rows]
    lr = {"used": [u for _, u, _ in used.rows], "recorded": [r[8] for r in rows],
          "formula": [float(v) for v in lr_math.lr_at(cfg, np.array(steps), prep.steps_per_epoch)],
          "momentum": [m for _, _, m in used.rows],
          "momentum_formula": [float(v) for v in lr_math.momentum_at(cfg, np.array(steps), prep.steps_per_epoch)],
          "executions": len(rows), "steps": rec.step, "steps_per_epoch": prep.steps_per_epoch}
    print(json.dumps({"combos": out, "mixup": mixup, "lr": lr, "tf_imported": "tensorflow" in sys.modules,
                      "worker": worker_out}))
""")

DIGITS = dict(dataset="digits", model="mlp", batch_size=128, epochs=10, seed=0)


@pytest.fixture(scope="module")
def matrices(tmp_path_factory):
    """{'tensorflow': TF_MATRIX's result, 'jax': JAX_MATRIX's (None without JAX)}: both processes
    started at once, each with a store of its own, and awaited together (their outputs go to
    files: a full pipe would stall one while the other is read). JAX's with FAST_COMPILE: the
    matrix checks how the techniques compose (dtypes, loss scaling, smoothing, mixup, the LR
    used) and what a run records, not the speed of the code."""
    from engine.base.process import worker_env
    from engine.config import RunConfig

    scripts = {"tensorflow": (TF_MATRIX, {}), "jax": (JAX_MATRIX, FAST_COMPILE)} if HAS_JAX else \
        {"tensorflow": (TF_MATRIX, {})}
    procs = {}
    try:
        for backend, (script, env) in scripts.items():
            home = tmp_path_factory.mktemp(backend)
            out, err = open(home / "out", "w+"), open(home / "err", "w+")
            run = RunConfig(**DIGITS, backend=backend).to_json()
            procs[backend] = (subprocess.Popen(
                [sys.executable, "-c", script, run, json.dumps(COMBINATIONS)], stdout=out, stderr=err, text=True,
                env={**worker_env(), **env, "SPEEDLAB_HOME": str(home)}), out, err)
        results = {"jax": None}
        for backend, (proc, out, err) in procs.items():
            proc.wait(timeout=900)
            out.seek(0), err.seek(0)
            assert proc.returncode == 0, err.read()[-3000:]
            results[backend] = json.loads(out.read().strip().splitlines()[-1])
        return results
    finally:
        for proc, out, err in procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            out.close(), err.close()


def test_the_combinations_cover_every_pair_of_settings():
    assert uncovered_pairs() == []
    assert uncovered_pairs(COMBINATIONS[:-1]) == [(("precision", "float32"), ("replicas", 2)),
                                                  (("alpha", 0.0), ("replicas", 2))]


def trained_two_steps(combos: list[dict]) -> None:
    """Every combination trained two finite steps, in its policy's compute dtype with a float32 head."""
    assert len(combos) == len(COMBINATIONS)
    for r in combos:
        assert len(r["losses"]) == 2 and all(x == x and x < 10 for x in r["losses"]), r
        assert r["out_dtype"] == "float32"  # the head, and so the loss, is float32 under every policy
        assert r["compute"] == {"float32": "float32", "mixed_float16": "float16",
                                "mixed_bfloat16": "bfloat16"}[r["precision"]]


def test_every_pair_of_settings_train_two_steps(matrices):
    trained_two_steps(matrices["tensorflow"]["combos"])


def test_first_step_loss_matches_float32_single_device(matrices):
    results = matrices["tensorflow"]["combos"]
    ref = {(r["eps"], r["alpha"]): r["losses"][0] for r in results
           if r["precision"] == "float32" and r["replicas"] == 1}
    for r in results:
        assert abs(r["losses"][0] - ref[(r["eps"], r["alpha"])]) <= 1e-2, r


def test_smoothing_and_mixup_are_really_applied(matrices):
    # Neither option may be silently ignored: mixup mixes label rows (each still sums to 1),
    # label smoothing sits in the loss on those float32 one-hot rows.
    for r in matrices["tensorflow"]["combos"]:
        assert r["row_sum_err"] < 1e-5, r
        assert (r["mixed_rows"] > 0) == (r["alpha"] > 0), r
        assert r["smoothing"] == pytest.approx(r["eps"]), r


@needs_jax
def test_every_pair_of_settings_train_two_steps_on_jax(matrices):
    combos = matrices["jax"]["combos"]
    trained_two_steps(combos)
    for r in combos:
        assert r["loss_scaled"] == (r["precision"] == "mixed_float16"), r  # Keras loss scaling for float16
        assert r["smoothing"] == pytest.approx(r["eps"]), r
        assert r["mixup_on"] == ("device (in the train step)" if r["alpha"] > 0 else None), r


@needs_jax
def test_first_step_loss_matches_jax_float32_single_device(matrices):
    ref = {(r["eps"], r["alpha"]): r["losses"][0] for r in matrices["jax"]["combos"]
           if r["precision"] == "float32" and r["replicas"] == 1}
    for r in matrices["jax"]["combos"]:
        assert abs(r["losses"][0] - ref[(r["eps"], r["alpha"])]) <= 1e-2, r
    # Mixup is really applied in the step: the first loss changes when it is on.
    assert abs(ref[(0.0, 0.2)] - ref[(0.0, 0.0)]) > 1e-3


@needs_jax
def test_device_mixup_mixes_rows_deterministically(matrices):
    m = matrices["jax"]["mixup"]
    assert m["row_sum_err"] < 1e-5 and m["mixed_rows"] > m["rows"] // 2
    assert m["same_step_equal"] and m["next_step_differs"]


@needs_jax
def test_lr_and_momentum_used_on_jax_equal_the_schedule(matrices):
    lr = matrices["jax"]["lr"]
    # 1,437 digits / 128 = 12 steps an epoch (11 full + 29): 6 executions of 2 steps each, 2 epochs.
    assert (lr["steps_per_epoch"], lr["executions"], lr["steps"]) == (12, 12, 24)
    assert lr["used"] == pytest.approx(lr["formula"], rel=1e-5)
    assert lr["recorded"] == pytest.approx(lr["used"], rel=1e-5)
    assert lr["momentum"] == pytest.approx(lr["momentum_formula"], rel=1e-5)
    assert max(lr["used"]) > 5 * min(lr["used"])  # the one cycle really moved the LR
    assert not matrices["jax"]["tf_imported"]


@needs_jax
def test_jax_worker_never_imports_tensorflow_and_matches_tensorflow_accuracy(matrices):
    jx = matrices["jax"]["worker"]  # the JAX run: WORKER in JAX_MATRIX's process, before the matrix
    assert jx["status"] == "completed", jx["error"]
    assert jx["jax_imported"] and not jx["tf_imported"]  # the worker's sys.modules after a JAX run
    assert not jx["pandas_imported"]  # Keras would import it, unused (backends.UNUSED_IN_WORKER)
    assert jx["sklearn_imported"] == []  # nor Keras's wrappers, nor digits and its split (0.8 CPU-s)
    assert jx["gc_enabled"]  # off only while backends.use imported Keras
    env, s = jx["environment"], jx["summary"]
    assert env["backend"] == "jax" and env["jax"] and s["backend"] == "jax" and s["jit_compile"] is True
    # 1,437 samples: 11 full batches and one of 29 per epoch; the short batch is compiled anew
    # on its first appearance, so that execution is warm-up too.
    assert len(jx["warmups"]) == 120 and jx["warmups"][0] and jx["warmups"][11] and sum(jx["warmups"]) == 2
    # The NumPy pipeline's meter records every execution's wait for data.
    assert all(w is not None and w >= 0 for w in jx["waits"]) and s["data_wait_share"] is not None
    tf = matrices["tensorflow"]["worker"]  # the TensorFlow run: WORKER in TF_MATRIX's process
    assert tf["status"] == "completed", tf["error"]
    assert tf["environment"]["backend"] == "tensorflow"
    # tf.lite would import JAX, Keras pandas and scikit-learn, all unused: kept out; digits is read
    # from scikit-learn's file and split as it splits (engine.data.datasets.stratified_indices).
    assert not tf["jax_imported"] and not tf["pandas_imported"] and tf["sklearn_imported"] == []
    assert tf["gc_enabled"]  # off only while backends.use imported Keras
    assert s["final_val_accuracy"] > 0.9
    assert abs(s["final_val_accuracy"] - tf["summary"]["final_val_accuracy"]) <= 0.02, (s, tf["summary"])
