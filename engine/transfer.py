"""Transfer learning: start a run from a saved run's weights (TF only inside functions).

A run with ``init_from=RUN_ID`` rebuilds the source run's architecture (same
model, input shape and class count) under this run's dtype policy, loads the
weights of the source's saved ``model.keras``, keeps every layer up to the
classifier head (the *taken-over part*) and puts a new float32 head for this
run's class count on top. Training then runs in up to two phases:

1. ``freeze_epochs`` epochs with the taken-over part frozen: only the new head
   learns, at the configured learning rate;
2. the remaining epochs with the taken-over part unfrozen and the learning
   rate multiplied by ``finetune_lr_factor`` (0.1: 10x lower), so that large
   updates from the still-random head do not wreck the features.

BatchNormalization layers in the taken-over part stay frozen in both phases:
in Keras a non-trainable BatchNormalization runs in inference mode, so its
moving mean and variance are those of the source run (as the Keras
transfer-learning guide advises; see also "frozen BN" in detection models).
A ``pretrained`` keras.applications backbone is treated the same way, with the
backbone as the taken-over part.

The checks a config needs (the source run exists, completed, saved its model,
and has this run's model and input shape) read the store only: no TF.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from engine.config import ConfigError, RunConfig
from engine.store import Store


class TransferError(RuntimeError):
    """The source run's saved model cannot be used (one-line message)."""


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
        from engine.datasets_meta import dataset_info

        src = RunConfig.from_dict(run["config"])
        return tuple(dataset_info(src.dataset, src).shape)
    except (ConfigError, TypeError, KeyError):
        return None


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
        if saved_model_path(store, run) is None:
            raise ConfigError("init_from", rid, "did not save its model",
                              "run it again with save_model on (--save-model), or pick another run")
        src = run["config"]
        if src.get("model") != cfg.model:
            raise ConfigError("model", cfg.model, f"differs from run {rid}'s model {src.get('model')!r}, "
                              "whose architecture and weights init_from takes over",
                              f"set model to {src.get('model')}")
        if cfg.backbone and (src.get("image_size") or 0) != cfg.image_size:
            raise ConfigError("image_size", cfg.image_size, f"differs from run {rid}'s image_size "
                              f"{src.get('image_size') or 0}", f"set image_size to {src.get('image_size') or 0}")
        from engine.datasets_meta import dataset_info

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


@dataclass(frozen=True)
class Phase:
    """Epochs [first_epoch, end_epoch) trained with the taken-over part frozen
    or not, at `lr_factor` x the configured learning rate."""

    first_epoch: int
    end_epoch: int
    frozen: bool
    lr_factor: float


def phases(cfg: RunConfig, has_taken_part: bool) -> list[Phase]:
    """The training phases of `cfg` (one phase without a taken-over part)."""
    e, k, f = cfg.epochs, cfg.freeze_epochs, cfg.finetune_lr_factor
    if not has_taken_part:
        return [Phase(0, e, False, 1.0)]
    if k == 0:
        return [Phase(0, e, False, f)]
    if k >= e:
        return [Phase(0, e, True, 1.0)]
    return [Phase(0, k, True, 1.0), Phase(k, e, False, f)]


# --- TF parts ------------------------------------------------------------------
def taken_part(model) -> list:
    """Layers with weights below the classifier head (the part taken over)."""
    from engine.models import HEAD_NAME, PROBS_NAME

    return [layer for layer in model.layers if layer.weights and layer.name not in (HEAD_NAME, PROBS_NAME)]


def set_frozen(layers: list, frozen: bool) -> None:
    """Freeze (or unfreeze) `layers`; their BatchNormalization layers stay frozen
    either way (inference mode: moving statistics kept)."""
    import keras

    for layer in layers:
        layer.trainable = not frozen
        for sub in layer._flatten_layers(include_self=True, recursive=True):
            if isinstance(sub, keras.layers.BatchNormalization):
                sub.trainable = False


