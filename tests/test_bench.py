"""Quick benchmark: matrix planning, speedup arithmetic, and a tiny real matrix."""
import copy
import json
import subprocess
import types

import pytest

from engine.config import words
from engine.bench import quick as bench
from tests.helpers import cli


def test_plan_matrix_fits_the_machine():
    cpu = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": False})
    assert {c["precision"] for c in cpu} == {"float32"}  # no bf16/fp16 hardware: only float32 cells
    assert len(cpu) == 4 and cpu[0] == {"backend": "tensorflow", "precision": "float32", "steps_per_execution": 1,
                                        "jit_compile": False, "devices": 1, "simulated": False}
    bf16 = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": True})
    assert {c["precision"] for c in bf16} == {"float32", "mixed_bfloat16"} and len(bf16) == 8
    gpus = bench.plan_matrix({"gpus": 4, "tpu": False, "cpu_bf16": False})
    assert len(gpus) == 24 and {c["devices"] for c in gpus} == {1, 4}
    assert not any(c["simulated"] for c in gpus)
    full = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": False}, full=True)
    assert any(c["simulated"] and c["devices"] == 2 for c in full)


def test_backend_axis_where_jax_is_installed_too():
    both = {"tensorflow": "2.21.0", "jax": "0.10.2"}
    cells = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": True, "backends": both})
    tf = [c for c in cells if c["backend"] == "tensorflow"]
    jx = [c for c in cells if c["backend"] == "jax"]
    # TensorFlow: 2 precisions x spe {1, 8} x XLA {off, on}; JAX (always XLA): 2 precisions at spe 1
    # (Keras's JAX trainer does not fuse steps; the full matrix has spe 8 on JAX too).
    assert len(tf) == 8 and len(jx) == 2 and all(c["jit_compile"] and c["steps_per_execution"] == 1 for c in jx)
    full = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": True, "backends": both}, full=True)
    assert {c["steps_per_execution"] for c in full if c["backend"] == "jax"} == {1, 8}
    assert cells[0]["backend"] == "tensorflow" and bench.layouts(cells) == [("tensorflow", 1), ("jax", 1)]
    # Repeats interleave within each worker process: all TF cells, then all JAX cells.
    order = bench.measure_order(cells, 2)
    assert [cells[i]["backend"] for i, _ in order] == ["tensorflow"] * 16 + ["jax"] * 4
    assert words.bench_cell(jx[0]) == "JAX · fp32 · spe 1 · 1 device"
    assert bench.to_config_changes(jx[0])["backend"] == "jax"
    # JAX alone (a GPU image without TensorFlow): its own float32 cell is the baseline.
    only = bench.plan_matrix({"gpus": 1, "tpu": False, "backends": {"jax": "0.10.2"}})
    assert only[0] == {"backend": "jax", "precision": "float32", "steps_per_execution": 1, "jit_compile": True,
                       "devices": 1, "simulated": False}
    # JAX cannot split a GPU: no simulated multi-device JAX cells on a GPU machine.
    multi = bench.plan_matrix({"gpus": 1, "tpu": False, "backends": both}, full=True)
    assert not any(c["backend"] == "jax" and c["devices"] > 1 for c in multi)
    assert any(c["backend"] == "tensorflow" and c["devices"] == 2 for c in multi)


def test_summarize_speedups_and_spread():
    cells = [{"precision": "float32", "steps_per_execution": 1, "jit_compile": False, "devices": 1,
              "simulated": False},
             {"precision": "mixed_bfloat16", "steps_per_execution": 1, "jit_compile": False, "devices": 1,
              "simulated": False}]
    samples = [{"cell": 0, "repeat": 0, "samples_per_sec": 1000.0, "warmup_sec": 1.0},
               {"cell": 1, "repeat": 0, "samples_per_sec": 1500.0, "warmup_sec": 1.0},
               {"cell": 0, "repeat": 1, "samples_per_sec": 800.0, "warmup_sec": 1.0},
               {"cell": 1, "repeat": 1, "samples_per_sec": 1600.0, "warmup_sec": 1.0}]
    r = bench.summarize(cells, samples)
    # Repeat 0: 1500/1000 = 1.5; repeat 1: 1600/800 = 2.0; median 1.75.
    assert r["cells"][1]["speedup"] == pytest.approx(1.75)
    assert (r["cells"][1]["speedup_min"], r["cells"][1]["speedup_max"]) == (1.5, 2.0)
    assert r["cells"][0]["speedup"] == 1.0 and r["cells"][0]["samples_per_sec"] == 900.0
    assert r["best"]["precision"] == "mixed_bfloat16"
    # Two paired repeats: no interval and no verdict (3 pairs are the fewest for either; the t
    # interval of two, 12.7 standard errors wide, read [0.28-10.77]).
    assert r["cells"][1]["speedup_ci95"] is None
    assert r["cells"][1]["verdict"] is None and r["cells"][0]["speedup_ci95"] is None


