"""The Keras cache: Keras's own data sets (MNIST, Fashion-MNIST, CIFAR-10) and
the ImageNet weights of keras.applications backbones.

No TensorFlow here: the config check and the dashboard need to know whether a
data set or weights file is cached (or downloadable), and what a data set
holds, before any TF work.

Where the files live is what ``keras.datasets.<name>.load_data()`` uses
(keras/src/datasets/*.py, Keras 3.15): ``$KERAS_HOME/datasets`` (default
``~/.keras/datasets``; ``/tmp/.keras`` when the home folder is not writable):

- mnist: ``mnist.npz`` with uint8 ``x_train`` (60000, 28, 28), ``y_train`` (60000,),
  ``x_test`` (10000, 28, 28), ``y_test`` (10000,).
- fashion_mnist: ``fashion-mnist/{train,t10k}-{labels-idx1,images-idx3}-ubyte.gz``,
  gzipped IDX files (big-endian header: magic, count[, rows, cols], then uint8 data).
- cifar10: pickled batches ``data_batch_1`` .. ``data_batch_5`` and ``test_batch``
  (dicts with ``b"data"`` uint8 (N, 3072) in CHW order and ``b"labels"``), either
  extracted (``cifar-10-batches-py-target/cifar-10-batches-py/``, where Keras 3
  extracts them, or the Keras 2 folder ``cifar-10-batches-py/``) or still in the
  tar.gz (Keras 3's download ``cifar-10-batches-py-target_archive`` or the original
  ``cifar-10-python.tar.gz``).

Files are read as they are; Keras checks a hash only when it downloads them.
"""
from __future__ import annotations

import gzip
import io
import os
import pickle
import socket
import struct
import tarfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

_GOOGLE = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"
_FASHION = ("train-labels-idx1-ubyte.gz", "train-images-idx3-ubyte.gz",
            "t10k-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz")
_CIFAR_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)


@dataclass(frozen=True)
class KerasSpec:
    """A Keras data set as published: image shape (H, W, C), classes, and the
    per-class sample counts of its train and test splits."""

    name: str
    shape: tuple
    classes: int
    train_counts: tuple
    test_counts: tuple
    host: str           # where Keras downloads it from (probed for "online?")
    origin: str         # the URL(s), for the "where to place the files" message
    place: str          # what to place, relative to the Keras datasets folder
    description: str


# Class counts: MNIST from the published file (LeCun et al.); Fashion-MNIST and
# CIFAR-10 are balanced (6,000 / 1,000 and 5,000 / 1,000 per class).
SPECS = {
    "mnist": KerasSpec(
        "mnist", (28, 28, 1), 10,
        (5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949),
        (980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009),
        "storage.googleapis.com", _GOOGLE + "mnist.npz", "mnist.npz",
        "MNIST handwritten digits (60,000 + 10,000 28x28 grayscale images)"),
    "fashion_mnist": KerasSpec(
        "fashion_mnist", (28, 28, 1), 10, (6000,) * 10, (1000,) * 10,
        "storage.googleapis.com", _GOOGLE, "fashion-mnist/ (" + ", ".join(_FASHION) + ")",
        "Fashion-MNIST clothing (60,000 + 10,000 28x28 grayscale images)"),
    "cifar10": KerasSpec(
        "cifar10", (32, 32, 3), 10, (5000,) * 10, (1000,) * 10,
        "www.cs.toronto.edu", "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
        "cifar-10-python.tar.gz",
        "CIFAR-10 objects (50,000 + 10,000 32x32 colour images)"),
}


def keras_home() -> Path:
    """Keras's cache root, as keras.src.backend.config computes it."""
    if "KERAS_HOME" in os.environ:
        return Path(os.path.expanduser(os.environ["KERAS_HOME"]))
    base = os.path.expanduser("~")
    if not os.access(base, os.W_OK):
        base = "/tmp"
    return Path(base) / ".keras"


def cache_dirs(sub: str = "datasets") -> list[Path]:
    """Folders where Keras may have cached files: $KERAS_HOME/<sub>, and
    /tmp/.keras/<sub> (Keras's fallback when the first is not writable)."""
    dirs = [keras_home() / sub, Path("/tmp/.keras") / sub]
    return list(dict.fromkeys(dirs))


