"""Chart builders for the dashboard: pure functions from pandas DataFrames to
Plotly figures (no Streamlit, no TensorFlow), so they are testable on their own.

Conventions (units on every axis title):
- time ``t`` is wall-clock seconds since the run's training start (s);
- throughput is samples/s (all replicas together);
- ``step`` counts optimizer steps (steps).

Metric frames are "long": one row per point with a ``label`` (legend name) and
a ``color`` column per run; `tag` adds both.  A run keeps one colour in every
chart (`run_color`); baselines are always the same neutral grey.
"""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

# Colour-blind-safe (Okabe-Ito / Tol) colours that stay distinct on a projector;
# no grey or yellow (grey is the baseline's, yellow washes out on white).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
           "#882255", "#117733", "#332288", "#AA4499")
BASELINE_COLOR = "#6B7280"
REFERENCE_COLOR = "#111827"
# Display cap per trace; the store keeps every point.
MAX_POINTS = 2000
# Speedup of a well-tuned synchronous data-parallel setup (devices -> x), shown
# next to measured points so the user can judge scaling efficiency.
REFERENCE_SCALING = {1: 1.0, 2: 2.0, 4: 3.8, 8: 7.3}

_FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=15, color="#111827")
_PRECISION_SHORT = {"float32": "fp32", "mixed_float16": "mixed fp16", "mixed_bfloat16": "mixed bf16"}
T_TITLE = "wall time since training start (s)"
STEP_TITLE = "optimizer step (steps)"


# --- runs: colours, labels, summaries --------------------------------------

def run_color(run_id: int, role: str = "run") -> str:
    """The colour of a run in every chart: grey for a baseline, else a palette
    colour fixed by its id (so a run keeps its colour across pages and reloads)."""
    if role == "baseline":
        return BASELINE_COLOR
    return PALETTE[(int(run_id) - 1) % len(PALETTE)]


def run_label(run: Mapping) -> str:
    """Short legend name, e.g. '#6 mixed bf16 · 2 dev (sim)' or '#5 baseline fp32'."""
    cfg = run.get("config") or {}
    summ = run.get("summary") or {}
    plan = run.get("plan") or {}
    parts = [f"#{run['id']}" + (" baseline" if run.get("role") == "baseline" else "")]
    parts[0] += " " + _PRECISION_SHORT.get(cfg.get("precision"), str(cfg.get("precision")))
    devices = cfg.get("devices", 1)
    if devices > 1:
        simulated = summ.get("replicas_simulated", plan.get("replicas_simulated"))
        parts.append(f"{devices} dev" + (" (sim)" if simulated else ""))
    if cfg.get("workers", 1) > 1:
        parts.append(f"{cfg['workers']} workers")
    if cfg.get("steps_per_execution", 1) > 1:
        parts.append(f"spe {cfg['steps_per_execution']}")
    if cfg.get("jit_compile"):
        parts.append("XLA")
    if cfg.get("schedule", "constant") != "constant":
        parts.append(cfg["schedule"])
    return " · ".join(parts)


def config_summary(cfg: Mapping, summary: Optional[Mapping] = None) -> str:
    """One line describing a config for tables; speed options appear only when
    they are on, e.g. 'digits · cnn · mixed bf16 · 2 devices (simulated) · batch 128 · 3 epochs'."""
    summary = summary or {}
    devices = cfg.get("devices", 1)
    dev = f"{devices} device" + ("s" if devices != 1 else "")
    if devices > 1 and summary.get("replicas_simulated"):
        dev += " (simulated)"
    parts = [cfg.get("dataset", "?"), cfg.get("model", "?"),
             _PRECISION_SHORT.get(cfg.get("precision"), str(cfg.get("precision"))), dev]
    if cfg.get("workers", 1) > 1:
        parts.append(f"{cfg['workers']} workers")
    parts.append(f"batch {cfg.get('batch_size')}")
    if cfg.get("steps_per_execution", 1) > 1:
        parts.append(f"spe {cfg['steps_per_execution']}")
    if cfg.get("jit_compile"):
        parts.append("XLA")
    if cfg.get("schedule", "constant") != "constant":
        parts.append(cfg["schedule"])
    parts.append(f"{cfg.get('epochs')} epochs")
    return " · ".join(str(p) for p in parts)