def build_from_run(cfg: RunConfig, shape: tuple, classes: int, store: Optional[Store] = None):
    """The model for `cfg`: run `cfg.init_from`'s architecture and weights up to its
    head, and a new head for `classes`. Call under the strategy scope and after
    the dtype policy is set.

    Returns: (model, taken-over layers). Raises: TransferError.
    """
    import keras

    from engine import models

    own = store is None
    store = store or Store()
    try:
        run = store.get_run(cfg.init_from)
        path = saved_model_path(store, run) if run else None
    finally:
        if own:
            store.close()
    if run is None or path is None:
        raise TransferError(f"init_from: run {cfg.init_from} or its saved model no longer exists")
    src, plan = run["config"], run.get("plan") or {}
    src_classes = plan.get("classes") or len(src.get("label_subset") or ()) or None
    if src_classes is None:
        from engine.datasets_meta import dataset_info

        src_classes = dataset_info(src["dataset"], RunConfig.from_dict(src)).classes
    # Rebuild rather than reuse the loaded layers: the new run's dtype policy
    # applies, and the weights are float32 either way.
    base = models.build(src["model"], tuple(shape), int(src_classes), image_size=src.get("image_size") or 0)
    try:
        saved = keras.saving.load_model(path, compile=False)
        base.set_weights(saved.get_weights())
    except Exception as e:  # noqa: BLE001 - any mismatch ends as one line
        raise TransferError(f"init_from: the saved model of run {cfg.init_from} ({path}) does not fit a "
                            f"{src['model']} for {'x'.join(map(str, shape))} images: "
                            f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}") from None
    features = base.get_layer(models.HEAD_NAME).input
    model = keras.Model(base.inputs, models.head(features, classes), name=f"{base.name}_from_run_{cfg.init_from}")
    return model, taken_part(model)


# --- the digits demonstration -------------------------------------------------------
DEMO_FIRST = (0, 1, 2, 3, 4)
DEMO_SECOND = (5, 6, 7, 8, 9)
DEMO_TARGET = 0.95


def demo_configs(epochs: int = 12, pretrain_epochs: int = 12, **overrides) -> dict[str, RunConfig]:
    """Configs of the transfer demonstration on the bundled digits:
    'pretrain' (digits 0-4, model saved), and 'finetune' / 'scratch' (digits 5-9,
    target accuracy 0.95). The finetune config still lacks init_from (the
    pretrain run's id); set it with .replace(init_from=...)."""
    common = {"dataset": "digits", "model": "cnn", "batch_size": 32, "seed": 0, **overrides}
    return {
        "pretrain": RunConfig(label_subset=DEMO_FIRST, epochs=pretrain_epochs, save_model=True, **common),
        "finetune": RunConfig(label_subset=DEMO_SECOND, epochs=epochs, target_accuracy=DEMO_TARGET,
                              freeze_epochs=1, finetune_lr_factor=0.1, **common),
        "scratch": RunConfig(label_subset=DEMO_SECOND, epochs=epochs, target_accuracy=DEMO_TARGET, **common),
    }


def comparison(store: Store, finetune_id: int, scratch_id: int) -> dict:
    """Fine-tuned vs from-scratch run: time to their target validation accuracy
    (s, from the start of training, warm-up included) and the validation
    accuracy curves {'label': ..., 't': [s], 'val_accuracy': [...]} for charts.
    speedup = scratch time / fine-tune time (None unless both reached it)."""
    out = {"finetune_id": finetune_id, "scratch_id": scratch_id, "curves": []}
    for key, rid in (("finetune", finetune_id), ("scratch", scratch_id)):
        run = store.get_run(rid) or {}
        s = run.get("summary") or {}
        epochs = store.metrics("epochs", rid)
        out[f"{key}_time_to_target_sec"] = s.get("time_to_target_sec")
        out[f"{key}_final_val_accuracy"] = s.get("final_val_accuracy")
        out[f"{key}_status"] = run.get("status")
        label = (f"run #{rid}: fine-tuned from run #{run['config'].get('init_from')}" if key == "finetune"
                 else f"run #{rid}: from scratch") if run else f"run #{rid}"
        out["curves"].append({"run_id": rid, "label": label, "t": [e["t"] for e in epochs],
                              "val_accuracy": [e["val_accuracy"] for e in epochs]})
    out["target_accuracy"] = ((store.get_run(finetune_id) or {}).get("config") or {}).get("target_accuracy")
    tf_, ts = out["finetune_time_to_target_sec"], out["scratch_time_to_target_sec"]
    out["speedup"] = (ts / tf_) if tf_ and ts else None
    return out


def demo_pairs(store: Store) -> list[tuple[int, int]]:
    """(fine-tune id, scratch id) of every stored fine-tune run that was queued
    together with a from-scratch run on the same data (the demo queues them
    so), newest first: what the Runs page draws as two curves."""
    runs = store.list_runs()
    pairs = []
    for r in runs:
        c = r["config"]
        if c.get("init_from") is None or not r.get("group_id"):
            continue
        for o in runs:
            oc = o["config"]
            if o["group_id"] == r["group_id"] and o["id"] != r["id"] and oc.get("init_from") is None \
                    and oc.get("dataset") == c.get("dataset") and oc.get("label_subset") == c.get("label_subset"):
                pairs.append((r["id"], o["id"]))
                break
    return pairs


