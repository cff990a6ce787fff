"""Swap one optimizer instance's `update_step`, and read its slot variables.

engine.training.fused_optimizer applies Adam's and SGD's update with one TensorFlow
kernel per variable (`ResourceApplyAdam`, `ResourceApplyKerasMomentum`, ...). Keras 3
has no hook for a fused update, so the instance's `update_step` is replaced (class and
config stay Keras's, so a saved model loads anywhere), and the kernels need the slots
Keras keeps privately: Adam's `_momentums` / `_velocities` and SGD's `momentums`, found
by `_get_variable_index`.
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="fused_update_step",
    fixes="Adam and SGD updates as one TF kernel per variable (Keras 3 writes ~27 ops per variable for Adam)",
    keras_versions=KERAS_3_15,
    upstream="https://github.com/keras-team/keras/issues/19992 (Keras 3 optimizers dropped tf.raw_ops updates)",
    internals=("keras.src.optimizers.base_optimizer:BaseOptimizer._get_variable_index",
               "keras.src.optimizers.adam:Adam.update_step", "keras.src.optimizers.sgd:SGD.update_step"),
    used_by="engine.training.fused_optimizer",
)


def install(optimizer, update_step) -> None:
    """Make `optimizer` (this instance only) call `update_step(gradient, variable, learning_rate)`."""
    optimizer.update_step = update_step


def installed(optimizer) -> bool:
    """Whether `install` was applied to `optimizer` (or to the one a LossScaleOptimizer wraps)."""
    inner = getattr(optimizer, "inner_optimizer", optimizer)
    return "update_step" in vars(inner)


def adam_slots(optimizer, variable):
    """(first moment, second moment) slot variables of `variable` in a built Keras Adam."""
    i = optimizer._get_variable_index(variable)
    return optimizer._momentums[i], optimizer._velocities[i]


def sgd_momentum_slot(optimizer, variable):
    """The momentum slot variable of `variable` in a built Keras SGD with momentum."""
    return optimizer.momentums[optimizer._get_variable_index(variable)]
