"""Quick speedup benchmark: which options help on this machine, and by how much.

A matrix of short runs on synthetic data (precision x steps per execution x
XLA x replicas, and x backend where JAX is installed beside TensorFlow), each measured against the float32 single-device baseline of
the same model and global batch in the same invocation.  Cells run one at a
time in worker processes (one per device layout, since TF fixes the layout
per process); repeats are interleaved (all cells, then all cells again) so
that drift on a shared machine hits every cell alike.  No TF in this module.
"""
from __future__ import annotations

import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Callable, Optional

from engine.jobs import background
from engine.hardware.machine import quick_facts

# The quick matrix's workload: small enough for ~90 s on a 2-core CPU.
# `steps` per epoch, 2 epochs per cell: enough steady executions even at 8 steps per execution.
QUICK = {"model": "cnn", "synthetic_shape": [16, 16, 3], "batch_size": 64, "steps": 32, "epochs": 2}
FULL = {"model": "resnet", "synthetic_shape": [32, 32, 3], "batch_size": 128, "steps": 48, "epochs": 2}
# The longer sibling on real data: the bundled MNIST 28x28 (engine.data.mnist5k), its 4,000
# training samples (validation_fraction 0.2) in 32 batches of 128 (the last one of 32) an epoch.
MNIST5K = {"model": "cnn", "dataset": "mnist5k", "batch_size": 128, "steps": 32, "epochs": 2}
WORKLOADS = {"synthetic": None, "mnist5k": MNIST5K}  # --dataset: None = QUICK or FULL


def workload_for(dataset: str = "synthetic", full: bool = False) -> dict:
    """The workload of `bench --dataset DATASET [--full]`: QUICK or FULL on synthetic
    images, else the real data set's (MNIST5K). Raises KeyError for another name."""
    return dict(WORKLOADS[dataset] or (FULL if full else QUICK))


def workload_text(w: dict) -> str:
    """'cnn on synthetic 16x16x3' or 'cnn on mnist5k (real 28x28x1 images)'."""
    if w.get("dataset", "synthetic") != "synthetic":
        from engine.data.meta import dataset_info

        shape = "x".join(map(str, dataset_info(w["dataset"]).shape))
        return f"{w.get('model')} on {w['dataset']} (real {shape} images)"
    return f"{w.get('model')} on synthetic {'x'.join(map(str, w.get('synthetic_shape') or []))}"


class BenchError(RuntimeError):
    """The benchmark could not run (one line)."""


def plan_matrix(facts: Optional[dict] = None, full: bool = False,
                backends: Optional[dict] = None) -> list[dict]:
    """The cells to measure on this machine.

    Each cell: {'backend', 'precision', 'steps_per_execution', 'jit_compile', 'devices',
    'simulated'}.  The first cell is the baseline (float32, spe 1, no XLA, 1
    device, TensorFlow where installed).  float16 only where there is float16 hardware
    (GPU/TPU) unless `full`; replicas > 1 only with several physical GPUs, or simulated
    with `full`. Where JAX is installed too (`backends`, default facts['backends']:
    engine.hardware.machine.installed_backends()), a backend axis: the same precisions on
    JAX (always XLA-compiled; steps per execution 1 only, unless `full`: Keras's JAX
    trainer does not fuse steps), each against the same TensorFlow baseline, so their
    speedup includes the backend's.
    """
    f = facts if facts is not None else quick_facts()
    have = backends if backends is not None else (f.get("backends") or {"tensorflow": "any"})
    names = [b for b in ("tensorflow", "jax") if have.get(b)] or ["tensorflow"]
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
    for b in names:
        # Keras 3.15's JAX trainer loops its one compiled step in Python for steps per
        # execution > 1 (no fused loop), so the quick check measures JAX at 1 only.
        b_spes = [1] if b == "jax" and not full else spes
        for d, p, s, x in itertools.product(devices, precisions, b_spes, [True] if b == "jax" else xlas):
            if b == "jax" and d > max(f.get("gpus", 0), 1) and f.get("gpus", 0):
                continue  # JAX cannot split a GPU into logical devices
            cells.append({"backend": b, "precision": p, "steps_per_execution": s, "jit_compile": x,
                          "devices": d, "simulated": d > 1 and f.get("gpus", 0) < d})
    return cells


