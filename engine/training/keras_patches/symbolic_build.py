"""Build the model once per compile from the data's element spec, and skip Keras's
per-call symbolic build.

Under a tf.distribute strategy each `fit`/`evaluate` pulls a batch and reduces it
across replicas only to build the model symbolically (`_maybe_symbolic_build`):
71-114 ms an epoch with 2 replicas on a 2-core CPU, and a lost batch on a persistent
iterator. Without a strategy Keras defers the build (metrics, loss tracker, optimizer
slots) into the first trace of the train step, and a tf.function that creates
variables is traced twice. Keras has no public switch for either, so `build_once`
runs the base Trainer's `_symbolic_build` itself and makes the per-call build a no-op.
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="symbolic_build",
    fixes="one symbolic build per compile: no batch pulled per fit/evaluate, the first train step traced once",
    keras_versions=KERAS_3_15,
    upstream="no upstream issue found (the trace-twice rule: https://github.com/tensorflow/tensorflow/issues/48851)",
    internals=("keras.src.backend.tensorflow.trainer:TensorFlowTrainer._maybe_symbolic_build",
               "keras.src.trainers.trainer:Trainer._symbolic_build"),
    used_by="engine.training.build",
)


def supported() -> bool:
    """Whether this Keras has the TF trainer's `_maybe_symbolic_build` to bypass."""
    try:
        from keras.src.backend.tensorflow.trainer import TensorFlowTrainer
    except ImportError:
        return False
    return callable(getattr(TensorFlowTrainer, "_maybe_symbolic_build", None))


def build_once(model, element_spec) -> None:
    """Build `model`'s layers, compiled metrics and loss from `element_spec`
    ((x TensorSpec, y TensorSpec) of a batch) under its strategy, then make
    Keras's per-call symbolic build a no-op for this model.

    Without a strategy (one device) Keras would build nothing here and leave it to
    the first trace, which then creates variables and is traced twice; so the
    base Trainer's `_symbolic_build` runs here instead (metrics, loss tracker,
    optimizer slots), as Keras's own build does under a strategy.
    Call after every `compile` (a recompile creates unbuilt metrics).
    Raises whatever Keras raises for a model that cannot be built from the spec.
    """
    if getattr(model, "_distribute_strategy", None) is None:
        # Keras defers this build into the first trace when no strategy is set; a
        # tf.function that creates variables (metrics, loss tracker, optimizer slots) is
        # traced twice, so building them here halves the first step's trace.
        from keras.src.trainers.trainer import Trainer

        Trainer._symbolic_build(model, data_batch=element_spec)
    else:
        cls_build = type(model)._maybe_symbolic_build  # the real one, also after a previous build_once
        cls_build(model, data_batch=element_spec)
    model._maybe_symbolic_build = lambda iterator=None, data_batch=None: None
