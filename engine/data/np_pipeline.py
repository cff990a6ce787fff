"""NumPy input pipelines for runs without TensorFlow (backend jax), as `keras.utils.PyDataset`s.

The same stages and seeded semantics as the tf.data pipelines in engine.data.pipeline,
and the same function signatures, so `engine.training.build.prepare` picks one module or
the other by backend:

    arrays -> [cache: preprocess once] -> shuffle (per epoch, from seed) -> batch
           -> preprocess -> [mixup on the host] -> [prefetch] -> meter

- shuffle: epoch e uses the permutation ``numpy.random.default_rng([seed, e])``: a fresh
  order every epoch, the same orders in every run with the seed, whatever the prefetch.
- batch: global batches; the last partial batch is kept with one replica and dropped with
  several (every replica then gets an equal share), as on TensorFlow.
- preprocess: uint8 pixels x 1/255 to float32; labels one-hot float32 (batch, classes).
- cache: preprocess the whole uint8 array once up front (float32 in memory, 4x the bytes).
- mixup: on JAX runs SpeedLab mixes on the device inside the compiled train step
  (engine.data.device_mixup); `mixup_alpha` here mixes in NumPy on the host instead,
  which the issue's H200 measurements showed to starve a fast device (kept for comparison).
- prefetch: batches are prepared ahead on a `concurrent.futures.ThreadPoolExecutor`
  (1 thread, or 4 with parallel_map) while the step computes; off means each batch is
  prepared when the step asks for it.
- meter: the seconds `__getitem__` blocked the training loop (the whole preparation time
  without prefetch, only the wait for a late batch with it); `DataWaitMeter.total()`.

Keras iterates a PyDataset with ``workers=1`` in the training thread itself, so
``__getitem__`` runs exactly where the step waits for data: that is what is metered.
No TensorFlow here (tests check a JAX worker never imports it).
"""
from __future__ import annotations

import math
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Optional

import keras
import numpy as np

PREFETCH_BATCHES = 4  # batches prepared ahead with prefetch on
MAP_THREADS = 4       # preparing threads with parallel_map on (1 without)


class DataWaitMeter:
    """Total time (s) the training loop waited for input batches (thread-safe)."""

    def __init__(self):
        self._total = 0.0
        self._lock = threading.Lock()

    def add(self, seconds: float) -> None:
        with self._lock:
            self._total += seconds

    def total(self) -> float:
        """Seconds waited so far (cumulative)."""
        return self._total


def preprocess(x: np.ndarray) -> np.ndarray:
    """uint8 0..255 -> float32 in [0, 1]; float inputs -> float32 unchanged."""
    if x.dtype == np.uint8:
        return x.astype(np.float32) * np.float32(1.0 / 255.0)
    return x.astype(np.float32, copy=False)


def one_hot(y: np.ndarray, classes: int) -> np.ndarray:
    """int labels (B,) -> float32 one-hot (B, classes)."""
    out = np.zeros((len(y), classes), np.float32)
    out[np.arange(len(y)), y.astype(np.int64)] = 1.0
    return out


def host_mixup(x: np.ndarray, y: np.ndarray, alpha: float, rng: np.random.Generator):
    """Mixup (Zhang et al. 2018) in NumPy: lam_i ~ Beta(alpha, alpha) per example and a
    random partner in the batch, as engine.data.targets.mixup. Returns float32 (x, y)."""
    n = len(x)
    lam = rng.beta(alpha, alpha, size=n).astype(np.float32)
    partner = rng.permutation(n)
    w = lam.reshape((-1,) + (1,) * (x.ndim - 1))
    return w * x + (1 - w) * x[partner], lam[:, None] * y + (1 - lam[:, None]) * y[partner]


