"""SpeedLabCallback: records any user script's `model.fit` as a SpeedLab run (issue 44, part 2).

The public import is ``from speedlab import SpeedLabCallback`` (speedlab/__init__.py). The callback
reuses the worker's measuring code: engine.training.recorder.Recorder times every execution and its
Writer thread commits the rows (the same append-only design, so the loop pays no more than a
worker-run does); engine.training.summary builds the same summary a worker stores.

It never makes the user's training fail: every store error is caught, and a home it cannot write
to gives one warning, after which it does nothing.

Environment (the contract with ``python -m engine pairs``; all optional): SPEEDLAB_HOME (the store
folder), SPEEDLAB_GROUP (the run's group_id), SPEEDLAB_ROLE ('baseline' or 'run'), SPEEDLAB_RUN_FILE
(``{"run_id": N, "store": PATH}`` written there, atomically, once the run row exists), SPEEDLAB_SEED (the seed the
script used; kept in the config).

The run's config is a RunConfig dict filled with what the callback can read (backend, precision,
global batch size, epochs, steps per execution, learning rate, target, seed); its plan holds
``source: "callback"`` and the script's name, which readers show as "from an outside script".
"""
from __future__ import annotations

import json
import os
import re
import sys
import threading
import time
import traceback
import warnings
from types import SimpleNamespace
from typing import Optional

import keras

from engine.base.lines import one_line
from engine.store.rows import OUTSIDE_SCRIPT_SOURCE  # stdlib only: nothing heavy in the user's script

LABEL = "from an outside script"


def write_run_file(path: str, run_id: int, store: Optional[str] = None) -> None:
    """Write ``{"run_id": N, "store": PATH}`` to `path` atomically (a temp file, then
    os.replace): the run and the store it is in (`python -m engine pairs` takes a side's run
    only from its own store)."""
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as fh:
        json.dump({"run_id": run_id, **({"store": store} if store else {})}, fh)
    os.replace(tmp, path)


def _global_batch(model) -> Optional[int]:
    """The global batch size of the running `fit`, read from fit's own frame (batch_size, or the
    first dimension of x / a tf.data element spec); None when it cannot be read."""
    import inspect

    frame = inspect.currentframe()
    try:
        while frame is not None:
            if frame.f_code.co_name == "fit" and "batch_size" in frame.f_locals:
                loc = frame.f_locals
                x = loc.get("x")
                if hasattr(x, "element_spec"):  # tf.data: the batch is inside the data set
                    spec = x.element_spec
                    first = spec[0] if isinstance(spec, tuple) else spec
                    n = getattr(first, "shape", [None])[0]
                    if n is not None:
                        return int(n)
                    b = getattr(x, "_batch_size", None)
                    return int(b) if b is not None else None
                if loc.get("batch_size"):
                    return int(loc["batch_size"])
                if hasattr(x, "__next__") or isinstance(x, keras.utils.PyDataset):
                    return None  # a generator or PyDataset: its batches are its own
                return 32  # Keras's default for arrays
            frame = frame.f_back
    finally:
        del frame
    return None


def _replicas() -> int:
    """Model replicas of the strategy or distribution in use (1 without one)."""
    if keras.backend.backend() == "tensorflow" and "tensorflow" in sys.modules:
        import tensorflow as tf

        return int(tf.distribute.get_strategy().num_replicas_in_sync)
    if keras.backend.backend() == "jax":
        dist = keras.distribution.distribution()
        if dist is not None:
            return len(getattr(dist, "device_mesh").devices.flatten())
    return 1


def _lr(model) -> Optional[float]:
    try:
        lr = model.optimizer.learning_rate
        return float(keras.ops.convert_to_numpy(lr))
    except Exception:  # noqa: BLE001 - a schedule or no optimizer: unknown
        return None


# Where Keras logs accuracy: compile(metrics=["accuracy"]) logs 'accuracy', ["acc"] logs 'acc'
# (keras #6104), an explicit metric object logs its own name. Validation adds 'val_'.
ACCURACY_KEYS = ("accuracy", "acc", "sparse_categorical_accuracy", "categorical_accuracy", "binary_accuracy")


def accuracy_key(logs: dict, validation: bool) -> Optional[str]:
    """The key of `logs` holding accuracy (with 'val_': validation accuracy): the first of
    ACCURACY_KEYS that Keras logged; None when none is there."""
    prefix = "val_" if validation else ""
    return next((prefix + k for k in ACCURACY_KEYS if prefix + k in logs), None)