def cell_key(c: dict) -> tuple:
    return (c.get("backend", "tensorflow"), c["precision"], c["steps_per_execution"], c["jit_compile"],
            c["devices"])


def layouts(cells: list[dict]) -> list[tuple[str, int]]:
    """(backend, devices) of each worker process, in the order they run: TensorFlow
    first (the baseline's), fewest devices first. A process has one of each."""
    rank = {"tensorflow": 0, "jax": 1}
    keys = {(c.get("backend", "tensorflow"), c["devices"]) for c in cells}
    return sorted(keys, key=lambda k: (rank.get(k[0], 2), k[1]))


def _in_layout(c: dict, layout: tuple[str, int]) -> bool:
    return (c.get("backend", "tensorflow"), c["devices"]) == layout


def summarize(cells: list[dict], samples: list[dict]) -> dict:
    """Speedups from raw measurements.

    Args:
        cells: plan_matrix output; cells[0] is the baseline.
        samples: one per measured cell and repeat: {'cell': index, 'repeat': r,
            'samples_per_sec': steady median, 'warmup_sec', 'compiled' (False for a
            repeat that fitted the cell's already compiled model; missing: True)}.
    Returns: {'cells': [{..settings.., 'samples_per_sec' (median over repeats),
        'samples_per_sec_min', 'samples_per_sec_max' (over repeats),
        'speedup' (median over repeats of cell/baseline of the same repeat),
        'speedup_min', 'speedup_max', 'repeats', 'warmup_sec' (median over the repeats
        that compiled), 'speedup_ci95' ([low, high]: 95% t interval of the geometric mean
        of the per-repeat ratios, engine.report.stats; None with one repeat), 'verdict'
        (engine.report.stats.VERDICTS or None; none under 3 repeats)}], 'best': the cell with the
        highest median speedup}.
    """
    from engine.report import stats
    by = {}
    for s in samples:
        by.setdefault((s["cell"], s["repeat"]), s)
    out = []
    for i, c in enumerate(cells):
        reps = sorted(r for (ci, r) in by if ci == i)
        rates = [by[(i, r)]["samples_per_sec"] for r in reps]
        ratios = [by[(i, r)]["samples_per_sec"] / by[(0, r)]["samples_per_sec"]
                  for r in reps if (0, r) in by and by[(0, r)]["samples_per_sec"]]
        # A repeat that reused the compiled model has next to no warm-up: not the cell's.
        warm = [by[(i, r)]["warmup_sec"] for r in reps if by[(i, r)].get("compiled", True)]
        out.append({**c, "samples_per_sec": statistics.median(rates) if rates else None,
                    "samples_per_sec_min": min(rates) if rates else None,
                    "samples_per_sec_max": max(rates) if rates else None,
                    "warmup_sec": statistics.median(warm) if warm else None,
                    "speedup": statistics.median(ratios) if ratios else None,
                    "speedup_min": min(ratios) if ratios else None,
                    "speedup_max": max(ratios) if ratios else None, "repeats": len(ratios)})
        # Each repeat pairs the cell with the baseline of the same repeat: the comparisons' statistics.
        paired = [r for r in reps if (0, r) in by and by[(0, r)]["samples_per_sec"]]
        st_ = stats.summarize([by[(0, r)]["samples_per_sec"] for r in paired],
                              [by[(i, r)]["samples_per_sec"] for r in paired], higher_is_better=True)
        out[-1].update(speedup_ci95=st_["ci95"] if i else None, verdict=st_["verdict"] if i else None)
    measured = [c for c in out if c["speedup"] is not None]
    best = max(measured, key=lambda c: c["speedup"]) if measured else None
    return {"cells": out, "best": best}


# The baseline's own repeats (max / min samples/s) further apart than this mean the machine's
# load changed while the benchmark ran: a quarter is as large as the gains many cells show
# (e.g. 1.3x), so the ranking may be the load's, not the options'.
BASELINE_SPREAD_LIMIT = 1.25


