"""Per-replica host pipelines for simulated CPU replicas (engine.training.replica_input,
engine.data.pipeline's shard): every example once per epoch, hand-counted, and a real
2-replica fit whose validation counts every example once."""
from __future__ import annotations

import numpy as np
import pytest

from tests.helpers.lazy import lazy


pipeline = lazy("engine.data.pipeline")
replica_input = lazy("engine.training.replica_input")


def ids_of(ds, batches):
    """The example ids (x[..., 0] holds the id) of the first `batches` batches."""
    out = []
    for i, (x, _) in enumerate(ds):
        if i == batches:
            break
        out.append(sorted(int(v) for v in x.numpy()[:, 0, 0, 0]))
    return out


def data(n):
    x = np.zeros((n, 2, 2, 1), np.float32)
    x[:, 0, 0, 0] = np.arange(n)
    return x, np.arange(n, dtype=np.int32) % 3


@pytest.mark.tf
def test_each_replica_takes_its_slice_of_the_same_global_batches():
    # 23 examples, global batch 8 over 2 replicas, mixup on: replica i gets examples
    # [4i, 4i + 4) of each global batch, mixed exactly as in the one shared pipeline.
    x, y = data(23)
    kw = dict(seed=5, mixup_alpha=0.2, prefetch=False, repeat=True)
    whole = list(pipeline.train_dataset(x, y, 3, 8, 2, **kw).take(6))          # 3 epochs of 2 steps
    parts = [list(pipeline.train_dataset(x, y, 3, 8, 2, shard=(i, 2), **kw).take(6)) for i in range(2)]
    for step, (xw, yw) in enumerate(whole):
        for i in range(2):
            xs, ys = parts[i][step]
            np.testing.assert_array_equal(xs.numpy(), xw.numpy()[4 * i:4 * i + 4])
            np.testing.assert_array_equal(ys.numpy(), yw.numpy()[4 * i:4 * i + 4])


@pytest.mark.tf
def test_validation_slices_count_every_example_once():
    x, y = data(23)                                   # batches of 8, 8, 7: slices 4+4, 4+4, 3+4
    assert pipeline.splits_evenly(23, 8, 2)
    sizes = [[int(b[0].shape[0]) for b in pipeline.eval_dataset(x, y, 3, 8, 2, prefetch=False, shard=(i, 2))]
             for i in range(2)]
    assert sizes == [[4, 4, 3], [4, 4, 4]]
    seen = [v for i in range(2) for b in ids_of(pipeline.eval_dataset(x, y, 3, 8, 2, prefetch=False, shard=(i, 2)), 9)
            for v in b]
    assert sorted(seen) == list(range(23))
    assert not pipeline.splits_evenly(17, 8, 2)       # a last batch of 1 leaves a replica nothing
    assert pipeline.splits_evenly(16, 8, 2) and pipeline.splits_evenly(21, 8, 4)
    assert not pipeline.splits_evenly(1, 8, 2) and not pipeline.splits_evenly(24, 6, 4)


@pytest.mark.tf
def test_only_cpu_replicas_in_one_process_dividing_the_batch_qualify():
    assert replica_input.eligible("CPU", 2, 1, 128)
    assert not replica_input.eligible("CPU", 1, 1, 128)
    assert not replica_input.eligible("GPU", 2, 1, 128)   # real GPUs prefetch to the device
    assert not replica_input.eligible("CPU", 2, 2, 128)   # multi-worker sharding is Keras's
    assert not replica_input.eligible("CPU", 3, 1, 128)
    assert not replica_input.eligible("CPU", 2, 1, 128, cache=True)  # one cached copy per replica: no


