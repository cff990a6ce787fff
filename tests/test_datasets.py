"""Data sets: Keras-cache loaders, user .npz files and image folders, the registry,
label subsets, input pipelines. Every file is made here; no network."""
import gzip
import io
import json
import os
import pickle
import struct
import subprocess
import sys
import tarfile
import time
import zipfile

import numpy as np
import pytest

from engine.data import datasets
from engine.data import keras_data
from engine.data import userdata
from engine.config import ConfigError, RunConfig
from engine.config.preflight import check_runnable
from engine.data.meta import DIGITS, dataset_info

CPU = {"gpus": 0, "tpu": False, "cpu_bf16": False}


@pytest.fixture
def keras_home(tmp_path, monkeypatch):
    """An empty Keras cache, and no network (SPEEDLAB_OFFLINE=1)."""
    home = tmp_path / "keras"
    (home / "datasets").mkdir(parents=True)
    monkeypatch.setenv("KERAS_HOME", str(home))
    monkeypatch.setenv("SPEEDLAB_OFFLINE", "1")
    # /tmp/.keras is Keras's fallback cache; keep a real one on this machine out of the tests.
    monkeypatch.setattr(keras_data, "cache_dirs", lambda sub="datasets": [home / sub])
    return home


def images(n, h, w, c=None, start=0):
    """uint8 images whose pixel (i, r, col[, ch]) = (start + i + r + col [+ ch]) % 256."""
    idx = np.indices((n, h, w) + ((c,) if c else ()))
    return ((start + idx.sum(axis=0)) % 256).astype(np.uint8)


# --- Keras cache formats -------------------------------------------------------------
def write_mnist(home, n_train=12, n_test=4):
    x, xt = images(n_train, 28, 28), images(n_test, 28, 28, start=100)
    y, yt = (np.arange(n_train) % 10).astype(np.uint8), (np.arange(n_test) % 10).astype(np.uint8)
    np.savez_compressed(home / "datasets" / "mnist.npz", x_train=x, y_train=y, x_test=xt, y_test=yt)
    return x, y, xt, yt


def idx_bytes(arr):
    if arr.ndim == 1:
        return gzip.compress(struct.pack(">II", 0x801, len(arr)) + arr.tobytes())
    return gzip.compress(struct.pack(">IIII", 0x803, *arr.shape) + arr.tobytes())


def test_mnist_from_the_keras_cache(keras_home):
    x, y, xt, yt = write_mnist(keras_home)
    c = keras_data.find_cached("mnist")
    assert c.kind == "npz" and c.path == keras_home / "datasets" / "mnist.npz"
    # Headers and labels only: 12 train images 28x28, labels 0..9,0,1 -> counts 2,2,1,...
    meta = keras_data.read_meta(c)
    assert meta.shape == (28, 28, 1)
    assert meta.train_counts == (2, 2, 1, 1, 1, 1, 1, 1, 1, 1) and sum(meta.test_counts) == 4
    info = dataset_info("mnist")
    assert (info.samples, info.test_samples, info.classes) == (12, 4, 10)
    # Validation comes off the 12 training images; only classes 0 and 1 (2 images each) can give
    # one, so at most 2 are held out: 0.5 would hold out 6 and is refused, 0.1 holds out
    # ceil(0.1 x 12) = ceil(1.2) = 2, one 0 and one 1 (stratified), leaving 10 for training.
    with pytest.raises(ConfigError, match="use a fraction of at most 0.166 "):
        RunConfig(dataset="mnist", batch_size=4, epochs=1, validation_fraction=0.5)
    cfg = RunConfig(dataset="mnist", batch_size=4, epochs=1, validation_fraction=0.1)
    assert cfg.data_sizes() == (10, 2) and cfg.test_size() == 4  # the own test split is the test set
    # Cached: fine offline. Classes 2-9 (1 image each) stay in training, as for any data set.
    assert check_runnable(cfg, CPU) == ["dataset: 8 classes ('2', '3', '4' and 5 more) have fewer than 2 samples: "
                                        "kept in training and never validated; add samples to validate them"]
    s = datasets.load(cfg)
    assert (s.validation, s.test) == ("split", "test")
    assert s.x_train.dtype == np.uint8 and s.x_train.shape == (10, 28, 28, 1)
    assert sorted(s.y_val.tolist()) == [0, 1]
    # Nothing lost: training + validation are the 12 training images (pixel (i, 0, 0) = i).
    assert sorted(np.concatenate([s.x_train, s.x_val])[:, 0, 0, 0].tolist()) == list(range(12))
    np.testing.assert_array_equal(s.x_test[..., 0], xt)
    np.testing.assert_array_equal(s.y_test, yt.astype(np.int32))
    i = int(np.flatnonzero(s.x_train[:, 0, 0, 0] == 3)[0])  # training image 3
    assert s.x_train[i, 2, 5, 0] == 10 and s.y_train[i] == 3  # 3 + 2 + 5


