"""Model FLOPs utilization (MFU) of a run: achieved model FLOP/s over the peak FLOP/s
of the hardware it ran on (Chowdhery et al., 2022, "PaLM", appendix B).

    model_flops_per_sec = steady samples/s x training FLOPs per sample
    mfu                 = model_flops_per_sec / peak_flops_per_sec

Training FLOPs per sample come from engine.training.flops (3 x the forward pass's
matrix FLOPs); the peak is the run's compute dtype's, measured on this machine where it
was (engine.hardware.matmul_peak, stored by the hardware check), else the GPU's nominal
data-sheet figure (engine.hardware.peaks), times the physical devices (simulated
devices share one). No TensorFlow here: the app, the CLI and the worker all use it.
"""
from __future__ import annotations

from typing import Optional

MFU_KEYS = ("flops_per_sample", "model_flops_per_sec", "peak_flops_per_sec", "peak_source", "mfu")


def physical_devices(summary: dict) -> int:
    """Devices whose peaks add up: the replicas on GPUs or TPU cores; 1 for CPU replicas
    (one CPU, whose cores every replica shares) and for simulated devices."""
    if summary.get("replicas_simulated") or summary.get("device_kind") not in ("GPU", "TPU"):
        return 1
    return int(summary.get("replicas") or 1)


def fields(summary: dict, flops_per_sample: Optional[float], peak: Optional[dict],
           gpu_name: Optional[str] = None) -> dict:
    """The MFU fields of a run's summary.

    Args:
        summary: the run's summary (samples_per_sec: steady samples/s, device_kind,
            compute_dtype, replicas, replicas_simulated).
        flops_per_sample: training FLOPs per sample, or None when not counted.
        peak: the stored matmul measurement (engine.hardware.matmul_peak.measure) or None.
        gpu_name: the GPU's name, for the nominal table.
    Returns: {'flops_per_sample', 'model_flops_per_sec' (FLOP/s), 'peak_flops_per_sec'
    (FLOP/s, all physical devices), 'peak_source' (which peak, in words), 'peak_dtype',
    'mfu' (0..1, None without a rate, a count or a peak), 'nominal_peak_flops_per_sec'}.
    """
    from engine.hardware.peaks import choose

    dtype = summary.get("compute_dtype") or "float32"
    chosen = choose(peak, summary.get("device_kind") or "CPU", dtype, gpu_name, physical_devices(summary))
    rate = summary.get("samples_per_sec")
    achieved = rate * flops_per_sample if rate and flops_per_sample else None
    top = chosen["peak_flops_per_sec"]
    return {"flops_per_sample": flops_per_sample, "model_flops_per_sec": achieved,
            "peak_flops_per_sec": top, "peak_source": chosen["peak_source"], "peak_dtype": dtype,
            "nominal_peak_flops_per_sec": chosen["nominal_peak_flops_per_sec"],
            "mfu": achieved / top if achieved and top else None}


def of(summary: dict, plan: Optional[dict] = None) -> dict:
    """The MFU fields of a stored run: the summary's own, or (a run still going, or one
    stored before them) computed from the plan's FLOPs and the peak stored on this machine.
    Values are None where unknown; every key of MFU_KEYS is there."""
    if summary.get("mfu") is not None or summary.get("peak_source"):
        return {k: summary.get(k) for k in (*MFU_KEYS, "peak_dtype", "nominal_peak_flops_per_sec")}
    fps = summary.get("flops_per_sample") or (plan or {}).get("flops_per_sample")
    if not fps:
        return {k: None for k in MFU_KEYS}
    from engine.hardware.peak_store import stored_peak

    return fields({**(plan or {}), **summary}, fps, stored_peak())


def headline(m: dict) -> Optional[str]:
    """'12% of this machine's measured bfloat16 peak (1.1 of 9.0 GFLOP/s)' from `of()`/`fields()`, or None."""
    if m.get("mfu") is None:
        return None
    from engine.hardware.peaks import flops_text

    which = "nominal" if (m.get("peak_source") or "").startswith("nominal") else "this machine's measured"
    pct = 100 * m["mfu"]
    pct = f"{pct:.0f}" if pct >= 10 else f"{pct:.2g}"
    return (f"{pct}% of {which} {m.get('peak_dtype') or ''} peak ".replace("  ", " ")
            + f"({flops_text(m['model_flops_per_sec'])} of {flops_text(m['peak_flops_per_sec'])})")
