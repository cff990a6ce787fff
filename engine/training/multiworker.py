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
Consequence, documented in docs/multiworker-and-gpus.md: per-execution losses on a multi-worker
run are the chief's own shard; epoch metrics cover all workers.
The patch itself lives in engine.training.keras_patches.multiworker_fit.
"""
from __future__ import annotations

from engine.training.keras_patches.multiworker_fit import apply  # noqa: F401 (this module's API)
