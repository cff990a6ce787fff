"""One run against its baseline: the speedups between two stored runs (time to accuracy,
end to end, steady), where the time went, and the other Keras backend's run as a baseline
(no TF here). Interleaved pairs of many runs are a comparison: engine.report.comparison."""
from __future__ import annotations

from typing import Optional

from engine.report.headline import ratio_text
from engine.report.live import StoreMetrics
from engine.report.measure import speedup
from engine.report.progress import live_summary
from engine.report.target import censored_time, effective_target, not_reached, samples_to_accuracy, time_to_accuracy
from engine.store import Store

# Differences that make a comparison no longer like with like.
_LIKE_FIELDS = ("dataset", "model", "batch_size", "synthetic_shape", "synthetic_classes",
                "synthetic_samples")


# End-to-end and steady speedups further apart than this (relative) get a notice
# naming where the rest of the time went.
DIVERGENCE = 0.15
PARTS = ("setup", "warmup", "train", "validation", "other")
PART_NAMES = {"waiting": "waiting for a worker", "setup": "setup", "warmup": "warm-up", "train": "training", "validation": "validation",
              "other": "other (inside fit)", "data_wait": "data wait"}

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
    """Where a finished run's time went: {'waiting', 'setup', 'warmup', 'train',
    'data_wait', 'validation', 'other', 'wall'} in s, 'train' without the steady
    data wait (shown apart; 'data_wait' None where it was not measured), 'waiting' the time before its worker's clock started
    (summary 'waiting_sec': a free machine, a spare's imports; 0 when not recorded) and
    'wall' waiting plus the run's own wall time; None for a run without a timeline (older
    runs, or still running)."""
    if summary.get("setup_sec") is None:
        return None
    wait = summary.get("data_wait_sec")
    out = {"waiting": summary.get("waiting_sec") or 0.0, **{k: summary.get(f"{k}_sec") or 0.0 for k in PARTS}}
    # Not measured (a script's own input, multi-worker, TPU): unknown, never 0 s.
    out["data_wait"] = None if wait is None else min(wait, out["train"])
    out["train"] -= out["data_wait"] or 0.0
    out["wall"] = None if summary.get("wall_sec") is None else summary["wall_sec"] + out["waiting"]
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
        return (f"end-to-end ({ratio_text(e2e)}) and steady ({ratio_text(steady)}) speedups differ: the clock "
                "includes time outside the steady training steps")
    k, v = max(parts.items(), key=lambda kv: kv[1])
    return (f"{PART_NAMES[k]} took {v:.1f} s of this run's {wall:.1f} s: end-to-end {ratio_text(e2e)} vs "
            f"steady {ratio_text(steady)}")


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
    how = f"took {ratio_text(wr / wb)} as long as" if wr > wb else f"was {ratio_text(whole)} as fast as"
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