def tag(df: pd.DataFrame, label: str, color: str, run_id: Optional[int] = None) -> pd.DataFrame:
    """A copy of `df` with 'label', 'color' (and 'run_id') columns for the builders."""
    out = df.copy()
    out["label"] = label
    out["color"] = color
    if run_id is not None:
        out["run_id"] = run_id
    return out


def downsample(df: pd.DataFrame, max_points: int = MAX_POINTS, by: str = "label",
               keep: Optional[str] = "warmup") -> pd.DataFrame:
    """At most `max_points` evenly spaced rows per `by` group (first and last
    kept), plus every row where column `keep` is truthy (e.g. warm-up
    executions, which must stay visible). Display only: the store keeps all."""
    if df.empty:
        return df
    groups = df.groupby(by, sort=False) if by in df.columns else [(None, df)]
    parts = []
    for _, g in groups:
        flagged = g[g[keep].fillna(0).astype(bool)] if keep and keep in g.columns else g.iloc[0:0]
        rest = g.drop(flagged.index) if len(flagged) else g
        if len(rest) > max_points:
            idx = np.unique(np.linspace(0, len(rest) - 1, max_points).round().astype(int))
            rest = rest.iloc[idx]
        parts.append(pd.concat([flagged, rest]).sort_index())
    return pd.concat(parts)


# --- layout helpers ----------------------------------------------------------

def _style(fig: go.Figure, x_title: str, y_title: str, title: Optional[str] = None,
           height: int = 360, legend: bool = True) -> go.Figure:
    """Shared look: white template, large fonts for projectors, units on axes,
    legend under the x-axis title (never over the data or the title);
    `uirevision` keeps the user's zoom while live data refreshes."""
    top = 56 if title else 20
    bottom = 118 if legend else 60
    plot_h = max(height - top - bottom, 80)
    fig.update_layout(
        template="plotly_white", font=_FONT, height=height,
        title=dict(text=title, font=dict(size=18), x=0, xanchor="left", y=1, yanchor="top",
                   pad=dict(t=12, l=4)) if title else None,
        margin=dict(l=72, r=24, t=top, b=bottom),
        showlegend=legend, uirevision="keep",
        legend=dict(orientation="h", yanchor="top", y=-62 / plot_h, xanchor="left", x=0,
                    font=dict(size=13)),
        hoverlabel=dict(font_size=14),
    )
    axis = dict(showline=True, linecolor="#9CA3AF", gridcolor="#E5E7EB", zeroline=False,
                title_font=dict(size=15, color="#111827"), tickfont=dict(size=14, color="#374151"))
    fig.update_xaxes(title_text=x_title, title_standoff=8, **axis)
    fig.update_yaxes(title_text=y_title, **axis)
    return fig


def empty_figure(message: str, height: int = 300, x_title: str = "", y_title: str = "",
                 title: Optional[str] = None) -> go.Figure:
    """A blank chart that says what to do or what it is waiting for."""
    fig = go.Figure()
    fig.add_annotation(text=message, x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                       font=dict(size=16, color="#6B7280"))
    fig.update_xaxes(showticklabels=False, showgrid=False)
    fig.update_yaxes(showticklabels=False, showgrid=False)
    return _style(fig, x_title, y_title, title=title, height=height, legend=False)


def _break_at_epochs(df: pd.DataFrame) -> pd.DataFrame:
    """Rows with an all-NaN row before each new epoch, so a line does not bridge
    the validation pass between epochs (no executions happen there)."""
    if df.empty or "epoch" not in df.columns:
        return df
    df = df.reset_index(drop=True)
    starts = df.index[df["epoch"].diff().fillna(0) != 0]
    if not len(starts):
        return df
    gaps = pd.DataFrame(np.nan, index=starts - 0.5, columns=df.columns)
    gaps[["step", "epoch"]] = 0  # customdata must stay numeric
    return pd.concat([df, gaps]).sort_index().reset_index(drop=True)


def _groups(df: pd.DataFrame):
    """(label, color, rows) per run, in first-appearance order."""
    if df is None or df.empty:
        return []
    return [(label, g["color"].iloc[0], g) for label, g in df.groupby("label", sort=False)]


# --- live / overlay charts ---------------------------------------------------

