"""The transfer-learning demonstration on the bundled digits (no TF here).

Pretrain a cnn on digits 0-4 and save it, then train on digits 5-9 twice:
fine-tuned from the saved run and from scratch, both to 0.95 validation
accuracy. `demo_configs` builds the three configs; the CLI
(``python -m engine demo-transfer``) queues them; the dashboard starts that
command as a background job and follows it here.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from engine.jobs import background
from engine.config import RunConfig
from engine.base.errors import TransferError
from engine.store import Store


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
    # Only the groups that hold a fine-tuned run (SQL): not every stored run.
    from engine.store import config_field

    # ">= 0" (a run id), not "IS NOT NULL", and "+trashed": SQLite then uses the runs_init_from index.
    runs = store.query_runs("group_id IN (SELECT group_id FROM runs WHERE +trashed IS NULL AND "
                            f"{config_field('init_from')} >= 0)", order="+id DESC")  # by runs_group
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
def demo_job_path() -> Path:
    """$SPEEDLAB_HOME/demo-transfer.json: the background demo's state (background.DEMO)."""
    return background.DEMO.path()


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
    job = read_demo_progress()
    return background.DEMO.busy_line(job) if job and job["state"] in background.ACTIVE_STATES else None


def start_demo_background(args: tuple = ()) -> int:
    """Start ``python -m engine demo-transfer --json --quiet [args]`` detached
    (its own session: it outlives the dashboard's script run); follow it with
    `read_demo_progress`. Returns its pid.

    Raises: TransferError (one line) while the demo already runs, a training
    run is queued or running, or a benchmark or LR range test is running.
    """
    return background.DEMO.start(["demo-transfer", "--json", "--quiet", *map(str, args)],
                                 {"args": list(args), "error": None}, error=TransferError, also_busy=demo_busy)


def cancel_demo_background() -> bool:
    """Stop the background transfer demo and cancel its queued or running runs.
    Returns whether it was running."""
    return background.DEMO.cancel()
