"""The bound-by verdict (engine.report.bound_by) on stored runs built to hit each branch,
and the MFU arithmetic (engine.report.mfu) it reads, with hand-computed figures."""
from __future__ import annotations

import pytest

from engine.config import RunConfig
from engine.report import mfu
from engine.report.bound_by import bound_by

# A run whose time went to its steps: 20 s wall, 1 s outside training (5%).
STEPS = dict(wall_sec=20.0, setup_sec=0.5, warmup_sec=0.3, validation_sec=0.1, other_sec=0.1,
             train_sec=19.0, global_batch_size=128, steps_per_execution=1, jit_compile=False,
             compute_dtype="float32", data_wait_share=0.01)


def stored(store, **summary) -> dict:
    """A completed run in the store with `summary`, read back as the pages read it."""
    rid = store.create_run(RunConfig(dataset="digits", model="mlp").to_json(), status="running")
    store.finish_run(rid, "completed", summary=summary)
    return store.get_run(rid)["summary"]


def test_mfu_is_steady_flops_per_second_over_the_measured_peak():
    peak = {"device": "CPU", "backend": "tensorflow", "n": 1024, "dtypes": {"float32": {"flops_per_sec": 100e9}}}
    m = mfu.fields({"samples_per_sec": 10_000.0, "device_kind": "CPU", "compute_dtype": "float32",
                    "replicas": 2, "replicas_simulated": True}, 302_592, peak)
    assert m["model_flops_per_sec"] == pytest.approx(10_000 * 302_592)       # 3.03 GFLOP/s
    assert m["peak_flops_per_sec"] == 100e9                                   # simulated: one peak
    assert m["mfu"] == pytest.approx(10_000 * 302_592 / 100e9)                # 3.0%
    assert m["peak_source"].startswith("this machine's measured float32 peak")
    assert mfu.headline(m) == "3% of this machine's measured float32 peak (3.03 GFLOP/s of 100 GFLOP/s)"


def test_physical_gpus_add_their_peaks_and_nominal_is_the_fallback():
    s = {"samples_per_sec": 1e5, "device_kind": "GPU", "compute_dtype": "bfloat16", "replicas": 2,
         "replicas_simulated": False}
    m = mfu.fields(s, 1e9, None, "NVIDIA H200")
    assert m["peak_flops_per_sec"] == pytest.approx(2 * 989.5e12)
    assert m["peak_source"] == "nominal H200 SXM BF16 dense peak (NVIDIA data sheet) x 2 devices"
    assert m["mfu"] == pytest.approx(1e5 * 1e9 / (2 * 989.5e12))
    # float32 on a GPU with TF32 Tensor Cores reads the TF32 figure; a T4 has none.
    assert mfu.fields({**s, "compute_dtype": "float32", "replicas": 1}, 1e9, None, "NVIDIA A100-SXM4-80GB")[
        "peak_flops_per_sec"] == pytest.approx(156e12)
    assert mfu.fields({**s, "compute_dtype": "float32", "replicas": 1}, 1e9, None, "Tesla T4")[
        "peak_flops_per_sec"] == pytest.approx(8.1e12)
    assert mfu.fields({**s, "replicas": 1}, 1e9, None, "Tesla T4")["mfu"] is None  # no bf16 on a T4


def test_outside_training_names_the_largest_part_and_the_steps_bound(store):
    s = stored(store, **{**STEPS, "wall_sec": 10.0, "setup_sec": 6.0, "warmup_sec": 1.0, "train_sec": 2.8},
               samples_per_sec=40_000.0, mfu=0.3)
    v = bound_by(s)
    assert v["kind"] == "outside" and v["figures"]["part"] == "setup"
    assert v["figures"]["outside_share"] == pytest.approx((6.0 + 1.0 + 0.1 + 0.1) / 10.0)
    assert v["line"].startswith("Bound by time outside training: 72% of 10.0 s wall, most of it setup (6.0 s)")
    assert v["steps"] == "host" and "The steps themselves: host overhead" in v["line"]
    assert v["short"] == "outside training: setup 6.0 s of 10.0 s; steps: host overhead: 3.2 ms steps, 3.33x their FLOPs at the peak"


def test_input_bound_when_steps_wait_for_data(store):
    v = bound_by(stored(store, **{**STEPS, "data_wait_share": 0.34}, samples_per_sec=5_000.0, mfu=0.2))
    assert v["kind"] == "input" and v["short"] == "input: data wait 34%"
    assert v["line"] == ("Bound by input: the steady steps waited for data 34% of their time. "
                         "Next lever: prefetch, cache the decoded data, or a cheaper augmentation")


def test_compute_bound_near_the_achievable_peak(store):
    v = bound_by(stored(store, **STEPS, samples_per_sec=5_000.0, mfu=0.82))
    assert v["kind"] == "compute" and v["short"] == "compute: MFU 82%"
    assert v["line"] == ("Bound by compute: MFU 82% of the float32 peak. Next lever: lower precision "
                         "(mixed_bfloat16, or mixed_float16 on a GPU), more devices")
    assert "more devices, or a smaller model" in bound_by(
        stored(store, **{**STEPS, "compute_dtype": "bfloat16"}, samples_per_sec=5_000.0, mfu=0.82))["line"]


def test_host_overhead_for_tiny_steps_far_from_the_peak(store):
    # 128 samples at 40,000 samples/s: 3.2 ms a step; at MFU 0.25 its FLOPs need 0.8 ms at the peak.
    v = bound_by(stored(store, **STEPS, samples_per_sec=40_000.0, mfu=0.25))
    assert v["kind"] == "host"
    assert v["figures"]["step_sec"] == pytest.approx(128 / 40_000)
    assert v["figures"]["ideal_step_sec"] == pytest.approx(128 / 40_000 * 0.25)
    assert v["line"] == ("Bound by host overhead: a step takes 3.2 ms, 4x its FLOPs at the peak (0.8 ms; "
                         "MFU 25%). Next lever: a larger batch (now 128), more steps per execution (now 1), "
                         "XLA (jit_compile)")


def test_kernels_bound_for_long_steps_far_from_the_peak(store):
    v = bound_by(stored(store, **STEPS, samples_per_sec=1_000.0, mfu=0.08))  # 128 ms steps
    assert v["kind"] == "kernels" and v["short"] == "kernels: MFU 8% in 128 ms steps"
    assert v["line"].startswith("Bound by kernels: MFU 8% in 128 ms steps without data wait")
    assert v["lever"] == "XLA fusion (jit_compile), lower precision"


def test_no_verdict_without_a_steady_state(store):
    assert bound_by(stored(store, **STEPS)) is None
