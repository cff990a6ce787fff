"""What measuring costs, measured: the Recorder's time in its batch hooks and the
writer thread's CPU time (benchmarks/overhead.py prints both as shares of training)."""
from __future__ import annotations

import time

import numpy as np
import pytest

pytestmark = pytest.mark.tf  # lane: docs/testing.md


class FakeClock:
    """A clock that moves only when told: perf_counter and thread_time read it."""

    def __init__(self):
        self.now = 100.0

    def perf_counter(self):
        return self.now

    def thread_time(self):
        return self.now

    monotonic, sleep = staticmethod(time.monotonic), staticmethod(time.sleep)  # real waits


def test_recorder_counts_the_time_spent_in_its_own_batch_hooks(monkeypatch):
    """On a clock that moves only in the steps (0.01 s each) and in the sink (0.03 s per
    execution row, 0.5 s per epoch row), 4 executions put exactly 4 x 0.03 s into
    hook_sec: execution rows are written from the batch-end hook, the epoch row from the
    epoch hook, which is not a batch hook, and the steps are not the hooks'."""
    import keras

    from engine.training import recorder
    from engine.training.recorder import Recorder

    clock = FakeClock()
    monkeypatch.setattr(recorder, "time", clock)

    def sink(table, row):
        clock.now += 0.03 if table == "executions" else 0.5

    x = np.random.default_rng(0).random((32, 4)).astype(np.float32)
    y = keras.utils.to_categorical(np.arange(32) % 2, 2)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, activation="softmax")])
    model.compile(optimizer="sgd", loss="categorical_crossentropy")
    class Step(keras.callbacks.Callback):  # before the Recorder: each step "takes" 0.01 s
        def on_train_batch_end(self, batch, logs=None):
            clock.now += 0.01

    rec = Recorder(8, 4, sink)
    model.fit(x, y, batch_size=8, epochs=1, verbose=0, shuffle=False, callbacks=[Step(), rec])
    assert rec.hook_sec == pytest.approx(4 * 0.03, abs=1e-9)
    # Execution durations run end to end, so each after the first includes the previous row's write.
    assert rec.durations == pytest.approx([0.01, 0.04, 0.04, 0.04], abs=1e-9)


def test_writer_reports_its_threads_cpu_time_once_ended(monkeypatch):
    """On a thread clock that moves only inside commits (0.05 s each), cpu_sec is
    exactly 0.05 s per commit made; None until the thread has ended."""
    from engine.training import writer
    from engine.training.writer import Writer

    clock = FakeClock()
    monkeypatch.setattr(writer, "time", clock)
    commits = []

    class Store:
        def add_metrics(self, run_id, executions=(), epochs=(), system=()):
            commits.append(list(epochs))
            clock.now += 0.05

        def close(self):
            pass

    w = Writer(lambda: Store(), run_id=1)
    assert w.cpu_sec is None
    w.push("epochs", (0,))
    w.push("epochs", (1,))
    w.start()
    w.push("epochs", (2,))
    w.stop(patience_s=10)
    assert [row for c in commits for row in c] == [(0,), (1,), (2,)]
    assert w.cpu_sec == pytest.approx(0.05 * len(commits), abs=1e-9)


def test_no_full_garbage_collection_inside_fit(monkeypatch):
    """train() freezes what setup made (gc.freeze) before fit, so no generation-2
    collection walks the imports' objects during training: measured at 190 ms inside
    the first trace of a digits run before."""
    import gc
    import threading

    import keras

    from engine.config import RunConfig
    from engine.training import train as train_module
    from engine.training.train import train

    monkeypatch.setattr(train_module, "FREEZE_HEAP", True)  # as in a worker (conftest switches it off)

    full, inside = [], [False]

    def watch(phase, info):
        if phase == "start" and info["generation"] == 2 and inside[0]:
            full.append(info)

    class Inside(keras.callbacks.Callback):
        def on_train_begin(self, logs=None):
            inside[0] = True

        def on_train_end(self, logs=None):
            inside[0] = False

    gc.unfreeze()  # what the suite froze after earlier tests (conftest): the count below is train()'s
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
