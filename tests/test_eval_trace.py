"""The evaluation step traced on a background thread during the first epoch
(engine.training.eval_trace): the same validation numbers, the trace off the main
thread, and the first validation's wait filed as its warm-up."""
import threading

import pytest

from tests.helpers.lazy import lazy

pytestmark = pytest.mark.tf  # lane: docs/testing.md

keras = lazy("keras")


def _run(monkeypatch, ahead: bool, **kw):
    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    from engine.config import RunConfig
    from engine.training import eval_trace
    from engine.training.train import train

    threads = []
    keras_step = TensorFlowTrainer.test_step

    def test_step(self, data):  # Python runs this once per trace of the test function
        threads.append(threading.current_thread().name)
        return keras_step(self, data)

    monkeypatch.setattr(TensorFlowTrainer, "test_step", test_step)
    monkeypatch.setattr(eval_trace, "ENABLED", ahead)
    out = train(RunConfig(model="mlp", epochs=3, **kw), lambda t, r: None, threading.Event())
    monkeypatch.undo()
    return out, threads


def test_validation_traced_ahead_gives_the_same_numbers(monkeypatch):
    plain, plain_threads = _run(monkeypatch, ahead=False)
    ahead, ahead_threads = _run(monkeypatch, ahead=True)
    assert plain_threads == ["MainThread"]                 # Keras: at the first validation
    assert ahead_threads == ["speedlab-eval-trace"]        # once, and not on the main thread
    assert plain.summary["validation_traced_ahead"] is None
    info = ahead.summary["validation_traced_ahead"]
    assert info["error"] is None and info["sec"] > 0
    for key in ("final_val_accuracy", "final_val_loss", "final_loss"):
        assert ahead.summary[key] == pytest.approx(plain.summary[key], abs=1e-6), key
    # The first validation still has its warm-up span (what is left of the trace: waiting for the
    # thread, and the graph's first run), and every second is still accounted for.
    # Executions that overlapped the thread come between them, as many as the machine's load made.
    from engine.training.recorder import SHARED_NOTE

    notes = [s[4] for s in ahead.summary["timeline"] if s[0] == "warmup"]
    assert notes[0] == "training step traced"
    assert notes[1:notes.index("validation step traced")] in ([], [SHARED_NOTE])  # one span if any
    parts = sum(ahead.summary[k] for k in ("setup_sec", "warmup_sec", "train_sec", "validation_sec", "other_sec"))
    assert parts == pytest.approx(ahead.summary["wall_sec"], abs=1e-6)


def test_executions_sharing_the_cpu_with_the_trace_are_warm_up():
    """The Recorder flags an execution that overlaps the background trace (busy at its
    begin or end) as warm-up with its own note; the others stay steady."""
    from engine.training.recorder import SHARED_NOTE, Recorder
    from engine.training.timeline import Timeline

    busy = [False]
    tl = Timeline()
    rec = Recorder(32, 4, lambda t, r: None, busy_fn=lambda: busy[0], timeline=tl)

    class M:
        stop_training = False
        optimizer = None

    rec.set_model(M())
    rec.updates.attach = lambda model: None
    rec.updates.after = lambda n: (n, 0, None)
    rec.on_train_begin()
    rec.on_epoch_begin(0)
    # busy at the begin and the end of each of 4 executions
    for b, (at_begin, at_end) in enumerate([(False, True), (True, False), (False, True), (False, False)]):
        busy[0] = at_begin
        rec.on_train_batch_begin(b)
        busy[0] = at_end
        rec.on_train_batch_end(b, {"loss": 1.0})
    # traced (its own note, busy or not); shared from its begin; shared at its end; steady
    assert rec.warmups == [True, True, True, False]
    # On the timeline: the trace, one span for the two shared executions (adjacent spans of
    # the same kind and note are one), then training.
    assert [(s[0], s[4]) for s in tl.spans if s[0] != "other"] == [
        ("setup", None), ("warmup", "training step traced"), ("warmup", SHARED_NOTE), ("train", None)]


def test_a_runs_trace_ahead_is_freed_without_the_garbage_collector():
    """The callback holds its run's EvalTraceAhead (and so the train iterator) in no reference
    cycle: a class made per run was one, and the iterator's tf.data threads then ran until a
    full collection, which waited for them (29-41 s stalls in test processes, 2026-12-06)."""
    import gc
    import weakref

    from engine.training.eval_trace import EvalTraceAhead

    class Iterator:  # stands for the prestarted tf.data iterator
        pass

    first = EvalTraceAhead(object(), Iterator(), Iterator())
    callback = first.callback()
    assert callback.ahead is first and type(EvalTraceAhead(object(), None, None).callback()) is type(callback)
    iterator = weakref.ref(first.train_iterator)
    gc.disable()
    try:
        del first, callback
        assert iterator() is None  # freed by reference counting alone
    finally:
        gc.enable()
