"""What each data set is (shape, classes, size), without TF.

Validation and the dashboard need these numbers before any data is read into
a worker. Data set names:

- ``digits``: scikit-learn's bundled 8x8 handwritten digits (always available);
- ``mnist5k``: 5,000 real MNIST 28x28 digits shipped in the repository
  (engine.data.mnist5k; always available, no network);
- ``synthetic``: random images (pure throughput checks);
- ``mnist``, ``fashion_mnist``, ``cifar10``: Keras's data sets, read from the
  Keras cache (engine.data.keras_data) or downloaded by the worker on first use;
- ``user:NAME``: a data set registered with engine.data.userdata;
- a path to an ``.npz`` file, a folder or a ``.zip`` of class folders
  (engine.data.userdata describes the formats).

A config's ``label_subset`` keeps only some of the original labels and
numbers them 0..k-1 in the order given (e.g. digits 5-9 become 0-4).
"""
from __future__ import annotations

import os
from dataclasses import replace
from typing import Optional

from engine.data.info import DatasetInfo  # noqa: F401 (re-exported: the record every data module shares)
from engine.data.limits import MAX_SIDE, MIN_CLASS_SAMPLES, fmt_bytes, max_decoded_bytes, no_split  # noqa: F401 (re-exported)

DATASET_NAMES = ("digits", "mnist5k", "synthetic", "mnist", "fashion_mnist", "cifar10")
KERAS_DATASETS = ("mnist", "fashion_mnist", "cifar10")
USER_PREFIX = "user:"
PATH_SUFFIXES = (".npz", ".zip")


# scikit-learn's bundled copy of the UCI handwritten digits: 1,797 8x8 images
# (np.bincount(load_digits().target), checked in tests/test_datasets.py).
DIGITS = DatasetInfo("digits", (8, 8, 1), 10, 1797,
                     "scikit-learn's bundled handwritten digits (1,797 real 8x8 images)",
                     class_counts=(178, 182, 177, 183, 181, 182, 181, 179, 174, 180),
                     class_names=tuple(str(i) for i in range(10)))


def is_path(name: str) -> bool:
    """Whether data set name `name` is a file system path rather than a name."""
    return isinstance(name, str) and (name.lower().endswith(PATH_SUFFIXES) or "/" in name
                                      or os.sep in name or name.startswith("~")) \
        and not name.startswith(USER_PREFIX)


def canonical(name: str) -> str:
    """`name` with a path made absolute (workers run in another folder)."""
    if is_path(name):
        return str(os.path.abspath(os.path.expanduser(name)))
    return name


def _error(field, value, problem, fix):
    from engine.base.errors import ConfigError

    return ConfigError(field, value, problem, fix)


def _unknown(name):
    return _error("dataset", name, "is not a known data set",
                  f"use one of: {', '.join(DATASET_NAMES)}, user:NAME (a registered data set), "
                  "or a path to a .npz file, a folder or a .zip of class folders")


def _data_error(name, err):
    """ConfigError from an engine.data.userdata.DataError: its first problem and fix."""
    first = err.problems[0]
    problem, _, fix = first.partition("; ")
    more = len(err.problems) - 1
    fix = fix or "see docs/data-and-transfer.md for the accepted formats"
    if more:
        fix += f" (and {more} more problem{'s' if more > 1 else ''}: python -m engine data check PATH)"
    return _error("dataset", name, f"cannot be used: {problem}", fix)


