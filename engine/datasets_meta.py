"""What each data set is (shape, classes, size), without loading it or TF.

Validation and the dashboard need these numbers before any data is read.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetInfo:
    """Shape of one example (H, W, C), number of classes, total samples."""

    name: str
    shape: tuple
    classes: int
    samples: int
    description: str


# scikit-learn's bundled copy of the UCI handwritten digits: 1,797 8x8 images.
DIGITS = DatasetInfo("digits", (8, 8, 1), 10, 1797,
                     "scikit-learn's bundled handwritten digits (1,797 real 8x8 images)")

DATASET_NAMES = ("digits", "synthetic")


def dataset_info(name: str, cfg=None) -> DatasetInfo:
    """Info for data set `name`; `cfg` supplies the synthetic shape/classes/samples.

    Raises: engine.config.ConfigError for an unknown name or bad synthetic settings.
    """
    from engine.config import ConfigError

    if name == "digits":
        return DIGITS
    if name == "synthetic":
        shape = tuple(getattr(cfg, "synthetic_shape", (32, 32, 3)))
        classes = getattr(cfg, "synthetic_classes", 10)
        samples = getattr(cfg, "synthetic_samples", 2048)
        if len(shape) != 3 or not all(isinstance(s, int) and not isinstance(s, bool) and 1 <= s <= 4096
                                      for s in shape):
            raise ConfigError("synthetic_shape", list(shape), "is not an image shape",
                              "give three positive integers H, W, C, e.g. 32,32,3")
        if isinstance(classes, bool) or not isinstance(classes, int) or not 2 <= classes <= 100_000:
            raise ConfigError("synthetic_classes", classes, "is out of range", "use 2 or more classes")
        if isinstance(samples, bool) or not isinstance(samples, int) or not 4 <= samples <= 10_000_000:
            raise ConfigError("synthetic_samples", samples, "is out of range",
                              "use between 4 and 10,000,000 samples")
        return DatasetInfo("synthetic", shape, classes, samples,
                           f"random {shape[0]}x{shape[1]}x{shape[2]} images, {classes} classes")
    raise ConfigError("dataset", name, "is not a known data set",
                      f"use one of: {', '.join(DATASET_NAMES)}")