def baseline_caution(result: dict) -> Optional[str]:
    """One line when the float32 baseline's repeats (result['cells'][0]'s
    'samples_per_sec_min' and 'samples_per_sec_max', samples/s) differ by more than
    BASELINE_SPREAD_LIMIT (max / min), naming both; None otherwise, with one repeat, or
    for a result saved before those figures were kept."""
    base = (result.get("cells") or [{}])[0]
    lo, hi = base.get("samples_per_sec_min"), base.get("samples_per_sec_max")
    if not lo or not hi or hi / lo <= BASELINE_SPREAD_LIMIT:
        return None
    r = hi / lo
    return (f"The baseline's own repeats differ {r:.1f}x ({lo:,.0f} to {hi:,.0f} samples/s): the machine was "
            f"busy; speedups under ~{r:.1f}x are within that noise. Run it again on a quieter machine.")


def machine_caution(result: dict) -> Optional[str]:
    """One line when a saved result was measured on another machine than this one (another
    fingerprint id, or saved before fingerprints); None when it is this machine's."""
    from engine.hardware.fingerprint import UNKNOWN, here_id

    fp = result.get("fingerprint") or {}
    if fp.get("id") == here_id():
        return None
    return (f"Measured elsewhere ({fp.get('name') or UNKNOWN}): check it here. This machine's CPU or "
            "devices differ, so these speedups are not this machine's until you run it again.")


