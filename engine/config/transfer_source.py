"""Transfer-learning source runs as the config check sees them: reads the store only (no TF).

A run with ``init_from=RUN_ID`` needs that run to exist, to have completed, to
have saved its model, and to share this run's model and input shape. The
training side (engine.training.transfer) takes the weights over; this module
only answers whether it can.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from engine.config import RunConfig
from engine.base.errors import ConfigError
from engine.store import Store


def saved_model_path(store: Store, run: dict) -> Optional[Path]:
    """The saved model of `run` if the file exists: summary['model_path'], else
    the run's folder next to the store (runs/<id>/model.keras)."""
    cands = []
    mp = (run.get("summary") or {}).get("model_path")
    if mp:
        cands.append(Path(mp))
    cands.append(store.path.parent / "runs" / str(run["id"]) / "model.keras")
    return next((p for p in cands if p.is_file()), None)


def source_shape(run: dict) -> Optional[tuple]:
    """Input image shape (H, W, C) the source run trained on, from its plan, else
    from its config's data set; None when neither can be read."""
    plan = run.get("plan") or {}
    if plan.get("input_shape"):
        return tuple(plan["input_shape"])
    try:
        from engine.data.meta import dataset_info

        src = RunConfig.from_dict(run["config"])
        return tuple(dataset_info(src.dataset, src).shape)
    except (ConfigError, TypeError, KeyError):
        return None


def keras_archive(path) -> bool:
    """Whether `path` reads as a Keras 3 `.keras` file: a zip holding config.json (read
    without TensorFlow; the weights themselves are only read by the worker)."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as z:
            return "config.json" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def check_source(cfg: RunConfig, store: Optional[Store] = None) -> dict:
    """Check that `cfg.init_from` names a usable source run (reads the store only).

    Returns: the source run. Raises: ConfigError (one line: field, value, fix).
    """
    own = store is None
    store = store or Store()
    try:
        rid = cfg.init_from
        run = store.get_run(rid)
        if run is None:
            raise ConfigError("init_from", rid, "is not a run in this store",
                              "give the id of a completed run that saved its model (python -m engine runs)")
        if run["status"] != "completed":
            raise ConfigError("init_from", rid, f"is {run['status']}, not completed",
                              "give the id of a completed run that saved its model")
        path = saved_model_path(store, run)
        if path is None:
            raise ConfigError("init_from", rid, "did not save its model",
                              "run it again with save_model on (--save-model), or pick another run")
        if not keras_archive(path):  # else the worker fails later, saying it "does not fit"
            raise ConfigError("init_from", rid, f"has a damaged saved model ({path} is not a .keras archive)",
                              "run it again with save_model on (--save-model), or pick another run")
        src = run["config"]
        if src.get("model") != cfg.model:
            raise ConfigError("model", cfg.model, f"differs from run {rid}'s model {src.get('model')!r}, "
                              "whose architecture and weights init_from takes over",
                              f"set model to {src.get('model')}")
        if cfg.backbone and (src.get("image_size") or 0) != cfg.image_size:
            raise ConfigError("image_size", cfg.image_size, f"differs from run {rid}'s image_size "
                              f"{src.get('image_size') or 0}", f"set image_size to {src.get('image_size') or 0}")
        from engine.data.meta import dataset_info

        have = tuple(dataset_info(cfg.dataset, cfg).shape)
        want = source_shape(run)
        if want is None:
            raise ConfigError("init_from", rid, "has no readable input shape", "pick another run")
        if want != have:
            fmt = lambda s: "x".join(map(str, s))  # noqa: E731
            raise ConfigError("init_from", rid, f"was trained on {fmt(want)} images but {cfg.dataset} has "
                              f"{fmt(have)}", "use data of the same image shape, or a run trained on it")
        return run
    finally:
        if own:
            store.close()
