"""The what-if scaling forecast (engine.report.forecast): Amdahl's law on the parallel
part plus a ring all-reduce cost, with hand-computed figures."""
from __future__ import annotations

import pytest

from engine.config import RunConfig
from engine.report import forecast as fc


def test_ring_factor():
    assert [fc.ring_factor(n) for n in (1, 2, 4, 8)] == [0.0, 1.0, 1.5, 1.75]


def test_physical_devices_shrink_the_parallel_part_only():
    # t1 = 10 ms, 20% data wait (serial): s = 2 ms, p = 8 ms; c2 = 1 ms.
    # 4 devices: 2 + 8/4 + 1 * 1.5 = 5.5 ms -> 10 / 5.5 = 1.818x
    assert fc.step_time(0.010, 0.2, 0.001, 4, shared=False) == pytest.approx(0.0055)
    assert fc.speedup(0.010, 0.2, 0.001, 4) == pytest.approx(10 / 5.5)
    # 8 devices: 2 + 1 + 1.75 = 4.75 ms
    assert fc.speedup(0.010, 0.2, 0.001, 8) == pytest.approx(10 / 4.75)
    # Amdahl's limit without communication: 1 / s = 5x
    assert fc.speedup(0.010, 0.2, 0.0, 10_000) == pytest.approx(1 / (0.2 + 0.8 / 10_000))


def test_simulated_devices_share_one_peak_so_only_communication_changes():
    # 4 simulated: 2 + 8 + 1.5 = 11.5 ms -> 0.870x
    assert fc.speedup(0.010, 0.2, 0.001, 4, shared=True) == pytest.approx(10 / 11.5)
    assert fc.derive_c2(0.010, 0.2, 0.0115 - 0.0005, shared=True) == pytest.approx(0.001)
    assert fc.derive_c2(0.010, 0.2, 0.0061, shared=False) == pytest.approx(0.0061 - 0.006)


def _run(rid, devices, rate, replicas, simulated=True, share=0.1):
    return {"id": rid, "status": "completed",
            "config": RunConfig(dataset="digits", model="cnn", devices=devices).to_dict(),
            "summary": {"samples_per_sec": rate, "global_batch_size": 128, "replicas": replicas,
                        "replicas_simulated": simulated, "data_wait_share": share}}


def test_forecast_derives_c2_from_the_two_replica_run():
    one, two = _run(1, 1, 6_400.0, 1), _run(2, 2, 5_120.0, 2)
    f = fc.forecast(one, [one, two], ns=(1, 2, 4))
    t1, t2 = 128 / 6_400, 128 / 5_120                 # 20 ms, 25 ms
    assert f["t1"] == pytest.approx(t1)
    assert f["c2"] == pytest.approx(t2 - t1)          # simulated: 5 ms beyond the shared step
    assert f["shared"] and f["two_id"] == 2
    assert dict(f["simulated"])[2] == pytest.approx(t1 / t2)                 # matches by construction
    assert dict(f["simulated"])[4] == pytest.approx(t1 / (t1 + 1.5 * (t2 - t1)))
    assert dict(f["physical"])[4] == pytest.approx(t1 / (0.1 * t1 + 0.9 * t1 / 4 + 1.5 * (t2 - t1)))


def test_forecast_needs_a_one_replica_run_and_says_when_c2_is_missing():
    one = _run(1, 1, 6_400.0, 1)
    assert fc.forecast(_run(3, 2, 5_000.0, 2), [one]) is None
    other = _run(4, 2, 5_000.0, 2)
    other["config"]["batch_size"] = 64                # not the same configuration
    f = fc.forecast(one, [other])
    assert f["c2"] == 0 and f["two_id"] is None and "communication left out" in f["c2_source"]
    # The caption is words, no variable name (issue 57: "c2 no 2-replica run").
    assert ("ring all-reduce: no 2-replica run of this configuration, so communication left out."
            in fc.caption(f)) and "c2" not in fc.caption(f)


def test_auto_and_cpu_device_types_match_on_the_same_device_kind():
    one, two, gpu = _run(1, 1, 6_400.0, 1), _run(2, 2, 5_120.0, 2), _run(3, 2, 12_800.0, 2, simulated=False)
    two["config"]["device_type"] = "cpu"
    for r, kind in ((one, "CPU"), (two, "CPU"), (gpu, "GPU")):
        r["summary"]["device_kind"] = kind
    assert fc.forecast(one, [gpu, two])["two_id"] == 2
    assert fc.forecast(one, [gpu])["two_id"] is None
