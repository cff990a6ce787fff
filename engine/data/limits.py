"""Limits every data set is held to (user files, registered sets, synthetic data), in one
place so that engine.data.meta and engine.data.userdata share them without importing
each other: image side, decoded size in memory, samples a class needs to be validated."""
from __future__ import annotations

import os

MAX_SIDE = 4096  # pixels a side (and per dimension of a synthetic shape)
# Default cap on a data set's decoded size (samples x H x W x C x bytes per value), MiB.
DEFAULT_MAX_DECODED_MB = 2048
# A class needs this many samples to give one to validation and keep one for training.
MIN_CLASS_SAMPLES = 2


def max_decoded_bytes() -> int:
    """The cap on a data set's decoded size in bytes: $SPEEDLAB_MAX_DECODED_MB
    (MiB), default DEFAULT_MAX_DECODED_MB (2 GiB)."""
    try:
        mb = float(os.environ.get("SPEEDLAB_MAX_DECODED_MB", DEFAULT_MAX_DECODED_MB))
    except ValueError:
        mb = DEFAULT_MAX_DECODED_MB
    return int(mb * 2**20)


def fmt_bytes(n: int) -> str:
    """A byte count for people: GiB, MiB or bytes."""
    if n >= 2**30:
        return f"{n / 2**30:.2f} GiB"
    return f"{n / 2**20:.1f} MiB" if n >= 2**20 else f"{n:,} bytes"


def no_split(class_counts, unit: str = "sample", groups: str = "classes"):
    """'has 1 sample in each of its K classes, so no validation split is possible (...)'
    when no class of `class_counts` has MIN_CLASS_SAMPLES samples (no validation_fraction
    can then leave every class a training sample), else None. The one rule behind both
    engine.data.userdata's refusal and engine.data.meta.check_split's; callers add the fix."""
    counts = [int(c) for c in class_counts]
    if not counts or max(counts) >= MIN_CLASS_SAMPLES:
        return None
    k = sum(1 for c in counts if c)
    return (f"has 1 {unit} in each of its {k} {groups}, so no validation split is possible (a class needs "
            f"{MIN_CLASS_SAMPLES} samples to give one to validation and keep one for training)")
