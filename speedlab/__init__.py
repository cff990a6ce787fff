"""SpeedLab's public module for user scripts: ``from speedlab import SpeedLabCallback``.

Installed with ``pip install -e PATH/TO/SPEEDLAB``, which installs this package only. The
repository's own package, ``engine``, is not installed into the user's environment: this module
finds it in the repository it lives in and puts that folder on sys.path only when the callback is
first used (``SpeedLabCallback`` is looked up lazily), so ``import speedlab`` costs nothing and
imports no framework. If the user's environment already has another top-level ``engine``,
the callback refuses with one ImportError naming both paths rather than mixing them up.
"""
from __future__ import annotations

import os
import sys

__all__ = ["SpeedLabCallback", "repository"]


def repository() -> str:
    """The SpeedLab repository folder this package belongs to (it holds engine/)."""
    return os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _engine():
    root = repository()
    mod = sys.modules.get("engine")
    if mod is not None:
        where = os.path.dirname(os.path.dirname(os.path.abspath(getattr(mod, "__file__", "") or "")))
        if where != root:
            raise ImportError(f"speedlab: another package named 'engine' is imported ({mod.__file__}); "
                              f"SpeedLab's engine is in {root}")
    elif root not in sys.path:
        sys.path.append(root)  # last: never shadows the user's own modules


def __getattr__(name: str):
    if name == "SpeedLabCallback":
        _engine()
        from engine.training.script_run import SpeedLabCallback

        _engine()  # the engine imported must be this repository's
        return SpeedLabCallback
    raise AttributeError(f"module 'speedlab' has no attribute {name!r}")
