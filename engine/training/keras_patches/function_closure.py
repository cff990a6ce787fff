"""Find the tf.function inside Keras's `train_function` / `test_function`.

engine.training.eval_trace traces the evaluation step on a background thread while the
first epoch trains. Keras's `make_test_function` returns a plain Python function whose
closure holds the `tf.function` (`multi_step_on_iterator`); there is no public handle
to it, so the closure's cells are searched for an object with `get_concrete_function`.
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="function_closure",
    fixes="the evaluation step's graph is traced during the first epoch, not after it",
    keras_versions=KERAS_3_15,
    upstream="no upstream issue found",
    internals=("keras.src.backend.tensorflow.trainer:TensorFlowTrainer.make_test_function",
               "keras.src.backend.tensorflow.trainer:TensorFlowTrainer.make_train_function"),
    used_by="engine.training.eval_trace",
)


def tf_function(function):
    """The tf.function (multi_step_on_iterator) inside Keras's train or test function closure, or None."""
    for cell in getattr(function, "__closure__", None) or ():
        obj = cell.cell_contents
        if hasattr(obj, "get_concrete_function"):
            return obj
    return None