# --- the demonstration as a background job (for the dashboard; no TF) ---------------
DEMO_JOB_FILE = "demo-transfer.json"
DEMO_LOG_FILE = "demo-transfer.log"


def demo_job_path() -> Path:
    """$SPEEDLAB_HOME/demo-transfer.json: the background demo's state (engine.background)."""
    from engine.store import home

    return home() / DEMO_JOB_FILE


def _demo_result(log_path) -> Optional[dict]:
    """The JSON object the demo prints last (--json), read from its log; None if none."""
    import json

    try:
        lines = Path(log_path).read_text(errors="replace").splitlines()
    except (OSError, TypeError):
        return None
    for line in reversed(lines):
        line = line.strip()
        if line.startswith("{"):
            try:
                out = json.loads(line)
                return out if isinstance(out, dict) else None
            except ValueError:
                return None
    return None


def read_demo_progress() -> Optional[dict]:
    """The background transfer demo's state, or None if none was started here.

    Returns: {'state': 'starting' | 'running' | 'done' | 'failed' | 'cancelled',
    'elapsed' (s), 'error' (one line), 'result' (the demo's comparison, once
    done), 'pid', 'log', ...}. 'done' once its process ended and printed its
    result; 'failed' (with the log's last 'error:' line) otherwise.
    """
    import time

    from engine import background

    path = demo_job_path()
    job = background.read_json(path)
    if not job:
        return None
    if job.get("state") in background.ACTIVE_STATES and job.get("pid") and not background.alive(job):
        result = _demo_result(job.get("log"))
        done = result is not None and result.get("finetune_status") == "completed" \
            and result.get("scratch_status") == "completed"
        error = None if done else (
            f"the transfer demo ended without a result: {background.last_error(job.get('log')) or 'no message'}"
            if result is None else
            f"the transfer demo's runs ended {result.get('finetune_status')} (fine-tuned run "
            f"#{result.get('finetune_id')}) and {result.get('scratch_status')} (from scratch, run "
            f"#{result.get('scratch_id')})")
        if result:  # the job file keeps the figures, not the curves (those are in the store)
            result = {k: v for k, v in result.items() if k != "curves"}
        job.update(state="done" if done else "failed", finished=time.time(), result=result, error=error)
        background.write_json(path, job)
    return background.check(job, "transfer demo")


def demo_busy() -> Optional[str]:
    """One line while the background transfer demo runs (it queues three runs
    one after another, with a short gap after pretraining), else None."""
    from engine import background

    job = read_demo_progress()
    if job and job.get("state") in background.ACTIVE_STATES:
        return (f"the transfer demo is running ({job.get('elapsed', 0):.0f} s so far, about a minute in all): "
                "wait for it to end or stop it on the Runs page")
    return None


def start_demo_background(args: tuple = ()) -> int:
    """Start ``python -m engine demo-transfer --json --quiet [args]`` detached
    (its own session: it outlives the dashboard's script run); follow it with
    `read_demo_progress`. Returns its pid.

    Raises: TransferError (one line) while the demo already runs, a training
    run is queued or running, or a benchmark or LR range test is running.
    """
    import time

    from engine import background
    from engine.store import home

    why = demo_busy() or background.busy()
    if why:
        raise TransferError(f"not started: {why}")
    h = home()
    h.mkdir(parents=True, exist_ok=True)
    log, path = h / DEMO_LOG_FILE, demo_job_path()
    log.write_bytes(b"")
    job = {"state": "starting", "pid": None, "pid_started": None, "started": time.time(), "log": str(log),
           "args": list(args), "error": None}
    background.write_json(path, job)
    pid, pid_started = background.spawn(["demo-transfer", "--json", "--quiet", *map(str, args)], log)
    background.write_json(path, {**job, "state": "running", "pid": pid, "pid_started": pid_started})
    return pid


def cancel_demo_background() -> bool:
    """Stop the background transfer demo and cancel its queued or running runs.
    Returns whether it was running."""
    import time

    from engine import background, runner

    path = demo_job_path()
    job = background.read_json(path)
    if not job or job.get("state") not in background.ACTIVE_STATES:
        return False
    background.stop(job)
    runner.cancel_active()
    background.write_json(path, {**job, "state": "cancelled", "error": "stopped by the user",
                                 "finished": time.time()})
    return True
