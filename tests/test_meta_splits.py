"""Validation splits that keep every class in training, and .npz layouts
diagnosed with the right fix."""

import numpy as np
import pytest

from engine.config import ConfigError, RunConfig
from engine.data import datasets, userdata, userdata_read
from engine.data.meta import class_warnings, dataset_info
from engine.config.preflight import check_runnable
from tests.helpers import cli

CPU = {"gpus": 0, "tpu": False, "cpu_bf16": False}


def npz(path, counts, h=6, w=5):
    """An .npz whose class k has counts[k] images (pixels = sample index % 256)."""
    y = np.repeat(np.arange(len(counts)), counts)
    x = (np.arange(len(y))[:, None, None] + np.zeros((1, h, w))).astype(np.uint8)
    np.savez(path, x_train=x, y_train=y)
    return str(path)


# --- splits ----------------------------------------------------------------------
def test_a_lone_sample_class_is_trained_and_the_rest_stays_stratified(tmp_path):
    f = npz(tmp_path / "faces.npz", (40, 40, 1))
    cfg = RunConfig(dataset=f, seed=12, batch_size=8)
    # ceil(0.2 x 81) = ceil(16.2) = 17 held out of training (64 left), all from the two classes of 40:
    # 17 // 2 = 8 test (4 + 4), then 17 - 8 = 9 validation from the 36 + 36 left (4 + 5).
    assert cfg.data_sizes() == (64, 9) and cfg.test_size() == 8
    s = datasets.load(cfg)
    assert np.bincount(s.y_train, minlength=3)[2] == 1  # the lone image is trained on
    val, test = np.bincount(s.y_val, minlength=3), np.bincount(s.y_test, minlength=3)
    assert val[2] == 0 and sorted(val[:2].tolist()) == [4, 5]
    assert test.tolist() == [4, 4, 0]
    assert len(s.y_train) == 64 and len(s.y_val) == 9 and len(s.y_test) == 8
    assert sorted(np.concatenate([s.x_train, s.x_val, s.x_test])[:, 0, 0, 0].tolist()) == list(range(81))
    warn = ("dataset: 1 class ('2') has fewer than 2 samples: kept in training and never validated; "
            "add samples to validate them")
    assert check_runnable(cfg, CPU) == [warn]
    out = cli.engine("data", "check", f)
    assert out.returncode == 0 and out.stdout.startswith("ok: 81 images of 6x5x1, 3 classes")
    assert out.stderr.strip().splitlines() == [f"warning: {warn}"]


@pytest.mark.parametrize("name, counts, sizes", [
    # digits: ceil(0.2 x 1797) = 360 held out -> 1,437 train, 180 validation, 360 // 2 = 180 test.
    ("digits", (178, 182, 177, 183, 181, 182, 181, 179, 174, 180), (1437, 180, 180)),
    # mnist5k: ceil(0.2 x 5000) = 1,000 held out -> 4,000 train, 500 validation, 500 test (50 a class).
    ("mnist5k", (500,) * 10, (4000, 500, 500)),
])
def test_the_test_set_is_one_fixed_stratified_draw_apart_from_training_and_validation(name, counts, sizes):
    runs = [datasets.load(RunConfig(dataset=name, seed=seed)) for seed in (0, 1)]
    rows = lambda a: [r.tobytes() for r in a.reshape(len(a), -1)]  # noqa: E731 - no image repeats in either
    for s in runs:
        assert (len(s.y_train), len(s.y_val), len(s.y_test)) == sizes and s.test == "split"
        train, val, test = set(rows(s.x_train)), set(rows(s.x_val)), set(rows(s.x_test))
        assert not test & train and not test & val and not val & train
        assert len(train | val | test) == sum(counts)  # nothing lost, nothing twice
        for part, n in [(s.y_test, sizes[2]), (s.y_val, sizes[1])]:  # stratified: within 1 of proportional
            expected = np.array(counts) * n / sum(counts)
            assert np.abs(np.bincount(part, minlength=10) - expected).max() < 1
    # The same test set (samples and order) and the same validation set whatever the run's seed;
    # validation follows validation_seed, the test set neither.
    np.testing.assert_array_equal(runs[0].x_test, runs[1].x_test)
    np.testing.assert_array_equal(runs[0].y_test, runs[1].y_test)
    np.testing.assert_array_equal(runs[0].x_val, runs[1].x_val)
    other = datasets.load(RunConfig(dataset=name, validation_seed=1))
    assert set(rows(other.x_val)) != set(rows(runs[0].x_val))
    np.testing.assert_array_equal(other.x_test, runs[0].x_test)


