"""Replace an optimizer's learning-rate schedule after it was made.

Keras 3's `optimizer.learning_rate` returns the schedule's current value, not the
schedule: the schedule object itself is only the private `_learning_rate` (the public
setter, given a schedule, writes the same attribute). Transfer learning's unfrozen
phase needs a fresh optimizer whose schedule reads on where the frozen phase stopped
(engine.training.schedules.shift wraps it in `Shifted`).
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="learning_rate_attr",
    fixes="a later training phase continues the LR schedule where it stands (schedule read shifted)",
    keras_versions=KERAS_3_15,
    upstream="no upstream issue found",
    internals=("keras.src.optimizers.base_optimizer:BaseOptimizer._get_current_learning_rate",
               "keras.src.optimizers.base_optimizer:BaseOptimizer.learning_rate"),
    used_by="engine.training.schedules",
)


def schedule_of(optimizer):
    """The optimizer's LearningRateSchedule, or None for a constant learning rate."""
    import keras

    lr = getattr(optimizer, "_learning_rate", None)
    return lr if isinstance(lr, keras.optimizers.schedules.LearningRateSchedule) else None


def set_schedule(optimizer, schedule) -> None:
    """Make `optimizer` read its learning rate from `schedule` (a LearningRateSchedule)."""
    optimizer._learning_rate = schedule
