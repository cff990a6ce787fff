"""A user's own images, checked and read (no TF): the arrays' checks, .npz files and
folders or zips of class folders (engine.data.userdata loads, caches and registers them).


Two formats are accepted:

- an ``.npz`` file (``np.savez``) with ``x_train`` and ``y_train``, and optionally
  ``x_test`` and ``y_test`` (both or neither). Images are (N, H, W) or
  (N, H, W, C) with C = 1 or 3, either integers 0..255 (stored as uint8) or
  floats in [0, 1] (stored as float32); labels are integers 0..K-1 of shape
  (N,) or (N, 1), every class present in y_train.
- a folder, or a ``.zip`` of one, with one sub-folder per class (the sorted
  folder names become labels 0..K-1) holding image files (.png, .jpg, .jpeg,
  .bmp, .gif, .webp, .tif, .tiff) all of one size. A zip whose root holds a
  single folder is read from inside that folder. Images are read with Pillow
  as a viewer shows them (engine.data.images: EXIF orientation, bit depth,
  palette, alpha over white, CMYK, colour profiles); they become grayscale
  (C = 1) when every image is grayscale, else RGB (C = 3), and uint8, or
  float32 in [0, 1] when any image has more than 8 bits per channel.

Limits, checked before any pixel is decoded: images 2 to MAX_SIDE (4096)
pixels a side (from each file's header), and the decoded data set (samples x
H x W x C x bytes per value, also an .npz's arrays, from their headers) at most
$SPEEDLAB_MAX_DECODED_MB MiB (default 2048).

Some class of x_train needs 2 or more samples, with or without x_test/y_test: else
no validation split is possible (engine.data.meta.check_split) and the data set is refused.
Folders under /proc and /sys are refused; broken links named as images are faults.

Every fault is reported as its own one-line message (`DataError.problems`).
"""
from __future__ import annotations

import os
import re
import zipfile
from collections import Counter
from pathlib import Path
from typing import Optional

import numpy as np

from engine.data.limits import MAX_SIDE, fmt_bytes, max_decoded_bytes

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".webp", ".tif", ".tiff")
# More files than this that are not images, and OTHER_FILES_RATIO times as many as images: not a
# data folder (/, a home folder). A ratio, not "more than images": a data set whose images each
# have a sidecar file (.json, .txt) has about as many of both.
MAX_OTHER_FILES = 10_000
OTHER_FILES_RATIO = 10
# A zip is read into memory; refuse archives that would unpack to more than this.
MAX_UNPACKED_BYTES = 4 << 30
# The kernel's own file systems (Linux): never user data (/dev is not: /dev/shm may hold data).
SYSTEM_DIRS = ("proc", "sys")


class DataError(ValueError):
    """A user data file that cannot be used; `problems` holds one line per fault."""

    def __init__(self, problems: list[str]):
        self.problems = list(problems)
        more = f" (and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''})" \
            if len(problems) > 1 else ""
        super().__init__(self.problems[0] + more)


def fmt_shape(shape) -> str:
    return "x".join(str(int(s)) for s in shape)


# --- array checks -----------------------------------------------------------
# Layouts people commonly save instead of (N, H, W[, C]) channels-last with labels 0..K-1,
# each recognised and named with its fix: channels first (N, C, H, W), samples last
# (H, W, N) as MATLAB saves them, flattened images (N, H*W*C), RGBA, 16-bit or 0..255
# float pixels, one-hot / float / text / 1-based labels, and arrays saved without names.
def _square(n: int) -> Optional[int]:
    r = int(round(n ** 0.5))
    return r if r >= 2 and r * r == n else None


