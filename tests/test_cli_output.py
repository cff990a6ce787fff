"""What the command line prints, line by line (no training): speedup ratios with 2
decimals, the progress line of `run` on a pipe, the backend column of `runs`."""
from __future__ import annotations

import io
import json
import re
import sys

from engine.config import RunConfig


def test_every_speedup_ratio_has_two_decimals(capsys):
    from engine.cli.printing import print_summary, speedup_rows

    c = {"end_to_end_speedup": 0.698, "steady_speedup": 0.8333, "baseline_end_to_end_samples_per_sec": 5000.0,
         "end_to_end_samples_per_sec": 3490.0, "baseline_samples_per_sec": 6000.0, "samples_per_sec": 5000.0,
         "time_to_accuracy_speedup": 0.9615, "baseline_time_to_accuracy_sec": 2.5, "time_to_accuracy_sec": 2.6,
         "target_accuracy": 0.95, "notice": "end-to-end (0.70x) and steady (0.83x) speedups differ"}
    rows = dict(speedup_rows(c))
    # Was "0.698x" and "0.833x" beside "0.96x" and the note's "0.70x".
    assert rows["end-to-end"] == ("0.70x  (training samples / wall time of training: 5,000 -> 3,490 samples/s)")
    assert rows["steady"] == "0.83x  (median samples/s per execution after warm-up: 6,000 -> 5,000)"
    assert rows["time to accuracy"] == "0.96x  (2.50 s -> 2.60 s to 0.95 val accuracy)"
    assert dict(speedup_rows({"end_to_end_speedup": 12.345}))["end-to-end"].startswith("12.35x  (")
    print_summary({"run_id": 3, "status": "completed",
                   "backend_comparison": {**c, "backend": "JAX", "other_backend": "TensorFlow", "baseline_id": 2}})
    assert ("     backend speedup  JAX vs TensorFlow (run 2, same configuration): 0.83x steady, 0.70x end-to-end, "
            "0.96x time to accuracy") in capsys.readouterr().out.splitlines()


class _Progress:
    """Stands in for engine.report.progress.progress: returns the states in turn."""

    def __init__(self, states):
        self.states = list(states)

    def __call__(self, store, run_id):
        return self.states.pop(0)


def _state(epoch=0, step=0, total=0, left=None, rate=None, loss=None):
    return {"status": "running", "epoch": epoch, "epochs": 2, "step": step, "total_steps": total,
            "fraction": 0.0, "elapsed_sec": 0.0, "time_left_sec": left, "samples_per_sec": rate, "loss": loss}


# 2 s polls of a 2-epoch run: queued twice, setting up three times, warm-up twice, epoch 1 three
# times, epoch 2 twice (the last poll sees it completed).
POLLS = [("queued", _state()), ("queued", _state()),
         *[("running", _state())] * 3,
         ("running", _state(1, 1, 50, None, None, 2.303)), ("running", _state(1, 5, 50, None, None, 2.1)),
         ("running", _state(1, 10, 50, 8.0, 6400.0, 1.5)), ("running", _state(1, 15, 50, 7.0, 6400.0, 1.3)),
         ("running", _state(1, 20, 50, 6.0, 6400.0, 1.2)),
         ("running", _state(2, 30, 50, 3.0, 6400.0, 0.9)), ("completed", _state(2, 50, 50, 0.0, 6400.0, 0.8))]


def _poll(monkeypatch, stderr=None) -> None:
    from engine.cli.follow import progress_line

    monkeypatch.setattr("engine.report.progress.progress", _Progress(s for _, s in POLLS))
    if stderr is not None:
        monkeypatch.setattr(sys, "stderr", stderr)
    on_poll = progress_line(17)
    for status, _ in POLLS:
        on_poll({"status": status})


def test_progress_on_a_pipe_prints_a_line_only_when_the_phase_changes(store_home, monkeypatch, capsys):
    _poll(monkeypatch)  # capsys's stderr is not a terminal
    assert capsys.readouterr().err.splitlines() == [
        "[run 17] queued",
        "[run 17] setting up (devices, data, model)",
        "[run 17] epoch 1/2 step 1/50 | - samples/s | loss 2.303 | warm-up",
        "[run 17] epoch 1/2 step 10/50 | 6,400 samples/s | loss 1.5 | 8 s left",
        "[run 17] epoch 2/2 step 30/50 | 6,400 samples/s | loss 0.9 | 3 s left",
    ]


def test_a_run_that_stops_at_its_target_has_at_most_its_time_left(store_home, monkeypatch, capsys):
    from engine.cli.follow import progress_line

    states = [("running", {**_state(1, 10, 50, 8.0, 6400.0, 1.5), "time_left_is_most": True})]
    monkeypatch.setattr("engine.report.progress.progress", _Progress(s for _, s in states))
    progress_line(17)({"status": "running"})
    assert capsys.readouterr().err.splitlines() == [
        "[run 17] epoch 1/2 step 10/50 | 6,400 samples/s | loss 1.5 | at most 8 s left"]


