"""Compiled metric reset and read-out on one model instance (several in-process replicas).

Under a MirroredStrategy every metric variable is sync-on-read with one copy per
replica; Keras resets (`reset_metrics`) and reads (`get_metrics_result`) them eagerly at
the start and end of every epoch and validation, one cross-device op per variable:
3.3 ms per reset and 2.0 ms per read-out with 2 simulated replicas (about a sixth of a
digits epoch at batch 256). As one `tf.function` each: 0.24 and 0.30 ms. Inside a traced
step (Keras computes the step's logs with `get_metrics_result` in replica context) the
original method runs, so the step graph is unchanged. Values are Keras's own (tested).
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="eager_metrics_readout",
    fixes="epoch-edge metric reset and read-out compiled instead of one eager cross-replica op per variable",
    keras_versions=KERAS_3_15,
    upstream="no upstream issue found",
    internals=("keras.src.trainers.trainer:Trainer.reset_metrics",
               "keras.src.trainers.trainer:Trainer.get_metrics_result"),
    used_by="engine.training.build",
)


def compile_readout(model) -> None:
    """Give `model` (compiled, metrics built) a compiled `reset_metrics` and
    `get_metrics_result` for calls from eager code; calls made while a function
    is being traced go to Keras's own methods. Call after every `compile`: a
    recompile makes new metric objects. Raises nothing itself."""
    import tensorflow as tf

    cls = type(model)
    metrics = list(model.metrics)  # the compiled functions are traced over these objects

    @tf.function(autograph=False)
    def reset():
        for m in metrics:
            m.reset_state()

    read = tf.function(lambda: cls.get_metrics_result(model), autograph=False)

    def reset_metrics():
        if tf.inside_function():
            return cls.reset_metrics(model)
        reset()

    def get_metrics_result():
        if tf.inside_function():
            return cls.get_metrics_result(model)
        return read()

    model.reset_metrics = reset_metrics
    model.get_metrics_result = get_metrics_result
    # Traced here, with the model's compile, not at the first epoch inside fit.
    reset()
    read()


def worth_it(strategy, workers: int) -> bool:
    """Whether `strategy` keeps one copy of each metric variable per replica in
    this process (MirroredStrategy over several devices, one worker): only there
    is the eager reset and read-out a cross-device operation per variable."""
    import tensorflow as tf

    return isinstance(strategy, tf.distribute.MirroredStrategy) and strategy.num_replicas_in_sync > 1 \
        and workers == 1
