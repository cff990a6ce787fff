"""Values computed once per optimizer update, shared by every variable's update.

Keras calls `update_step` once per variable inside one `_backend_update_step`
call; anything an update step computes from the step alone (a scheduled
momentum, Adam's bias corrections) would otherwise be traced once per variable.
`install` wraps one optimizer instance's `_backend_update_step` so that, while it
runs, `once(optimizer, key, make)` returns the first value made for `key`; outside
an update it simply calls `make()`. Used by engine.training.schedules (the
one-cycle momentum) and engine.training.fused_optimizer (the step's scalars).
The patch (`install`, `once`) lives in engine.training.keras_patches.backend_update_step.
"""
from __future__ import annotations

from engine.training.keras_patches.backend_update_step import install, once  # noqa: F401 (this module's API)
