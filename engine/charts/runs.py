"""Charts of the Runs page: speedup against a baseline, scaling against replicas,
replica layouts and transfer-learning curves. Pure functions from DataFrames to Plotly
figures, styled by engine.charts.style."""
from __future__ import annotations

from typing import Mapping, Optional

import pandas as pd
import plotly.graph_objects as go

from engine.charts.style import (
    BASELINE_COLOR, REFERENCE_COLOR, T_TITLE, empty_figure, run_groups, style,
)
from engine.report.headline import PAGE_SIGN, ratio_text


# Speedup of a well-tuned synchronous data-parallel setup (devices -> x), shown
# next to measured points so the user can judge scaling efficiency.
REFERENCE_SCALING = {1: 1.0, 2: 2.0, 4: 3.8, 8: 7.3}
# Runs up to which the scaling chart gives each run a legend entry.
SCALING_LEGEND_MAX = 6


SLOWER_INSIDE = 0.45  # speedups in [this, 1): label inside the bar (long enough to hold "0.85×")


def speedup_figure(bars: pd.DataFrame, title: Optional[str] = "Speedup vs baseline",
                   height: Optional[int] = None,
                   x_title: str = "speedup (×, steady samples/s vs baseline)") -> go.Figure:
    """Horizontal speedup bars with the baseline at 1.0x.

    Args:
        bars: one row per run: label, color, speedup (x, steady samples/s of the
            run / baseline's), optional 'note' (hover, e.g. a caveat).
    """
    height = height or max(190, 70 + 46 * (0 if bars is None else len(bars)))
    if bars is None or bars.empty:
        return empty_figure("no speedup yet: waiting for steady-state throughput", height,
                            x_title, "", title)
    bars = bars.dropna(subset=["speedup"])
    if bars.empty:  # e.g. no run reached the target: axes with no bars read as a broken chart
        return empty_figure("no speedup to draw: no run has one (see below)", height, x_title, "", title)
    notes = bars["note"].fillna("") if "note" in bars.columns else pd.Series("", index=bars.index)
    fig = go.Figure(go.Bar(
        x=bars["speedup"], y=bars["label"], orientation="h", marker_color=list(bars["color"]),
        text=[ratio_text(v, PAGE_SIGN) for v in bars["speedup"]], cliponaxis=False,
        # A bar ending just short of 1.0: its label inside, not across the dashed baseline line.
        textposition=["inside" if SLOWER_INSIDE <= v < 1.0 else "outside" for v in bars["speedup"]],
        insidetextanchor="end",
        textfont=dict(size=16), customdata=notes,
        hovertemplate="%{y}: %{x:.3f}×<br>%{customdata}<extra></extra>"))
    fig.add_vline(x=1.0, line=dict(color=BASELINE_COLOR, width=2, dash="dash"),
                  annotation_text="baseline 1.0×", annotation_position="top",
                  annotation_font=dict(color=BASELINE_COLOR, size=13))
    style(fig, x_title, "", title, height, legend=False)
    # Room right of the longest bar for its "1.23×" label.
    top = max(1.4, float(bars["speedup"].max()) * 1.4) if len(bars) else 1.4
    # Few ticks: the bar often sits in a narrow column (Train page).
    fig.update_xaxes(range=[0, top], nticks=4)
    fig.update_yaxes(autorange="reversed", showline=False)
    return fig


