"""This machine's peak figures (engine.hardware.peak_store): the measured clock behind the
theoretical CPU peak, and the best matmul, kept only when measured on a quiet machine and
replaced (not ratcheted) by a later quiet measurement."""
from __future__ import annotations

import json

from engine.hardware import clock, peak_store
from engine.hardware.verdicts import cache_key, cache_path


def _matmul(rate, under_load=False, dtype="float32", n=2048):
    return {"backend": "tensorflow", "device": "CPU", "where": "hardware check", "under_load": under_load,
            "dtypes": {dtype: {"flops_per_sec": rate, "n": n}}}


def test_best_matmul_under_load_is_marked_and_not_kept_and_a_quiet_one_replaces_the_kept_one(store_home):
    assert peak_store.keep_best_matmul(_matmul(200e9))["kept"] is True
    assert peak_store.best_matmul_rate("CPU", "float32") == (200e9, 2048)
    got = peak_store.keep_best_matmul(_matmul(90e9, under_load=True))
    assert got["kept"] is False and got["under_load"] is True
    assert peak_store.best_matmul_rate("CPU", "float32") == (200e9, 2048)   # the load's figure is not the machine's
    peak_store.keep_best_matmul(_matmul(180e9, n=1024))                     # quiet, lower: it replaces (no ratchet)
    assert peak_store.best_matmul_rate("CPU", "float32") == (180e9, 1024)
    assert peak_store.best_matmul_rate("GPU", "float32") is None
    assert peak_store.best_matmul_rate("CPU", "bfloat16") is None


def test_the_clock_is_measured_once_and_stored_beside_the_old_layout(store_home, monkeypatch):
    cache_path().parent.mkdir(parents=True, exist_ok=True)
    # A record of the old layout (a worker's matmul peak) is dropped on the first write.
    cache_path().write_text(json.dumps({"peak|" + cache_key(): {"device": "CPU", "dtypes": {}}}))
    calls = []

    def fake(repeats=200, loops=20_000):
        calls.append(1)
        return {"clock_hz": 3.6e9, "method": "dependent add chain", "error": None}

    monkeypatch.setattr(clock, "measure", fake)
    assert peak_store.cpu_clock()["clock_hz"] == 3.6e9
    assert peak_store.cpu_clock()["clock_hz"] == 3.6e9 and len(calls) == 1   # stored: not measured again
    assert peak_store.cpu_clock(measure=False)["clock_hz"] == 3.6e9
    assert set(peak_store.record()) == {"clock"}
    theo = peak_store.cpu_theoretical(measure_clock=False)
    assert theo["float32"]["clock_hz"] == 3.6e9 and theo["float32"]["flops_per_sec"] == (
        theo["float32"]["cores"] * 3.6e9 * theo["float32"]["flops_per_cycle"])
