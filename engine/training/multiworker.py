"""Workarounds that let Keras 3's `fit` run under MultiWorkerMirroredStrategy.

Keras 3.15 (the TF backend) breaks MultiWorkerMirroredStrategy in two places
(keras-team/keras#20585, tensorflow/tensorflow#72388):
1. `fit` first reduces one distributed batch with `strategy.reduce("MEAN", ...)`
   only to build the model's metrics symbolically; the collective strategy
   cannot reduce that PerReplica value ("Attempt to convert a value
   (PerReplica...) to a Tensor").  We hand it a local batch instead.
2. Per-step logs are reduced with `strategy.reduce("MEAN", v, axis=0)` on
   scalars ("Invalid reduction dimension 0").  We reduce them over this
   worker's replicas, as single-worker strategies do.  Epoch-end metrics are
   unaffected: Keras reads the metric variables (sync-on-read, summed over all
   workers) at the end of each epoch and of validation, so they stay global.
Consequence, documented in the README: per-execution losses on a multi-worker
run are the chief's own shard; epoch metrics cover all workers.
"""
from __future__ import annotations

import keras


def apply(model, sample_batch) -> None:
    """Patch `model` (and the Keras TF trainer) for multi-worker `fit`.

    sample_batch: one un-distributed (x, y) batch of the training data.
    Raises: RuntimeError when this Keras no longer has the patched internals
    (then check whether the upstream issues are fixed and drop this module).
    """
    from keras.src.backend.tensorflow import trainer as tf_trainer

    if not hasattr(tf_trainer, "_collective_all_reduce_multi_worker") or \
            not hasattr(model, "_maybe_symbolic_build"):
        raise RuntimeError(f"Keras {keras.__version__}: multi-worker workaround no longer applies")
    tf_trainer._collective_all_reduce_multi_worker = lambda strategy: False
    original = model._maybe_symbolic_build

    def build(iterator=None, data_batch=None):
        return original(iterator=None, data_batch=data_batch if data_batch is not None else sample_batch)

    model._maybe_symbolic_build = build
