"""Stored runs as one table (pandas), for `python -m engine runs` and the Runs page."""
from __future__ import annotations

import time
from typing import Optional


def incomplete_note(summary: Optional[dict]) -> Optional[str]:
    """One line when a run's worker could not store all its metric rows
    (summary 'metrics_incomplete': rows lost, see engine.training.recorder.Writer), else None."""
    n = (summary or {}).get("metrics_incomplete")
    if not n:
        return None
    return (f"metrics incomplete: {n:,} metric rows could not be stored (store locked or failing); "
            "charts and figures miss them")


def runs_frame(store):
    """All runs as a pandas DataFrame (one row each, newest first): config columns,
    steady and end-to-end samples/s, where the wall time went (s), final
    validation accuracy and time to the target accuracy (s)."""
    import pandas as pd

    recs = []
    for r in store.list_runs():
        c, s = r["config"], r.get("summary") or {}
        recs.append({
            "id": r["id"], "status": r["status"], "role": r["role"],
            "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"])),
            "dataset": c["dataset"], "model": c["model"], "precision": c["precision"],
            "devices": c["devices"], "simulated": s.get("replicas_simulated"),
            "batch": c["batch_size"], "spe": c["steps_per_execution"], "xla": c["jit_compile"],
            "schedule": c.get("schedule"), "epochs": c["epochs"],
            "samples_per_sec": s.get("samples_per_sec"),
            "end_to_end_samples_per_sec": s.get("end_to_end_samples_per_sec"),
            "setup_sec": s.get("setup_sec"), "warmup_sec": s.get("warmup_sec"),
            "validation_sec": s.get("validation_sec"), "other_sec": s.get("other_sec"),
            "wall_sec": s.get("wall_sec"), "val_accuracy": s.get("final_val_accuracy"),
            "time_to_target_sec": s.get("time_to_target_sec"),
            "error": r.get("error") or incomplete_note(s),
        })
    return pd.DataFrame.from_records(recs, columns=[
        "id", "status", "role", "created", "dataset", "model", "precision", "devices", "simulated",
        "batch", "spe", "xla", "schedule", "epochs", "samples_per_sec", "end_to_end_samples_per_sec",
        "setup_sec", "warmup_sec", "validation_sec", "other_sec", "wall_sec",
        "val_accuracy", "time_to_target_sec", "error"])
