"""A user's fit() as it comes: a train step that logs no "loss", fits that train different
weights, a generator's batch size, a model's own dtype policy and layers the FLOP counter
does not know (found by trying keras-io's examples, 2026-12-07)."""
from __future__ import annotations

import pytest

pytestmark = pytest.mark.tf


def _data(n: int = 320):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 64)).astype("float32")
    return x, np.eye(10, dtype="float32")[rng.integers(0, 10, n)]


def _stored(run_id):
    from engine.store import Store

    with Store() as store:
        return store.get_run(run_id), store.metrics("executions", run_id)


def test_a_train_step_that_logs_no_loss_trains_every_batch(store_home):
    """keras-io's GAN returns {"d_loss", "g_loss"}: the run recorded 1 of 79 batches and
    stopped training (a missing loss read as NaN). 320 samples / 32 = 10 batches x 2 epochs."""
    import keras
    import tensorflow as tf

    from engine.training.script_run import SpeedLabCallback

    class TwoLosses(keras.Sequential):
        def train_step(self, data):
            xb, yb = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(keras.losses.categorical_crossentropy(yb, self(xb, training=True)))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"d_loss": loss, "g_loss": 2 * loss}

    x, y = _data()
    m = TwoLosses([keras.Input((64,)), keras.layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam")
    cb = SpeedLabCallback(name="gan-like", batch_size=32)
    m.fit(x, y, batch_size=32, epochs=2, verbose=0, callbacks=[cb])
    run, execs = _stored(cb.run_id)
    assert int(m.optimizer.iterations.numpy()) == 20
    assert run["status"] == "completed" and run["summary"]["steps"] == 20 and len(execs) == 20
    assert all(e["loss"] is None for e in execs) and cb._rec.nan_at is None


def test_fits_that_train_different_weights_have_no_flops_figure_and_a_recompile_is_warm_up(store_home):
    """Dense 64->32 frozen, then trainable: the first fit trains 32 x 10 + 10 = 330 scalars, the
    second 64 x 32 + 32 + 330 = 2,410. compile() between them makes a new train function: the
    second fit's first execution is traced again (warm-up); a third fit without compile is not."""
    import keras

    from engine.training.script_run import SpeedLabCallback

    x, y = _data()
    keras.utils.set_random_seed(0)
    base = keras.layers.Dense(32, activation="relu")
    m = keras.Sequential([keras.Input((64,)), base, keras.layers.Dense(10, activation="softmax")])
    base.trainable = False
    m.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    cb = SpeedLabCallback(name="fine-tune")
    m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[cb])
    base.trainable = True
    m.compile(optimizer="adam", loss="categorical_crossentropy", metrics=["accuracy"])
    m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[cb])
    m.fit(x, y, batch_size=32, epochs=1, verbose=0, callbacks=[cb])
    run, execs = _stored(cb.run_id)
    s = run["summary"]
    assert len(execs) == 30 and [i for i, e in enumerate(execs) if e["warmup"]][:1] == [0]
    assert execs[10]["warmup"] == 1 and execs[20]["warmup"] == 0  # compiled again / the same function
    notes = [note for kind, _, _, _, note in s["timeline"] if kind == "other" and note and "between fits" in note]
    assert notes == ["between fits (recompiled for the next phase)", "between fits"]
    assert s["flops_per_sample"] is None and s.get("mfu") is None
    assert s["flops_note"] == ("MFU not shown: the fit() calls trained different weights (330 to 2,410 trainable "
                               "scalars), so no one FLOPs-per-sample figure is the run's")


def test_a_generators_batch_size_is_stored_as_counted_and_own_layers_are_listed(store_home):
    """Batches of 64 from a generator (Keras knows no batch size: the run was stored at its
    default 32), through a layer of the user's own with a weight (not counted: listed, MFU a
    lower bound; the list was lost under another key). Counted: Dense 64 -> 10, 2 x 3 x 640."""
    import keras

    from engine.training.script_run import SpeedLabCallback

    class Scale(keras.layers.Layer):
        def build(self, shape):
            self.w = self.add_weight(shape=(shape[-1],), initializer="ones")

        def call(self, v):
            return v * self.w

    x, y = _data()
    m = keras.Sequential([keras.Input((64,)), Scale(name="scale"), keras.layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="categorical_crossentropy")
    cb = SpeedLabCallback(name="gen")
    m.fit(((x[i:i + 64], y[i:i + 64]) for i in range(0, 320, 64)), epochs=1, verbose=0, callbacks=[cb])
    run, _ = _stored(cb.run_id)
    s = run["summary"]
    assert run["config"]["batch_size"] == 64 and run["plan"]["global_batch_size"] == 64
    assert s["global_batch_size"] == 64
    assert s["flops_uncounted"] == ["scale"] and s["flops_per_sample"] == 3 * 2 * 64 * 10


def test_a_models_dtype_policy_is_read_by_its_own_names():
    """The plan read "computepolicy_dtype" (no such attribute): float32 always, so a bf16 script's
    MFU was divided by the float32 peak (half the bf16 one here: about 2x too high)."""
    import keras

    from engine.training.script_fit import policy_dtype

    class Model:
        dtype_policy = keras.DTypePolicy("mixed_bfloat16")

    assert (policy_dtype(Model(), "compute"), policy_dtype(Model(), "variable")) == ("bfloat16", "float32")
