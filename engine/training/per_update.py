"""Values computed once per optimizer update, shared by every variable's update.

Keras calls `update_step` once per variable inside one `_backend_update_step`
call; anything an update step computes from the step alone (a scheduled
momentum, Adam's bias corrections) would otherwise be traced once per variable.
`install` wraps one optimizer instance's `_backend_update_step` so that, while it
runs, `once(optimizer, key, make)` returns the first value made for `key`; outside
an update it simply calls `make()`. Used by engine.training.schedules (the
one-cycle momentum) and engine.training.fused_optimizer (the step's scalars).
"""
from __future__ import annotations

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
