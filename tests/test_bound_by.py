"""The bound-by verdict (engine.report.bound_by) on stored runs built to hit each branch,
and the MFU arithmetic (engine.report.mfu) it reads, with hand-computed figures."""
from __future__ import annotations

import pytest

from engine.config import RunConfig
from engine.hardware import peaks
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


# This 2-core machine's float32 parts as the hardware check gives them: 2 cores x 3.6 GHz x 64.
CPU_PEAKS = peaks.cpu_theoretical(2, 3.6e9, {"avx2", "fma", "avx512f", "avx512_bf16"}, "GenuineIntel", 6)


def test_mfu_is_steady_flops_per_second_over_the_theoretical_peak_with_the_best_matmul_beside_it():
    m = mfu.fields({"samples_per_sec": 10_000.0, "device_kind": "CPU", "compute_dtype": "float32",
                    "replicas": 2, "replicas_simulated": True}, 302_592, cpu=CPU_PEAKS, best=(200e9, 2048))
    assert m["model_flops_per_sec"] == pytest.approx(10_000 * 302_592)       # 3.03 GFLOP/s
    assert m["peak_flops_per_sec"] == pytest.approx(2 * 3.6e9 * 64)          # 460.8 GFLOP/s, simulated: one peak
    assert m["peak_kind"] == "theoretical" and m["peak_text"] == "2 cores x 3.60 GHz x 64 FLOPs/cycle"
    assert m["mfu"] == pytest.approx(10_000 * 302_592 / 460.8e9)             # 0.66%
    assert m["mfu_of_best_matmul"] == pytest.approx(10_000 * 302_592 / 200e9) and m["best_matmul_n"] == 2048
    assert mfu.mfu_line(m) == ("0.66% of 461 GFLOP/s theoretical float32 (2 cores x 3.60 GHz x 64 FLOPs/cycle); "
                               "1.5% of the best float32 matmul measured here (200 GFLOP/s, n = 2048)")
    bf16 = mfu.fields({"samples_per_sec": 10_000.0, "device_kind": "CPU", "compute_dtype": "bfloat16"}, 302_592,
                      cpu=CPU_PEAKS)
    assert bf16["peak_flops_per_sec"] == pytest.approx(2 * 3.6e9 * 128)      # avx512_bf16, no AMX
    assert bf16["mfu_of_best_matmul"] is None and "best" not in mfu.mfu_line(bf16)


def test_physical_gpus_add_their_datasheet_peaks():
    s = {"samples_per_sec": 1e5, "device_kind": "GPU", "compute_dtype": "bfloat16", "replicas": 2,
         "replicas_simulated": False}
    m = mfu.fields(s, 1e9, "NVIDIA H200")
    assert m["peak_flops_per_sec"] == pytest.approx(2 * 989.5e12)
    assert m["peak_kind"] == "datasheet" and m["peak_text"] == "H200 SXM BF16 data sheet x 2 GPUs"
    assert m["mfu"] == pytest.approx(1e5 * 1e9 / (2 * 989.5e12))
    # float32 on a GPU with TF32 Tensor Cores reads the TF32 figure; a T4 has none.
    assert mfu.fields({**s, "compute_dtype": "float32", "replicas": 1}, 1e9, "NVIDIA A100-SXM4-80GB")[
        "peak_flops_per_sec"] == pytest.approx(156e12)
    assert mfu.fields({**s, "compute_dtype": "float32", "replicas": 1}, 1e9, "Tesla T4")[
        "peak_flops_per_sec"] == pytest.approx(8.1e12)
    assert mfu.fields({**s, "replicas": 1}, 1e9, "Tesla T4")["mfu"] is None  # no bf16 on a T4


