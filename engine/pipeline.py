"""tf.data input pipelines: shuffle, batch, prefetch(AUTOTUNE).

Labels are one-hot float32 (batch, classes), so label smoothing and mixup
apply to every run alike and the baseline uses the same loss.
With more than one replica every batch has the same size (the remainder of
each epoch is dropped; RunConfig.dropped_per_epoch says how many samples).
"""
from __future__ import annotations

import numpy as np
import tensorflow as tf


def _options() -> tf.data.Options:
    opts = tf.data.Options()
    # In-memory tensors have no files to shard by; say so instead of letting
    # the strategy try FILE and warn.
    opts.experimental_distribute.auto_shard_policy = tf.data.experimental.AutoShardPolicy.DATA
    return opts


def train_dataset(x: np.ndarray, y: np.ndarray, classes: int, global_batch: int, replicas: int,
                  seed: int, mixup_alpha: float = 0.0) -> tf.data.Dataset:
    """Shuffled (each epoch, from `seed`), batched training data.

    Yields (x (global_batch, H, W, C) float32, y (global_batch, classes) float32).
    Mixup (Zhang et al., 2018) is applied to batches when mixup_alpha > 0.
    """
    y1 = tf.one_hot(y, classes, dtype=tf.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y1))
    ds = ds.shuffle(len(x), seed=seed, reshuffle_each_iteration=True)
    ds = ds.batch(global_batch, drop_remainder=replicas > 1)
    if mixup_alpha > 0:
        from engine.targets import mixup

        ds = mixup(ds, mixup_alpha, seed)
    return ds.prefetch(tf.data.AUTOTUNE).with_options(_options())


def eval_dataset(x: np.ndarray, y: np.ndarray, classes: int, global_batch: int,
                 replicas: int) -> tf.data.Dataset:
    """Validation data in order, never shuffled or mixed; every sample counts
    (the last batch may be partial: tf.distribute splits it over replicas)."""
    y1 = tf.one_hot(y, classes, dtype=tf.float32)
    ds = tf.data.Dataset.from_tensor_slices((x, y1)).batch(global_batch)
    return ds.prefetch(tf.data.AUTOTUNE).with_options(_options())
