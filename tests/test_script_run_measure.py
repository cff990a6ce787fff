"""SpeedLabCallback measured right (issue 55): accuracy under every name Keras logs, several
fit() calls as one run, samples from the batches really run.

Digits (1,797 samples) with validation_split=0.2: Keras trains on floor(1797 * 0.8) = 1437
samples and validates on the last 360.
"""
from __future__ import annotations

import pytest


def _digits():
    import keras
    import numpy as np
    from sklearn.datasets import load_digits

    d = load_digits()
    return (d.images.astype(np.float32) / 16.0)[..., None], keras.utils.to_categorical(d.target, 10)


def _model(metrics, lr: float = 1e-2):
    import keras

    keras.utils.set_random_seed(0)
    m = keras.Sequential([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(32, activation="relu"),
                          keras.layers.Dense(10, activation="softmax")])
    m.compile(optimizer=keras.optimizers.Adam(lr), loss="categorical_crossentropy", metrics=metrics)
    return m


def _stored(run_id):
    from engine.store import Store

    with Store() as store:
        return store.get_run(run_id), store.metrics("epochs", run_id), store.metrics("executions", run_id)


@pytest.mark.tf
def test_accuracy_key_finds_every_name_keras_logs():
    from engine.training.script_fit import accuracy_key, target_key

    for name in ("accuracy", "acc", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy"):
        logs = {"loss": 1.0, name: 0.5, f"val_{name}": 0.75}
        assert (accuracy_key(logs, False), accuracy_key(logs, True)) == (name, f"val_{name}")
        assert target_key(logs, None) == f"val_{name}"
    assert accuracy_key({"loss": 1.0, "val_loss": 1.0}, True) is None
    assert target_key({"top1": 0.5, "val_top1": 0.6}, "top1") == "val_top1"
    assert target_key({"top1": 0.5}, "top1") == "top1"
    assert target_key({"val_accuracy": 0.5}, "val_top1") is None


@pytest.mark.tf
def test_acc_metric_reaches_its_target_and_short_last_batches_are_counted_as_run(store_home):
    """One fit, two checks. `metrics=["acc"]`: Keras logs acc and val_acc, and the target is read
    from them. 1437 training samples in batches of 64: 22 full batches and one of
    1437 - 22 * 64 = 29 an epoch, each counted as run."""
    from engine.training.script_run import SpeedLabCallback

    x, y = _digits()
    cb = SpeedLabCallback(name="acc", target_accuracy=0.8)
    hist = _model(["acc"]).fit(x, y, batch_size=64, epochs=3, validation_split=0.2, verbose=0, callbacks=[cb])
    run, epochs, execs = _stored(cb.run_id)
    assert "val_acc" in hist.history and "val_accuracy" not in hist.history  # what Keras logs
    assert [e["val_accuracy"] for e in epochs] == pytest.approx(hist.history["val_acc"])
    assert [e["accuracy"] for e in epochs] == pytest.approx(hist.history["acc"])
    first = next(i for i, a in enumerate(hist.history["val_acc"]) if a >= 0.8)
    s = run["summary"]
    assert s["time_to_target_sec"] == pytest.approx(epochs[first]["t"]) and s["time_to_target_note"] is None
    assert s["final_val_accuracy"] == pytest.approx(hist.history["val_acc"][-1]) and s["warnings"] == []
    # the short last batches
    assert cb._rec.samples == ([64] * 22 + [29]) * 3
    last = execs[22]  # epoch 0's short batch: its rate is 29 samples over its own duration
    assert last["samples_per_sec"] == pytest.approx(29 / last["duration"])
    assert s["end_to_end_samples_per_sec"] == pytest.approx(3 * 1437 / s["fit_sec"])


@pytest.mark.tf
def test_a_missing_target_metric_is_said_once_at_the_first_epoch_end(store_home, capfd):
    from engine.training.script_run import SpeedLabCallback

    x, y = _digits()
    cb = SpeedLabCallback(name="noval", target_accuracy=0.8)
    _model(["acc"]).fit(x[:256], y[:256], batch_size=64, epochs=2, verbose=0, callbacks=[cb])  # no validation
    run, epochs, _ = _stored(cb.run_id)
    said = [ln for ln in capfd.readouterr().err.splitlines() if ln.startswith("SpeedLab:")]
    assert said[0].startswith(f"SpeedLab: recording run #{cb.run_id} in ")  # the start line, then the warning
    lines = said[1:]
    assert len(lines) == 1 and "validation accuracy" in lines[0] and "acc, loss" in lines[0]
    assert run["summary"]["warnings"] == lines and run["plan"]["warnings"] == lines
    assert run["summary"]["time_to_target_sec"] is None
    assert run["summary"]["time_to_target_note"].startswith("not measured: validation accuracy")
    assert [e["accuracy"] is not None for e in epochs] == [True, True]  # train 'acc' is stored


@pytest.mark.tf
@pytest.mark.parametrize("initial_epoch", [0, 2])
def test_two_fits_under_one_callback_are_one_run(store_home, initial_epoch):
    """Phase 1: 2 epochs at lr 1e-5 (validation accuracy stays far below 0.8); phase 2: 3 more
    at lr 1e-2 (its own epochs 0-2, or 2-4 with initial_epoch=2). 1437 / 64 -> 23 steps an epoch."""
    from engine.training.script_run import SpeedLabCallback

    x, y = _digits()
    cb = SpeedLabCallback(name="two-phase", target_accuracy=0.8)
    m = _model(["accuracy"], lr=1e-5)
    h1 = m.fit(x, y, batch_size=64, epochs=2, validation_split=0.2, verbose=0, callbacks=[cb])
    m.optimizer.learning_rate.assign(1e-2)
    h2 = m.fit(x, y, batch_size=64, epochs=3 + initial_epoch, initial_epoch=initial_epoch, validation_split=0.2,
               verbose=0, callbacks=[cb])
    run, epochs, execs = _stored(cb.run_id)
    val = h1.history["val_accuracy"] + h2.history["val_accuracy"]
    assert [e["epoch"] for e in epochs] == [0, 1, 2, 3, 4]
    assert [e["step"] for e in epochs] == [23, 46, 69, 92, 115]
    assert [e["val_accuracy"] for e in epochs] == pytest.approx(val)
    assert all(a < b for a, b in zip([e["t"] for e in epochs], [e["t"] for e in epochs][1:]))
    s = run["summary"]
    assert run["status"] == "completed" and s["epochs_run"] == 5 and s["steps"] == 115 and len(execs) == 115
    assert max(h1.history["val_accuracy"]) < 0.8 <= max(val)  # reached in the second fit only
    first = next(i for i, a in enumerate(val) if a >= 0.8)
    assert s["time_to_target_sec"] == pytest.approx(epochs[first]["t"]) and s["time_to_target_note"] is None
    assert [sum(e["epoch"] == k for e in execs) for k in range(5)] == [23] * 5


@pytest.mark.tf
@pytest.mark.parametrize("drop", [False, True])
def test_a_tf_data_set_counts_its_batches_as_run(store_home, drop):
    """The first 1437 digits as tf.data batches of 64: 22 full and one of 29 (Keras knows the
    number of batches, not their size: the loss tracker counts them), or, with
    drop_remainder, 22 of a static 64."""
    import tensorflow as tf

    from engine.training.script_run import SpeedLabCallback

    x, y = _digits()
    ds = tf.data.Dataset.from_tensor_slices((x[:1437], y[:1437])).batch(64, drop_remainder=drop)
    cb = SpeedLabCallback(name="tfdata")
    _model(["accuracy"]).fit(ds, epochs=1, verbose=0, callbacks=[cb])
    assert cb._rec.samples == [64] * 22 + ([] if drop else [29])
    assert cb._rec.unknown_samples == 0


@pytest.mark.tf
def test_a_generator_without_length_gives_the_scripts_own_throughput(store_home):
    """A generator of 50 batches of 32 and one of 10 (1,610 samples), 20 ms of data work a
    batch: Keras knows neither its length nor its batch size."""
    import time

    import keras

    from engine.training.script_run import SpeedLabCallback

    x, y = _digits()
    yielded = []

    def batches():
        for i in range(51):
            n = 32 if i < 50 else 10
            time.sleep(0.02)
            yielded.append(n)
            yield x[i * 32:i * 32 + n], y[i * 32:i * 32 + n]

    clock = {}

    class Clock(keras.callbacks.Callback):  # the script's own clock: training's start to its (one) epoch's end
        def on_train_begin(self, logs=None):
            clock["t0"] = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            clock["t1"] = time.perf_counter()

    cb = SpeedLabCallback(name="gen")
    _model(["accuracy"]).fit(batches(), epochs=1, verbose=0, callbacks=[cb, Clock()])
    assert sum(yielded) == 1610 and sum(cb._rec.samples) == 1610
    run, _, execs = _stored(cb.run_id)
    s = run["summary"]
    assert run["status"] == "completed" and len(execs) == 51
    own = 1610 / (clock["t1"] - clock["t0"])
    assert s["end_to_end_samples_per_sec"] > 0 and s["end_to_end_samples_per_sec"] == pytest.approx(own, rel=0.05)
    assert s["samples_per_sec"] > 0 and s["global_batch_size"] == 32 and "throughput_note" not in s
    assert all(e["samples_per_sec"] > 0 for e in execs)


@pytest.mark.tf
def test_samples_it_cannot_count_give_no_throughput_with_a_reason(store_home):
    """A custom train_step that never updates Keras's loss tracker, fed by a generator: no
    batch size is known anywhere, so no throughput is stored (not a guessed one)."""
    import keras
    import tensorflow as tf

    from engine.training.script_run import SpeedLabCallback

    class Plain(keras.Sequential):
        def train_step(self, data):
            xb, yb = data
            with tf.GradientTape() as tape:
                loss = keras.losses.categorical_crossentropy(yb, self(xb, training=True))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            return {"loss": tf.reduce_mean(loss)}

    x, y = _digits()
    m = Plain([keras.Input((8, 8, 1)), keras.layers.Flatten(), keras.layers.Dense(10, activation="softmax")])
    m.compile(optimizer="adam", loss="categorical_crossentropy")
    cb = SpeedLabCallback(name="plain")
    m.fit(((x[i:i + 32], y[i:i + 32]) for i in range(0, 320, 32)), epochs=1, verbose=0, callbacks=[cb])
    run, _, execs = _stored(cb.run_id)
    s = run["summary"]
    assert run["status"] == "completed" and execs == [] and s["steps"] == 10 and s["executions"] == 10
    assert s["samples_per_sec"] is None and s["end_to_end_samples_per_sec"] is None and s.get("mfu") is None
    assert s["throughput_note"] == ("not measured: the samples of 10 of 10 executions are unknown "
                                    "(Keras did not report their batch size); those executions are not "
                                    "stored as throughput points")


def _wait_final(run_id, timeout_s: float = 10.0) -> dict:
    import time

    t0 = time.monotonic()
    while True:
        run, _, _ = _stored(run_id)
        if run["status"] not in ("queued", "running") or time.monotonic() - t0 > timeout_s:
            return run
        time.sleep(0.1)


@pytest.mark.tf
def test_a_fit_that_raises_in_a_living_process_ends_its_run_failed_at_once(store_home):
    """A generator whose fourth batch raises: the notebook (here: pytest) lives on."""
    from engine.training.script_run import SpeedLabCallback

    x, y = _digits()

    def batches():
        for i in range(10):
            if i == 3:
                raise ValueError("batch 3 is damaged\nsecond line")
            yield x[i * 32:(i + 1) * 32], y[i * 32:(i + 1) * 32]

    cb = SpeedLabCallback(name="raises")
    with pytest.raises(Exception, match="batch 3 is damaged"):
        _model(["accuracy"]).fit(batches(), epochs=1, verbose=0, callbacks=[cb])
    run = _wait_final(cb.run_id, timeout_s=5.0)
    assert run["status"] == "failed", run
    # TensorFlow wraps the generator's ValueError; its own line is the one that says what failed.
    assert run["error"] == "fit() raised: InvalidArgumentError: ValueError: batch 3 is damaged"
    assert run["summary"]["steps"] == 3  # what it measured is kept


@pytest.mark.tf
def test_a_callback_that_raises_in_a_living_process_ends_its_run_failed(store_home):
    import keras

    from engine.training.script_run import SpeedLabCallback

    class Boom(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            if batch == 2:
                raise RuntimeError("boom")

    x, y = _digits()
    cb = SpeedLabCallback(name="boom")
    with pytest.raises(RuntimeError, match="boom"):
        _model(["accuracy"]).fit(x[:320], y[:320], batch_size=32, epochs=1, verbose=0, callbacks=[cb, Boom()])
    run = _wait_final(cb.run_id, timeout_s=5.0)
    assert (run["status"], run["error"]) == ("failed", "fit() ended without finishing (it raised or was interrupted)")


@pytest.mark.tf
def test_stop_on_a_script_run_stops_training_and_never_signals_its_process(store_home):
    """runner.cancel (the page's Stop, `engine cancel`) from another thread at batch 2 of 400
    (20 ms each): training stops at a batch's end within about a second; this process (the
    script's, here pytest's) is not signalled, so the test goes on."""
    import threading
    import time

    import keras

    from engine.jobs import runner
    from engine.training.script_run import SpeedLabCallback

    x, y = _digits()
    lines, seen = [], []

    def batches():
        for i in range(400):
            time.sleep(0.02)
            yield x[:32], y[:32]

    class Ask(keras.callbacks.Callback):
        def on_train_batch_end(self, batch, logs=None):
            seen.append(batch)
            if batch == 2:
                threading.Thread(target=lambda: lines.append(runner.cancel(cb.run_id))).start()

    cb = SpeedLabCallback(name="stop")
    _model(["accuracy"]).fit(batches(), epochs=1, verbose=0, callbacks=[cb, Ask()])
    run = _wait_final(cb.run_id)
    assert lines and "stop requested" in lines[0] and "not signalled" in lines[0]
    assert run["status"] == "cancelled" and "not signalled" in run["error"]
    assert 3 <= len(seen) < 400 and run["summary"]["steps"] == len(seen)


@pytest.mark.tf
def test_the_watch_thread_ends_with_each_fit_and_the_next_fit_has_its_own(store_home):
    """The watch thread (a fit that raises, a Stop) runs while a fit runs: a process that lives
    on after its runs (a notebook) keeps no thread per finished run waking 4 times a second and
    holding the run's callback; a second fit() with the same callback is watched again."""
    import time

    import keras

    from engine.training.script_run import WATCH_S, SpeedLabCallback

    x, y = _digits()
    cb = SpeedLabCallback(name="watched")
    during = []

    class Watched(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            during.append((cb._watch, cb._watch is not None and cb._watch.is_alive()))

    m = _model(["accuracy"])
    for fit in (1, 2):
        m.fit(x[:256], y[:256], batch_size=64, epochs=1, verbose=0, callbacks=[cb, Watched()])
        thread, alive = during[-1]
        assert alive  # watched while the fit ran
        deadline = time.monotonic() + 40 * WATCH_S
        while thread.is_alive() and time.monotonic() < deadline:
            time.sleep(WATCH_S / 5)
        assert not thread.is_alive(), f"fit {fit}: the watch thread outlived its fit"
    assert during[0][0] is not during[1][0]
    run, epochs, _ = _stored(cb.run_id)
    assert run["status"] == "completed" and [e["epoch"] for e in epochs] == [0, 1]