@dataclass(frozen=True)
class Cached:
    """Where a cached Keras data set was found: `kind` is 'npz', 'idx',
    'cifar_dir' or 'cifar_tar'; `path` the file or folder."""

    name: str
    kind: str
    path: Path

    def signature(self) -> tuple:
        """(path, mtime_ns, size) of every file: changes when the cache does."""
        files = [self.path / f for f in _FASHION] if self.kind == "idx" else \
            [self.path / b for b in _CIFAR_BATCHES] if self.kind == "cifar_dir" else [self.path]
        return tuple((str(f), f.stat().st_mtime_ns, f.stat().st_size) for f in files)


def find_cached(name: str) -> Optional[Cached]:
    """The cached copy of Keras data set `name`, or None (no file is opened)."""
    for d in cache_dirs():
        if name == "mnist" and (d / "mnist.npz").is_file():
            return Cached(name, "npz", d / "mnist.npz")
        if name == "fashion_mnist" and all((d / "fashion-mnist" / f).is_file() for f in _FASHION):
            return Cached(name, "idx", d / "fashion-mnist")
        if name == "cifar10":
            for sub in ("cifar-10-batches-py-target/cifar-10-batches-py", "cifar-10-batches-py"):
                if all((d / sub / b).is_file() for b in _CIFAR_BATCHES):
                    return Cached(name, "cifar_dir", d / sub)
            for arc in ("cifar-10-batches-py-target_archive", "cifar-10-python.tar.gz"):
                if (d / arc).is_file():
                    return Cached(name, "cifar_tar", d / arc)
    return None


def where_to_place(name: str) -> str:
    """One phrase telling the user which file(s) to put where."""
    spec = SPECS[name]
    return f"place {spec.place} (from {spec.origin}) in {cache_dirs()[0]}/"


# --- is the machine online? -------------------------------------------------
_ONLINE: dict = {}
ONLINE_TTL_S = 60.0


def online(host: str, port: int = 443, timeout_s: float = 2.0) -> bool:
    """Whether a TCP connection to `host` succeeds within `timeout_s` (name lookup
    included: the probe runs in a thread that is not waited for longer).
    Cached per process for ONLINE_TTL_S. SPEEDLAB_OFFLINE=1 forces False."""
    if os.environ.get("SPEEDLAB_OFFLINE", "") not in ("", "0"):
        return False
    hit = _ONLINE.get((host, port))
    if hit and time.monotonic() - hit[1] < ONLINE_TTL_S:
        return hit[0]
    result: list = []

    def probe():
        try:
            socket.create_connection((host, port), timeout=timeout_s).close()
            result.append(True)
        except OSError:
            result.append(False)

    t = threading.Thread(target=probe, daemon=True, name="speedlab-online-probe")
    t.start()
    t.join(timeout_s)
    ok = bool(result and result[0])
    _ONLINE[(host, port)] = (ok, time.monotonic())
    return ok


# --- readers ----------------------------------------------------------------
def _npy_header(fp) -> tuple[tuple, np.dtype]:
    """(shape, dtype) from the header of a .npy stream, reading only the header."""
    version = np.lib.format.read_magic(fp)
    if version == (1, 0):
        shape, _, dtype = np.lib.format.read_array_header_1_0(fp)
    else:
        shape, _, dtype = np.lib.format.read_array_header_2_0(fp)
    return tuple(shape), dtype


def npz_headers(path: os.PathLike) -> dict[str, tuple[tuple, np.dtype]]:
    """{array name: (shape, dtype)} of an .npz file from the member headers only
    (a compressed member is decompressed just far enough to read its header)."""
    out = {}
    with zipfile.ZipFile(path) as z:
        for member in z.namelist():
            if member.endswith(".npy"):
                with z.open(member) as fp:
                    out[member[:-4]] = _npy_header(fp)
    return out


def npz_shapes(path: os.PathLike) -> dict[str, tuple]:
    """{array name: shape} of an .npz file from the member headers only."""
    return {k: shape for k, (shape, _) in npz_headers(path).items()}


def _idx(data: bytes, what: str) -> np.ndarray:
    """Decode an IDX file (uint8 data): labels (N,) or images (N, rows, cols)."""
    if len(data) < 8:
        raise ValueError(f"{what} is too short for an IDX file")
    magic, n = struct.unpack(">II", data[:8])
    if magic == 0x801:
        y = np.frombuffer(data, np.uint8, count=n, offset=8)
        return y
    if magic == 0x803:
        rows, cols = struct.unpack(">II", data[8:16])
        return np.frombuffer(data, np.uint8, count=n * rows * cols, offset=16).reshape(n, rows, cols)
    raise ValueError(f"{what} is not an IDX file (magic {magic:#x})")


