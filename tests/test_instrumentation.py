"""What measuring costs, measured: the Recorder's time in its batch hooks and the
writer thread's CPU time (benchmarks/overhead.py prints both as shares of training)."""
from __future__ import annotations

import time

import numpy as np
import pytest


def test_recorder_counts_the_time_spent_in_its_own_batch_hooks():
    """A sink that takes 30 ms per execution row runs inside on_train_batch_end: 4
    executions put at least 0.12 s into hook_sec, and not the steps themselves."""
    import keras

    from engine.training.recorder import Recorder

    def slow_sink(table, row):
        if table == "executions":
            time.sleep(0.03)

    x = np.random.default_rng(0).random((32, 4)).astype(np.float32)
    y = keras.utils.to_categorical(np.arange(32) % 2, 2)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    quick = Recorder(8, 4, lambda t, r: None)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=[quick])
    rec = Recorder(8, 4, slow_sink)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=[rec])
    assert len(rec.durations) == 4
    assert 0.12 <= rec.hook_sec < 0.12 + 0.2
    assert quick.hook_sec < 0.05  # the hooks themselves: microseconds a call


def test_writer_reports_its_threads_cpu_time_once_ended():
    from engine.training.recorder import Writer

    class Store:
        def add_metrics(self, run_id, executions=(), epochs=(), system=()):
            t = time.thread_time()
            while time.thread_time() - t < 0.05:  # 50 ms of CPU per commit, in the writer thread
                pass

        def close(self):
            pass

    w = Writer(lambda: Store(), run_id=1)
    assert w.cpu_sec is None
    w.start()
    w.push("epochs", (0,))  # committed at once
    time.sleep(0.3)
    w.push("epochs", (1,))
    w.stop(patience_s=10)
    assert w.cpu_sec == pytest.approx(0.1, abs=0.05)  # two commits; waiting costs no CPU


def test_no_full_garbage_collection_inside_fit():
    """train() freezes what setup made (gc.freeze) before fit, so no generation-2
    collection walks the imports' objects during training: measured at 190 ms inside
    the first trace of a digits run before."""
    import gc
    import threading

    import keras

    from engine.config import RunConfig
    from engine.training.train import train

    full, inside = [], [False]

    def watch(phase, info):
        if phase == "start" and info["generation"] == 2 and inside[0]:
            full.append(info)

    class Inside(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            inside[0] = True

        def on_train_end(self, logs=None):
            inside[0] = False

    gc.callbacks.append(watch)
    try:
        out = train(RunConfig(model="mlp", epochs=2), lambda t, r: None, threading.Event(),
                    extra_callbacks=[Inside()])
        frozen = gc.get_freeze_count()
    finally:
        gc.callbacks.remove(watch)
        gc.unfreeze()
    assert out.status == "completed"
    assert frozen > 10_000  # TensorFlow's and Keras's objects among them
    assert full == []
