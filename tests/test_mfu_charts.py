"""The FLOP/s chart and the forecast traces (engine.charts.mfu), from fixed frames."""
from __future__ import annotations

import pandas as pd

from engine.charts import style as chart_style, mfu as mfu_charts, runs as runs_charts


def _execs():
    df = pd.DataFrame({"t": [0.5, 1.0, 1.5, 2.0], "samples_per_sec": [100.0, 4_000.0, 5_000.0, 6_000.0],
                       "warmup": [1, 0, 0, 0], "step": [1, 2, 3, 4], "epoch": [0, 0, 0, 0]})
    return chart_style.tag(df, "run #1", "#2563EB", 1)


def test_flops_figure_draws_steady_flops_the_peak_and_the_best_matmul():
    fig = mfu_charts.flops_figure(_execs(), {"run #1": {"flops_per_sample": 1_000, "peak_flops_per_sec": 1e7,
                                                         "peak_kind": "theoretical", "peak_dtype": "float32",
                                                         "best_matmul_flops_per_sec": 8e6}})
    (trace,) = fig.data
    assert list(trace.y) == [4e6, 5e6, 6e6]  # the warm-up execution is left out
    peak, best = fig.layout.shapes
    assert peak.y0 == peak.y1 == 1e7 and peak.line.dash == "dash"
    assert best.y0 == best.y1 == 8e6 and best.line.dash == "dot"
    assert [a.text for a in fig.layout.annotations] == ["theoretical float32 peak 10 MFLOP/s",
                                                        "best float32 matmul 8 MFLOP/s"]


def test_flops_figure_without_counted_flops_says_so():
    fig = mfu_charts.flops_figure(_execs(), {"run #1": {"flops_per_sample": None}})
    assert fig.layout.annotations[0].text == "no FLOPs counted for these runs"


def test_forecast_traces_on_the_scaling_chart():
    fc = {"physical": [(1, 1.0), (2, 1.8), (4, 3.1)], "simulated": [(1, 1.0), (2, 0.9), (4, 0.85)],
          "c2_source": "derived from run #2", "two_id": 2}
    fig = mfu_charts.add_forecast(runs_charts.scaling_figure(pd.DataFrame()), fc)
    names = [t.name for t in fig.data]
    assert names[-2:] == ["forecast: N devices like this one", "forecast: N simulated on this device"]
    assert list(fig.data[-2].y) == [1.0, 1.8, 3.1]
    # Without a 2-replica run there is no communication figure for simulated devices: one trace.
    n = len(runs_charts.scaling_figure(pd.DataFrame()).data)
    assert len(mfu_charts.add_forecast(runs_charts.scaling_figure(pd.DataFrame()), {**fc, "two_id": None}).data) == n + 1
