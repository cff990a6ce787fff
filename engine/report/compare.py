"""Speedups between stored runs, and live progress of a run (no TF here)."""
from __future__ import annotations

import time
from typing import Optional

from engine.report.live import StoreMetrics
from engine.report.measure import speedup, steady_state_arrays, time_left
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
    `target` if given, else its config's (engine.data.meta.target_for: the config's
    target_accuracy or the data set's default), else the one its worker used (summary)."""
    if target is not None:
        return target
    from engine.data.meta import target_for

    cfg = run.get("config") or {}
    found = target_for(cfg.get("target_accuracy"), cfg.get("dataset"))
    return found if found is not None else (run.get("summary") or {}).get("target_accuracy")


def time_to_accuracy(epochs: list[dict], target: Optional[float]) -> Optional[float]:
    """Seconds from the start of training to the end of the first validation whose
    accuracy reaches `target` (epoch rows' t), or None. Same float32 tolerance as
    the worker (engine.training.recorder.reached)."""
    if target is None:
        return None
    hit = next((e for e in epochs if e.get("val_accuracy") is not None
                and e["val_accuracy"] >= target - 1e-6), None)
    return hit["t"] if hit else None


def samples_to_accuracy(run: dict, epochs: list[dict], target: Optional[float]) -> Optional[float]:
    """Training samples seen until the end of the first validation at or above `target`
    (epochs done x samples per epoch: plan n_train - dropped_samples_per_epoch), or None."""
    if target is None:
        return None
    hit = next((e for e in epochs if e.get("val_accuracy") is not None
                and e["val_accuracy"] >= target - 1e-6), None)
    return _samples_after(run, hit)


def _samples_after(run: dict, epoch_row: Optional[dict]) -> Optional[float]:
    plan = run.get("plan") or {}
    if epoch_row is None or not plan.get("n_train"):
        return None
    return float((int(epoch_row["epoch"]) + 1) * (plan["n_train"] - (plan.get("dropped_samples_per_epoch") or 0)))


def censored_time(run: dict, epochs: list[dict], target: Optional[float]) -> tuple[Optional[float], Optional[float]]:
    """(s, samples) trained by a completed run that never reached `target`: the time and
    samples at its last validation, a lower bound of its time to accuracy (a censored
    observation); (None, None) when it reached the target, did not complete, or has no
    validation."""
    if target is None or run.get("status") != "completed" or not epochs or \
            time_to_accuracy(epochs, target) is not None:
        return None, None
    last = epochs[-1]
    return last.get("t"), _samples_after(run, last)


def not_reached(run: dict, epochs: list[dict], target: Optional[float]) -> Optional[str]:
    """'not reached in N epochs' (or '... yet' while the run is active) when a target
    is set and no validation reached it; None otherwise."""
    if target is None or time_to_accuracy(epochs, target) is not None:
        return None
    n = len(epochs)
    if run.get("status") in ("queued", "running"):
        return f"not reached yet ({n} epoch{'s' if n != 1 else ''} so far)"
    if n == 0:  # stopped or failed before its first validation: "in 0 epochs" would read as no training
        return f"not reached: {run.get('status') or 'ended'} before its first validation"
    return f"not reached in {n} epoch{'s' if n != 1 else ''}"


def end_to_end_rate(summary: dict, execs) -> Optional[float]:
    """Training samples / wall time of training (warm-up, validation and other
    included), samples/s: the summary's figure once the run ended, else samples
    so far / seconds since training start (the last stored execution's t).
    `execs`: the run's executions (DataFrame of EXEC_COLS)."""
    if summary.get("end_to_end_samples_per_sec") is not None:
        return summary["end_to_end_samples_per_sec"]
    if execs is None or not len(execs) or not execs["t"].iloc[-1]:
        return None
    return float((execs["samples_per_sec"] * execs["duration"]).sum() / execs["t"].iloc[-1])


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


def setup_notice(base_summary: dict, summary: dict, e2e: Optional[float]) -> Optional[str]:
    """One line when the whole runs by the clock (setup included) differ from the
    end-to-end speedup by more than DIVERGENCE (relative): setup (interpreter, imports,
    devices, data, model) is outside every speedup, so say what it cost each run, e.g.
    "setup took 7.2 s of this run's 9.9 s (the baseline's 0.8 s of 3.8 s), outside the
    speedups: start to finish the run took 2.61x as long as the baseline"; None otherwise
    or before both runs ended."""
    wb, wr = base_summary.get("wall_sec"), summary.get("wall_sec")
    sb, sr = base_summary.get("setup_sec"), summary.get("setup_sec")
    if not e2e or not wb or not wr or sb is None or sr is None:
        return None
    whole = wb / wr
    if abs(whole - e2e) / e2e <= DIVERGENCE:
        return None
    how = f"took {wr / wb:.2f}x as long as" if wr > wb else f"was {whole:.2f}x as fast as"
    return (f"setup took {sr:.1f} s of this run's {wr:.1f} s (the baseline's {sb:.1f} s of {wb:.1f} s), "
            f"outside the speedups: start to finish the run {how} the baseline")


