"""Training targets: one-hot labels, mixup and the (label-smoothed) loss.

Order: labels -> one-hot -> mixup (tf.data, training only) -> label smoothing
(inside the loss), so smoothing applies to the mixed targets.

Why not `keras.layers.MixUp` (checked with Keras 3.15): it draws from a
SeedGenerator *variable*, so a tf.data map with num_parallel_calls is not
reproducible run to run; it casts to the global dtype policy (under
mixed_float16 it fails on float32 labels unless given dtype="float32"); and it
assumes rank-4 images. `mixup` below is stateless: each batch's randomness
comes from `tf.data.Dataset.random(seed)`, so it is deterministic and
parallel-safe, and it mixes any rank in float32.
"""
from __future__ import annotations

import tensorflow as tf

AUTOTUNE = tf.data.AUTOTUNE


def one_hot(labels, classes: int) -> tf.Tensor:
    """Integer labels of shape (...) -> float32 one-hot of shape (..., classes)."""
    return tf.one_hot(tf.cast(labels, tf.int32), classes, dtype=tf.float32)


def _mix_batch(xy, batch_seed, alpha: float):
    x, y = tf.cast(xy[0], tf.float32), tf.cast(xy[1], tf.float32)
    n = tf.shape(x)[0]

    def seed(k):  # independent stateless streams for the two gammas and the shuffle
        return tf.stack([batch_seed, tf.constant(k, tf.int64)])

    # lambda ~ Beta(alpha, alpha) = G1 / (G1 + G2), G ~ Gamma(alpha), one per example.
    g1 = tf.random.stateless_gamma([n], seed(0), alpha, dtype=tf.float32)
    g2 = tf.random.stateless_gamma([n], seed(1), alpha, dtype=tf.float32)
    lam = tf.where(g1 + g2 > 0, g1 / (g1 + g2), 1.0)  # both underflow only for tiny alpha
    partner = tf.argsort(tf.random.stateless_uniform([n], seed(2)))

    def blend(t):
        w = tf.reshape(lam, [-1] + [1] * (t.shape.rank - 1))
        return w * t + (1.0 - w) * tf.gather(t, partner)

    return blend(x), blend(y)


def mixup(ds: tf.data.Dataset, alpha: float, seed: int) -> tf.data.Dataset:
    """Mixup (Zhang et al. 2018, "mixup: Beyond Empirical Risk Minimization").

    `ds` yields batches (x of shape (B, ...), y float one-hot (B, classes)).
    Each example i becomes lam_i * (x_i, y_i) + (1 - lam_i) * (x_p, y_p), with p
    a random partner in the same batch and lam_i ~ Beta(alpha, alpha) drawn per
    example (as keras.layers.MixUp; the paper's code draws one per batch).
    Outputs are float32; label rows still sum to 1. alpha <= 0 returns `ds`
    unchanged. Deterministic for a given `seed`; differs from epoch to epoch.
    """
    if alpha <= 0:
        return ds
    seeds = tf.data.Dataset.random(seed=seed, rerandomize_each_iteration=True)
    pairs = tf.data.Dataset.zip((ds, seeds))
    return pairs.map(lambda xy, s: _mix_batch(xy, s, float(alpha)), num_parallel_calls=AUTOTUNE)

