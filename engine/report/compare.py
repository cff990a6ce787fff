"""Speedups between stored runs, and live progress of a run (no TF here)."""
from __future__ import annotations

from typing import Optional

from engine.report.measure import speedup, steady_state, time_left
from engine.store import Store

# Differences that make a comparison no longer like with like.
_LIKE_FIELDS = ("dataset", "model", "batch_size", "synthetic_shape", "synthetic_classes",
                "synthetic_samples")


# End-to-end and steady speedups further apart than this (relative) get a notice
# naming where the rest of the time went.
DIVERGENCE = 0.15
PARTS = ("setup", "warmup", "train", "validation", "other")
PART_NAMES = {"setup": "setup", "warmup": "warm-up", "train": "training", "validation": "validation",
              "other": "other (inside fit)", "data_wait": "data wait"}


def effective_target(run: dict, target: Optional[float] = None) -> Optional[float]:
    """The target validation accuracy (0-1) a run's time to accuracy is measured to:
    `target` if given, else its config's target_accuracy, else the one its worker
    used (summary), else the data set's default (engine.data.meta.default_target)."""
    if target is not None:
        return target
    cfg = run.get("config") or {}
    if cfg.get("target_accuracy") is not None:
        return cfg["target_accuracy"]
    if (run.get("summary") or {}).get("target_accuracy") is not None:
        return run["summary"]["target_accuracy"]
    from engine.data.meta import default_target

    return default_target(cfg.get("dataset"))


def time_to_accuracy(epochs: list[dict], target: Optional[float]) -> Optional[float]:
    """Seconds from the start of training to the end of the first validation whose
    accuracy reaches `target` (epoch rows' t), or None. Same float32 tolerance as
    the worker (engine.training.recorder.reached)."""
    if target is None:
        return None
    hit = next((e for e in epochs if e.get("val_accuracy") is not None
                and e["val_accuracy"] >= target - 1e-6), None)
    return hit["t"] if hit else None


def not_reached(run: dict, epochs: list[dict], target: Optional[float]) -> Optional[str]:
    """'not reached in N epochs' (or '... yet' while the run is active) when a target
    is set and no validation reached it; None otherwise."""
    if target is None or time_to_accuracy(epochs, target) is not None:
        return None
    n = len(epochs)
    if run.get("status") in ("queued", "running"):
        return f"not reached yet ({n} epoch{'s' if n != 1 else ''} so far)"
    return f"not reached in {n} epoch{'s' if n != 1 else ''}"


def end_to_end_rate(summary: dict, rows: list[dict]) -> Optional[float]:
    """Training samples / wall time of training (warm-up, validation and other
    included), samples/s: the summary's figure once the run ended, else samples
    so far / seconds since training start (the last stored execution's t)."""
    if summary.get("end_to_end_samples_per_sec") is not None:
        return summary["end_to_end_samples_per_sec"]
    if not rows or not rows[-1]["t"]:
        return None
    return sum(x["samples_per_sec"] * x["duration"] for x in rows) / rows[-1]["t"]


def breakdown(summary: dict) -> Optional[dict]:
    """Where a finished run's wall time went: {'setup', 'warmup', 'train',
    'data_wait', 'validation', 'other', 'wall'} in s, 'train' without the steady
    data wait (shown apart); None for a run without a timeline (older runs, or
    still running)."""
    if summary.get("setup_sec") is None:
        return None
    wait = summary.get("data_wait_sec") or 0.0
    out = {k: summary.get(f"{k}_sec") or 0.0 for k in PARTS}
    out["data_wait"] = min(wait, out["train"])
    out["train"] -= out["data_wait"]
    out["wall"] = summary.get("wall_sec")
    return out


def divergence_notice(summary: dict, e2e: Optional[float], steady: Optional[float]) -> Optional[str]:
    """One line when the end-to-end and steady speedups differ by more than
    DIVERGENCE (relative), naming the run's largest part besides training, e.g.
    'validation took 41 s of this run's 66 s'; None otherwise."""
    if not e2e or not steady or abs(e2e - steady) / steady <= DIVERGENCE:
        return None
    # Setup is outside both rates: only what happens during training can explain the gap.
    parts = {k: summary.get(f"{k}_sec") for k in ("warmup", "validation", "other")}
    parts = {k: v for k, v in parts.items() if v is not None}
    wall = summary.get("wall_sec")
    if not parts or not wall:
        return (f"end-to-end ({e2e:.2f}x) and steady ({steady:.2f}x) speedups differ: the clock "
                "includes time outside the steady training steps")
    k, v = max(parts.items(), key=lambda kv: kv[1])
    return (f"{PART_NAMES[k]} took {v:.1f} s of this run's {wall:.1f} s: end-to-end {e2e:.2f}x vs "
            f"steady {steady:.2f}x")


