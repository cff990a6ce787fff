"""Stored runs as one table (pandas), for `python -m engine runs` and the Runs page,
and the one way its figures are written: thousands separators, fixed decimals
per column, units in the column names, blank where a figure is missing."""
from __future__ import annotations

import math
import time
from typing import Optional

from engine.store import from_script_run


def incomplete_note(summary: Optional[dict]) -> Optional[str]:
    """One line when a run's worker could not store all its metric rows
    (summary 'metrics_incomplete': rows lost, see engine.training.writer.Writer), else None."""
    n = (summary or {}).get("metrics_incomplete")
    if not n:
        return None
    return (f"metrics incomplete: {n:,} metric rows could not be stored (store locked or failing); "
            "charts and figures miss them")

# Figures: (column name on the Runs page, decimals). The CLI and the Runs page
# both write them with `number`.
FIGURES = {
    "samples_per_sec": ("steady samples/s", 0),
    "end_to_end_samples_per_sec": ("end-to-end samples/s", 0),
    "waiting_sec": ("waiting (s)", 1),
    "setup_sec": ("setup (s)", 1),
    "warmup_sec": ("warm-up (s)", 2),
    "validation_sec": ("validation (s)", 2),
    "other_sec": ("other (s)", 2),
    "wall_sec": ("wall (s)", 1),
    "val_accuracy": ("final val acc", 3),
    "time_to_target_sec": ("time to target (s)", 2),
}


def number(v, decimals: int = 0) -> str:
    """'16,520' / '2.64': thousands separators and `decimals` decimals; '' for
    a missing value (None, NaN)."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{float(v):,.{decimals}f}"


def bound_by_cell(run: dict) -> Optional[str]:
    """The bound-by verdict of a finished run in short, without the lever (engine.report.bound_by;
    `show` prints the whole line), or None."""
    from engine.report.bound_by import bound_by

    if run["status"] not in ("completed", "cancelled", "failed"):
        return None
    v = bound_by(run.get("summary") or {})
    return v["short"] if v else None


def mfu_text(v) -> str:
    """MFU as '31.6%' (3 significant digits), '' when missing."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return ""
    return f"{100 * float(v):.3g}%"


def peak_lr(cfg: dict) -> Optional[float]:
    """The highest learning rate a run's schedule reaches, before any batch scaling: max_lr for
    cyclic and one_cycle (10x learning_rate when unset, engine.config.lr_math), else learning_rate
    (constant, warmup_cosine and warmup_step peak there)."""
    lr = cfg.get("learning_rate")
    if cfg.get("schedule") in ("cyclic", "one_cycle") and lr is not None:
        return cfg.get("max_lr") or 10.0 * lr
    return lr


