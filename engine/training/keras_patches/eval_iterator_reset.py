"""Keep `fit`'s cached validation iterator across epochs.

Keras's `evaluate` resets the cached validation iterator (`_eval_epoch_iterator`) on
every call, by design (upstream declined to cache it: the reset gives every epoch the
same validation data). With an endless validation dataset and ``validation_steps`` =
batches per pass, each epoch already reads exactly one pass, so the reset only drops a
live, prefetching iterator (~150 ms measured) and builds a new one (~100 ms with 2
replicas). `PersistentValidation` turns that reset into a no-op once the iterator exists.
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="eval_iterator_reset",
    fixes="the validation iterator lives for the whole run instead of being rebuilt every epoch",
    keras_versions=KERAS_3_15,
    upstream="https://github.com/keras-team/keras/pull/17399 (declined: the reset is intended)",
    internals=("keras.src.backend.tensorflow.trainer:TensorFlowTrainer.evaluate",
               "keras.src.trainers.epoch_iterator:EpochIterator.reset"),
    used_by="engine.training.build",
)


class PersistentValidation:
    """A Keras callback (first in fit's list) that keeps the cached validation iterator.

    Use only when `engine.training.iterators.persistent_ok(validation_steps,
    steps_per_execution)`. The iterator is kept alive until the process ends (`_KEPT`).
    """

    def __new__(cls):
        import keras

        class _Callback(keras.callbacks.Callback):
            def on_test_begin(self, logs=None):
                it = getattr(self.model, "_eval_epoch_iterator", None)
                if it is not None and not getattr(it, "_speedlab_kept", False):
                    it.reset = lambda: None
                    it._speedlab_kept = True
                    _KEPT.append(it)

        return _Callback()


# Live validation iterators, kept until the process ends: at the end of fit Keras drops
# its reference, and destroying a live iterator over an endless stream took 0.3-1.2 s
# (measured) for nothing, since a worker process ends right after its run (os._exit).
_KEPT: list = []


def uses_cached_iterator() -> bool:
    """Whether this Keras's TF `evaluate` still reads `self._eval_epoch_iterator` (what the callback keeps)."""
    import inspect

    from keras.src.backend.tensorflow.trainer import TensorFlowTrainer

    return "_eval_epoch_iterator" in inspect.getsource(TensorFlowTrainer.evaluate)
