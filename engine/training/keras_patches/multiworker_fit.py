"""Keras 3's `fit` under MultiWorkerMirroredStrategy (TF backend), two narrow workarounds.

1. `fit` first reduces one distributed batch with `strategy.reduce("MEAN", ...)` only
   to build the model symbolically; the collective strategy cannot reduce that
   PerReplica value ("Attempt to convert a value (PerReplica...) to a Tensor"). The
   model's `_maybe_symbolic_build` is handed a local batch instead.
2. Per-step logs are reduced with `strategy.reduce("MEAN", v, axis=0)` on scalars
   ("Invalid reduction dimension 0"): the TF trainer's
   `_collective_all_reduce_multi_worker` is made to answer False, so logs are reduced
   over this worker's replicas, as single-worker strategies do. Epoch-end metrics are
   unaffected (sync-on-read variables summed over all workers), so per-execution
   losses are the chief's own shard while epoch metrics cover all workers.
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="multiworker_fit",
    fixes="fit under MultiWorkerMirroredStrategy: symbolic build on a local batch, per-step logs reduced locally",
    keras_versions=KERAS_3_15,
    upstream="https://github.com/keras-team/keras/issues/20585 (also tensorflow/tensorflow#72388)",
    internals=("keras.src.backend.tensorflow.trainer:_collective_all_reduce_multi_worker",
               "keras.src.backend.tensorflow.trainer:TensorFlowTrainer._maybe_symbolic_build"),
    used_by="engine.training.build",
)


def apply(model, sample_batch) -> None:
    """Patch `model` (and the Keras TF trainer) for multi-worker `fit`.

    sample_batch: one un-distributed (x, y) batch of the training data.
    Raises: RuntimeError when this Keras no longer has the patched internals
    (then check whether the upstream issues are fixed and drop this module).
    """
    import keras
    from keras.src.backend.tensorflow import trainer as tf_trainer

    if not hasattr(tf_trainer, "_collective_all_reduce_multi_worker") or \
            not hasattr(model, "_maybe_symbolic_build"):
        raise RuntimeError(f"Keras {keras.__version__}: multi-worker workaround no longer applies")
    tf_trainer._collective_all_reduce_multi_worker = lambda strategy: False
    original = model._maybe_symbolic_build

    def build(iterator=None, data_batch=None):
        return original(iterator=None, data_batch=data_batch if data_batch is not None else sample_batch)

    model._maybe_symbolic_build = build
