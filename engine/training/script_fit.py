"""What SpeedLabCallback (engine.training.script_run) reads from a user's script and its `fit`: the
global batch size, the replicas, the learning rate, accuracy under every name Keras logs, the
samples each execution really ran (`ScriptRecorder`, mixed into the worker's Recorder), the
config it can fill in and the environment. A figure it cannot read is None, never an error in
the user's training.
"""
from __future__ import annotations

import math
import os
import re
import sys
import threading
from typing import Optional, Sequence

import keras

from engine.base.lines import one_line
from engine.store.rows import SCRIPT_RUN_SOURCE  # stdlib only: nothing heavy in the user's script


def global_batch(model) -> Optional[int]:
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


def replicas() -> int:
    """Model replicas of the strategy or distribution in use (1 without one)."""
    if keras.backend.backend() == "tensorflow" and "tensorflow" in sys.modules:
        import tensorflow as tf

        return int(tf.distribute.get_strategy().num_replicas_in_sync)
    if keras.backend.backend() == "jax":
        dist = keras.distribution.distribution()
        if dist is not None:
            return len(getattr(dist, "device_mesh").devices.flatten())
    return 1


def learning_rate(model) -> Optional[float]:
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


def fit_frame():
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


class ScriptRecorder:
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
        frame = fit_frame()
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


_PY_ERROR = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit|Warning)(: .*)?$")


def exception_line(e: BaseException) -> str:
    """One line for an exception: its type and first line, or, for a TensorFlow error that
    wraps a Python one (a generator's), the wrapped exception's line, which says what failed."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    inner = [ln for ln in lines[1:] if _PY_ERROR.match(ln)]
    return one_line(f"{type(e).__name__}: {inner[-1] if inner else (lines[0] if lines else '')}")


def catching(fn, cb):
    """`fn` (Keras's train function), noting the exception it raises on `cb` (one line)."""
    def train_function(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except BaseException as e:
            cb._raised = exception_line(e)
            raise

    train_function._speedlab = True
    train_function.__wrapped__ = fn
    return train_function


def recorder_class(Recorder):
    """Recorder with the script's counting (ScriptRecorder first, so that its hooks win)."""
    return type("ScriptRecorder", (ScriptRecorder, Recorder), {})


def script_config(RunConfig, **read):
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


def safe(fn, *args):
    try:
        return fn(*args)
    except Exception:  # noqa: BLE001 - an optional figure
        return None


def trainable_size(model) -> Optional[int]:
    """Trainable weights of `model` (scalars), or None when Keras cannot say."""
    try:
        return sum(math.prod(int(d) for d in w.shape) for w in model.trainable_weights)
    except Exception:  # noqa: BLE001 - a check of the FLOPs, never a reason to fail training
        return None


def model_flops(model, trainable: Sequence[Optional[int]] = ()) -> dict:
    """engine.training.build.flops_plan of a script's model, as for a user's model given to
    `engine run` (counted, held against XLA's count on JAX), with a 'flops_note' wherever
    there is no count. `trainable`: `trainable_size` at each fit's start; fits that trained
    different weights (a fine-tune's frozen, then unfrozen base) ran different steps, and a
    count of the model as it ends would charge the first fit's steps the second's FLOPs (MFU
    157% measured): no count then."""
    sizes = sorted({n for n in trainable if n is not None})
    if len(sizes) > 1:
        return {"flops_per_sample": None,
                "flops_note": f"MFU not shown: the fit() calls trained different weights ({sizes[0]:,} to "
                              f"{sizes[-1]:,} trainable scalars), so no one FLOPs-per-sample figure is the run's"}
    try:
        from engine.training.build import flops_plan

        out = flops_plan(model, cross_check=True)
    except Exception as e:  # noqa: BLE001 - FLOPs are optional; MFU is then missing, with the reason
        return {"flops_per_sample": None, "flops_note": f"MFU not shown: FLOPs not counted ({exception_line(e)})"}
    if not out.get("flops_per_sample") and not out.get("flops_note"):
        out["flops_note"] = ("MFU not shown: the FLOP counter found no layer it counts (Dense, convolutions) in "
                             "the model's graph" + (f"; not counted: {', '.join(map(str, out['flops_uncounted'][:6]))}"
                                                    if out.get("flops_uncounted") else ""))
    return out


def policy_dtype(model, which: str) -> str:
    """The model's dtype policy's `which` ('compute' or 'variable') dtype, e.g. 'bfloat16'."""
    policy = getattr(model, "dtype_policy", None) or keras.config.dtype_policy()
    return str(getattr(policy, f"{which}_dtype", None) or "float32")


def device_kind() -> str:
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


def environment() -> dict:
    """Versions of what this script runs with."""
    import platform

    from engine.hardware.peak_store import fingerprint_with_clock

    return {"fingerprint": fingerprint_with_clock(), "hostname": platform.node(),
            "python": platform.python_version(), "keras": keras.__version__,
            "backend": keras.backend.backend(), "source": SCRIPT_RUN_SOURCE, "pid": os.getpid(),
            "threads": threading.active_count()}
