"""Charts of how far a run is from the hardware's limit: achieved model FLOP/s per
execution against the peak line (engine.report.mfu), and the what-if scaling forecast
drawn on the scaling chart (engine.report.forecast). Pure: no Streamlit, no TensorFlow.
"""
from __future__ import annotations

from typing import Mapping, Optional

import pandas as pd
import plotly.graph_objects as go

from engine.hardware.peaks import flops_text
from engine.charts.style import T_TITLE, empty_figure, run_groups, spread_lone_x, style

FORECAST_COLOR = "#7C3AED"
Y_TITLE = "model FLOP/s (training)"


def flops_figure(execs: Optional[pd.DataFrame], per_run: Mapping[str, Mapping], title: Optional[str] =
                 "Achieved FLOP/s vs peak", height: int = 340) -> go.Figure:
    """Model FLOP/s of every steady execution (samples/s x training FLOPs per sample)
    over wall time, one colour per run, with each run's peak (MFU's denominator: theoretical
    or data-sheet) as a dashed line and the best matmul measured here as a dotted one.

    Args:
        execs: executions (t, samples_per_sec, warmup) tagged with label/color
            (engine.charts.style.tag).
        per_run: {label: {'flops_per_sample', 'peak_flops_per_sec', 'peak_kind', 'peak_dtype',
            'best_matmul_flops_per_sec'}} (engine.report.mfu.of); runs without FLOPs are left out.
    """
    if execs is None or execs.empty:
        return empty_figure("waiting for the first execution ...", height, T_TITLE, Y_TITLE, title)
    fig, peaks, best = go.Figure(), {}, {}
    for label, color, g in run_groups(execs):
        info = per_run.get(label) or {}
        fps = info.get("flops_per_sample")
        if not fps:
            continue
        g = g[g["warmup"].fillna(0) == 0]
        y = g["samples_per_sec"] * fps
        fig.add_trace(go.Scatter(x=g["t"], y=y, name=label, mode="lines+markers", line=dict(color=color, width=2),
                                 marker=dict(size=5, color=color),
                                 hovertemplate="%{y:.3s}FLOP/s at %{x:.1f} s<extra>" + label + "</extra>"))
        dtype = info.get("peak_dtype") or ""
        if info.get("peak_flops_per_sec"):
            kind = {"theoretical": "theoretical", "datasheet": "data-sheet"}.get(info.get("peak_kind") or "", "stored")
            peaks.setdefault(info["peak_flops_per_sec"], (color, f"{kind} {dtype} peak".replace("  ", " ")))
        if info.get("best_matmul_flops_per_sec"):
            best.setdefault(info["best_matmul_flops_per_sec"], (color, f"best {dtype} matmul".replace("  ", " ")))
    if not fig.data:
        return empty_figure("no FLOPs counted for these runs", height, T_TITLE, Y_TITLE, title)
    for value, (color, name) in peaks.items():
        fig.add_hline(y=value, line=dict(color=color, width=2, dash="dash"),
                      annotation=dict(text=f"{name} {flops_text(value)}", font=dict(size=13, color=color)),
                      annotation_position="top left")
    for value, (color, name) in best.items():
        fig.add_hline(y=value, line=dict(color=color, width=1.5, dash="dot"),
                      annotation=dict(text=f"{name} {flops_text(value)}", font=dict(size=12, color=color)),
                      annotation_position="bottom left")
    style(fig, T_TITLE, Y_TITLE, title, height)
    fig.update_yaxes(rangemode="tozero", exponentformat="SI")  # 200G, not Plotly's 200B
    return spread_lone_x(fig)  # one steady execution: its point, not an axis of -0.5..1


def add_forecast(fig: go.Figure, fc: Optional[dict]) -> go.Figure:
    """Draw the what-if forecast (engine.report.forecast.forecast) on a scaling figure
    (engine.charts.runs.scaling_figure): N physical devices like this one, dashed, and
    N simulated on it where a 2-replica run gave the communication cost, dotted."""
    if not fc:
        return fig
    for key, name, dash in (("physical", "forecast: N devices like this one", "dash"),
                            ("simulated", "forecast: N simulated on this device", "dot")):
        if key == "simulated" and fc.get("two_id") is None:
            continue
        pts = fc[key]
        fig.add_trace(go.Scatter(
            x=[n for n, _ in pts], y=[s for _, s in pts], name=name, mode="lines+markers",
            line=dict(color=FORECAST_COLOR, width=2, dash=dash), marker=dict(color=FORECAST_COLOR, size=8,
                                                                              symbol="circle-open"),
            hovertemplate="forecast %{y:.2f}× on %{x} replicas<extra>" + f"Amdahl + all-reduce: "
                          f"{fc['c2_source']}" + "</extra>"))
    return fig