def throughput_figure(execs: pd.DataFrame, medians: Optional[Mapping[str, Optional[float]]] = None,
                      title: str = "Throughput per execution", height: int = 380) -> go.Figure:
    """Samples/s of every execution over wall time, one colour per run.

    Args:
        execs: executions rows (t, samples_per_sec, warmup, step, epoch) tagged
            with label/color.
        medians: steady-state median samples/s per label (the engine's figure),
            drawn as a dashed line with its value.
    Warm-up executions (tracing, compilation) are open 'x' markers: they are
    left out of the steady state.
    """
    if execs is None or execs.empty:
        return empty_figure("waiting for the first execution ...", height, T_TITLE,
                            "throughput (samples/s)", title)
    fig = go.Figure()
    execs = downsample(execs)
    warm_legend = True
    for label, color, g in _groups(execs):
        warm = g["warmup"].fillna(0).astype(bool)
        steady = _break_at_epochs(g[~warm])
        fig.add_trace(go.Scatter(
            x=steady["t"], y=steady["samples_per_sec"], name=label, legendgroup=label,
            mode="lines+markers", line=dict(color=color, width=2), marker=dict(color=color, size=5),
            connectgaps=False,
            customdata=np.stack([steady["step"], steady["epoch"] + 1], axis=-1) if len(steady) else None,
            hovertemplate="%{y:,.0f} samples/s at %{x:.2f} s<br>step %{customdata[0]}, epoch "
                          "%{customdata[1]}<extra>" + label + "</extra>"))
        if warm.any():
            w = g[warm]
            fig.add_trace(go.Scatter(
                x=w["t"], y=w["samples_per_sec"], name="warm-up (compile)", legendgroup="warmup",
                showlegend=warm_legend, mode="markers",
                marker=dict(color=color, size=13, symbol="x-open", line=dict(width=2.5)),
                hovertemplate="warm-up: %{y:,.0f} samples/s, ends at %{x:.2f} s<extra>" + label + "</extra>"))
            warm_legend = False
        m = (medians or {}).get(label)
        if m and len(g):
            x0, x1 = float(g["t"].min()), float(g["t"].max())
            fig.add_trace(go.Scatter(
                x=[x0, x1], y=[m, m], mode="lines", legendgroup=label, showlegend=False,
                line=dict(color=color, width=2, dash="dash"),
                hovertemplate=f"steady median {m:,.0f} samples/s<extra>{label}</extra>"))
            fig.add_annotation(x=x1, y=m, text=f"median {m:,.0f}", showarrow=False, xanchor="right",
                               yanchor="bottom", font=dict(color=color, size=13),
                               bgcolor="rgba(255,255,255,0.7)")
    _style(fig, T_TITLE, "throughput (samples/s)", title, height)
    fig.update_yaxes(rangemode="tozero", tickformat=",.0f")
    return fig