def test_every_class_keeps_a_training_sample_for_every_seed(tmp_path):
    # 12 classes of 3: ceil(0.2 x 36) = ceil(7.2) = 8 held out (28 left), 8 // 2 = 4 test and 4 validation:
    # neither covers 12 classes (not stratifiable).
    cfg = RunConfig(dataset=npz(tmp_path / "many.npz", (3,) * 12), batch_size=4)
    assert cfg.data_sizes() == (28, 4) and cfg.test_size() == 4
    assert check_runnable(cfg, CPU) == [
        "dataset: 4 validation and 4 test samples for 12 classes cannot be stratified: some classes are not "
        "validated or tested (every class keeps training samples); raise validation_fraction"]
    # 79 + 2 samples at fraction 0.5 (the most allowed): the pair keeps a training sample whatever the seed.
    x = np.arange(81)[:, None, None, None].astype(np.float32)
    y = np.repeat([0, 1], [79, 2]).astype(np.int32)
    for seed in range(20):
        xt, yt, xv, yv = datasets.stratified_split(x, y, 0.5, seed)
        assert (len(yt), len(yv)) == (40, 41)
        assert set(yt.tolist()) == {0, 1}
        assert sorted(np.concatenate([xt, xv]).ravel().tolist()) == list(range(81))
        many = datasets.load(cfg.replace(seed=seed))
        assert set(many.y_train.tolist()) == set(range(12)) and (len(many.y_val), len(many.y_test)) == (4, 4)


def test_the_largest_fraction_fits_the_test_and_the_validation_draw_together(tmp_path):
    # Tiny data sets at the most they allow: the test draw (t samples, every class keeps one) leaves
    # exactly t fewer for the validation draw, so both fit whenever the whole held-out share does.
    from engine.data.meta import max_fraction

    rng = np.random.default_rng(5)
    for i in range(12):
        counts = tuple(int(c) for c in rng.choice([1, 1, 2, 2, 3, 5], size=int(rng.integers(2, 8))))
        counts = (2,) + counts  # some class can be split
        f = npz(tmp_path / f"c{i}.npz", counts)
        cfg = RunConfig(dataset=f, validation_fraction=max_fraction(counts), batch_size=1)
        n_train, n_val = cfg.data_sizes()
        for seed in (0, 1):
            s = datasets.load(cfg.replace(seed=seed))
            assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (n_train, n_val, cfg.test_size()), counts
            assert set(s.y_train.tolist()) == set(range(len(counts))), counts  # every class trained on
            parts = np.concatenate([s.x_train, s.x_val, s.x_test])[:, 0, 0, 0]
            assert sorted(parts.tolist()) == list(range(sum(counts)))