def _keras_info(name: str) -> DatasetInfo:
    from engine.data import keras_data

    spec = keras_data.SPECS[name]
    cached = keras_data.find_cached(name)
    names = tuple(str(i) for i in range(spec.classes))
    if cached is None:  # the published figures: the worker downloads the data
        return DatasetInfo(name, spec.shape, spec.classes, sum(spec.train_counts), spec.description,
                           test_samples=sum(spec.test_counts), class_counts=spec.train_counts,
                           test_class_counts=spec.test_counts, class_names=names, source="download")
    try:
        meta = keras_data.read_meta(cached, spec.classes)
    except Exception as e:  # noqa: BLE001 - a broken cache file, whatever the reason
        raise _error("dataset", name, f"is cached at {cached.path} but cannot be read "
                     f"({type(e).__name__}: {str(e)[:120]})",
                     "delete it so that it is downloaded again, or replace it") from None
    return DatasetInfo(name, meta.shape, spec.classes, sum(meta.train_counts), spec.description,
                       test_samples=sum(meta.test_counts), class_counts=meta.train_counts,
                       test_class_counts=meta.test_counts, class_names=names, source=str(cached.path))


def _base_info(name: str, cfg) -> DatasetInfo:
    if not isinstance(name, str):
        raise _unknown(name)
    if name == "digits":
        return DIGITS
    if name == "mnist5k":
        from engine.data import mnist5k

        return mnist5k.INFO
    if name == "synthetic":
        shape = tuple(getattr(cfg, "synthetic_shape", (32, 32, 3)))
        classes = getattr(cfg, "synthetic_classes", 10)
        samples = getattr(cfg, "synthetic_samples", 2048)
        if len(shape) != 3 or not all(isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in shape):
            raise _error("synthetic_shape", list(shape), "is not an image shape",
                         "give three positive integers H, W, C, e.g. 32,32,3")
        if max(shape) > MAX_SIDE:  # the same side limit as user images
            raise _error("synthetic_shape", list(shape), f"is over the limit of {MAX_SIDE} per dimension",
                         f"give H, W and C of 1 to {MAX_SIDE} each, e.g. 224,224,3")
        if isinstance(classes, bool) or not isinstance(classes, int) or not 2 <= classes <= 100_000:
            raise _error("synthetic_classes", classes, "is out of range", "use 2 or more classes")
        if isinstance(samples, bool) or not isinstance(samples, int) or not 4 <= samples <= 10_000_000:
            raise _error("synthetic_samples", samples, "is out of range",
                         "use between 4 and 10,000,000 samples")
        # The worker allocates all of it at once (float32): the same cap as user data.
        per, cap = shape[0] * shape[1] * shape[2] * 4, max_decoded_bytes()
        if samples * per > cap:
            fit = cap // per
            fewer = f"use at most {fit:,} samples" if fit >= 4 else "use a smaller synthetic_shape"
            raise _error("synthetic_samples", samples,
                         f"x {shape[0]}x{shape[1]}x{shape[2]} float32 = {fmt_bytes(samples * per)} is over "
                         f"the {fmt_bytes(cap)} limit for a data set in memory",
                         f"{fewer}{' or a smaller synthetic_shape' if fit >= 4 else ''}, "
                         "or raise SPEEDLAB_MAX_DECODED_MB (MiB)")
        return DatasetInfo("synthetic", shape, classes, samples,
                           f"random {shape[0]}x{shape[1]}x{shape[2]} images, {classes} classes")
    if name in KERAS_DATASETS:
        return _keras_info(name)
    from engine.data import userdata

    if name.startswith(USER_PREFIX):
        meta = userdata.registered_meta(name[len(USER_PREFIX):])
        if meta is None:
            have = ", ".join(USER_PREFIX + n for n in userdata.registered()) or "none yet"
            raise _error("dataset", name, "is not a registered data set",
                         f"register it first (python -m engine data add NAME PATH); registered: {have}")
        return replace(userdata.info_from_meta(meta), name=name)
    if is_path(name):
        try:
            return userdata.path_info(name)
        except userdata.DataError as e:
            raise _data_error(name, e) from None
    raise _unknown(name)


