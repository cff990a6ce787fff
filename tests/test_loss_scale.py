"""Skipped optimizer updates under float16 loss scaling are recorded per
execution, a run whose updates are all skipped stops as failed, and the LR
record follows the updates really applied."""
import math
import re
import threading

import pytest

from engine.config import RunConfig
from tests.helpers.lazy import lazy


keras = lazy("keras")
tf = lazy("tensorflow")
loss_scale = lazy("engine.training.loss_scale")
recorder = lazy("engine.training.recorder")


def _poison_class():
    class Poison(keras.layers.Layer):
        """Identity forward; backward multiplies the gradient by `gate` (a variable):
        gate = inf makes every gradient below this layer non-finite, so the loss
        scale optimizer skips the update while the loss itself stays finite."""

        def __init__(self, gate, **kwargs):
            super().__init__(**kwargs)
            self.gate = gate

        def call(self, x):
            gate = self.gate

            @tf.custom_gradient
            def f(v):
                def grad(dy):
                    return dy * tf.cast(gate, dy.dtype)
                return tf.identity(v), grad

            return f(x)

    return Poison


def poisoned_model(gate, shape=(8, 8, 1), classes=10):
    from engine.training import models

    inp = keras.Input(shape)
    x = keras.layers.Flatten()(inp)
    x = keras.layers.Dense(16, activation="relu")(x)
    x = _poison_class()(gate)(x)
    return keras.Model(inp, models.head(x, classes))


def PoisonFirst(gate, k):  # noqa: N802 - a Keras callback, made when Keras is first needed
    """Non-finite gradients for the first `k` batches of the run, finite after."""

    class _PoisonFirst(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.gate, self.k, self.seen = gate, k, 0

        def on_train_batch_begin(self, batch, logs=None):
            self.gate.assign(math.inf if self.seen < self.k else 1.0)
            self.seen += 1

    return _PoisonFirst()


@pytest.fixture
def float16():
    keras.mixed_precision.set_dtype_policy("mixed_float16")
    yield
    keras.mixed_precision.set_dtype_policy("float32")


def digits_batches(n=12 * 16):
    from engine.data.datasets import digits

    x, y = digits()
    return x[:n], keras.utils.to_categorical(y[:n], 10)


@pytest.mark.tf  # lane: docs/testing.md
def test_ten_forced_skips_are_recorded_and_the_lr_follows_applied_updates(float16):
    gate = tf.Variable(1.0, trainable=False)
    model = poisoned_model(gate)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="categorical_crossentropy")
    assert type(model.optimizer).__name__ == "LossScaleOptimizer"  # Keras wraps it under mixed_float16
    rows = []
    # 192 samples in batches of 16: 12 batches an epoch, 24 over 2 epochs; LR = 0.001 x updates applied.
    rec = recorder.Recorder(16, 12, lambda table, row: rows.append((table, row)), lr_fn=lambda u: 0.001 * u)
    x, y = digits_batches()
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=[PoisonFirst(gate, 10), rec])
    ex = [r for t, r in rows if t == "executions"]
    assert len(ex) == 24 and ex[-1][2] == 24                      # 24 batches run ...
    assert int(model.optimizer.iterations.numpy()) == 14           # ... 14 updates applied
    assert [r[11] for r in ex] == [0] * 10 + list(range(1, 15))    # updates applied so far
    assert [r[12] for r in ex] == [1] * 10 + [0] * 14              # skipped in each execution
    # The scale starts at 2**15 and halves at every skip: 2**14 ... 2**5, then stays (grows after 2,000).
    assert [r[13] for r in ex] == [2.0 ** (14 - i) for i in range(10)] + [32.0] * 14
    assert ex[-1][8] == pytest.approx(0.014)                       # LR at 14 updates, not at 24 batches
    ep = [r for t, r in rows if t == "epochs"]
    assert [r[2] for r in ep] == [12, 24] and ep[-1][7] == pytest.approx(0.014)
    assert (rec.updates.applied, rec.updates.skipped, rec.updates.stalled) == (14, 10, False)


