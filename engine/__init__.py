"""SpeedLab engine: configures, runs, measures and stores training runs.

Importing `engine` (and its config, store, runner, compare, measure modules)
never imports TensorFlow; only the worker process does.
"""
from engine.config import ConfigError, RunConfig

__all__ = ["ConfigError", "RunConfig"]
