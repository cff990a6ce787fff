"""The NumPy input pipeline of JAX runs (engine.data.np_pipeline), the backend speedup
lookup and the backend checks: hand-made arrays and stores, no training."""
from __future__ import annotations

import json
import time

import numpy as np
import pytest

from tests.helpers.lazy import lazy

pytestmark = pytest.mark.tf  # lane: docs/testing.md

npp = lazy("engine.data.np_pipeline")


def arrays(n=10, dtype=np.float32):
    x = np.arange(n, dtype=np.float32).reshape(n, 1, 1, 1)
    if dtype == np.uint8:
        x = (x * 20).astype(np.uint8)
    return x, (np.arange(n) % 3).astype(np.int32)


def ids(batch):
    """The sample numbers in a batch (x holds them, scaled back)."""
    return [int(round(v)) for v in batch[0].reshape(-1)]


def epoch_ids(ds, epoch):
    return [i for b in range(ds.steps) for i in ids(ds.batch(epoch, b))]


def test_seeded_shuffle_is_a_fresh_permutation_each_epoch_and_reproducible():
    x, y = arrays(10)
    a = npp.train_dataset(x, y, 3, 4, replicas=1, seed=7, prefetch=False)
    b = npp.train_dataset(x, y, 3, 4, replicas=1, seed=7)  # prefetching changes nothing
    assert a.steps == 3 and len(a) == 3  # 4 + 4 + the short last batch of 2
    e0, e1 = epoch_ids(a, 0), epoch_ids(a, 1)
    assert sorted(e0) == sorted(e1) == list(range(10)) and e0 != e1
    assert e0 == epoch_ids(b, 0) and [ids(b[i]) for i in range(3)] == [ids(a[i]) for i in range(3)]
    assert e0 != epoch_ids(npp.train_dataset(x, y, 3, 4, replicas=1, seed=8), 0)
    # The order is numpy's permutation from (seed, epoch).
    assert e0 == list(np.random.default_rng([7, 0]).permutation(10))


def test_batches_one_hot_labels_and_scale_uint8():
    x, y = arrays(6, np.uint8)
    xb, yb = npp.train_dataset(x, y, 3, 6, replicas=1, seed=0, prefetch=False)[0]
    assert xb.dtype == np.float32 and yb.dtype == np.float32 and yb.shape == (6, 3)
    assert xb.max() == pytest.approx(100 / 255) and set(yb.sum(1)) == {1.0}
    idx = np.random.default_rng([0, 0]).permutation(6)
    assert np.array_equal(yb.argmax(1), y[idx]) and np.allclose(xb.reshape(-1), x[idx].reshape(-1) / 255)
    cached = npp.train_dataset(x, y, 3, 6, replicas=1, seed=0, cache=True, prefetch=False)
    assert np.array_equal(cached[0][0], xb)  # preprocessed once up front: same batches


def test_several_replicas_drop_the_remainder_and_evaluation_pads_with_zero_weights():
    x, y = arrays(10)
    train = npp.train_dataset(x, y, 3, 4, replicas=2, seed=0)
    assert train.steps == 2 and all(len(train.batch(0, i)[0]) == 4 for i in range(2))
    ev = npp.eval_dataset(x, y, 3, 4, replicas=4)  # batches of 4, 4 and 2 -> padded to 4
    assert ev.steps == 3 and ids(ev[0]) == [0, 1, 2, 3] and len(ev[0]) == 2
    xb, yb, w = ev[2]
    assert ids((xb,)) == [8, 9, 0, 0] and list(w) == [1, 1, 0, 0] and yb[2:].sum() == 0
    assert len(npp.eval_dataset(x, y, 3, 4, replicas=1)[2][0]) == 2  # one replica: kept short, unpadded


def test_repeat_runs_epoch_after_epoch():
    x, y = arrays(10)
    ds = npp.train_dataset(x, y, 3, 4, replicas=1, seed=3).repeat()
    assert ds.num_batches is None
    got = [i for k in range(6) for i in ids(ds[k])]
    assert got == epoch_ids(ds, 0) + epoch_ids(ds, 1)


def test_host_mixup_mixes_rows_that_still_sum_to_one():
    x, y = arrays(8)
    xb, yb = npp.train_dataset(x, y, 3, 8, replicas=1, seed=0, mixup_alpha=0.4, prefetch=False)[0]
    assert np.allclose(yb.sum(1), 1.0) and (yb.max(1) < 0.999).sum() > 0
    again = npp.train_dataset(x, y, 3, 8, replicas=1, seed=0, mixup_alpha=0.4, prefetch=False)[0]
    assert np.array_equal(again[1], yb)


def test_meter_counts_the_whole_preparation_without_prefetch_and_only_the_wait_with_it(monkeypatch):
    x, y = arrays(40)
    slow = npp.ArrayBatches.batch

    def batch(self, epoch, i):
        time.sleep(0.05)
        return slow(self, epoch, i)

    monkeypatch.setattr(npp.ArrayBatches, "batch", batch)
    meter = npp.DataWaitMeter()
    ds = npp.train_dataset(x, y, 3, 4, replicas=1, seed=0, prefetch=False, meter=meter)
    for k in range(4):
        ds[k]
    assert 0.2 <= meter.total() < 0.4  # 4 batches x 50 ms, all waited for
    meter = npp.DataWaitMeter()
    ds = npp.train_dataset(x, y, 3, 4, replicas=1, seed=0, meter=meter)  # 4 threads prepare ahead
    ds[0]
    time.sleep(0.3)  # "compute" while the next batches are prepared
    first = meter.total()
    for k in range(1, 4):
        ds[k]
    assert first >= 0.05 and meter.total() - first < 0.05  # the later batches were ready