def compare(store: Store, baseline_id: int, run_id: int, target: Optional[float] = None) -> dict:
    """Three speedups of run `run_id` over `baseline_id`, each named for what it is:

    - 'time_to_accuracy_speedup': baseline's seconds from the start of training to
      the first validation at or above the target accuracy / the run's (None
      unless both reached it; 'time_to_accuracy_note' / 'baseline_time_to_accuracy_note'
      then say 'not reached in N epochs');
    - 'end_to_end_speedup': ratio of training samples / wall time of training
      (warm-up, validation and other included), samples/s;
    - 'steady_speedup': ratio of the per-execution median samples/s after the
      warm-up (also under its older name 'throughput_speedup').

    `target` overrides the target accuracy (default: `effective_target` of the run).
    Also: the rates behind each ratio, 'target_accuracy', 'breakdown' /
    'baseline_breakdown' (see `breakdown`), 'notice' (see `divergence_notice`)
    and 'caveats' (one line each, e.g. a different model or machine).
    Raises: KeyError if a run does not exist.
    """
    base, run = store.get_run(baseline_id), store.get_run(run_id)
    if base is None or run is None:
        raise KeyError(f"run {baseline_id if base is None else run_id} does not exist")
    rows_b, rows_r = store.metrics("executions", baseline_id), store.metrics("executions", run_id)
    ep_b, ep_r = store.metrics("epochs", baseline_id), store.metrics("epochs", run_id)
    b, r = live_summary(store, base, rows_b, ep_b), live_summary(store, run, rows_r, ep_r)
    caveats = []
    for key in _LIKE_FIELDS:
        if base["config"].get(key) != run["config"].get(key):
            caveats.append(f"{key} differs ({base['config'].get(key)} vs {run['config'].get(key)}): "
                           "not like with like")
    hb = (base.get("environment") or {}).get("hostname")
    hr = (run.get("environment") or {}).get("hostname")
    if hb and hr and hb != hr:
        caveats.append(f"measured on different machines ({hb} vs {hr})")
    goal = effective_target(run, target)
    tb, tr = time_to_accuracy(ep_b, goal), time_to_accuracy(ep_r, goal)
    eb, er = end_to_end_rate(b, rows_b), end_to_end_rate(r, rows_r)
    steady = speedup(b.get("samples_per_sec"), r.get("samples_per_sec"))
    e2e = speedup(eb, er)
    return {
        "baseline_id": baseline_id, "run_id": run_id, "target_accuracy": goal,
        "baseline_time_to_accuracy_sec": tb, "time_to_accuracy_sec": tr,
        "time_to_accuracy_speedup": (tb / tr) if tb and tr else None,
        "baseline_time_to_accuracy_note": not_reached(base, ep_b, goal),
        "time_to_accuracy_note": not_reached(run, ep_r, goal),
        "baseline_end_to_end_samples_per_sec": eb, "end_to_end_samples_per_sec": er,
        "end_to_end_speedup": e2e,
        "baseline_samples_per_sec": b.get("samples_per_sec"), "samples_per_sec": r.get("samples_per_sec"),
        "steady_speedup": steady, "throughput_speedup": steady,
        "baseline_breakdown": breakdown(b), "breakdown": breakdown(r),
        "notice": divergence_notice(r, e2e, steady),
        "caveats": caveats,
    }


def live_summary(store: Store, run: dict, rows: Optional[list] = None,
                 epochs: Optional[list] = None) -> dict:
    """The run's summary; for a run still in progress, figures computed from the
    executions stored so far (same arithmetic as the final summary). `rows` and
    `epochs` are the run's stored metrics when the caller has read them already."""
    summary = dict(run.get("summary") or {})
    if run["status"] in ("completed", "failed", "cancelled") and "samples_per_sec" in summary:
        return summary
    rows = rows if rows is not None else store.metrics("executions", run["id"])
    gb = run["config"]["batch_size"]
    if rows:
        summary.update(steady_state([x["duration"] for x in rows], [x["batches"] for x in rows], gb,
                                    warmup_flags=[x["warmup"] for x in rows],
                                    # stored rate x duration = the samples the worker really counted
                                    samples=[x["samples_per_sec"] * x["duration"] for x in rows]))
    epochs = epochs if epochs is not None else store.metrics("epochs", run["id"])
    target = effective_target(run)
    if target and "time_to_target_sec" not in summary:
        summary["time_to_target_sec"] = time_to_accuracy(epochs, target)
    return summary


def progress(store: Store, run_id: int) -> Optional[dict]:
    """Live progress of a run: {'status', 'epoch' (1-based), 'epochs', 'step',
    'total_steps', 'fraction' (0..1), 'elapsed_sec', 'time_left_sec' (steps
    left at the steady step rate plus, per epoch left, the median time seen
    between an epoch's last execution and its end: validation; None until the
    steady rate is known), 'samples_per_sec', 'loss'}; None if no such run."""
    run = store.get_run(run_id)
    if run is None:
        return None
    plan = run.get("plan") or {}
    rows = store.metrics("executions", run_id)  # read once a second per tab: once only
    epochs = store.metrics("epochs", run_id)
    total = plan.get("total_steps") or 0
    last = rows[-1] if rows else None
    step = last["step"] if last else 0
    steady = [x for x in rows if not x["warmup"]]
    steps_per_s = (sum(x["batches"] for x in steady) / sum(x["duration"] for x in steady)) if steady else None
    left = time_left(step, total, steps_per_s)
    if left is not None and run["status"] == "running":
        left += (run["config"]["epochs"] - len(epochs)) * _epoch_overhead(rows, epochs)
    summ = live_summary(store, run, rows, epochs)
    return {
        "status": run["status"], "epoch": (last["epoch"] + 1) if last else 0,
        "epochs": run["config"]["epochs"], "step": step, "total_steps": total,
        "fraction": min(step / total, 1.0) if total else 0.0,
        "elapsed_sec": last["t"] if last else 0.0,
        "time_left_sec": left,
        "samples_per_sec": summ.get("samples_per_sec"),
        "loss": last["loss"] if last else None,
    }


def _epoch_overhead(rows: list[dict], epochs: list[dict]) -> float:
    """Median seconds from an epoch's last execution to the epoch's end (validation)."""
    import statistics

    last_t = {}
    for x in rows:
        last_t[x["epoch"]] = x["t"]
    gaps = [e["t"] - last_t[e["epoch"]] for e in epochs if e["epoch"] in last_t]
    return max(statistics.median(gaps), 0.0) if gaps else 0.0
