"""Watching one autopilot run: queue it when the machine is free, follow its training
time in the store, and stop it by the pruning rules (`stop_reason`: the user's Stop, the
budget, the best time so far, the trial's share). No TF here.
"""
from __future__ import annotations

import os
import signal
import threading
import time
from typing import Callable, Optional

from engine.base.errors import ActiveRunError
from engine.config import RunConfig
from engine.store import FINAL_STATUSES, Store

POLL_S = 0.25
# After asking a worker to stop, kill it if it has not ended within this (s): it may be
# tracing its first step, which SIGTERM cannot interrupt, and the budget is the user's.
KILL_AFTER_S = 2.0


def stop_why(stop: Optional[threading.Event]) -> str:
    """Why the search's stop event was set: its `why` (the CLI sets "stopped: the autopilot got
    SIGTERM" for a stop signal; engine.jobs.background.stopped_line), else the user's Stop."""
    return getattr(stop, "why", None) or "stopped by the user"


def stop_reason(elapsed: float, best: Optional[float] = None, limit: Optional[float] = None,
                now: Optional[float] = None, deadline: Optional[float] = None,
                stop_requested: bool | str = False) -> Optional[tuple[str, str]]:
    """Why a live trial must stop now, or None.

    Args: `elapsed` training seconds so far (0: not started); `best` the best time to target so
    far (s); `limit` the trial's share of the budget (training s); `now` and
    `deadline` on one clock (s).
    `stop_requested`: True (the user's Stop) or the line saying why (`stop_why`).
    Returns: (kind, one line); kind 'stopped' (by the user or a signal), 'budget', 'pruned'
    (passed the best time: it cannot win) or 'share', checked in that order.
    """
    if stop_requested:
        return "stopped", stop_requested if isinstance(stop_requested, str) else "stopped by the user"
    # 2 decimals in every line: "pruned at 2.3 s ... than the best (2.33 s)" read as the reverse.
    if deadline is not None and now is not None and now >= deadline:
        if elapsed <= 0:  # nothing stored yet: "after 0.00 s of its training" read as a fault
            return "budget", "the search budget ran out before its training started"
        return "budget", f"the search budget ran out after {elapsed:.2f} s of its training"
    if best is not None and elapsed > best:
        return "pruned", (f"pruned at {elapsed:.2f} s of training: slower than the best time so far "
                          f"({best:.2f} s), it cannot win")
    if limit is not None and elapsed > limit:
        return "share", f"not at the target within its share of the budget ({limit:.2f} s of training)"
    return None


def submit_when_free(cfg: RunConfig, role: str, group: str, store_path, stop: threading.Event,
                      deadline: Optional[float], baseline_id: Optional[int] = None) -> Optional[int]:
    """Queue `cfg`; while another run is active (a user launched one), wait for it.
    Returns the run id, or None when stopped or past `deadline` while waiting."""
    from engine.jobs import runner

    while True:
        try:
            (rid,) = runner.submit([cfg], [role], store_path, baseline_id=baseline_id, group_id=group)
            return rid
        except ActiveRunError:
            if stop.is_set() or (deadline is not None and time.monotonic() >= deadline):
                return None
            time.sleep(1.0)


