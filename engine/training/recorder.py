"""The measuring callback: one row per execution and per epoch, handed to a sink.

Keras calls batch callbacks once per execution of `steps_per_execution`
batches (begin_step/end_step bracket the execution), so each call pair is one
execution.  The callback itself only appends tuples to a list; the worker's writer
thread (engine.training.writer) commits them to SQLite about twice a second, so
the store costs the training loop nothing measurable.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable, Optional

import keras

from engine.report.measure import execution_rate
from engine.training.loss_scale import UpdateTracker

class Recorder(keras.callbacks.Callback):
    """Times every execution and records per-execution and per-epoch metrics.

    Args:
        global_batch: samples per batch over all replicas.
        steps_per_epoch: batches per epoch (Keras reports end_step as
            begin + steps_per_execution - 1 even for a shorter last execution).
        epoch_samples: training samples per epoch (default steps_per_epoch x
            global_batch); with one replica the last batch holds the remainder.
        updates: engine.training.loss_scale.UpdateTracker (default a new one):
            applied/skipped optimizer updates and the loss scale per execution;
            `lr_fn` is read at the applied update count, which is what the
            optimizer's schedule sees; MAX_CONSECUTIVE_SKIPS skips in a row stop training.
        sink: receives ('executions' | 'epochs', row tuple); rows follow
            engine.store.EXEC_COLS / EPOCH_COLS.
        stop_event: set (e.g. by SIGTERM) to stop training at the next execution.
        target_accuracy: validation accuracy whose first crossing time is kept.
        stop_at_target: end training at the epoch whose validation first reaches
            `target_accuracy` (time-to-accuracy runs measure nothing after it).
        lr_fn: the learning rate used by global step `step` (1-based count of steps
            done), as a float; default reads the optimizer (an eager read, ~60 us).
        on_start: called with the perf_counter origin (s) when training begins.
        data_wait_fn: returns the cumulative seconds training has waited for input
            (engine.data.pipeline.DataWaitMeter.total); each execution's share is
            stored as its `data_wait` (s). None: not measured (NULL).
        timeline: an engine.training.timeline.Timeline to file every second of
            `fit` into (warm-up, train, validation, other); None: not kept.
        plain_val_loss: the compiled loss is plain categorical cross-entropy, so
            val_loss is stored as the epoch's `val_ce` too; otherwise the
            run compiles a metric named 'ce' (plain cross-entropy) and its
            'val_ce' is stored (validation is never mixed up).

        busy_fn: whether the evaluation step is being traced in the background now
            (engine.training.eval_trace); an execution that overlaps it is warm-up.

    One Recorder may serve several consecutive `fit` calls (transfer learning
    fits the frozen and the unfrozen phase separately): time, steps and
    execution numbers continue, and `expect_warmup()` marks the next execution
    as warm-up (a recompiled train step is traced again).

    After training: ``durations``/``batches``/``samples``/``warmups``/``data_waits``
    (per execution: s / count / count / flag / s or None), ``nan_at`` ((epoch, step) or None),
    ``time_to_target`` (s or None), ``epoch_logs`` (last epoch's logs),
    ``wall`` (s from the first train begin to the last train end), ``hook_sec``
    (s spent inside its own batch hooks: the instrumentation's direct cost to the
    training loop, measured).
    """

    def __init__(self, global_batch: int, steps_per_epoch: int, sink: Callable[[str, tuple], None],
                 stop_event: Optional[threading.Event] = None,
                 target_accuracy: Optional[float] = None, lr_fn: Optional[Callable[[int], float]] = None,
                 on_start: Optional[Callable[[float], None]] = None,
                 data_wait_fn: Optional[Callable[[], float]] = None,
                 epoch_samples: Optional[int] = None, timeline=None, plain_val_loss: bool = True,
                 updates: Optional[UpdateTracker] = None, stop_at_target: bool = False,
                 busy_fn: Optional[Callable[[], bool]] = None):
        super().__init__()
        self.busy_fn = busy_fn
        self._busy_begin = False
        self.updates = updates or UpdateTracker()
        self.stop_at_target = stop_at_target
        self.timeline = timeline
        self.plain_val_loss = plain_val_loss
        self._val_traced = False
        self._test_first = False
        self._prev_end = None
        self.epochs_done = 0
        self.global_batch = global_batch
        self.steps_per_epoch = steps_per_epoch
        self.epoch_samples = epoch_samples if epoch_samples is not None else steps_per_epoch * global_batch
        self.sink = sink
        self.stop_event = stop_event or threading.Event()
        self.target = target_accuracy
        self.lr_fn = lr_fn
        self.on_start = on_start
        self.data_wait_fn = data_wait_fn
        self.durations: list[float] = []
        self.batches: list[int] = []
        self.samples: list[int] = []
        self.warmups: list[bool] = []
        self.data_waits: list[Optional[float]] = []
        self._warm_next = True
        self._wait_seen = 0.0
        self.step = 0
        self.epoch = 0
        self.nan_at = None
        self.time_to_target = None
        self.epoch_logs: dict = {}
        self.t0 = None
        self._train_fn = None
        self.wall = 0.0
        self.hook_sec = 0.0

    def now(self) -> float:
        """Seconds since training began."""
        return time.perf_counter() - self.t0

    def expect_warmup(self):
        """Flag the next execution as warm-up (e.g. the first after a recompile);
        the next validation's first execution is traced again too."""
        self._warm_next = True
        self._val_traced = False

    def on_train_begin(self, logs=None):
        self.updates.attach(self.model)  # a later phase may bring a fresh optimizer
        if self.data_wait_fn is not None:
            # Keras may pull a batch before training (symbolic build): not a step's wait.
            self._wait_seen = self.data_wait_fn()
        # Keras makes the train function before on_train_begin; compile() drops it, so a new
        # one is a new trace (a catching wrapper names what it wraps).
        fn = getattr(self.model, "train_function", None)
        fn = getattr(fn, "__wrapped__", fn)
        if self.t0 is not None:  # a later fit of the same run: the clock keeps running
            recompiled = fn is not self._train_fn
            self._train_fn = fn
            if recompiled:
                self.expect_warmup()
            self._gap("between fits (recompiled for the next phase)" if recompiled else "between fits")
            return
        self._train_fn = fn
        self.t0 = time.perf_counter()
        if self.timeline is not None:
            self.timeline.add("setup", 0.0, self.timeline.at(self.t0))
        if self.on_start:
            self.on_start(self.t0)

    def on_train_end(self, logs=None):
        self.wall = self.now()
        self._gap("end of fit")

    def _gap(self, note: str, epoch: Optional[int] = None, upto: Optional[float] = None) -> None:
        """File the time since the last span as 'other', with where it was."""
        if self.timeline is not None:
            tl = self.timeline
            tl.gap(tl.at(upto if upto is not None else time.perf_counter()),
                   self.epoch if epoch is None else epoch, note)

    def on_test_begin(self, logs=None):
        self._gap("between training and validation (epoch end, validation iterator)")
        self._test_first = True
        if self.stop_event.is_set():
            # Stopped: Keras would still validate this epoch; end after one batch instead.
            self.model.stop_evaluating = True

    def on_test_batch_end(self, batch, logs=None):
        # The first validation execution of the run traces the evaluation step: warm-up.
        if self.timeline is not None and not self._val_traced and self._test_first:
            tl = self.timeline
            tl.add("warmup", tl.spans[-1][2] if tl.spans else 0.0, tl.now(), self.epoch,
                   "validation step traced")
            self._val_traced = True
        self._test_first = False

    def on_test_end(self, logs=None):
        if self.timeline is not None:
            tl = self.timeline
            tl.add("validation", tl.spans[-1][2] if tl.spans else 0.0, tl.now(), self.epoch)

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch
        self._prev_end = None

    def on_train_batch_begin(self, batch, logs=None):
        self._begin_step = batch
        self._t_begin = time.perf_counter()
        self._busy_begin = self.busy_fn is not None and self.busy_fn()
        if self._prev_end is None:  # an epoch's first execution: what came before it is not training
            self._gap("epoch start (training iterator, callbacks)", upto=self._t_begin)
        self.hook_sec += time.perf_counter() - self._t_begin

    def on_train_batch_end(self, batch, logs=None):
        t_in = time.perf_counter()
        try:
            self._batch_end(batch, logs)
        finally:
            self.hook_sec += time.perf_counter() - t_in

    def _batch_end(self, batch, logs):
        # Reading the loss waits for the device: the timestamp after it is honest. A train step
        # of the user's may report no "loss" (a GAN's d_loss, g_loss): unknown, never a NaN.
        loss = float(logs["loss"]) if logs and "loss" in logs else None
        t_end = time.perf_counter()
        # Within an epoch, end-to-end spacing includes Keras's loop and callbacks.
        start = self._prev_end if self._prev_end is not None else self._t_begin
        self._prev_end = t_end
        n, samples = self._count(batch, logs)
        dur = t_end - start
        self.step += n
        idx = len(self.durations)
        traced, self._warm_next = self._warm_next, False
        # Sharing the CPU with the evaluation step's background trace: not steady state either.
        shared = not traced and (self._busy_begin or (self.busy_fn is not None and self.busy_fn()))
        warm = traced or shared
        wait = None
        if self.data_wait_fn is not None:
            total = self.data_wait_fn()
            wait, self._wait_seen = max(0.0, total - self._wait_seen), total
        if self.timeline is not None:
            note = "training step traced" if traced else SHARED_NOTE if shared else None
            self.timeline.add("warmup" if warm else "train", self.timeline.at(start), self.timeline.at(t_end),
                              self.epoch, note)
        self.durations.append(dur)
        self.batches.append(n)
        self.samples.append(samples)
        self.warmups.append(warm)
        self.data_waits.append(wait)
        applied, skipped, scale = self.updates.after(n)
        lr = self._lr()
        self.sink("executions", (idx, self.epoch, self.step, n, t_end - self.t0, dur,
                                 None if samples is None else execution_rate(samples, 1, dur),
                                 None if loss is None else _finite(loss), lr,
                                 int(warm), wait, applied, skipped, scale))
        if loss is not None and not math.isfinite(loss):
            self.nan_at = (self.epoch + 1, self.step)
            self.model.stop_training = True
        if self.updates.stalled:  # every update skipped for a while: training has stopped in all but name
            self.model.stop_training = True
        if self.stop_event.is_set():
            self.model.stop_training = True

    def _count(self, batch: int, logs) -> tuple[int, Optional[int]]:
        """Batches and samples of the execution that ended at `batch` (samples None: unknown)."""
        end = min(batch + 1, self.steps_per_epoch)
        n = end - self._begin_step
        # A single-replica epoch may end in a short batch: count the samples really run.
        short = self.steps_per_epoch * self.global_batch - self.epoch_samples if end == self.steps_per_epoch else 0
        return n, n * self.global_batch - short

    def on_epoch_end(self, epoch, logs=None):
        logs = dict(logs or {})
        self.epoch_logs = logs
        self.epochs_done += 1
        t = self.now()
        val_acc = logs.get("val_accuracy")
        val_ce = logs.get("val_loss") if self.plain_val_loss else logs.get("val_ce")
        self.sink("epochs", (epoch, t, self.step, _f(logs.get("loss")), _f(logs.get("accuracy")),
                             _f(logs.get("val_loss")), _f(val_acc), self._lr(), _f(val_ce)))
        if self.target is not None and self.time_to_target is None and val_acc is not None \
                and reached(float(val_acc), self.target):
            self.time_to_target = t
            if self.stop_at_target:
                self.model.stop_training = True

    def _lr(self) -> Optional[float]:
        try:
            if self.lr_fn is not None:  # at the updates applied: what the optimizer's schedule sees
                return float(self.lr_fn(self.updates.applied))
            return float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
        except Exception:  # an exotic optimizer without a readable LR: record none
            return None


# Keras accuracies are float32: 171/180 correct reads 0.949999988, which must still count as 0.95.
TARGET_TOLERANCE = 1e-6


SHARED_NOTE = "trained while the validation step was traced in the background"


def reached(accuracy: float, target: float) -> bool:
    """Whether `accuracy` (a float32 ratio) reaches `target`, up to float32 rounding."""
    return accuracy >= target - TARGET_TOLERANCE


def _f(v):
    return None if v is None else _finite(float(v))


def _finite(v: float):
    return v if math.isfinite(v) else None
