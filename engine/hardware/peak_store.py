"""Where the measured peak is kept: with the machine record in $SPEEDLAB_HOME/hardware.json.

The hardware check stores its matmul peak in its facts ('peak'). A run on a machine
never checked measures the dtype it needs in its worker, after its clock stopped
(engine.jobs.worker), and keeps it under 'peak|<machine key>' in the same file, so
later runs reuse one figure and their MFUs compare. Reading needs no TensorFlow.
"""
from __future__ import annotations

import json
import os
from typing import Optional

WORKER_BUDGET_S = 1.5


def _key() -> str:
    from engine.hardware.verdicts import cache_key

    return "peak|" + cache_key()


def _rate(p: Optional[dict], dtype: str) -> float:
    return ((p or {}).get("dtypes") or {}).get(dtype, {}).get("flops_per_sec") or 0.0


def stored_peak(device_kind: Optional[str] = None, dtype: Optional[str] = None) -> Optional[dict]:
    """Of the hardware check's peak and the one workers measured, the one on `device_kind`
    with the higher `dtype` rate (a peak is what the hardware *can* do: a measurement
    taken while other work shared the machine reads low); else either (None without both)."""
    from engine.hardware.verdicts import _load_cache, cache_key, cache_path

    cache = _load_cache(cache_path())
    probe = (cache.get(cache_key()) or {}).get("peak")
    worker = cache.get(_key())
    fits = [p for p in (probe, worker) if p and (device_kind is None or p.get("device") == device_kind)
            and (dtype is None or _rate(p, dtype))]
    if fits:
        return max(fits, key=lambda p: _rate(p, dtype)) if dtype else fits[0]
    return probe or worker


def ensure_peak(backend: str, device_kind: str, dtype: str, device_name: Optional[str], where: str,
                again: bool = False) -> Optional[dict]:
    """The stored peak with `dtype` on `device_kind`, measuring it now (imports `backend`:
    worker processes only, about WORKER_BUDGET_S s) and storing it when there is none,
    or when `again` (a run went faster than the stored peak: it was measured under load);
    a new measurement replaces the worker's figure only where it is higher.
    None for a device kind that cannot be timed here (TPU)."""
    have = stored_peak(device_kind, dtype)
    if not again and have and have.get("device") == device_kind and _rate(have, dtype):
        return have
    if device_kind not in ("CPU", "GPU"):
        return None
    from engine.hardware import matmul_peak
    from engine.hardware.verdicts import _load_cache, cache_path

    got = matmul_peak.measure(backend, device_kind, device_name, {dtype: None}, WORKER_BUDGET_S, where=where)
    if not (got["dtypes"].get(dtype) or {}).get("flops_per_sec"):
        return None
    path = cache_path()
    cache = _load_cache(path)
    old = cache.get(_key())
    if old and old.get("device") == device_kind and old.get("backend") == backend:
        if _rate(old, dtype) >= _rate(got, dtype):
            return stored_peak(device_kind, dtype)  # the earlier measurement stands
        got["dtypes"] = {**old.get("dtypes", {}), **got["dtypes"]}
    cache[_key()] = got
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    tmp.write_text(json.dumps(cache, indent=1, sort_keys=True))
    os.replace(tmp, path)
    return stored_peak(device_kind, dtype)