def loss_figure(execs: pd.DataFrame, epochs: Optional[pd.DataFrame] = None, x: str = "t",
                title: Optional[str] = None, height: int = 340) -> go.Figure:
    """Training loss per execution (solid) and validation loss per epoch
    (dashed, diamonds), runs overlaid, against wall time (x='t', s) or optimizer
    step (x='step')."""
    x_title = T_TITLE if x == "t" else STEP_TITLE
    title = title or ("Loss vs wall time" if x == "t" else "Loss vs step")
    if (execs is None or execs.empty) and (epochs is None or epochs.empty):
        return empty_figure("waiting for the first execution ...", height, x_title, "loss", title)
    fig = go.Figure()
    unit = "s" if x == "t" else "steps"
    for label, color, g in _groups(downsample(execs, keep=None) if execs is not None else None):
        fig.add_trace(go.Scatter(
            x=g[x], y=g["loss"], name=f"{label} train", legendgroup=label, mode="lines",
            line=dict(color=color, width=2),
            hovertemplate=f"train loss %{{y:.4f}} at %{{x:,.2f}} {unit}<extra>{label}</extra>"))
    for label, color, g in _groups(epochs):
        g = g.dropna(subset=["val_loss"])
        if g.empty:
            continue
        fig.add_trace(go.Scatter(
            x=g[x], y=g["val_loss"], name=f"{label} val", legendgroup=label, mode="lines+markers",
            line=dict(color=color, width=2.5, dash="dash"),
            marker=dict(color=color, size=10, symbol="diamond"),
            hovertemplate=f"validation loss %{{y:.4f}} at %{{x:,.2f}} {unit}<extra>{label}</extra>"))
    _style(fig, x_title, "loss (cross-entropy)", title, height)
    fig.update_yaxes(rangemode="tozero")
    return fig


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
    notes = bars["note"].fillna("") if "note" in bars.columns else pd.Series("", index=bars.index)
    fig = go.Figure(go.Bar(
        x=bars["speedup"], y=bars["label"], orientation="h", marker_color=list(bars["color"]),
        text=[f"{v:.2f}×" for v in bars["speedup"]], textposition="outside", cliponaxis=False,
        textfont=dict(size=16), customdata=notes,
        hovertemplate="%{y}: %{x:.3f}×<br>%{customdata}<extra></extra>"))
    fig.add_vline(x=1.0, line=dict(color=BASELINE_COLOR, width=2, dash="dash"),
                  annotation_text="baseline 1.0×", annotation_position="top",
                  annotation_font=dict(color=BASELINE_COLOR, size=13))
    _style(fig, x_title, "", title, height, legend=False)
    # Room right of the longest bar for its "1.23×" label.
    top = max(1.4, float(bars["speedup"].max()) * 1.4) if len(bars) else 1.4
    fig.update_xaxes(range=[0, top])
    fig.update_yaxes(autorange="reversed", showline=False)
    return fig


def lr_figure(execs: pd.DataFrame, title: str = "Learning rate", height: int = 240) -> go.Figure:
    """Learning rate per execution against optimizer step, runs overlaid."""
    if execs is None or execs.empty or execs["lr"].isna().all():
        return empty_figure("no learning-rate data yet", height, STEP_TITLE, "learning rate", title)
    fig = go.Figure()
    for label, color, g in _groups(downsample(execs, keep=None)):
        fig.add_trace(go.Scatter(x=g["step"], y=g["lr"], name=label, mode="lines",
                                 line=dict(color=color, width=2, shape="hv"),
                                 hovertemplate="lr %{y:.3g} at step %{x}<extra>" + label + "</extra>"))
    _style(fig, STEP_TITLE, "learning rate", title, height, legend=False)
    fig.update_yaxes(exponentformat="power", rangemode="tozero")
    return fig