def _two_cells(base_rates, ratio=1.5):
    """summarize() of a baseline with `base_rates` (samples/s, one per repeat) and a
    bf16 cell `ratio` times faster in every repeat."""
    cells = [{"precision": "float32", "steps_per_execution": 1, "jit_compile": False, "devices": 1,
              "simulated": False},
             {"precision": "mixed_bfloat16", "steps_per_execution": 1, "jit_compile": False, "devices": 1,
              "simulated": False}]
    samples = [{"cell": i, "repeat": r, "samples_per_sec": rate * (ratio if i else 1.0), "warmup_sec": 1.0}
               for r, rate in enumerate(base_rates) for i in range(2)]
    return bench.summarize(cells, samples)


def test_a_baseline_whose_repeats_differ_gets_a_caution():
    # As a new user saw on a busy machine: 1,680 and 3,017 samples/s, 3,017 / 1,680 = 1.796.
    busy = _two_cells([1680.0, 3017.0])
    assert (busy["cells"][0]["samples_per_sec_min"], busy["cells"][0]["samples_per_sec_max"]) == (1680.0, 3017.0)
    assert busy["best"]["speedup"] == pytest.approx(1.5)
    assert bench.baseline_caution(busy) == (
        "The baseline's own repeats differ 1.8x (1,680 to 3,017 samples/s): the machine was busy; speedups "
        "under ~1.8x are within that noise. Run it again on a quieter machine.")
    # 1,260 / 1,000 = 1.26 > 1.25: cautioned; 1,250 / 1,000 = 1.25 exactly is not.
    assert bench.baseline_caution(_two_cells([1000.0, 1260.0])).startswith(
        "The baseline's own repeats differ 1.3x (1,000 to 1,260 samples/s)")
    assert bench.baseline_caution(_two_cells([1250.0, 1000.0])) is None
    assert bench.baseline_caution(_two_cells([1680.0])) is None  # one repeat: no spread to judge
    # A result saved before the min and max were kept: no caution, no error.
    old = {"cells": [{k: v for k, v in c.items() if not k.startswith("samples_per_sec_")} for c in busy["cells"]]}
    assert bench.baseline_caution(old) is None and bench.baseline_caution({"cells": []}) is None


def test_warm_up_is_the_compiling_repeats():
    cells = [{"precision": "float32", "steps_per_execution": 1, "jit_compile": False, "devices": 1,
              "simulated": False}]
    # Repeat 1 refitted the compiled model (0.05 s of warm-up): the cell's warm-up is repeat 0's
    # 2.0 s, not the median 1.025 s; old results without the flag count every repeat.
    samples = [{"cell": 0, "repeat": 0, "samples_per_sec": 1000.0, "warmup_sec": 2.0, "compiled": True},
               {"cell": 0, "repeat": 1, "samples_per_sec": 1000.0, "warmup_sec": 0.05, "compiled": False}]
    assert bench.summarize(cells, samples)["cells"][0]["warmup_sec"] == 2.0
    for s in samples:
        del s["compiled"]
    assert bench.summarize(cells, samples)["cells"][0]["warmup_sec"] == pytest.approx(1.025)


class _Watched(subprocess.Popen):
    """A benchmark worker whose JSON lines are kept as bench.run reads them, each with whether
    the worker was still alive when it was read."""

    seen: list = []  # set per matrix: [(process, [(line as JSON, alive)])]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        lines: list = []
        self.seen.append((self, lines))
        self.stdout = _Lines(self.stdout, self, lines)