def test_fashion_mnist_idx_files(keras_home):
    d = keras_home / "datasets" / "fashion-mnist"
    d.mkdir()
    x, xt = images(6, 28, 28), images(3, 28, 28, start=7)
    y, yt = np.array([0, 1, 2, 9, 9, 9], np.uint8), np.array([3, 4, 5], np.uint8)
    for name, arr in [("train-labels-idx1-ubyte.gz", y), ("train-images-idx3-ubyte.gz", x),
                      ("t10k-labels-idx1-ubyte.gz", yt), ("t10k-images-idx3-ubyte.gz", xt)]:
        (d / name).write_bytes(idx_bytes(arr))
    info = dataset_info("fashion_mnist")
    assert info.shape == (28, 28, 1) and info.samples == 6 and info.test_samples == 3
    assert info.class_counts == (1, 1, 1, 0, 0, 0, 0, 0, 0, 3)
    xa, ya, xb, yb = keras_data.read_arrays(keras_data.find_cached("fashion_mnist"))
    np.testing.assert_array_equal(xa[..., 0], x)
    np.testing.assert_array_equal(yb, [3, 4, 5])
    assert xb[2, 0, 1, 0] == 10  # start 7 + sample 2 + col 1


def cifar_batch(n, label0):
    # CIFAR rows hold 1024 red, then 1024 green, then 1024 blue values (CHW).
    data = np.zeros((n, 3072), np.uint8)
    for i in range(n):
        data[i, :1024], data[i, 1024:2048], data[i, 2048:] = 10 + i, 20 + i, 30 + i
    data[:, 1] = 200  # red of pixel (row 0, col 1)
    # Python 2 pickles (protocol 2, bytes keys), like the published files.
    return pickle.dumps({b"data": data, b"labels": [(label0 + i) % 10 for i in range(n)]}, protocol=2)


@pytest.mark.parametrize("layout", ["archive", "extracted"])
def test_cifar10_tar_and_extracted_batches(keras_home, layout):
    batches = {f"data_batch_{i}": cifar_batch(2, 2 * i) for i in range(1, 6)}
    batches["test_batch"] = cifar_batch(3, 7)
    root = keras_home / "datasets"
    if layout == "archive":  # what Keras 3 downloads: the original tar.gz under another name
        with tarfile.open(root / "cifar-10-batches-py-target_archive", "w:gz") as tar:
            for name, raw in batches.items():
                ti = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
                ti.size = len(raw)
                tar.addfile(ti, io.BytesIO(raw))
    else:  # where Keras 3 extracts it
        d = root / "cifar-10-batches-py-target" / "cifar-10-batches-py"
        d.mkdir(parents=True)
        for name, raw in batches.items():
            (d / name).write_bytes(raw)
    info = dataset_info("cifar10")
    assert (info.shape, info.samples, info.test_samples) == ((32, 32, 3), 10, 3)
    assert info.class_counts == (1,) * 10  # labels 2,3 4,5 6,7 8,9 10%10=0,1
    xt, yt, xv, yv = keras_data.read_arrays(keras_data.find_cached("cifar10"))
    assert xt.shape == (10, 32, 32, 3)
    assert tuple(xt[1, 5, 5]) == (11, 21, 31)  # sample 1: planes 10+1, 20+1, 30+1 -> HWC
    assert tuple(xt[0, 0, 1]) == (200, 20, 30)
    np.testing.assert_array_equal(yv, [7, 8, 9])


def test_cifar_pickle_with_code_is_refused(keras_home):
    class Evil:
        def __reduce__(self):
            return (print, ("pwned",))

    d = keras_home / "datasets" / "cifar-10-batches-py"
    d.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        (d / name).write_bytes(pickle.dumps({b"data": Evil(), b"labels": [0]}))
    with pytest.raises(ConfigError, match="cannot be read") as e:
        dataset_info("cifar10")
    assert "\n" not in str(e.value)