def _kill(run: dict) -> None:
    from engine.base.process import process_alive

    if run.get("pid") and process_alive(run["pid"], run.get("pid_started")):
        try:
            os.kill(run["pid"], signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def watch_run(run_id: int, store: Store, target: float, best: Optional[float] = None,
              limit: Optional[float] = None, deadline: Optional[float] = None,
              stop: Optional[threading.Event] = None, on_tick: Optional[Callable[[float], None]] = None,
              poll_s: float = POLL_S) -> dict:
    """Follow run `run_id` to its end, stopping it by `stop_reason`.

    Training time so far is read off the store: the newest stored time
    (executions and once-a-second system samples, s since training start) fixes
    the latest possible start, so the elapsed time is never overstated; rows are
    committed twice a second, so a trial is stopped within about a second of
    passing its bound.

    Returns: {'run_id', 'status', 'kind' ('reached' | 'pruned' | 'share' |
    'budget' | 'stopped' | 'not_reached' | 'failed'), 'reason' (one line),
    'time_to_target_sec', 'elapsed_sec' (training s stored), 'wall_sec' (s from
    submission to the end), 'startup_sec' (submission to training start, or None),
    'first_execution_sec' (when the first execution, the warm-up, ended: s since
    training start; None if it never did)}.
    """
    from engine.jobs import runner
    from engine.report.target import time_to_accuracy

    t_submit = time.monotonic()
    start = None          # latest possible training start (monotonic s)
    stopping = None       # (kind, reason, asked at (monotonic s), training s then)
    killed = False
    last_reconcile = 0.0
    while True:
        run = store.get_run(run_id)
        now = time.monotonic()
        if run["status"] in FINAL_STATUSES:
            break
        if now - last_reconcile > 1.0:
            runner.reconcile(store)
            last_reconcile = now
        seen = store.last_t(run_id)
        if seen is not None:
            start = now - seen if start is None else min(start, now - seen)
        elapsed = now - start if start is not None else 0.0
        if stopping is None:
            why = stop_reason(elapsed, best if start is not None else None, limit if start is not None else None,
                              now, deadline, stop_why(stop) if stop is not None and stop.is_set() else False)
            if why:  # a stop signal's line reaches the run too: never "cancelled by the user" for it
                signalled = why[0] == "stopped" and why[1].startswith("stopped: ")
                runner.cancel(run_id, store.path, *((why[1],) if signalled else ()))
                stopping = (*why, now, elapsed)
        elif not killed and now - stopping[2] > KILL_AFTER_S:
            _kill(run)
            killed = True
        if on_tick:
            on_tick(elapsed)
        time.sleep(poll_s)
    epochs = store.metrics("epochs", run_id)
    first = store.metrics("executions", run_id)[:1]
    ttt = time_to_accuracy(epochs, target)
    summary = run.get("summary") or {}
    if ttt is not None:
        kind, reason = "reached", f"reached {target:g} in {ttt:.2f} s of training"
    elif stopping is not None:
        kind, reason = stopping[0], stopping[1]
        used = store.last_t(run_id) or 0.0
        if used - stopping[3] >= 0.1:  # the table shows the training it used: say why it is more
            reason += f"; it stopped at {used:.2f} s, when the execution under way ended"
    elif run["status"] == "completed":
        kind, reason = "not_reached", f"not reached in {summary.get('epochs_run', len(epochs))} epochs"
    elif run["status"] == "failed":
        kind, reason = "failed", f"failed: {run.get('error') or 'no message'}"
    else:  # cancelled by someone else: the autopilot's own Stop (the page cancels the run too), or not
        kind, reason = "stopped", (stop_why(stop) if stop is not None and stop.is_set()
                                   else "cancelled outside the autopilot")
    return {"run_id": run_id, "status": run["status"], "kind": kind, "reason": reason,
            "time_to_target_sec": ttt, "elapsed_sec": store.last_t(run_id) or 0.0,
            "wall_sec": time.monotonic() - t_submit,
            "startup_sec": (start - t_submit) if start is not None else None,
            "first_execution_sec": first[0]["t"] if first else None}


def label_run(store: Store, run_id: int, info: dict) -> None:
    """Record the autopilot's view of a run in its summary (and, for a run it
    stopped, as its error line, which the Runs page shows)."""
    run = store.get_run(run_id) or {}
    cols = {"summary": {**(run.get("summary") or {}), "autopilot": info}}
    if run.get("status") == "cancelled" and info.get("reason"):
        cols["error"] = f"autopilot: {info['reason']}"
    store.update_run(run_id, **cols)
