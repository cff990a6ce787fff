"""What every Keras patch declares about itself (engine.training.keras_patches)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Patch:
    """One place where SpeedLab replaces or reads a Keras internal.

    name: the patch module's name; fixes: what it fixes or saves, in a line;
    keras_versions: the exact Keras versions it was written and tested for
    (tests/test_keras_patches.py fails on any other); upstream: the upstream issue
    or pull request, or "no upstream issue found"; internals: the Keras names it
    touches, as "module:attribute.path" (checked to exist by the test);
    used_by: the SpeedLab module that applies it.
    """

    name: str
    fixes: str
    keras_versions: tuple[str, ...]
    upstream: str
    internals: tuple[str, ...]
    used_by: str


KERAS_3_15 = ("3.15.1",)  # requirements.txt's pin, the version every patch here was written against
