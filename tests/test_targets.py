"""One-hot labels, mixup in tf.data, and the label-smoothed loss."""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before TF is imported

import numpy as np
import pytest

from engine.config import RunConfig
from tests.helpers.lazy import lazy

pytestmark = pytest.mark.tf  # lane: docs/testing.md

keras = lazy("keras")
tf = lazy("tensorflow")
targets = lazy("engine.data.targets")


def batches(ds):
    return [tuple(np.asarray(t) for t in b) for b in ds.as_numpy_iterator()]


def identity_ds(n, batch):
    """Example i is x_i = e_i (n features) with label y_i = e_i (n classes), so a
    mixed row reveals its lambda and partner, and x and y must mix identically."""
    eye = np.eye(n, dtype=np.float32)
    return tf.data.Dataset.from_tensor_slices((eye, eye)).batch(batch)


def test_one_hot():
    got = targets.one_hot(tf.constant([2, 0], tf.int64), 3)
    assert got.dtype == tf.float32
    np.testing.assert_array_equal(got.numpy(), [[0, 0, 1], [1, 0, 0]])


def test_the_training_loss_smooths_labels():
    from engine.training.build import loss

    # 10 classes, eps 0.1: target 0.9 + 0.01 = 0.91 on the true class, 0.01 elsewhere.
    # p = (0.55, 0.05 x 9): CE = -(0.91 ln 0.55 + 9 * 0.01 ln 0.05)
    #   = 0.91 * 0.597837000756 + 0.09 * 2.995732273554 = 0.813647575307
    y = np.eye(10, dtype=np.float32)[[0]]
    p = np.array([[0.55] + [0.05] * 9], np.float32)
    assert float(loss(RunConfig(label_smoothing=0.1))(y, p)) == pytest.approx(0.813647575307, rel=1e-5)
    # no smoothing: -ln 0.55
    assert float(loss(RunConfig())(y, p)) == pytest.approx(0.597837000756, rel=1e-5)


def test_mixup_mixes_x_and_y_with_one_lambda_and_partner():
    n = 512
    (x, y), = batches(targets.mixup(identity_ds(n, n), alpha=0.4, seed=3))
    assert x.dtype == np.float32 and y.dtype == np.float32
    np.testing.assert_allclose(y.sum(axis=1), 1.0, rtol=1e-6)  # label rows sum to 1
    np.testing.assert_array_equal(x, y)  # same lambda and same partner for x and y
    assert x.min() >= 0.0 and x.max() <= 1.0
    # each row is lam*e_i + (1-lam)*e_p: at most two nonzeros, the own one among them
    assert ((x > 0).sum(axis=1) <= 2).all()
    lam = np.diag(x)
    assert ((lam >= 0) & (lam <= 1)).all()
    mixed = (x > 0).sum(axis=1) == 2
    assert mixed.mean() > 0.9  # a random partner is rarely the example itself
    # Beta(0.4, 0.4): mean 0.5, variance ab/((a+b)^2 (a+b+1)) = 0.16/(0.64*1.8) = 0.1389
    assert lam[mixed].mean() == pytest.approx(0.5, abs=0.05)
    assert lam[mixed].var() == pytest.approx(0.1389, abs=0.02)


def test_mixup_images_and_determinism():
    # image i (uint8, 2x2x1) is filled with the value i; its label is e_i (16 classes),
    # so a mixed label row y gives the expected mixed pixel value y . (0, 1, ..., 15).
    idx = np.arange(16)
    x = (idx[:, None, None, None] * np.ones((16, 2, 2, 1))).astype(np.uint8)
    ds = tf.data.Dataset.from_tensor_slices((x, np.eye(16, dtype=np.float32))).batch(8)
    a = targets.mixup(ds, alpha=1.0, seed=7)
    first, second = batches(a), batches(a)  # two epochs of one pipeline
    again = batches(targets.mixup(ds, alpha=1.0, seed=7))
    for (xa, ya), (xb, yb) in zip(first, again):  # same seed -> same batches
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    assert not np.array_equal(first[0][1], second[0][1])  # new draws each epoch
    for xa, ya in first:
        assert xa.shape == (8, 2, 2, 1) and xa.dtype == np.float32
        expected = (ya @ idx)[:, None, None, None] * np.ones((1, 2, 2, 1))
        np.testing.assert_allclose(xa, expected, rtol=1e-5, atol=1e-5)
        assert not np.isin(ya, [0.0, 1.0]).all()  # Beta(1, 1) = uniform: rows are mixed


def test_alpha_zero_is_identity():
    ds = identity_ds(8, 4)
    for (xa, ya), (xb, yb) in zip(batches(targets.mixup(ds, alpha=0.0, seed=1)), batches(ds)):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
