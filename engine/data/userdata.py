"""User data: loading, caching and registering a user's own images (no TF). What a user's
data may hold, and how it is checked and read, is engine.data.userdata_read.

A registered data set ("user:NAME") is stored converted under
``$SPEEDLAB_HOME/datasets/NAME/`` (``data.npz`` + ``meta.json``); registering
writes to a temporary folder and renames it into place, so a bad or
interrupted upload never leaves a half-registered data set behind.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from engine.data.limits import MAX_SIDE, MIN_CLASS_SAMPLES, fmt_bytes, max_decoded_bytes, no_split
from engine.data.userdata_read import (IMAGE_EXTS, MAX_OTHER_FILES, OTHER_FILES_RATIO, SYSTEM_DIRS, DataError,
                                     fmt_shape, normalise, read_images, read_npz)

# A registered data set's name (its folder under $SPEEDLAB_HOME/datasets).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def limits_line(upload_mb: Optional[float] = None) -> str:
    """One line stating the user data limits (for the upload box: `upload_mb` is
    the server's upload limit in MB) and where bigger sets go."""
    up = f"Uploads up to {upload_mb:g} MB. " if upload_mb else ""
    return (f"{up}Images 2 to {MAX_SIDE} pixels a side, at most {fmt_bytes(max_decoded_bytes())} decoded "
            "(SPEEDLAB_MAX_DECODED_MB). Bigger sets: `python -m engine data add NAME PATH` or "
            "`--dataset PATH` on the command line.")


# --- loading with a per-process cache ----------------------------------------
@dataclass
class UserData:
    """Checked arrays (see `normalise`), the class names, and where they came from."""

    arrays: dict
    class_names: tuple
    source: str


_CACHE: dict = {}
_CACHE_KEEP = 2  # whole data sets are cached: keep only the last few


def _signature(path: Path) -> tuple:
    if path.is_dir():
        n, newest, size, images, others = 0, 0, 0, 0, 0
        for dirpath, _, files in os.walk(path):  # the first walk of a folder (read_images walks it next)
            k = sum(f.lower().endswith(IMAGE_EXTS) for f in files)
            images, others = images + k, others + len(files) - k
            if others > MAX_OTHER_FILES and others > OTHER_FILES_RATIO * images:
                # Not a data folder: stop before walking (and reading) all of it.
                raise DataError([f"{path} holds more than {MAX_OTHER_FILES:,} files that are not images "
                                 f"({', '.join(IMAGE_EXTS)}) and few images, e.g. "
                                 f"{os.path.relpath(os.path.join(dirpath, files[0]), path)!r}; give a folder "
                                 "with one sub-folder of images per class"])
            for f in files:
                try:
                    st = os.stat(os.path.join(dirpath, f))
                except OSError:  # a broken link, or a file gone since listed: read_images reports it
                    continue
                n, newest, size = n + 1, max(newest, st.st_mtime_ns), size + st.st_size
        return (str(path), "dir", n, newest, size)
    st = path.stat()
    return (str(path), "file", st.st_mtime_ns, st.st_size)


def load_path(path: os.PathLike) -> UserData:
    """Read and check a user data path (.npz, folder or .zip). Cached per
    process by path, modification time and size. Raises DataError."""
    given = Path(path).expanduser()
    path = given.resolve()
    if not path.exists():
        raise DataError([f"{path} does not exist; check the path"])
    if not (path.is_dir() or path.suffix.lower() in (".npz", ".zip")):
        raise DataError([f"{path.name} is not a .npz file, a .zip or a folder; give one of those"])
    if len(path.parts) > 1 and path.parts[1] in SYSTEM_DIRS:  # kernel views: files vanish, links lead to /
        raise DataError([f"{given} is inside /{path.parts[1]}, a system folder, not user data; give a .npz file, "
                         "or a folder or .zip with one sub-folder of images per class"])
    try:
        key = _signature(path)
        if key in _CACHE:
            return _CACHE[key]
        folder = not (path.suffix.lower() == ".npz" and path.is_file())
        if not folder:
            arrays = normalise(read_npz(path))
            classes = int(arrays["y_train"].max()) + 1
            names = tuple(str(i) for i in range(classes))
        else:
            arrays, names = read_images(path)
            arrays = normalise(arrays)
    except OSError as e:  # whatever the readers did not foresee: still one line naming the file
        raise DataError([f"{e.filename or path} cannot be read ({e.strerror or type(e).__name__}); "
                         "check that it exists and is readable, or give another path"]) from None
    unsplittable = _no_split(path, arrays, folder)
    if unsplittable:
        raise DataError([unsplittable])
    data = UserData(arrays, names, str(path))
    _CACHE[key] = data
    while len(_CACHE) > _CACHE_KEEP:
        _CACHE.pop(next(iter(_CACHE)))
    return data


def _no_split(path: Path, arrays: dict, folder: bool) -> Optional[str]:
    """The fault of a data set that no validation_fraction can split
    (engine.data.limits.no_split): 1 sample in every class of x_train. A test split
    does not help: validation always comes off the training samples."""
    n = MIN_CLASS_SAMPLES
    if folder:
        line = no_split(np.bincount(arrays["y_train"]), "image", "class folders")
        return line and f"{path.name} {line}; add images so that some class folder has at least {n}"
    line = no_split(np.bincount(arrays["y_train"]))
    return line and f"{path.name} {line}; add samples so that some class has at least {n}"


def _meta(name: str, data: UserData) -> dict:
    a = data.arrays
    classes = len(data.class_names)
    counts = lambda y: [int(v) for v in np.bincount(y, minlength=classes)]  # noqa: E731
    return {
        "name": name, "shape": list(a["x_train"].shape[1:]), "classes": classes,
        "samples": int(len(a["y_train"])), "test_samples": int(len(a.get("y_test", ()))),
        "class_counts": counts(a["y_train"]),
        "test_class_counts": counts(a["y_test"]) if "y_test" in a else [],
        "class_names": list(data.class_names), "x_dtype": str(a["x_train"].dtype),
        "source": data.source, "created": time.time(), "sha256": arrays_sha256(a),
    }


def arrays_sha256(arrays: dict) -> str:
    """One sha256 of a data set's arrays (names, dtypes, shapes and bytes, in name order):
    its content identity (engine.config.inputs), the same however it was uploaded."""
    import hashlib

    h = hashlib.sha256()
    for k in sorted(arrays):
        v = np.ascontiguousarray(arrays[k])
        h.update(f"{k}|{v.dtype.str}|{v.shape}|".encode())
        h.update(v.tobytes())
    return h.hexdigest()


def info_from_meta(meta: dict):
    """A DatasetInfo from a meta dict (as stored in meta.json)."""
    from engine.data.info import DatasetInfo

    shape = tuple(meta["shape"])
    desc = (f"{meta['name']}: {meta['samples']:,} {fmt_shape(shape)} images, {meta['classes']} classes"
            + (f", {meta['test_samples']:,} test images" if meta["test_samples"] else ""))
    return DatasetInfo(meta["name"], shape, meta["classes"], meta["samples"], desc,
                       test_samples=meta["test_samples"], class_counts=tuple(meta["class_counts"]),
                       test_class_counts=tuple(meta["test_class_counts"]),
                       class_names=tuple(meta["class_names"]), source=meta["source"])


def path_info(path: os.PathLike):
    """DatasetInfo of a user data path (reads and checks it; cached). Raises DataError."""
    data = load_path(path)
    return info_from_meta(_meta(data.source, data))


# --- the registry ------------------------------------------------------------
def registry_dir() -> Path:
    """$SPEEDLAB_HOME/datasets: one folder per registered data set."""
    from engine.store import home

    return home() / "datasets"


def registered() -> list[str]:
    """Names of the registered data sets, sorted."""
    d = registry_dir()
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if not p.name.startswith(".") and (p / "meta.json").is_file())


