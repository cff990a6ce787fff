"""Speedups between stored runs, and live progress of a run (no TF here)."""
from __future__ import annotations

from typing import Optional

from engine.report.measure import speedup, steady_state, time_left
from engine.store import Store

# Differences that make a comparison no longer like with like.
_LIKE_FIELDS = ("dataset", "model", "batch_size", "synthetic_shape", "synthetic_classes",
                "synthetic_samples")


def compare(store: Store, baseline_id: int, run_id: int) -> dict:
    """Speedup of run `run_id` over `baseline_id`.

    Returns: {'baseline_id', 'run_id', 'throughput_speedup' (steady samples/s
    ratio), 'time_to_target_speedup' (baseline time-to-target / run's, when
    both reached the target), 'baseline_samples_per_sec', 'samples_per_sec',
    'caveats': [one line each, e.g. different model or machine]}.
    Raises: KeyError if a run does not exist.
    """
    base, run = store.get_run(baseline_id), store.get_run(run_id)
    if base is None or run is None:
        raise KeyError(f"run {baseline_id if base is None else run_id} does not exist")
    b, r = live_summary(store, base), live_summary(store, run)
    caveats = []
    for key in _LIKE_FIELDS:
        if base["config"].get(key) != run["config"].get(key):
            caveats.append(f"{key} differs ({base['config'].get(key)} vs {run['config'].get(key)}): "
                           "not like with like")
    hb = (base.get("environment") or {}).get("hostname")
    hr = (run.get("environment") or {}).get("hostname")
    if hb and hr and hb != hr:
        caveats.append(f"measured on different machines ({hb} vs {hr})")
    tb, tr = b.get("time_to_target_sec"), r.get("time_to_target_sec")
    return {
        "baseline_id": baseline_id, "run_id": run_id,
        "baseline_samples_per_sec": b.get("samples_per_sec"),
        "samples_per_sec": r.get("samples_per_sec"),
        "throughput_speedup": speedup(b.get("samples_per_sec"), r.get("samples_per_sec")),
        "baseline_time_to_target_sec": tb, "time_to_target_sec": tr,
        "time_to_target_speedup": (tb / tr) if tb and tr else None,
        "caveats": caveats,
    }


# A configuration is "the same" on two backends when everything but these matches
# (JAX always compiles the step with XLA, whatever jit_compile says on TensorFlow).
_BACKEND_FIELDS = ("backend", "jit_compile")
BACKEND_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX"}


def _backend_free(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _BACKEND_FIELDS}


def other_backend_run(store: Store, run: dict) -> Optional[dict]:
    """The newest completed run of the same configuration on another backend, measured
    on the same host, or None. Everything but backend and jit_compile must match."""
    mine = _backend_free(run["config"])
    backend = run["config"].get("backend", "tensorflow")
    host = (run.get("environment") or {}).get("hostname")
    for other in store.list_runs(["completed"]):
        if other["id"] == run["id"] or other["config"].get("backend", "tensorflow") == backend:
            continue
        if _backend_free(other["config"]) == mine and (host is None or (other.get("environment") or {})
                                                       .get("hostname") == host):
            return other
    return None


def backend_speedup(store: Store, run_id: int) -> Optional[dict]:
    """The backend speedup of run `run_id`: the same configuration measured on another
    Keras backend (`other_backend_run`) as the reference.

    Returns: `compare(store, other_id, run_id)` plus 'backend' and 'other_backend' (names
    as written, e.g. 'JAX', 'TensorFlow') and 'other_jit_compile' (whether the reference
    ran with XLA); None when the run does not exist or has no such counterpart.
    """
    run = store.get_run(run_id)
    if run is None:
        return None
    other = other_backend_run(store, run)
    if other is None:
        return None
    out = compare(store, other["id"], run_id)
    out.update(backend=BACKEND_NAMES.get(run["config"].get("backend", "tensorflow")),
               other_backend=BACKEND_NAMES.get(other["config"].get("backend", "tensorflow")),
               other_jit_compile=bool(other["config"].get("jit_compile")))
    return out


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
    target = run["config"].get("target_accuracy")
    if target and "time_to_target_sec" not in summary:
        # Same rule as the Recorder (engine.training.recorder.reached), without importing Keras here.
        hit = next((e for e in epochs if e["val_accuracy"] is not None and e["val_accuracy"] >= target - 1e-6),
                   None)
        summary["time_to_target_sec"] = hit["t"] if hit else None
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