class _Lines:
    """`stdout` read line by line, the JSON lines also kept in `lines`."""

    def __init__(self, f, proc, lines):
        self.f, self.proc, self.lines = f, proc, lines

    def __iter__(self):
        return self

    def __next__(self):
        line = next(self.f)
        if line.startswith("{"):
            self.lines.append((json.loads(line), self.proc.poll() is None))
        return line

    def close(self):
        self.f.close()


@pytest.fixture(scope="module")
def tiny_matrix():
    """One tiny real matrix, read by the three tests below: float32 (the baseline) and bf16 with
    4 steps per execution, 2 repeats, an MLP on 8x8 synthetic data, 40 steps x 2 epochs a fit but
    each fit may stop once 4 steady steps are in (no minimum time). Returns (result, progress calls
    as (done, total, sample), the worker's JSON lines as (line, alive when read), its exit code).
    bench.run writes nothing to the store; both cells share one worker (one layout)."""
    cells = [{"precision": "float32", "steps_per_execution": 1, "jit_compile": False, "devices": 1,
              "simulated": False},
             {"precision": "mixed_bfloat16", "steps_per_execution": 4, "jit_compile": False, "devices": 1,
              "simulated": False}]
    work = {"model": "mlp", "synthetic_shape": [8, 8, 1], "batch_size": 32, "steps": 40, "epochs": 2,
            "steady_min_steps": 4, "steady_min_s": 0.0}
    seen = []
    watched = types.ModuleType("subprocess")
    watched.__dict__.update(vars(subprocess), Popen=_Watched)
    _Watched.seen = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(bench, "subprocess", watched)
        r = bench.run(repeats=2, cells=cells, workload=work, on_progress=lambda d, t, s: seen.append((d, t, s)))
    ((proc, lines),) = _Watched.seen
    return r, seen, lines, proc.returncode


@pytest.mark.worker
def test_repeats_refit_each_cells_compiled_model(tiny_matrix):
    r, calls, _, _ = tiny_matrix
    seen = [s for _, _, s in calls]
    # Interleaved: both cells, then both again; the second round reuses the models built in the first.
    assert [(s["cell"], s["repeat"], s["compiled"]) for s in seen] == [
        (0, 0, True), (1, 0, True), (0, 1, False), (1, 1, False)]
    assert all(s["samples_per_sec"] > 0 for s in seen)
    assert [c["repeats"] for c in r["cells"]] == [2, 2]
    assert [c["warmup_sec"] for c in r["cells"]] == [seen[0]["warmup_sec"], seen[1]["warmup_sec"]]
    base = sorted([seen[0]["samples_per_sec"], seen[2]["samples_per_sec"]])
    assert [r["cells"][0]["samples_per_sec_min"], r["cells"][0]["samples_per_sec_max"]] == base
    assert r["caution"] == bench.baseline_caution(r)  # for --json; None or the line, by this machine's load


@pytest.mark.worker
def test_a_worker_waits_for_go_and_a_slow_fit_stops_once_steady(tiny_matrix):
    _, calls, lines, code = tiny_matrix
    (ready, alive), *after = lines
    assert ready == {"ready": True} and alive  # nothing measured before 'go'
    samples = [line for line, _ in after]
    assert samples == [s for _, _, s in calls] and code == 0  # after 'go': the four samples, then exit 0
    # One warm-up execution, then 4 steady steps (4 executions of one batch, or one of 4 at 4 steps per
    # execution): every fit stopped long before its 80 steps.
    assert [s["steady_steps"] for s in samples] == [4, 4, 4, 4] and all(s["samples_per_sec"] > 0 for s in samples)


@pytest.mark.worker
def test_tiny_real_matrix_one_row_per_cell_and_baseline_exactly_one(tiny_matrix, store_home):
    r, calls, _, _ = tiny_matrix
    assert [(d, t) for d, t, _ in calls] == [(1, 4), (2, 4), (3, 4), (4, 4)]  # one call per cell and repeat
    assert len(r["cells"]) == 2
    assert r["cells"][0]["speedup"] == 1.0
    assert r["cells"][1]["samples_per_sec"] > 0 and r["best"] is not None
    bench.save(copy.deepcopy(r))  # into this test's own store; the fixture's result stays as measured
    assert bench.load_latest()["cells"][1]["steps_per_execution"] == 4


