"""What a run is asked to do, checked before any TensorFlow work (docs/architecture.md).

`run_config` holds `RunConfig` (a frozen dataclass validated on construction) and its
choices; `preflight` checks it against this machine and the user's files; `presets` are
the data sets' named configurations; `transfer_source` resolves a stored run as a
transfer-learning source; `lr_math` scales learning rates with the batch size. This face
is what the rest of the engine imports: `from engine.config import RunConfig`.
"""
from engine.base.errors import ConfigError
from engine.config.run_config import (BACKBONES, BACKENDS, CYCLIC_MODES, DEVICE_TYPES, FUSED_OPTIMIZERS,
                                      MAX_MODEL_KERAS_BYTES, MAX_MODEL_PY_BYTES, MODELS, MUON_CONV,
                                      NO_FLIP_DATASETS, OPTIMIZERS, PRECISIONS, PROGRESSIVE_MODELS, SCHEDULES,
                                      SETTING_HELP, TTA_MODES, RunConfig, baseline_config, comparison_config,
                                      effective_batch_size, nearest_divisible, progressive_side, user_model)

__all__ = ["BACKBONES", "BACKENDS", "CYCLIC_MODES", "DEVICE_TYPES", "FUSED_OPTIMIZERS",
           "MAX_MODEL_KERAS_BYTES", "MAX_MODEL_PY_BYTES", "MODELS", "MUON_CONV", "NO_FLIP_DATASETS", "OPTIMIZERS",
           "PRECISIONS", "PROGRESSIVE_MODELS", "SCHEDULES", "SETTING_HELP", "TTA_MODES", "ConfigError", "RunConfig",
           "baseline_config", "comparison_config", "effective_batch_size", "nearest_divisible", "progressive_side",
           "user_model"]