_META_CACHE: dict = {}


def registered_meta(name: str) -> Optional[dict]:
    """meta.json of registered data set `name`, or None if there is none."""
    f = registry_dir() / name / "meta.json"
    try:
        key = (str(f), f.stat().st_mtime_ns)
    except OSError:
        return None
    if key not in _META_CACHE:
        _META_CACHE[key] = json.loads(f.read_text())
    return _META_CACHE[key]


def load_registered(name: str) -> dict:
    """The arrays of registered data set `name` (see `normalise`)."""
    with np.load(registry_dir() / name / "data.npz", allow_pickle=False) as f:
        return {k: f[k] for k in f.files}


def check_name(name: str) -> None:
    """Raises DataError unless `name` is usable as a data set name."""
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise DataError([f"{name!r} is not a usable data set name; use 1-64 letters, digits, '_', '-' "
                         "or '.', starting with a letter or digit"])


def register(name: str, source: os.PathLike, overwrite: bool = False, source_label: Optional[str] = None,
             file_sha256: Optional[str] = None):
    """Check `source` (.npz, folder or .zip) and store it as data set "user:NAME".

    Everything is checked before anything is written; the data set is written
    to a temporary folder and renamed into place, so it appears whole or not at all.
    `source_label` is recorded as where the data came from (default: the path);
    `file_sha256`, an uploaded file's hash (`register_upload`), in meta.json.
    Returns: its DatasetInfo. Raises: DataError.
    """
    check_name(name)
    root = registry_dir()
    final = root / name
    if final.exists() and not overwrite:
        raise DataError([f"a data set named {name!r} is already registered; pick another name "
                         "or replace it"])
    data = load_path(source)  # raises DataError before anything is written
    meta = _meta(name, data)
    if source_label:
        meta["source"] = source_label
    if file_sha256:
        meta["file_sha256"] = file_sha256
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".tmp-{name}-{uuid.uuid4().hex[:8]}"
    old = None
    try:
        tmp.mkdir()
        np.savez(tmp / "data.npz", **data.arrays)  # uncompressed: fast to load
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1))
        if final.exists():
            old = root / f".old-{name}-{uuid.uuid4().hex[:8]}"
            os.rename(final, old)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if old is not None and not final.exists():
            os.rename(old, final)  # put the previous version back
            old = None
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)
    return info_from_meta(meta)