def test_offline_and_not_cached_is_rejected_with_where_to_put_the_file(keras_home):
    cfg = RunConfig(dataset="mnist", batch_size=64)  # published sizes: 60,000 + 10,000
    # ceil(0.2 x 60,000) = 12,000 validation images off the training split; the 10,000 test images test.
    assert cfg.data_sizes() == (48000, 12000) and cfg.test_size() == 10000
    with pytest.raises(ConfigError) as e:
        check_runnable(cfg, CPU)
    msg = str(e.value)
    assert msg.startswith("dataset: 'mnist' is not in the Keras cache and this machine is offline")
    assert f"place mnist.npz (from https://storage.googleapis.com/tensorflow/tf-keras-datasets/mnist.npz) " \
           f"in {keras_home / 'datasets'}/" in msg
    assert "\n" not in msg
    with pytest.raises(ConfigError, match="cifar-10-python.tar.gz"):
        check_runnable(RunConfig(dataset="cifar10"), CPU)


def test_the_autopilot_refuses_an_offline_uncached_data_set_before_it_starts(keras_home, store_home, capsys):
    # It used to print its search header, then fail with exit code 1 and "ConfigError: ..." once searching.
    from engine.cli.main import main

    assert main(["autopilot", "--dataset", "mnist", "--model", "cnn", "--budget", "60", "--json"]) == 2
    out, err = capsys.readouterr()
    assert err.startswith("error: dataset: 'mnist' is not in the Keras cache and this machine is offline")
    assert "autopilot autopilot-" not in err and "\n" not in err.rstrip("\n")
    assert json.loads(out.splitlines()[-1])["exit_code"] == 2


@pytest.mark.worker
def test_cli_rejects_uncached_dataset_offline_with_exit_2(keras_home, store_home):
    if (keras_data.Path("/tmp/.keras/datasets/fashion-mnist")).exists():
        pytest.skip("Fashion-MNIST is cached in /tmp/.keras on this machine")
    out = subprocess.run([sys.executable, "-m", "engine", "run", "--dataset", "fashion_mnist"],
                         capture_output=True, text=True, env=dict(os.environ), timeout=60)
    assert out.returncode == 2
    lines = [ln for ln in out.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "fashion-mnist/ (train-labels-idx1-ubyte.gz" in lines[0], out.stderr


# --- synthetic data -------------------------------------------------------------------
def test_synthetic_data_over_the_memory_limit_is_refused_at_the_config_check(monkeypatch):
    # The tester's run: accepted, then MemoryError (188 GiB) in the worker.
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset="synthetic", synthetic_shape=(4096, 4096, 3), synthetic_samples=1000, batch_size=4)
    assert str(e.value) == ("synthetic_samples: 1000 x 4096x4096x3 float32 = 187.50 GiB is over the 2.00 GiB limit "
                            "for a data set in memory; use at most 10 samples or a smaller synthetic_shape, or raise "
                            "SPEEDLAB_MAX_DECODED_MB (MiB)")
    assert RunConfig(dataset="synthetic", synthetic_shape=(4096, 4096, 3), synthetic_samples=10,
                     batch_size=4).data_sizes() == (8, 1)  # ceil(0.2 x 10) = 2 held out: 1 test, 1 validation
    # The same variable as user data: 1 MiB holds 85 samples of 32x32x3 float32 (12,288 bytes each).
    monkeypatch.setenv("SPEEDLAB_MAX_DECODED_MB", "1")
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset="synthetic")
    assert str(e.value) == ("synthetic_samples: 2048 x 32x32x3 float32 = 24.0 MiB is over the 1.0 MiB limit for a "
                            "data set in memory; use at most 85 samples or a smaller synthetic_shape, or raise "
                            "SPEEDLAB_MAX_DECODED_MB (MiB)")
    # ceil(0.2 x 85) = 17 held out of training (68 left): 17 // 2 = 8 test, 17 - 8 = 9 validation.
    assert RunConfig(dataset="synthetic", synthetic_samples=85, batch_size=4).data_sizes() == (68, 9)
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset="synthetic", synthetic_shape=(512, 512, 3), synthetic_samples=4)
    assert str(e.value) == ("synthetic_samples: 4 x 512x512x3 float32 = 12.0 MiB is over the 1.0 MiB limit for a "
                            "data set in memory; use a smaller synthetic_shape, or raise SPEEDLAB_MAX_DECODED_MB (MiB)")