def like_caveats(base: dict, run: dict) -> list[str]:
    """One line for each difference that makes two stored runs no longer like with like: their
    config's data set, model, batch (`_LIKE_FIELDS`) or, for script runs, whose config holds
    placeholders there (engine.store.rows.from_script_run), the script each ran."""
    from engine.store.rows import from_script_run

    scripts = [(r.get("plan") or {}).get("script") if from_script_run(r.get("plan")) else None for r in (base, run)]
    if scripts == [None, None]:
        return [f"{key} differs ({base['config'].get(key)} vs {run['config'].get(key)}): not like with like"
                for key in _LIKE_FIELDS if base["config"].get(key) != run["config"].get(key)]
    if None in scripts:
        return ["a script run against a SpeedLab run: their data and model are not known to be alike"]
    if scripts[0] != scripts[1]:
        return [f"two scripts ({scripts[0]} vs {scripts[1]}): like with like only if they train the same "
                "model on the same data"]
    return []


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
    'setup_notice' (see `setup_notice`), 'caveats' (one line each, e.g. a different model or machine)
    and 'machines' ('measured on two machines: A vs B' when the runs' fingerprints differ, else
    None: engine.hardware.fingerprint.two_machines; no verdict reads "faster" then) and 'overlap'
    ('these runs overlapped for N s on this machine: ...' when they trained at the same time on one
    machine, else None: engine.hardware.fingerprint.overlap; also the first caveat).
    Raises: KeyError if a run does not exist.
    """
    base, run = store.get_run(baseline_id), store.get_run(run_id)
    if base is None or run is None:
        raise KeyError(f"run {baseline_id if base is None else run_id} does not exist")
    src = source or StoreMetrics(store)
    rows_b, rows_r = src.executions(base), src.executions(run)
    ep_b, ep_r = src.epochs(base), src.epochs(run)
    b, r = live_summary(store, base, rows_b, ep_b, src), live_summary(store, run, rows_r, ep_r, src)
    caveats = like_caveats(base, run)
    from engine.hardware.fingerprint import overlap, two_machines

    from engine.store import never_ran

    unrun = [r for r, rows in ((base, rows_b), (run, rows_r)) if never_ran(r) and (rows is None or not len(rows))]
    # A run that never started has no machine and no time: no caveat of either, one line instead.
    machines = None if unrun else two_machines(base.get("environment"), run.get("environment"))
    overlapped = overlap(base, run)
    hb = (base.get("environment") or {}).get("hostname")
    hr = (run.get("environment") or {}).get("hostname")
    if machines:  # the first caveat: no speedup across two machines reads as a result
        caveats.insert(0, machines)
    elif hb and hr and hb != hr:
        caveats.append(f"measured on different machines ({hb} vs {hr})")
    if overlapped:  # they shared the machine: neither time is the configuration's alone
        caveats.insert(0, overlapped)
    goal = effective_target(run, target)
    tb, tr = time_to_accuracy(ep_b, goal), time_to_accuracy(ep_r, goal)
    eb, er = end_to_end_rate(b, rows_b), end_to_end_rate(r, rows_r)
    steady = speedup(b.get("samples_per_sec"), r.get("samples_per_sec"))
    e2e = speedup(eb, er)
    cut = [f"run #{r['id']} never started ({r['status']}): no ratio" for r in unrun] or [
        line for line in (ended_in_warmup(base, rows_b), ended_in_warmup(run, rows_r)) if line]
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
        "machines": machines,
        "overlap": overlapped,
    }


# A configuration is "the same" on two backends when everything but these matches
# (JAX always compiles the step with XLA, whatever jit_compile says on TensorFlow).
_BACKEND_FIELDS = ("backend", "jit_compile")
BACKEND_NAMES = {"tensorflow": "TensorFlow", "jax": "JAX"}


def _backend_free(config: dict) -> dict:
    return {k: v for k, v in config.items() if k not in _BACKEND_FIELDS}


OTHER_BACKEND_SCAN = 2000  # newest completed runs searched for the other backend's run


def _same_machine(env: Optional[dict], other: Optional[dict]) -> bool:
    """Two runs' environments are one machine's: the same fingerprint id; where `env` predates
    fingerprints, the same hostname (or no hostname to tell)."""
    from engine.hardware.fingerprint import of

    mine, theirs = of(env), of(other)
    if mine or theirs:
        return bool(mine and theirs and mine["id"] == theirs["id"])
    host = (env or {}).get("hostname")
    return host is None or (other or {}).get("hostname") == host


def other_backend_run(store: Store, run: dict) -> Optional[dict]:
    """The newest completed run of the same configuration on another backend, measured
    on the same machine (the same fingerprint id, `_same_machine`), or None. Everything but backend and jit_compile must match."""
    mine = _backend_free(run["config"])
    backend = run["config"].get("backend", "tensorflow")
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
        if _backend_free(other["config"]) == mine and _same_machine(run.get("environment"), other.get("environment")):
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
