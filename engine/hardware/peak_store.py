"""Where this machine's peak figures are kept: with the machine record in
$SPEEDLAB_HOME/hardware.json, under 'peak|<machine key>' (engine.hardware.verdicts.cache_key):

    {'clock': {'clock_hz', 'measured_at', 'method'},          # engine.hardware.clock
     'best_matmul': engine.hardware.matmul_peak.measure's result, measured on a quiet machine}

The theoretical CPU peak (MFU's denominator) is cores x this clock x FLOPs per cycle
(engine.hardware.peaks). The clock is measured once (0.2 s, no TensorFlow) by the hardware
check or, on a machine never checked, by the first run's worker after its clock stopped.
The best matmul is the hardware check's alone: a measurement taken while other work shared
the machine (`under_load`) is returned marked and never kept, and a later quiet one
replaces the kept one (it does not only ratchet up), so every run divides by figures of
the same kind. Reading needs no TensorFlow.
"""
from __future__ import annotations

import json
import os
import time
from typing import Optional

LOAD_SHARE = 0.25  # other processes' CPU time over the measurement, per usable CPU: above it, "under load"


def _key() -> str:
    from engine.hardware.verdicts import cache_key

    return "peak|" + cache_key()


def record() -> dict:
    """This machine's stored peak record ({} when none)."""
    from engine.hardware.verdicts import _load_cache, cache_path

    rec = _load_cache(cache_path()).get(_key())
    return rec if isinstance(rec, dict) else {}


def _write(update: dict) -> dict:
    from engine.hardware.verdicts import _load_cache, cache_path

    path = cache_path()
    cache = _load_cache(path)
    rec = cache.get(_key()) if isinstance(cache.get(_key()), dict) else {}
    rec = {k: v for k, v in rec.items() if k in ("clock", "best_matmul")}  # drop the old layout's keys
    rec.update(update)
    cache[_key()] = rec
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return rec


def cpu_clock(measure: bool = True, again: bool = False) -> Optional[dict]:
    """The stored CPU clock {'clock_hz', 'measured_at', 'method'}, measuring and storing it
    when there is none (or `again`) and `measure`; None where it cannot be measured."""
    have = record().get("clock")
    if have and have.get("clock_hz") and not again:
        return have
    if not measure:
        return have
    from engine.hardware import clock

    got = clock.measure()
    if not got["clock_hz"]:
        return None
    row = {"clock_hz": got["clock_hz"], "measured_at": round(time.time(), 3), "method": got["method"]}
    _write({"clock": row})
    return row


def fingerprint_with_clock() -> dict:
    """This machine's fingerprint (engine.hardware.fingerprint) plus 'clock_ghz', the clock
    stored here (never measured now: None when none is stored): what a run's environment keeps."""
    from engine.hardware.fingerprint import fingerprint

    clk = (record().get("clock") or {}).get("clock_hz")
    return {**fingerprint(), "clock_ghz": round(clk / 1e9, 3) if clk else None}


def cpu_theoretical(measure_clock: bool = True) -> dict:
    """engine.hardware.peaks.cpu_theoretical for this machine: the cores the worker may use
    (affinity, cgroup quota, over SMT siblings) x the stored (or now measured) clock x
    FLOPs per cycle from the flags."""
    from engine.hardware import machine, peaks

    ident = machine.cpu_ident()
    cores = peaks.cpu_cores(machine.cpu_facts()["usable_cpus"], ident["threads_per_core"])
    clk = cpu_clock(measure=measure_clock)
    return peaks.cpu_theoretical(cores, (clk or {}).get("clock_hz"), machine.cpu_flags(), ident["vendor"],
                                 ident["family"])


def best_matmul(device_kind: Optional[str] = None) -> Optional[dict]:
    """The kept best-matmul measurement (matmul_peak.measure layout) on `device_kind`, or None."""
    got = record().get("best_matmul")
    if not got or (device_kind and got.get("device") != device_kind):
        return None
    return got


def best_matmul_rate(device_kind: str, dtype: str) -> Optional[tuple[float, int]]:
    """(FLOP/s, n) of the kept best matmul on `device_kind` in `dtype`, or None."""
    row = ((best_matmul(device_kind) or {}).get("dtypes") or {}).get(dtype) or {}
    return (row["flops_per_sec"], row.get("n")) if row.get("flops_per_sec") else None


def keep_best_matmul(result: dict) -> dict:
    """Keep `result` (matmul_peak.measure's, with 'under_load') as this machine's best matmul
    unless it was measured under load; returns it with 'kept' (bool) added."""
    if result.get("under_load") or not any((r or {}).get("flops_per_sec") for r in result.get("dtypes", {}).values()):
        return {**result, "kept": False}
    _write({"best_matmul": result})
    return {**result, "kept": True}


class LoadMeter:
    """Other processes' CPU use while a measurement runs: `with LoadMeter() as m: ...`, then
    m.share (CPUs' worth of others' busy time per usable CPU, 0..1) and m.under_load."""

    def __enter__(self):
        import psutil

        self._proc = psutil.Process()
        self._t0, self._sys0, self._own0 = time.perf_counter(), psutil.cpu_times(), self._own()
        return self

    def _own(self) -> float:
        t = self._proc.cpu_times()
        return t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)

    def __exit__(self, *exc):
        import psutil

        from engine.hardware.machine import cpu_facts

        sys1, wall = psutil.cpu_times(), time.perf_counter() - self._t0
        busy = (sys1.user + sys1.system + getattr(sys1, "nice", 0.0)) - \
            (self._sys0.user + self._sys0.system + getattr(self._sys0, "nice", 0.0))
        others = max(busy - (self._own() - self._own0), 0.0)
        cpus = max(cpu_facts()["logical_cores"], 1)
        self.share = min(others / max(wall * cpus, 1e-9), 1.0)
        self.under_load = self.share > LOAD_SHARE
        return False
