"""What-if scaling: the N-replica speedup predicted from a one-device run's measured split
and a measured all-reduce cost (Amdahl's law on the parallel part, plus communication).
No TensorFlow.

At a fixed global batch (SpeedLab's data parallelism splits it over the replicas), one
steady step of the one-device run takes t1 = global batch / samples/s, of which the
data wait (summary 'data_wait_share', the host's input pipeline: one for all replicas)
is serial and the rest is parallel:

    t_N = s + p / k(N) + c(N),      speedup(N) = t1 / t_N

    s = data_wait_share x t1,  p = t1 - s,
    k(N) = N for N physical devices; 1 for N simulated devices carved out of one
           (they share its cores: the parallel part does not shrink),
    c(N) = c2 x 2(N - 1) / N: a ring all-reduce moves 2(N - 1)/N of the gradient per
           replica (Patarasuk and Yuan, 2009), so c(2) = c2, the measured 2-replica cost.

c2 is derived from a stored 2-replica run of the same configuration: what its steady step
took beyond s + p / k(2). The forecast at 2 replicas then matches that run by construction;
4 and more are predictions (benchmarks/scaling_forecast.py prints them against measured runs).
"""
from __future__ import annotations

from typing import Iterable, Optional

from engine.report.headline import PAGE_SIGN, ratio_text


def ring_factor(n: int) -> float:
    """All-reduce traffic per replica relative to 2 replicas: 2(n - 1)/n (1 at n = 2, 0 at n = 1)."""
    return 2 * (n - 1) / n


def step_time(t1: float, serial_share: float, c2: float, n: int, shared: bool) -> float:
    """Predicted steady step time (s) on `n` replicas; see the module docstring."""
    s = serial_share * t1
    p = t1 - s
    return s + p / (1 if shared else n) + c2 * ring_factor(n)


def speedup(t1: float, serial_share: float, c2: float, n: int, shared: bool = False) -> float:
    """t1 / t_N: the forecast speedup of `n` replicas over one device."""
    return t1 / step_time(t1, serial_share, c2, n, shared)


def derive_c2(t1: float, serial_share: float, t2: float, shared: bool) -> float:
    """The 2-replica all-reduce cost (s per step) a measured 2-replica step time `t2` implies:
    t2 - (s + p / k(2)), at least 0."""
    s = serial_share * t1
    return max(t2 - (s + (t1 - s) / (1 if shared else 2)), 0.0)


def _step(summary: dict) -> Optional[float]:
    rate, batch = summary.get("samples_per_sec"), summary.get("global_batch_size")
    return batch / rate if rate and batch else None


def _same_but_devices(a: dict, b: dict) -> bool:
    """Same config but for the device count ('auto' and 'cpu' alike: the runs' device kinds are compared apart)."""
    skip = {"devices", "device_type"}
    return {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}


def forecast(one: dict, runs: Iterable[dict], ns: Iterable[int] = (1, 2, 4, 8)) -> Optional[dict]:
    """The forecast from run `one` (a finished one-replica run: store row with config and
    summary) and the first finished 2-replica run among `runs` with the same config
    otherwise (for c2; without one c2 = 0 and the forecast says so).

    Returns: {'t1' (s), 'serial_share', 'c2' (s), 'c2_source' (words a reader reads: no symbol), 'shared' (the
    2-replica run's devices were simulated), 'physical': [(n, speedup)] for n physical
    devices like this one, 'simulated': [(n, speedup)] for n simulated on this one};
    None when `one` has no steady state or more than one replica.
    """
    s1 = one.get("summary") or {}
    t1 = _step(s1)
    if t1 is None or (s1.get("replicas") or 1) != 1:
        return None
    share = s1.get("data_wait_share") or 0.0
    two = next((r for r in runs if r.get("status") == "completed" and (r.get("summary") or {}).get("replicas") == 2
                and _same_but_devices(r["config"], one["config"]) and _step(r.get("summary") or {})
                and r["summary"].get("device_kind") == s1.get("device_kind")), None)
    if two is not None:
        shared = bool(two["summary"].get("replicas_simulated"))
        c2 = derive_c2(t1, share, _step(two["summary"]), shared)
        source = (f"the all-reduce cost measured by run #{two['id']} (2 {'simulated ' if shared else ''}replicas): "
                  f"{c2 * 1e3:.3g} ms per step")
    else:
        shared, c2 = True, 0.0
        source = "no 2-replica run of this configuration, so communication left out"
    ns = list(ns)
    return {"t1": t1, "serial_share": share, "c2": c2, "c2_source": source, "shared": shared,
            "one_id": one.get("id"), "two_id": two["id"] if two is not None else None,
            "physical": [(n, speedup(t1, share, c2, n, shared=False)) for n in ns],
            "simulated": [(n, speedup(t1, share, c2, n, shared=True)) for n in ns]}


def caption(fc: dict) -> str:
    """One line under the scaling chart: what the forecast assumed and where c2 came from."""
    at = dict(fc["physical"])
    best = max(at)
    return (f"Purple: a **forecast**, not a measurement. Amdahl's law on run #{fc['one_id']}'s steady step "
            f"({fc['t1'] * 1e3:.3g} ms, {100 * fc['serial_share']:.2g}% data wait kept serial) plus a ring "
            f"all-reduce: {fc['c2_source']}. Dashed: N devices like this one ({ratio_text(at[best], PAGE_SIGN)} on {best}); "
            "dotted: N simulated on this one (they share its cores).")
