"""Throughput arithmetic against hand-computed values."""
import pytest

from engine.report.measure import execution_rate, speedup, steady_state, time_left


def test_issue_example_20_executions_batch_64():
    # First execution 5 s (warm-up), then 19 x 0.05 s of one batch of 64: 64 / 0.05 = 1280 samples/s.
    r = steady_state([5.0] + [0.05] * 19, [1] * 20, 64)
    assert r["warmup_sec"] == 5.0
    assert r["samples_per_sec"] == pytest.approx(1280.0)
    assert r["samples_per_sec_mean"] == pytest.approx(1280.0)
    assert r["steady_executions"] == 19


def test_steps_per_execution_and_partial_last_execution():
    # Executions of 4 batches of 32 taking 0.1 s = 1280 samples/s; a partial one of 2 batches in 0.05 s
    # is also 1280; one slow execution of 4 batches in 0.2 s = 640. Median of [1280, 1280, 640, 1280] = 1280.
    r = steady_state([3.0, 0.1, 0.1, 0.2, 0.05], [4, 4, 4, 4, 2], 32)
    assert r["samples_per_sec"] == pytest.approx(1280.0)
    # Mean over steady time: (4+4+4+2)*32 / (0.1+0.1+0.2+0.05) = 448 / 0.45
    assert r["samples_per_sec_mean"] == pytest.approx(448 / 0.45)
    assert r["warmup_sec"] == 3.0


def test_only_warmup_gives_no_steady_figure():
    r = steady_state([2.0], [1], 64)
    assert r["samples_per_sec"] is None and r["warmup_sec"] == 2.0


def test_rate_speedup_time_left():
    assert execution_rate(10, 256, 0.5) == 5120.0
    with pytest.raises(ValueError):
        execution_rate(1, 64, 0.0)
    assert speedup(1000.0, 2500.0) == 2.5
    assert speedup(None, 2500.0) is None
    assert time_left(30, 130, 20.0) == 5.0
    assert time_left(30, 130, None) is None


def test_short_last_batch_counts_its_real_samples():
    # 1,437 digits in batches of 128: 11 full batches and one of 29. Executions of one batch,
    # 0.01 s each: full ones 12,800 samples/s, the short one 2,900 samples/s (not 12,800).
    durations = [1.0] + [0.01] * 11
    samples = [128] * 11 + [29]
    r = steady_state(durations, [1] * 12, 128, samples=samples)
    assert r["samples_per_sec"] == pytest.approx(12800.0)  # median of 10 x 12,800 and 2,900
    assert r["samples_per_sec_mean"] == pytest.approx((10 * 128 + 29) / 0.11)
    assert r["samples_per_sec_iqr"][0] == pytest.approx(12800.0)


def test_steady_state_of_arrays_is_the_same_to_the_last_bit():
    import random

    import numpy as np

    from engine.report.measure import steady_state_arrays

    rng = random.Random(0)
    for n in (1, 2, 3, 4, 5, 7, 10, 101, 1000):
        for _ in range(20):
            d = [rng.uniform(0.001, 0.5) * rng.choice([1, 10]) for _ in range(n)]
            b = [rng.choice([1, 2, 8]) for _ in range(n)]
            w = [i == 0 or rng.random() < 0.05 for i in range(n)]
            samples = [x * 128 * rng.choice([1, 0.5]) for x in b]
            assert steady_state_arrays(np.array(d), np.array(samples), np.array(w)) == \
                steady_state(d, b, 128, warmup_flags=w, samples=samples)
    # Hand-computed: warm-up 1 s; steady 256, 512, 1024 samples/s -> median 512, mean 3 x 128 / 0.875.
    out = steady_state_arrays(np.array([1.0, 0.5, 0.25, 0.125]), np.array([128.0] * 4),
                              np.array([True, False, False, False]))
    assert (out["warmup_sec"], out["samples_per_sec"], out["steady_executions"]) == (1.0, 512.0, 3)
    assert out["samples_per_sec_mean"] == pytest.approx(384 / 0.875)
    with pytest.raises(ValueError, match="duration must be > 0 s"):
        steady_state_arrays(np.array([1.0, 0.0]), np.array([1.0, 1.0]), np.array([True, False]))