def test_cli_bench_refuses_while_a_run_is_active(store_home):
    from engine.config import RunConfig
    from engine.store import Store

    s = Store()
    rid = s.create_run(RunConfig().to_json(), status="queued")
    s.close()
    out = cli.engine("bench", "--json")
    assert out.returncode == 2 and f"run #{rid} is queued" in out.stderr


TINY = {"workload": {"model": "mlp", "synthetic_shape": [8, 8, 1], "batch_size": 32, "steps": 8, "epochs": 2},
        "cells": [{"precision": "float32", "steps_per_execution": 1, "jit_compile": False, "devices": 1},
                  {"precision": "float32", "steps_per_execution": 4, "jit_compile": False, "devices": 1}]}


@pytest.mark.worker
def test_background_benchmark_writes_progress_and_refuses_a_second(store_home):
    """A tiny real matrix in a detached process: the progress file goes
    starting/running -> done with cells done/total and the cell being measured."""
    import time

    from engine.jobs import background

    pid = bench.start_background(repeats=1, matrix=TINY)
    try:
        with pytest.raises(bench.BenchError, match="quick benchmark is running"):
            bench.start_background(repeats=1, matrix=TINY)
        seen = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            p = bench.read_progress()
            if not seen or seen[-1] != (p["state"], p["done"], p["current"]):
                seen.append((p["state"], p["done"], p["current"]))
            if p["state"] not in background.ACTIVE_STATES:
                break
            time.sleep(0.1)
    finally:
        background.stop({"pid": pid, "pid_started": None})
    assert p["state"] == "done", (p, seen)
    assert (p["done"], p["total"], p["current"], p["error"]) == (2, 2, None, None)
    assert p["pid"] == pid and p["elapsed"] > 0
    assert p["last"]["cell"] == "fp32 · spe 4 · XLA off · 1 device" and p["last"]["samples_per_sec"] > 0
    assert ("running", 0, "fp32 · spe 1 · XLA off · 1 device") in seen
    assert bench.load_latest()["cells"][1]["steps_per_execution"] == 4
    assert not list(store_home.glob(".bench-progress.json.tmp*"))  # written atomically


def test_background_benchmark_refused_while_a_run_is_active(store_home):
    from engine.config import RunConfig
    from engine.store import Store

    s = Store()
    rid = s.create_run(RunConfig().to_json(), status="queued")
    s.close()
    with pytest.raises(bench.BenchError, match=f"run #{rid} is queued"):
        bench.start_background()
    assert bench.read_progress() is None  # nothing was started


def test_cli_progress_file_reports_a_refusal(store_home):
    from engine.config import RunConfig
    from engine.store import Store

    s = Store()
    rid = s.create_run(RunConfig().to_json(), status="queued")
    s.close()
    path = store_home / "progress.json"
    out = cli.engine("bench", "--json", "--progress-file", str(path))
    assert out.returncode == 2
    import json

    p = json.loads(path.read_text())
    assert p["state"] == "failed" and f"run #{rid} is queued" in p["error"] and p["finished"]


def test_a_benchmark_process_that_died_reads_as_failed(store_home):
    from engine.jobs import background

    log = store_home / "bench.log"
    log.write_text("  measured 3/16 cells\nerror: benchmark worker exited with code -9: Killed\n")
    background.write_json(bench.progress_path(), {"state": "running", "pid": 2 ** 22 + 12345,
                                                  "pid_started": 1.0, "started": 1.0, "done": 3,
                                                  "total": 16, "log": str(log)})
    p = bench.read_progress()
    assert p["state"] == "failed"
    assert p["error"] == ("the benchmark process ended without a result: benchmark worker exited with "
                          "code -9: Killed")
    assert bench.cancel_background() is False  # nothing alive to stop


def test_benchmark_estimates_come_from_the_last_measurement():
    assert bench.estimate_sec({}) == (bench.QUICK_ESTIMATE_S, "a 2-core CPU")
    assert bench.estimate_sec({"wall_sec": 71.5, "full": False}) == (71.5, "the last run on this machine")
    assert bench.estimate_sec({"wall_sec": 300.0, "full": True})[0] == bench.QUICK_ESTIMATE_S  # not a quick run
    assert bench.time_left_sec(0, 16, 5.0) is None
    assert bench.time_left_sec(4, 16, 20.0) == 60.0  # 5 s a cell, 12 cells left