@pytest.mark.parametrize("shape, message", [
    # Positive integers: the message was "is not an image shape; give three positive integers".
    ((100000, 100000, 3), "synthetic_shape: [100000, 100000, 3] is over the limit of 4096 per dimension; "
                          "give H, W and C of 1 to 4096 each, e.g. 224,224,3"),
    ((32, 32, 5000), "synthetic_shape: [32, 32, 5000] is over the limit of 4096 per dimension; "
                     "give H, W and C of 1 to 4096 each, e.g. 224,224,3"),
])
def test_synthetic_shapes_state_the_real_limit(shape, message):
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset="synthetic", synthetic_shape=shape)
    assert str(e.value) == message
    with pytest.raises(ConfigError) as e:  # what is not positive integers keeps its own message
        RunConfig(dataset="synthetic", synthetic_shape=(0,) + shape[1:])
    assert str(e.value) == (f"synthetic_shape: [0, {shape[1]}, {shape[2]}] is not an image shape; give three "
                            "positive integers H, W, C, e.g. 32,32,3")


# --- label subsets ------------------------------------------------------------------
def test_digits_counts_and_label_subset():
    from sklearn.datasets import load_digits

    assert tuple(np.bincount(load_digits().target)) == DIGITS.class_counts
    cfg = RunConfig(label_subset=(5, 6, 7, 8, 9), batch_size=32)
    # 182 + 181 + 179 + 174 + 180 = 896 images; ceil(0.2 x 896) = ceil(179.2) = 180 held out of training
    # (716 left): 180 // 2 = 90 test, 90 validation.
    assert cfg.data_sizes() == (716, 90) and cfg.test_size() == 90
    info = dataset_info("digits", cfg)
    assert info.classes == 5 and info.labels == (5, 6, 7, 8, 9) and info.class_names == ("5", "6", "7", "8", "9")
    s = datasets.load(cfg)
    assert s.classes == 5 and sorted(set(s.y_train)) == [0, 1, 2, 3, 4]
    assert (len(s.y_train), len(s.y_val), len(s.y_test)) == (716, 90, 90)
    assert np.bincount(np.concatenate([s.y_train, s.y_val, s.y_test])).tolist() == [182, 181, 179, 174, 180]
    assert RunConfig.from_json(cfg.to_json()) == cfg and json.loads(cfg.to_json())["label_subset"] == [5, 6, 7, 8, 9]
    assert RunConfig.from_dict({"label_subset": [1, 0]}).label_subset == (1, 0)


@pytest.mark.parametrize("subset, fragment", [
    ((3,), "fewer than 2 classes"),
    ((1, 1), "repeats a label"),
    ((0, 10), "has label 10 but digits has labels 0..9"),
])
def test_bad_label_subsets(subset, fragment):
    with pytest.raises(ConfigError) as e:
        RunConfig(label_subset=subset)
    assert e.value.field == "label_subset" and fragment in str(e.value)
    with pytest.raises(ConfigError, match="does not apply to synthetic"):
        RunConfig(dataset="synthetic", label_subset=(0, 1))


def test_keep_labels_remaps_in_the_given_order():
    x = np.arange(6)[:, None]
    y = np.array([0, 3, 1, 3, 2, 1])
    xk, yk = datasets.keep_labels(x, y, (3, 1))
    assert xk[:, 0].tolist() == [1, 2, 3, 5] and yk.tolist() == [0, 1, 0, 1]


# --- user .npz files ------------------------------------------------------------------
def good_arrays():
    return {"x_train": images(20, 6, 5), "y_train": np.arange(20) % 3,
            "x_test": images(6, 6, 5), "y_test": np.array([0, 1, 2, 0, 1, 2])}


def test_good_npz_is_read_and_used(tmp_path):
    f = tmp_path / "mine.npz"
    np.savez(f, **good_arrays())
    info = userdata.path_info(f)
    assert (info.shape, info.classes, info.samples, info.test_samples) == ((6, 5, 1), 3, 20, 6)
    assert info.class_counts == (7, 7, 6)
    cfg = RunConfig(dataset=str(f), batch_size=5, model="mlp")
    # ceil(0.2 x 20) = 4 validation samples off x_train (16 left); x_test's 6 are the test set.
    assert cfg.data_sizes() == (16, 4) and cfg.test_size() == 6
    s = datasets.load(cfg)
    assert s.x_train.dtype == np.uint8 and s.x_train.shape == (16, 6, 5, 1)
    assert (s.validation, s.test) == ("split", "test")
    # Stratified: training keeps 16 x (7, 7, 6) / 20 = (5.6, 5.6, 4.8) -> 5, 5, 4 plus the two largest
    # remainders (0.8 of class 2, then one of the tied 0.6), so validation holds 1 of class 2 and 1 and 2
    # of classes 0 and 1.
    v = np.bincount(s.y_val).tolist()
    assert v[2] == 1 and sorted(v[:2]) == [1, 2]
    np.testing.assert_array_equal(s.y_test, [0, 1, 2, 0, 1, 2])


