"""Chart builders (engine.charts.style and the *_charts modules): pure DataFrame -> Plotly figure, no Streamlit."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from engine.charts import style as chart_style, hardware as hardware_charts, runs as runs_charts, presenter as presenter_charts, train as train_charts

ROOT = Path(__file__).resolve().parents[1]


def execs(n=50, rate=10_000.0, epochs=2, label="#2 mixed bf16", color="#D55E00", run_id=2):
    """Executions in store layout: the first is a slow warm-up, then steady ones."""
    dur = np.where(np.arange(n) == 0, 1.0, 128 / rate)
    df = pd.DataFrame({
        "idx": np.arange(n), "epoch": np.arange(n) * epochs // n, "step": np.arange(1, n + 1),
        "batches": 1, "t": np.cumsum(dur), "duration": dur, "samples_per_sec": 128 / dur,
        "loss": np.linspace(2.3, 0.3, n), "lr": 1e-3, "warmup": (np.arange(n) == 0).astype(int),
        "data_wait": None})
    return chart_style.tag(df, label, color, run_id)


def epochs_frame(label="#2 mixed bf16", color="#D55E00", n=2):
    df = pd.DataFrame({"epoch": range(n), "t": [1.5 * (i + 1) for i in range(n)],
                       "step": [25 * (i + 1) for i in range(n)], "loss": [1.0, 0.5][:n],
                       "accuracy": [0.7, 0.9][:n], "val_loss": [0.9, 0.4][:n],
                       "val_accuracy": [0.75, 0.92][:n], "lr": 1e-3})
    return chart_style.tag(df, label, color)


def test_colours_are_stable_and_baselines_grey():
    assert chart_style.run_color(5, "baseline") == chart_style.BASELINE_COLOR
    assert chart_style.run_color(7) == chart_style.run_color(7, "run")
    colours = {chart_style.run_color(i) for i in range(1, len(chart_style.PALETTE) + 1)}
    assert len(colours) == len(chart_style.PALETTE) and chart_style.BASELINE_COLOR not in colours


def test_labels_and_summaries_name_the_speed_options():
    run = {"id": 6, "role": "run", "summary": {"replicas_simulated": True},
           "config": {"precision": "mixed_bfloat16", "devices": 2, "steps_per_execution": 4,
                      "jit_compile": True, "dataset": "digits", "model": "cnn", "batch_size": 128,
                      "epochs": 3, "schedule": "constant"}}
    assert chart_style.run_label(run) == "#6 mixed bf16 · 2 dev (sim) · spe 4 · XLA"
    base = {"id": 5, "role": "baseline", "config": {"precision": "float32", "devices": 1}}
    assert chart_style.run_label(base) == "#5 baseline fp32"
    s = chart_style.config_summary(run["config"], run["summary"])
    assert s == "digits · cnn · mixed bf16 · 2 devices (simulated) · batch 128 · spe 4 · XLA · 3 epochs"
    # The hand-made preset's regularisers are in the line (a new user could not see them).
    assert chart_style.config_summary({**run["config"], "label_smoothing": 0.1, "mixup_alpha": 0.2}).endswith(
        "XLA · label smoothing 0.1 · mixup 0.2 · 3 epochs")


def test_downsample_caps_points_and_keeps_warmup():
    df = execs(n=10_000)
    out = chart_style.downsample(df, max_points=2000)
    assert len(out) <= 2001  # 2000 steady rows + the warm-up row
    assert out["warmup"].sum() == 1
    assert out["idx"].iloc[0] == 0 and out["idx"].iloc[-1] == 9_999
    assert out["idx"].is_monotonic_increasing
    small = execs(n=30)
    assert len(chart_style.downsample(small)) == 30


def test_throughput_figure_marks_warmup_and_median():
    base = execs(label="#1 baseline fp32", color=chart_style.BASELINE_COLOR, run_id=1, rate=5000)
    df = pd.concat([base, execs()])
    fig = train_charts.throughput_figure(df, {"#1 baseline fp32": 5000.0, "#2 mixed bf16": 10_000.0})
    assert fig.layout.xaxis.title.text == "wall time since training start (s)"
    assert "samples/s" in fig.layout.yaxis.title.text
    warm = [t for t in fig.data if t.legendgroup == "warmup"]
    assert len(warm) == 2 and all(t.marker.symbol == "x-open" for t in warm)
    assert sum(bool(t.showlegend is not False) for t in warm) == 1  # one legend entry
    medians = [t for t in fig.data if t.line.dash == "dash"]
    assert sorted(t.y[0] for t in medians) == [5000.0, 10_000.0]
    steady = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert steady["#1 baseline fp32"].line.color == chart_style.BASELINE_COLOR
    assert steady["#2 mixed bf16"].line.color == "#D55E00"
    # The line breaks at the epoch boundary (no bridge over the validation pass).
    assert np.isnan(np.asarray(steady["#2 mixed bf16"].y, dtype=float)).sum() == 1
    fig.to_json()


def test_throughput_figure_downsamples_long_runs():
    fig = train_charts.throughput_figure(execs(n=20_000, epochs=4))
    assert max(len(t.x) for t in fig.data) <= chart_style.MAX_POINTS + 4


def test_loss_figure_against_time_and_step():
    e, ep = execs(), epochs_frame()
    ft = train_charts.loss_figure(e, ep, x="t")
    fs = train_charts.loss_figure(e, ep, x="step")
    assert ft.layout.xaxis.title.text.endswith("(s)")
    assert fs.layout.xaxis.title.text.endswith("(steps)")
    names = [t.name for t in fs.data]
    assert names == ["#2 mixed bf16 train", "#2 mixed bf16 val"]
    assert fs.data[1].mode == "lines+markers" and list(fs.data[1].x) == [25, 50]
    assert list(fs.data[1].y) == [0.9, 0.4]  # no val_ce column: val_loss


def test_loss_figure_compares_plain_validation_ce_and_labels_smoothed_training_loss():
    e = execs()
    ep = epochs_frame().assign(val_ce=[0.7, 0.3])
    label = e["label"].iloc[0]
    fig = train_charts.loss_figure(e, ep, x="step", loss_kinds={label: "label-smoothed 0.1 + mixup 0.2"})
    assert [t.name for t in fig.data] == [f"{label} train (label-smoothed 0.1 + mixup 0.2)", f"{label} val"]
    assert list(fig.data[1].y) == [0.7, 0.3]  # plain cross-entropy, not the smoothed val_loss
    assert fig.data[0].line.dash == "dot" and fig.layout.yaxis.title.text == "cross-entropy (val: plain)"
    # An older run without val_ce and a smoothed loss says its curve is smoothed.
    old = train_charts.loss_figure(e, epochs_frame(), x="step", loss_kinds={label: "label-smoothed 0.1"})
    assert old.data[1].name == f"{label} val (label-smoothed)"
    assert train_charts.train_loss_kind({"label_smoothing": 0.1, "mixup_alpha": 0.2}) == "label-smoothed 0.1 + mixup 0.2"
    assert train_charts.train_loss_kind({"label_smoothing": 0.0, "mixup_alpha": 0.0}) == ""


def test_time_figure_stacks_the_parts_of_each_run():
    b = {"waiting": 2.0, "setup": 4.0, "warmup": 1.0, "train": 2.5, "data_wait": 0.5, "validation": 1.0,
         "other": 1.0, "wall": 12.0}
    fig = train_charts.time_figure([("baseline #1", b), ("run #2", None)])
    assert [t.name for t in fig.data] == ["waiting for a worker", "setup", "warm-up", "training", "data wait",
                                          "validation", "other"]
    assert [list(t.x) for t in fig.data] == [[2.0], [4.0], [1.0], [2.5], [0.5], [1.0], [1.0]]
    assert fig.layout.barmode == "stack" and fig.data[1].customdata[0][1] == 100 * 4.0 / 12.0  # % of 12 s


def test_speedup_figure_puts_baseline_at_one():
    bars = pd.DataFrame([{"label": "baseline", "color": chart_style.BASELINE_COLOR, "speedup": 1.0},
                         {"label": "run", "color": "#D55E00", "speedup": 1.8, "note": "x"}])
    fig = runs_charts.speedup_figure(bars)
    assert list(fig.data[0].x) == [1.0, 1.8]
    assert list(fig.data[0].marker.color) == [chart_style.BASELINE_COLOR, "#D55E00"]
    assert list(fig.data[0].text) == ["1.00×", "1.80×"]
    assert list(fig.data[0].textposition) == ["outside", "outside"]
    # 0.85x: inside its bar, not drawn across the dashed line at 1.0; 0.2x is too short to hold it.
    slow = runs_charts.speedup_figure(pd.concat([bars, pd.DataFrame([{"label": "a", "color": "#000", "speedup": 0.85},
                                                               {"label": "b", "color": "#000", "speedup": 0.2}])]))
    assert list(slow.data[0].textposition) == ["outside", "outside", "inside", "outside"]
    assert any(s.x0 == 1.0 and s.x1 == 1.0 for s in fig.layout.shapes)
    assert "×" in fig.layout.xaxis.title.text


def test_scaling_figure_has_ideal_reference_and_simulated_points():
    pts = pd.DataFrame([
        {"label": "#1 baseline fp32", "color": chart_style.BASELINE_COLOR, "speedup": 1.0, "devices": 1,
         "simulated": False},
        {"label": "#2 mixed bf16 · 2 dev (sim)", "color": "#D55E00", "speedup": 0.9, "devices": 2,
         "simulated": True}])
    fig = runs_charts.scaling_figure(pts)
    ideal, ref = fig.data[0], fig.data[1]
    assert list(ideal.x) == list(ideal.y)
    assert dict(zip(ref.x, ref.y)) == runs_charts.REFERENCE_SCALING
    sim, base = fig.data[-2], fig.data[-1]
    assert sim.marker.symbol == "circle-open" and "simulated" in sim.name and sim.text[0] == "simulated"
    # The baseline is drawn last and smaller: a run at (1, ~1.0) hid it (a new user's report).
    assert base.name == "#1 baseline fp32" and base.marker.symbol == "circle"
    assert (base.marker.size, sim.marker.size) == (9, 15)
    assert fig.layout.xaxis.title.text == "replicas (devices × workers)"
    assert "×" in fig.layout.yaxis.title.text
    # Headroom for the reference's top label (7.3× at 8 replicas was cut at the top edge).
    assert tuple(fig.layout.yaxis.range) == (0, pytest.approx(1.15 * 8))
    fast = runs_charts.scaling_figure(pts.assign(speedup=[1.0, 10.0]))
    assert tuple(fast.layout.yaxis.range) == (0, pytest.approx(11.5))


def test_small_charts_and_empty_states():
    e = execs()
    assert train_charts.lr_figure(e).layout.xaxis.title.text == "batches run (steps)"
    sysf = chart_style.tag(pd.DataFrame({"t": [1.0, 2.0], "cpu_percent": [90.0, 95.0],
                                    "rss_mb": [800.0, 810.0], "mem_percent": [20.0, 21.0],
                                    "gpu_mem_mb": [None, None]}), "#2", "#D55E00")
    cpu = train_charts.system_figure(sysf, "cpu_percent", "worker CPU (% of one core)", "CPU")
    assert list(cpu.data[0].y) == [90.0, 95.0] and "%" in cpu.layout.yaxis.title.text
    for fig in (train_charts.throughput_figure(None), train_charts.loss_figure(None, None),
                train_charts.lr_figure(None), runs_charts.speedup_figure(pd.DataFrame()),
                train_charts.system_figure(None, "rss_mb", "MB", "Memory"),
                train_charts.system_figure(sysf, "gpu_mem_mb", "GPU memory (MB)", "GPU")):
        assert not fig.data and fig.layout.annotations  # says what it waits for
        fig.to_json()


def test_lr_preview_shows_momentum_only_when_it_moves():
    steps = np.arange(100)
    flat = pd.DataFrame({"step": steps, "lr": np.full(100, 1e-3), "momentum": np.full(100, 0.9)})
    assert len(train_charts.lr_preview_figure(flat).data) == 1
    cyc = flat.assign(momentum=np.linspace(0.95, 0.85, 100))
    fig = train_charts.lr_preview_figure(cyc)
    assert len(fig.data) == 2 and fig.data[1].yaxis == "y2"


def test_lr_preview_marks_each_epoch_boundary_up_to_30_epochs():
    df = pd.DataFrame({"step": np.arange(100), "lr": np.full(100, 1e-3)})
    # Steps 0-99 at 25 steps an epoch: boundaries after steps 25, 50 and 75, full height.
    shapes = train_charts.lr_preview_figure(df, 25).layout.shapes
    assert [(s.x0, s.x1, s.y0, s.y1, s.yref) for s in shapes] == [(x, x, 0, 1, "paper") for x in (25, 50, 75)]
    assert not train_charts.lr_preview_figure(df, 3).layout.shapes  # 33 epochs: too many lines


@pytest.mark.worker
def test_chart_modules_import_neither_streamlit_nor_tensorflow():
    code = ("import sys, engine.charts.style, engine.charts.train, engine.charts.runs, "
            "engine.charts.hardware, engine.charts.presenter, engine.autopilot.charts; "
            "bad = [m for m in ('streamlit', 'tensorflow', 'keras') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=60)


def test_scaling_figure_labels_multi_worker_runs():
    run = {"devices": 1, "workers": 2}
    assert runs_charts.replica_layout(run) == "2 workers × 1 device"
    assert runs_charts.replica_layout(run, hosts=1) == "2 workers × 1 device (one host)"
    assert runs_charts.replica_layout({"devices": 2}, {"replicas_simulated": True}) == "2 devices (simulated)"
    assert runs_charts.replica_layout({"devices": 2, "workers": 2}, hosts=2) == "2 workers × 2 devices"
    pts = pd.DataFrame([
        {"label": "#1 baseline fp32", "color": chart_style.BASELINE_COLOR, "speedup": 1.0, "devices": 1,
         "simulated": False, "workers": 1, "one_host": False, "layout": "1 device"},
        {"label": "#2 fp32 · 2 workers", "color": "#D55E00", "speedup": 0.8, "devices": 2,
         "simulated": False, "workers": 2, "one_host": True, "layout": "2 workers × 1 device (one host)"},
        {"label": "#3 fp32 · 4 workers", "color": "#009E73", "speedup": 3.5, "devices": 4,
         "simulated": False, "workers": 4, "one_host": False, "layout": "4 workers × 1 device"}])
    fig = runs_charts.scaling_figure(pts)
    by = {t.name: t for t in fig.data}
    one_host = by["#2 fp32 · 2 workers (2 workers × 1 device (one host))"]
    assert list(one_host.x) == [2] and one_host.marker.symbol == "square-open"
    assert one_host.text[0] == "2 workers × 1 device (one host)"
    real = by["#3 fp32 · 4 workers (4 workers × 1 device)"]
    assert real.marker.symbol == "square" and list(real.x) == [4]
    assert by["#1 baseline fp32 (1 device)"].marker.symbol == "circle"
    assert by["#1 baseline fp32 (1 device)"].text[0] == ""  # no label on the plain single device


def bench_cells():
    """A quick-benchmark result: baseline, spe 8 (best) and a mixed bf16 cell, per engine.bench.quick.summarize."""
    def cell(p, s, x, sp, lo, hi, rate):
        return {"precision": p, "steps_per_execution": s, "jit_compile": x, "devices": 1, "simulated": False,
                "speedup": sp, "speedup_min": lo, "speedup_max": hi, "samples_per_sec": rate,
                "warmup_sec": 1.0, "repeats": 2}
    return pd.DataFrame([cell("float32", 1, False, 1.0, 1.0, 1.0, 1000.0),
                         cell("float32", 8, False, 1.9, 1.7, 2.1, 1900.0),
                         cell("float32", 8, True, 0.8, 0.7, 0.9, 800.0),
                         cell("mixed_bfloat16", 1, False, 1.4, 1.2, 1.5, 1400.0)])


def test_bench_figure_baseline_one_best_outlined_spread_as_error_bars():
    fig = hardware_charts.bench_figure(bench_cells())
    by = {t.name: t for t in fig.data}
    base = by["baseline (fp32, spe 1, XLA off)"]
    assert list(base.y) == [1.0] and base.marker.color == chart_style.BASELINE_COLOR
    assert list(base.x) == ["spe 1 · XLA off"]
    fp32 = by["fp32"]
    assert list(fp32.x) == ["spe 8 · XLA off", "spe 8 · XLA on"] and list(fp32.y) == [1.9, 0.8]
    assert fp32.marker.color == hardware_charts.BENCH_PRECISION_COLORS["float32"]
    assert base.offsetgroup == fp32.offsetgroup  # the baseline sits in the fp32 slot
    # Spread (min-max over repeats) as asymmetric error bars.
    assert [round(v, 3) for v in fp32.error_y.array] == [0.2, 0.1]
    assert [round(v, 3) for v in fp32.error_y.arrayminus] == [0.2, 0.1]
    # Best cell: thick black outline, named in the legend.
    assert list(fp32.marker.line.width) == [4, 0] and fp32.marker.line.color[0] == hardware_charts.BEST_COLOR
    assert "best: fp32 · spe 8 · XLA off · 1 device (1.90×)" in by
    bf16 = by["mixed bf16"]
    assert bf16.marker.color == hardware_charts.BENCH_PRECISION_COLORS["mixed_bfloat16"] and list(bf16.y) == [1.4]
    assert list(fig.layout.xaxis.categoryarray) == ["spe 1 · XLA off", "spe 8 · XLA off", "spe 8 · XLA on"]
    assert fig.layout.yaxis.title.text == "speedup vs float32 baseline (×)"
    assert "steps per execution" in fig.layout.xaxis.title.text
    assert any(s.y0 == 1.0 and s.y1 == 1.0 for s in fig.layout.shapes)  # the 1.0 line
    fig.to_json()
    empty = hardware_charts.bench_figure(pd.DataFrame())
    assert not empty.data and "Run quick benchmark" in empty.layout.annotations[0].text


def test_lr_find_figure_log_axis_raw_smoothed_and_suggestion():
    lrs = np.logspace(-6, 0, 60)
    loss = 2.3 - 1.5 / (1 + np.exp(-(np.log10(lrs) + 3) * 3))
    smoothed = pd.Series(loss).rolling(3, min_periods=1).mean()
    df = pd.DataFrame({"lr": lrs, "loss": loss, "smoothed": smoothed})
    df.loc[59, ["loss", "smoothed"]] = None  # a diverged, non-finite last step
    fig = train_charts.lr_find_figure(df, suggestion=1e-3, min_loss_lr=lrs[50])
    by = {t.name: t for t in fig.data}
    assert fig.layout.xaxis.type == "log" and fig.layout.xaxis.title.text == "learning rate (log scale)"
    assert fig.layout.yaxis.title.text == "loss (cross-entropy)"
    assert len(by["raw"].x) == 60 and by["smoothed"].line.width > by["raw"].line.width
    star = by["suggested"]
    assert list(star.x) == [1e-3] and star.marker.symbol == "star"
    assert any(s.x0 == 1e-3 for s in fig.layout.shapes)  # dotted line at the suggestion
    assert by["minimum"].showlegend is False and list(by["minimum"].x) == [lrs[50]]
    assert fig.layout.yaxis.range[0] == 0 and fig.layout.yaxis.range[1] > float(smoothed.max())
    fig.to_json()
    empty = train_charts.lr_find_figure(pd.DataFrame({"lr": [], "loss": [], "smoothed": []}))
    assert not empty.data and empty.layout.annotations


def test_data_wait_figure_stacks_wait_and_compute_with_units():
    """Hand-built executions: compute = duration - data_wait, warm-up and NULL waits left out."""
    df = chart_style.tag(pd.DataFrame({
        "idx": range(5), "epoch": 0, "step": [1, 2, 3, 4, 5], "batches": 1,
        "t": [1.0, 1.1, 1.2, 1.3, 1.4], "duration": [1.0, 0.10, 0.08, 0.12, 0.10],
        "samples_per_sec": 1.0, "loss": 1.0, "lr": 1e-3, "warmup": [1, 0, 0, 0, 0],
        "data_wait": [0.5, 0.06, 0.02, None, 0.07]}), "#2 fp32", "#D55E00", 2)
    fig = train_charts.data_wait_figure(df)
    wait, compute = fig.data
    assert (wait.name, compute.name) == ("waiting for data", "compute")
    assert list(wait.x) == [2, 3, 5] == list(compute.x)
    assert np.allclose(list(wait.y), [0.06, 0.02, 0.07])
    assert np.allclose(list(compute.y), [0.10 - 0.06, 0.08 - 0.02, 0.10 - 0.07])
    # One run, one colour: compute solid, data wait the same colour, light.
    assert compute.marker.color == "#D55E00" and wait.marker.color == "rgba(213, 94, 0, 0.35)"
    assert fig.layout.barmode == "stack"
    assert fig.layout.yaxis.title.text == "time per execution (s)"
    assert fig.layout.xaxis.title.text == "batches run (steps)"
    fig.to_json()
    share = train_charts.data_wait_share(df)
    assert share == pytest.approx((0.06 + 0.02 + 0.07) / (0.10 + 0.08 + 0.10))
    assert train_charts.data_wait_verdict(share) == (
        "input-bound", "input-bound: 54% of step time waiting for data; try parallel map, prefetch or cache "
                       "(Input pipeline)")
    assert train_charts.data_wait_verdict(0.16)[1] == "partly input-bound: 16% of step time waiting for data"
    assert train_charts.data_wait_verdict(0.07) == ("compute-bound", "compute-bound: only 7% of step time waiting for data")
    assert train_charts.data_wait_verdict(0.001)[1] == "compute-bound: under 1% of step time waiting for data"
    assert train_charts.data_wait_verdict(None) is None
    assert fig.layout.yaxis.range is None  # no cap on a few rows
    # One slow execution among many: drawn off scale, named in a note.
    many = pd.concat([df.iloc[[0]]] + [df.iloc[[1]].assign(step=i) for i in range(2, 40)]
                     + [df.iloc[[1]].assign(step=40, duration=2.0, data_wait=1.9)], ignore_index=True)
    capped = train_charts.data_wait_figure(many)
    assert capped.layout.yaxis.range[1] == pytest.approx(3 * 0.10)
    assert "1 execution off scale (up to 2 s)" in capped.layout.annotations[0].text
    # Not measured (multi-worker, TPU): an empty chart that says so, and no share.
    unmeasured = df.assign(data_wait=None)
    assert train_charts.data_wait_share(unmeasured) is None
    empty = train_charts.data_wait_figure(unmeasured)
    assert not empty.data and empty.layout.annotations and empty.layout.yaxis.title.text.endswith("(s)")


def test_transfer_figure_two_curves_target_line_and_time_to_target_stars():
    ft = chart_style.tag(pd.DataFrame({"epoch": range(4), "t": [1.0, 1.8, 2.6, 3.4],
                                  "val_accuracy": [0.29, 0.9, 0.96, 0.978]}), "run #2: fine-tuned", "#D55E00", 2)
    sc = chart_style.tag(pd.DataFrame({"epoch": range(4), "t": [0.9, 1.75, 2.6, 3.4],
                                  "val_accuracy": [0.85, 0.96, 0.98, None]}), "run #3: from scratch", "#009E73", 3)
    fig = runs_charts.transfer_figure(pd.concat([ft, sc]), 0.95, {"run #2: fine-tuned": 2.6, "run #3: from scratch": 1.75})
    lines = {t.name: t for t in fig.data if t.mode == "lines+markers"}
    assert list(lines) == ["run #2: fine-tuned", "run #3: from scratch"]
    assert lines["run #2: fine-tuned"].line.color == "#D55E00"
    assert list(lines["run #3: from scratch"].y) == [0.85, 0.96, 0.98]  # the missing point dropped
    stars = [t for t in fig.data if t.marker.symbol == "star"]
    assert sorted((t.x[0], t.y[0]) for t in stars) == [(1.75, 0.95), (2.6, 0.95)]
    assert [a.text for a in fig.layout.annotations if a.y == 0] == ["<b>2.60 s</b>", "<b>1.75 s</b>"]
    assert any(s.y0 == 0.95 and s.y1 == 0.95 for s in fig.layout.shapes)
    assert fig.layout.xaxis.title.text == "wall time since training start (s)"
    assert "validation accuracy" in fig.layout.yaxis.title.text
    fig.to_json()
    # Not reached: no star for that run.
    fig = runs_charts.transfer_figure(ft, 0.99, {"run #2: fine-tuned": None})
    assert not [t for t in fig.data if t.marker.symbol == "star"]
    assert not runs_charts.transfer_figure(None).data


def test_summaries_name_data_transfer_and_pipeline_options():
    cfg = {"dataset": "digits", "model": "cnn", "precision": "float32", "devices": 1, "batch_size": 32,
           "epochs": 12, "label_subset": [5, 6, 7, 8, 9], "init_from": 1, "data_cache": True,
           "data_prefetch": False, "data_parallel_map": True}
    assert chart_style.config_summary(cfg) == ("digits labels 5,6,7,8,9 · cnn from run #1 · fp32 · 1 device · "
                                          "batch 32 · cache · no prefetch · 12 epochs")
    assert chart_style.run_label({"id": 2, "config": cfg}) == "#2 fp32 · from #1"
    bb = {"dataset": "cifar10", "model": "mobilenetv2", "image_size": 96, "pretrained": True,
          "precision": "float32", "devices": 1, "batch_size": 64, "epochs": 3, "data_parallel_map": False}
    assert chart_style.config_summary(bb) == ("cifar10 · mobilenetv2 96px (ImageNet) · fp32 · 1 device · batch 64 · "
                                         "serial map · 3 epochs")


def test_median_labels_sit_in_the_right_margin_apart_from_each_other():
    # Medians 10,000 and 10,400 samples/s on an axis to 1.08 x 10,400: 400 samples/s is
    # 400 / 11,232 x 206 px (380 - 56 - 118) = 7.3 px apart, so the upper label moves up 9.7 px to 17.
    base = execs(label="#1 baseline fp32", color=chart_style.BASELINE_COLOR, run_id=1, rate=10_000)
    run = execs(rate=10_400)
    fig = train_charts.throughput_figure(pd.concat([base, run]), {"#1 baseline fp32": 10_000.0, "#2 mixed bf16": 10_400.0})
    notes = {a.text: a for a in fig.layout.annotations}
    assert set(notes) == {"10,000", "10,400"}
    assert all(a.xref == "paper" and a.x == 1 and a.xanchor == "left" for a in notes.values())
    assert notes["10,000"].yshift == 0
    assert fig.layout.yaxis.range == (0, pytest.approx(1.08 * 10_400))
    assert notes["10,400"].yshift == pytest.approx(17 - 400 / (1.08 * 10_400) * 206)
    assert fig.layout.margin.r == int(6 * chart_style.GLYPH * 13) + 12   # room for "10,400"


def test_off_scale_labels_of_neighbouring_executions_do_not_overlap():
    """Two off-scale executions a step apart among 120: their labels "0.0888 s" and "0.0504 s"
    were drawn on top of each other and read "00.0888s s"."""
    df = execs(121).assign(data_wait=lambda d: d["duration"] * 0.2)
    df.loc[[41, 42], "duration"] = [0.0888, 0.0504]
    fig = train_charts.data_wait_figure(df)
    (mark,) = [t for t in fig.data if t.name == chart_style.CLIPPED_NAME]
    assert list(mark.x) == [42, 43]
    assert list(mark.text) == ["0.0888 s", "<br>0.0504 s"]          # the second a line further in
    assert list(mark.customdata) == ["0.0888 s", "0.0504 s"]
    assert list(mark.meta) == [[True, 0], [True, 1]] and mark.hovertemplate.startswith("%{customdata}")
    # Far apart (steps 42 and 102, 250 px in a 300-px plot): both next to their markers.
    df.loc[[42], "duration"] = 0.0128
    df.loc[[102], "duration"] = 0.0504
    (mark,) = [t for t in train_charts.data_wait_figure(df).data if t.name == chart_style.CLIPPED_NAME]
    assert list(mark.text) == ["0.0888 s", "0.0504 s"]


def test_a_lone_sample_is_a_marker_on_a_sane_axis_in_every_line_chart():
    """A short digits run stores one system sample: drawn as a line only, it was invisible, on an
    x axis of -0.75..1.25 (or 0.248..0.254 s for two runs' one sample each, tick labels on top of
    each other). A few points get markers; an axis of one value spans [0, 2v]."""
    from engine.charts import mfu as mfu_charts

    one = chart_style.tag(pd.DataFrame({"t": [0.25], "cpu_percent": [97.0], "rss_mb": [812.0]}), "#1", "#0072B2", 1)
    for column in ("cpu_percent", "rss_mb"):
        fig = train_charts.system_figure(one, column, "y", "Worker")
        (trace,) = fig.data
        assert trace.mode == "lines+markers" and list(trace.y) == [one[column][0]]
        assert list(fig.layout.xaxis.range) == [0.0, 0.5]
    other = chart_style.tag(pd.DataFrame({"t": [0.254], "cpu_percent": [80.0]}), "#2", "#D55E00", 2)
    two = train_charts.system_figure(pd.concat([one.assign(t=0.248), other]), "cpu_percent", "y", "Worker CPU")
    assert list(two.layout.xaxis.range) == [0.0, pytest.approx(0.502)]        # around (0.248 + 0.254) / 2
    at_zero = train_charts.system_figure(one.assign(t=0.0), "cpu_percent", "y", "Worker CPU")
    assert list(at_zero.layout.xaxis.range) == [0.0, 1.0]
    # Many samples: a line, Plotly's own axis.
    many = chart_style.tag(pd.DataFrame({"t": np.arange(20.0), "cpu_percent": 95.0}), "#1", "#0072B2", 1)
    fig = train_charts.system_figure(many, "cpu_percent", "y", "Worker CPU")
    assert fig.data[0].mode == "lines" and fig.layout.xaxis.range is None
    # The other line charts of one execution: its point shows, the axis spans it.
    e1 = execs(n=1).assign(warmup=0, loss_scale=32768.0, skipped=0)
    lr = train_charts.lr_figure(e1)
    assert lr.data[0].mode == "lines+markers" and list(lr.layout.xaxis.range) == [0.0, 2.0]   # step 1
    loss = train_charts.loss_figure(e1, None, x="step")
    assert loss.data[0].mode == "lines+markers" and list(loss.layout.xaxis.range) == [0.0, 2.0]
    assert train_charts.loss_scale_figure(e1).data[0].mode == "lines+markers"
    t1 = float(e1["t"][0])
    assert list(train_charts.throughput_figure(e1).layout.xaxis.range) == [0.0, 2 * t1]
    preview = pd.DataFrame({"step": [1], "lr": [1e-3]})
    assert train_charts.lr_preview_figure(preview).data[0].mode == "lines+markers"
    flops = mfu_charts.flops_figure(e1, {"#2 mixed bf16": {"flops_per_sample": 1e6}})
    assert list(flops.layout.xaxis.range) == [0.0, 2 * t1]
    assert train_charts.lr_figure(execs(n=50)).data[0].mode == "lines"
    assert chart_style.lone_range([3.0, 3.1]) == [0.0, pytest.approx(6.1)] and chart_style.lone_range([1.0, 2.0]) is None
    assert chart_style.lone_range([-2.0], floor=None) == [-4.0, 0.0] and chart_style.lone_range([None]) is None


def test_long_y_titles_shrink_to_the_plot_height():
    # 164 px of plot (280 high, 56 above for the title, 60 below with no legend): a
    # 24-character title at 15 px is 24 x 0.58 x 15 = 209 px, so it is set at int(15 x 164 / 209) = 11 px.
    sysf = chart_style.tag(pd.DataFrame({"t": [1.0, 2.0], "cpu_percent": [90.0, 95.0]}), "#2", "#D55E00")
    fig = train_charts.system_figure(sysf, "cpu_percent", "x" * 24, "CPU")
    assert fig.layout.height == 280 and fig.layout.yaxis.title.font.size == 11
    fig = train_charts.system_figure(sysf, "cpu_percent", "CPU (% of one core)", "Worker CPU")
    assert fig.layout.yaxis.title.font.size == 14                         # 19 x 0.58 x 15 = 165 px
    fig = train_charts.system_figure(sysf, "cpu_percent", "CPU (% of a core)", "Worker CPU")
    assert fig.layout.yaxis.title.font.size == 15                         # 17 x 0.58 x 15 = 148 px: fits
    assert fig.layout.xaxis.title.text == "wall time (s)"
    assert chart_style.fit_size("abc", 1000) == 15 and chart_style.fit_size("x" * 100, 50) == 11


def test_scaling_legend_names_runs_only_while_they_fit():
    def points(n):
        return pd.DataFrame({"label": [f"#{i} fp32" for i in range(n)], "color": "#0072B2",
                             "devices": [1 + i % 2 for i in range(n)], "speedup": [1.0 + i / 10 for i in range(n)],
                             "simulated": False})

    legend = [t.name for t in runs_charts.scaling_figure(points(6)).data if t.showlegend is not False]
    assert legend == ["ideal (speedup = replicas)", "well-tuned data parallel (reference)",
                      *(f"#{i} fp32" for i in range(6))]
    fig = runs_charts.scaling_figure(points(7))
    assert [t.name for t in fig.data if t.showlegend is not False] == legend[:2]
    assert len(fig.data) == 2 + 7   # every run is still drawn (hover names it)


def test_legend_rows_pack_entries_left_to_right():
    # At 18 px an entry is len x 0.58 x 18 + 52 px: 10 characters -> 156.4 px.
    names = ["x" * 10] * 5
    assert presenter_charts.legend_rows(names, 320) == 3      # two per row (312.8 px), then one
    assert presenter_charts.legend_rows(names, 1000) == 1
    assert presenter_charts.legend_rows([], 500) == 0


def test_presenter_restyles_a_copy_for_the_back_of_the_room():
    base = execs(label="#1 baseline fp32", color=chart_style.BASELINE_COLOR, run_id=1, rate=5000)
    df = pd.concat([base, execs()])
    fig = train_charts.throughput_figure(df, {"#1 baseline fp32": 5000.0, "#2 mixed bf16": 10_000.0})
    talk = presenter_charts.presenter(fig, height=410, width_px=600, x_title="wall time (s)", y_title="samples/s")
    assert fig.layout.font.size == 15 and fig.layout.height == 380           # the original is unchanged
    assert talk.layout.height == 410 and talk.layout.font.size == presenter_charts.PRESENTER_FONT == 20
    assert talk.layout.xaxis.tickfont.size == 18 and talk.layout.title.font.size == 24
    assert (talk.layout.xaxis.title.text, talk.layout.yaxis.title.text) == ("wall time (s)", "samples/s")
    assert talk.layout.yaxis.title.font.size == 20                          # "samples/s" fits the plot height
    steady = [t for t in talk.data if t.mode == "lines+markers"]
    assert [t.line.width for t in steady] == [pytest.approx(3.2)] * 2       # 2 x 1.6
    # Legend above the plot: rows for "#1 baseline fp32", "warm-up (compile)", "#2 mixed bf16" in
    # 600 - 100 - 74 = 426 px: 219 + 229 > 426, so two rows; 50 (title) + 2 x 30 on top.
    assert (talk.layout.legend.y, talk.layout.legend.yanchor) == (1.0, "bottom")
    assert talk.layout.margin.t == 50 + 2 * 30
    # The medians move to the larger type: right margin for "10,000" at 18 px.
    notes = [a for a in talk.layout.annotations if a.name == chart_style.MEDIAN_NAME]
    assert sorted(a.text for a in notes) == ["10,000", "5,000"] and {a.font.size for a in notes} == {18}
    assert talk.layout.margin.r == int(6 * chart_style.GLYPH * 18) + 12


def test_presenter_gives_each_run_one_legend_entry():
    e = execs()
    epochs = chart_style.tag(pd.DataFrame({"epoch": [0, 1], "t": [1.0, 2.0], "step": [10, 20],
                                      "val_loss": [1.0, 0.5], "val_ce": [1.0, 0.5]}), "#2 mixed bf16", "#D55E00")
    fig = train_charts.loss_figure(e, epochs)
    assert [t.name for t in fig.data] == ["#2 mixed bf16 train", "#2 mixed bf16 val"]
    talk = presenter_charts.presenter(fig)
    assert [(t.name, t.showlegend) for t in talk.data] == [("#2 mixed bf16 train", False), ("#2 mixed bf16", None)]


def test_a_clipped_pair_is_drawn_at_the_edge_with_its_value_as_text():
    """Issue 57 item 3: five bf16 pairs at ~0.08x sat on the 0.125x gridline without a mark; a
    9x pair was half a dot on the top edge."""
    from engine.charts.comparison import pairs_figure

    rows = [{"status": "complete", "pair": i, "order": "AB", "seed": i, "baseline_time_to_accuracy": b,
             "time_to_accuracy": r} for i, (b, r) in enumerate([(8.0, 100.0), (90.0, 10.0), (30.0, 20.0)])]
    result = {"measure": "time_to_accuracy", "pair_rows": rows, "planned": 3,
              "history": [{"pairs": 1, "speedup": 0.08, "ci95": None}, {"pairs": 2, "speedup": 0.85, "ci95": None},
                          {"pairs": 3, "speedup": 0.99, "ci95": [0.05, 20.0]}]}
    fig = pairs_figure(result)
    assert fig.layout.yaxis.range == (np.log10(0.125), np.log10(8.0))
    marks = [t for t in fig.data if t.name == chart_style.CLIPPED_NAME]
    # The first mean (0.08x, after pair 1) and the two pairs out of range: 8/100 = 0.08x, 90/10 = 9x.
    # The pair's label sits a line above the mean's at the same edge and pair (they were drawn
    # on top of each other).
    assert [(list(t.x), list(t.y), list(t.text)) for t in marks] == [
        ([1], [0.125], ["0.08×"]), ([1, 2], [0.125, 8.0], ["0.08×<br>", "9×"])]
    assert list(marks[1].marker.symbol) == ["triangle-down", "triangle-up"]
    assert list(marks[1].textposition) == ["top center", "bottom center"]    # inside the plot
    assert marks[1].cliponaxis is False                                       # the whole marker shows
    points = next(t for t in fig.data if t.name == "one pair")
    assert list(points.y) == [0.125, 8.0, 1.5]                                # the dots at the edges
    # In range: no mark.
    rows[0]["time_to_accuracy"], rows[1]["time_to_accuracy"] = 10.0, 30.0
    result["history"][0]["speedup"] = 0.8
    assert not [t for t in pairs_figure(result).data if t.name == chart_style.CLIPPED_NAME]


def test_the_interval_band_is_drawn_from_its_first_interval_at_three_pairs():
    """A comparison that ended at 3 pairs has one interval (after pair 3): the band was a polygon
    of no width at x = 3 (listed in the legend, drawn nowhere), on the Train and Autopilot pages."""
    from engine.charts.comparison import pairs_figure

    rows = [{"status": "complete", "pair": i, "order": "AB", "seed": i, "baseline_time_to_accuracy": 30.0,
             "time_to_accuracy": r} for i, r in enumerate([20.0, 25.0, 15.0])]
    result = {"measure": "time_to_accuracy", "pair_rows": rows, "planned": 5,
              "time_to_accuracy": {"pairs": 3, "ci95": [1.1, 1.9]},
              "history": [{"pairs": 1, "speedup": 1.5, "ci95": None}, {"pairs": 2, "speedup": 1.37, "ci95": None},
                          {"pairs": 3, "speedup": 1.59, "ci95": [1.1, 1.9]}]}
    band = next(t for t in pairs_figure(result).data if t.name == "95% interval so far")
    assert band.fill == "toself"
    assert list(band.x) == [2.7, 3, 3.3, 3.3, 3, 2.7]                 # a box 2 x BAND_PAD = 0.6 pair wide
    assert list(band.y) == [1.9, 1.9, 1.9, 1.1, 1.1, 1.1]
    # Four pairs: the band narrows from pair 3 to 4, held flat past each end.
    four = dict(result, pair_rows=rows + [dict(rows[0], pair=3, seed=3)],
                history=result["history"] + [{"pairs": 4, "speedup": 1.56, "ci95": [1.3, 1.8]}])
    band = next(t for t in pairs_figure(four).data if t.name == "95% interval so far")
    assert list(band.x) == [2.7, 3, 4, 4.3, 4.3, 4, 3, 2.7]
    assert list(band.y) == [1.9, 1.9, 1.8, 1.8, 1.3, 1.3, 1.1, 1.1]
    # A result whose history holds no interval still draws the one its headline gives, at its last pair.
    bare = dict(result, history=[dict(h, ci95=None) for h in result["history"]])
    band = next(t for t in pairs_figure(bare).data if t.name == "95% interval so far")
    assert list(band.x) == [2.7, 3, 3.3, 3.3, 3, 2.7] and list(band.y) == [1.9, 1.9, 1.9, 1.1, 1.1, 1.1]
    # Two pairs: no interval, no band.
    two = dict(result, pair_rows=rows[:2], history=result["history"][:2], time_to_accuracy={"pairs": 2, "ci95": None})
    assert not [t for t in pairs_figure(two).data if t.name == "95% interval so far"]


def test_off_scale_data_waits_and_a_diverging_lr_test_are_marked_at_the_top():
    df = execs(40)
    df["data_wait"] = df["duration"] * 0.1
    df.loc[[5, 9], "duration"] = [0.5, 2.0]                  # two executions far over the scale
    fig = train_charts.data_wait_figure(df)
    top = fig.layout.yaxis.range[1]
    mark = next(t for t in fig.data if t.name == chart_style.CLIPPED_NAME)
    assert list(mark.x) == [10, 6] and list(mark.y) == [top, top]  # farthest first
    # 4 steps of 38 apart: 32 px in a 300-px plot, under the labels' half widths (11 + 19 px) and
    # 4 px between: the second a line lower.
    assert list(mark.text) == ["2 s", "<br>0.5 s"] and list(mark.customdata) == ["2 s", "0.5 s"]
    lr = pd.DataFrame({"lr": [1e-5, 1e-4, 1e-3, 1e-2], "loss": [2.3, 2.0, 1.0, 40.0],
                       "smoothed": [2.3, 2.1, 1.5, 2.0]})
    fig = train_charts.lr_find_figure(lr)
    mark = next(t for t in fig.data if t.name == chart_style.CLIPPED_NAME)
    assert list(mark.x) == [1e-2] and list(mark.y) == [2.3 * 1.15] and list(mark.text) == ["40"]
