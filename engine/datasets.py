"""Loading data sets as NumPy arrays (no TF): the bundled digits and synthetic images.

Arrays: x float32 of shape (N, H, W, C) scaled to [0, 1]; y int32 of shape (N,).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from engine.datasets_meta import dataset_info


@dataclass
class Split:
    """Train and validation arrays plus the data set's shape and class count."""

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    classes: int
    shape: tuple


def load(cfg) -> Split:
    """Load `cfg.dataset` and split off ceil(validation_fraction x N) validation
    samples, stratified by class and reproducible from `cfg.seed`."""
    info = dataset_info(cfg.dataset, cfg)
    if cfg.dataset == "digits":
        from sklearn.datasets import load_digits

        d = load_digits()  # shipped inside scikit-learn: no network
        x = (d.images.astype(np.float32) / 16.0)[..., None]  # pixel values are 0..16
        y = d.target.astype(np.int32)
    else:
        x, y = synthetic(info.shape, info.classes, info.samples, cfg.seed)
    xt, yt, xv, yv = stratified_split(x, y, cfg.validation_fraction, cfg.seed)
    return Split(xt, yt, xv, yv, info.classes, info.shape)


def synthetic(shape: tuple, classes: int, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random images in [0, 1) and uniform random labels (throughput only)."""
    rng = np.random.default_rng(seed)
    x = rng.random((samples, *shape), dtype=np.float32)
    y = rng.integers(0, classes, size=samples, dtype=np.int32)
    return x, y


def stratified_split(x, y, fraction: float, seed: int):
    """(x_train, y_train, x_val, y_val) with ceil(fraction x N) validation samples,
    drawn per class in proportion (scikit-learn's train_test_split)."""
    from sklearn.model_selection import train_test_split

    n_val = math.ceil(fraction * len(y))
    counts = np.bincount(y)
    strat = y if counts[counts > 0].min() >= 2 and n_val >= len(counts) else None
    xt, xv, yt, yv = train_test_split(x, y, test_size=n_val, random_state=seed, stratify=strat)
    return xt, yt, xv, yv