def test_relative_path_is_made_absolute(tmp_path, monkeypatch):
    np.savez(tmp_path / "rel.npz", **good_arrays())
    monkeypatch.chdir(tmp_path)
    cfg = RunConfig(dataset="rel.npz", batch_size=5)
    assert cfg.dataset == str(tmp_path / "rel.npz")


def mutate(**changes):
    a = good_arrays()
    for k, v in changes.items():
        if v is None:
            a.pop(k)
        else:
            a[k] = v
    return a


@pytest.mark.parametrize("arrays, message", [
    (mutate(y_train=np.array([0, 1, 7] * 6 + [0, 1])),
     "y_train has 3 classes but the labels go up to 7; number the classes 0..2 with every class present"),
    (mutate(x_train=images(1000, 6, 5), y_train=np.arange(999) % 3),
     "x_train has 1000 samples but y_train has 999; give one label per image"),
    (mutate(x_train=np.full((20, 6, 5), 2.5, np.float32)),
     "x_train values go from 2.5 to 2.5; float pixels must lie in [0, 1] (or give uint8 pixels 0..255)"),
    (mutate(x_train=np.full((20, 6, 5), np.nan, np.float32)),
     "x_train has NaN or infinite values; give finite pixel values"),
    (mutate(x_train=np.full((20, 6, 5), 300, np.int32)),
     "x_train values go from 300 to 300; integer pixels must be 0..255 (or give floats in [0, 1])"),
    (mutate(y_train=np.eye(3)[np.arange(20) % 3]),
     "y_train has shape (20, 3), one-hot rows; give integer class labels of shape (N,): use y_train.argmax(axis=1)"),
    (mutate(y_train=(np.arange(20) % 3).astype(np.float32)),
     "y_train holds whole numbers as float32; give integer class labels 0..K-1: use y_train.astype(int)"),
    (mutate(y_train=np.arange(20) % 3 - 1),
     "y_train has negative labels (lowest -1); labels must be 0..K-1"),
    (mutate(y_train=np.zeros(20, int), x_test=None, y_test=None),
     "y_train has only 1 class (label 0); a classifier needs at least 2 classes"),
    (mutate(y_train=None),
     "y_train is missing; the .npz needs arrays x_train and y_train (and optionally x_test, y_test); "
     "it has: x_test (6x6x5 uint8), x_train (20x6x5 uint8), y_test (6 int64)"),
    (mutate(y_test=None), "x_test is given without y_test; give both x_test and y_test, or neither"),
    (mutate(y_test=np.array([0, 1, 2, 0, 1, 5])),
     "y_test has label 5 but y_train's labels go up to 2; every test class must also be in y_train"),
    (mutate(x_test=images(6, 7, 5)),
     "x_test images are 7x5x1 but x_train images are 6x5x1; give both splits one image shape"),
    (mutate(x_train=images(20, 6, 5, 4)),
     "x_train images have 4 channels (RGBA?); drop the alpha channel with x_train[..., :3] or composite it first"),
    (mutate(x_train=images(20, 6, 5, 2)), "x_train images have 2 channels; give 1 (grayscale) or 3 (RGB)"),
    (mutate(x_train=np.zeros((20, 30), np.uint8)),
     "x_train has shape (20, 30), a vector of 30 values per sample, not images; reshape x_train to (N, H, W) "
     "or (N, H, W, C) with H x W x C = 30"),
])
def test_each_bad_npz_fault_has_its_own_message(arrays, message):
    assert userdata.check_arrays(arrays) == [message]


def test_several_faults_are_all_listed_and_the_config_names_the_first(tmp_path):
    f = tmp_path / "bad.npz"
    np.savez(f, x_train=images(10, 4, 4), y_train=np.arange(9) % 2, x_test=images(2, 4, 4))
    with pytest.raises(userdata.DataError) as e:
        userdata.path_info(f)
    assert e.value.problems == ["x_test is given without y_test; give both x_test and y_test, or neither",
                                "x_train has 10 samples but y_train has 9; give one label per image"]
    with pytest.raises(ConfigError) as ce:
        RunConfig(dataset=str(f))
    assert str(ce.value) == (f"dataset: {str(f)!r} cannot be used: x_test is given without y_test; give both "
                             "x_test and y_test, or neither (and 1 more problem: python -m engine data check PATH)")