def test_a_split_that_cannot_keep_every_class_is_refused(tmp_path):
    f = npz(tmp_path / "tiny.npz", (2, 2, 1, 1, 1, 1))
    # ceil(0.5 x 8) = 4 held out, but the two splittable classes can spare only 2: 0.25 x 8 = 2,
    # 2 // 2 = 1 test and 1 validation (the message said "2 validation samples").
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset=f, validation_fraction=0.5, batch_size=2)
    assert str(e.value) == ("validation_fraction: 0.5 would hold out 4 of 8 samples of "
                            f"{f}, leaving a class with no training sample; use a fraction of at most 0.25 "
                            "(at most 2 held out: 1 validation, 1 test)")
    cfg = RunConfig(dataset=f, validation_fraction=0.25, batch_size=2)
    assert cfg.data_sizes() == (6, 1) and cfg.test_size() == 1
    for seed in range(10):  # the fraction named works: the two draws leave every class a training sample
        s = datasets.load(cfg.replace(seed=seed))
        assert sorted(s.y_train.tolist()) == [0, 1, 2, 3, 4, 5] and sorted(s.y_val.tolist() + s.y_test.tolist()) == [0, 1]


ONE_EACH = ("has 1 sample in each of its {k} classes, so no validation split is possible (a class needs 2 "
            "samples to give one to validation and keep one for training); add samples so that some class has "
            "at least 2")


