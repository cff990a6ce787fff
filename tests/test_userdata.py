"""User data (engine.data.userdata): .npz files and image folders or zips, each fault
reported on its own line before anything is registered. Every file is made here."""
import io
import os
import zipfile

import numpy as np
import pytest

from engine.data import datasets
from engine.data import userdata, userdata_read
from engine.config import ConfigError, RunConfig
from engine.data.meta import dataset_info

from tests.helpers.data import good_arrays, images


# --- user .npz files ------------------------------------------------------------------
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
    assert userdata_read.check_arrays(arrays) == [message]


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


def test_bad_images_are_listed_three_then_counted():
    from engine.data.userdata_read import _first_three

    items = [(f"{i}.png", i) for i in range(5)]
    assert _first_three(items, lambda n, i: f"{n} is bad", "more are bad") == \
        ["0.png is bad", "1.png is bad", "2.png is bad", "2 more are bad"]
    assert _first_three(items[:3], lambda n, i: f"{n} is bad", "more are bad") == ["0.png is bad", "1.png is bad",
                                                                                     "2.png is bad"]