def target_key(logs: dict, target_metric: Optional[str]) -> Optional[str]:
    """The key of `logs` the target is checked against: `target_metric` (its 'val_' form first,
    when it was named without one and validation logs it), else validation accuracy under any
    name Keras logs; None when it is not there."""
    if not target_metric:
        return accuracy_key(logs, True)
    if not target_metric.startswith("val_") and "val_" + target_metric in logs:
        return "val_" + target_metric
    return target_metric if target_metric in logs else None


def _fit_frame():
    """The frame of the innermost running `fit` (Keras's trainer), or None."""
    import inspect

    frame = inspect.currentframe()
    try:
        while frame is not None:
            if frame.f_code.co_name == "fit" and "epoch_iterator" in frame.f_locals:
                return frame
            frame = frame.f_back
    finally:
        del frame
    return None


class _ScriptRecorder:
    """Mixed into engine.training.recorder.Recorder (built in SpeedLabCallback._begin) for a
    user's script: accuracy under every name Keras logs, epochs that continue over several fit()
    calls, and samples counted from the batches really run.

    Samples per execution come, in this order, from: the training data's known sizes (arrays:
    Keras's data adapter knows every batch, the last one short), when fit runs the data's own
    number of batches; Keras's loss tracker, which every built-in train step updates with the
    batch's real size (a generator or tf.data without length; not on JAX, which syncs it only
    at epoch end); else None (unknown; the run's throughput is then None with a reason).
    """

    target_metric: Optional[str] = None
    on_missing_target = None  # called once with a one-line message when the target metric is absent

    def _setup_script(self):
        self._shift = 0
        self._last_epoch = -1
        self._first_epoch_of_fit = True
        self._known = None
        self._count_seen = 0.0
        self.unknown_samples = 0  # executions whose samples could not be counted
        self.target_missing: Optional[str] = None
        self.fit_sizes: list[Optional[int]] = []  # samples in each fit's epoch (its training-set size)
        self._size_pending = False
        self._epoch_seen: Optional[int] = 0

    def read_fit(self, params: dict) -> None:
        """At each fit's start: its steps per epoch (None: Keras does not know them) and the
        sizes of its batches when the data adapter knows them."""
        steps = params.get("steps")
        self.steps_per_epoch = int(steps) if steps else None
        self._first_epoch_of_fit = True
        self._known = None
        self._size_pending = True
        frame = _fit_frame()
        try:
            adapter = getattr(frame.f_locals.get("epoch_iterator"), "data_adapter", None) if frame else None
            if adapter is not None and steps:
                nb, bs, partial = adapter.num_batches, adapter.batch_size, adapter.has_partial_batch
                if partial is None and type(adapter).__name__ == "TFDatasetAdapter":
                    partial = False  # a static batch dimension: every element has it
                last = adapter.partial_batch_size if partial else bs
                if nb and bs and last and partial is not None and int(nb) == int(steps):
                    self._known = (int(bs), int(nb), int(last))
        except Exception:  # noqa: BLE001 - an adapter without these: counted from the tracker
            self._known = None
        finally:
            del frame

    def on_epoch_begin(self, epoch, logs=None):
        if self._first_epoch_of_fit:  # a later fit restarts at epoch 0 (or initial_epoch): continue
            self._shift = self._last_epoch + 1 - epoch if epoch <= self._last_epoch else 0
            self._first_epoch_of_fit = False
        self._count_seen = 0.0  # Keras resets its metrics before each epoch
        self._epoch_seen = 0
        super().on_epoch_begin(epoch + self._shift, logs)

    def _tracked(self) -> Optional[float]:
        tracker = getattr(self.model, "_loss_tracker", None)
        if tracker is None or getattr(tracker, "count", None) is None:
            return None
        return float(keras.ops.convert_to_numpy(tracker.count))

    def _count(self, batch: int, logs):
        end = batch + 1 if self.steps_per_epoch is None else min(batch + 1, self.steps_per_epoch)
        n = max(end - self._begin_step, 1)
        if self._known is not None:
            bs, nb, last = self._known
            return n, n * bs - (bs - last if end == nb else 0)
        samples = self._tracked_samples(n)
        self._epoch_seen = None if samples is None or self._epoch_seen is None else self._epoch_seen + samples
        return n, samples

    def _tracked_samples(self, n: int) -> Optional[int]:
        """The samples of the last `n` steps from Keras's loss tracker, or None (unknown)."""
        samples = None
        try:
            seen = self._tracked()
        except Exception:  # noqa: BLE001 - unreadable: unknown
            seen = None
        if seen is not None:
            delta = seen - self._count_seen
            self._count_seen = seen
            # Nothing counted (JAX syncs at epoch end; a custom train_step that skips the
            # tracker), or one per batch (a custom train_step without the batch size): unknown.
            if delta > n:
                samples = int(round(delta))
        if samples is None:
            self.unknown_samples += 1
        return samples

    def _epoch_size(self) -> Optional[int]:
        """Samples in one epoch of the running fit: the data adapter's count (the last batch
        short), else the samples counted in its first epoch, else None (some were unknown)."""
        if self._known is not None:
            bs, nb, last = self._known
            return (nb - 1) * bs + last
        return self._epoch_seen or None

    def on_epoch_end(self, epoch, logs=None):
        from engine.training.recorder import _f, reached

        logs = dict(logs or {})
        epoch += self._shift
        self._last_epoch = epoch
        if self._size_pending:  # each fit's first epoch: the size of the data it trains on
            self.fit_sizes.append(self._epoch_size())
            self._size_pending = False
        key = target_key(logs, self.target_metric)
        if self.target is not None and key is None and self.target_missing is None:
            wanted = repr(self.target_metric) if self.target_metric else "validation accuracy (val_accuracy, val_acc, ...)"
            self.target_missing = (f"SpeedLab: {wanted} is not in fit's logs (they hold: "
                                   f"{', '.join(sorted(logs))[:150]}); time to target is not measured: "
                                   "give fit validation data, or SpeedLabCallback(target_metric=...)")
            if self.on_missing_target is not None:
                self.on_missing_target(self.target_missing)
        train_key, val_key = accuracy_key(logs, False), accuracy_key(logs, True)
        if val_key is None and key is not None and key.startswith("val_"):
            val_key = key  # a user-named validation metric is the run's validation accuracy
        logs["accuracy"] = logs.get(train_key) if train_key else None
        logs["val_accuracy"] = logs.get(val_key) if val_key else None
        self.epoch_logs = logs
        self.epochs_done += 1
        t = self.now()
        val_ce = logs.get("val_loss") if self.plain_val_loss else logs.get("val_ce")
        self.sink("epochs", (epoch, t, self.step, _f(logs.get("loss")), _f(logs["accuracy"]),
                             _f(logs.get("val_loss")), _f(logs["val_accuracy"]), self._lr(), _f(val_ce)))
        value = logs.get(key) if key else None
        if self.target is not None and self.time_to_target is None and value is not None \
                and reached(float(value), self.target):
            self.time_to_target = t


