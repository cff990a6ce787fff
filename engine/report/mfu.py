"""Model FLOPs utilization (MFU) of a run, as PaLM defines it (Chowdhery et al., 2022,
appendix B): achieved model FLOP/s over the hardware's *theoretical* peak FLOP/s.

    model_flops_per_sec = steady samples/s x training FLOPs per sample
    mfu                 = model_flops_per_sec / peak_flops_per_sec      (theoretical peak)
    mfu_of_best_matmul  = model_flops_per_sec / the best matmul measured here

Training FLOPs per sample come from engine.training.flops (what a training step computes:
first layer and frozen layers charged less, padding taps left out). The peak is the run's
compute dtype's (engine.hardware.peaks): on a CPU cores x measured clock x FLOPs per cycle
('theoretical'); on a GPU the data sheet's dense figure ('datasheet'), times the
physical devices (simulated devices share one). The best matmul (the achievable peak,
engine.hardware.peak_store) is shown beside it, never instead of it. Each run stores the
peak it was divided by; `restate` recomputes a set of runs against one stated peak.
No TensorFlow here: the app, the CLI and the worker all use it.
"""
from __future__ import annotations

from typing import Optional

MFU_KEYS = ("flops_per_sample", "model_flops_per_sec", "peak_flops_per_sec", "peak_kind", "peak_text",
            "peak_source", "peak_parts", "peak_dtype", "peak_device", "mfu", "best_matmul_flops_per_sec", "best_matmul_n", "mfu_of_best_matmul")


def physical_devices(summary: dict) -> int:
    """Devices whose peaks add up: the replicas on GPUs or TPU cores; 1 for CPU replicas
    (one CPU, whose cores every replica shares) and for simulated devices."""
    if summary.get("replicas_simulated") or summary.get("device_kind") not in ("GPU", "TPU"):
        return 1
    return int(summary.get("replicas") or 1)


def fields(summary: dict, flops_per_sample: Optional[float], gpu_name: Optional[str] = None,
           cpu: Optional[dict] = None, best: Optional[tuple] = None) -> dict:
    """The MFU fields of a run's summary.

    Args:
        summary: the run's summary (samples_per_sec: steady samples/s, device_kind,
            compute_dtype, replicas, replicas_simulated).
        flops_per_sample: training FLOPs per sample, or None when not counted.
        gpu_name: the GPU's name, for the data-sheet table.
        cpu: engine.hardware.peaks.cpu_theoretical's result for this machine (CPU runs).
        best: (FLOP/s, n) of the best matmul measured on one device in the run's dtype, or None.
    Returns: {'flops_per_sample', 'model_flops_per_sec' (FLOP/s), 'peak_flops_per_sec' (FLOP/s,
    all physical devices), 'peak_kind' ('theoretical' | 'datasheet' | None), 'peak_text' (the
    denominator's parts), 'peak_source' (one line), 'peak_parts', 'peak_dtype', 'mfu' (0..1;
    None without a rate, a count or a peak), 'best_matmul_flops_per_sec', 'best_matmul_n',
    'mfu_of_best_matmul'}; above the peak (a count that is not what ran: a model whose trainable
    layers changed after it was counted) no count and no MFU, with 'flops_note' saying why.
    """
    from engine.hardware.peaks import theoretical

    dtype = summary.get("compute_dtype") or "float32"
    devices = physical_devices(summary)
    peak = theoretical(summary.get("device_kind") or "CPU", dtype, gpu_name, devices, cpu)
    rate = summary.get("samples_per_sec")
    achieved = rate * flops_per_sample if rate and flops_per_sample else None
    top = peak["peak_flops_per_sec"]
    best_rate = best[0] * devices if best and best[0] else None
    over = {}
    if achieved and top and achieved > top:  # no step runs above its peak: the count is not what ran
        over = {"flops_note": f"MFU not shown: {flops_per_sample:,} FLOPs per sample at {rate:,.0f} samples/s "
                              f"would be {achieved / top:.0%} of the theoretical peak ({peak['peak_text']}): "
                              "the count is not what the steps ran"}
        flops_per_sample = achieved = best_rate = None
    return {**over, "flops_per_sample": flops_per_sample, "model_flops_per_sec": achieved,
            "peak_flops_per_sec": top, "peak_kind": peak["peak_kind"], "peak_text": peak["peak_text"],
            "peak_source": peak["peak_source"], "peak_parts": peak["peak_parts"], "peak_dtype": dtype,
            "mfu": achieved / top if achieved and top else None,
            "best_matmul_flops_per_sec": best_rate, "best_matmul_n": best[1] if best_rate else None,
            "mfu_of_best_matmul": achieved / best_rate if achieved and best_rate else None}