def apply_subset(info: DatasetInfo, subset: tuple) -> DatasetInfo:
    """`info` restricted to the original labels in `subset`, renumbered 0..k-1
    in the order given. Raises ConfigError (field label_subset)."""
    subset = tuple(subset)
    if info.name == "synthetic" or not info.class_counts:
        raise _error("label_subset", list(subset), f"does not apply to {info.name} data",
                     "leave label_subset empty")
    if any(isinstance(v, bool) or not isinstance(v, int) for v in subset):
        raise _error("label_subset", list(subset), "is not a list of whole-number labels",
                     "give labels such as 5,6,7,8,9")
    if len(set(subset)) != len(subset):
        raise _error("label_subset", list(subset), "repeats a label", "give each label once")
    if len(subset) < 2:
        raise _error("label_subset", list(subset), "keeps fewer than 2 classes",
                     "keep at least 2 labels (or leave it empty for all)")
    bad = [v for v in subset if not 0 <= v < info.classes]
    if bad:
        raise _error("label_subset", list(subset), f"has label {bad[0]} but {info.name} has labels "
                     f"0..{info.classes - 1}", f"use labels between 0 and {info.classes - 1}")
    empty = [v for v in subset if info.class_counts[v] == 0]
    if empty:
        raise _error("label_subset", list(subset), f"keeps label {empty[0]}, which has no samples",
                     "leave that label out")
    counts = tuple(info.class_counts[v] for v in subset)
    tcounts = tuple(info.test_class_counts[v] for v in subset) if info.test_class_counts else ()
    names = tuple(info.class_names[v] for v in subset) if info.class_names else ()
    kept = ",".join(str(v) for v in subset)
    return replace(info, classes=len(subset), samples=sum(counts), test_samples=sum(tcounts),
                   class_counts=counts, test_class_counts=tcounts, class_names=names, labels=subset,
                   description=f"{info.description}; labels {kept} only, as 0..{len(subset) - 1}")


def dataset_info(name: str, cfg=None) -> DatasetInfo:
    """Info for data set `name`, restricted to `cfg.label_subset` when set;
    `cfg` also supplies the synthetic shape/classes/samples.

    Reads file headers or, for user files, the whole file once per process.
    Raises: engine.base.errors.ConfigError for an unknown or unusable data set.
    """
    info = _base_info(name, cfg)
    subset = tuple(getattr(cfg, "label_subset", ()) or ())
    return apply_subset(info, subset) if subset else info


# Default validation accuracy that time to accuracy is measured to, per data set:
# what the bundled models (mlp/cnn/resnet) reach within the default 10 epochs at
# float32, so that the baseline reaches it and the question is only how soon.
# digits: cnn 0.97-0.98 by epoch 10 (tests/test_runs.py); mnist 0.98 and
# fashion_mnist 0.88 are the usual "solved in a few epochs" bars for a small CNN;
# cifar10 0.70 is what a small ResNet reaches in ~10 epochs. mnist5k 0.965: the cnn's
# validation accuracy plateaus at 0.96-0.97 from epoch 3 on 4,000 training images, and
# seeds 0-3 first reach 0.965 in their 6th-9th epoch (of 10), 19-28 s on an idle 2-core
# CPU: a target that takes the baseline 20 s or more (0.97: seed 2 never reached it in 20
# epochs; 0.96: the 4th epoch, ~13 s; docs/datasets.md; measured when the validation draw
# followed the seed. With one draw for every seed, 2026-12-06: the Keras-default baseline reached
# 0.965 on all 15 confirming seeds, in 4-17 epochs). Synthetic labels are random
# (accuracy stays near 1/classes), and user data is unknown: no default.
DEFAULT_TARGETS = {"digits": 0.95, "mnist5k": 0.965, "mnist": 0.98, "fashion_mnist": 0.88, "cifar10": 0.70}


def default_target(name: str, cfg=None):
    """The default target validation accuracy (0-1) for data set `name`, or None
    (synthetic and user data: set target_accuracy yourself). Never raises."""
    return DEFAULT_TARGETS.get(name) if isinstance(name, str) else None


