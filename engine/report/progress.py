"""A run's live summary and progress while it trains, read from the store (no TF here)."""
from __future__ import annotations

import time
from typing import Optional

from engine.report.live import StoreMetrics
from engine.report.measure import steady_state_arrays, time_left
from engine.report.target import effective_target, time_to_accuracy
from engine.store import Store


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
    'total_steps', 'fraction' (0..1), 'elapsed_sec', 'time_left_sec', 'time_left_is_most' (the
    run stops at its target: time left is at most that), 'samples_per_sec',
    'loss'}; None if no such run. 'elapsed_sec' (s) of a running run counts from its
    training start (plan 'train_started_at'), warm-up included, so it never decreases
    between reads; before that start and after the end it is the last execution's time.

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
    started = plan.get("train_started_at") if run["status"] == "running" else None
    clock = (now if now is not None else time.time()) - started if started else None
    if left is not None and run["status"] == "running":
        left += (run["config"]["epochs"] - len(epochs)) * _epoch_overhead(execs, epochs)
        if clock is not None:  # time since the last stored execution (validation, epoch ends) counts down too
            left = max(left - max(clock - elapsed, 0.0), 0.0)
    if clock is not None:
        # Anchored to the training start, never to the last execution: during warm-up (a long
        # first compile) the last execution is seconds old, and a clock read from it ran backwards.
        elapsed = max(elapsed, clock)
    summ = live_summary(store, run, execs, epochs, src)
    return {
        "status": run["status"], "epoch": int(last["epoch"]) + 1 if last is not None else 0,
        "epochs": run["config"]["epochs"], "step": step, "total_steps": total,
        "fraction": min(step / total, 1.0) if total else 0.0,
        "elapsed_sec": elapsed,
        "time_left_sec": left,
        # A run that stops at its target may end sooner: its estimate is for every epoch.
        "time_left_is_most": bool(run["config"].get("stop_at_target") and effective_target(run)),
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