def scaling_figure(points: pd.DataFrame, title: str = "Scaling: speedup vs replicas",
                   height: int = 400, y_title: str = "speedup vs baseline (×)") -> go.Figure:
    """Measured speedup against device count, with the ideal line (speedup =
    devices) and a well-tuned data-parallel reference (REFERENCE_SCALING);
    `y_title` names which speedup it is.

    Args:
        points: one row per run: devices (all replicas: devices per worker x
            workers), speedup (x), label, color, simulated
            (bool: logical devices carved out of one physical device, drawn as
            open markers and labelled 'simulated'); optional workers (int:
            worker processes, drawn as squares), one_host (bool: all workers on
            one host, sharing its cores: open squares) and layout (text by the
            marker and in the legend, see `replica_layout`). More than
            SCALING_LEGEND_MAX runs get no legend entries of their own.
    """
    max_dev = max([8, *([int(points["devices"].max())] if points is not None and len(points) else [])])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[1, max_dev], y=[1, max_dev], name="ideal (speedup = replicas)",
                             mode="lines", line=dict(color="#9CA3AF", width=2, dash="dot"),
                             hoverinfo="skip"))
    ref_x = list(REFERENCE_SCALING)
    ref_y = list(REFERENCE_SCALING.values())
    fig.add_trace(go.Scatter(
        x=ref_x, y=ref_y, name="well-tuned data parallel (reference)", mode="lines+markers+text",
        line=dict(color=REFERENCE_COLOR, width=1.5), marker=dict(color=REFERENCE_COLOR, size=11,
                                                                  symbol="diamond"),
        text=[ratio_text(y, PAGE_SIGN, digits=1) if x > 1 else "" for x, y in zip(ref_x, ref_y)], textposition="top left",
        customdata=[100 * y / x for x, y in zip(ref_x, ref_y)],
        hovertemplate="reference: %{y:.1f}× on %{x} devices (%{customdata:.0f}% efficiency)"
                      "<extra></extra>"))
    if points is not None and len(points):
        pts = points.dropna(subset=["speedup"])
        # A legend entry per run fits a few runs; with more it would fill the chart
        # (the speedup bars beside it name every run in the same colours).
        per_run_legend = pts["label"].nunique() <= SCALING_LEGEND_MAX
        # The baseline last and smaller: it sits at (1, 1.0), where a single-device run near 1x
        # would otherwise hide it; on top, the run's marker still shows around it.
        groups = sorted(run_groups(pts), key=lambda grp: grp[1] == BASELINE_COLOR)
        for label, color, g in groups:
            sim = bool(g["simulated"].fillna(False).astype(bool).iloc[0]) if "simulated" in g else False
            workers = int(g["workers"].fillna(1).iloc[0]) if "workers" in g else 1
            shared = bool(g["one_host"].fillna(False).astype(bool).iloc[0]) if "one_host" in g else False
            layout = str(g["layout"].iloc[0]) if "layout" in g and pd.notna(g["layout"].iloc[0]) else None
            if layout:  # e.g. '2 workers × 1 device' or '2 devices (simulated)'
                name, text = f"{label} ({layout})", layout if (sim or workers > 1) else ""
            else:
                name, text = label + (" (simulated devices)" if sim else ""), "simulated" if sim else ""
            # Circles: devices in one process; squares: several worker processes.
            # Open: replicas sharing one physical device or one host's cores.
            symbol = ("square" if workers > 1 else "circle") + ("-open" if sim or shared else "")
            eff = 100 * g["speedup"] / g["devices"]
            fig.add_trace(go.Scatter(
                x=g["devices"], y=g["speedup"], name=name, showlegend=per_run_legend,
                mode="markers+text", text=[text] * len(g),
                # Beside the marker, not under it: under, a speedup near 1x runs into the x axis.
                textposition=["middle left" if d >= max_dev else "middle right" for d in g["devices"]],
                textfont=dict(color=color, size=13),
                marker=dict(color=color, size=9 if color == BASELINE_COLOR else 15, symbol=symbol,
                            line=dict(width=3, color=color)),
                customdata=eff,
                hovertemplate="%{y:.2f}× on %{x} replicas (%{customdata:.0f}% efficiency)"
                              "<extra>" + label + "</extra>"))
    style(fig, "replicas (devices × workers)", y_title, title, height)
    ticks = [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= max_dev]
    fig.update_xaxes(tickvals=ticks, range=[0.5, max_dev + 0.5])
    # Headroom above the highest point: the reference's top label ("7.3×") sits above its marker
    # and was cut at the plot's top edge.
    top = max([float(max_dev), *(float(v) for v in (points["speedup"].dropna() if points is not None
                                                       and len(points) else []))])
    fig.update_yaxes(range=[0, 1.15 * top])
    return fig


# --- replica layouts (Runs page scaling) -----------------------------------------