def target_for(target_accuracy, name):
    """The validation accuracy time to accuracy is measured to: `target_accuracy` when
    set, else the data set's default (`default_target`; None for synthetic and user data)."""
    return target_accuracy if target_accuracy is not None else default_target(name)


def check_available(name: str) -> None:
    """Raise ConfigError when Keras data set `name` is neither in the Keras cache
    nor downloadable (offline: one TCP probe of its host, ~2 s at most)."""
    if name not in KERAS_DATASETS:
        return
    from engine.data import keras_data

    if keras_data.find_cached(name) is not None:
        return
    spec = keras_data.SPECS[name]
    if not keras_data.online(spec.host):
        raise _error("dataset", name, f"is not in the Keras cache and this machine is offline "
                     f"(cannot reach {spec.host})", keras_data.where_to_place(name))


# --- the validation split: every class keeps training samples --------------------
# A class needs MIN_CLASS_SAMPLES (engine.data.limits) to be split between training and
# the held-out samples (validation, and test without a test split of its own); smaller
# classes are kept whole in training (and never validated).


def _names(info: DatasetInfo, classes) -> str:
    names = [repr(info.class_names[c]) if c < len(info.class_names) else repr(str(c)) for c in classes]
    return ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")


# The held-out test set (engine.data.datasets.Split): half of the ceil(validation_fraction x N)
# samples held out from training, drawn once by this seed of its own, so that every run of a
# data set is tested on the same samples, which nothing stops, selects or tunes on.
TEST_SEED = 20261204


def test_count(n_held: int) -> int:
    """Test samples among `n_held` held-out samples of a data set with no test split of
    its own: half, rounded down (the validation keeps the other, larger half)."""
    return n_held // 2


def split_counts(class_counts, fraction: float, n_val: Optional[int] = None) -> dict:
    """How `datasets.stratified_split` divides a training pool with `class_counts`.

    Returns {'n_val': ceil(fraction x N) (or `n_val` when given), 'small': classes with fewer than
    MIN_CLASS_SAMPLES samples (kept whole in training), 'rest_samples',
    'rest_classes' (the classes that are split), 'stratified': whether the
    validation samples can be drawn per class (n_val >= rest classes),
    'feasible': whether every split class keeps a training sample}."""
    import math

    counts = [int(c) for c in class_counts]
    n = sum(counts)
    n_val = math.ceil(fraction * n) if n_val is None else int(n_val)
    small = [i for i, c in enumerate(counts) if 0 < c < MIN_CLASS_SAMPLES]
    rest = [c for c in counts if c >= MIN_CLASS_SAMPLES]
    return {"n_val": n_val, "small": small, "rest_samples": sum(rest), "rest_classes": len(rest),
            "stratified": n_val >= len(rest), "feasible": n_val <= sum(rest) - len(rest)}


def max_fraction(class_counts) -> Optional[float]:
    """The largest validation_fraction, to 3 significant digits, that leaves every
    class a training sample (as split_counts computes it, floats included); None
    when there is none: every class has fewer than MIN_CLASS_SAMPLES samples.
    It bounds all ceil(fraction x N) held-out samples, the test half included: the test
    draw takes t samples and leaves every class one, so the validation draw finds room
    for exactly t fewer, and the two fit whenever the whole would."""
    import math

    sc = split_counts(class_counts, 0.0)
    room, n = sc["rest_samples"] - sc["rest_classes"], sum(int(c) for c in class_counts)
    if room < 1:
        return None
    if room * 2 >= n:
        return 0.5  # the largest fraction allowed
    e = math.floor(math.log10(room / n)) - 2  # negative: room / n is below 0.5
    m = room * 10 ** -e // n  # 3 digits, rounded down (to nearest could round up past room)
    # Check as the printed value is read back: 0.07 x 100 is 7.000000000000001, whose ceil is 8.
    while m > 1 and math.ceil(float(f"{m}e{e}") * n) > room:
        m -= 1
    return float(f"{m}e{e}")