def lr_preview_figure(preview: pd.DataFrame, steps_per_epoch: Optional[int] = None,
                      title: Optional[str] = None, height: int = 240) -> go.Figure:
    """The schedule the run will use: learning rate (left axis) and, when it
    varies, momentum (right axis, dotted) against optimizer step; dotted
    vertical lines at epoch boundaries. Sized for the narrow sidebar."""
    if preview is None or preview.empty:
        return empty_figure("no preview", height, STEP_TITLE, "learning rate", title)
    fig = go.Figure(go.Scatter(x=preview["step"], y=preview["lr"], name="learning rate (left)", mode="lines",
                               line=dict(color=PALETTE[0], width=2.5),
                               hovertemplate="lr %{y:.3g} at step %{x}<extra></extra>"))
    mom = preview["momentum"] if "momentum" in preview.columns else None
    moving = mom is not None and mom.notna().any() and float(mom.max() - mom.min()) > 1e-12
    if moving:
        fig.add_trace(go.Scatter(x=preview["step"], y=mom, name="momentum (right)", yaxis="y2", mode="lines",
                                 line=dict(color=PALETTE[1], width=2, dash="dot"),
                                 hovertemplate="momentum %{y:.3f} at step %{x}<extra></extra>"))
    # Narrow: the legend names the axes (lr left, momentum right) instead of axis titles.
    _style(fig, "step (steps)", "", title, height, legend=True)
    small = dict(size=12, color="#374151")
    fig.update_layout(margin=dict(l=8, r=8, t=(40 if title else 0) + (50 if moving else 28), b=44,
                                  autoexpand=False),
                      font=dict(size=12),
                      legend=dict(font=dict(size=12), y=1.0, yanchor="bottom", x=0, xanchor="left"))
    fig.update_xaxes(title_font=dict(size=13), tickfont=small)
    # Tick labels inside the plot: the sidebar has no width to spare.
    fig.update_yaxes(tickfont=small, tickformat=".2g", rangemode="tozero", ticklabelposition="inside")
    if moving:
        fig.update_layout(yaxis2=dict(overlaying="y", side="right", showgrid=False, tickfont=small,
                                      tickformat=".2f", ticklabelposition="inside"))
    if steps_per_epoch and len(preview) and preview["step"].max() / steps_per_epoch <= 30:
        for k in range(1, int(preview["step"].max() // steps_per_epoch) + 1):
            fig.add_vline(x=k * steps_per_epoch, line=dict(color="#D1D5DB", width=1, dash="dot"))
    return fig


def system_figure(system: pd.DataFrame, column: str, y_title: str, title: str,
                  height: int = 240) -> go.Figure:
    """One system metric (e.g. 'cpu_percent', %; 'rss_mb', MB) of the worker
    process over wall time, runs overlaid."""
    if system is None or system.empty or column not in system or system[column].isna().all():
        return empty_figure("no samples yet", height, T_TITLE, y_title, title)
    fig = go.Figure()
    for label, color, g in _groups(downsample(system, keep=None)):
        fig.add_trace(go.Scatter(x=g["t"], y=g[column], name=label, mode="lines",
                                 line=dict(color=color, width=2),
                                 hovertemplate="%{y:,.1f} at %{x:.1f} s<extra>" + label + "</extra>"))
    _style(fig, T_TITLE, y_title, title, height, legend=False)
    fig.update_yaxes(rangemode="tozero")
    return fig


def scaling_figure(points: pd.DataFrame, title: str = "Scaling: speedup vs devices",
                   height: int = 400) -> go.Figure:
    """Measured speedup against device count, with the ideal line (speedup =
    devices) and a well-tuned data-parallel reference (REFERENCE_SCALING).

    Args:
        points: one row per run: devices (all replicas: devices per worker x
            workers), speedup (x), label, color, simulated
            (bool: logical devices carved out of one physical device, drawn as
            open markers and labelled 'simulated').
    """
    max_dev = max([8, *([int(points["devices"].max())] if points is not None and len(points) else [])])
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=[1, max_dev], y=[1, max_dev], name="ideal (speedup = devices)",
                             mode="lines", line=dict(color="#9CA3AF", width=2, dash="dot"),
                             hoverinfo="skip"))
    ref_x = list(REFERENCE_SCALING)
    ref_y = list(REFERENCE_SCALING.values())
    fig.add_trace(go.Scatter(
        x=ref_x, y=ref_y, name="well-tuned data parallel (reference)", mode="lines+markers+text",
        line=dict(color=REFERENCE_COLOR, width=1.5), marker=dict(color=REFERENCE_COLOR, size=11,
                                                                  symbol="diamond"),
        text=[f"{y:.1f}×" if x > 1 else "" for x, y in zip(ref_x, ref_y)], textposition="top left",
        customdata=[100 * y / x for x, y in zip(ref_x, ref_y)],
        hovertemplate="reference: %{y:.1f}× on %{x} devices (%{customdata:.0f}% efficiency)"
                      "<extra></extra>"))
    if points is not None and len(points):
        pts = points.dropna(subset=["speedup"])
        for label, color, g in _groups(pts):
            sim = bool(g["simulated"].fillna(False).astype(bool).iloc[0]) if "simulated" in g else False
            eff = 100 * g["speedup"] / g["devices"]
            fig.add_trace(go.Scatter(
                x=g["devices"], y=g["speedup"], name=label + (" (simulated devices)" if sim else ""),
                mode="markers+text", text=["simulated" if sim else ""] * len(g),
                textposition="bottom center", textfont=dict(color=color, size=13),
                marker=dict(color=color, size=15, symbol="circle-open" if sim else "circle",
                            line=dict(width=3, color=color)),
                customdata=eff,
                hovertemplate="%{y:.2f}× on %{x} devices (%{customdata:.0f}% efficiency)"
                              "<extra>" + label + "</extra>"))
    _style(fig, "devices (replicas)", "speedup vs baseline (×)", title, height)
    ticks = [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= max_dev]
    fig.update_xaxes(tickvals=ticks, range=[0.5, max_dev + 0.5])
    fig.update_yaxes(rangemode="tozero")
    return fig
