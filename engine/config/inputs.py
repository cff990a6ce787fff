"""What a run trains on, by content (uploads and paths, docs/reliability.md).

A path names a file, not its content: a second upload of `model.keras` or an edited
`my_model.py` under the same name would make a stored run, or a reused stored baseline,
refer to a model it never trained. So:

- `keep_upload(filename, data)`: an uploaded file is stored under a name derived from its
  content (`<stem>-<sha256 prefix><suffix>` in $SPEEDLAB_HOME/models/uploads): two
  different files of one name stay two; the same file uploaded twice is one.
- `of(cfg)`: the content identity of a config's own inputs: {'model_sha256'} for a
  user's model file, {'data_sha256'} for a registered data set (empty for built-ins).
  The worker records it in the run's plan ('inputs'); a stored baseline is reused only
  when its recorded identity equals the current one (engine.jobs.runner.find_baseline).

No TF here.
"""
from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Optional

HASH_CHARS = 16  # the sha256 prefix in an upload's name: 64 bits, no collision in practice
UPLOAD_SUFFIXES = (".keras",)


def sha256_file(path: os.PathLike) -> Optional[str]:
    """The sha256 (hex) of the file at `path`, or None when it cannot be read."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
    except OSError:
        return None
    return h.hexdigest()


def upload_dir() -> Path:
    """$SPEEDLAB_HOME/models/uploads: kept model uploads, named by content."""
    from engine.store import home

    return Path(home()) / "models" / "uploads"


def keep_upload(filename: str, data: bytes) -> Path:
    """Keep an uploaded model file (`filename` as the user's browser named it, `data` its
    bytes) as `<stem>-<sha256[:16]><suffix>` in `upload_dir()`, written to a temporary
    file and renamed (whole or not at all); returns its path. A file of that content kept
    before is reused as it is. Raises: ConfigError for a suffix other than .keras (Python
    files are never uploaded); OSError (e.g. a full disk)."""
    from engine.base.errors import ConfigError

    suffix = Path(filename).suffix.lower()
    if suffix not in UPLOAD_SUFFIXES:
        raise ConfigError("upload", filename, "is not a .keras file", "upload a model saved with model.save('x.keras')")
    digest = hashlib.sha256(data).hexdigest()
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", Path(filename).stem).strip("._-")[:64] or "model"
    folder = upload_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}-{digest[:HASH_CHARS]}{suffix}"
    if sha256_file(path) == digest:
        return path
    tmp = path.with_name(f".{path.name}.{os.getpid()}.part")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return path


def of(cfg) -> dict:
    """The content identity of `cfg`'s own inputs (a RunConfig or its dict): 'model_sha256'
    for a user's model file (None when it cannot be read), 'data_sha256' for a registered
    data set (None for one registered before data sets were hashed); {} for built-ins."""
    from engine.config.run_config import user_model
    from engine.data.meta import USER_PREFIX

    c = cfg if isinstance(cfg, dict) else cfg.to_dict()
    out = {}
    spec = user_model(c.get("model"))
    if spec:
        out["model_sha256"] = sha256_file(os.path.expanduser(spec[0]))
    dataset = c.get("dataset") or ""
    if isinstance(dataset, str) and dataset.startswith(USER_PREFIX):
        from engine.data import userdata

        meta = userdata.registered_meta(dataset[len(USER_PREFIX):]) or {}
        out["data_sha256"] = meta.get("sha256")
    return out