def replica_layout(cfg: Mapping, summary: Optional[Mapping] = None,
                   hosts: Optional[int] = None) -> str:
    """How a run's replicas were laid out, for scaling charts: '1 device',
    '2 devices (simulated)', '2 workers × 1 device', '2 workers × 2 devices (one host)'.

    Args:
        cfg: the run's config (devices per worker, workers).
        summary: its summary ('replicas_simulated': logical devices carved out
            of one physical device).
        hosts: distinct hosts its workers ran on, when known; 1 with several
            workers adds '(one host)': they shared its cores.
    """
    summary = summary or {}
    devices, workers = int(cfg.get("devices", 1)), int(cfg.get("workers", 1))
    dev = f"{devices} device" + ("s" if devices != 1 else "")
    if devices > 1 and summary.get("replicas_simulated"):
        dev += " (simulated)"
    if workers <= 1:
        return dev
    return f"{workers} workers × {dev}" + (" (one host)" if hosts == 1 else "")


# --- transfer learning (engine.training.transfer) ---------------------------------------------

ACC_TITLE = "validation accuracy (fraction, 0-1)"


def transfer_figure(curves: Optional[pd.DataFrame], target: Optional[float] = None,
                    reached: Optional[Mapping[str, Optional[float]]] = None,
                    title: Optional[str] = "Validation accuracy vs wall time",
                    height: int = 400) -> go.Figure:
    """Validation accuracy per epoch against wall time (s, from the start of
    training, warm-up included), one line per run (fine-tuned vs from scratch),
    the target as a dashed horizontal line, and a star where each run first
    reached it (dotted down to the time axis).

    Args:
        curves: epochs rows (t, val_accuracy, epoch) tagged with label/color.
        target: the target validation accuracy (fraction).
        reached: {label: time to target (s) or None (not reached)}.
    """
    if curves is None or curves.empty or pd.to_numeric(curves["val_accuracy"], errors="coerce").isna().all():
        return empty_figure("no validation accuracy yet", height, T_TITLE, ACC_TITLE, title)
    fig = go.Figure()
    reached = reached or {}
    for label, color, g in run_groups(curves):
        g = g.assign(val_accuracy=pd.to_numeric(g["val_accuracy"], errors="coerce")).dropna(
            subset=["val_accuracy"])
        ep = (g["epoch"] + 1) if "epoch" in g.columns else pd.Series(range(1, len(g) + 1), index=g.index)
        fig.add_trace(go.Scatter(
            x=g["t"], y=g["val_accuracy"], name=label, legendgroup=label, mode="lines+markers",
            line=dict(color=color, width=3), marker=dict(color=color, size=8), customdata=ep,
            hovertemplate="val accuracy %{y:.3f} at %{x:.2f} s (epoch %{customdata})<extra>"
                          + label + "</extra>"))
        t_hit = reached.get(label)
        if target is not None and t_hit is not None:
            fig.add_trace(go.Scatter(
                x=[t_hit, t_hit], y=[0, target], mode="lines", legendgroup=label, showlegend=False,
                line=dict(color=color, width=1.5, dash="dot"), hoverinfo="skip"))
            fig.add_trace(go.Scatter(
                x=[t_hit], y=[target], mode="markers", legendgroup=label, showlegend=False,
                marker=dict(color=color, size=18, symbol="star", line=dict(color="white", width=1)),
                hovertemplate=f"reached {target:g} at %{{x:.2f}} s<extra>{label}</extra>"))
            # The time at the foot of the dotted line (above the curves it would be clipped).
            fig.add_annotation(x=t_hit, y=0, text=f"<b>{t_hit:.2f} s</b>", showarrow=False, xanchor="left",
                               yanchor="bottom", xshift=4, yshift=2, font=dict(color=color, size=14),
                               bgcolor="rgba(255,255,255,0.8)")
    if target is not None:
        fig.add_hline(y=target, line=dict(color=REFERENCE_COLOR, width=1.5, dash="dash"),
                      annotation_text=f"target {target:g}", annotation_position="bottom right",
                      annotation_font=dict(color=REFERENCE_COLOR, size=13))
    style(fig, T_TITLE, ACC_TITLE, title, height)
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(range=[0, 1.05], tickformat=".2f")
    return fig