class ArrayBatches(keras.utils.PyDataset):
    """Batches of in-memory arrays for `model.fit` / `evaluate` (see the module doc).

    Args:
        x: (N, H, W, C) uint8 or float32; y: int (N,); classes: one-hot width.
        batch_size: global batch (samples). seed: shuffle seed, None = in order (validation).
        drop_remainder: drop the last partial batch (several replicas).
        pad_to: pad a last partial batch with zero-weight samples to a multiple of this
            (evaluation over several replicas, where each needs an equal share); the
            batch then carries sample weights (1 real, 0 padding), so no metric counts them.
        repeat: endless (epoch after epoch; `len` is None), as tf.data's ``.repeat()``.
        threads: preparing threads ahead of the step (0 = none: prepared on request).
        meter: DataWaitMeter credited with every wait in `__getitem__`.
    Batches: (x float32 (B, H, W, C), y float32 (B, classes)) [+ sample weights (B,)].
    """

    def __init__(self, x: np.ndarray, y: np.ndarray, classes: int, batch_size: int, *,
                 seed: Optional[int] = None, drop_remainder: bool = False, pad_to: int = 1,
                 repeat: bool = False, cache: bool = False, threads: int = 0,
                 mixup_alpha: float = 0.0, meter: Optional[DataWaitMeter] = None):
        super().__init__(workers=1, use_multiprocessing=False)  # iterated in the training thread
        self._args = dict(x=x, y=y, classes=classes, batch_size=batch_size, seed=seed,
                          drop_remainder=drop_remainder, pad_to=pad_to, cache=cache, threads=threads,
                          mixup_alpha=mixup_alpha, meter=meter)
        self.x = preprocess(x) if cache else x
        self.y = np.asarray(y)
        self.classes, self.batch_size, self.seed = int(classes), int(batch_size), seed
        self.pad_to, self.repeat_forever, self.mixup_alpha = int(pad_to), repeat, float(mixup_alpha)
        n = len(self.x)
        self.steps = n // self.batch_size if drop_remainder else math.ceil(n / self.batch_size)
        self.meter = meter
        self.threads = int(threads)
        self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="speedlab-input") if threads else None
        self._ahead: dict = {}
        self._epoch = 0  # epochs finished (finite datasets count them in on_epoch_end)
        self._orders: dict = {}
        self._lock = threading.Lock()

    # --- what a batch is ---------------------------------------------------------
    @property
    def num_batches(self):
        return None if self.repeat_forever else self.steps

    def order(self, epoch: int) -> np.ndarray:
        """Sample indices of `epoch` (a seeded permutation, or 0..N-1 without a seed)."""
        if self.seed is None:
            return np.arange(len(self.x))
        with self._lock:
            if epoch not in self._orders:
                self._orders = {e: o for e, o in self._orders.items() if e >= epoch - 1}
                self._orders[epoch] = np.random.default_rng([self.seed, epoch]).permutation(len(self.x))
            return self._orders[epoch]

    def batch(self, epoch: int, i: int) -> tuple:
        """Batch `i` of `epoch`, prepared (pure: the same answer on any thread)."""
        idx = self.order(epoch)[i * self.batch_size:(i + 1) * self.batch_size]
        x, y = preprocess(self.x[idx]), one_hot(self.y[idx], self.classes)
        if self.mixup_alpha > 0:
            x, y = host_mixup(x, y, self.mixup_alpha, np.random.default_rng([self.seed or 0, epoch, i, 1]))
        pad = -len(idx) % self.pad_to
        if not pad:
            return x, y
        w = np.concatenate([np.ones(len(idx), np.float32), np.zeros(pad, np.float32)])
        return (np.concatenate([x, np.zeros((pad, *x.shape[1:]), np.float32)]),
                np.concatenate([y, np.zeros((pad, y.shape[1]), np.float32)]), w)

    # --- the PyDataset protocol ----------------------------------------------------
    def __len__(self):
        return self.steps

    def _key(self, k: int) -> tuple:
        return divmod(k, self.steps) if self.repeat_forever else (self._epoch, k)

    def __getitem__(self, k: int):
        key = self._key(int(k))
        t0 = time.perf_counter()
        if self._pool is None:
            out = self.batch(*key)
        else:
            for j in range(PREFETCH_BATCHES + 1):  # keep the next batches under way
                e, i = key[0], key[1] + j
                if not self.repeat_forever and i >= self.steps:
                    break
                e, i = divmod(e * self.steps + i, self.steps)
                if (e, i) not in self._ahead:
                    self._ahead[(e, i)] = self._pool.submit(self.batch, e, i)
            out = self._ahead.pop(key).result()
        if self.meter is not None:
            self.meter.add(time.perf_counter() - t0)
        return out

    def on_epoch_end(self):
        if not self.repeat_forever:
            self._epoch += 1
            self._ahead.clear()  # a finite epoch prefetches only within itself

    def repeat(self) -> "ArrayBatches":
        """An endless copy (epoch after epoch), as tf.data's ``.repeat()``."""
        return ArrayBatches(**self._args, repeat=True)

    def __del__(self):
        if getattr(self, "_pool", None) is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)


def _threads(parallel_map: bool, prefetch: bool) -> int:
    return (MAP_THREADS if parallel_map else 1) if prefetch else 0


def train_dataset(x: np.ndarray, y: np.ndarray, classes: int, global_batch: int, replicas: int,
                  seed: int, mixup_alpha: float = 0.0, *, cache: bool = False, parallel_map: bool = True,
                  prefetch: bool = True, meter: Optional[DataWaitMeter] = None) -> ArrayBatches:
    """Shuffled (each epoch, from `seed`), batched training data (engine.data.pipeline's
    signature). mixup_alpha > 0 mixes on the host (see the module doc)."""
    return ArrayBatches(x, y, classes, global_batch, seed=seed, drop_remainder=replicas > 1, cache=cache,
                        threads=_threads(parallel_map, prefetch), mixup_alpha=mixup_alpha, meter=meter)


def eval_dataset(x: np.ndarray, y: np.ndarray, classes: int, global_batch: int, replicas: int, *,
                 cache: bool = False, parallel_map: bool = True, prefetch: bool = True) -> ArrayBatches:
    """Validation data in order, never shuffled or mixed; every sample counts (a last
    partial batch is padded with zero-weight samples to a multiple of `replicas`)."""
    return ArrayBatches(x, y, classes, global_batch, seed=None, pad_to=replicas, cache=cache,
                        threads=_threads(parallel_map, prefetch))


def input_rate(ds: ArrayBatches, max_batches: int = 21, max_seconds: float = 2.0) -> Optional[float]:
    """Batches/s of `ds` on its own (no model), after its first batch; at most
    `max_batches` or about `max_seconds`. None if `ds` has fewer than 2 batches.
    Uses a copy of `ds` without prefetch threads, so the rate is one thread's."""
    probe = ArrayBatches(**{**ds._args, "threads": 0, "meter": None}, repeat=False)
    if probe.steps < 2:
        return None
    probe.batch(0, 0)
    n, t0 = 0, time.perf_counter()
    for i in range(1, min(max_batches, probe.steps)):
        probe.batch(0, i)
        n += 1
        if time.perf_counter() - t0 > max_seconds:
            break
    dt = time.perf_counter() - t0
    return n / dt if n and dt > 0 else None
