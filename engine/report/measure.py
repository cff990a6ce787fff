"""Throughput arithmetic: what the product is judged on, kept free of TF so it
can be tested against hand-computed numbers.

Definitions (see docs/measuring.md):
- an *execution* is one call of the compiled train function, running
  ``steps_per_execution`` batches (fewer at the end of an epoch);
- samples/s of an execution = batches x global batch / its duration (s);
- the first execution of a run (tracing, compilation, allocator and input
  pipeline warm-up) is the *warm-up*, reported as ``warmup_sec`` and left out
  of the steady state; so is the first execution after a recompile (a
  transfer-learning run recompiles when it unfreezes its taken-over layers),
  passed as per-execution warm-up flags;
- steady-state throughput = median samples/s over all later executions.
"""
from __future__ import annotations

import statistics
from typing import Optional, Sequence


def execution_rate(batches: int, global_batch: int, duration_s: float) -> float:
    """samples/s of one execution of `batches` batches of `global_batch` samples."""
    if duration_s <= 0:
        raise ValueError(f"duration must be > 0 s, got {duration_s}")
    return batches * global_batch / duration_s


def steady_state(durations_s: Sequence[float], batches: Sequence[int], global_batch: int,
                 warmup_executions: int = 1, warmup_flags: Optional[Sequence] = None,
                 samples: Optional[Sequence[float]] = None) -> dict:
    """Warm-up and steady-state figures of one run.

    Args:
        durations_s: seconds per execution, in order.
        batches: batches in each execution (same length).
        global_batch: samples per batch over all replicas.
        warmup_executions: leading executions counted as warm-up (1).
        warmup_flags: per execution, truthy = warm-up (overrides
            warmup_executions; e.g. the store's ``warmup`` column).
        samples: samples really trained per execution; default batches x
            global_batch (give it when an epoch ends in a short batch).

    Returns: dict with ``warmup_sec`` (s, all warm-up executions together),
    ``samples_per_sec`` (median of the
    steady executions, samples/s), ``samples_per_sec_mean`` (steady samples /
    steady seconds), ``samples_per_sec_iqr`` ((q1, q3)), ``steady_executions``.
    Throughputs are None when there is no steady execution.
    """
    if len(durations_s) != len(batches):
        raise ValueError("durations and batches differ in length")
    if warmup_flags is None:
        w = min(warmup_executions, len(durations_s))
        warm = [i < w for i in range(len(durations_s))]
    else:
        if len(warmup_flags) != len(durations_s):
            raise ValueError("warmup_flags and durations differ in length")
        warm = [bool(f) for f in warmup_flags]
    if samples is None:
        samples = [b * global_batch for b in batches]
    elif len(samples) != len(durations_s):
        raise ValueError("samples and durations differ in length")
    steady_d = [d for d, f in zip(durations_s, warm) if not f]
    steady_s = [n for n, f in zip(samples, warm) if not f]
    rates = [execution_rate(n, 1, d) for n, d in zip(steady_s, steady_d)]
    out = {"warmup_sec": float(sum(d for d, f in zip(durations_s, warm) if f)), "steady_executions": len(rates),
           "samples_per_sec": None, "samples_per_sec_mean": None, "samples_per_sec_iqr": None}
    if rates:
        out["samples_per_sec"] = float(statistics.median(rates))
        out["samples_per_sec_mean"] = sum(steady_s) / sum(steady_d)
        if len(rates) >= 2:
            q = statistics.quantiles(rates, n=4, method="inclusive")
            out["samples_per_sec_iqr"] = (float(q[0]), float(q[2]))
        else:
            out["samples_per_sec_iqr"] = (rates[0], rates[0])
    return out


def steady_state_arrays(durations_s, samples, warm) -> dict:
    """`steady_state` of NumPy arrays, the same figures to the last bit, in a few
    vectorised passes: a live page recomputes it every second over every execution
    of a long run, where the Python lists cost ~15 ms and ~20 MB of floats per 100,000.

    Args: durations_s (s), samples (samples trained) and warm (bool, warm-up) per
    execution, each a 1-D array of the same length.
    Raises: ValueError for a steady duration <= 0 (as execution_rate).
    """
    import numpy as np

    d = np.asarray(durations_s, dtype=float)
    n = np.asarray(samples, dtype=float)
    w = np.asarray(warm, dtype=bool)
    if not (len(d) == len(n) == len(w)):
        raise ValueError("durations, samples and warm-up flags differ in length")
    sd, sn = d[~w], n[~w]
    bad = np.flatnonzero(sd <= 0)
    if len(bad):
        raise ValueError(f"duration must be > 0 s, got {float(sd[bad[0]])}")

    def total(x) -> float:  # left to right, as Python's sum of floats (3.11)
        return float(np.cumsum(x)[-1]) if len(x) else 0.0

    out = {"warmup_sec": total(d[w]), "steady_executions": int(len(sd)),
           "samples_per_sec": None, "samples_per_sec_mean": None, "samples_per_sec_iqr": None}
    if len(sd):
        rates = np.sort(sn * 1 / sd)
        k = len(rates)
        mid = k // 2
        out["samples_per_sec"] = float(rates[mid]) if k % 2 else float((rates[mid - 1] + rates[mid]) / 2)
        out["samples_per_sec_mean"] = total(sn) / total(sd)
        if k >= 2:  # statistics.quantiles(n=4, method="inclusive")
            m = k - 1
            q = []
            for i in (1, 3):
                j, delta = divmod(i * m, 4)
                q.append(float((rates[j] * (4 - delta) + rates[j + 1] * delta) / 4) if delta else
                         float((rates[j] * 4 + rates[min(j + 1, m)] * 0) / 4))
            out["samples_per_sec_iqr"] = (q[0], q[1])
        else:
            out["samples_per_sec_iqr"] = (float(rates[0]), float(rates[0]))
    return out


def speedup(baseline_rate: Optional[float], rate: Optional[float]) -> Optional[float]:
    """Throughput speedup = rate / baseline_rate (None if either is missing)."""
    if not baseline_rate or rate is None:
        return None
    return rate / baseline_rate


def time_left(steps_done: int, total_steps: int, steady_rate_steps_per_s: Optional[float]) -> Optional[float]:
    """Seconds left at the steady step rate (None before the rate is known)."""
    if not steady_rate_steps_per_s or steady_rate_steps_per_s <= 0:
        return None
    return max(total_steps - steps_done, 0) / steady_rate_steps_per_s
