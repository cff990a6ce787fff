"""SpeedLab engine: configures, runs, measures and stores training runs.

Layers, lowest first (tests/test_imports.py enforces them and the absence of cycles):
errors, process, lr_math, store, bundle, cluster -> data, hardware -> config -> transfer_source,
preflight -> report -> training -> jobs -> cli. Importing `engine` (and config, store, jobs.runner,
report) never imports TensorFlow; only a worker process does.
"""
from engine.config import RunConfig
from engine.errors import ConfigError

__all__ = ["ConfigError", "RunConfig"]