def start_line(run_id: int, path) -> str:
    """The one line the callback prints (stderr) when it starts recording: the run, its store
    file and where to watch it (the dashboard's Runs and Train pages read the same default store,
    engine.store.db.home; SPEEDLAB_DASHBOARD_URL names a dashboard served elsewhere)."""
    url = os.environ.get("SPEEDLAB_DASHBOARD_URL") or "http://localhost:8501"
    return (f"SpeedLab: recording run #{run_id} in {path}; watch it at {url} (the dashboard) "
            f"or with `speedlab show {run_id}`")


class SpeedLabCallback(keras.callbacks.Callback):
    """Records this `fit` as a SpeedLab run in the store under $SPEEDLAB_HOME.

    Args:
        name: a name for the run (kept in its plan; default the script's file name).
        target_accuracy: validation accuracy (fraction) whose first crossing is the run's time to
            accuracy (s, `time_to_target_sec` in the summary); None: not measured. Validation
            accuracy is found under every name Keras logs (val_accuracy, val_acc,
            val_sparse_categorical_accuracy, val_categorical_accuracy, val_binary_accuracy).
        target_metric: the key of fit's logs the target is checked against instead (e.g.
            'val_top1'; a name without 'val_' means its validation form when fit logs one).
            A target metric that is not logged is said once, at the first epoch's end: one line
            on stderr and a warning kept with the run.
        batch_size: the global batch size (samples/step); default read from `fit`'s arguments.
        num_samples: the training-set size (samples per epoch, after validation_split); default
            read from the data fit sees (arrays: Keras's data adapter; a generator: the samples
            counted in its first epoch). Stored as the plan's `n_train`, from which a comparison
            counts samples to the target (its sample-efficiency factor).
        test_data: held-out data, `(x, y)` or a dataset of (x, y) batches, that every fit's end
            evaluates (`model.evaluate`, after the run's time is taken: outside every figure) for
            the summary's `test_accuracy`; without it `test_accuracy` is None with a `test_note`.

    Several fit() calls with the same callback (a two-phase fine-tune) are one run: epochs
    continue (the second fit's epoch 0 is stored after the first fit's last epoch), the target
    is checked on all of them, and time counts from the first fit's start (the time between
    fits is the timeline's 'other'; in a notebook that includes the time between cells). Each
    fit's end stores the run as it then stands (completed); a later fit reopens it.

    Never raises into training: a failing store ends recording with one warning.
    """

    def __init__(self, name: Optional[str] = None, target_accuracy: Optional[float] = None,
                 batch_size: Optional[int] = None, target_metric: Optional[str] = None,
                 num_samples: Optional[int] = None, test_data=None):
        super().__init__()
        if num_samples is not None and (isinstance(num_samples, bool) or not isinstance(num_samples, int)
                                        or num_samples < 1):
            raise ValueError(f"num_samples: {num_samples!r} is not a sample count; give the training set's "
                             "size, e.g. num_samples=len(x_train), or leave it out to read it from the data")
        self.num_samples = num_samples
        self.test_data = test_data
        self.name = name
        self.target_accuracy = target_accuracy
        self.target_metric = target_metric
        self.warnings: list[str] = []
        self.batch_size = batch_size
        self.run_id: Optional[int] = None
        self._rec = None
        self._writer = None
        self._store = None
        self._tl = None
        self._off = False
        self._finished = False
        self._lock = threading.Lock()  # _finish: the training thread or the watch thread, once
        self._in_fit = False
        self._fit = None  # (thread id, frame) of the running fit
        self._raised: Optional[str] = None  # the train step's exception, one line
        self._stop_asked = False
        self._watch: Optional[threading.Thread] = None

    # --- failure handling -------------------------------------------------
    def _disable(self, what: str, exc: BaseException) -> None:
        if not self._off:
            warnings.warn(f"SpeedLab: not recording this run ({what}: {type(exc).__name__}: {str(exc)[:200]})",
                          RuntimeWarning, stacklevel=3)
        self._off = True
        try:
            if self._writer is not None:
                self._writer.stop(patience_s=1.0)
            if self._store is not None and self.run_id is not None and not self._finished:
                self._store.finish_run(self.run_id, "failed", f"recording stopped: {type(exc).__name__}",
                                       only_if_active=True)
        except Exception:  # noqa: BLE001 - already giving up
            pass

    # --- begin --------------------------------------------------------------
    def on_train_begin(self, logs=None):
        if self._off:
            return
        if self._rec is not None:  # a second fit with the same callback: the clock keeps running
            try:
                self._reopen()
            except Exception as e:  # noqa: BLE001 - never fail the user's training
                self._disable("restart", e)
                return
            self._call("read_fit", self.params or {})
            self._call("on_train_begin", logs)
            self._watch_fit()
            return
        try:
            self._begin()
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            self._disable("start", e)
            return
        self._watch_fit()

    # --- a fit that raises, a stop request ------------------------------------
    def _watch_fit(self) -> None:
        """Note the running fit (its frame, its thread) and wrap its train function, so that
        the watch thread can end the run failed at once when fit raises in a process that lives
        on (a notebook cell, a try around fit), with the train step's exception as its reason."""
        if self._off or self.run_id is None:
            return
        try:
            frame = _fit_frame()
            self._fit = (threading.get_ident(), frame) if frame is not None else None
            self._raised = None
            fn = getattr(self.model, "train_function", None)
            if fn is not None and not getattr(fn, "_speedlab", False):
                self.model.train_function = _catching(fn, self)
            self._in_fit = True
            if self._watch is None or not self._watch.is_alive():
                self._watch = threading.Thread(target=self._watching, daemon=True, name="speedlab-watch")
                self._watch.start()
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            self._disable("watch", e)

    def _fit_running(self) -> bool:
        """Whether the noted fit's frame is still on its thread's stack."""
        if self._fit is None:
            return True  # no frame found: only on_train_end or the exit end it
        tid, target = self._fit
        frame = sys._current_frames().get(tid)
        try:
            while frame is not None:
                if frame is target:
                    return True
                frame = frame.f_back
            return False
        finally:
            del frame

    def _watching(self) -> None:
        """The watch thread: every WATCH_S, a fit that left without on_train_end ends the run
        failed; every STOP_POLL_S, a stop request in the store (Stop, `engine cancel`) asks
        training to stop at its next batch (Recorder.stop_event: model.stop_training)."""
        from engine.store import Store

        store, next_poll = None, 0.0
        try:
            while not self._off:
                time.sleep(WATCH_S)
                if not self._in_fit or self._finished:
                    continue
                if not self._fit_running():
                    if self._in_fit and not self._finished:
                        self._in_fit, self._fit = False, None  # the frame holds fit's data: let it go
                        reason = one_line(f"fit() raised: {self._raised}" if self._raised else
                                          "fit() ended without finishing (it raised or was interrupted)")
                        s = Store(self._home)
                        try:
                            self._finish("failed", reason, store=s)
                        except Exception:  # noqa: BLE001 - no summary: the run still ends, with its reason
                            s.finish_run(self.run_id, "failed", reason, only_if_active=True)
                            self._finished = True
                        finally:
                            s.close()
                    continue
                if time.monotonic() >= next_poll and not self._stop_asked:
                    next_poll = time.monotonic() + STOP_POLL_S
                    store = store or Store(self._home, patience_s=0, busy_timeout_s=0.5)
                    run = store.get_run(self.run_id)
                    if run and run.get("cancel_requested"):
                        self._stop_asked = True
                        self._rec.stop_event.set()
        except Exception:  # noqa: BLE001 - the watch is best effort; training goes on
            pass
        finally:
            if store is not None:
                try:
                    store.close()
                except Exception:  # noqa: BLE001
                    pass

    def _reopen(self) -> None:
        """A later fit of the same run: the run is running again, with a new writer."""
        from engine.store import Store
        from engine.training.writer import Writer

        if not self._finished:
            return
        home = self._home
        self._store = Store(home)
        self._store.update_run(self.run_id, status="running", ended=None, error=None, cancel_requested=None)
        self._stop_asked = False
        self._rec.stop_event.clear()
        self._writer = Writer(lambda: Store(home, patience_s=0, busy_timeout_s=0.5), self.run_id)
        self._writer.set_t0(self._rec.t0)
        self._writer.start()
        self._finished = False

    def _missing_target(self, line: str) -> None:
        print(line, file=sys.stderr, flush=True)
        self.warnings.append(line)
        self._store.update_run(self.run_id, plan={**self._plan, "warnings": list(self.warnings)})

    def _begin(self) -> None:
        from engine.config import RunConfig
        from engine.store import Store, default_path, old_store_line
        from engine.training.recorder import Recorder
        from engine.training.writer import Writer
        from engine.training.timeline import Timeline

        tl = Timeline()  # process start (psutil create_time): everything before fit is setup
        tl.mark("startup")
        model = self.model
        params = self.params or {}
        read_gb = self.batch_size or _global_batch(model)
        self._gb_known = read_gb is not None
        gb = read_gb or 32
        spe = int(getattr(model, "steps_per_execution", None) or getattr(model, "_steps_per_execution", 1) or 1)
        steps = int(params.get("steps") or 0) or None  # None: a generator without length
        epochs = int(params.get("epochs") or 1)
        policy = keras.config.dtype_policy().name
        replicas = _replicas()
        seed = int(os.environ.get("SPEEDLAB_SEED", "0") or 0)
        lr = _lr(model)
        self._read = dict(backend=keras.backend.backend(), batch_size=gb, steps_per_execution=spe,
                          learning_rate=lr, jit_compile=bool(getattr(model, "jit_compile", False)))
        cfg = _config(RunConfig, **{**self._read, "learning_rate": lr if lr and 0 < lr <= 10 else 1e-3},
                      precision=policy if policy in ("float32", "mixed_float16", "mixed_bfloat16") else "float32",
                      epochs=epochs, seed=seed, target_accuracy=self.target_accuracy, devices=max(replicas, 1))
        self._policy = policy
        self._replicas = replicas
        script = os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python"
        home = default_path()
        store = Store(home)
        store.writable()
        role = os.environ.get("SPEEDLAB_ROLE") or "run"
        group = os.environ.get("SPEEDLAB_GROUP") or None
        self._plan = {"source": OUTSIDE_SCRIPT_SOURCE, "label": LABEL, "script": script,
                      "name": self.name or script,
                      "argv": [str(a)[:200] for a in sys.argv[:20]], "steps_per_epoch": steps,
                      "epochs": epochs, "total_steps": steps * epochs if steps else None, "global_batch_size": gb,
                      "replicas": replicas, "precision_policy": policy, "compute_dtype": _dtype(model, "compute"),
                      "variable_dtype": _dtype(model, "variable"), "device_kind": _device_kind(),
                      "per_replica_batch_size": gb // max(replicas, 1), "dropped_samples_per_epoch": 0,
                      "effective_learning_rate": lr, "persistent_iterators": {},
                      "input_batches_per_sec": None}
        from engine.base.process import start_time

        # pid + its start time in the same insert as the run: the runner's reconcile keeps a
        # live script's run running, and ends it failed once the script is gone.
        run_id = store.create_run(json.dumps(cfg.to_dict()), role=role, group_id=group, status="running",
                                  started=time.time(), pid=os.getpid(), pid_started=start_time(), plan=self._plan,
                                  environment=_environment())
        self._store, self.run_id, self._tl, self._home = store, run_id, tl, home
        print(start_line(run_id, store.path), file=sys.stderr, flush=True)
        moved = old_store_line()
        if moved:  # runs of this folder's older store are not in this one: say where they are
            print(f"SpeedLab: {moved}", file=sys.stderr, flush=True)
        import atexit

        atexit.register(self._at_exit)  # a fit that raised never calls on_train_end
        path = os.environ.get("SPEEDLAB_RUN_FILE")
        if path:
            write_run_file(path, run_id, os.path.realpath(store.path))
        writer = Writer(lambda: Store(home, patience_s=0, busy_timeout_s=0.5), run_id)
        writer.start()
        self._writer = writer

        def on_start(t0):
            writer.set_t0(t0)
            store.update_run(run_id, plan={**self._plan, "train_started_at": time.time()})

        def sink(table: str, row: tuple) -> None:  # the current writer: a later fit starts a new one
            if table == "executions" and row[6] is None:
                # Samples unknown: the store's samples_per_sec cannot say 'unknown', and any
                # number there would be wrong; the summary says why there is no throughput.
                return
            self._writer.push(table, row)

        rec = _recorder_class(Recorder)(gb, steps or 1, sink, target_accuracy=self.target_accuracy,
                                        on_start=on_start, timeline=tl, plain_val_loss=True)
        rec._setup_script()
        rec.target_metric, rec.on_missing_target = self.target_metric, self._missing_target
        rec.set_model(model)
        rec.set_params(params)
        rec.read_fit(params)
        self._rec = rec
        self._call("on_train_begin", None)

    # --- the Recorder's hooks, guarded ----------------------------------------
    def _call(self, hook: str, *args):
        if self._off or self._rec is None:
            return
        try:
            getattr(self._rec, hook)(*args)
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            self._disable(hook, e)

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, logs)

    def on_train_batch_begin(self, batch, logs=None):
        self._call("on_train_batch_begin", batch, logs)

    def on_train_batch_end(self, batch, logs=None):
        self._call("on_train_batch_end", batch, logs)

    def on_test_begin(self, logs=None):
        self._call("on_test_begin", logs)

    def on_test_batch_end(self, batch, logs=None):
        self._call("on_test_batch_end", batch, logs)

    def on_test_end(self, logs=None):
        self._call("on_test_end", logs)

    def on_epoch_end(self, epoch, logs=None):
        self._call("on_epoch_end", epoch, logs)

    # --- end ------------------------------------------------------------------
    def on_train_end(self, logs=None):
        if self._off or self._rec is None:
            return
        self._in_fit, self._fit = False, None  # the frame holds fit's data: let it go
        self._call("on_train_end", logs)
        try:
            if self._stop_asked:
                self._finish("cancelled", "stopped on request (Stop or engine cancel): training stopped at a "
                             "batch's end; its process was not signalled; what it measured is kept")
            else:
                self._finish("completed", None)
        except Exception as e:  # noqa: BLE001 - never fail the user's training
            traceback.print_exc()
            self._disable("finish", e)

    def _at_exit(self) -> None:
        """At interpreter exit: a run still open (fit raised, or was interrupted) ends failed,
        with what it measured, so that nobody waits for it."""
        if self._off or self._finished or self._store is None:
            return
        try:
            self._finish("failed", "the script ended before fit finished (fit raised or was interrupted)")
        except Exception:  # noqa: BLE001 - exiting anyway
            try:
                self._store.finish_run(self.run_id, "failed", "the script ended before fit finished",
                                       only_if_active=True)
            except Exception:  # noqa: BLE001
                pass

    def _finish(self, status: str, error: Optional[str], store=None) -> None:
        """End the run: stop the writer, store the summary. `store`: the watch thread's own
        (sqlite connections stay in their thread); default the training thread's."""
        with self._lock:
            if self._finished:
                return
            self._finish_locked(status, error, store)

    def _finish_locked(self, status: str, error: Optional[str], store) -> None:
        self._writer.stop(patience_s=30.0)
        summary = self.summary()
        n_train, note = self._n_train()
        db = store or self._store
        stored = (db.get_run(self.run_id) or {}).get("plan") or self._plan  # keeps what was added since
        db.update_run(self.run_id, plan={**stored, "n_train": n_train, "n_train_note": note})
        # Held-out accuracy, after every time above was taken; only where training ended well,
        # on the training thread (the watch thread ends runs whose fit raised).
        summary.update(self._test_accuracy() if status == "completed" and store is None else
                       {"test_accuracy": None, "test_note": f"not measured: the run ended {status}"})
        if self._writer.lost_total:  # as engine.jobs.worker.incomplete_summary
            summary.update(metrics_incomplete=self._writer.lost_total, metrics_lost=dict(self._writer.lost))
        summary.update(run_id=self.run_id, status=status, error=error, warnings=list(self.warnings), warm_worker=False,
                       source=OUTSIDE_SCRIPT_SOURCE)
        (store or self._store).finish_run(self.run_id, status, error, summary=summary, only_if_active=True)
        self._finished = True
        if store is None:
            self._store.close()

    def _n_train(self) -> tuple[Optional[int], Optional[str]]:
        """(training-set size in samples, None), or (None, why it is not known)."""
        if self.num_samples is not None:
            return self.num_samples, None
        sizes = list(self._rec.fit_sizes)
        if not sizes or None in sizes:
            return None, ("not known: some batches' sizes were not reported; give "
                          "SpeedLabCallback(num_samples=...)")
        if len(set(sizes)) > 1:
            return None, (f"not known: the fits trained on {', '.join(map(str, sizes))} samples an epoch; "
                          "give SpeedLabCallback(num_samples=...)")
        return sizes[0], None

    def _test_accuracy(self) -> dict:
        """{'test_accuracy' (fraction, or None), 'test_note' (why None)} from evaluating
        `test_data` with the model as fit left it."""
        if self.test_data is None:
            return {"test_accuracy": None,
                    "test_note": "not measured: give SpeedLabCallback(test_data=(x_test, y_test)) held-out data"}
        try:
            data = self.test_data
            args = list(data) if isinstance(data, (tuple, list)) else [data]
            logs = self.model.evaluate(*args, verbose=0, return_dict=True)
            key = accuracy_key(logs, False)
            if key is None:
                return {"test_accuracy": None, "test_note": f"not measured: evaluate() logs no accuracy (it logs: "
                                                            f"{', '.join(sorted(logs))[:150]})"}
            return {"test_accuracy": float(logs[key]), "test_note": None}
        except Exception as e:  # noqa: BLE001 - never fail the user's script
            return {"test_accuracy": None, "test_note": one_line(f"not measured: evaluate() raised "
                                                                 f"{type(e).__name__}: {e}")}

    def summary(self) -> dict:
        """The run's summary: engine.training.summary.RunSummary's keys, plus MFU (engine.report.mfu)."""
        from engine.report.measure import steady_state
        from engine.training.summary import RunSummary, fused_optimizer_on, loss_scale, progress, time_accounts

        rec, model, plan = self._rec, self.model, self._plan
        cfg = SimpleNamespace(**self._read)  # what was read, even where the stored config fell back
        unknown = rec.unknown_samples
        counted = [n or 0 for n in rec.samples]
        timing = {**steady_state(rec.durations, rec.batches, cfg.batch_size, warmup_flags=rec.warmups,
                                 samples=counted),
                  **time_accounts(self._tl, sum(counted))}
        if unknown:  # a throughput from guessed sample counts would be wrong: none
            timing.update(samples_per_sec=None, samples_per_sec_mean=None, samples_per_sec_iqr=None,
                          end_to_end_samples_per_sec=None)
        gb = cfg.batch_size
        if not self._gb_known and rec.samples and not unknown:  # a generator's batches: the largest seen
            gb = max(n // max(b, 1) for n, b in zip(rec.samples, rec.batches))
        waits = [w for w, warm in zip(rec.data_waits, rec.warmups) if w is not None and not warm]
        flops = _flops(model)
        s = RunSummary(
            **timing, persistent_iterators={}, replicas=self._replicas, workers=1, replicas_simulated=False,
            device_kind=plan["device_kind"], backend=cfg.backend, precision=self._policy,
            compute_dtype=plan["compute_dtype"], variable_dtype=plan["variable_dtype"],
            steps_per_execution=cfg.steps_per_execution, jit_compile=cfg.jit_compile,
            global_batch_size=gb, per_replica_batch_size=gb // max(self._replicas, 1),
            dropped_samples_per_epoch=0, effective_learning_rate=cfg.learning_rate or 0.0, schedule="outside script",
            label_smoothing=0.0, mixup_alpha=0.0, train_accuracy_on_mixed_targets=False, init_from=None,
            pretrained=False, loss_scale=_safe(loss_scale, model), fused_optimizer=bool(_safe(fused_optimizer_on,
                                                                                               model)),
            **progress(SimpleNamespace(stop_at_target=False), rec),
            data_wait_sec=sum(waits) if waits else None, data_wait_share=None, input_batches_per_sec=None,
            instrumentation={"batch_hooks_sec": rec.hook_sec}, validation_traced_ahead=None,
            flops_per_sample=flops.get("flops_per_sample"),
            forward_flops_per_sample=flops.get("forward_flops_per_sample"),
            flops_uncounted=flops.get("flops_uncounted"), freeze_epochs=None, finetune_learning_rate=None,
            flops_all_taps_per_sample=flops.get("flops_all_taps_per_sample"),
            flops_source="layers" if flops.get("flops_per_sample") else None)
        out = s.to_dict()
        out["instrumentation"]["writer_cpu_sec"] = self._writer.cpu_sec
        if unknown:
            out["throughput_note"] = (f"not measured: the samples of {unknown} of {len(rec.samples)} executions "
                                      "are unknown (Keras did not report their batch size); those executions "
                                      "are not stored as throughput points")
        if rec.target_missing:
            out["time_to_target_note"] = "not measured: " + rec.target_missing.removeprefix("SpeedLab: ")
        if out.get("samples_per_sec"):
            try:
                from engine.report import mfu

                out.update(mfu.machine_fields(out, out.get("flops_per_sample"), measure_clock=True))
            except Exception as e:  # noqa: BLE001 - a missing MFU must not fail the run
                out["peak_source"] = f"MFU not computed: {type(e).__name__}: {str(e)[:200]}"
        return out


WATCH_S = 0.25  # how often the watch thread looks for a fit that left without on_train_end (s)
STOP_POLL_S = 1.0  # how often it reads the store for a stop request (s)
_PY_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)(: .*)?$")


