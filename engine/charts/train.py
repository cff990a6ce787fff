"""Charts of the Train page: one run live or several overlaid (throughput, loss,
where the time went, learning rate, system load, data wait, loss scale) and the LR
range test. Pure functions from DataFrames to Plotly figures, styled by
engine.charts.style (its docstring gives the conventions)."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.charts.style import (
    PALETTE, STEP_TITLE, T_SHORT, T_TITLE, break_at_epochs, clip_marks, downsample, empty_figure, line_mode,
    median_labels, run_groups, spread_lone_x, style, tint,
)

CLIP_MARKS_MOST = 5  # off-scale executions marked with their time in the data wait chart (all are counted)


# --- live / overlay charts ---------------------------------------------------

def throughput_figure(execs: pd.DataFrame, medians: Optional[Mapping[str, Optional[float]]] = None,
                      title: str = "Throughput per execution", height: int = 380) -> go.Figure:
    """Samples/s of every execution over wall time, one colour per run.

    Args:
        execs: executions rows (t, samples_per_sec, warmup, step, epoch) tagged
            with label/color.
        medians: steady-state median samples/s per label (the engine's figure),
            drawn as a dashed line with its value in the right margin.
    Warm-up executions (tracing, compilation) are open 'x' markers: they are
    left out of the steady state.
    """
    if execs is None or execs.empty:
        return empty_figure("waiting for the first execution ...", height, T_TITLE,
                            "throughput (samples/s)", title)
    fig = go.Figure()
    execs = downsample(execs)
    warm_legend = True
    labels = []  # (median, colour) per run: drawn in the right margin
    for label, color, g in run_groups(execs):
        warm = g["warmup"].fillna(0).astype(bool)
        steady = break_at_epochs(g[~warm])
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
            labels.append((m, color))
    style(fig, T_TITLE, "throughput (samples/s)", title, height)
    highest = [float(v) for v in (execs["samples_per_sec"].max(), *(m for m, _ in labels)) if np.isfinite(v)]
    top = 1.08 * max(highest) if highest and max(highest) > 0 else 1.0
    fig.update_yaxes(range=[0, top], tickformat=",.0f")
    median_labels(fig, labels, top)
    return spread_lone_x(fig)


def train_loss_kind(cfg: Optional[Mapping]) -> str:
    """What a run's training loss is computed on, when it is not plain cross-entropy
    on the true labels: 'label-smoothed 0.1', 'mixup 0.2', both joined by ' + ', or ''."""
    cfg = cfg or {}
    parts = []
    if cfg.get("label_smoothing"):
        parts.append(f"label-smoothed {cfg['label_smoothing']:g}")
    if cfg.get("mixup_alpha"):
        parts.append(f"mixup {cfg['mixup_alpha']:g}")
    return " + ".join(parts)


def loss_figure(execs: pd.DataFrame, epochs: Optional[pd.DataFrame] = None, x: str = "t",
                title: Optional[str] = None, height: int = 340,
                loss_kinds: Optional[Mapping[str, str]] = None) -> go.Figure:
    """Validation cross-entropy per epoch (bold, diamonds) and training loss per
    execution (thin), runs overlaid, against wall time (x='t', s) or optimizer
    step (x='step').

    Runs are compared on *plain* categorical cross-entropy on the validation set
    (epochs' `val_ce`; `val_loss` for runs stored before it existed), which label
    smoothing and mixup do not change. A training loss that is not plain
    cross-entropy is named so in the legend: `loss_kinds` maps a run's label to
    `train_loss_kind` of its config ('' or missing: plain).
    """
    x_title = T_TITLE if x == "t" else STEP_TITLE
    title = title or ("Loss vs wall time" if x == "t" else "Loss vs step")
    if (execs is None or execs.empty) and (epochs is None or epochs.empty):
        return empty_figure("waiting for the first execution ...", height, x_title, "loss", title)
    fig = go.Figure()
    unit = "s" if x == "t" else "steps"
    kinds = loss_kinds or {}
    for label, color, g in run_groups(downsample(execs, keep=None) if execs is not None else None):
        kind = kinds.get(label) or ""
        name = f"{label} train ({kind})" if kind else f"{label} train"
        fig.add_trace(go.Scatter(
            x=g[x], y=g["loss"], name=name, legendgroup=label, mode=line_mode(len(g)),
            line=dict(color=tint(color, 0.55), width=1.5, dash="dot" if kind else "solid"),
            marker=dict(color=tint(color, 0.55), size=5),
            hovertemplate=f"training loss{' (' + kind + ')' if kind else ''} %{{y:.4f}} at "
                          f"%{{x:,.2f}} {unit}<extra>{label}</extra>"))
    for label, color, g in run_groups(epochs):
        col = "val_ce" if "val_ce" in g.columns and g["val_ce"].notna().any() else "val_loss"
        g = g.dropna(subset=[col])
        if g.empty:
            continue
        kind = kinds.get(label) or ""
        # An old run without val_ce whose validation loss is smoothed says so.
        plain = col == "val_ce" or "label-smoothed" not in kind
        fig.add_trace(go.Scatter(
            x=g[x], y=g[col], name=f"{label} val" + ("" if plain else " (label-smoothed)"),
            legendgroup=label, mode="lines+markers", line=dict(color=color, width=3),
            marker=dict(color=color, size=10, symbol="diamond"),
            hovertemplate=f"validation cross-entropy %{{y:.4f}} at %{{x:,.2f}} {unit}<extra>{label}</extra>"))
    style(fig, x_title, "cross-entropy (val: plain)", title, height)
    fig.update_yaxes(rangemode="tozero")
    return spread_lone_x(fig)


# Where the time went: one colour per part, the same on every page.
TIME_PARTS = (("waiting", "waiting for a worker", "#E5E7EB"), ("setup", "setup", "#9CA3AF"), ("warmup", "warm-up", "#E69F00"),
              ("train", "training", "#0072B2"), ("data_wait", "data wait", "#56B4E9"),
              ("validation", "validation", "#009E73"), ("other", "other", "#D55E00"))


def time_figure(rows: list[tuple[str, Optional[Mapping]]], title: Optional[str] = "Where the time went",
                height: Optional[int] = None) -> go.Figure:
    """Horizontal stacked bars, one per run, of its time (s) split into waiting for a
    worker, setup, warm-up, training (compute), data wait, validation and other.

    Args: rows: [(run label, engine.report.pair.breakdown() or None)].
    """
    rows = [(label, b) for label, b in rows if b]
    height = height or 120 + 52 * max(len(rows), 2)  # one bar alone: room for the legend below the axis
    if not rows:
        return empty_figure("shown when a run ends (its timeline is stored then)", height,
                            "wall time (s)", "", title)
    fig = go.Figure()
    labels = [label for label, _ in rows]
    for key, name, color in TIME_PARTS:
        vals = [b.get(key) or 0.0 for _, b in rows]
        walls = [b.get("wall") or sum(b.get(k) or 0.0 for k, _, _ in TIME_PARTS) for _, b in rows]
        fig.add_trace(go.Bar(
            x=vals, y=labels, orientation="h", name=name, marker_color=color,
            customdata=[[w, (100 * v / w) if w else 0] for v, w in zip(vals, walls)],
            hovertemplate=f"{name}: %{{x:.2f}} s (%{{customdata[1]:.0f}}% of %{{customdata[0]:.1f}} s)"
                          "<extra>%{y}</extra>"))
    style(fig, "wall time (s)", "", title, height)
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_yaxes(autorange="reversed", showline=False)
    return fig


def lr_figure(execs: pd.DataFrame, title: str = "Learning rate", height: int = 240) -> go.Figure:
    """Learning rate per execution against optimizer step, runs overlaid."""
    if execs is None or execs.empty or execs["lr"].isna().all():
        return empty_figure("no learning-rate data yet", height, STEP_TITLE, "learning rate", title)
    fig = go.Figure()
    for label, color, g in run_groups(downsample(execs, keep=None)):
        fig.add_trace(go.Scatter(x=g["step"], y=g["lr"], name=label, mode=line_mode(len(g)),
                                 line=dict(color=color, width=2, shape="hv"), marker=dict(color=color, size=5),
                                 hovertemplate="lr %{y:.3g} at step %{x}<extra>" + label + "</extra>"))
    style(fig, STEP_TITLE, "learning rate", title, height, legend=False)
    fig.update_yaxes(exponentformat="power", rangemode="tozero")
    return spread_lone_x(fig)


def lr_preview_figure(preview: pd.DataFrame, steps_per_epoch: Optional[int] = None,
                      title: Optional[str] = None, height: int = 240) -> go.Figure:
    """The schedule the run will use: learning rate (left axis) and, when it
    varies, momentum (right axis, dotted) against optimizer step; dotted
    vertical lines at epoch boundaries. Sized for the narrow sidebar."""
    if preview is None or preview.empty:
        return empty_figure("no preview", height, STEP_TITLE, "learning rate", title)
    fig = go.Figure(go.Scatter(x=preview["step"], y=preview["lr"], name="learning rate (left)",
                               mode=line_mode(len(preview)), line=dict(color=PALETTE[0], width=2.5),
                               marker=dict(color=PALETTE[0], size=5),
                               hovertemplate="lr %{y:.3g} at step %{x}<extra></extra>"))
    mom = preview["momentum"] if "momentum" in preview.columns else None
    moving = mom is not None and mom.notna().any() and float(mom.max() - mom.min()) > 1e-12
    if moving:
        fig.add_trace(go.Scatter(x=preview["step"], y=mom, name="momentum (right)", yaxis="y2",
                                 mode=line_mode(len(preview)), line=dict(color=PALETTE[1], width=2, dash="dot"),
                                 marker=dict(color=PALETTE[1], size=5),
                                 hovertemplate="momentum %{y:.3f} at step %{x}<extra></extra>"))
    # Narrow: the legend names the axes (lr left, momentum right) instead of axis titles.
    style(fig, "step (steps)", "", title, height, legend=True)
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
        # One layout update, not add_vline per epoch: that re-validates the figure each time
        # (~10 ms a line), and this chart is built on every full rerun of the Train page.
        line = dict(color="#D1D5DB", width=1, dash="dot")
        fig.update_layout(shapes=[dict(type="line", xref="x", yref="paper", x0=x, x1=x, y0=0, y1=1, line=line)
                                  for x in range(steps_per_epoch, int(preview["step"].max()) + 1, steps_per_epoch)])
    return spread_lone_x(fig)


def system_figure(system: pd.DataFrame, column: str, y_title: str, title: str,
                  height: int = 280) -> go.Figure:
    """One system metric (e.g. 'cpu_percent', %; 'rss_mb', MB) of the worker
    process over wall time since training start (s, T_SHORT: these charts are
    narrow), runs overlaid. A run of a few samples (a short run has one) shows
    them as markers on its line."""
    if system is None or system.empty or column not in system or system[column].isna().all():
        return empty_figure("no samples yet", height, T_SHORT, y_title, title)
    fig = go.Figure()
    for label, color, g in run_groups(downsample(system, keep=None)):
        g = g.dropna(subset=[column])
        fig.add_trace(go.Scatter(x=g["t"], y=g[column], name=label, mode=line_mode(len(g)),
                                 line=dict(color=color, width=2), marker=dict(color=color, size=7),
                                 hovertemplate="%{y:,.1f} at %{x:.2f} s<extra>" + label + "</extra>"))
    style(fig, T_SHORT, y_title, title, height, legend=False)
    fig.update_yaxes(rangemode="tozero")
    return spread_lone_x(fig)


# --- LR range test (engine.lr_find.range_test) -------------------------------------------------

def lr_find_figure(sweep: pd.DataFrame, suggestion: Optional[float] = None,
                   min_loss_lr: Optional[float] = None, title: Optional[str] = None,
                   height: int = 300) -> go.Figure:
    """Training loss against the learning rate of an LR range test (log x):
    raw per-batch loss (thin, faint) and its smoothed curve (thick), the
    suggested LR marked with a star and a dotted line, the LR of the minimum
    smoothed loss with a small open circle (no legend entry: hover names it).
    Sized for the narrow sidebar.

    Args:
        sweep: one row per step: lr, loss, smoothed (NaN/None where not finite).
        suggestion: the suggested max LR (engine.lr_find.range_test.suggest()['suggested']).
    """
    x_title, y_title = "learning rate (log scale)", "loss (cross-entropy)"
    if sweep is None or sweep.empty or pd.to_numeric(sweep["smoothed"], errors="coerce").isna().all():
        return empty_figure("no sweep yet", height, x_title, y_title, title)
    df = sweep.assign(loss=pd.to_numeric(sweep["loss"], errors="coerce"),
                      smoothed=pd.to_numeric(sweep["smoothed"], errors="coerce"))
    color = PALETTE[0]
    fig = go.Figure()
    fig.add_trace(go.Scatter(x=df["lr"], y=df["loss"], name="raw", mode="lines",
                             line=dict(color="#93C5E8", width=1.2),
                             hovertemplate="loss %{y:.3f} at lr %{x:.2e}<extra>one batch</extra>"))
    fig.add_trace(go.Scatter(x=df["lr"], y=df["smoothed"], name="smoothed", mode="lines",
                             line=dict(color=color, width=3),
                             hovertemplate="smoothed %{y:.3f} at lr %{x:.2e}<extra></extra>"))
    finite = df.dropna(subset=["smoothed"])
    if min_loss_lr is not None and len(finite):
        i = int((np.log(finite["lr"]) - np.log(min_loss_lr)).abs().idxmin())
        fig.add_trace(go.Scatter(x=[finite.loc[i, "lr"]], y=[finite.loc[i, "smoothed"]], name="minimum",
                                 mode="markers", showlegend=False,
                                 marker=dict(color="white", size=10, symbol="circle",
                                             line=dict(color=color, width=2.5)),
                                 hovertemplate="minimum smoothed loss %{y:.3f} at lr %{x:.2e}"
                                               "<extra></extra>"))
    if suggestion is not None and len(finite):
        i = int((np.log(finite["lr"]) - np.log(suggestion)).abs().idxmin())
        fig.add_vline(x=float(suggestion), line=dict(color=PALETTE[1], width=1.5, dash="dot"))
        fig.add_trace(go.Scatter(x=[suggestion], y=[finite.loc[i, "smoothed"]],
                                 name="suggested", mode="markers",
                                 marker=dict(color=PALETTE[1], size=16, symbol="star",
                                             line=dict(color="white", width=1)),
                                 hovertemplate="suggested max LR %{x:.2e}<extra></extra>"))
    style(fig, x_title, y_title, title, height, legend=True)
    small = dict(size=12, color="#374151")
    fig.update_layout(margin=dict(l=48, r=10, t=(40 if title else 0) + 64, b=44, autoexpand=False),
                      font=dict(size=12),
                      legend=dict(orientation="h", font=dict(size=12), y=1.0, yanchor="bottom",
                                  x=0, xanchor="left"))
    lo, hi = float(np.log10(df["lr"].min())), float(np.log10(df["lr"].max()))
    fig.update_xaxes(type="log", exponentformat="power", dtick=2 if hi - lo > 4 else 1,
                     range=[lo - 0.1, hi + 0.1], title_font=dict(size=13), tickfont=small)
    top = float(finite["smoothed"].max()) * 1.15 if len(finite) else None
    fig.update_yaxes(tickfont=small, tickformat=".2g", title_font=dict(size=12),
                     range=[0, top] if top else None)
    if top:  # the raw loss of the last, diverging batches runs off the top: the highest is marked
        clip_marks(fig, df["lr"], df["loss"], None, top, lambda v: f"{v:.3g}", color="#93C5E8", most=1)
    return fig


# --- input pipeline: data wait vs compute (engine.data.pipeline) -------------------------

WAIT_TITLE = "time per execution (s)"
# Share of steady step time spent waiting for input above which a run is called
# input-bound (and "partly input-bound" above the lower one).
INPUT_BOUND_SHARE = 0.25
PARTLY_INPUT_BOUND_SHARE = 0.10
WAIT_ALPHA = 0.35  # data wait: the run's colour, light; compute: the run's colour, solid
# Executions longer than this many times the 95th percentile are drawn off scale
# (named in a note), so that one slow batch does not flatten the others.
WAIT_SCALE_CAP = 3.0


def data_wait_frame(execs: Optional[pd.DataFrame]) -> pd.DataFrame:
    """Steady executions (warm-up left out) whose data wait was measured, with
    'compute' = duration - data_wait (s, never below 0) and 'wait_share' added."""
    cols = ["step", "t", "duration", "data_wait", "compute", "wait_share"]
    if execs is None or execs.empty or "data_wait" not in execs.columns:
        return pd.DataFrame(columns=cols)
    df = execs.copy()
    df["data_wait"] = pd.to_numeric(df["data_wait"], errors="coerce")
    if "warmup" in df.columns:
        df = df[~df["warmup"].fillna(0).astype(bool)]
    df = df.dropna(subset=["data_wait"])
    df["compute"] = (df["duration"] - df["data_wait"]).clip(lower=0.0)
    df["wait_share"] = (df["data_wait"] / df["duration"].where(df["duration"] > 0)).fillna(0.0)
    return df


def data_wait_share(execs: Optional[pd.DataFrame]) -> Optional[float]:
    """Total data wait / total time of the steady executions (the summary's
    data_wait_share, computed from the rows so far); None when not measured."""
    df = data_wait_frame(execs)
    total = float(df["duration"].sum()) if len(df) else 0.0
    return float(df["data_wait"].sum()) / total if total > 0 else None


def data_wait_verdict(share: Optional[float]) -> Optional[tuple[str, str]]:
    """(kind, one line) for a data-wait share: kind is 'input-bound',
    'partly input-bound' or 'compute-bound'; None when there is no share."""
    if share is None or not np.isfinite(share):
        return None
    pct = f"{100 * share:.0f}%" if share >= 0.005 else "under 1%"  # never "only 0%" of a measured wait
    if share >= INPUT_BOUND_SHARE:
        return ("input-bound", f"input-bound: {pct} of step time waiting for data; try parallel map, "
                               "prefetch or cache (Input pipeline)")
    if share >= PARTLY_INPUT_BOUND_SHARE:
        return ("partly input-bound", f"partly input-bound: {pct} of step time waiting for data")
    return ("compute-bound", f"compute-bound: {'only ' if share >= 0.005 else ''}{pct} of step time waiting for data")


def data_wait_figure(execs: Optional[pd.DataFrame], title: Optional[str] = "Data wait vs compute",
                     height: int = 320) -> go.Figure:
    """Stacked bars per steady execution of one run against optimizer step:
    the seconds the step waited for its input batches (bottom, the run's colour,
    light) and the rest of the execution, compute = duration - data_wait (top,
    solid); the bar height is the execution's duration (s). A few executions
    far above the rest (WAIT_SCALE_CAP x the 95th percentile) go off scale, named
    in a note, so that the split of the others stays readable.

    Args:
        execs: executions rows of one run (step, t, duration, data_wait, warmup)
            tagged with label/color. Warm-up executions (compilation) are left
            out; NULL data_wait (multi-worker, TPU) rows too.
    """
    df = data_wait_frame(execs)
    if df.empty:
        return empty_figure("no data wait measured yet", height, STEP_TITLE, WAIT_TITLE, title)
    df = downsample(df, keep=None)
    fig = go.Figure()
    for label, color, g in run_groups(df) if "label" in df.columns else [("run", PALETTE[0], df)]:
        custom = np.stack([g["t"], 100 * g["wait_share"], g["duration"]], axis=-1)
        fig.add_trace(go.Bar(
            x=g["step"], y=g["data_wait"], name="waiting for data", legendgroup=f"{label} wait",
            marker=dict(color=tint(color, WAIT_ALPHA), line=dict(width=0)), customdata=custom,
            hovertemplate="step %{x}: waited %{y:.4f} s for data (%{customdata[1]:.0f}% of "
                          "%{customdata[2]:.4f} s) at %{customdata[0]:.2f} s<extra>" + label + "</extra>"))
        fig.add_trace(go.Bar(
            x=g["step"], y=g["compute"], name="compute", legendgroup=f"{label} compute",
            marker=dict(color=color, line=dict(width=0)), customdata=custom,
            hovertemplate="step %{x}: computed %{y:.4f} s (execution %{customdata[2]:.4f} s) at "
                          "%{customdata[0]:.2f} s<extra>" + label + "</extra>"))
    style(fig, STEP_TITLE, WAIT_TITLE, title, height)
    fig.update_layout(barmode="stack", bargap=0.0 if len(df) > 60 else 0.15)
    fig.update_yaxes(rangemode="tozero", tickformat="~g")
    top = WAIT_SCALE_CAP * float(df["duration"].quantile(0.95))
    over = df[df["duration"] > top]
    if len(df) >= 20 and len(over) and top > 0:
        fig.update_yaxes(range=[0, top])
        clip_marks(fig, over["step"], over["duration"], None, top, lambda v: f"{v:.3g} s", most=CLIP_MARKS_MOST)
        n = len(over)
        fig.add_annotation(x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="bottom",
                           showarrow=False, font=dict(size=12, color="#374151"),
                           text=f"{n} execution{'s' if n > 1 else ''} off scale (up to "
                                f"{float(over['duration'].max()):.3g} s): zoom out to see")
    return fig


def loss_scale_figure(execs: pd.DataFrame, title: str = "Loss scale and skipped updates (float16)",
                      height: int = 240) -> go.Figure:
    """The dynamic loss scale after each execution (left, log axis) and the
    optimizer updates skipped in it (right, markers) against step, for runs that
    record them (mixed_float16; see engine.training.loss_scale), runs overlaid."""
    if execs is None or execs.empty or "loss_scale" not in execs or execs["loss_scale"].isna().all():
        return empty_figure("no float16 loss scaling in these runs", height, STEP_TITLE, "loss scale", title)
    fig = go.Figure()
    scaled = execs[execs["loss_scale"].notna()]
    for label, color, g in run_groups(downsample(scaled, keep=None)):
        fig.add_trace(go.Scatter(x=g["step"], y=g["loss_scale"], name=f"{label}: loss scale",
                                 mode=line_mode(len(g)), line=dict(color=color, width=2, shape="hv"),
                                 marker=dict(color=color, size=5),
                                 hovertemplate="loss scale %{y:g} after step %{x}<extra>" + label + "</extra>"))
        skips = g[g["skipped"].fillna(0) > 0]
        fig.add_trace(go.Scatter(x=skips["step"], y=skips["skipped"], name=f"{label}: skipped", yaxis="y2",
                                 mode="markers", marker=dict(color=color, symbol="x", size=9),
                                 hovertemplate="%{y} update(s) skipped at step %{x}<extra>" + label + "</extra>"))
    style(fig, STEP_TITLE, "loss scale (log)", title, height, legend=False)
    fig.update_yaxes(type="log", exponentformat="power")
    fig.update_layout(yaxis2=dict(title=dict(text="skipped updates (per execution)", font=dict(size=13)),
                                  overlaying="y", side="right", rangemode="tozero", showgrid=False))
    return spread_lone_x(fig)
