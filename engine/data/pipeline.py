"""tf.data input pipelines: preprocess (map), optional cache, shuffle, batch,
optional prefetch, and a meter of how long training waited for each batch.

Stages of the training pipeline, in order (options from RunConfig):

    arrays -> shuffle -> batch -> map(preprocess) -> [mixup] -> [prefetch] -> meter
    arrays -> chunks of 1024 -> map(preprocess) -> unbatch -> cache -> shuffle -> batch
           -> [mixup] -> [prefetch] -> meter                      (with data_cache on)

- preprocess (uint8 images: Keras data sets, image folders, uint8 .npz): pixels
  x 1/255 to float32 and labels to one-hot float32 (batch, classes), so that
  label smoothing and mixup apply to every run alike. It maps whole batches
  (tf.data's "vectorized mapping": one function call per batch; per example it
  cost ~20 us a call on a 2-core CPU, which made small models input-bound).
  data_parallel_map runs it on tf.data.AUTOTUNE threads, else on one (tf.data's
  automatic map parallelisation is then switched off too). float32 images
  (digits, synthetic, float .npz) need no preprocessing: their labels are
  one-hot encoded up front and there is no map stage to parallelise.
- cache: keeps the preprocessed examples in memory after the first epoch.
- prefetch: tf.data.AUTOTUNE batches are prepared while the step computes; off
  means off (tf.data's automatic prefetch injection is disabled).
Both layouts give the same batches for a seed (the shuffle sees the same
examples in the same order; preprocessing is element-wise).
With more than one replica every batch has the same size (the remainder of
each epoch is dropped; RunConfig.dropped_per_epoch says how many samples).
"""
from __future__ import annotations

import time
from typing import Optional

import numpy as np
import tensorflow as tf


def _options(parallel_map: bool = True) -> tf.data.Options:
    opts = tf.data.Options()
    # In-memory tensors have no files to shard by; say so instead of letting
    # the strategy try FILE and warn.
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    # A prefetch that tf.data injects by itself would hide a switched-off prefetch
    # and move the data-wait meter onto a background thread.
    opts.experimental_optimization.inject_prefetch = False
    if not parallel_map:
        opts.experimental_optimization.map_parallelization = False
    return opts


CACHE_CHUNK = 1024  # examples preprocessed per call before caching


def _map_args(npc) -> dict:
    # Parallel maps keep the input order (deterministic) so batches do not depend on timing.
    return {"num_parallel_calls": npc, "deterministic": True} if npc else {}


def _source(x: np.ndarray, y: np.ndarray, classes: int, prep) -> tf.data.Dataset:
    """Examples from arrays: (x, int label) when `prep` will follow, else
    (float32 x, one-hot float32 label) ready to batch."""
    if prep is not None:
        return tf.data.Dataset.from_tensor_slices((x, y))
    return tf.data.Dataset.from_tensor_slices((x.astype(np.float32, copy=False),
                                               tf.one_hot(y, classes, dtype=tf.float32)))


def _preprocess(classes: int):
    """Element-wise preprocessing for a batch (or a single example)."""

    def prep(x, y):
        x = tf.cast(x, tf.float32) * (1.0 / 255.0) if x.dtype == tf.uint8 else tf.cast(x, tf.float32)
        return x, tf.one_hot(y, classes, dtype=tf.float32)

    return prep


def _inline_map(ds: tf.data.Dataset, fn) -> tf.data.Dataset:
    """ds.map(fn) whose few scalar ops run in the calling thread instead of being
    handed to the inter-op pool: about 60 -> 35 us a batch for the meter on a
    2-core CPU. Uses TF's private map op; falls back to ds.map(fn)."""
    try:
        from tensorflow.python.data.ops import map_op

        return map_op._MapDataset(ds, fn, use_inter_op_parallelism=False)
    except (ImportError, AttributeError, TypeError):
        return ds.map(fn)


class DataWaitMeter:
    """Total time (s) the training loop waited for the input pipeline.

    The metered dataset is ``zip(asked, data).map(handed_over)``: when the
    training step asks for a batch, tf.data's zip first takes a timestamp
    (`asked`, in the consumer's own thread), then pulls the batch from the
    pipeline, blocking until it is ready, and `handed_over` adds
    ``now - asked`` to a float64 variable on the CPU. The total is therefore
    the time spent inside the step's request for data: ~0 when prefetch kept a
    batch ready, the whole preparation time when nothing was ready. It costs
    two tiny tf.data functions per batch (no Python, no GIL): ~35 us a batch
    on a 2-core CPU, inside the measured step time.
    With several GPU replicas tf.distribute pulls batches on its own prefetch
    thread, so the meter then sees that thread's waits; simulated CPU replicas
    have a pipeline each (engine.training.replica_input), metered on replica 0's.
    """

    def __init__(self):
        with tf.device("/CPU:0"):
            self._total = tf.Variable(0.0, dtype=tf.float64, trainable=False, name="speedlab_data_wait")

    def wrap(self, ds: tf.data.Dataset) -> tf.data.Dataset:
        total = self._total
        asked = _inline_map(tf.data.Dataset.counter(), lambda _: tf.timestamp())

        def handed_over(t_asked, batch):
            total.assign_add(tf.timestamp() - t_asked)
            return batch

        return _inline_map(tf.data.Dataset.zip((asked, ds)), handed_over)

    def total(self) -> float:
        """Seconds waited so far (cumulative). Read once per execution, so the cheapest
        read there is: `value()` is one eager op (14 us on a 2-core CPU), `numpy()` two (30 us)."""
        return float(self._total.value())


