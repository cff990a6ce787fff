"""SpeedLab engine: configures, runs, measures and stores training runs.

The layers and what each may import: docs/architecture.md (the one list; tests/test_imports.py
enforces it). Importing `engine` (and config, store, jobs.runner, report) never imports
TensorFlow; only a worker process does.
"""
from engine.config import RunConfig
from engine.base.errors import ConfigError

__all__ = ["ConfigError", "RunConfig"]