def ended_in_warmup(run: dict, execs) -> Optional[str]:
    """One line when `run` was stopped or failed without an execution past its
    warm-up: its end-to-end rate is then mostly tracing and compiling, and a ratio
    with a run that trained on would mean nothing. Else None (also for a completed
    run: however short, its rate is what it did).
    `execs`: the run's executions (DataFrame of EXEC_COLS)."""
    if run.get("status") not in ("cancelled", "failed"):
        return None
    if execs is not None and len(execs) and not execs["warmup"].astype(bool).all():
        return None
    n = 0 if execs is None else len(execs)
    return (f"run #{run['id']} ended in its warm-up ({n} execution{'s' if n != 1 else ''}, "
            f"{'all warm-up' if n else 'none stored'}): no end-to-end ratio")


def compare(store: Store, baseline_id: int, run_id: int, target: Optional[float] = None,
            source=None) -> dict:
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
    `source`: where metrics come from (engine.report.live: StoreMetrics by default,
    LiveMetrics for a live page that reads only new rows).
    Also: the rates behind each ratio, 'target_accuracy', 'samples_to_accuracy' /
    'baseline_samples_to_accuracy' (samples, `samples_to_accuracy`), 'censored' /
    'baseline_censored' ({'sec', 'samples'} of a completed run that missed the target,
    see `censored_time`), 'test_accuracy' / 'baseline_test_accuracy' (fraction, the
    held-out test split; None for older runs), 'breakdown' /
    'baseline_breakdown' (see `breakdown`), 'notice' (see `divergence_notice`),
    'setup_notice' (see `setup_notice`) and 'caveats' (one line each, e.g. a different model or machine).
    Raises: KeyError if a run does not exist.
    """
    base, run = store.get_run(baseline_id), store.get_run(run_id)
    if base is None or run is None:
        raise KeyError(f"run {baseline_id if base is None else run_id} does not exist")
    src = source or StoreMetrics(store)
    rows_b, rows_r = src.executions(base), src.executions(run)
    ep_b, ep_r = src.epochs(base), src.epochs(run)
    b, r = live_summary(store, base, rows_b, ep_b, src), live_summary(store, run, rows_r, ep_r, src)
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
    cut = [line for line in (ended_in_warmup(base, rows_b), ended_in_warmup(run, rows_r)) if line]
    if cut:  # e.g. an autopilot trial pruned in its first execution read 0.12x end-to-end
        caveats.extend(cut)
        e2e = None
    return {
        "baseline_id": baseline_id, "run_id": run_id, "target_accuracy": goal,
        "baseline_time_to_accuracy_sec": tb, "time_to_accuracy_sec": tr,
        "time_to_accuracy_speedup": (tb / tr) if tb and tr else None,
        "baseline_samples_to_accuracy": samples_to_accuracy(base, ep_b, goal),
        "samples_to_accuracy": samples_to_accuracy(run, ep_r, goal),
        "baseline_censored": dict(zip(("sec", "samples"), censored_time(base, ep_b, goal))),
        "censored": dict(zip(("sec", "samples"), censored_time(run, ep_r, goal))),
        "baseline_test_accuracy": b.get("test_accuracy"), "test_accuracy": r.get("test_accuracy"),
        "baseline_time_to_accuracy_note": not_reached(base, ep_b, goal),
        "time_to_accuracy_note": not_reached(run, ep_r, goal),
        "baseline_end_to_end_samples_per_sec": eb, "end_to_end_samples_per_sec": er,
        "end_to_end_speedup": e2e,
        "baseline_samples_per_sec": b.get("samples_per_sec"), "samples_per_sec": r.get("samples_per_sec"),
        "steady_speedup": steady, "throughput_speedup": steady,
        "baseline_breakdown": breakdown(b), "breakdown": breakdown(r),
        "notice": divergence_notice(r, e2e, steady),
        "setup_notice": setup_notice(b, r, e2e),
        "caveats": caveats,
    }


# A configuration is "the same" on two backends when everything but these matches
# (JAX always compiles the step with XLA, whatever jit_compile says on TensorFlow).
_BACKEND_FIELDS = ("backend", "jit_compile")
BACKEND_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX"}


def _backend_free(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _BACKEND_FIELDS}


OTHER_BACKEND_SCAN = 2000  # newest completed runs searched for the other backend's run


def other_backend_run(store: Store, run: dict) -> Optional[dict]:
    """The newest completed run of the same configuration on another backend, measured
    on the same host, or None. Everything but backend and jit_compile must match."""
    mine = _backend_free(run["config"])
    backend = run["config"].get("backend", "tensorflow")
    host = (run.get("environment") or {}).get("hostname")
    # SQL picks the candidates (same data set, model, precision, batch, other backend): a
    # 10,000-run store is not parsed whole on every Train page rerun.
    cfg = run["config"]
    from engine.store import config_field as f

    # Among the newest OTHER_BACKEND_SCAN completed runs (an indexed read): the check costs
    # the same with 100,000 stored runs.
    where = (f"id IN (SELECT id FROM runs WHERE status='completed' AND trashed IS NULL ORDER BY id DESC "
             f"LIMIT {OTHER_BACKEND_SCAN}) AND {f('dataset')}=? AND {f('model')}=? AND {f('precision')}=? "
             f"AND {f('batch_size')}=? AND COALESCE({f('backend')},'tensorflow')!=?")
    for other in store.query_runs(where, (cfg.get("dataset"), cfg.get("model"), cfg.get("precision"),
                                          cfg.get("batch_size"), backend)):
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


def live_summary(store: Store, run: dict, execs=None, epochs: Optional[list] = None, source=None) -> dict:
    """The run's summary; for a run still in progress, figures computed from the
    executions stored so far (same arithmetic as the final summary). `execs`
    (DataFrame of EXEC_COLS) and `epochs` (rows) are the run's stored metrics
    when the caller has read them already, from `source` (as for `compare`;
    a LiveMetrics source computes the steady state once per rows read)."""
    summary = dict(run.get("summary") or {})
    if run["status"] in ("completed", "failed", "cancelled") and "samples_per_sec" in summary:
        return summary
    execs = execs if execs is not None else store.frame("executions", run["id"])
    if len(execs):
        def steady() -> dict:  # as steady_state() of the rows, vectorised (a live page: every second)
            return steady_state_arrays(execs["duration"].to_numpy(dtype=float),
                                       # stored rate x duration = the samples the worker really counted
                                       (execs["samples_per_sec"] * execs["duration"]).to_numpy(dtype=float),
                                       execs["warmup"].to_numpy(dtype=float) != 0)  # NaN: warm-up, as bool()
        summary.update(source.memo(run, execs, "steady_state", steady) if source else steady())
    epochs = epochs if epochs is not None else store.metrics("epochs", run["id"])
    target = effective_target(run)
    if target and "time_to_target_sec" not in summary:
        summary["time_to_target_sec"] = time_to_accuracy(epochs, target)
    return summary


def progress(store: Store, run_id: int, source=None, now: Optional[float] = None) -> Optional[dict]:
    """Live progress of a run: {'status', 'epoch' (1-based), 'epochs', 'step',
    'total_steps', 'fraction' (0..1), 'elapsed_sec', 'time_left_sec', 'samples_per_sec',
    'loss'}; None if no such run.

    time_left_sec: steps left at the steady step rate plus, per epoch left, the
    median time seen between an epoch's last execution and its end (validation);
    None until the steady rate is known. While the run is running it counts down
    with the clock between stored executions too (during validation, between
    epochs), from the training start the worker recorded (plan
    'train_started_at', s since the epoch; `now` defaults to time.time()).
    `source`: as for `compare`.
    """
    run = store.get_run(run_id)
    if run is None:
        return None
    src = source or StoreMetrics(store)
    plan = run.get("plan") or {}
    execs, epochs = src.executions(run), src.epochs(run)
    total = plan.get("total_steps") or 0
    last = execs.iloc[-1] if len(execs) else None
    step = int(last["step"]) if last is not None else 0
    steady = execs.loc[execs["warmup"] == 0, ["batches", "duration"]]  # two columns, not every row's all
    steps_per_s = float(steady["batches"].sum() / steady["duration"].sum()) if len(steady) else None
    left = time_left(step, total, steps_per_s)
    elapsed = float(last["t"]) if last is not None else 0.0
    if left is not None and run["status"] == "running":
        left += (run["config"]["epochs"] - len(epochs)) * _epoch_overhead(execs, epochs)
        started = plan.get("train_started_at")
        if started:
            # Time since the last stored execution (validation, epoch ends) counts down too.
            clock = (now if now is not None else time.time()) - started
            left = max(left - max(clock - elapsed, 0.0), 0.0)
            elapsed = max(elapsed, clock)
    summ = live_summary(store, run, execs, epochs, src)
    return {
        "status": run["status"], "epoch": int(last["epoch"]) + 1 if last is not None else 0,
        "epochs": run["config"]["epochs"], "step": step, "total_steps": total,
        "fraction": min(step / total, 1.0) if total else 0.0,
        "elapsed_sec": elapsed,
        "time_left_sec": left,
        "samples_per_sec": summ.get("samples_per_sec"),
        "loss": float(last["loss"]) if last is not None and last["loss"] == last["loss"] else None,
    }


def _epoch_overhead(execs, epochs: list[dict]) -> float:
    """Median seconds from an epoch's last execution to the epoch's end (validation)."""
    import statistics

    if not len(execs):
        return 0.0
    last_t = execs.groupby("epoch")["t"].last().to_dict()
    gaps = [e["t"] - last_t[e["epoch"]] for e in epochs if e["epoch"] in last_t]
    return max(statistics.median(gaps), 0.0) if gaps else 0.0