def runs_frame(store, runs: Optional[list] = None):
    """`runs` (default: all of `store.list_runs()`; pass a page from `store.query_runs` at
    scale) as a pandas DataFrame (one row each, in their order): config columns (the schedule,
    its peak learning rate, `peak_lr`, and label smoothing among them),
    steady and end-to-end samples/s, where the wall time went (s), final
    validation accuracy and time to the target accuracy (s), the MFU fields
    (engine.report.mfu.MFU_KEYS: FLOPs per sample, FLOP/s, peak FLOP/s, its source,
    MFU 0..1), the bound-by line, and what reproduces a run: backend, optimizer, seed, its
    group and its machine (fingerprint name and id)."""
    import pandas as pd

    from engine.hardware import fingerprint
    from engine.report.mfu import MFU_KEYS

    recs = []
    for r in store.list_runs() if runs is None else runs:
        c, s = r["config"], r.get("summary") or {}
        plan = r.get("plan") if isinstance(r.get("plan"), dict) else {}
        script_run = from_script_run(plan)  # SpeedLabCallback in a user's script (engine.training.script_run)
        recs.append({
            "id": r["id"], "status": r["status"], "role": r["role"],
            "created": time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r["created"])),
            "dataset": "(script run)" if script_run else c["dataset"],
            "model": (plan.get("name") or "script run") if script_run else c["model"],
            "backend": c.get("backend") or "tensorflow", "precision": c["precision"],
            "devices": c["devices"], "simulated": s.get("replicas_simulated"),
            "batch": c["batch_size"], "spe": c["steps_per_execution"], "xla": c["jit_compile"],
            "optimizer": c.get("optimizer"), "schedule": c.get("schedule"), "learning_rate": peak_lr(c),
            "label_smoothing": c.get("label_smoothing"), "epochs": c["epochs"], "seed": c.get("seed"),
            "samples_per_sec": s.get("samples_per_sec"),
            "end_to_end_samples_per_sec": s.get("end_to_end_samples_per_sec"),
            "waiting_sec": s.get("waiting_sec"), "setup_sec": s.get("setup_sec"), "warmup_sec": s.get("warmup_sec"),
            "validation_sec": s.get("validation_sec"), "other_sec": s.get("other_sec"),
            "wall_sec": s.get("wall_sec"), "val_accuracy": s.get("final_val_accuracy"),
            "time_to_target_sec": s.get("time_to_target_sec"),
            **{k: s.get(k) for k in MFU_KEYS}, "bound_by": bound_by_cell(r),
            "error": r.get("error") or incomplete_note(s),
            "origin": (f"imported from {(r.get('origin') or {}).get('host') or '?'}" if r.get("origin")
                       else f"a script run ({plan.get('script') or 'python'})" if script_run else None),
            # what reproduces it: its group (a comparison's pairs share one) and its machine
            "group": r.get("group_id"), "machine": fingerprint.name_of(r.get("environment")),
            "machine_id": (fingerprint.of(r.get("environment")) or {}).get("id"),
        })
    df = pd.DataFrame.from_records(recs, columns=[
        "id", "status", "role", "created", "dataset", "model", "backend", "precision", "devices", "simulated",
        "batch", "spe", "xla", "optimizer", "schedule", "learning_rate", "label_smoothing", "epochs", "seed",
        "samples_per_sec", "end_to_end_samples_per_sec",
        "waiting_sec", "setup_sec", "warmup_sec", "validation_sec", "other_sec", "wall_sec",
        "val_accuracy", "time_to_target_sec", *MFU_KEYS, "bound_by", "error", "origin", "group", "machine",
        "machine_id"])
    df["mfu"] = pd.to_numeric(df["mfu"], errors="coerce")  # a number column also when no run has one
    return one_denominator(df)


def one_denominator(df):
    """Restate the MFU column of `df` (runs_frame) against one peak per compute dtype
    (engine.report.mfu.common_peaks over the runs made on this machine): a column never
    mixes peaks from different days or conventions. Imported runs keep their own (another
    machine's peak). Adds 'mfu_stored' (what each run stored) and 'mfu_denominator' (the
    peak each row is now divided by, in words); df.attrs['mfu_peaks'] = the common peaks."""
    from engine.report import mfu

    rows = [{k: (None if v != v else v) for k, v in rec.items()} for rec in df.to_dict("records")]
    local = [r for r in rows if not r.get("origin") and r.get("peak_kind")]
    common = mfu.common_peaks(local)
    df["mfu_stored"] = df["mfu"]
    out, den = [], []
    for r in rows:
        peak = common.get(r.get("peak_dtype") or "float32") if not r.get("origin") else None
        if peak and r.get("model_flops_per_sec"):
            out.append(mfu.restate(r, peak["peak_flops_per_sec"])["mfu"])
            den.append(mfu.denominator({**peak, "peak_dtype": r.get("peak_dtype")}))
        else:
            out.append(r.get("mfu"))
            den.append(mfu.denominator(r))
    df["mfu"] = out
    df["mfu_denominator"] = den
    df.attrs["mfu_peaks"] = common
    return df


def mfu_caption(df) -> Optional[str]:
    """'MFU against one peak per dtype: float32 461 GFLOP/s theoretical (2 cores x ...)' for
    a runs_frame, or None when no run of this machine has one."""
    from engine.report import mfu

    peaks = df.attrs.get("mfu_peaks") or {}
    if not peaks:
        return None
    parts = [mfu.denominator({**p, "peak_dtype": d}) for d, p in sorted(peaks.items())]
    return "MFU against one peak per compute dtype: " + "; ".join(parts)


def text_frame(df):
    """`runs_frame` as text for the terminal (column names as in --json): figures
    by `number`, yes/no for flags, blank for anything missing."""
    out = df.copy()
    for col, (name, decimals) in FIGURES.items():
        out[col] = [number(v, decimals) for v in df[col]]
    out["mfu"] = [mfu_text(v) for v in df["mfu"]]
    for col in ("simulated", "xla"):
        out[col] = ["" if v is None or v != v else "yes" if v else "no" for v in df[col]]
    return out.astype(object).where(out.notna(), "")