def test_input_rate_is_batches_per_second():
    x, y = arrays(64)
    rate = npp.input_rate(npp.train_dataset(x, y, 3, 4, replicas=1, seed=0))
    assert rate is not None and rate > 10
    assert npp.input_rate(npp.train_dataset(x[:4], y[:4], 3, 4, replicas=1, seed=0)) is None


# --- backend speedup and checks -------------------------------------------------------

def _completed(store, cfg, sps, host="hostA"):
    rid = store.create_run(cfg.to_json(), status="running")
    store.update_run(rid, environment={"hostname": host})
    store.finish_run(rid, "completed", None, summary={"samples_per_sec": sps})
    return rid


def test_backend_speedup_compares_the_same_configuration_across_backends(store):
    from engine.config import RunConfig
    from engine.report.pair import backend_speedup

    base = RunConfig(model="mlp", epochs=2)
    tf_run = _completed(store, base, 1000.0)
    _completed(store, base.replace(batch_size=64), 5000.0)  # another configuration: never the reference
    _completed(store, base.replace(backend="jax"), 9000.0, host="hostB")  # another machine: neither
    jax_run = _completed(store, base.replace(backend="jax"), 1500.0)
    b = backend_speedup(store, jax_run)
    assert (b["baseline_id"], b["run_id"], b["throughput_speedup"]) == (tf_run, jax_run, 1.5)
    assert (b["backend"], b["other_backend"], b["other_jit_compile"]) == ("JAX", "TensorFlow", False)
    # The other way round, and XLA on TensorFlow still counts as the same configuration.
    xla = _completed(store, base.replace(jit_compile=True), 1200.0)
    assert backend_speedup(store, jax_run)["baseline_id"] == xla  # the newest
    assert backend_speedup(store, tf_run)["throughput_speedup"] == pytest.approx(1000 / 1500)
    assert backend_speedup(store, _completed(store, base.replace(epochs=3), 1.0)) is None


def test_backend_config_rules():
    from engine.config import RunConfig, baseline_config
    from engine.base.errors import ConfigError

    j = RunConfig(backend="jax", precision="mixed_bfloat16", devices=2, steps_per_execution=4)
    assert j.jit_compile is True  # JAX always compiles with XLA
    b = baseline_config(j)
    assert (b.backend, b.precision, b.devices, b.steps_per_execution) == ("jax", "float32", 1, 1)
    assert RunConfig.from_json(j.to_json()) == j and json.loads(j.to_json())["backend"] == "jax"
    with pytest.raises(ConfigError, match="about 6 GB of CUDA libraries"):
        RunConfig(backend="pytorch")
    with pytest.raises(ConfigError, match="MultiWorkerMirroredStrategy, which is TensorFlow-only"):
        RunConfig(backend="jax", workers=2)
    with pytest.raises(ConfigError, match="TPUStrategy"):
        RunConfig(backend="jax", device_type="tpu")


def test_preflight_needs_the_backend_installed_and_whole_gpus_for_jax():
    from engine.config import RunConfig
    from engine.base.errors import ConfigError
    from engine.config.preflight import check_runnable

    cpu = {"gpus": 0, "tpu": False, "cpu_bf16": True, "backends": {"tensorflow": "2.21.0", "jax": None}}
    with pytest.raises(ConfigError, match=r"backend: 'jax' is not installed.*jax==0\.10\.2.*or use backend "
                                          r"tensorflow"):
        check_runnable(RunConfig(backend="jax"), cpu)
    jax_only = {"gpus": 1, "tpu": False, "backends": {"tensorflow": None, "jax": "0.11.0"}}
    with pytest.raises(ConfigError, match="backend: 'tensorflow' is not installed.*or use backend jax"):
        check_runnable(RunConfig(), jax_only)
    with pytest.raises(ConfigError, match="JAX cannot split a GPU"):
        check_runnable(RunConfig(backend="jax", devices=2), jax_only)
    both = {**cpu, "backends": {"tensorflow": "2.21.0", "jax": "0.10.2"}}
    # Simulated CPU devices compile fine under JAX (TensorFlow refuses XLA over logical devices).
    warnings = check_runnable(RunConfig(backend="jax", devices=2), both)
    assert any("simulated" in w for w in warnings)


def test_backend_verdicts():
    from engine.hardware.verdicts import backend_verdicts

    cpu = {"gpus": [], "backends": {"tensorflow": {"version": "2.21.0", "devices": ["CPU"]},
                                    "jax": {"version": "0.10.2", "platform": "cpu", "devices": ["cpu:0 (cpu)"]}}}
    tf, jx = backend_verdicts(cpu)
    assert (tf["backend"], tf["verdict"], jx["backend"], jx["verdict"]) == ("tensorflow", "neutral", "jax", "measure")
    assert "13-15 s" in jx["reason"] and jx["devices"] == ["cpu:0 (cpu)"]
    gpu = {"gpus": [{"name": "H200", "compute_capability": [9, 0]}],
           "backends": {"jax": {"version": "0.11.0", "platform": "gpu", "devices": ["gpu:0 (NVIDIA H200)"]}}}
    tf, jx = backend_verdicts(gpu)
    assert tf["verdict"] == "unavailable" and jx["verdict"] == "measure" and "20-350%" in jx["reason"]
    cpu_only_jax = {**gpu, "backends": {"jax": {"version": "0.10.2", "platform": "cpu", "devices": []}}}
    assert backend_verdicts(cpu_only_jax)[1]["verdict"] == "unavailable"
    assert backend_verdicts({"gpus": []})[1]["verdict"] == "unavailable"  # JAX not installed
