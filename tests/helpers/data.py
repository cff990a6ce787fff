"""Generated data for the data tests: images with a known pattern and a good .npz's arrays."""
import numpy as np


def images(n, h, w, c=None, start=0):
    """uint8 images whose pixel (i, r, col[, ch]) = (start + i + r + col [+ ch]) % 256."""
    idx = np.indices((n, h, w) + ((c,) if c else ()))
    return ((start + idx.sum(axis=0)) % 256).astype(np.uint8)


def good_arrays():
    return {"x_train": images(20, 6, 5), "y_train": np.arange(20) % 3,
            "x_test": images(6, 6, 5), "y_test": np.array([0, 1, 2, 0, 1, 2])}