def run(full: bool = False, repeats: int = 2, facts: Optional[dict] = None,
        on_progress: Optional[Callable[[int, int, dict], None]] = None,
        workload: Optional[dict] = None, cells: Optional[list[dict]] = None,
        timeout_s: Optional[float] = None) -> dict:
    """Measure the matrix; returns summarize()'s dict plus 'workload', 'machine',
    'wall_sec' and 'caution' (`baseline_caution`: one line or None).
    `on_progress(done, total, sample)` is called after each cell. `timeout_s`: the
    whole benchmark's limit, default 900 s, 2,400 s on a real data set (mnist5k took
    over 900 s with 2 repeats at load 7-12 on a 2-core CPU).

    Raises: BenchError if a worker fails or times out.
    """
    from engine.base.process import worker_env

    f = facts if facts is not None else quick_facts()
    cells = cells if cells is not None else plan_matrix(f, full)
    work = dict(workload or (FULL if full else QUICK))
    if timeout_s is None:
        timeout_s = 2400.0 if work.get("dataset", "synthetic") != "synthetic" else 900.0
    total = len(cells) * repeats
    samples: list[dict] = []
    t0 = time.monotonic()
    # One worker per backend and device layout; the baseline's (TensorFlow, 1 device) first.
    # All start at once (their imports overlap) and each measures only once every one is
    # ready and the one before it has ended: nothing runs beside a measurement.
    procs = []
    try:
        for layout in layouts(cells):
            idx = [i for i, c in enumerate(cells) if _in_layout(c, layout)]
            job = {"workload": work, "repeats": repeats, "backend": layout[0], "devices": layout[1],
                   "cells": [{**cells[i], "index": i} for i in idx], "wait_go": True}
            proc_err = tempfile.TemporaryFile(mode="w+")
            # stderr to a file: an idle worker's pipe is not read while another measures.
            proc = subprocess.Popen([sys.executable, "-m", "engine.bench.worker"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=proc_err,
                                    text=True, env=worker_env())
            procs.append((proc, proc_err))
            proc.stdin.write(json.dumps(job) + "\n")
            proc.stdin.flush()
        for proc, err in procs:
            _wait_ready(proc, err, t0, timeout_s)
        for proc, err in procs:
            proc.stdin.write("go\n")
            proc.stdin.close()
            for line in proc.stdout:
                if not line.startswith("{"):
                    continue
                s = json.loads(line)
                if "error" in s:
                    raise BenchError(s["error"])
                samples.append(s)
                if on_progress:
                    on_progress(len(samples), total, s)
                if time.monotonic() - t0 > timeout_s:
                    raise BenchError(f"benchmark took longer than {timeout_s:.0f} s")
            code = proc.wait()
            if code:
                raise BenchError(f"benchmark worker exited with code {code}: {_last_line(err)}")
    finally:
        for proc, err in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            err.close()
    result = summarize(cells, samples)
    result.update(workload=work, machine=f, wall_sec=time.monotonic() - t0, repeats=repeats, full=full,
                  caution=baseline_caution(result))
    return result


def _last_line(err) -> str:
    """The last line a worker wrote to its stderr file `err` (see `run`), at most 300 characters."""
    err.seek(0)
    tail = err.read().strip().splitlines()[-1:] or [""]
    return tail[0][:300]


def _wait_ready(proc, err, t0: float, timeout_s: float) -> None:
    """Read a worker's stdout until its {'ready': true} line. Raises BenchError when it
    reports an error, exits first, or the benchmark's time is up."""
    for line in proc.stdout:
        if not line.startswith("{"):
            continue
        s = json.loads(line)
        if s.get("ready"):
            return
        if "error" in s:
            raise BenchError(s["error"])
        if time.monotonic() - t0 > timeout_s:
            raise BenchError(f"benchmark took longer than {timeout_s:.0f} s")
    code = proc.wait()
    raise BenchError(f"benchmark worker exited with code {code} before it was ready: {_last_line(err)}")


def save(result: dict) -> str:
    """Store the result as $SPEEDLAB_HOME/bench-latest.json, with this machine's fingerprint
    ({id, name}, engine.hardware.fingerprint); returns the path."""
    from engine.store import home

    h = home()
    h.mkdir(parents=True, exist_ok=True)
    path = h / "bench-latest.json"
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")  # atomic: the dashboard may be reading
    from engine.hardware.fingerprint import short

    # The machine it was measured on: on another one it is offered as "measured elsewhere".
    tmp.write_text(json.dumps({"fingerprint": short(), **result, "created": time.time()}))
    os.replace(tmp, path)
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
    return {"backend": cell.get("backend", "tensorflow"),
            **{k: cell[k] for k in ("precision", "steps_per_execution", "jit_compile", "devices")}}


# --- in the background, for the dashboard ---------------------------------------


# A 2-core CPU with JAX installed too, nothing else running: 112 s measured before repeats refitted
# the compiled models, x 0.58 as measured side by side under the same load (benchmarks/results/).
QUICK_ESTIMATE_S = 75.0


# The mnist5k sibling on an idle 2-core CPU, estimated (not measured idle): 10 cells x 2
# repeats x 2 epochs of 4,000 samples at ~1,300 samples/s, plus each cell's build and
# compilation and a worker start per backend. Measured under load: docs/datasets.md.
MNIST5K_ESTIMATE_S = 240.0


# Seconds a cell (2 repeats) takes on a 2-core CPU: the quick benchmark's 8 cells here took
# about 101 s (issue 43); mnist5k's from MNIST5K_ESTIMATE_S over its 10 cells.
PER_CELL_S = {"synthetic": 12.6, "mnist5k": MNIST5K_ESTIMATE_S / 10}


def estimate_sec(latest: Optional[dict] = None, full: bool = False,
                 dataset: str = "synthetic", cells: Optional[int] = None) -> tuple[float, str]:
    """(seconds, where the figure comes from) for a benchmark here: the last run's
    measured wall time on this machine when it measured the same matrix and data set,
    else QUICK_ESTIMATE_S (MNIST5K_ESTIMATE_S on mnist5k; no estimate is made for --full).
    With `cells` (how many this machine's matrix has: len(plan_matrix(...))): that many cells
    at the last run's seconds per cell here (same data set), else at PER_CELL_S."""
    latest = latest if latest is not None else (load_latest() or {})
    same = (latest.get("workload") or {}).get("dataset", "synthetic") == dataset
    if cells:
        done = len(latest.get("cells") or [])
        if latest.get("wall_sec") and done and same:
            per = float(latest["wall_sec"]) / done
            return per * cells, f"{cells} cells at the last run's {per:.0f} s a cell here"
        per = PER_CELL_S.get(dataset, PER_CELL_S["synthetic"])
        return per * cells, f"{cells} cells at about {per:.0f} s a cell on a 2-core CPU"
    if latest.get("wall_sec") and bool(latest.get("full")) == full and same:
        return float(latest["wall_sec"]), "the last run on this machine"
    return (MNIST5K_ESTIMATE_S if dataset == "mnist5k" else QUICK_ESTIMATE_S), "a 2-core CPU"


def step_label(done: int, total: int, repeats: Optional[int]) -> str:
    """'Measurement 7 of 16 (8 cells × 2)' (total counts cells x repeats), or 'Cell 3 of 8' with one repeat."""
    reps, k = repeats or 1, min(done + 1, total)
    return f"Measurement {k} of {total} ({total // reps} cells × {reps})" if reps > 1 else f"Cell {k} of {total}"


def time_left_sec(done: int, total: int, elapsed: float) -> Optional[float]:
    """Seconds left from the cells done so far (each cell's share of the time so far);
    None before the first cell is done. Rough: a cell's repeats take a fraction of its
    first fit (see estimate_left, which the CLI writes to the progress file)."""
    if not done or not total:
        return None
    return max(elapsed / done * (total - done), 0.0)


def progress_left(p: dict, now: float) -> Optional[float]:
    """Seconds left of a running benchmark from its progress file `p` at time `now`
    (s since the epoch): the CLI's estimate ('left_sec', written at 'left_written')
    counting down since, else `time_left_sec` from the cells done."""
    if p.get("left_sec") is not None and p.get("left_written"):
        return max(p["left_sec"] - max(now - p["left_written"], 0.0), 0.0)
    return time_left_sec(p.get("done") or 0, p.get("total") or 0, p.get("elapsed", 0))


def estimate_left(cells: list[dict], order: list[tuple[int, int]], seen: list[dict], now: float,
                  work_samples: int) -> Optional[float]:
    """Seconds left of a benchmark from what its samples so far took; None before the first.

    Args:
        cells: the matrix; order: (cell, repeat) in measuring order (`measure_order`).
        seen: the samples reported so far, in order, each with 'cell', 'repeat',
            'samples_per_sec', 'wall_sec' (its build and fit, s), 'compiled' and 'at'
            (s since the benchmark started when it was reported).
        now: s since the benchmark started.
        work_samples: samples one fit trains (steps x epochs x batch size).
    A cell's first repeat builds and compiles: it takes the mean of the first repeats
    seen with the same backend and XLA setting (else the same backend, else any). A
    later repeat refits the compiled model: its work at the cell's measured samples/s,
    plus the mean overhead (wall less that) of the later repeats seen. A worker still
    to start takes the mean start-up seen (time to a worker's first sample less that
    sample's own). The time since the last sample counts against the one being measured.
    """
    if not seen:
        return None
    backend = {i: c.get("backend", "tensorflow") for i, c in enumerate(cells)}
    layout = {i: (backend[i], c["devices"]) for i, c in enumerate(cells)}
    first = [s for s in seen if s.get("compiled", s["repeat"] == 0)]
    later = [s for s in seen if not s.get("compiled", s["repeat"] == 0)]
    rate = {s["cell"]: s["samples_per_sec"] for s in first if s.get("samples_per_sec")}
    starts, prev_at, prev_layout = [], 0.0, None
    for s in seen:  # a worker starts before each new layout's first sample
        if layout[s["cell"]] != prev_layout:
            starts.append(max(s["at"] - prev_at - s["wall_sec"], 0.0))
            prev_layout = layout[s["cell"]]
        prev_at = s["at"]

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    def alike(i: int):
        """Cells to learn from for cell i, closest first: same layout and XLA setting, same backend, any."""
        return (lambda j: layout[j] == layout[i] and cells[j]["jit_compile"] == cells[i]["jit_compile"],
                lambda j: backend[j] == backend[i], lambda j: True)

    def learned(i: int, values: dict) -> float:
        for like in alike(i):
            xs = [v for j, v in values.items() if like(j)]
            if xs:
                return mean(xs)
        return 0.0

    firsts = {s["cell"]: s for s in first}
    # A refit runs faster than the first fit's steady rate where tracing went on past the
    # first execution (XLA): the ratio seen on cells already refitted.
    gains = {s["cell"]: s["samples_per_sec"] / firsts[s["cell"]]["samples_per_sec"] for s in later
             if s.get("samples_per_sec") and firsts.get(s["cell"], {}).get("samples_per_sec")}
    # A refit's time besides its steady work (warm-up, epoch ends); 1 s until one is seen.
    overheads = [s["wall_sec"] - work_samples / s["samples_per_sec"] for s in later if s.get("samples_per_sec")]
    overhead = mean(overheads) if overheads else 1.0
    builds = {j: s["wall_sec"] for j, s in firsts.items()}

    def refit(i: int) -> float:
        return work_samples / (rate[i] * (learned(i, gains) if gains else 1.0)) + overhead

    # A cell not measured yet refits in this share of its build's time: as measured on the
    # cells refitted so far, else as predicted for the cells built so far.
    pairs = [s["wall_sec"] / builds[s["cell"]] for s in later if builds.get(s["cell"])]
    share = mean(pairs) if pairs else mean([refit(i) / w for i, w in builds.items() if rate.get(i) and w])
    built = set(builds)
    costs, current = [], layout[seen[-1]["cell"]]
    for i, _ in order[len(seen):]:
        if rate.get(i):
            c = refit(i)
        elif i in built:
            c = learned(i, builds) * share
        else:
            c = learned(i, builds)
            built.add(i)
        if layout[i] != current:
            c += mean(starts)
            current = layout[i]
        costs.append(c)
    if not costs:
        return 0.0
    return max(costs[0] - max(now - seen[-1]["at"], 0.0), 0.0) + sum(costs[1:])


def measure_order(cells: list[dict], repeats: int) -> list[tuple[int, int]]:
    """(cell index, repeat) in the order `run` measures them: one worker per
    backend and device layout (`layouts`), repeats interleaved within it."""
    out = []
    for layout in layouts(cells):
        idx = [i for i, c in enumerate(cells) if _in_layout(c, layout)]
        out += [(i, r) for r in range(repeats) for i in idx]
    return out


def progress_path():
    """$SPEEDLAB_HOME/bench-progress.json: the background benchmark's state (background.BENCH)."""
    return background.BENCH.path()


def start_background(full: bool = False, repeats: int = 2, matrix: Optional[dict] = None,
                     dataset: str = "synthetic") -> int:
    """Start ``python -m engine bench --json --progress-file ...`` detached (its
    own session: it outlives the caller) and return its pid. Follow it with
    `read_progress`; the result is saved as usual (`load_latest`).

    `matrix` ({'workload', 'cells'}, see the CLI's --matrix) replaces the
    planned matrix (tests use a tiny one). `dataset`: the workload's data set
    (`workload_for`: synthetic, or mnist5k for the longer sibling on real data).

    Raises: BenchError (one line) while a training run is queued or running, or
    a benchmark or LR range test is already running.
    """

    cells = matrix["cells"] if matrix else plan_matrix(quick_facts(), full)
    path = progress_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    extra, inputs = [], {}
    if matrix:
        inputs = {path.parent / "bench-matrix.json": matrix}
        extra = ["--matrix", str(path.parent / "bench-matrix.json")]
    return background.BENCH.start(
        ["bench", "--json", "--full" if full else "--quick", "--repeats", str(repeats),
         "--dataset", dataset, "--progress-file", str(path), *extra],
        {"done": 0, "total": len(cells) * repeats, "current": None, "error": None, "full": full,
         "repeats": repeats}, error=BenchError, inputs=inputs)


def read_progress() -> Optional[dict]:
    """The background benchmark's progress, or None if none was started here.

    Returns: {'state': 'starting' | 'running' | 'done' | 'failed' | 'cancelled',
    'done', 'total' (cells x repeats), 'current' (the cell being measured, a
    `engine.config.words.bench_cell`), 'last' ({'cell', 'samples_per_sec'} of the last measured),
    'error' (one line), 'started', 'elapsed' (s), 'pid', ...}. A job whose
    process died unseen reads as 'failed' with its log's last error line.
    """

    return background.BENCH.read()


def cancel_background() -> bool:
    """Stop the running background benchmark (its CLI and worker processes).
    Returns whether one was running."""
    return background.BENCH.cancel()