def test_a_set_of_runs_is_restated_against_one_peak():
    rows = [{"peak_flops_per_sec": 400e9, "peak_kind": "theoretical", "peak_text": "a", "peak_dtype": "float32",
             "model_flops_per_sec": 100e9},
            {"peak_flops_per_sec": 460e9, "peak_kind": "theoretical", "peak_text": "b", "peak_dtype": "float32",
             "model_flops_per_sec": 115e9},
            {"peak_flops_per_sec": 460e9, "peak_kind": "theoretical", "peak_text": "b", "peak_dtype": "float32",
             "model_flops_per_sec": 92e9}]
    common = mfu.common_peaks(rows)["float32"]
    assert common["peak_flops_per_sec"] == 460e9 and common["runs"] == 2
    assert [mfu.restate(r, common["peak_flops_per_sec"])["mfu"] for r in rows] == pytest.approx([100 / 460, 0.25, 0.2])


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


def test_compute_bound_near_the_best_matmul_or_half_the_theoretical_peak(store):
    v = bound_by(stored(store, **STEPS, samples_per_sec=5_000.0, mfu=0.6, mfu_of_best_matmul=0.75))
    assert v["kind"] == "compute" and v["short"] == "compute: MFU 60%, 75% of the best float32 matmul"
    # Half the theoretical peak is not compute-bound when the best matmul here reaches far more.
    assert bound_by(stored(store, **STEPS, samples_per_sec=5_000.0, mfu=0.5, mfu_of_best_matmul=0.55))[
        "kind"] == "kernels"
    v = bound_by(stored(store, **STEPS, samples_per_sec=5_000.0, mfu=0.82))  # no best matmul measured
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


def test_the_runs_table_restates_every_mfu_against_one_peak_per_dtype(store):
    from engine.report.table import mfu_caption, runs_frame

    peak = dict(peak_kind="theoretical", peak_dtype="float32", peak_text="2 cores x 3.60 GHz x 64 FLOPs/cycle")
    stored(store, **STEPS, samples_per_sec=1_000.0, model_flops_per_sec=100e9, peak_flops_per_sec=400e9, mfu=0.25,
           **{**peak, "peak_text": "2 cores x 3.13 GHz x 64 FLOPs/cycle"})      # a day the clock read low
    stored(store, **STEPS, samples_per_sec=1_000.0, model_flops_per_sec=115.2e9, peak_flops_per_sec=460.8e9,
           mfu=0.25, **peak)
    stored(store, **STEPS, samples_per_sec=1_000.0, model_flops_per_sec=92.16e9, peak_flops_per_sec=460.8e9,
           mfu=0.2, **peak)
    df = runs_frame(store)
    assert sorted(df["mfu"]) == pytest.approx(sorted([100 / 460.8, 0.25, 0.2]))   # one denominator: 460.8
    assert sorted(df["mfu_stored"]) == pytest.approx([0.2, 0.25, 0.25])
    assert set(df["mfu_denominator"]) == {"461 GFLOP/s theoretical float32 (2 cores x 3.60 GHz x 64 FLOPs/cycle)"}
    assert mfu_caption(df) == ("MFU against one peak per compute dtype: 461 GFLOP/s theoretical float32 "
                               "(2 cores x 3.60 GHz x 64 FLOPs/cycle)")


def test_a_count_above_the_peak_is_no_mfu_but_a_reason():
    """460.8 GFLOP/s peak; 10,000 samples/s x 69,120,000 FLOPs = 691.2 GFLOP/s = 150% of it:
    a count the steps did not run (a fine-tune counted unfrozen, its steps run frozen)."""
    m = mfu.fields({"samples_per_sec": 10_000.0, "device_kind": "CPU", "compute_dtype": "float32"}, 69_120_000,
                   cpu=CPU_PEAKS, best=(200e9, 2048))
    assert m["mfu"] is None and m["flops_per_sample"] is None and m["model_flops_per_sec"] is None
    assert m["mfu_of_best_matmul"] is None and m["peak_flops_per_sec"] == pytest.approx(460.8e9)
    assert m["flops_note"] == ("MFU not shown: 69,120,000 FLOPs per sample at 10,000 samples/s would be 150% of "
                               "the theoretical peak (2 cores x 3.60 GHz x 64 FLOPs/cycle): the count is not what "
                               "the steps ran")
    assert "flops_note" not in mfu.fields({"samples_per_sec": 10_000.0, "device_kind": "CPU"}, 46_080_000,
                                          cpu=CPU_PEAKS)  # exactly the peak: 100%, shown