@pytest.mark.parametrize("k", [2, 100])
def test_one_sample_per_class_is_a_fault_before_registering(tmp_path, store_home, capsys, k):
    from engine.cli.main import main

    f = tmp_path / "two.npz"  # the tester's file (and its 100-class variant)
    np.savez(f, x_train=np.random.default_rng(0).random((k, 8, 8)), y_train=np.arange(k))
    line = f"two.npz {ONE_EACH.format(k=k)}"
    # Was "ok" with a warning, and then every run refused with "use a fraction of at most 0".
    assert main(["data", "check", str(f)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {line}"]
    with pytest.raises(userdata.DataError) as e:
        userdata.register("two", f)
    assert e.value.problems == [line] and userdata.registered() == []
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset=str(f), batch_size=1)
    problem, _, fix = line.partition("; ")
    assert str(e.value) == f"dataset: '{f}' cannot be used: {problem}; {fix}"
    # A test split is no fix (validation comes off x_train): refused alike, before registering.
    np.savez(f, x_train=np.zeros((k, 8, 8)), y_train=np.arange(k), x_test=np.zeros((k, 8, 8)), y_test=np.arange(k))
    assert main(["data", "check", str(f)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {line}"]
    # The fix works: a second sample in one class.
    np.savez(f, x_train=np.zeros((k + 1, 8, 8)), y_train=np.append(np.arange(k), 0))
    assert main(["data", "check", str(f)]) == 0


def test_one_sample_per_class_folder_is_a_fault(tmp_path):
    from PIL import Image

    for c in ("cat", "dog"):
        (tmp_path / "pets" / c).mkdir(parents=True)
        Image.new("L", (4, 4)).save(tmp_path / "pets" / c / "0.png")
    with pytest.raises(userdata.DataError) as e:
        userdata.load_path(tmp_path / "pets")
    assert e.value.problems == [
        "pets has 1 image in each of its 2 class folders, so no validation split is possible (a class needs 2 "
        "samples to give one to validation and keep one for training); add images so that some class folder "
        "has at least 2"]


def test_a_label_subset_of_lone_samples_names_the_data_set_not_an_impossible_fraction(tmp_path):
    f = npz(tmp_path / "few.npz", (3, 1, 1))
    with pytest.raises(ConfigError) as e:  # was: use a fraction of at most 0, which is out of range
        RunConfig(dataset=f, label_subset=(1, 2), batch_size=1)
    assert str(e.value) == (f"dataset: '{f}' {ONE_EACH.format(k=2)} (or keep labels with 2 or more samples "
                            "in label_subset)")
    # (3, 1): ceil(0.2 x 4) = 1 held out, 1 // 2 = 0 test, so 1 validation sample and no test set.
    cfg = RunConfig(dataset=f, label_subset=(0, 2), batch_size=1)
    assert cfg.data_sizes() == (3, 1) and cfg.test_size() == 0
    s = datasets.load(cfg)
    assert s.y_train.tolist().count(1) == 1 and s.y_val.tolist() == [0] and len(s.y_test) == 0


def test_the_largest_fraction_named_is_one_that_is_accepted(tmp_path, capsys):
    from engine.cli.main import main

    f = npz(tmp_path / "lone.npz", (3,) + (1,) * 27)  # 30 samples: room for 2 validation samples
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset=f, batch_size=4)
    # 2/30 = 0.0667 to 3 digits, but ceil(0.0667 x 30) = 3: the fraction is rounded down. 2 held out are
    # 2 // 2 = 1 test and 1 validation sample.
    assert str(e.value) == (f"validation_fraction: 0.2 would hold out 6 of 30 samples of {f}, leaving a class "
                            "with no training sample; use a fraction of at most 0.0666 (at most 2 held out: "
                            "1 validation, 1 test)")
    assert RunConfig(dataset=f, batch_size=4, validation_fraction=0.0666).data_sizes() == (28, 1)
    with pytest.raises(ConfigError, match="at most 0.0666"):
        RunConfig(dataset=f, batch_size=4, validation_fraction=0.0667)
    # 0.07 x 100 is 7.000000000000001 in floats: its ceil is 8, so 0.0699 is the most for 7 samples.
    g = npz(tmp_path / "hundred.npz", (8,) + (1,) * 92)
    with pytest.raises(ConfigError, match=r"at most 0\.0699 \(at most 7 held out: 4 validation, 3 test\)$"):
        RunConfig(dataset=g, batch_size=4)
    # 7 held out of 100 (93 left): 7 // 2 = 3 test, 4 validation.
    assert RunConfig(dataset=g, batch_size=4, validation_fraction=0.0699).data_sizes() == (93, 4)
    # data check warns before any run is configured.
    assert main(["data", "check", f]) == 0
    assert capsys.readouterr().err.splitlines()[-1] == (
        "warning: dataset: the default validation_fraction 0.2 would leave a class with no training sample; "
        "use validation_fraction 0.0666 or less")


def test_data_with_its_own_test_split_is_checked_as_validation_comes_off_its_training_data(tmp_path, capsys):
    from engine.cli.main import main

    # Was never warned about (its test split was the validation data); now validation is split off x_train.
    f = tmp_path / "t.npz"
    np.savez(f, x_train=np.zeros((3, 4, 4), np.uint8), y_train=np.array([0, 0, 1]),
             x_test=np.zeros((2, 4, 4), np.uint8), y_test=np.array([0, 1]))
    warn = "dataset: 1 class ('1') has fewer than 2 samples: kept in training and never validated; " \
           "add samples to validate them"
    assert class_warnings(dataset_info(str(f))) == [warn]
    assert main(["data", "check", str(f)]) == 0  # was: "2 test images (used for validation)"
    out = capsys.readouterr()
    assert out.out.splitlines() == ["ok: 3 images of 4x4x1, 2 classes (0, 1), 2 test images (the test set, only reported)"]
    assert out.err.splitlines() == [f"warning: {warn}"]
    # ceil(0.2 x 3) = 1 validation sample (one 0), 2 for training; x_test's 2 are the test set.
    cfg = RunConfig(dataset=str(f), batch_size=1)
    assert cfg.data_sizes() == (2, 1) and cfg.test_size() == 2
    s = datasets.load(cfg)
    assert sorted(s.y_train.tolist()) == [0, 1] and s.y_val.tolist() == [0] and s.y_test.tolist() == [0, 1]
    # A fraction that would take class 0's last training sample is refused; the message counts validation only.
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset=str(f), batch_size=1, validation_fraction=0.5)
    assert str(e.value).endswith("use a fraction of at most 0.333 (at most 1 validation sample)")


# --- .npz layouts -------------------------------------------------------------------
def good(n=20):
    return {"x_train": np.zeros((n, 6, 5), np.uint8), "y_train": np.arange(n) % 3}


@pytest.mark.parametrize("arrays, message", [
    ({"x_train": np.zeros((20, 3, 32, 32), np.uint8), "y_train": np.arange(20) % 3},
     "x_train has shape (20, 3, 32, 32), channels first (N, C, H, W); SpeedLab wants channels last: "
     "use x_train.transpose(0, 2, 3, 1)"),
    ({"x_train": np.zeros((20, 1, 28, 28), np.float32), "y_train": np.arange(20) % 3},
     "x_train has shape (20, 1, 28, 28), channels first (N, C, H, W); SpeedLab wants channels last: "
     "use x_train.transpose(0, 2, 3, 1)"),
    ({"x_train": np.zeros((28, 28, 20), np.uint8), "y_train": np.arange(20) % 3},
     "x_train has shape (28, 28, 20) with the 20 samples on the last axis (as MATLAB saves them); SpeedLab "
     "wants samples first: use np.moveaxis(x_train, -1, 0)"),
    ({"x_train": np.zeros((20, 784), np.uint8), "y_train": np.arange(20) % 3},
     "x_train has shape (20, 784), a vector of 784 values per sample (flattened 28x28 images?); "
     "use x_train.reshape(-1, 28, 28, 1)"),
    ({"x_train": np.zeros((20, 3072), np.uint8), "y_train": np.arange(20) % 3},
     "x_train has shape (20, 3072), a vector of 3072 values per sample (flattened 32x32 RGB images?); "
     "use x_train.reshape(-1, 32, 32, 3), or x_train.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1) if stored "
     "channel by channel as in CIFAR-10's files"),
    ({**good(), "x_train": np.full((20, 6, 5), 200.0)},
     "x_train values go from 200 to 200, floats on a 0..255 scale; float pixels must lie in [0, 1]: "
     "use x_train / 255"),
    ({**good(), "x_train": np.full((20, 6, 5), -0.5, np.float32)},
     "x_train values go from -0.5 to -0.5, normalised to [-1, 1]?; float pixels must lie in [0, 1]: "
     "use (x_train + 1) / 2"),
    ({**good(), "x_train": np.full((20, 6, 5), 40000, np.uint16)},
     "x_train values go from 40000 to 40000, 16-bit pixels?; integer pixels must be 0..255: "
     "use (x_train / 65535).astype('float32') for floats in [0, 1]"),
    ({**good(), "y_train": np.arange(20) % 3 + 1},
     "y_train's labels go from 1 to 3, numbered from 1; number the classes 0..2: use y_train - 1 (and y_test - 1)"),
    ({**good(), "y_train": np.array(["cat", "dog"] * 10)},
     "y_train holds text labels ('cat', 'dog', ...); give integer class labels 0..K-1: "
     "use names, y_train = np.unique(y_train, return_inverse=True)"),
    ({**good(), "y_train": np.full((20, 3), 1 / 3)},
     "y_train has shape (20, 3); give integer class labels of shape (N,), not one-hot"),
    ({"arr_0": np.zeros((20, 6, 5), np.uint8), "arr_1": np.arange(20) % 3},
     "x_train is missing; the .npz needs arrays x_train and y_train (and optionally x_test, y_test); it has: "
     "arr_0 (20x6x5 uint8), arr_1 (20 int64); it looks like images 'arr_0' and labels 'arr_1': save them with "
     "np.savez(path, x_train=arr_0, y_train=arr_1)"),
])
def test_common_layouts_are_named_with_their_fix(arrays, message):
    assert userdata_read.check_arrays(arrays) == [message]


def test_an_unclear_npz_names_the_shapes_it_sees():
    a = {"images": np.zeros((20, 6, 5), np.uint8), "more": np.zeros((20, 6, 5), np.uint8),
         "labels": np.arange(20) % 3}
    assert userdata_read.check_arrays(a)[0] == (
        "x_train is missing; the .npz needs arrays x_train and y_train (and optionally x_test, y_test); it has: "
        "images (20x6x5 uint8), labels (20 int64), more (20x6x5 uint8)")
