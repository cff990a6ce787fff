"""Loading data sets as NumPy arrays (no TF, except to download a Keras data set).

Arrays: x of shape (N, H, W, C), either float32 in [0, 1] (digits, synthetic,
float user data) or uint8 0..255 (mnist5k, Keras data sets, image folders, uint8 user
data; the input pipeline scales these by 1/255); y int32 of shape (N,).
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from engine.data.meta import KERAS_DATASETS, TEST_SEED, USER_PREFIX, dataset_info, test_count


class DataUnavailable(RuntimeError):
    """The data cannot be read or downloaded (one-line message for the user)."""


@dataclass
class Split:
    """Train, validation and test arrays plus the data set's shape and class count.

    Validation data decides everything a run steers by (the target, stopping, the
    autopilot's choice); the test data decides nothing and is only reported
    (engine.data.meta.test_count). validation: always 'split' (held out from the
    training data, stratified, by cfg.validation_seed: the same for every run seed).
    test: 'split' (a fixed stratified draw, engine.data.meta.TEST_SEED, the same for every
    run of the data set) or
    'test' (the data set's own test split).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray
    classes: int
    shape: tuple
    class_names: tuple = ()
    validation: str = "split"
    x_test: Optional[np.ndarray] = None
    y_test: Optional[np.ndarray] = None
    test: str = "split"


def load(cfg) -> Split:
    """Load `cfg.dataset` (restricted to `cfg.label_subset`) and split it.
    ceil(validation_fraction x N) samples are held out of training, stratified by
    class. With a test split of its own they are all validation (drawn by
    `cfg.validation_seed`) and the own test split is the test set; without one, test_count
    of them are the test set (drawn first by TEST_SEED: the same for every run) and the
    rest validation (by `cfg.validation_seed`). Neither draw follows `cfg.seed`: seeds
    differ in weights, order and augmentation, and all meet the same validation samples.
    Sizes: cfg.data_sizes(), cfg.test_size().

    Raises: DataUnavailable (download failed, file changed since validation).
    """
    info = dataset_info(cfg.dataset, cfg)
    test = None
    if cfg.dataset == "digits":
        x, y = digits()
    elif cfg.dataset == "mnist5k":
        from engine.data import mnist5k

        try:
            x, y = mnist5k.load()
        except mnist5k.BundledDataMissing as e:
            raise DataUnavailable(f"dataset mnist5k: {e}") from None
    elif cfg.dataset == "synthetic":
        x, y = synthetic(info.shape, info.classes, info.samples, cfg.seed)
    elif cfg.dataset in KERAS_DATASETS:
        x, y, *test = keras_dataset(cfg.dataset)
    else:
        from engine.data import userdata

        if cfg.dataset.startswith(USER_PREFIX):
            a = userdata.load_registered(cfg.dataset[len(USER_PREFIX):])
        else:
            try:
                a = userdata.load_path(cfg.dataset).arrays
            except userdata.DataError as e:
                raise DataUnavailable(f"dataset {cfg.dataset}: {e}") from None
        x, y = a["x_train"], a["y_train"]
        if "x_test" in a:
            test = [a["x_test"], a["y_test"]]
    if info.labels:
        x, y = keep_labels(x, y, info.labels)
        if test:
            test = list(keep_labels(*test, info.labels))
    if test:  # validation comes off the training data; the own test split is only reported
        xt, yt, xv, yv = stratified_split(x, y, cfg.validation_fraction, cfg.validation_seed)
        xs, ys, test_kind = test[0], test[1], "test"
    else:
        # The test draw first, by a seed of its own: every run of the data set shares it.
        n_held = math.ceil(cfg.validation_fraction * len(y))
        rest_x, rest_y, xs, ys = stratified_split(x, y, cfg.validation_fraction, TEST_SEED,
                                                  count=test_count(n_held))
        xt, yt, xv, yv = stratified_split(rest_x, rest_y, cfg.validation_fraction, cfg.validation_seed,
                                          count=n_held - test_count(n_held))
        test_kind = "split"
    want = cfg.data_sizes()
    if (len(xt), len(xv)) != want:
        raise DataUnavailable(f"dataset {cfg.dataset} changed since the run was configured: expected "
                              f"{want[0]} training and {want[1]} validation samples, found "
                              f"{len(xt)} and {len(xv)}; submit the run again")
    return Split(xt, yt, xv, yv, info.classes, info.shape, info.class_names, "split", xs, ys, test_kind)


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 1,797 8x8 digits: x float32 (N, 8, 8, 1) in [0, 1], y int32.

    Read from the file scikit-learn ships (sklearn/datasets/data/digits.csv.gz: 64 pixel
    values 0..16 and the label a row), as its load_digits reads it, without importing
    scikit-learn: a worker never does (engine.training.backends.import_keras; its
    imports cost 0.8 CPU-s). Raises DataUnavailable when scikit-learn is not installed."""
    import gzip
    import importlib.util
    from pathlib import Path

    spec = importlib.util.find_spec("sklearn")  # finds the package, runs none of it
    if spec is None or not spec.submodule_search_locations:
        raise DataUnavailable("dataset digits ships with scikit-learn, which is not installed; "
                              "pip install -r requirements.txt")
    path = Path(list(spec.submodule_search_locations)[0]) / "datasets" / "data" / "digits.csv.gz"
    with gzip.open(path, "rt") as fh:
        data = np.loadtxt(fh, delimiter=",")
    x = (data[:, :-1].reshape(-1, 8, 8).astype(np.float32) / 16.0)[..., None]  # pixel values are 0..16
    return x, data[:, -1].astype(np.int32)


def _approximate_mode(class_counts: np.ndarray, n_draws: int, rng: np.random.RandomState) -> np.ndarray:
    """How many of `n_draws` each class gets: its share floored, the rest to the largest
    remainders, ties drawn by `rng`. scikit-learn's sklearn.utils.extmath._approximate_mode
    (1.9; BSD-3-Clause), step for step, so that draws stay identical."""
    continuous = class_counts / class_counts.sum() * n_draws
    floored = np.floor(continuous)
    need_to_add = int(n_draws - floored.sum())
    if need_to_add > 0:
        remainder = continuous - floored
        for value in np.sort(np.unique(remainder))[::-1]:
            (inds,) = np.where(remainder == value)
            add_now = min(len(inds), need_to_add)
            floored[rng.choice(inds, size=add_now, replace=False)] += 1
            need_to_add -= add_now
            if need_to_add == 0:
                break
    return floored.astype(int)


def stratified_indices(y: np.ndarray, n_val: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) positions in `y`, exactly those of scikit-learn's
    ``train_test_split(..., test_size=n_val, random_state=seed, stratify=y)``
    (StratifiedShuffleSplit, sklearn 1.9; BSD-3-Clause; tests/test_datasets.py compares the two),
    without importing scikit-learn in a worker. Needs every class of 2 or more samples and
    n_val and len(y) - n_val each at least the number of classes (split_counts sees to it)."""
    classes, y_indices, class_counts = np.unique(y, return_inverse=True, return_counts=True)
    class_indices = np.split(np.argsort(y_indices, kind="stable"), np.cumsum(class_counts)[:-1])
    rng = np.random.RandomState(seed)
    n_i = _approximate_mode(class_counts, len(y) - n_val, rng)
    t_i = _approximate_mode(class_counts - n_i, n_val, rng)
    train, val = [], []
    for i in range(len(classes)):
        perm = class_indices[i].take(rng.permutation(class_counts[i]), mode="clip")
        train.extend(perm[:n_i[i]])
        val.extend(perm[n_i[i]:n_i[i] + t_i[i]])
    return rng.permutation(train), rng.permutation(val)


def synthetic(shape: tuple, classes: int, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Uniform random images in [0, 1) and uniform random labels (throughput only)."""
    rng = np.random.default_rng(seed)
    x = rng.random((samples, *shape), dtype=np.float32)
    y = rng.integers(0, classes, size=samples, dtype=np.int32)
    return x, y


def keras_dataset(name: str):
    """(x_train, y_train, x_test, y_test) of a Keras data set from the Keras
    cache, downloading it first with keras.datasets when it is not cached."""
    from engine.data import keras_data

    cached = keras_data.find_cached(name)
    if cached is None:
        try:
            keras_data.download(name)
        except Exception as e:  # noqa: BLE001 - network, disk, hash: all end as one line
            raise DataUnavailable(f"dataset {name} could not be downloaded ({type(e).__name__}: "
                                  f"{str(e).splitlines()[0][:160] if str(e) else ''}); "
                                  f"{keras_data.where_to_place(name)}") from None
        cached = keras_data.find_cached(name)
        if cached is None:
            raise DataUnavailable(f"dataset {name} was downloaded but is not where expected; "
                                  f"{keras_data.where_to_place(name)}")
    try:
        return keras_data.read_arrays(cached)
    except Exception as e:  # noqa: BLE001
        raise DataUnavailable(f"dataset {name}: {cached.path} cannot be read ({type(e).__name__}: "
                              f"{str(e)[:160]}); delete it so that it is downloaded again") from None


def keep_labels(x: np.ndarray, y: np.ndarray, labels: tuple) -> tuple[np.ndarray, np.ndarray]:
    """Only the samples whose label is in `labels`, relabelled labels[i] -> i."""
    labels = np.asarray(labels, dtype=np.int64)
    lut = np.full(max(int(y.max(initial=0)), int(labels.max())) + 1, -1, dtype=np.int32)
    lut[labels] = np.arange(len(labels), dtype=np.int32)
    mask = np.isin(y, labels)
    return x[mask], lut[y[mask]]


def stratified_split(x, y, fraction: float, seed: int, count: Optional[int] = None):
    """(x_train, y_train, x_val, y_val) with ceil(fraction x N) validation samples
    (`count` of them when given),
    drawn per class in proportion (scikit-learn's train_test_split: `stratified_indices`), such that
    every class keeps training samples (engine.data.meta.split_counts):

    - classes with fewer than MIN_CLASS_SAMPLES samples stay whole in training;
    - the other classes are split stratified; with fewer validation samples than
      classes (no stratification possible) each keeps one training sample and the
      validation samples are drawn at random from the rest.

    Raises: DataUnavailable when the validation samples cannot fit (config
    validation, engine.data.meta.check_split, refuses that first).
    """
    from engine.data.meta import split_counts

    y = np.asarray(y)
    counts = np.bincount(y)
    sc = split_counts(counts, fraction, count)
    n_val = sc["n_val"]
    if not sc["small"] and sc["stratified"]:  # the common case, as before
        # With every class of 2 or more and at most half held out, each keeps a training sample.
        tr, va = stratified_indices(y, n_val, seed)
        return x[tr], y[tr], x[va], y[va]
    if not sc["feasible"]:
        raise DataUnavailable(f"{n_val} validation samples would leave a class with no training sample; "
                              "lower validation_fraction")
    idx = np.arange(len(y))
    small = np.isin(y, sc["small"])
    rest = idx[~small]
    if sc["stratified"]:
        tr, va = (rest[i] for i in stratified_indices(y[rest], n_val, seed))
    else:
        perm = np.random.default_rng(seed).permutation(rest)
        _, first = np.unique(y[perm], return_index=True)  # one training sample per class
        anchors = np.zeros(len(perm), bool)
        anchors[first] = True
        va = perm[~anchors][:n_val]
        tr = np.setdiff1d(rest, va)
    tr = np.concatenate([tr, idx[small]])
    return x[tr], y[tr], x[va], y[va]
