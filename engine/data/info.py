"""`DatasetInfo`: one data set as training sees it (no engine imports).

Its own module so that the data set catalogue (engine.data.meta) and the user
data reader (engine.data.userdata) can both build it without importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DatasetInfo:
    """One data set as training sees it.

    shape: one image (H, W, C); classes: K; samples: images in the training
    pool (validation_fraction of it held out: validation, and half of it the
    test set unless the data set has its own test split); test_samples: images
    in that test split (the test set, only reported; 0 = none); class_counts / test_class_counts:
    images per class (empty when unknown, e.g. synthetic); labels: the
    original labels kept by label_subset, in new-label order (empty = all).
    """

    name: str
    shape: tuple
    classes: int
    samples: int
    description: str
    test_samples: int = 0
    class_counts: tuple = ()
    test_class_counts: tuple = ()
    class_names: tuple = ()
    source: str = ""
    labels: tuple = ()