def no_split_problem(info: DatasetInfo) -> Optional[str]:
    """Why no validation_fraction can split `info` (every class of its training data
    has 1 sample; a test split of its own does not help), as 'problem; fix', or None."""
    line = no_split(info.class_counts or [])
    if line is None:
        return None
    subset = " (or keep labels with 2 or more samples in label_subset)" if info.labels else ""
    return (f"{line}; add samples so that some class has at least {MIN_CLASS_SAMPLES}{subset}")


def check_split(info: DatasetInfo, fraction: float) -> None:
    """Raise ConfigError (field validation_fraction) when holding out
    ceil(fraction x N) samples would leave a class without a training sample,
    or (field dataset) when no fraction can split the data set at all.
    Unknown class counts pass. Data sets with a test split of their own are checked
    too: their validation samples come off the training data."""
    if not info.class_counts:
        return
    sc = split_counts(info.class_counts, fraction)
    if sc["feasible"]:
        return
    none = no_split_problem(info)
    if none:  # no fraction in (0, 0.5] works: the data set must change
        problem, _, fix = none.partition("; ")
        raise _error("dataset", info.name, problem, fix)
    best = max_fraction(info.class_counts)
    n = split_counts(info.class_counts, best)["n_val"]
    # Without a test split of its own, the held-out samples are validation and test (test_count).
    most = (f"at most {n} validation sample{'s' if n > 1 else ''}" if info.test_samples
            else f"at most {n} held out: {n - test_count(n)} validation, {test_count(n)} test")
    raise _error("validation_fraction", fraction,
                 f"would hold out {sc['n_val']} of {info.samples} samples of {info.name}, leaving a class "
                 f"with no training sample", f"use a fraction of at most {best:.3g} ({most})")


def class_warnings(info: DatasetInfo, fraction: Optional[float] = None) -> list[str]:
    """One line per way the validation split departs from a plain stratified
    split: classes too small to split (kept in training, never validated) and,
    given `fraction`, too few validation (or test) samples to stratify. [] when none.
    Data sets with a test split of their own are checked too: their validation
    samples come off the training data."""
    if not info.class_counts:
        return []
    sc = split_counts(info.class_counts, fraction if fraction is not None else 0.2)
    out = []
    if sc["small"]:
        k = len(sc["small"])
        out.append(f"dataset: {k} class{'es' if k > 1 else ''} ({_names(info, sc['small'])}) "
                   f"{'have' if k > 1 else 'has'} fewer than {MIN_CLASS_SAMPLES} samples: kept in training "
                   "and never validated; add samples to validate them")
    best = max_fraction(info.class_counts)
    if fraction is None and not sc["feasible"] and best is not None:  # data check: before any config
        out.append(f"dataset: the default validation_fraction 0.2 would leave a class with no training "
                   f"sample; use validation_fraction {best:.3g} or less")
    n_test = 0 if info.test_samples else test_count(sc["n_val"])  # drawn apart, the smaller half
    n_val, k = sc["n_val"] - n_test, sc["rest_classes"]
    if fraction is not None and sc["feasible"] and (n_val if info.test_samples else n_test) < k:
        if info.test_samples:
            held, missed = f"{n_val} validation samples", "validated"
        else:
            held = f"{n_val} validation and {n_test} test samples"
            missed = "tested" if n_val >= k else "validated or tested"
        out.append(f"dataset: {held} for {k} classes cannot be stratified: some classes are not {missed} "
                   "(every class keeps training samples); raise validation_fraction")
    return out


def available_datasets() -> list[str]:
    """Names to offer in a picker: the built-in data sets and user:NAME for each registered one."""
    from engine.data import userdata

    return list(DATASET_NAMES) + [USER_PREFIX + n for n in userdata.registered()]