def exception_line(e: BaseException) -> str:
    """One line for an exception: its type and first line, or, for a TensorFlow error that
    wraps a Python one (a generator's), the wrapped exception's line, which says what failed."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    inner = [ln for ln in lines[1:] if _PY_ERROR.match(ln)]
    return one_line(f"{type(e).__name__}: {inner[-1] if inner else (lines[0] if lines else '')}")


def _catching(fn, cb):
    """`fn` (Keras's train function), noting the exception it raises on `cb` (one line)."""
    def train_function(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BaseException as e:
            cb._raised = exception_line(e)
            raise

    train_function._speedlab = True
    return train_function


def _recorder_class(Recorder):
    """Recorder with the script's counting (_ScriptRecorder first, so that its hooks win)."""
    return type("ScriptRecorder", (_ScriptRecorder, Recorder), {})


def _config(RunConfig, **read):
    """A valid RunConfig holding what the callback read. Its data set is a placeholder
    (synthetic, sized so that the batch and steps per execution fit): the script's own data is
    not known. Fields that do not validate fall back to their defaults, one at a time."""
    from engine.base.errors import ConfigError

    gb, spe = read["batch_size"], read["steps_per_execution"]
    base = {"dataset": "synthetic", "synthetic_samples": max(2048, 4 * gb * spe)}
    for _ in range(len(read) + 1):
        try:
            return RunConfig(**base, **read)
        except ConfigError as e:
            if e.args and getattr(e, "field", None) in read:
                read.pop(e.field)
            elif read:
                read.popitem()
            else:
                raise
    return RunConfig(**base)


def _safe(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - an optional figure
        return None


def _flops(model) -> dict:
    """engine.training.flops.count of the model ({} when it cannot count it)."""
    try:
        from engine.training import flops

        return flops.count(model)
    except Exception:  # noqa: BLE001 - FLOPs are optional; MFU is then None
        return {}


def _dtype(model, which: str) -> str:
    policy = getattr(model, "dtype_policy", None) or keras.config.dtype_policy()
    return str(getattr(policy, f"{which}_dtype", "float32"))


def _device_kind() -> str:
    """'GPU' when the backend has a GPU, else 'CPU'."""
    try:
        if keras.backend.backend() == "jax":
            import jax

            return "GPU" if jax.default_backend() == "gpu" else "CPU"
        if "tensorflow" in sys.modules:
            import tensorflow as tf

            return "GPU" if tf.config.list_logical_devices("GPU") else "CPU"
    except Exception:  # noqa: BLE001
        pass
    return "CPU"


def _environment() -> dict:
    """Versions of what this script runs with."""
    import platform

    from engine.hardware.peak_store import fingerprint_with_clock

    return {"fingerprint": fingerprint_with_clock(), "hostname": platform.node(),
            "python": platform.python_version(), "keras": keras.__version__,
            "backend": keras.backend.backend(), "source": OUTSIDE_SCRIPT_SOURCE, "pid": os.getpid(),
            "threads": threading.active_count()}