def test_unreadable_and_pickled_npz(tmp_path):
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"not a zip at all")
    with pytest.raises(userdata.DataError, match="junk.npz is not a readable .npz file"):
        userdata.path_info(junk)
    obj = tmp_path / "obj.npz"
    np.savez(obj, x_train=np.array([{"a": 1}], dtype=object), y_train=np.array([0]))
    with pytest.raises(userdata.DataError, match="holds object arrays"):
        userdata.path_info(obj)
    with pytest.raises(ConfigError, match="does not exist"):
        RunConfig(dataset=str(tmp_path / "missing.npz"))


# --- image folders and zips --------------------------------------------------------------
def png(arr) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG")
    return buf.getvalue()


def make_folder(root, sizes=None, classes=("dog", "cat"), n=3, bad=None):
    for k, cls in enumerate(classes):
        (root / cls).mkdir(parents=True, exist_ok=True)
        for i in range(n):
            h, w = (sizes or {}).get((cls, i), (4, 6))
            (root / cls / f"{i}.png").write_bytes(png(np.full((h, w), 40 * k + i, np.uint8)))
    if bad:
        (root / bad).write_bytes(b"\x89PNG broken")
    return root


def test_image_folder_and_zip_give_the_same_arrays(tmp_path):
    root = make_folder(tmp_path / "pets")
    arrays, names = userdata.read_images(root)
    assert names == ("cat", "dog")  # sorted folder names are the labels
    assert arrays["x_train"].shape == (6, 4, 6, 1) and arrays["x_train"].dtype == np.uint8
    assert arrays["y_train"].tolist() == [0, 0, 0, 1, 1, 1]
    assert arrays["x_train"][:, 0, 0, 0].tolist() == [40, 41, 42, 0, 1, 2]  # cat = k 1 -> 40 + i
    z = tmp_path / "pets.zip"
    with zipfile.ZipFile(z, "w") as zf:  # wrapped in one folder, as zipping a folder does
        for f in sorted(root.rglob("*.png")):
            zf.write(f, f"pets/{f.relative_to(root).as_posix()}")
        zf.writestr("__MACOSX/pets/._0.png", b"junk")
    za, znames = userdata.read_images(z)
    assert znames == names
    np.testing.assert_array_equal(za["x_train"], arrays["x_train"])
    info = dataset_info(str(z))
    assert (info.shape, info.classes, info.samples) == ((4, 6, 1), 2, 6)


def test_image_folder_faults_are_each_reported(tmp_path):
    root = make_folder(tmp_path / "odd", sizes={("dog", 1): (5, 6)}, bad="cat/9.png")
    (root / "fish").mkdir()
    with pytest.raises(userdata.DataError) as e:
        userdata.read_images(root)
    assert e.value.problems[0] == ("'cat/9.png' is not a readable image (not a format Pillow can read); "
                                   "remove or replace it")  # was Pillow's text, naming a BytesIO object
    assert e.value.problems[1:] == [
        "class folder 'fish' has no images (.png, .jpg, .jpeg, .bmp, .gif, .webp, .tif, .tiff)",
        "'dog/1.png' is 6x5 pixels but most images are 6x4; give all images one size"]
    one = make_folder(tmp_path / "one", classes=("only",))
    with pytest.raises(userdata.DataError, match="has only 1 class folder"):
        userdata.read_images(one)


def test_a_broken_link_named_as_an_image_is_a_fault_and_other_links_are_skipped(tmp_path, store_home, capsys):
    from engine.cli.main import main

    root = make_folder(tmp_path / "pets")
    (root / "dog" / "gone.png").symlink_to(tmp_path / "nowhere.png")
    (root / "cat" / "notes.txt").symlink_to(tmp_path / "nowhere.txt")
    line = (f"'dog/gone.png' is a broken link (to {tmp_path / 'nowhere.png'}, which does not exist); "
            "remove or replace it")
    # Was a raw FileNotFoundError, in data check and on the Train page.
    assert main(["data", "check", str(root)]) == 2
    assert capsys.readouterr().err.splitlines() == [f"error: {line}"]
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset=str(root), batch_size=2)
    assert str(e.value) == f"dataset: '{root}' cannot be used: {line}"
    (root / "dog" / "gone.png").unlink()  # the fix; the link that is not an image is skipped like any other file
    assert userdata.path_info(root).samples == 6


