"""A per-update cache around one optimizer instance's `_backend_update_step`.

Keras calls `update_step` once per variable inside one `_backend_update_step` call;
anything an update step computes from the step alone (a scheduled momentum, Adam's
bias corrections) would otherwise be traced once per variable (~20 ops each for the
one-cycle momentum: 0.3 s more first trace on the digits CNN). `install` wraps the
instance's `_backend_update_step` so that, while it runs, `once(optimizer, key, make)`
returns the first value made for `key`; outside an update it simply calls `make()`.
"""
from __future__ import annotations

from engine.training.keras_patches.patch import KERAS_3_15, Patch

PATCH = Patch(
    name="backend_update_step",
    fixes="values made from the step alone are traced once per update, not once per variable",
    keras_versions=KERAS_3_15,
    upstream="no upstream issue found",
    internals=("keras.src.optimizers.base_optimizer:BaseOptimizer._backend_update_step",),
    used_by="engine.training.schedules",
)

_ATTR = "_speedlab_once"


def install(optimizer) -> None:
    """Give `optimizer` a per-update cache (idempotent)."""
    if _ATTR in vars(optimizer):
        return
    keras_update = optimizer._backend_update_step
    holder = [None]  # {key: value} while one update is traced

    def backend_update_step(grads, trainable_variables, learning_rate):
        holder[0] = {}
        try:
            return keras_update(grads, trainable_variables, learning_rate)
        finally:
            holder[0] = None

    def get(key, make):
        cache = holder[0]
        if cache is None:  # update_step called on its own: nothing to share with
            return make()
        if key not in cache:
            cache[key] = make()
        return cache[key]

    optimizer._backend_update_step = backend_update_step
    setattr(optimizer, _ATTR, get)


def once(optimizer, key, make):
    """`make()` computed once per update of `optimizer` (see `install`), else every call."""
    get = vars(optimizer).get(_ATTR)
    return get(key, make) if get is not None else make()