def machine_fields(summary: dict, flops_per_sample: Optional[float], measure_clock: bool = False) -> dict:
    """`fields` against this machine's peaks (engine.hardware.peak_store): the stored clock
    (measured now only with `measure_clock`: worker processes, about 0.2 s) and the kept
    best matmul; never times a matmul."""
    from engine.hardware import peak_store
    from engine.hardware.machine import quick_facts

    kind = summary.get("device_kind") or "CPU"
    dtype = summary.get("compute_dtype") or "float32"
    gpus = quick_facts()["gpu_names"] if kind == "GPU" else []
    cpu = peak_store.cpu_theoretical(measure_clock=measure_clock) if kind == "CPU" else None
    out = fields(summary, flops_per_sample, gpus[0] if gpus else None, cpu, peak_store.best_matmul_rate(kind, dtype))
    out["peak_device"] = gpus[0] if gpus else quick_facts()["cpu_model"] if kind == "CPU" else kind
    return out


def of(summary: dict, plan: Optional[dict] = None) -> dict:
    """The MFU fields of a stored run: the summary's own when it was divided by a theoretical
    or data-sheet peak (it has 'peak_kind'), else (a run still going, or one stored before
    this convention, which divided by a measured matmul) computed against this machine's
    peaks. Values are None where unknown; every key of MFU_KEYS is there."""
    if "peak_kind" in summary:
        return {k: summary.get(k) for k in MFU_KEYS}
    fps = summary.get("flops_per_sample") or (plan or {}).get("flops_per_sample")
    if not fps:
        return {k: None for k in MFU_KEYS}
    return {k: v for k, v in machine_fields({**(plan or {}), **summary}, fps).items() if k in MFU_KEYS}


def restate(m: dict, peak_flops_per_sec: Optional[float], best_matmul_flops_per_sec: Optional[float] = None) -> dict:
    """`m` (fields of one run) divided by another peak: one denominator for every run a
    table or comparison shows. Returns {'mfu', 'mfu_of_best_matmul'} (None where unknown)."""
    achieved = m.get("model_flops_per_sec")
    return {"mfu": achieved / peak_flops_per_sec if achieved and peak_flops_per_sec else None,
            "mfu_of_best_matmul": achieved / best_matmul_flops_per_sec
            if achieved and best_matmul_flops_per_sec else None}


def common_peaks(rows: list[dict]) -> dict:
    """One peak per compute dtype for a set of runs' fields (`of`): {dtype: {'peak_flops_per_sec',
    'peak_kind', 'peak_text', 'best_matmul_flops_per_sec', 'runs': how many stored that peak}},
    the peak most of the runs of that dtype were divided by (ties: the most recent row's, i.e.
    the last)."""
    by: dict = {}
    for m in rows:
        if not m.get("peak_flops_per_sec"):
            continue
        key = (m["peak_flops_per_sec"], m.get("peak_kind"), m.get("peak_text"), m.get("best_matmul_flops_per_sec"))
        by.setdefault(m.get("peak_dtype") or "float32", []).append(key)
    out = {}
    for dtype, keys in by.items():
        best = max(keys, key=lambda k: (keys.count(k), max(i for i, x in enumerate(keys) if x == k)))
        out[dtype] = {"peak_flops_per_sec": best[0], "peak_kind": best[1], "peak_text": best[2],
                      "best_matmul_flops_per_sec": best[3], "runs": keys.count(best)}
    return out


def _pct(v: float) -> str:
    p = 100 * v
    return f"{p:.0f}%" if p >= 10 else f"{p:.2g}%"


def denominator(m: dict) -> Optional[str]:
    """'463 GFLOP/s theoretical bfloat16 (2 cores x 3.59 GHz x 64 FLOPs/cycle)' or None."""
    if not m.get("peak_flops_per_sec"):
        return None
    from engine.hardware.peaks import flops_text

    kind = {"theoretical": "theoretical", "datasheet": "data-sheet"}.get(m.get("peak_kind") or "", "stored")
    parts = f" ({m['peak_text']})" if m.get("peak_text") else ""
    return f"{flops_text(m['peak_flops_per_sec'])} {kind} {m.get('peak_dtype') or 'float32'}{parts}"


def mfu_line(m: dict) -> Optional[str]:
    """'53% of 463 GFLOP/s theoretical bfloat16 (2 cores x 3.59 GHz x 64 FLOPs/cycle); 61% of
    the best bfloat16 matmul measured here (402 GFLOP/s, n = 2048)' from `of()`/`fields()`,
    or None without an MFU."""
    if m.get("mfu") is None:
        return None
    from engine.hardware.peaks import flops_text

    line = f"{_pct(m['mfu'])} of {denominator(m)}"
    if m.get("mfu_of_best_matmul") is not None:
        n = f", n = {m['best_matmul_n']}" if m.get("best_matmul_n") else ""
        line += (f"; {_pct(m['mfu_of_best_matmul'])} of the best {m.get('peak_dtype') or 'float32'} matmul "
                 f"measured here ({flops_text(m['best_matmul_flops_per_sec'])}{n})")
    return line
