"""Updates that never happen: skipped optimizer updates under float16 loss scaling.

With ``mixed_float16`` Keras wraps the optimizer in a dynamic
``LossScaleOptimizer`` (Micikevicius et al. 2018, "Mixed Precision Training",
arXiv:1710.03740; https://keras.io/api/mixed_precision/loss_scale_optimizer/):
the loss is multiplied by a scale before the backward pass; when any gradient
is then not finite the step is *skipped* (weights and the optimizer's
``iterations`` unchanged) and the scale halved; after 2,000 finite steps it is
doubled. So batches run and updates applied can differ, and a run whose every
update is skipped shows a flat loss next to a healthy throughput.

`UpdateTracker` reads ``optimizer.iterations`` (applied updates) and the
dynamic scale after each execution (two variable reads, only for float16
runs) and gives per execution: applied updates so far, updates skipped in it,
the loss scale. Other precisions never skip: updates = batches, scale None.
A run stops as failed after MAX_CONSECUTIVE_SKIPS skipped updates in a row.
"""
from __future__ import annotations

from typing import Optional

# A run is stopped (failed) after this many consecutive skipped updates: with the scale
# halved at each, 50 skips take the default initial scale 2**15 to 2**-35, far below
# any scale that could still help.
MAX_CONSECUTIVE_SKIPS = 50
FIXES = "try mixed_bfloat16, float32 or a lower learning rate"


def _read(var) -> float:
    import keras

    return float(keras.ops.convert_to_numpy(var))


class UpdateTracker:
    """Applied and skipped optimizer updates and the loss scale, per execution.

    Call `attach(model)` at the start of every fit (a later training phase may
    compile a fresh optimizer, whose iterations restart at 0) and
    `after(batches)` after each execution of `batches` batches.

    Attributes: applied (updates applied in the run so far), skipped (total
    skipped), consecutive (skipped in a row: exact at one step per execution;
    with several, an execution that applied any update resets it), scale (the
    latest loss scale or None), max_consecutive.
    """

    def __init__(self, max_consecutive: int = MAX_CONSECUTIVE_SKIPS):
        self.max_consecutive = int(max_consecutive)
        self.applied = 0
        self.skipped = 0
        self.consecutive = 0
        self.scale: Optional[float] = None
        self._opt = None
        self._scaled = False
        self._base = 0
        self._start = 0
        self._sync = None

    def attach(self, model) -> None:
        from keras.optimizers import LossScaleOptimizer

        self._sync = None
        import keras

        if keras.backend.backend() == "jax":
            # JAX keeps the model's state off its variables during an epoch (Keras's JAX trainer
            # purges them); reading iterations there failed every JAX float16 run with
            # "'NoneType' object is not callable". Keras's own callbacks sync first, as here.
            self._sync = getattr(model, "jax_state_sync", None)
        opt = model.optimizer
        if opt is self._opt:
            return
        self._opt = opt
        self._scaled = isinstance(opt, LossScaleOptimizer)
        self._base = self.applied
        self._start = int(_read(opt.iterations)) if self._scaled else 0

    def after(self, batches: int) -> tuple[int, int, Optional[float]]:
        """(applied updates so far, updates skipped in this execution, loss scale or None)."""
        if not self._scaled:
            self.applied += batches
            self.consecutive = 0
            return self.applied, 0, None
        if self._sync is not None:
            self._sync()  # float16 runs only: other precisions never read a variable here
        applied = self._base + int(_read(self._opt.iterations)) - self._start
        new = applied - self.applied
        skipped = max(0, batches - new)
        self.applied = applied
        self.skipped += skipped
        self.consecutive = self.consecutive + skipped if new == 0 else 0
        self.scale = _read(self._opt.dynamic_scale)
        return applied, skipped, self.scale

    @property
    def stalled(self) -> bool:
        """Whether MAX_CONSECUTIVE_SKIPS updates in a row have been skipped."""
        return self.consecutive >= self.max_consecutive

    def stall_message(self) -> str:
        """The one-line error of a run stopped for consecutive skipped updates."""
        return (f"gradients non-finite for {self.consecutive} consecutive steps under float16 loss scaling "
                f"(loss scale {self.scale:g}, {self.applied} updates applied); {FIXES}")

    def nan_note(self) -> str:
        """What to add to a 'loss became NaN' error when updates were skipped before it ('' if none)."""
        if not self.skipped:
            return ""
        return (f" after {self.skipped} skipped updates (gradients overflowed float16; loss scale "
                f"{self.scale:g}); {FIXES}")
