"""MFU's denominator (engine.hardware.peaks, engine.hardware.clock): the theoretical CPU
peak from cores, a measured clock and FLOPs per cycle, and the GPU data-sheet table."""
from __future__ import annotations

import platform
import re

import pytest

from engine.hardware import clock, peaks

ZEN4 = {"sse2", "avx", "avx2", "fma", "avx512f", "avx512_bf16"}
SAPPHIRE_RAPIDS = ZEN4 | {"avx512_fp16", "amx_tile", "amx_bf16"}


def test_zen4_two_cores_at_3_6_ghz_are_232_and_463_gflops():
    # The 2-core EPYC (Zen 4): AVX-512 on 256-bit pipes, 32 fp32 and 64 bf16 FLOPs a cycle
    # (measured there: vfmadd and vdpbf16ps throughput), clock 3.6 GHz by a dependent-add chain.
    got = peaks.cpu_theoretical(2, 3.62e9, ZEN4, "AuthenticAMD", 25)
    assert got["float32"]["flops_per_sec"] == pytest.approx(231.68e9)
    assert got["bfloat16"]["flops_per_sec"] == pytest.approx(463.36e9)
    assert got["float16"]["flops_per_sec"] is None              # no float16 units: no peak
    assert got["float32"]["text"] == "2 cores x 3.62 GHz x 32 FLOPs/cycle"


def test_flops_per_cycle_table():
    f = peaks.cpu_flops_per_cycle
    assert f(SAPPHIRE_RAPIDS, "GenuineIntel", 6)["bfloat16"]["flops_per_cycle"] == 1024   # AMX
    assert f(SAPPHIRE_RAPIDS, "GenuineIntel", 6)["float32"]["flops_per_cycle"] == 64
    assert f(SAPPHIRE_RAPIDS, "GenuineIntel", 6)["float16"]["flops_per_cycle"] == 128
    assert f(ZEN4, "AuthenticAMD", 26)["float32"]["flops_per_cycle"] == 64                # Zen 5: 512-bit pipes
    assert f({"avx", "avx2", "fma"}, "GenuineIntel", 6)["bfloat16"]["flops_per_cycle"] == 32  # converted
    assert f({"avx"}, "", None)["float32"]["flops_per_cycle"] == 16
    assert f(set(), "", None)["float32"]["flops_per_cycle"] is None
    assert peaks.cpu_cores(4, 2) == 2 and peaks.cpu_cores(1, 2) == 1  # SMT siblings share the FMA units


@pytest.mark.parametrize("name,dtype,tflops,label", [
    ("Tesla T4", "float16", 65, "T4 FP16"), ("NVIDIA L4", "bfloat16", 121, "L4 BF16"),
    ("NVIDIA A10", "float32", 62.5, "A10 TF32"), ("NVIDIA A100-SXM4-80GB", "bfloat16", 312, "A100 BF16"),
    ("NVIDIA H100 80GB HBM3", "bfloat16", 989.5, "H100 SXM BF16"), ("NVIDIA H100 PCIe", "bfloat16", 756.5,
                                                                      "H100 PCIe BF16"),
    ("NVIDIA H200", "bfloat16", 989.5, "H200 SXM BF16"), ("NVIDIA H200 NVL", "float32", 417.5, "H200 NVL TF32"),
    ("NVIDIA B200", "bfloat16", 2250, "B200 BF16"),
])
def test_datasheet_rows_are_dense_and_cite_their_source(name, dtype, tflops, label):
    d = peaks.datasheet(name, dtype)
    assert d["flops_per_sec"] == pytest.approx(tflops * 1e12) and d["label"] == label
    assert re.search(r"data ?sheet", d["source"], re.I)


def test_unknown_gpus_and_dtypes_have_no_datasheet_peak():
    assert peaks.datasheet("NVIDIA A10G", "float32") is None     # not an A10 (nor an A100)
    assert peaks.datasheet("Tesla T4", "bfloat16") is None
    assert peaks.theoretical("GPU", "float32", "Some GPU")["peak_flops_per_sec"] is None
    assert all(row[3] for row in peaks.GPU_DATASHEET)


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"), reason="x86-64 machine code")
def test_the_dependent_add_chain_reads_a_real_clock():
    r = clock.measure(repeats=50)
    assert r["error"] is None
    assert 0.8e9 < r["clock_hz"] < 6.5e9
    assert r["adds"] == 20_000 * clock.ADDS_PER_LOOP


def test_the_hardware_pages_rows_put_the_best_matmul_beside_the_theoretical_peak():
    cpu = peaks.cpu_theoretical(2, 3.6e9, ZEN4, "AuthenticAMD", 25)
    facts = {"theoretical": {"cpu": cpu, "gpu": None},
             "peak": {"under_load": True, "kept": False,
                      "dtypes": {"float32": {"flops_per_sec": 217e9, "n": 2048}, "float16": {"skipped": "emulated"}}}}
    rows = peaks.summary_rows(facts)
    assert [r["dtype"] for r in rows] == ["float32", "bfloat16"]          # float16: no peak, not measured
    assert rows[0] == {"dtype": "float32", "peak": "230 GFLOP/s", "kind": "theoretical",
                       "parts": "2 cores x 3.60 GHz x 32 FLOPs/cycle",
                       "best matmul": "217 GFLOP/s at n = 2048 (under load: not kept)", "share": "94%"}
    assert rows[1]["best matmul"] == "not measured" and rows[1]["share"] == "-"