@pytest.mark.worker
def test_two_simulated_replicas_fit_on_per_replica_pipelines(tmp_path, monkeypatch):
    """In a fresh process: a 2-replica digits fit uses per-replica host pipelines and its
    reported validation accuracy is the model's accuracy on all 180 validation examples
    (ceil(0.2 x 1797) = 360 held out: 360 // 2 = 180 test, 180 validation)."""
    import json
    import subprocess
    import sys

    code = r'''
import json, numpy as np
from engine.config import RunConfig
from engine.training import devices
cfg = RunConfig(dataset="digits", model="mlp", epochs=2, devices=2, batch_size=64, mixup_alpha=0.2)
setup = devices.configure(cfg.device_type, cfg.devices)
from engine.data import datasets
from engine.training.build import prepare
data = datasets.load(cfg)
prep = prepare(cfg, setup, data=data, fast_fit=True)
h = prep.model.fit(prep.train_ds, validation_data=prep.val_ds, epochs=2, verbose=0, shuffle=False,
                   callbacks=prep.callbacks, **prep.plan["fit_args"])
m = prep.model
compiled = {k: float(v) for k, v in m.get_metrics_result().items()}  # engine.training.keras_patches.eager_metrics_readout
eager = {k: float(v) for k, v in type(m).get_metrics_result(m).items()}  # Keras's own, eager
m.reset_metrics()
after_reset = {k: float(v) for k, v in type(m).get_metrics_result(m).items()}
pred = m.predict(data.x_val, verbose=0).argmax(1)
print(json.dumps({"split": prep.plan["input_per_replica"], "kind": [c.__name__ for c in type(prep.train_ds).__mro__],
                  "started_used": [("_speedlab_started" not in d.__dict__) for d in (prep.train_ds, prep.val_ds)],
                  "compiled": compiled, "eager": eager, "after_reset": after_reset,
                  "readout_compiled": not hasattr(m.get_metrics_result, "__self__"),  # not Keras's bound method
                  "val_acc": h.history["val_accuracy"][-1], "mine": float((pred == data.y_val).mean()),
                  "n_val": len(data.y_val), "replicas": setup.replicas}))
'''
    from engine.base.process import worker_env

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**worker_env(), "SPEEDLAB_HOME": str(tmp_path)}, cwd=str(tmp_path.parent))
    assert out.returncode == 0, out.stderr[-2000:]
    r = json.loads(out.stdout.strip().splitlines()[-1])
    assert r["replicas"] == 2 and r["split"] == {"train": True, "validation": True}
    assert "DistributedDatasetsFromFunction" in r["kind"]
    assert r["kind"][0] == "PrestartedDistributedDatasetsFromFunction"
    assert r["started_used"] == [True, True]  # fit took the iterators started in setup (iterators.prestart)
    assert r["readout_compiled"]
    # The compiled read-out of the metrics (after fit: the last validation's) equals Keras's eager one,
    # and the compiled reset zeroes the variables that Keras's own read-out sums over the replicas.
    assert r["compiled"]["accuracy"] == pytest.approx(r["val_acc"], abs=1e-6)
    assert r["compiled"] == pytest.approx(r["eager"], abs=1e-6) and r["eager"]["loss"] > 0
    assert r["after_reset"] == {"loss": 0.0, "accuracy": 0.0}
    assert r["n_val"] == 180
    assert r["val_acc"] == pytest.approx(r["mine"], abs=0.5 / 180)   # same examples, each once


@pytest.mark.tf
def test_prestarted_dataset_hands_its_started_iterator_to_the_first_iter_only():
    """iterators.prestart: Keras still sees a tf.data dataset; the first iter() is the
    iterator started in setup, later ones are new iterators from the start; a Keras
    fit on it takes the started one."""
    import keras
    import tensorflow as tf

    from engine.training import iterators
    from keras.src.trainers.data_adapters import is_tf_dataset

    ds = iterators.prestart(tf.data.Dataset.range(5), tf.distribute.get_strategy())
    assert isinstance(ds, tf.data.Dataset) and is_tf_dataset(ds)
    started = ds.__dict__["_speedlab_started"]
    assert next(started) == 0  # already running: the first iter() goes on from here
    first = iter(ds)
    assert first is started and [int(v) for v in first] == [1, 2, 3, 4]
    assert [int(v) for v in iter(ds)] == [0, 1, 2, 3, 4]  # a second iter() starts afresh
    x = np.ones((8, 3), np.float32)
    fit_ds = iterators.prestart(tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(4).repeat(),
                                tf.distribute.get_strategy())
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
    model.fit(fit_ds, steps_per_epoch=2, epochs=1, verbose=0, shuffle=False)
    assert "_speedlab_started" not in fit_ds.__dict__
