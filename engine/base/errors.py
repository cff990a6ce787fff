"""Exception types that every stage shares (no imports from engine).

They sit at the bottom of the import graph so that config, data, training and
jobs can all raise them without importing one another.
"""
from __future__ import annotations

from typing import Any


class ConfigError(ValueError):
    """An invalid setting: `field`, the offending `value` and a `fix` for the user.

    `str(err)` is one line: "<field>: <value!r> <problem>; <fix>".
    """

    def __init__(self, field_name: str, value: Any, problem: str, fix: str):
        self.field = field_name
        self.value = value
        self.problem = problem
        self.fix = fix
        super().__init__(f"{field_name}: {value!r} {problem}; {fix}")


class ActiveRunError(RuntimeError):
    """A run is already queued or running in this store (one at a time keeps
    measurements clean: two runs would share and spoil the CPU or GPU)."""

    def __init__(self, run: dict):
        self.run = run
        super().__init__(f"run {run['id']} is {run['status']}: wait for it to end or cancel it "
                         f"(python -m engine cancel {run['id']})")


class TransferError(RuntimeError):
    """The source run's saved model cannot be used (one-line message)."""
