"""Quick speedup benchmark: which options help on this machine, and by how much.

A matrix of short runs on synthetic data (precision x steps per execution x
XLA x replicas), each measured against the float32 single-device baseline of
the same model and global batch in the same invocation.  Cells run one at a
time in worker processes (one per device layout, since TF fixes the layout
per process); repeats are interleaved (all cells, then all cells again) so
that drift on a shared machine hits every cell alike.  No TF in this module.
"""
from __future__ import annotations

import itertools
import json
import statistics
import subprocess
import sys
import time
from typing import Callable, Optional

from engine.machine import quick_facts

# The quick matrix's workload: small enough for ~90 s on a 2-core CPU.
# `steps` per epoch, 2 epochs per cell: enough steady executions even at 8 steps per execution.
QUICK = {"model": "cnn", "synthetic_shape": [16, 16, 3], "batch_size": 64, "steps": 32, "epochs": 2}
FULL = {"model": "resnet", "synthetic_shape": [32, 32, 3], "batch_size": 128, "steps": 48, "epochs": 2}


class BenchError(RuntimeError):
    """The benchmark could not run (one line)."""


def plan_matrix(facts: Optional[dict] = None, full: bool = False) -> list[dict]:
    """The cells to measure on this machine.

    Each cell: {'precision', 'steps_per_execution', 'jit_compile', 'devices',
    'simulated'}.  The first cell is the baseline (float32, spe 1, no XLA, 1
    device).  float16 only where there is float16 hardware (GPU/TPU) unless
    `full`; replicas > 1 only with several physical GPUs, or simulated with `full`.
    """
    f = facts if facts is not None else quick_facts()
    accel = f.get("gpus", 0) > 0 or f.get("tpu", False)
    precisions = ["float32", "mixed_bfloat16"]
    if accel or full:
        precisions.append("mixed_float16")
    if not accel and not f.get("cpu_bf16") and not full:
        precisions.remove("mixed_bfloat16")
    spes = [1, 8]
    xlas = [False, True]
    devices = [1]
    if f.get("gpus", 0) > 1:
        devices.append(min(f["gpus"], 8))
    elif full:
        devices.append(2)
    cells = []
    for d, p, s, x in itertools.product(devices, precisions, spes, xlas):
        cells.append({"precision": p, "steps_per_execution": s, "jit_compile": x, "devices": d,
                      "simulated": d > 1 and f.get("gpus", 0) < d})
    return cells


def cell_key(c: dict) -> tuple:
    return (c["precision"], c["steps_per_execution"], c["jit_compile"], c["devices"])


def summarize(cells: list[dict], samples: list[dict]) -> dict:
    """Speedups from raw measurements.

    Args:
        cells: plan_matrix output; cells[0] is the baseline.
        samples: one per measured cell and repeat: {'cell': index, 'repeat': r,
            'samples_per_sec': steady median, 'warmup_sec'}.
    Returns: {'cells': [{..settings.., 'samples_per_sec' (median over repeats),
        'speedup' (median over repeats of cell/baseline of the same repeat),
        'speedup_min', 'speedup_max', 'repeats'}], 'best': the cell with the
        highest median speedup}.
    """
    by = {}
    for s in samples:
        by.setdefault((s["cell"], s["repeat"]), s)
    out = []
    for i, c in enumerate(cells):
        reps = sorted(r for (ci, r) in by if ci == i)
        rates = [by[(i, r)]["samples_per_sec"] for r in reps]
        ratios = [by[(i, r)]["samples_per_sec"] / by[(0, r)]["samples_per_sec"]
                  for r in reps if (0, r) in by and by[(0, r)]["samples_per_sec"]]
        out.append({**c, "samples_per_sec": statistics.median(rates) if rates else None,
                    "warmup_sec": statistics.median([by[(i, r)]["warmup_sec"] for r in reps]) if reps else None,
                    "speedup": statistics.median(ratios) if ratios else None,
                    "speedup_min": min(ratios) if ratios else None,
                    "speedup_max": max(ratios) if ratios else None, "repeats": len(ratios)})
    measured = [c for c in out if c["speedup"] is not None]
    best = max(measured, key=lambda c: c["speedup"]) if measured else None
    return {"cells": out, "best": best}


def run(full: bool = False, repeats: int = 2, facts: Optional[dict] = None,
        on_progress: Optional[Callable[[int, int, dict], None]] = None,
        workload: Optional[dict] = None, cells: Optional[list[dict]] = None,
        timeout_s: float = 900) -> dict:
    """Measure the matrix; returns summarize()'s dict plus 'workload', 'machine',
    'wall_sec'.  `on_progress(done, total, sample)` is called after each cell.

    Raises: BenchError if a worker fails or times out.
    """
    from engine.runner import worker_env

    f = facts if facts is not None else quick_facts()
    cells = cells if cells is not None else plan_matrix(f, full)
    work = dict(workload or (FULL if full else QUICK))
    total = len(cells) * repeats
    samples: list[dict] = []
    t0 = time.monotonic()
    # One worker per device layout; the baseline's layout (1 device) first.
    for devices in sorted({c["devices"] for c in cells}):
        idx = [i for i, c in enumerate(cells) if c["devices"] == devices]
        job = {"workload": work, "repeats": repeats, "devices": devices,
               "cells": [{**cells[i], "index": i} for i in idx]}
        proc = subprocess.Popen([sys.executable, "-m", "engine.bench_worker"], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=worker_env())
        proc.stdin.write(json.dumps(job))
        proc.stdin.close()
        for line in proc.stdout:
            if not line.startswith("{"):
                continue
            s = json.loads(line)
            if "error" in s:
                proc.kill()
                raise BenchError(s["error"])
            samples.append(s)
            if on_progress:
                on_progress(len(samples), total, s)
            if time.monotonic() - t0 > timeout_s:
                proc.kill()
                raise BenchError(f"benchmark took longer than {timeout_s:.0f} s")
        code = proc.wait()
        if code:
            tail = proc.stderr.read().strip().splitlines()[-1:] or [""]
            raise BenchError(f"benchmark worker exited with code {code}: {tail[0][:300]}")
    result = summarize(cells, samples)
    result.update(workload=work, machine=f, wall_sec=time.monotonic() - t0, repeats=repeats)
    return result


def save(result: dict) -> str:
    """Store the result as $SPEEDLAB_HOME/bench-latest.json; returns the path."""
    from engine.store import home

    h = home()
    h.mkdir(parents=True, exist_ok=True)
    path = h / "bench-latest.json"
    path.write_text(json.dumps({**result, "created": time.time()}))
    return str(path)


def load_latest() -> Optional[dict]:
    """The last saved result, or None."""
    from engine.store import home

    try:
        return json.loads((home() / "bench-latest.json").read_text())
    except (OSError, ValueError):
        return None


def to_config_changes(cell: dict) -> dict:
    """RunConfig fields that reproduce `cell` on the Train page."""
    return {k: cell[k] for k in ("precision", "steps_per_execution", "jit_compile", "devices")}