UPLOAD_HASH_CHARS = 12  # the sha256 prefix in an upload's data set name (48 bits: two files never meet)


def upload_name(name: str, content: bytes) -> str:
    """The data set name an upload is kept under: `name` (cut to fit 64 characters) plus '-' and
    the first UPLOAD_HASH_CHARS hex digits of the file's sha256 ('stripes-1a2b3c4d5e6f'), so
    that two different files uploaded under one name stay two, and the same file is one.
    Raises: DataError for an unusable `name`."""
    import hashlib

    check_name(name)
    return f"{name[:63 - UPLOAD_HASH_CHARS]}-{hashlib.sha256(content).hexdigest()[:UPLOAD_HASH_CHARS]}"


def register_upload(name: str, filename: str, content: bytes):
    """Register an uploaded file (the bytes of a .npz, or of a .zip of class folders, e.g. from
    st.file_uploader) as "user:<upload_name(name, content)>": named by its content, as model
    uploads are (engine.config.inputs.keep_upload), so an upload never replaces another and a
    run's data set names the very file it trained on (the file's sha256 is kept in its
    meta.json as 'file_sha256'). The same file again is the data set registered before.
    Nothing is left behind when it is rejected. Returns its DatasetInfo (`.name` is the
    registered name). Raises DataError."""
    import hashlib

    final = upload_name(name, content)
    suffix = Path(filename).suffix.lower()
    if suffix not in (".npz", ".zip"):
        raise DataError([f"{filename!r} is neither a .npz file nor a .zip; upload one of those"])
    sha = hashlib.sha256(content).hexdigest()
    meta = registered_meta(final)
    if meta and meta.get("file_sha256") == sha:  # this very file, uploaded before
        return info_from_meta(meta)
    root = registry_dir()
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / f".upload-{uuid.uuid4().hex[:8]}"
    try:
        tmp.mkdir()
        # Keep the uploaded name (no folders) so that messages name the user's file.
        base = Path(filename).name
        f = tmp / (base if base and not base.startswith(".") else f"upload{suffix}")
        f.write_bytes(content)
        # overwrite: a folder of this name without the file's hash is a half-kept earlier try
        return register(final, f, overwrite=True, source_label=f"upload {filename}", file_sha256=sha)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def remove(name: str) -> bool:
    """Delete registered data set `name`; True if it existed."""
    check_name(name)
    d = registry_dir() / name
    if not d.exists():
        return False
    shutil.rmtree(d)
    return True
