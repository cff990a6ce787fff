"""What bounds a run, and the next lever: one pure function over a finished run's stored
time split and MFU (engine.report.mfu), so that it can be tested on runs built to hit
each branch. No TensorFlow.

Rules, first match wins:
1. outside training: setup + warm-up + validation + other >= OUTSIDE_SHARE of the wall
   time. The largest part is named with its fix; the steps' own bound follows.
2. input: the steady steps waited for data >= INPUT_SHARE of their time
   (summary 'data_wait_share'): prefetch, cache, a cheaper augmentation.
3. compute: the steps reach COMPUTE_OF_BEST of the best matmul measured on this machine
   (mfu_of_best_matmul), or, where none was measured, MFU >= COMPUTE_MFU of the theoretical
   peak (engine.report.mfu): lower precision, more devices. The best matmul is what this
   hardware and library reach on the friendliest shape; a model step rarely beats it.
4. host overhead: not compute-bound and a step shorter than HOST_STEP_S, so fixed
   per-step costs (Python, op dispatch, launches) dwarf the FLOPs: a larger batch,
   more steps per execution, XLA.
5. kernels: MFU below that in long steps without data wait: the time goes to ops that
   move memory rather than multiply (normalisation, elementwise, small convolutions):
   XLA fusion, lower precision.
"""
from __future__ import annotations

from typing import Optional

OUTSIDE_SHARE = 0.5
INPUT_SHARE = 0.2
COMPUTE_MFU = 0.5       # of the theoretical (CPU) or data-sheet (GPU) peak, when no best matmul is known
COMPUTE_OF_BEST = 0.7   # of the best matmul measured on this machine
HOST_STEP_S = 0.02

OUTSIDE_FIXES = {
    "setup": "setup (interpreter, imports, devices, data, model) is paid once per run: train longer "
             "to amortise it, or start from the dashboard's warm worker",
    "warmup": "warm-up (tracing, compiling) is paid once per compile: train longer, keep batch shapes "
              "fixed so nothing recompiles",
    "validation": "validate less often or on fewer samples, with a larger validation batch",
    "other": "time between steps outside fit's batches (callbacks, epoch ends): fewer or cheaper callbacks",
}
PART_WORDS = {"setup": "setup", "warmup": "warm-up", "validation": "validation", "other": "other"}


def _pct(v: float) -> str:
    p = 100 * v
    return f"{p:.0f}%" if p >= 10 else f"{p:.2g}%"


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms"


def _steps_bound(s: dict) -> Optional[dict]:
    """Rules 2-5 on the steady steps: {'kind', 'line', 'lever', 'figures'} or None."""
    rate, batch = s.get("samples_per_sec"), s.get("global_batch_size")
    mfu, wait = s.get("mfu"), s.get("data_wait_share")
    if not rate:
        return None
    step = batch / rate if batch else None
    if wait is not None and wait >= INPUT_SHARE:
        return {"kind": "input", "figures": {"data_wait_share": wait}, "short": f"input: data wait {_pct(wait)}",
                "line": f"input: the steady steps waited for data {_pct(wait)} of their time",
                "lever": "prefetch, cache the decoded data, or a cheaper augmentation"}
    if mfu is None:
        return None
    dtype = s.get("peak_dtype") or s.get("compute_dtype") or "float32"
    of_best = s.get("mfu_of_best_matmul")
    if (of_best is not None and of_best >= COMPUTE_OF_BEST) or (of_best is None and mfu >= COMPUTE_MFU):
        lever = ("lower precision (mixed_bfloat16, or mixed_float16 on a GPU), more devices"
                 if dtype == "float32" else "more devices, or a smaller model")
        best = f", {_pct(of_best)} of the best {dtype} matmul" if of_best is not None else ""
        return {"kind": "compute", "figures": {"mfu": mfu, "mfu_of_best_matmul": of_best},
                "short": f"compute: MFU {_pct(mfu)}{best}",
                "line": f"compute: MFU {_pct(mfu)} of the {dtype} peak{best}", "lever": lever}
    ideal = step * mfu if step else None  # the step's FLOPs at the peak, s
    if step is not None and step < HOST_STEP_S:
        spe = s.get("steps_per_execution") or 1
        levers = [f"a larger batch (now {batch:,})", f"more steps per execution (now {spe})"]
        if not s.get("jit_compile"):
            levers.append("XLA (jit_compile)")
        return {"kind": "host", "figures": {"mfu": mfu, "step_sec": step, "ideal_step_sec": ideal},
                "short": f"host overhead: {_ms(step)} steps, {1 / mfu:.3g}x their FLOPs at the peak",
                "line": f"host overhead: a step takes {_ms(step)}, {1 / mfu:.3g}x its FLOPs at the peak "
                        f"({_ms(ideal)}; MFU {_pct(mfu)})",
                "lever": ", ".join(levers)}
    return {"kind": "kernels", "figures": {"mfu": mfu, "step_sec": step},
            "short": f"kernels: MFU {_pct(mfu)} in {_ms(step) if step else 'long'} steps",
            "line": f"kernels: MFU {_pct(mfu)} in {_ms(step) if step else 'long'} steps without data wait: "
                    "memory-bound ops (normalisation, elementwise, small convolutions) take the time",
            "lever": ("XLA fusion (jit_compile), lower precision" if not s.get("jit_compile")
                      else "lower precision, larger layers per op")}


def bound_by(summary: dict) -> Optional[dict]:
    """What limits a finished run.

    Args:
        summary: a run's summary: wall_sec, setup_sec, warmup_sec, validation_sec,
            other_sec (s), samples_per_sec (steady, samples/s), global_batch_size,
            data_wait_share (0..1), mfu (0..1, engine.report.mfu), compute_dtype,
            steps_per_execution, jit_compile.
    Returns: {'kind': 'outside' | 'input' | 'compute' | 'host' | 'kernels', 'line': one
    line with the figures that decided it and the next lever, 'short': the verdict and
    its figures without the lever (a table cell), 'lever', 'figures',
    'steps': the steady steps' own verdict (for 'outside'; else the same dict's kind)};
    None without a steady state to judge.
    """
    steps = _steps_bound(summary)
    wall = summary.get("wall_sec")
    parts = {k: summary.get(f"{k}_sec") or 0.0 for k in PART_WORDS}
    outside = sum(parts.values())
    if wall and outside / wall >= OUTSIDE_SHARE:
        k = max(parts, key=parts.get)
        line = (f"Bound by time outside training: {_pct(outside / wall)} of {wall:.1f} s wall, most of it "
                f"{PART_WORDS[k]} ({parts[k]:.1f} s). Next lever: {OUTSIDE_FIXES[k]}")
        if steps:
            line += f". The steps themselves: {steps['line']}"
        short = f"outside training: {PART_WORDS[k]} {parts[k]:.1f} s of {wall:.1f} s" + (
            f"; steps: {steps['short']}" if steps else "")
        return {"kind": "outside", "figures": {"outside_share": outside / wall, "part": k, "part_sec": parts[k]},
                "short": short,
                "lever": OUTSIDE_FIXES[k], "line": line, "steps": steps["kind"] if steps else None}
    if steps is None:
        return None
    return {**steps, "line": f"Bound by {steps['line']}. Next lever: {steps['lever']}", "steps": steps["kind"]}
