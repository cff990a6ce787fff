"""Peak FLOP/s: the nominal dense peaks of common NVIDIA GPUs, and which peak a run's
MFU is measured against (no TensorFlow here: the app imports it).

Nominal figures are the vendors' data-sheet numbers for dense math (the sheets'
Tensor Core figures marked "with sparsity" are halved), in FLOP/s per GPU:

- A100: NVIDIA A100 Tensor Core GPU data sheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf):
  FP32 19.5 TF, TF32 156 TF, BF16 312 TF, FP16 312 TF (SXM4 and PCIe alike).
- H100: NVIDIA H100 Tensor Core GPU data sheet (h100-datasheet-2287922): SXM FP32 67 TF,
  TF32 989 / BF16 1,979 / FP16 1,979 TF with sparsity; PCIe FP32 51 TF, 756 / 1,513 / 1,513;
  NVL FP32 60 TF, 835 / 1,671 / 1,671.
- H200: NVIDIA H200 Tensor Core GPU data sheet (h200-datasheet-3223530): SXM FP32 67 TF,
  TF32 989 / BF16 1,979 / FP16 1,979 TF with sparsity; NVL FP32 60 TF, 835 / 1,671 / 1,671.
- L4: NVIDIA L4 Tensor Core GPU data sheet (l4-datasheet-2595652): FP32 30.3 TF,
  TF32 120 / BF16 242 / FP16 242 TF with sparsity.
- T4: NVIDIA T4 Tensor Core GPU data sheet (t4-tensor-core-datasheet-951643): FP32 8.1 TF,
  mixed FP16/FP32 65 TF; no TF32 or BF16 Tensor Cores.

These are the ceilings under ideal clocks; a real matmul reaches 60-90% of them. So MFU
uses the peak *measured* on this machine (engine.hardware.matmul_peak, stored by the
hardware check) wherever there is one, and the nominal figure only where nothing was
measured, saying which one it used.
"""
from __future__ import annotations

from typing import Optional

T = 1e12
# (name pattern in the device name, label, {fp32, tf32, bf16, fp16: FLOP/s or None}); first match wins.
NOMINAL_GPUS = (
    ("H200 NVL", "H200 NVL", {"fp32": 60 * T, "tf32": 417.5 * T, "bf16": 835.5 * T, "fp16": 835.5 * T}),
    ("H200", "H200 SXM", {"fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "fp16": 989.5 * T}),
    ("H100 PCIe", "H100 PCIe", {"fp32": 51 * T, "tf32": 378 * T, "bf16": 756.5 * T, "fp16": 756.5 * T}),
    ("H100 NVL", "H100 NVL", {"fp32": 60 * T, "tf32": 417.5 * T, "bf16": 835.5 * T, "fp16": 835.5 * T}),
    ("H100", "H100 SXM", {"fp32": 67 * T, "tf32": 494.5 * T, "bf16": 989.5 * T, "fp16": 989.5 * T}),
    ("A100", "A100", {"fp32": 19.5 * T, "tf32": 156 * T, "bf16": 312 * T, "fp16": 312 * T}),
    ("L4", "L4", {"fp32": 30.3 * T, "tf32": 60 * T, "bf16": 121 * T, "fp16": 121 * T}),
    ("T4", "T4", {"fp32": 8.1 * T, "tf32": None, "bf16": None, "fp16": 65 * T}),
)
DTYPE_KEYS = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16"}


def nominal(gpu_name: Optional[str], compute_dtype: str, tf32: bool = True) -> Optional[tuple[float, str]]:
    """(FLOP/s, label) of one GPU's nominal dense peak for `compute_dtype`
    ('float32', 'bfloat16', 'float16'), or None for an unknown GPU or a dtype it has
    no figure for. float32 reads the TF32 Tensor Core figure where the GPU has one and
    `tf32` (TensorFlow and JAX run float32 matmuls in TF32 on Ampere and later by default)."""
    if not gpu_name:
        return None
    key = DTYPE_KEYS.get(compute_dtype)
    for pattern, label, peaks in NOMINAL_GPUS:
        if pattern.lower() in gpu_name.lower():
            if key == "fp32" and tf32 and peaks.get("tf32"):
                key = "tf32"
            value = peaks.get(key) if key else None
            return (value, f"nominal {label} {key.upper()} dense peak (NVIDIA data sheet)") if value else None
    return None


def measured(peak: Optional[dict], device_kind: str, compute_dtype: str) -> Optional[tuple[float, str]]:
    """(FLOP/s, source line) from a stored matmul measurement (engine.hardware.matmul_peak.measure
    layout) on `device_kind` ('CPU', 'GPU') for `compute_dtype`, or None."""
    if not peak or peak.get("device") != device_kind:
        return None
    row = (peak.get("dtypes") or {}).get(compute_dtype) or {}
    rate = row.get("flops_per_sec")
    if not rate:
        return None
    n = row.get("n") or peak.get("n")
    return rate, (f"this machine's measured {compute_dtype} peak ({peak.get('backend')} {n}x{n} matmul on "
                  f"{peak.get('device_name') or device_kind}, {peak.get('where') or 'hardware check'})")


def choose(peak: Optional[dict], device_kind: str, compute_dtype: str, gpu_name: Optional[str] = None,
           devices: int = 1) -> dict:
    """The peak a run's MFU divides by: measured where there is one, else nominal.

    Args:
        peak: stored measurement (see `measured`) or None.
        device_kind: the run's device kind ('CPU', 'GPU', 'TPU').
        compute_dtype: the run's compute dtype.
        gpu_name: the GPU's name (for the nominal table).
        devices: physical devices the run used (its replicas, or 1 when they are
            simulated on one device: they share its peak).
    Returns: {'peak_flops_per_sec' (all devices together) | None, 'peak_source' (str),
    'peak_per_device_flops_per_sec', 'peak_devices', 'nominal_peak_flops_per_sec' | None}.
    """
    nom = nominal(gpu_name, compute_dtype) if device_kind == "GPU" else None
    got = measured(peak, device_kind, compute_dtype) or nom
    devices = max(int(devices or 1), 1)
    if got is None:
        return {"peak_flops_per_sec": None, "peak_per_device_flops_per_sec": None, "peak_devices": devices,
                "nominal_peak_flops_per_sec": None,
                "peak_source": f"no {compute_dtype} peak known for {gpu_name or device_kind}: run "
                               "python -m engine hardware --refresh"}
    rate, source = got
    return {"peak_flops_per_sec": rate * devices, "peak_per_device_flops_per_sec": rate, "peak_devices": devices,
            "nominal_peak_flops_per_sec": nom[0] * devices if nom else None,
            "peak_source": source + (f" x {devices} devices" if devices > 1 else "")}


def flops_text(v) -> str:
    """FLOP/s with an SI prefix: '45.4 GFLOP/s', '989 TFLOP/s'; '-' for None."""
    if not v:
        return "-"
    for unit, scale in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9), ("MFLOP/s", 1e6)):
        if v >= scale:
            return f"{v / scale:.3g} {unit}"
    return f"{v:.3g} FLOP/s"