def _flat(name: str, shape) -> str:
    """The message for images flattened to vectors: its likely shape and fix."""
    d = shape[1]
    s1, s3 = _square(d), (_square(d // 3) if d % 3 == 0 else None)
    head = f"{name} has shape {tuple(shape)}, a vector of {d} values per sample"
    if s1:
        return f"{head} (flattened {s1}x{s1} images?); use {name}.reshape(-1, {s1}, {s1}, 1)"
    if s3:
        return (f"{head} (flattened {s3}x{s3} RGB images?); use {name}.reshape(-1, {s3}, {s3}, 3), or "
                f"{name}.reshape(-1, 3, {s3}, {s3}).transpose(0, 2, 3, 1) if stored channel by channel "
                "as in CIFAR-10's files")
    return f"{head}, not images; reshape {name} to (N, H, W) or (N, H, W, C) with H x W x C = {d}"


def _check_x(name: str, x: np.ndarray) -> list[str]:
    if x.dtype.kind not in "uif":
        return [f"{name} has dtype {x.dtype}; give uint8 pixels 0..255 or floats in [0, 1]"]
    if x.ndim == 2:
        return [_flat(name, x.shape)]
    if x.ndim not in (3, 4):
        return [f"{name} has shape {tuple(x.shape)}; give images of shape (N, H, W) or (N, H, W, C)"]
    if len(x) == 0:
        return [f"{name} has no samples; give at least one image"]
    if x.ndim == 4 and x.shape[1] in (1, 3, 4) and x.shape[3] not in (1, 3, 4):
        return [f"{name} has shape {tuple(x.shape)}, channels first (N, C, H, W); SpeedLab wants channels "
                f"last: use {name}.transpose(0, 2, 3, 1)"]
    p = []
    if x.ndim == 4 and x.shape[3] == 4:
        p.append(f"{name} images have 4 channels (RGBA?); drop the alpha channel with {name}[..., :3] "
                 "or composite it first")
    elif x.ndim == 4 and x.shape[3] not in (1, 3):
        p.append(f"{name} images have {x.shape[3]} channels; give 1 (grayscale) or 3 (RGB)")
    if min(x.shape[1], x.shape[2]) < 2 or max(x.shape[1], x.shape[2]) > MAX_SIDE:
        p.append(f"{name} images are {x.shape[1]}x{x.shape[2]} pixels; give images 2 to {MAX_SIDE} pixels a side")
    if x.dtype.kind == "f":
        if not np.isfinite(x).all():
            p.append(f"{name} has NaN or infinite values; give finite pixel values")
        else:
            lo, hi = float(x.min()), float(x.max())
            if lo >= 0.0 and 1.0 < hi <= 255.0 and (x == np.round(x)).all():
                p.append(f"{name} values go from {lo:g} to {hi:g}, floats on a 0..255 scale; "
                         f"float pixels must lie in [0, 1]: use {name} / 255")
            elif -1.0 <= lo < 0.0 and hi <= 1.0:
                p.append(f"{name} values go from {lo:g} to {hi:g}, normalised to [-1, 1]?; "
                         f"float pixels must lie in [0, 1]: use ({name} + 1) / 2")
            elif lo < 0.0 or hi > 1.0:
                p.append(f"{name} values go from {lo:g} to {hi:g}; float pixels must lie in [0, 1] "
                         f"(or give uint8 pixels 0..255)")
    else:
        lo, hi = int(x.min()), int(x.max())
        if lo >= 0 and 255 < hi <= 65535 and (x.dtype == np.uint16 or hi > 4095):
            p.append(f"{name} values go from {lo} to {hi}, 16-bit pixels?; integer pixels must be 0..255: "
                     f"use ({name} / 65535).astype('float32') for floats in [0, 1]")
        elif lo < 0 or hi > 255:
            p.append(f"{name} values go from {lo} to {hi}; integer pixels must be 0..255 "
                     f"(or give floats in [0, 1])")
    return p


def _check_y(name: str, y: np.ndarray) -> list[str]:
    if y.ndim == 2 and y.shape[1] > 1:
        onehot = y.dtype.kind in "uifb" and np.isin(y, (0, 1)).all() and (y.sum(axis=1) == 1).all()
        if onehot:
            return [f"{name} has shape {tuple(y.shape)}, one-hot rows; give integer class labels of shape (N,): "
                    f"use {name}.argmax(axis=1)"]
        return [f"{name} has shape {tuple(y.shape)}; give integer class labels of shape (N,), not one-hot"]
    if not (y.ndim == 1 or (y.ndim == 2 and y.shape[1] == 1)):
        return [f"{name} has shape {tuple(y.shape)}; give integer class labels of shape (N,)"]
    if y.dtype.kind in "US":
        some = ", ".join(repr(str(v)) for v in np.unique(y)[:3])
        return [f"{name} holds text labels ({some}, ...); give integer class labels 0..K-1: "
                f"use names, {name} = np.unique({name}, return_inverse=True)"]
    if y.dtype.kind == "b":
        return [f"{name} holds booleans; give integer class labels 0..K-1: use {name}.astype(int)"]
    if y.dtype.kind == "f":
        if len(y) and np.isfinite(y).all() and (y == np.round(y)).all():
            return [f"{name} holds whole numbers as {y.dtype}; give integer class labels 0..K-1: "
                    f"use {name}.astype(int)"]
        return [f"{name} has dtype {y.dtype} with fractional values; give integer class labels 0..K-1"]
    if y.dtype.kind not in "ui":
        return [f"{name} has dtype {y.dtype}; give integer class labels 0..K-1"]
    if len(y) and int(y.min()) < 0:
        return [f"{name} has negative labels (lowest {int(y.min())}); labels must be 0..K-1"]
    return []


def _describe_arrays(a: dict) -> str:
    return ", ".join(f"{k} ({fmt_shape(np.shape(v)) or 'scalar'} {np.asarray(v).dtype})" for k, v in sorted(a.items()))


def _guess_names(a: dict) -> Optional[str]:
    """For an .npz without x_train/y_train: which arrays look like images and
    labels, as the fix to save them under SpeedLab's names; None if unclear."""
    imgs = [k for k, v in a.items() if np.ndim(v) in (2, 3, 4) and np.asarray(v).dtype.kind in "uif"]
    labs = [k for k, v in a.items() if np.ndim(v) == 1]
    pairs = [(i, l) for i in imgs for l in labs if len(a[i]) == len(a[l])]
    if len(pairs) != 1:
        return None
    i, lab = pairs[0]
    return f"it looks like images {i!r} and labels {lab!r}: save them with np.savez(path, x_train={i}, y_train={lab})"


def _samples_last(x, y) -> bool:
    """(H, W, N) or (H, W, C, N) with N = len(y): samples on the last axis."""
    return np.ndim(x) in (3, 4) and np.ndim(y) >= 1 and len(x) != len(y) and np.shape(x)[-1] == len(y)


def check_arrays(a: dict) -> list[str]:
    """All faults of the arrays of an .npz data set, one line each ([] = usable).

    `a` maps names to arrays: x_train, y_train and optionally x_test, y_test.
    Common other layouts are recognised and named with their fix (see above).
    """
    p: list[str] = []
    missing = [k for k in ("x_train", "y_train") if k not in a]
    for key in missing:
        guess = _guess_names(a) if len(missing) == 2 else None
        p.append(f"{key} is missing; the .npz needs arrays x_train and y_train "
                 f"(and optionally x_test, y_test); it has: "
                 + (_describe_arrays(a) if a else "nothing") + (f"; {guess}" if guess else ""))
        if guess:
            return p  # one line says it all
    if ("x_test" in a) != ("y_test" in a):
        have, lack = ("x_test", "y_test") if "x_test" in a else ("y_test", "x_test")
        p.append(f"{have} is given without {lack}; give both x_test and y_test, or neither")
    ok = {}
    for key in ("x_train", "y_train", "x_test", "y_test"):
        if key in a:
            arr = np.asarray(a[key])
            y = a.get("y_" + key[2:]) if key[0] == "x" else None
            if key[0] == "x" and y is not None and _samples_last(arr, y):
                faults = [f"{key} has shape {tuple(arr.shape)} with the {len(y)} samples on the last axis "
                          f"(as MATLAB saves them); SpeedLab wants samples first: use np.moveaxis({key}, -1, 0)"]
            else:
                faults = (_check_x if key[0] == "x" else _check_y)(key, arr)
            p += faults
            ok[key] = None if faults else arr
    for split in ("train", "test"):
        x, y = a.get(f"x_{split}"), a.get(f"y_{split}")
        if x is not None and y is not None and np.ndim(x) >= 1 and np.ndim(y) >= 1 and len(x) != len(y) \
                and not _samples_last(x, y):
            p.append(f"x_{split} has {len(x)} samples but y_{split} has {len(y)}; give one label per image")
    yt = ok.get("y_train")
    if yt is not None and len(yt):
        labels = np.unique(yt)
        k, top = len(labels), int(labels[-1])
        if k < 2:
            p.append(f"y_train has only 1 class (label {top}); a classifier needs at least 2 classes")
        elif int(labels[0]) == 1 and top == k:
            p.append(f"y_train's labels go from 1 to {k}, numbered from 1; number the classes 0..{k - 1}: "
                     "use y_train - 1 (and y_test - 1)")
        elif top + 1 != k:
            p.append(f"y_train has {k} classes but the labels go up to {top}; "
                     f"number the classes 0..{k - 1} with every class present")
        yv = ok.get("y_test")
        if yv is not None and len(yv) and int(yv.max()) > top:
            p.append(f"y_test has label {int(yv.max())} but y_train's labels go up to {top}; "
                     "every test class must also be in y_train")
    xt, xv = ok.get("x_train"), ok.get("x_test")
    if xt is not None and xv is not None:
        st, sv = _image_shape(xt), _image_shape(xv)
        if st != sv:
            p.append(f"x_test images are {fmt_shape(sv)} but x_train images are {fmt_shape(st)}; "
                     "give both splits one image shape")
    return p


def _image_shape(x: np.ndarray) -> tuple:
    return tuple(x.shape[1:]) + ((1,) if x.ndim == 3 else ())


def normalise(a: dict) -> dict:
    """Checked arrays in SpeedLab's layout: x (N, H, W, C) uint8 (pixels 0..255)
    or float32 (in [0, 1]); y int32 (N,). Raises DataError on any fault."""
    problems = check_arrays(a)
    if problems:
        raise DataError(problems)
    out = {}
    for key in ("x_train", "y_train", "x_test", "y_test"):
        if key not in a:
            continue
        v = np.asarray(a[key])
        if key[0] == "x":
            v = v[..., None] if v.ndim == 3 else v
            v = np.ascontiguousarray(v, dtype=np.float32 if v.dtype.kind == "f" else np.uint8)
        else:
            v = v.reshape(-1).astype(np.int32)
        out[key] = v
    return out


# --- readers ----------------------------------------------------------------
def read_npz(path: os.PathLike) -> dict:
    """The arrays of an .npz file (no pickles). Raises DataError."""
    if not zipfile.is_zipfile(path):  # np.load would take it for a pickle
        raise DataError([f"{Path(path).name} is not a readable .npz file (not a zip archive); "
                         "save it with np.savez"])
    _check_npz_size(path)
    try:
        with np.load(path, allow_pickle=False) as f:
            return {k: f[k] for k in f.files}
    except ValueError as e:
        if "allow_pickle" in str(e):
            raise DataError([f"{Path(path).name} holds object arrays (pickles); "
                             "save plain numeric arrays with np.savez"]) from None
        raise DataError([f"{Path(path).name} is not a readable .npz file ({e}); save it with np.savez"]) from None
    except (OSError, zipfile.BadZipFile, EOFError) as e:
        raise DataError([f"{Path(path).name} is not a readable .npz file ({e}); save it with np.savez"]) from None


def _check_npz_size(path: os.PathLike) -> None:
    """Refuse an .npz whose arrays would take more than `max_decoded_bytes()`
    in memory, from the member headers alone (nothing is loaded)."""
    from engine.data.keras_data import npz_headers

    try:
        heads = npz_headers(path)
    except Exception:  # noqa: BLE001 - np.load below gives the precise message
        return
    total = sum(int(np.prod(shape, dtype=np.int64)) * dtype.itemsize for shape, dtype in heads.values())
    if total > max_decoded_bytes():
        sizes = ", ".join(f"{k} {fmt_shape(shape) or 'scalar'} {dtype}" for k, (shape, dtype) in sorted(heads.items()))
        raise DataError([f"{Path(path).name} holds {fmt_bytes(total)} of arrays ({sizes}); the limit is "
                         f"{fmt_bytes(max_decoded_bytes())} (SPEEDLAB_MAX_DECODED_MB); use fewer or smaller images"])


def _skip(part: str) -> bool:
    return part.startswith(".") or part == "__MACOSX"


def _is_file(f: Path) -> bool:
    """A regular file, or a broken link named as an image (reported, not skipped:
    the user meant an image there); FIFOs, sockets and other links are skipped."""
    try:
        return f.is_file() or (f.is_symlink() and f.suffix.lower() in IMAGE_EXTS)
    except OSError:  # e.g. a file of /proc that is gone, or no permission: not an image
        return False


def _entries_folder(root: Path, problems: list) -> dict[str, list[tuple[str, object]]]:
    """{class: [(relative path, opener)]} of a folder of class folders; a class
    folder that links to the folder itself or above it is added to `problems`.
    Raises DataError for an unreadable folder."""
    out: dict = {}
    try:
        dirs = sorted(p for p in root.iterdir() if not _skip(p.name) and p.is_dir())
    except OSError as e:
        raise DataError([f"{root} cannot be read ({e.strerror or type(e).__name__}); "
                         "check its permissions, or give another folder"]) from None
    real = root.resolve()
    for d in dirs:
        target = d.resolve()
        if d.is_symlink() and (real == target or target in real.parents):
            # Reading it would walk the data folder again, or the whole disk (/proc/self/root).
            problems.append(f"class folder {d.name!r} links to {target}, which holds the data folder itself; "
                            "remove the link")
            continue
        files = []
        for f in sorted(d.rglob("*")):
            rel = f.relative_to(root)
            if not any(_skip(part) for part in rel.parts) and _is_file(f):
                files.append((rel.as_posix(), f))
        out[d.name] = files
    return out


def _entries_zip(z: zipfile.ZipFile) -> dict[str, list[tuple[str, object]]]:
    """{class: [(path inside the class root, ZipInfo)]} of a zip of class folders."""
    infos = [i for i in z.infolist() if not any(_skip(part) for part in i.filename.split("/") if part)]
    total = sum(i.file_size for i in infos)
    if total > MAX_UNPACKED_BYTES:
        raise DataError([f"the zip unpacks to {total / 2**30:.1f} GiB; the limit is "
                         f"{MAX_UNPACKED_BYTES / 2**30:.0f} GiB"])
    files = [(i, [p for p in i.filename.split("/") if p]) for i in infos if not i.is_dir()]
    dirs = [[p for p in i.filename.split("/") if p] for i in infos if i.is_dir()]
    depth = 0
    # Descend through a single wrapper folder ("data/cats/1.png") as long as the
    # files stay inside class folders below it.
    while files and len({p[depth] for _, p in files}) == 1 and all(len(p) >= depth + 3 for _, p in files):
        depth += 1
    out: dict = {}
    for p in dirs:  # empty class folders count as classes (and are reported)
        if len(p) == depth + 1 and all(q[:depth] == p[:depth] for _, q in files[:1]):
            out.setdefault(p[depth], [])
    for info, p in files:
        if len(p) >= depth + 2:
            out.setdefault(p[depth], []).append(("/".join(p[depth:]), info))
    return {c: sorted(out[c], key=lambda e: e[0]) for c in sorted(out)}


def decoded_limit_problem(n: int, h: int, w: int, c: int, itemsize: int, what: str = "the images") -> Optional[str]:
    """One line when n x h x w x c x itemsize bytes exceed `max_decoded_bytes()`, else None."""
    total, cap = n * h * w * c * itemsize, max_decoded_bytes()
    if total <= cap:
        return None
    return (f"{what} decode to {n:,} x {h} x {w} x {c} x {itemsize} bytes = {fmt_bytes(total)}; the limit is "
            f"{fmt_bytes(cap)} (SPEEDLAB_MAX_DECODED_MB); use fewer or smaller images")



def _first_three(items: list[tuple], line, more: str) -> list[str]:
    """One problem line per item for the first three (`line(*item)`), then 'N <more>' for the rest:
    a folder of 5,000 bad images gets four lines, not 5,000."""
    return [line(*it) for it in items[:3]] + ([f"{len(items) - 3} {more}"] if len(items) > 3 else [])

def read_images(path: os.PathLike) -> tuple[dict, tuple]:
    """({'x_train': (N, H, W, C), 'y_train': int32 (N,)}, class names) from a
    folder or zip of class folders, read as a viewer shows them (engine.data.images):
    uint8 0..255, or float32 in [0, 1] when any image has more than 8 bits.

    Bounded memory: every header is read first (sizes, modes) and over-large
    images (more than MAX_SIDE pixels a side) or a decoded total above
    `max_decoded_bytes()` are refused before any pixel is decoded; then one
    image at a time is decoded into the preallocated array.
    Raises DataError listing every fault."""
    try:
        from PIL import Image
    except ImportError:  # pragma: no cover - Pillow comes with Streamlit
        raise DataError(["reading image folders needs Pillow; pip install pillow"]) from None
    from engine.data import images as imgs

    path = Path(path)
    z = None

    def read(src) -> bytes:
        return src.read_bytes() if isinstance(src, Path) else z.read(src)

    def unreadable(rel, src, e) -> str:
        if isinstance(e, imgs.ImageFault):
            return str(e)
        if isinstance(e, Image.DecompressionBombError):
            return f"{rel!r} is too large to open safely ({str(e).splitlines()[0][:100]}); downscale it"
        if isinstance(e, Image.UnidentifiedImageError):  # its text is a BytesIO object's repr
            return f"{rel!r} is not a readable image (not a format Pillow can read); remove or replace it"
        if isinstance(src, Path) and src.is_symlink() and not src.exists():
            return (f"{rel!r} is a broken link (to {os.readlink(src)}, which does not exist); "
                    "remove or replace it")
        if isinstance(e, OSError) and e.strerror:  # without the absolute path Python adds
            return f"{rel!r} cannot be read ({e.strerror}); remove or replace it"
        text = re.sub(r"<[^<>]* at 0x[0-9a-fA-F]+>", "the file", str(e).splitlines()[0] if str(e) else "")
        return (f"{rel!r} is not a readable image ({type(e).__name__}: {text[:120]}); "
                "remove or replace it")

    problems: list[str] = []
    try:
        if path.is_dir():
            entries = _entries_folder(path, problems)
        else:
            try:
                z = zipfile.ZipFile(path)
            except (zipfile.BadZipFile, OSError) as e:
                raise DataError([f"{path.name} is not a readable zip file ({e}); "
                                 "zip the folder of class folders again"]) from None
            entries = _entries_zip(z)
        if not entries:
            raise DataError(problems + [f"{path.name} has no class sub-folders; put the images of each class "
                                        "in its own sub-folder (e.g. cats/, dogs/)"])
        if len(entries) == 1:
            problems.append(f"{path.name} has only 1 class folder ({next(iter(entries))!r}); "
                            "give at least 2 classes, one sub-folder each")
        entries = {c: [f for f in files if f[0].lower().endswith(IMAGE_EXTS)] for c, files in entries.items()}
        empty = [c for c, files in entries.items() if not files]
        exts = ", ".join(IMAGE_EXTS)
        if len(empty) == len(entries) > 1:  # not a data folder at all (e.g. /etc): one line
            problems.append(f"{path.name} has no images ({exts}) in any of its {len(empty)} sub-folders; "
                            "give a folder with one sub-folder of images per class")
            empty = []
        # Pass 1: headers only (no pixel is decoded).
        heads, labels, names, srcs = [], [], [], []
        big = []
        for label, (cls, files) in enumerate(entries.items()):
            if cls in empty[:3]:
                problems.append(f"class folder {cls!r} has no images ({exts})")
            for rel, src in files:
                try:
                    hd = imgs.read_header(read(src), rel)
                except Exception as e:  # noqa: BLE001 - any decoder error is the file's fault
                    problems.append(unreadable(rel, src, e))
                    continue
                if max(hd.width, hd.height) > MAX_SIDE or min(hd.width, hd.height) < 2:
                    big.append((rel, hd))
                    continue
                heads.append(hd)
                labels.append(label)
                names.append(rel)
                srcs.append(src)
        if len(empty) > 3:
            problems.append(f"{len(empty) - 3} more class folders have no images; put images in them or remove them")
        problems += _first_three(big, lambda rel, hd: f"{rel!r} is {hd.width}x{hd.height} pixels; images may be 2 "
                                 f"to {MAX_SIDE} pixels a side; downscale them (e.g. to 224x224) before adding them",
                                 f"more images are outside 2 to {MAX_SIDE} pixels a side; downscale them")
        if heads:
            sizes = Counter((hd.width, hd.height) for hd in heads)
            (w, h), _ = sizes.most_common(1)[0]
            odd = [(n, hd) for n, hd in zip(names, heads) if (hd.width, hd.height) != (w, h)]
            problems += _first_three(odd, lambda n, hd: f"{n!r} is {hd.width}x{hd.height} pixels but most images "
                                     f"are {w}x{h}; give all images one size",
                                     f"more images are not {w}x{h} pixels; give all images one size")
        if problems:
            raise DataError(problems)
        gray = all(hd.gray for hd in heads)
        high = any(hd.high_depth for hd in heads)
        c = 1 if gray else 3
        too_big = decoded_limit_problem(len(heads), h, w, c, 4 if high else 1)
        if too_big:
            raise DataError([too_big])
        # Pass 2: one image at a time into the preallocated array.
        x = np.empty((len(heads), h, w, c), np.float32 if high else np.uint8)
        for i, (rel, src) in enumerate(zip(names, srcs)):
            try:
                with imgs.open_image(read(src)) as im:
                    a = imgs.decode(im, rel, gray, high)
            except Exception as e:  # noqa: BLE001
                problems.append(unreadable(rel, src, e))
                continue
            if a.shape[:2] != (h, w):  # a header that lied about the size
                problems.append(f"{rel!r} decodes to {a.shape[1]}x{a.shape[0]} pixels, not the {w}x{h} its header "
                                "gives; re-save it")
                continue
            x[i] = a.reshape(h, w, c)
        if problems:
            raise DataError(problems)
        return {"x_train": x, "y_train": np.asarray(labels, np.int32)}, tuple(entries)
    finally:
        if z is not None:
            z.close()