def test_system_folders_and_folders_without_images_are_refused_with_one_line(tmp_path, store_home, capsys):
    from engine.cli.main import main

    # /proc/self: files vanish while it is read (was a raw FileNotFoundError) and root/ links to /.
    with pytest.raises(ConfigError) as e:
        RunConfig(dataset="/proc/self", batch_size=2)
    assert str(e.value) == ("dataset: '/proc/self' cannot be used: /proc/self is inside /proc, a system folder, not "
                            "user data; give a .npz file, or a folder or .zip with one sub-folder of images per class")
    # Like /etc: many sub-folders, no images, a broken link (was one line per sub-folder, then FileNotFoundError).
    etc = tmp_path / "etc"
    for i in range(40):
        (etc / f"conf{i:02}.d").mkdir(parents=True)
        (etc / f"conf{i:02}.d" / "x.conf").write_text("x")
    (etc / "conf00.d" / "old.conf").symlink_to(tmp_path / "gone")
    assert main(["data", "check", str(etc)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        "error: etc has no images (.png, .jpg, .jpeg, .bmp, .gif, .webp, .tif, .tiff) in any of its 40 "
        "sub-folders; give a folder with one sub-folder of images per class"]
    # A real data folder with a few empty class folders still names them, the rest counted.
    root = make_folder(tmp_path / "pets")
    for c in ("eel", "fox", "gnu", "hen", "ibis"):
        (root / c).mkdir()
    with pytest.raises(userdata.DataError) as e:
        userdata.read_images(root)
    assert e.value.problems == [f"class folder {c!r} has no images (.png, .jpg, .jpeg, .bmp, .gif, .webp, .tif, "
                                ".tiff)" for c in ("eel", "fox", "gnu")] + [
        "2 more class folders have no images; put images in them or remove them"]


def test_a_folder_of_mostly_other_files_is_refused_before_it_is_walked(tmp_path, monkeypatch):
    # `data check /` walked the whole disk (~35 s) before refusing it.
    monkeypatch.setattr(userdata, "MAX_OTHER_FILES", 5)
    home = tmp_path / "home"
    for c in ("docs", "src"):
        (home / c).mkdir(parents=True)
        for i in range(4):
            (home / c / f"f{i}.txt").write_text("x")
    stats = []
    with monkeypatch.context() as m:
        real = os.stat
        m.setattr(userdata.os, "stat", lambda p, *a, **k: stats.append(p) or real(p, *a, **k))
        with pytest.raises(userdata.DataError) as e:
            userdata.load_path(home)
    [line] = e.value.problems
    assert line.startswith(f"{home} holds more than 5 files that are not images (.png, .jpg, .jpeg, .bmp, .gif, "
                           ".webp, .tif, .tiff) and few images, e.g. '")
    assert line.endswith("'; give a folder with one sub-folder of images per class")
    files = [p for p in stats if str(p).endswith(".txt")]
    assert len(files) == 4  # the first folder's files only: refused before the second was read
    # A data folder with as many sidecar files as images (more than the limit) is read as before.
    root = make_folder(tmp_path / "pets", n=4)
    for i in range(12):
        (root / "dog" / f"note{i}.txt").write_text("x")
    data = userdata.load_path(root)
    assert data.class_names == ("cat", "dog") and data.arrays["x_train"].shape == (8, 4, 6, 1)


def test_a_class_folder_linking_above_the_data_folder_is_a_fault(tmp_path):
    root = make_folder(tmp_path / "pets")
    (root / "up").symlink_to(tmp_path)  # read as a class, it would hold the data folder again
    with pytest.raises(userdata.DataError) as e:
        userdata.read_images(root)
    assert e.value.problems == [f"class folder 'up' links to {tmp_path}, which holds the data folder itself; "
                                "remove the link"]
    (root / "up").unlink()
    (root / "cow").symlink_to(make_folder(tmp_path / "elsewhere", classes=("cow",)) / "cow")
    assert userdata.read_images(root)[1] == ("cat", "cow", "dog")  # other linked class folders are read


# --- the registry ----------------------------------------------------------------------------
def test_register_checks_first_and_leaves_nothing_behind(store_home, tmp_path):
    bad = tmp_path / "bad.npz"
    np.savez(bad, x_train=images(10, 4, 4), y_train=np.array([0, 1, 7] * 3 + [0]))
    with pytest.raises(userdata.DataError, match="labels go up to 7"):
        userdata.register("mine", bad)
    with pytest.raises(userdata.DataError, match="^pets.zip is not a readable zip file"):
        userdata.register_upload("mine", "../pets.zip", b"PK\x03\x04 truncated")
    reg = userdata.registry_dir()
    assert not reg.exists() or list(reg.iterdir()) == []
    assert userdata.registered() == []
    with pytest.raises(ConfigError, match="is not a registered data set"):
        RunConfig(dataset="user:mine")

    good = tmp_path / "good.npz"
    np.savez(good, **good_arrays())
    info = userdata.register_upload("mine", "good.npz", good.read_bytes())
    assert info.samples == 20 and userdata.registered() == ["mine"]
    assert sorted(p.name for p in reg.iterdir()) == ["mine"]  # no temporary folders left
    cfg = RunConfig(dataset="user:mine", batch_size=5)
    assert cfg.data_sizes() == (16, 4)  # ceil(0.2 x 20) = 4 validation off x_train; x_test (6) tests
    s = datasets.load(cfg)
    assert s.x_val.shape == (4, 6, 5, 1) and s.x_test.shape == (6, 6, 5, 1)
    with pytest.raises(userdata.DataError, match="already registered"):
        userdata.register("mine", good)
    with pytest.raises(userdata.DataError, match="not a usable data set name"):
        userdata.register("../evil", good)


@pytest.mark.worker
def test_cli_data_check_lists_every_problem(tmp_path, store_home):
    f = tmp_path / "bad.npz"
    np.savez(f, x_train=images(10, 4, 4), y_train=np.arange(9) % 2, x_test=images(2, 4, 4))
    out = subprocess.run([sys.executable, "-m", "engine", "data", "check", str(f)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2
    assert out.stderr.splitlines() == [
        "error: x_test is given without y_test; give both x_test and y_test, or neither",
        "error: x_train has 10 samples but y_train has 9; give one label per image"]
    out = subprocess.run([sys.executable, "-m", "engine", "run", "--dataset", str(f)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 2 and len(out.stderr.strip().splitlines()) == 1
    assert out.stderr.startswith("error: dataset: ")


# --- input pipeline ------------------------------------------------------------------------
@pytest.mark.tf
def test_pipeline_scales_uint8_and_cache_gives_the_same_batches():
    tf = pytest.importorskip("tensorflow")
    from engine.data import pipeline

    x = images(10, 2, 2, 1)
    y = (np.arange(10) % 3).astype(np.int32)
    runs = []
    for cache in (False, True):
        ds = pipeline.train_dataset(x, y, 3, 4, 1, seed=3, cache=cache, parallel_map=not cache,
                                    prefetch=cache, meter=pipeline.DataWaitMeter())
        runs.append([(bx.numpy(), by.numpy()) for bx, by in ds])
    (a, b) = runs
    assert [bx.shape[0] for bx, _ in a] == [4, 4, 2]
    for (xa, ya), (xb, yb) in zip(a, b):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)
    flat = np.concatenate([bx for bx, _ in a])
    # Every image once: pixel (0, 0) of image i is i / 255.
    assert sorted(np.round(flat[:, 0, 0, 0] * 255).astype(int).tolist()) == list(range(10))
    ys = np.concatenate([by for _, by in a])
    assert ys.sum(axis=1).tolist() == [1.0] * 10 and ys.dtype == np.float32
    ev = pipeline.eval_dataset(x, y, 3, 4, 1)
    first_x, first_y = next(iter(ev))
    np.testing.assert_allclose(first_x.numpy()[:, 0, 0, 0], np.arange(4) / 255.0, rtol=1e-6)
    assert first_y.numpy().argmax(1).tolist() == [0, 1, 2, 0]
    assert tf.data.Dataset is not None


@pytest.mark.tf
def test_data_wait_meter_sees_a_slow_pipeline():
    tf = pytest.importorskip("tensorflow")
    from engine.data import pipeline

    meter = pipeline.DataWaitMeter()
    # Each element takes ~20 ms to produce and nothing is prefetched: the consumer waits for it.
    def produce(v):
        time.sleep(0.02)
        return v

    slow = tf.data.Dataset.range(3).map(lambda i: tf.py_function(produce, [i], tf.int64))
    for _ in meter.wrap(slow):
        pass
    assert 0.055 < meter.total() < 0.5
    fast = pipeline.DataWaitMeter()
    for _ in fast.wrap(tf.data.Dataset.range(3).prefetch(3)):
        pass
    assert fast.total() < 0.03