def test_progress_on_a_terminal_rewrites_one_line_at_every_poll(store_home, monkeypatch):
    class Tty(io.StringIO):
        def isatty(self):
            return True

    tty = Tty()
    _poll(monkeypatch, tty)
    writes = tty.getvalue().split("\r")[1:]
    assert len(writes) == len(POLLS) and "\n" not in tty.getvalue()
    assert writes[0] == "[run 17] queued".ljust(100)
    assert writes[-1] == "[run 17] epoch 2/2 step 50/50 | 6,400 samples/s | loss 0.8 | 0 s left".ljust(100)


def test_runs_table_and_json_name_the_backend(store, capsys):
    from engine.cli.main import main

    old = RunConfig().to_dict()
    del old["backend"]  # a run stored before backends were a setting
    for cfg in (json.dumps(old), RunConfig(backend="jax", precision="mixed_bfloat16").to_json()):
        store.finish_run(store.create_run(cfg, status="running"), "completed")
    assert main(["runs"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:9] == ["id", "status", "role", "created", "dataset", "model", "backend", "precision",
                                    "devices"]
    # created is a date and a time: two fields
    assert [ln.split()[:3] + ln.split()[5:10] for ln in lines[1:]] == [
        ["2", "completed", "run", "digits", "cnn", "jax", "mixed_bfloat16", "1"],
        ["1", "completed", "run", "digits", "cnn", "tensorflow", "float32", "1"]]
    assert main(["runs", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["id"], r["backend"], r["xla"]) for r in rows] == [(2, "jax", True), (1, "tensorflow", False)]
    assert list(rows[0])[5:8] == ["model", "backend", "precision"]  # the table's order
    # `show` of a JAX run stopped before its summary (killed while compiling) said "tensorflow".
    assert main(["show", "2"]) == 0
    assert [ln.split() for ln in capsys.readouterr().out.splitlines() if ln.split()[:1] == ["backend"]] == [
        ["backend", "jax"]]


def test_bench_text_ends_with_the_caution_of_a_busy_baseline(store_home, monkeypatch, capsys):
    from engine.cli.main import main
    from engine.bench import quick as bench

    cells = [{"backend": "tensorflow", "precision": p, "steps_per_execution": 1, "jit_compile": False,
              "devices": 1, "simulated": False} for p in ("float32", "mixed_bfloat16")]
    samples = [{"cell": i, "repeat": r, "samples_per_sec": rate * (1.5 if i else 1.0), "warmup_sec": 1.0}
               for r, rate in enumerate([1680.0, 3017.0]) for i in range(2)]

    def measured(**kw):  # stands in for the worker processes (a real matrix takes a minute)
        return {**bench.summarize(cells, samples), "workload": bench.QUICK, "machine": {}, "wall_sec": 70.0,
                "repeats": 2, "full": False}

    monkeypatch.setattr(bench, "run", measured)
    assert main(["bench", "--quick"]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        "best: tensorflow, mixed_bfloat16, steps_per_execution 1, XLA off, 1 device(s): 1.50x",
        "caution: The baseline's own repeats differ 1.8x (1,680 to 3,017 samples/s): the machine was busy; "
        "speedups under ~1.8x are within that noise. Run it again on a quieter machine."]


def test_run_baseline_prints_the_last_run_then_the_comparison_without_a_traceback(store, monkeypatch, capsys):
    """`engine run --baseline` without --json printed the last run's summary through the rows of a
    one-pair compare(), which a comparison of pairs does not have: KeyError after every comparison
    whose headline had a time-to-accuracy ratio."""
    import argparse

    from engine.store import comparisons as cstore
    from engine.cli import run as cli_run
    from tests.helpers.recorded_runs import seed_slower_comparison

    cid = seed_slower_comparison(store)
    comp = cstore.get(store, cid)
    from engine.jobs.launch import Launched

    monkeypatch.setattr(cli_run, "follow_comparison", lambda cid, cfg, kind, args: comp)
    cfg = RunConfig(dataset="digits", model="cnn", batch_size=32, epochs=6, target_accuracy=0.95,
                    precision="mixed_bfloat16")
    launched = Launched("comparison", comparison_id=cid, kind="ab", config=cfg)
    code = cli_run._run_pairs(launched, argparse.Namespace(quiet=True, json=False))
    out = capsys.readouterr().out
    r = comp["result"]
    lo, hi = r["time_to_accuracy_ci95"]
    assert code == 0 and r["time_to_accuracy_speedup"] is not None
    # The last run of the configuration first (run #6 of pair 3, order AB), then the comparison.
    assert re.search(rf"^\s+run  {r['run_ids'][-1]}$", out, re.M) and r["run_ids"][-1] == 6, out
    from engine.report.headline import interval_text

    # Slower: named by how many times as long it takes (0.77x is "1.30x slower").
    assert (f"comparison  #{cid}: {1 / r['time_to_accuracy_speedup']:.2f}x slower ({interval_text([lo, hi])}), 3 pairs "
            "vs Keras-default Adam 1e-3 (time to accuracy)") in out, out
    assert out.index("final val accuracy") < out.index("comparison  #")
