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