def _idx_header(path: Path) -> tuple:
    """(count, rows, cols) of a gzipped IDX image file, from its 16-byte header."""
    with gzip.open(path, "rb") as f:
        magic, n, rows, cols = struct.unpack(">IIII", f.read(16))
    if magic != 0x803:
        raise ValueError(f"{path.name} is not an IDX image file (magic {magic:#x})")
    return n, rows, cols


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickles CIFAR batches but refuses anything other than numpy arrays
    (a tampered pickle cannot run code), like Keras's RestrictedUnpickler."""

    ALLOWED = {("numpy", "ndarray"), ("numpy", "dtype"),
               ("numpy.core.multiarray", "_reconstruct"), ("numpy._core.multiarray", "_reconstruct"),
               ("numpy.core.numeric", "_frombuffer"), ("numpy._core.numeric", "_frombuffer"),
               ("_codecs", "encode")}  # how Python 3 writes bytes in protocol 2; pure

    def find_class(self, module, name):
        if (module, name) in self.ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"refusing {module}.{name} in a CIFAR batch")


def _cifar_batch(raw: bytes) -> tuple[np.ndarray, np.ndarray]:
    """(x uint8 (N, 32, 32, 3), y (N,)) from one pickled CIFAR-10 batch."""
    d = _NumpyOnlyUnpickler(io.BytesIO(raw), encoding="bytes").load()
    d = {(k.decode() if isinstance(k, bytes) else k): v for k, v in d.items()}
    x = np.asarray(d["data"], dtype=np.uint8).reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1)
    y = np.asarray(d["labels"], dtype=np.int64)
    return x, y


def _cifar_raw(c: Cached) -> dict[str, bytes]:
    if c.kind == "cifar_dir":
        return {b: (c.path / b).read_bytes() for b in _CIFAR_BATCHES}
    out = {}
    with tarfile.open(c.path, "r:*") as tar:
        for m in tar.getmembers():
            base = m.name.rsplit("/", 1)[-1]
            if m.isfile() and base in _CIFAR_BATCHES:
                out[base] = tar.extractfile(m).read()
    missing = [b for b in _CIFAR_BATCHES if b not in out]
    if missing:
        raise ValueError(f"{c.path} lacks {', '.join(missing)}")
    return out


def read_arrays(c: Cached) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(x_train, y_train, x_test, y_test) of a cached data set: x uint8
    (N, H, W, C) with values 0..255, y int32 (N,)."""
    if c.kind == "npz":
        with np.load(c.path, allow_pickle=False) as f:
            xt, yt, xv, yv = f["x_train"], f["y_train"], f["x_test"], f["y_test"]
    elif c.kind == "idx":
        raw = [gzip.open(c.path / f, "rb").read() for f in _FASHION]
        yt, xt, yv, xv = (_idx(r, f) for r, f in zip(raw, _FASHION))
    else:
        raw = _cifar_raw(c)
        parts = [_cifar_batch(raw[b]) for b in _CIFAR_BATCHES[:5]]
        xt = np.concatenate([p[0] for p in parts])
        yt = np.concatenate([p[1] for p in parts])
        xv, yv = _cifar_batch(raw["test_batch"])
    if xt.ndim == 3:
        xt, xv = xt[..., None], xv[..., None]
    return (np.ascontiguousarray(xt, dtype=np.uint8), np.asarray(yt, np.int32).reshape(-1),
            np.ascontiguousarray(xv, dtype=np.uint8), np.asarray(yv, np.int32).reshape(-1))


@dataclass(frozen=True)
class CachedMeta:
    """What a cached file holds: image shape (H, W, C), per-class counts."""

    shape: tuple
    train_counts: tuple
    test_counts: tuple


_META: dict = {}


def read_meta(c: Cached, classes: int = 10) -> CachedMeta:
    """Shape and per-class counts of a cached data set, reading labels and
    headers only where the format allows (MNIST, Fashion-MNIST); CIFAR batches
    are unpickled. Cached per process by the files' (path, mtime, size)."""
    key = c.signature()
    if key in _META:
        return _META[key]
    if c.kind == "npz":
        shapes = npz_shapes(c.path)
        with np.load(c.path, allow_pickle=False) as f:
            yt, yv = f["y_train"].reshape(-1), f["y_test"].reshape(-1)
        shape = tuple(shapes["x_train"][1:]) + ((1,) if len(shapes["x_train"]) == 3 else ())
    elif c.kind == "idx":
        yt = _idx(gzip.open(c.path / _FASHION[0], "rb").read(), _FASHION[0])
        yv = _idx(gzip.open(c.path / _FASHION[2], "rb").read(), _FASHION[2])
        _, rows, cols = _idx_header(c.path / _FASHION[1])
        shape = (rows, cols, 1)
    else:
        xt, yt, xv, yv = read_arrays(c)
        shape = tuple(xt.shape[1:])
    counts = lambda y: tuple(int(v) for v in np.bincount(np.asarray(y, np.int64), minlength=classes))  # noqa: E731
    meta = CachedMeta(tuple(int(s) for s in shape), counts(yt), counts(yv))
    _META[key] = meta
    return meta


