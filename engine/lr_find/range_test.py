"""LR range test: a short sweep with an exponentially growing learning rate,
and a suggested (maximum) learning rate from its loss curve.  No TensorFlow here.

Method: Smith 2017, "Cyclical Learning Rates for Training Neural Networks"
(arXiv:1506.01186), sec. 3.3 "How can one estimate reasonable minimum and
maximum boundary values?": train for a short while with the LR rising at every
step and read good LR bounds off the loss (or accuracy) curve.  As in fastai's
``lr_find`` (and Leslie Smith's later reports) the LR rises exponentially, from
`min_lr` at the first step to `max_lr` at the last, the loss is smoothed with
a bias-corrected exponential moving average, and the sweep stops early once the
smoothed loss exceeds 4x its minimum (divergence) or is not finite.

The sweep runs in a worker process (``python -m engine.lr_find.worker``), for
the same reasons as training runs (engine.jobs.runner): TF fixes its device layout
per process, and a crash must not take the caller down.  The last result is
kept in ``$SPEEDLAB_HOME/lr-find-latest.json``.

Units: learning rates are in the optimizer's LR units (per step, no scaling
rule applied); losses are the training loss (cross-entropy, with the config's
label smoothing / mixup) in nats per sample, averaged over one global batch.
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import time
from typing import Optional, Sequence

import numpy as np

from engine.jobs import background
from engine.config import ConfigError, RunConfig
from engine.base.errors import ActiveRunError  # no TF: psutil and the store

LATEST_FILE = "lr-find-latest.json"
# Stop when the smoothed loss exceeds this multiple of its minimum (fastai's stop_div).
DIVERGE_FACTOR = 4.0
# suggest(): 'steepest' needs at least this many points up to the loss minimum ...
MIN_DESCENT_POINTS = 5
# ... and the smoothed loss must fall by at least this share of its first value,
# else there is no reliable suggestion at all (NO_SIGNAL).
MIN_RELATIVE_DROP = 0.02
NO_SIGNAL = "no reliable suggestion: the loss did not decrease; check data and labels"
# Sweep bounds accepted by run().
MAX_LR_LIMIT = 10.0
MIN_STEPS, MAX_STEPS = 10, 10_000


class LRFindError(RuntimeError):
    """The sweep could not run or its worker failed (one-line message)."""


class LRFindBusyError(ActiveRunError):
    """A training run is queued or running: an LR sweep now would share the
    CPU/GPU with it and spoil both its measurements and the sweep."""

    def __init__(self, run: dict):
        super().__init__(run)
        self.args = (f"run {run['id']} is {run['status']}: an LR range test now would share the "
                     f"machine with it and spoil both; wait for it to end or cancel it "
                     f"(python -m engine cancel {run['id']})",)

    def __str__(self):
        return self.args[0]


# --- the sweep's LR and smoothing (shared with the worker) ----------------------
def sweep_lr(i: int, steps: int, min_lr: float, max_lr: float) -> float:
    """LR of 0-based step `i` of `steps`: ``min_lr * (max_lr / min_lr) ** (i / (steps - 1))``,
    so step 0 uses min_lr and step steps-1 uses max_lr (a constant factor per step,
    i.e. evenly spaced in log LR)."""
    if steps <= 1:
        return float(min_lr)
    return float(min_lr * (max_lr / min_lr) ** (i / (steps - 1)))


def smoothing_beta(steps: int) -> float:
    """EMA factor for a sweep of `steps` steps: time constant 1/(1-beta) =
    max(1, steps/20) steps, i.e. 1/20 of the sweep's log-LR range, whatever its length.

    fastai uses beta 0.98 (time constant 50 steps) with 100-step sweeps; that
    lags the curve by up to ~half the sweep and shifts the suggestion to larger
    LRs.  Here 100 steps give beta 0.8 (lag ~4 steps = 1/25 of the range);
    1000 steps give fastai's 0.98.
    """
    return 1.0 - 1.0 / max(1.0, steps / 20.0)


class Smoother:
    """Bias-corrected exponential moving average (as Adam's moments and fastai's
    AvgSmoothLoss): ``avg = beta avg + (1 - beta) x``; value ``avg / (1 - beta**n)``
    after n values, so the first value is returned unchanged (no pull towards 0)."""

    def __init__(self, beta: float):
        self.beta = float(beta)
        self.avg = 0.0
        self.n = 0

    def update(self, x: float) -> float:
        self.n += 1
        self.avg = self.beta * self.avg + (1.0 - self.beta) * x
        return self.avg / (1.0 - self.beta ** self.n)


# --- the suggestion ---------------------------------------------------------------
def suggest(lrs: Sequence[float], smoothed_losses: Sequence[Optional[float]]) -> dict:
    """Suggested maximum learning rate from a sweep's smoothed loss curve.

    Two rules, both from the LR range test literature:
      * 'steepest': the LR where the smoothed loss falls fastest per unit of
        log LR, i.e. argmin of d loss / d ln(lr) (central differences,
        ``np.gradient``) over the points before the loss minimum.  The loss
        still drops quickly there and is far from diverging (fastai's 'steep').
      * 'min_over_10': the LR of the minimum smoothed loss divided by 10
        (fastai's 'minimum'): one decade below where training starts to break.

    Points whose LR or loss is missing / not finite (a diverged tail) are
    dropped first.  When the smoothed loss never falls by MIN_RELATIVE_DROP of
    its first value there is no signal: nothing is suggested and the reason is
    NO_SIGNAL ("no reliable suggestion: the loss did not decrease; check data
    and labels"). Otherwise 'steepest' is recommended; 'min_over_10' replaces
    it when the curve is too short (fewer than MIN_DESCENT_POINTS points up to
    the minimum: the loss fell at once, min_lr was already large).

    Args:
        lrs: LR per step (positive, increasing), in LR units.
        smoothed_losses: smoothed training loss per step (None or NaN allowed).
    Returns: {'suggested': LR or None, 'method': 'steepest' | 'min_over_10' |
        None, 'steepest': LR or None, 'steepest_slope': loss change per decade
        of LR at that point (negative) or None, 'min_over_10': LR or None,
        'min_loss_lr', 'min_loss', 'points' (finite points used), 'reason':
        one line on why this method}.
    """
    pts = [(float(lr), float(y)) for lr, y in zip(lrs, smoothed_losses)
           if lr is not None and y is not None and math.isfinite(lr) and lr > 0 and math.isfinite(y)]
    out = {"suggested": None, "method": None, "steepest": None, "steepest_slope": None,
           "min_over_10": None, "min_loss_lr": None, "min_loss": None, "points": len(pts),
           "reason": ""}
    if not pts:
        out["reason"] = "no finite loss values: nothing to suggest"
        return out
    lr = np.array([p[0] for p in pts])
    y = np.array([p[1] for p in pts])
    i_min = int(np.argmin(y))
    out.update(min_loss_lr=float(lr[i_min]), min_loss=float(y[i_min]),
               min_over_10=float(lr[i_min] / 10.0))
    drop = (y[0] - y[i_min]) / max(abs(y[0]), 1e-12)
    if len(pts) >= 2 and i_min >= 1:
        slope = np.gradient(y, np.log(lr))  # loss per unit ln(lr)
        i_st = int(np.argmin(slope[:i_min]))  # strictly before the minimum
        if slope[i_st] < 0:
            out.update(steepest=float(lr[i_st]), steepest_slope=float(slope[i_st] * math.log(10.0)))
    if drop < MIN_RELATIVE_DROP:
        # No signal: a loss that never falls (random labels, broken data) gives no
        # learning rate to recommend, and "start lower" would send the user the wrong way.
        out["reason"] = NO_SIGNAL
        return out
    if out["steepest"] is not None and i_min + 1 >= MIN_DESCENT_POINTS:
        out.update(suggested=out["steepest"], method="steepest",
                   reason="steepest fall of the smoothed loss per decade of LR")
        return out
    why = (f"curve too short: only {i_min + 1} point(s) up to the loss minimum "
           f"(need {MIN_DESCENT_POINTS}); start the sweep lower or use more steps")
    out.update(suggested=out["min_over_10"], method="min_over_10",
               reason=why + "; using the LR of the minimum loss / 10")
    return out


# --- running a sweep ----------------------------------------------------------------
def check_sweep(min_lr: float, max_lr: float, steps: int) -> None:
    """Raise ConfigError unless 0 < min_lr < max_lr <= MAX_LR_LIMIT and
    MIN_STEPS <= steps <= MAX_STEPS."""
    for name, v in (("min_lr (--start-lr)", min_lr), ("max_lr (--end-lr)", max_lr)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) \
                or not 0 < v <= MAX_LR_LIMIT:
            raise ConfigError(name, v, "is out of range", f"use a value in (0, {MAX_LR_LIMIT}]")
    if min_lr >= max_lr:
        raise ConfigError("max_lr (--end-lr)", max_lr, f"is not above min_lr {min_lr}",
                          "the sweep must end above where it starts (e.g. 1e-6 to 1)")
    if isinstance(steps, bool) or not isinstance(steps, int) or not MIN_STEPS <= steps <= MAX_STEPS:
        raise ConfigError("steps", steps, "is out of range",
                          f"use a whole number between {MIN_STEPS} and {MAX_STEPS} (about 100 is typical)")


STOP_POLL_S = 0.25  # how often a running test looks at its stop event


def run(cfg: RunConfig, min_lr: float = 1e-6, max_lr: float = 1.0, steps: int = 100,
        timeout_s: float = 300, stop=None) -> dict:
    """Run an LR range test for `cfg` in a worker process and save the result.

    The worker trains cfg's model on cfg's training data (repeated as needed)
    for up to `steps` batches, the LR rising exponentially from `min_lr` to
    `max_lr` (see `sweep_lr`), with schedule, warmup, LR scaling and plateau
    reduction off and steps_per_execution 1; it stops early on divergence.

    Returns: {'lr', 'loss', 'smoothed' (lists, one per step done; None for a
        non-finite loss), 'stopped' ('end' | 'diverged' | 'nan'), 'beta',
        'device_kind', 'replicas', 'sweep_sec', 'min_lr', 'max_lr', 'steps',
        'config' (cfg.to_dict()), 'warnings', 'suggestion' (see `suggest`),
        'created' (s since the epoch)}; also saved as $SPEEDLAB_HOME/lr-find-latest.json.
    Raises: ConfigError (bad sweep settings, or the machine cannot run cfg);
        LRFindBusyError (an engine.jobs.runner.ActiveRunError) while a training run is queued
        or running in the store; LRFindError when the worker fails or takes
        longer than `timeout_s` seconds, or when `stop` (a threading.Event) is set
        (the worker is killed within STOP_POLL_S).
    """
    from engine.jobs.runner import active_run
    from engine.config.preflight import check_runnable
    from engine.base.process import worker_env
    from engine.store import Store

    check_sweep(min_lr, max_lr, steps)
    warnings = check_runnable(cfg)
    store = Store()
    try:
        busy = active_run(store)
    finally:
        store.close()
    if busy:
        raise LRFindBusyError(busy)
    job = {"config": cfg.to_dict(), "min_lr": float(min_lr), "max_lr": float(max_lr), "steps": int(steps)}
    t0 = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "engine.lr_find.worker"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env())
    feed = json.dumps(job)
    try:
        while True:  # in short waits, so that `stop` is seen (retrying loses no output)
            try:
                out, err = proc.communicate(feed, timeout=STOP_POLL_S)
                break
            except subprocess.TimeoutExpired:
                feed = None  # sent with the first call
                if stop is not None and stop.is_set():
                    raise LRFindError("LR range test stopped") from None
                if time.monotonic() - t0 > timeout_s:
                    raise LRFindError(f"LR range test took longer than {timeout_s:.0f} s; "
                                      f"use fewer --steps or a larger --timeout") from None
    finally:
        if proc.poll() is None:  # e.g. KeyboardInterrupt while waiting
            proc.kill()
            proc.wait()
    res = None
    for line in reversed(out.splitlines()):
        if line.startswith("{"):
            res = json.loads(line)
            break
    if res is None or "error" in res:
        if res is not None:
            raise LRFindError(f"LR range test failed: {res['error']}")
        tail = (err.strip().splitlines() or [""])[-1]
        raise LRFindError(f"LR range test worker exited with code {proc.returncode}: {tail[:300]}")
    res.update(min_lr=float(min_lr), max_lr=float(max_lr), steps=int(steps), config=cfg.to_dict(),
               warnings=warnings, suggestion=suggest(res["lr"], res["smoothed"]),
               created=time.time(), wall_sec=time.monotonic() - t0)
    save(res)
    return res


def save(result: dict) -> str:
    """Write `result` to $SPEEDLAB_HOME/lr-find-latest.json (atomically); returns the path."""
    from engine.store import home

    h = home()
    h.mkdir(parents=True, exist_ok=True)
    path = h / LATEST_FILE
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(result))
    os.replace(tmp, path)
    return str(path)


def load_latest() -> Optional[dict]:
    """The last saved sweep (as returned by `run`), or None."""
    from engine.store import home

    try:
        return json.loads((home() / LATEST_FILE).read_text())
    except (OSError, ValueError):
        return None


# --- in the background, for the dashboard ------------------------------------------
CONFIG_FILE = "lr-find-config.json"


def start_background(cfg: RunConfig, min_lr: float = 1e-6, max_lr: float = 1.0,
                     steps: int = 100, timeout_s: float = 300) -> int:
    """Start ``python -m engine lr-find --json --config FILE`` detached (its own
    session: it outlives the caller) and return its pid. It saves its result
    as `run` does (`load_latest`); follow it with `read_progress`.

    Raises: ConfigError (bad sweep settings, or the machine cannot run cfg);
        LRFindError (one line) while a training run is queued or running, or
        a benchmark or another LR range test is running.
    """
    from engine.config.preflight import check_runnable
    from engine.store import home

    check_sweep(min_lr, max_lr, steps)
    check_runnable(cfg)
    h = home()
    h.mkdir(parents=True, exist_ok=True)
    cfg_path = h / CONFIG_FILE
    return background.LR_FIND.start(
        ["lr-find", "--json", "--progress-file", str(background.LR_FIND.path()), "--config", str(cfg_path),
         "--start-lr", repr(float(min_lr)), "--end-lr", repr(float(max_lr)), "--steps", str(int(steps)),
         "--timeout", str(timeout_s)],
        {"steps": int(steps), "min_lr": float(min_lr), "max_lr": float(max_lr),
         "config": cfg.to_dict(), "error": None}, error=LRFindError,
        inputs={cfg_path: cfg.to_dict()})


def read_progress() -> Optional[dict]:
    """The background LR range test's state, or None if none was started here.

    Returns: {'state': 'running' | 'done' | 'failed' | 'cancelled', 'elapsed'
    (s), 'steps', 'config', 'error' (one line, from the CLI's 'error:' line),
    ...}. 'done' once its process ended and a result newer than its start is
    saved (`load_latest`).
    """
    path = background.LR_FIND.path()
    job = background.read_json(path)
    if not job:
        return None
    if job.get("state") in background.ACTIVE_STATES and job.get("pid") and not background.alive(job):
        latest = load_latest() or {}
        done = (latest.get("created") or 0) >= job.get("started", 0)
        job.update(state="done" if done else "failed", finished=time.time(),
                   error=None if done else ("the LR range test ended without a result: "
                                            f"{background.last_error(job.get('log')) or 'no message'}"))
        background.write_json(path, job)
    return background.check(job, "LR range test")


def cancel_background() -> bool:
    """Stop the running background LR range test. Returns whether one was running."""
    return background.LR_FIND.cancel()