@pytest.mark.tf  # lane: docs/testing.md
def test_consecutive_skips_stop_training_with_the_cause_and_fixes(float16):
    gate = tf.Variable(math.inf, trainable=False)
    model = poisoned_model(gate)
    model.compile(optimizer=keras.optimizers.SGD(0.01), loss="categorical_crossentropy")
    rows = []
    rec = recorder.Recorder(16, 12, lambda table, row: rows.append(row), updates=loss_scale.UpdateTracker(max_consecutive=5))
    x, y = digits_batches()
    model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0, callbacks=[rec])
    assert rec.updates.stalled and rec.step == 5 and rec.nan_at is None  # stopped after 5, the loss finite
    # 5 halvings of 2**15: 2**10 = 1024.
    assert rec.updates.stall_message() == (
        "gradients non-finite for 5 consecutive steps under float16 loss scaling (loss scale 1024, 0 updates "
        "applied); try mixed_bfloat16, float32 or a lower learning rate")


@pytest.mark.tf  # lane: docs/testing.md
def test_a_run_whose_updates_are_all_skipped_ends_failed(float16, monkeypatch):
    from engine.training import models
    from engine.training.train import train

    gate = tf.Variable(math.inf, trainable=False)
    monkeypatch.setattr(models, "build", lambda name, shape, classes, **kw: poisoned_model(gate, shape, classes))
    rows = []
    # digits: 1,437 training samples / 128 = 12 steps per epoch; 5 epochs = 60 steps, enough for 50 skips.
    cfg = RunConfig(model="mlp", precision="mixed_float16", optimizer="sgd", epochs=5, device_type="cpu")
    out = train(cfg, lambda table, row: rows.append((table, row)), threading.Event())
    assert out.status == "failed"
    # 50 halvings of 2**15: 2**-35 = 2.91038e-11.
    assert out.error == ("gradients non-finite for 50 consecutive steps under float16 loss scaling (loss scale "
                         "2.91038e-11, 0 updates applied); try mixed_bfloat16, float32 or a lower learning rate")
    s = out.summary
    assert (s["steps"], s["updates_applied"], s["skipped_updates"]) == (50, 0, 50)
    assert s["loss_scale"] == 2.0 ** -35
    assert all(r[12] == 1 for t, r in rows if t == "executions")


@pytest.mark.tf  # lane: docs/testing.md
def test_nan_after_skipped_updates_says_so(float16):
    from engine.training.train import train

    rows = []
    # The reported case: SGD at learning rate 10 under float16 diverges within a few epochs.
    cfg = RunConfig(model="mlp", precision="mixed_float16", optimizer="sgd", learning_rate=10.0, epochs=20,
                    device_type="cpu")
    out = train(cfg, lambda table, row: rows.append((table, row)), threading.Event())
    assert out.status == "failed"
    m = re.fullmatch(r"loss became NaN at epoch (\d+), step (\d+) after (\d+) skipped updates \(gradients "
                     r"overflowed float16; loss scale (\S+)\); try mixed_bfloat16, float32 or a lower learning "
                     r"rate", out.error)
    assert m, out.error
    skipped = int(m.group(3))
    s = out.summary
    assert int(m.group(2)) == s["steps"] and skipped == s["skipped_updates"] == s["steps"] - s["updates_applied"]
    ex = [r for t, r in rows if t == "executions"]
    assert sum(r[12] for r in ex) == skipped and ex[-1][11] == s["updates_applied"]
    # Fewer than 2,000 steps: the scale only ever halved, once per skipped update.
    assert float(m.group(4)) == pytest.approx(2.0 ** (15 - skipped)) == s["loss_scale"]


@pytest.mark.worker
def test_a_jax_float16_run_reads_its_updates_and_completes(tmp_path, monkeypatch):
    """On JAX, Keras keeps the model's state off its variables during an epoch: reading the loss-scale
    optimizer's iterations there failed every JAX float16 run ("'NoneType' object is not callable";
    seen as two failed autopilot trials on mnist5k). The tracker syncs the state first."""
    import json

    from tests.helpers import cli

    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    # The CLI in this process: the run trains in the worker it queues (float16 never in here).
    out = cli.engine("run", "--backend", "jax", "--precision", "mixed_float16", "--model", "mlp", "--epochs", "1",
                     "--allow-slow", "--json", "--quiet")
    assert out.returncode == 0, out.stderr[-2000:]
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["status"] == "completed"
    from engine.store import Store

    s = Store(tmp_path / "runs.sqlite")
    try:
        execs = s.metrics("executions", res["run_id"])
    finally:
        s.close()
    # 1,437 digits training samples at batch 128: 12 steps, every update applied (digits never overflows).
    assert execs and execs[-1]["updates"] == 12 and execs[-1]["loss_scale"] is not None
