"""Stored runs as one table (pandas), for `python -m engine runs` and the Runs page."""
from __future__ import annotations

import time


def runs_frame(store):
    """All runs as a pandas DataFrame (one row each, newest first)."""
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
            "samples_per_sec": s.get("samples_per_sec"), "warmup_sec": s.get("warmup_sec"),
            "wall_sec": s.get("wall_sec"), "val_accuracy": s.get("final_val_accuracy"),
            "time_to_target_sec": s.get("time_to_target_sec"), "error": r.get("error"),
            "origin": f"imported from {(r.get('origin') or {}).get('host') or '?'}" if r.get("origin") else None,
        })
    return pd.DataFrame.from_records(recs, columns=[
        "id", "status", "role", "created", "dataset", "model", "precision", "devices", "simulated",
        "batch", "spe", "xla", "schedule", "epochs", "samples_per_sec", "warmup_sec", "wall_sec",
        "val_accuracy", "time_to_target_sec", "error", "origin"])
