"""Everything composes: precision x label smoothing x mixup x replicas.

Runs in one fresh worker-like process (device layout is per process): two
logical CPU devices, then for each combination of an all-pairs cover of the 24
(tests/helpers/combinations.py: 9) the engine's own `prepare` builds data, model
and optimizer, and two real steps are trained.
"""
import json
import subprocess
import sys
import textwrap

import pytest

from tests.helpers.combinations import COMBINATIONS, uncovered_pairs

pytestmark = pytest.mark.worker  # lane: docs/testing.md

SCRIPT = textwrap.dedent("""
    import json, sys
    import tensorflow as tf
    cpus = tf.config.list_physical_devices("CPU")
    tf.config.set_logical_device_configuration(cpus[0], [tf.config.LogicalDeviceConfiguration()] * 2)
    import keras
    from engine.config import RunConfig
    from engine.training.devices import DeviceSetup
    from engine.training.build import prepare

    class FirstLoss(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            self.losses = getattr(self, "losses", []) + [float(logs["loss"])]

    out = []
    for precision, eps, alpha, replicas in json.loads(sys.argv[1]):
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
    print(json.dumps(out))
""")


@pytest.fixture(scope="module")
def results():
    from engine.jobs.runner import worker_env

    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(COMBINATIONS)], capture_output=True, text=True, timeout=600,
                          env=worker_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_combinations_cover_every_pair_of_settings():
    assert uncovered_pairs() == []
    assert uncovered_pairs(COMBINATIONS[:-1]) == [(("precision", "float32"), ("replicas", 2)),
                                                  (("alpha", 0.0), ("replicas", 2))]


def test_every_pair_of_settings_train_two_steps(results):
    assert len(results) == len(COMBINATIONS)
    for r in results:
        assert len(r["losses"]) == 2 and all(x == x and x < 10 for x in r["losses"]), r
        assert r["out_dtype"] == "float32"  # the head, and so the loss, is float32 under every policy
        assert r["compute"] == {"float32": "float32", "mixed_float16": "float16",
                                "mixed_bfloat16": "bfloat16"}[r["precision"]]


def test_first_step_loss_matches_float32_single_device(results):
    ref = {(r["eps"], r["alpha"]): r["losses"][0] for r in results
           if r["precision"] == "float32" and r["replicas"] == 1}
    for r in results:
        assert abs(r["losses"][0] - ref[(r["eps"], r["alpha"])]) <= 1e-2, r


def test_smoothing_and_mixup_are_really_applied(results):
    # Neither option may be silently ignored: mixup mixes label rows (each still sums to 1),
    # label smoothing sits in the loss on those float32 one-hot rows.
    for r in results:
        assert r["row_sum_err"] < 1e-5, r
        assert (r["mixed_rows"] > 0) == (r["alpha"] > 0), r
        assert r["smoothing"] == pytest.approx(r["eps"]), r
