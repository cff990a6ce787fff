"""Peak FLOP/s: the denominator of MFU (engine.report.mfu), as PaLM defines it
(Chowdhery et al., 2022, appendix B): the hardware's *theoretical* peak for the run's
compute dtype, never a measured matmul (that one is shown beside it, as the achievable
peak). No TensorFlow here: the app imports it.

- A GPU: the vendor's data-sheet figure for dense math (`GPU_DATASHEET`, one source per
  row; a sheet's Tensor Core figures "with sparsity" are halved). float32 reads the TF32
  Tensor Core figure where the GPU has one: TensorFlow and JAX run float32 matmuls and
  convolutions in TF32 on Ampere and later unless told not to.
- A CPU: cores usable by the worker x the measured clock (engine.hardware.clock) x the
  FLOPs per cycle of its vector or matrix units, from its flags and a small table of
  microarchitectures (`cpu_flops_per_cycle`).

Lightning's `get_available_flops` and nanoGPT's `estimate_mfu` divide by data-sheet
figures the same way; PaLM divides by the chips' theoretical peak.
"""
from __future__ import annotations

import math
import re
from typing import Optional

T = 1e12
# (regular expression on the device name, label, {fp32, tf32, bf16, fp16: dense FLOP/s or None}, source);
# first match wins (so "H200 NVL" before "H200", "A100" before "A10").
GPU_DATASHEET = (
    (r"H200 NVL", "H200 NVL", {"fp32": 60 * T, "tf32": 417.5 * T, "bf16": 835.5 * T, "fp16": 835.5 * T},
     "NVIDIA H200 Tensor Core GPU data sheet (h200-datasheet-3223530): NVL FP32 60 TF; TF32 835, "
     "BF16/FP16 1,671 TF with sparsity, halved"),
    (r"H200", "H200 SXM", {"fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "fp16": 989.5 * T},
     "NVIDIA H200 Tensor Core GPU data sheet (h200-datasheet-3223530): SXM FP32 67 TF; TF32 989, "
     "BF16/FP16 1,979 TF with sparsity, halved"),
    (r"H100 PCIe", "H100 PCIe", {"fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T, "fp16": 756.5 * T},
     "NVIDIA H100 Tensor Core GPU data sheet (h100-datasheet-2287922): PCIe FP32 51 TF; TF32 756, "
     "BF16/FP16 1,513 TF with sparsity, halved"),
    (r"H100 NVL", "H100 NVL", {"fp32": 60 * T, "tf32": 417.5 * T, "bf16": 835.5 * T, "fp16": 835.5 * T},
     "NVIDIA H100 Tensor Core GPU data sheet (h100-datasheet-2287922): NVL FP32 60 TF; TF32 835, "
     "BF16/FP16 1,671 TF with sparsity, halved"),
    (r"H100", "H100 SXM", {"fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "fp16": 989.5 * T},
     "NVIDIA H100 Tensor Core GPU data sheet (h100-datasheet-2287922): SXM FP32 67 TF; TF32 989, "
     "BF16/FP16 1,979 TF with sparsity, halved"),
    (r"B200", "B200", {"fp32": 80 * T, "tf32": 1100 * T, "bf16": 2250 * T, "fp16": 2250 * T},
     "NVIDIA Blackwell data sheet, HGX B200 per GPU at 1,000 W: FP32 80 TF; TF32 2,200, BF16/FP16 "
     "4,500 TF with sparsity, halved (as summarised at glennklockwood.com/garden/processors/B200)"),
    (r"A100", "A100", {"fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T},
     "NVIDIA A100 Tensor Core GPU data sheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web): FP32 "
     "19.5 TF; TF32 156, BF16/FP16 312 TF dense (SXM4 and PCIe alike)"),
    (r"\bA10\b(?!0|G)", "A10", {"fp32": 31.2 * T, "tf32": 62.5 * T, "bf16": 125 * T, "fp16": 125 * T},
     "NVIDIA A10 Tensor Core GPU data sheet: FP32 31.2 TF; TF32 125, BF16/FP16 250 TF with sparsity, halved"),
    (r"\bL4\b", "L4", {"fp32": 30.3 * T, "tf32": 60 * T, "bf16": 121 * T, "fp16": 121 * T},
     "NVIDIA L4 Tensor Core GPU data sheet (l4-datasheet-2595652): FP32 30.3 TF; TF32 120, "
     "BF16/FP16 242 TF with sparsity, halved"),
    (r"\bT4\b", "T4", {"fp32": 8.1 * T, "tf32": None, "bf16": None, "fp16": 65 * T},
     "NVIDIA T4 Tensor Core GPU data sheet (t4-tensor-core-datasheet-951643): FP32 8.1 TF, mixed "
     "FP16/FP32 65 TF dense; no TF32 or BF16 Tensor Cores"),
)


DTYPE_KEYS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def datasheet(gpu_name: Optional[str], compute_dtype: str, tf32: bool = True) -> Optional[dict]:
    """One GPU's data-sheet dense peak for `compute_dtype` ('float32', 'bfloat16',
    'float16'): {'flops_per_sec', 'label' (e.g. 'H200 SXM TF32'), 'source'}, or None for an
    unknown GPU or a dtype it has no figure for (T4 bfloat16)."""
    if not gpu_name:
        return None
    key = DTYPE_KEYS.get(compute_dtype)
    for pattern, label, peaks, source in GPU_DATASHEET:
        if re.search(pattern, gpu_name, flags=re.I):
            if key == "fp32" and tf32 and peaks.get("tf32"):
                key = "tf32"
            value = peaks.get(key) if key else None
            return {"flops_per_sec": value, "label": f"{label} {key.upper()}", "source": source} if value else None
    return None


# --- CPUs -------------------------------------------------------------------------------
def cpu_flops_per_cycle(flags, vendor: str = "", family: Optional[int] = None) -> dict:
    """FLOPs one core can start per cycle, per dtype, from its flags (/proc/cpuinfo) and
    vendor ('GenuineIntel', 'AuthenticAMD') and family:
    {dtype: {'flops_per_cycle': int | None, 'units': how, in words}}.

    The table (dense multiply-adds at 2 FLOPs each; two vector FMA pipes on every core here):
    - Intel with AMX (Sapphire Rapids and later): float32 64 (2 x 512-bit FMA x 16 lanes x 2);
      bfloat16 1,024 (AMX TMUL: a 16x32 by 32x16 bf16 tile product every 16 cycles); float16
      1,024 with amx_fp16, else 128 with avx512_fp16;
    - Intel AVX-512 without AMX: float32 64; bfloat16 128 with avx512_bf16 (vdpbf16ps);
    - AMD Zen 4 (family 25 with AVX-512): AVX-512 on 256-bit pipes: float32 32, bfloat16 64
      (measured on a 2-core EPYC: 32 and 64 per cycle);
    - AMD Zen 5 (family 26): full 512-bit pipes: float32 64, bfloat16 128;
    - AVX2 + FMA: float32 32 (2 x 256-bit FMA x 8 lanes x 2); AVX: 16; SSE2: 8.
    A dtype without units of its own runs at float32's rate (bfloat16 converted) or, float16
    on a CPU without float16 units, has none (emulated, not a peak).
    Sources: Intel 64 and IA-32 Architectures Optimization Reference Manual (AMX, AVX-512
    ports); AMD Software Optimization Guide for Zen 4 (family 19h) and Zen 5 (family 1Ah).
    """
    f = set(flags or ())
    amd = "AMD" in (vendor or "")
    if "avx512f" in f and amd and family == 25:
        fp32, fp32_units = 32, "AVX-512 on two 256-bit FMA pipes (Zen 4): 2 x 8 lanes x 2"
    elif "avx512f" in f:
        fp32, fp32_units = 64, "two 512-bit FMA units: 2 x 16 lanes x 2"
    elif "avx2" in f and "fma" in f:
        fp32, fp32_units = 32, "two 256-bit FMA units: 2 x 8 lanes x 2"
    elif "avx" in f:
        fp32, fp32_units = 16, "256-bit add and multiply units: 8 + 8"
    elif "sse2" in f:
        fp32, fp32_units = 8, "128-bit add and multiply units: 4 + 4"
    else:
        return {d: {"flops_per_cycle": None, "units": "no table entry for this CPU's flags"}
                for d in ("float32", "bfloat16", "float16")}
    if "amx_bf16" in f:
        bf16 = (1024, "AMX TMUL: a 16x32 by 32x16 bfloat16 tile product per 16 cycles")
    elif "avx512_bf16" in f:
        bf16 = (2 * fp32, "vdpbf16ps: twice float32's lanes" + (" (Zen 4)" if fp32 == 32 else ""))
    else:
        bf16 = (fp32, "no bfloat16 units: converted, at float32's rate")
    if "amx_fp16" in f:
        fp16 = (1024, "AMX TMUL: a 16x32 by 32x16 float16 tile product per 16 cycles")
    elif "avx512_fp16" in f:
        fp16 = (128, "AVX512-FP16: two 512-bit FMA units x 32 lanes x 2")
    else:
        fp16 = (None, "no float16 units: emulated, not a peak")
    return {"float32": {"flops_per_cycle": fp32, "units": fp32_units},
            "bfloat16": {"flops_per_cycle": bf16[0], "units": bf16[1]},
            "float16": {"flops_per_cycle": fp16[0], "units": fp16[1]}}


def cpu_theoretical(cores: int, clock_hz: Optional[float], flags, vendor: str = "",
                    family: Optional[int] = None) -> dict:
    """{dtype: {'flops_per_sec' | None, 'cores', 'clock_hz', 'flops_per_cycle', 'units',
    'text': '2 cores x 3.59 GHz x 64 FLOPs/cycle'}}: cores x clock x FLOPs per cycle."""
    out = {}
    for dtype, row in cpu_flops_per_cycle(flags, vendor, family).items():
        fpc = row["flops_per_cycle"]
        rate = cores * clock_hz * fpc if fpc and clock_hz and cores else None
        text = (f"{cores} core{'s' if cores != 1 else ''} x {clock_hz / 1e9:.2f} GHz x {fpc} FLOPs/cycle"
                if rate else f"unknown ({'clock not measured' if not clock_hz else row['units']})")
        out[dtype] = {"flops_per_sec": rate, "cores": cores, "clock_hz": clock_hz, "flops_per_cycle": fpc,
                      "units": row["units"], "text": text}
    return out


def cpu_cores(usable_cpus: int, threads_per_core: int = 1) -> int:
    """Cores whose vector units the worker may use: usable logical CPUs over the threads
    that share one core (SMT siblings share its FMA units), at least 1."""
    return max(1, math.floor(usable_cpus / max(threads_per_core, 1)))


def theoretical(device_kind: str, compute_dtype: str, gpu_name: Optional[str] = None, devices: int = 1,
                cpu: Optional[dict] = None) -> dict:
    """The peak a run's MFU divides by.

    Args:
        device_kind: 'CPU', 'GPU' or 'TPU'.
        compute_dtype: 'float32', 'bfloat16' or 'float16'.
        gpu_name: the GPU's name (the data-sheet table).
        devices: physical devices used (1 for simulated ones: they share one).
        cpu: `cpu_theoretical`'s result for this machine (CPU runs).
    Returns: {'peak_flops_per_sec' (all devices) | None, 'peak_kind': 'theoretical' (CPU:
    cores x clock x FLOPs/cycle) | 'datasheet' (GPU) | None, 'peak_text' (the parts, e.g.
    '2 cores x 3.59 GHz x 64 FLOPs/cycle' or 'H200 SXM BF16 data sheet'), 'peak_source'
    (one line with the source), 'peak_parts' (dict), 'peak_devices'}.
    """
    devices = max(int(devices or 1), 1)
    none = {"peak_flops_per_sec": None, "peak_kind": None, "peak_devices": devices, "peak_parts": None}
    if device_kind == "GPU":
        d = datasheet(gpu_name, compute_dtype)
        if d is None:
            return {**none, "peak_text": None,
                    "peak_source": f"no data-sheet {compute_dtype} peak for {gpu_name or 'this GPU'} "
                                   "(engine.hardware.peaks.GPU_DATASHEET)"}
        times = f" x {devices} GPUs" if devices > 1 else ""
        return {"peak_flops_per_sec": d["flops_per_sec"] * devices, "peak_kind": "datasheet", "peak_devices": devices,
                "peak_parts": {"per_device_flops_per_sec": d["flops_per_sec"], "devices": devices, "label": d["label"]},
                "peak_text": f"{d['label']} data sheet{times}", "peak_source": d["source"] + times}
    if device_kind == "CPU":
        row = (cpu or {}).get(compute_dtype) or {}
        if not row.get("flops_per_sec"):
            return {**none, "peak_text": row.get("text"),
                    "peak_source": f"no theoretical {compute_dtype} peak: {row.get('text') or 'CPU facts missing'}"}
        return {"peak_flops_per_sec": row["flops_per_sec"], "peak_kind": "theoretical", "peak_devices": 1,
                "peak_parts": {k: row[k] for k in ("cores", "clock_hz", "flops_per_cycle", "units")},
                "peak_text": row["text"],
                "peak_source": f"theoretical: {row['text']} ({row['units']}; clock measured by a dependent-add chain)"}
    return {**none, "peak_text": None, "peak_source": f"no peak table for {device_kind}"}


def summary(facts: dict) -> dict:
    """Per dtype, MFU's denominator and the achievable peak beside it: {dtype: {'theoretical':
    {'flops_per_sec', 'kind' ('theoretical' | 'datasheet'), 'text', 'cores', 'clock_hz',
    'flops_per_cycle', 'units'} (CPU parts) or the GPU's data-sheet row, 'best_matmul':
    {'flops_per_sec', 'n', 'under_load', 'kept'} | None}} for the probed device (the first GPU,
    else the CPU)."""
    th = facts.get("theoretical") or {}
    gpu = th.get("gpu")
    peak = facts.get("peak") or {}
    out = {}
    for dtype in ("float32", "bfloat16", "float16"):
        if gpu:
            g = gpu.get(dtype) or {}
            theo = {"flops_per_sec": g.get("peak_flops_per_sec"), "kind": g.get("peak_kind"),
                    "text": g.get("peak_text"), "source": g.get("peak_source")}
        else:
            c = (th.get("cpu") or {}).get(dtype) or {}
            theo = {"flops_per_sec": c.get("flops_per_sec"), "kind": "theoretical" if c.get("flops_per_sec") else None,
                    **{k: c.get(k) for k in ("text", "cores", "clock_hz", "flops_per_cycle", "units")}}
        row = (peak.get("dtypes") or {}).get(dtype) or {}
        best = ({"flops_per_sec": row["flops_per_sec"], "n": row.get("n"), "by_n": row.get("by_n"),
                 "under_load": peak.get("under_load"), "kept": peak.get("kept")}
                if row.get("flops_per_sec") else None)
        out[dtype] = {"theoretical": theo, "best_matmul": best,
                      "best_matmul_share_of_peak": best["flops_per_sec"] / theo["flops_per_sec"]
                      if best and theo.get("flops_per_sec") else None}
    return out


def summary_rows(facts: dict) -> list[dict]:
    """`summary` as table rows: {'dtype', 'peak' (FLOP/s text), 'kind', 'parts', 'best matmul',
    'share'} for the dtypes with a peak or a measurement."""
    rows = []
    for dtype, r in summary(facts).items():
        th, best = r["theoretical"] or {}, r["best_matmul"] or {}
        if not th.get("flops_per_sec") and not best:
            continue
        load = " (under load: not kept)" if best.get("under_load") else ""
        rows.append({"dtype": dtype, "peak": flops_text(th.get("flops_per_sec")),
                     "kind": {"theoretical": "theoretical", "datasheet": "data sheet"}.get(th.get("kind") or "", "-"),
                     "parts": th.get("text") or "-",
                     "best matmul": (f"{flops_text(best['flops_per_sec'])} at n = {best.get('n')}{load}"
                                     if best else "not measured"),
                     "share": (f"{100 * r['best_matmul_share_of_peak']:.0f}%"
                               if r.get("best_matmul_share_of_peak") else "-")})
    return rows


def flops_text(v) -> str:
    """FLOP/s with an SI prefix: '45.4 GFLOP/s', '989 TFLOP/s'; '-' for None."""
    if not v:
        return "-"
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.3g} FLOP/s"