def train_dataset(x: np.ndarray, y: np.ndarray, classes: int, global_batch: int, replicas: int,
                  seed: int, mixup_alpha: float = 0.0, *, cache: bool = False, parallel_map: bool = True,
                  prefetch: bool = True, meter: Optional[DataWaitMeter] = None,
                  repeat: bool = False, shard: Optional[tuple[int, int]] = None) -> tf.data.Dataset:
    """Shuffled (each epoch, from `seed`), batched training data.

    Args: x (N, H, W, C) uint8 0..255 or float32 in [0, 1]; y int32 (N,).
    Yields (x (global_batch, H, W, C) float32, y (global_batch, classes) float32).
    Mixup (Zhang et al., 2018) is applied to batches when mixup_alpha > 0.
    repeat: one endless stream of epochs (each reshuffled, each ending in its own
    short batch on one replica), so that `fit(steps_per_epoch=...)` keeps one
    iterator for the whole run instead of building a new one every epoch; mixup
    and prefetch then run on across epoch boundaries.
    shard: (index, count) for one replica's own pipeline (engine.training.replica_input):
    every replica builds the same global batches (same seeds, mixup included) and
    keeps slice `index` of `count` equal slices of each, as tf.distribute splits
    a global batch: the same examples, mixed alike, as with one shared pipeline.
    """
    npc = tf.data.AUTOTUNE if parallel_map else None
    prep = _preprocess(classes) if x.dtype == np.uint8 else None
    ds = _source(x, y, classes, prep)
    if cache:
        if prep:
            ds = ds.batch(CACHE_CHUNK).map(prep, **_map_args(npc)).unbatch()
        ds = ds.cache().shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
        ds = ds.batch(global_batch, drop_remainder=replicas > 1)
        if repeat:
            ds = ds.repeat()
    else:
        ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
        ds = ds.batch(global_batch, drop_remainder=replicas > 1)
        if repeat:
            ds = ds.repeat()
        if prep:
            ds = ds.map(prep, **_map_args(npc))
    if mixup_alpha > 0:
        from engine.data.targets import mixup

        ds = mixup(ds, mixup_alpha, seed)
    if shard:
        ds = _replica_slice(ds, *shard)
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    if meter is not None:
        ds = meter.wrap(ds)
    return ds.with_options(_options(parallel_map))


def eval_dataset(x: np.ndarray, y: np.ndarray, classes: int, global_batch: int,
                 replicas: int, *, cache: bool = False, parallel_map: bool = True,
                 prefetch: bool = True, repeat: bool = False,
                 shard: Optional[tuple[int, int]] = None) -> tf.data.Dataset:
    """Validation data in order, never shuffled or mixed; every sample counts
    (the last batch may be partial: tf.distribute splits it over replicas).
    repeat: endless passes, for `validation_steps` = batches per pass (one
    iterator for the whole run).
    shard: (index, count): one replica's slice of every batch (see `train_dataset`
    and `splits_evenly`)."""
    npc = tf.data.AUTOTUNE if parallel_map else None
    prep = _preprocess(classes) if x.dtype == np.uint8 else None
    ds = _source(x, y, classes, prep).batch(global_batch)
    if prep:
        ds = ds.map(prep, **_map_args(npc))
    if cache:  # batches in a fixed order: caching them whole is fine
        ds = ds.cache()
    if repeat:
        ds = ds.repeat()
    if shard:
        ds = _replica_slice(ds, *shard)
    if prefetch:
        ds = ds.prefetch(tf.data.AUTOTUNE)
    return ds.with_options(_options(parallel_map))


def _replica_slice(ds: tf.data.Dataset, index: int, count: int) -> tf.data.Dataset:
    """Slice `index` of `count` of every batch of B examples: examples
    [index * B // count, (index + 1) * B // count), so B / count each when count
    divides B, and at least one each in a partial batch of B >= count."""

    def take(x, y):
        n = tf.shape(x)[0]
        return x[index * n // count:(index + 1) * n // count], y[index * n // count:(index + 1) * n // count]

    return _inline_map(ds, take)


def splits_evenly(samples: int, global_batch: int, count: int) -> bool:
    """Whether every batch of a pass over `samples` (the last one partial) gives each
    of `count` replicas at least one example: per-replica validation needs no empty
    slice (a replica would then average a loss over nothing)."""
    last = samples % global_batch
    return global_batch % count == 0 and samples >= count and (last == 0 or last >= count)


def input_rate(ds: tf.data.Dataset, max_batches: int = 21, max_seconds: float = 2.0) -> Optional[float]:
    """Batches/s of input pipeline `ds` on its own (no model), from iterating it in
    Python after its first batch (start-up excluded); at most `max_batches` or
    about `max_seconds`. Python's iteration adds ~0.1 ms a batch, so very fast
    pipelines read somewhat slow. None if `ds` has fewer than 2 batches.
    Use a separate copy of the training pipeline: iterating advances its
    shuffle seeds and fills its cache."""
    it = iter(ds)
    try:
        next(it)
    except StopIteration:
        return None
    n, t0 = 0, time.perf_counter()
    for _ in range(max_batches - 1):
        try:
            next(it)
        except StopIteration:
            break
        n += 1
        if time.perf_counter() - t0 > max_seconds:
            break
    dt = time.perf_counter() - t0
    return n / dt if n and dt > 0 else None
