"""Where the measured peak is kept (engine.hardware.peak_store) and which one a run uses:
the higher of the hardware check's and the workers' (a peak read under load is low)."""
from __future__ import annotations

import json

from engine.hardware import matmul_peak, peak_store
from engine.hardware.verdicts import cache_key, cache_path


def _peak(rate, where="hardware check", dtype="float32"):
    return {"backend": "tensorflow", "device": "CPU", "n": 1024, "where": where,
            "dtypes": {dtype: {"flops_per_sec": rate}}}


def _write(cache):
    cache_path().parent.mkdir(parents=True, exist_ok=True)
    cache_path().write_text(json.dumps(cache))


def test_the_higher_of_probe_and_worker_peaks_is_used(store_home):
    _write({cache_key(): {"peak": _peak(40e9)}, "peak|" + cache_key(): _peak(60e9, "run #1's worker")})
    assert peak_store.stored_peak("CPU", "float32")["where"] == "run #1's worker"
    assert peak_store.stored_peak("GPU", "float32") is not None  # no GPU peak: either, for the caller to reject
    _write({cache_key(): {"peak": _peak(80e9)}, "peak|" + cache_key(): _peak(60e9, "run #1's worker")})
    assert peak_store.stored_peak("CPU", "float32")["where"] == "hardware check"


def test_ensure_peak_measures_once_and_keeps_the_higher_figure(store_home, monkeypatch):
    rates = iter([50e9, 30e9, 70e9])
    calls = []

    def fake(backend, kind, name, dtypes, budget, where):
        calls.append(dtypes)
        return {**_peak(next(rates), where), "device_name": name}

    monkeypatch.setattr(matmul_peak, "measure", fake)
    assert peak_store.ensure_peak("tensorflow", "CPU", "float32", "CPU", "run #1")["dtypes"]["float32"][
        "flops_per_sec"] == 50e9
    assert peak_store.ensure_peak("tensorflow", "CPU", "float32", "CPU", "run #2")["where"] == "run #1"
    assert len(calls) == 1  # stored: not measured again
    # Asked again (a run beat the peak): a lower new figure does not replace the stored one ...
    assert peak_store.ensure_peak("tensorflow", "CPU", "float32", "CPU", "run #3", again=True)["where"] == "run #1"
    # ... a higher one does.
    assert peak_store.ensure_peak("tensorflow", "CPU", "float32", "CPU", "run #4", again=True)["dtypes"]["float32"][
        "flops_per_sec"] == 70e9
    assert calls == [{"float32": None}] * 3
    assert peak_store.ensure_peak("tensorflow", "TPU", "bfloat16", "TPU", "run #5") is None
