"""Every place SpeedLab patches or reaches into Keras internals: one module per patch.

Each module holds the patching code and a `PATCH` record (engine.training.keras_patches.patch.Patch):
what it fixes, the exact Keras versions it was written for, the upstream issue, and the
Keras internals it touches. tests/test_keras_patches.py fails when the installed Keras is
not one of those versions or an internal is gone: then read the upstream issue, check the
patch against the new Keras, and add the version (or drop the patch).
Nothing here imports Keras or TensorFlow at import time.

| patch | fixes | Keras | upstream | applied by |
|---|---|---|---|---|
| multiworker_fit | `fit` under MultiWorkerMirroredStrategy (symbolic build, per-step log reduction) | 3.15.1 | keras-team/keras#20585, tensorflow/tensorflow#72388 | training.build |
| symbolic_build | one symbolic build per compile; first train step traced once | 3.15.1 | none found (TF's trace-twice rule: tensorflow/tensorflow#48851) | training.build, training.iterators |
| eval_iterator_reset | validation iterator kept for the whole run | 3.15.1 | keras-team/keras#17399 (declined) | training.build |
| backend_update_step | per-update values traced once, not per variable | 3.15.1 | none found | training.schedules, training.fused_optimizer |
| learning_rate_attr | a later phase continues the LR schedule (shifted) | 3.15.1 | none found | training.schedules |
| fused_update_step | Adam / SGD as one TF kernel per variable | 3.15.1 | keras-team/keras#19992 (related) | training.fused_optimizer |
| eager_metrics_readout | compiled metric reset / read-out under MirroredStrategy | 3.15.1 | none found | training.build |
| function_closure | the evaluation step traced during the first epoch | 3.15.1 | none found | training.eval_trace |
"""
from __future__ import annotations

import importlib

NAMES = ("multiworker_fit", "symbolic_build", "eval_iterator_reset", "backend_update_step",
         "learning_rate_attr", "fused_update_step", "eager_metrics_readout", "function_closure")


def registry() -> list:
    """Every patch's `Patch` record, in the table's order (imports the patch modules, not Keras)."""
    return [importlib.import_module(f"{__name__}.{n}").PATCH for n in NAMES]