def download(name: str) -> None:
    """Download `name` into the Keras cache with keras.datasets (imports TF;
    call it in a worker only). Raises whatever Keras raises."""
    import keras

    {"mnist": keras.datasets.mnist, "fashion_mnist": keras.datasets.fashion_mnist,
     "cifar10": keras.datasets.cifar10}[name].load_data()


# --- keras.applications ImageNet weights (no top), as keras/src/applications names them ---
_APPS = "https://storage.googleapis.com/tensorflow/keras-applications/"


def weights_file(model: str, size: int) -> tuple[str, str]:
    """(file name, URL) of the no-top ImageNet weights of backbone `model` at input
    `size`. MobileNetV2 has weights for 96, 128, 160, 192 and 224 pixels (224 for
    other sizes); ResNet50 and EfficientNetB0 have one file for every size."""
    if model == "mobilenetv2":
        rows = size if size in (96, 128, 160, 192, 224) else 224
        f = f"mobilenet_v2_weights_tf_dim_ordering_tf_kernels_1.0_{rows}_no_top.h5"
        return f, _APPS + "mobilenet_v2/" + f
    if model == "resnet50":
        f = "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5"
        return f, _APPS + "resnet/" + f
    if model == "efficientnetb0":
        return "efficientnetb0_notop.h5", "https://storage.googleapis.com/keras-applications/efficientnetb0_notop.h5"
    raise KeyError(model)


def find_weights(model: str, size: int) -> Optional[Path]:
    """The cached weights file of `model` at `size`, or None."""
    name, _ = weights_file(model, size)
    for d in cache_dirs("models"):
        if (d / name).is_file():
            return d / name
    return None


_VERIFIED: dict = {}


def verify_weights(path: Path) -> Optional[str]:
    """Why the HDF5 weights file at `path` cannot be used (one short phrase), or None.

    Opens it with h5py (a truncated file fails here: its superblock records the
    full length) and reads every dataset, so damage anywhere is found. Cached
    per (path, mtime, size): the dashboard re-checks its config on every change."""
    st = path.stat()
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key in _VERIFIED:
        return _VERIFIED[key]
    try:
        import h5py
    except ImportError:  # pragma: no cover - h5py comes with Keras
        return None
    problem = None
    try:
        with h5py.File(path, "r") as f:
            read = [0]

            def read_one(_name, obj):
                if isinstance(obj, h5py.Dataset):
                    obj[()]  # every chunk is read (and dropped): damage anywhere raises
                    read[0] += 1

            f.visititems(read_one)
            if not read[0]:
                problem = "it holds no weights"
    except Exception as e:  # noqa: BLE001 - h5py raises OSError, KeyError, ... for damaged files
        problem = (str(e).splitlines() or [type(e).__name__])[0][:160] or type(e).__name__
    _VERIFIED[key] = problem
    return problem


def check_weights(model: str, size: int) -> None:
    """Raise ConfigError (field pretrained) when the ImageNet weights of `model`
    are cached but damaged (e.g. a truncated download: the file is named with
    "delete it so that it is downloaded again"), or neither cached nor
    downloadable (offline)."""
    from engine.base.errors import ConfigError

    path = find_weights(model, size)
    if path is not None:
        problem = verify_weights(path)
        if problem:
            raise ConfigError("pretrained", True, f"needs the ImageNet weights file {path}, which is damaged "
                              f"({problem})", "delete it so that it is downloaded again")
        return
    if online("storage.googleapis.com"):
        return
    name, url = weights_file(model, size)
    raise ConfigError("pretrained", True, f"needs the ImageNet weights of {model} ({name}), which are "
                      "not in the Keras cache, and this machine is offline",
                      f"place {name} (from {url}) in {cache_dirs('models')[0]}/, or turn pretrained off")