def test_time_left_from_the_samples_so_far():
    tf = {"backend": "tensorflow", "precision": "float32", "steps_per_execution": 1, "jit_compile": False,
          "devices": 1, "simulated": False}
    cells = [tf, {**tf, "steps_per_execution": 8}, {**tf, "backend": "jax", "jit_compile": True}]
    order = bench.measure_order(cells, 2)
    assert order == [(0, 0), (1, 0), (0, 1), (1, 1), (2, 0), (2, 1)]
    # Cell 0 built and fitted in 4 s (2 s of it warm-up) at 1,000 samples/s, reported 6 s in:
    # the worker took 6 - 4 = 2 s to start.
    seen = [{"cell": 0, "repeat": 0, "samples_per_sec": 1000.0, "wall_sec": 4.0, "warmup_sec": 2.0,
             "compiled": True, "at": 6.0}]
    # Left: cell 1's build 4 s (as cell 0's); cell 0's refit 1,000 samples at 1,000/s + 1 s = 2 s;
    # cell 1's refit 4 s x (2 / 4) = 2 s; JAX: a worker start 2 s + a build 4 s, its refit 2 s.
    assert bench.estimate_left(cells, order, seen, 6.0, work_samples=1000) == pytest.approx(16.0)
    assert bench.estimate_left(cells, order, seen, 7.5, work_samples=1000) == pytest.approx(14.5)
    assert bench.estimate_left(cells, order, [], 1.0, work_samples=1000) is None
    # Cell 1 built in 6 s; cell 0 refitted in 1.5 s at 2,000 samples/s (0.5 s work + 1 s overhead, twice
    # its first rate): cell 1's refit is 1,000 / (500 x 2) + 1 = 2 s; JAX: start 2 + build 5 (mean of
    # the builds) + refit 5 x (1.5 / 4) = 1.875.
    seen += [{"cell": 1, "repeat": 0, "samples_per_sec": 500.0, "wall_sec": 6.0, "warmup_sec": 3.0,
              "compiled": True, "at": 12.0},
             {"cell": 0, "repeat": 1, "samples_per_sec": 2000.0, "wall_sec": 1.5, "warmup_sec": 0.1,
              "compiled": False, "at": 13.5}]
    assert bench.estimate_left(cells, order, seen, 13.5, work_samples=1000) == pytest.approx(2 + 7 + 1.875)


def test_progress_line_counts_down_from_the_written_estimate():
    assert bench.progress_left({"left_sec": 16.0, "left_written": 100.0, "done": 1, "total": 6}, 105.0) == 11.0
    assert bench.progress_left({"left_sec": 16.0, "left_written": 100.0}, 130.0) == 0.0
    assert bench.progress_left({"done": 4, "total": 16, "elapsed": 20.0}, 0.0) == 60.0  # older files
    assert bench.progress_left({"done": 0, "total": 16, "elapsed": 3.0}, 0.0) is None


def test_a_killed_job_without_a_log_line_stops_its_clock_at_its_last_write(store_home):
    from engine.jobs import background

    background.write_json(bench.progress_path(), {"state": "running", "pid": 2 ** 22 + 12345, "pid_started": 1.0,
                                                  "started": 100.0, "updated": 135.0, "done": 3, "total": 16})
    p = bench.read_progress()
    assert p["state"] == "failed" and p["elapsed"] == 35.0  # not now - 100, growing on every read
    assert p["error"] == "the benchmark process ended without a result: no error in its log (killed?)"


def test_a_fit_has_enough_steady_state_after_16_steps_and_2_s():
    from engine.bench.worker import enough_steady

    # The first execution is warm-up: 0.5 s + 15 x 0.2 s holds 15 steady steps, 3.0 s: not yet.
    assert not enough_steady([0.5] + [0.2] * 15, [1] * 16)
    assert enough_steady([0.5] + [0.2] * 16, [1] * 17)  # 16 steps, 3.2 s
    assert not enough_steady([0.5] + [0.1] * 19, [1] * 20)  # 19 steps but 1.9 s: a fast cell runs on
    assert enough_steady([9.0, 0.7, 0.7, 0.7], [8, 8, 8, 8])  # steps per execution 8: 24 steps, 2.1 s
