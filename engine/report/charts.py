"""Chart builders for the dashboard: pure functions from pandas DataFrames to
Plotly figures (no Streamlit, no TensorFlow), so they are testable on their own.

Conventions (units on every axis title):
- time ``t`` is wall-clock seconds since the run's training start (s);
- throughput is samples/s (all replicas together);
- ``step`` counts batches run (steps); the optimizer updates really applied
  (``updates``) are fewer when float16 loss scaling skips some, and the
  recorded learning rate is the one in effect at the updates applied.

Metric frames are "long": one row per point with a ``label`` (legend name) and
a ``color`` column per run; `tag` adds both.  A run keeps one colour in every
chart (`run_color`); baselines are always the same neutral grey.
"""
from __future__ import annotations

import re
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
# Runs up to which the scaling chart gives each run a legend entry.
SCALING_LEGEND_MAX = 6

_FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=15, color="#111827")
_PRECISION_SHORT = {"float32": "fp32", "mixed_float16": "mixed fp16", "mixed_bfloat16": "mixed bf16"}
T_TITLE = "wall time since training start (s)"
T_SHORT = "wall time (s)"  # the same axis on charts a third of a 1280 px page wide
STEP_TITLE = "batches run (steps)"
# Average glyph width / font size of the chart font: estimates how long a title is
# in pixels (a little generous, so that an estimate that fits does fit).
_GLYPH = 0.58
_MIN_TITLE_SIZE = 11


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
    parts += _speed_parts(cfg)
    if cfg.get("init_from") is not None:
        parts.append(f"from #{cfg['init_from']}")
    return " · ".join(parts)


def _speed_parts(cfg: Mapping) -> list:
    """Backend, steps per execution, XLA, the fused update and schedule, each only when it is not the default."""
    parts = ["JAX"] if cfg.get("backend") == "jax" else []
    if cfg.get("steps_per_execution", 1) > 1:
        parts.append(f"spe {cfg['steps_per_execution']}")
    if cfg.get("jit_compile") and cfg.get("backend") != "jax":  # JAX: always XLA
        parts.append("XLA")
    if cfg.get("fused_optimizer"):
        parts.append("fused update")
    if cfg.get("schedule", "constant") != "constant":
        parts.append(cfg["schedule"])
    return parts


def config_summary(cfg: Mapping, summary: Optional[Mapping] = None) -> str:
    """One line describing a config for tables; speed options appear only when
    they are on, e.g. 'digits · cnn · mixed bf16 · 2 devices (simulated) · batch 128 · 3 epochs'."""
    summary = summary or {}
    devices = cfg.get("devices", 1)
    dev = f"{devices} device" + ("s" if devices != 1 else "")
    if devices > 1 and summary.get("replicas_simulated"):
        dev += " (simulated)"
    data = str(cfg.get("dataset", "?"))
    if cfg.get("label_subset"):
        data += " labels " + ",".join(str(v) for v in cfg["label_subset"])
    model = str(cfg.get("model", "?"))
    if cfg.get("image_size"):
        model += f" {cfg['image_size']}px"
    if cfg.get("pretrained"):
        model += " (ImageNet)"
    if cfg.get("init_from") is not None:
        model += f" from run #{cfg['init_from']}"
    parts = [data, model, _PRECISION_SHORT.get(cfg.get("precision"), str(cfg.get("precision"))), dev]
    if cfg.get("workers", 1) > 1:
        parts.append(f"{cfg['workers']} workers")
    parts.append(f"batch {cfg.get('batch_size')}")
    parts += _speed_parts(cfg)
    # Input-pipeline options that differ from the defaults (cache off, parallel map and prefetch on).
    if cfg.get("data_cache"):
        parts.append("cache")
    if cfg.get("data_parallel_map") is False:
        parts.append("serial map")
    if cfg.get("data_prefetch") is False:
        parts.append("no prefetch")
    parts.append(f"{cfg.get('epochs')} epoch{'' if cfg.get('epochs') == 1 else 's'}")
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
    executions, which must stay visible). Display only: the store keeps all.
    Rows come out grouped by `by` (first appearance), in index order within a group."""
    if df.empty:
        return df
    labels = df[by] if by in df.columns else None
    # Already small and in that order (a chart thinning what the page thinned): as it is.
    if df.index.is_monotonic_increasing and (
            labels is None and len(df) <= max_points
            or labels is not None and labels.value_counts().max() <= max_points
            and (labels != labels.shift()).sum() == labels.nunique(dropna=False)):
        return df
    groups = [df] if labels is None else [g for _, g in df.groupby(by, sort=False)]
    parts = []
    for g in groups:
        flagged = (g[keep].fillna(0).astype(bool).to_numpy() if keep and keep in g.columns
                   else np.zeros(len(g), dtype=bool))
        rest = np.flatnonzero(~flagged)
        if len(rest) > max_points:
            rest = rest[np.unique(np.linspace(0, len(rest) - 1, max_points).round().astype(int))]
        rows = g.iloc[np.union1d(np.flatnonzero(flagged), rest)]
        parts.append(rows if rows.index.is_monotonic_increasing else rows.sort_index())
    return pd.concat(parts)


# --- layout helpers ----------------------------------------------------------

# plotly_white's layout as far as 2-D cartesian charts use it: the polar, ternary,
# 3-D, geo and map settings and the colour scales (nothing here draws them) are left
# out. Validating them cost ~6 ms per figure, most of a live refresh.
_NOT_CARTESIAN = ("polar", "ternary", "scene", "geo", "mapbox", "map", "coloraxis", "colorscale")
_TEMPLATE = None


def _template() -> go.layout.Template:
    """plotly_white as these charts draw it: its cartesian layout and its defaults
    for the only trace types drawn here (scatter, bar); built once."""
    global _TEMPLATE
    if _TEMPLATE is None:
        import plotly.io as pio

        white = pio.templates["plotly_white"]
        layout = {k: v for k, v in white.layout.to_plotly_json().items() if k not in _NOT_CARTESIAN}
        _TEMPLATE = go.layout.Template(layout=layout, data={"scatter": white.data.scatter,
                                                            "bar": white.data.bar})
    return _TEMPLATE


_AXIS = dict(showline=True, linecolor="#9CA3AF", gridcolor="#E5E7EB", zeroline=False,
             tickfont=dict(size=14, color="#374151"))
_AXIS_KEY = re.compile(r"^([xy])axis\d*$")


def _merge(into: dict, update: Mapping) -> dict:
    """`into` updated in place by `update`, nested dicts merged (as update_layout does)."""
    for k, v in update.items():
        if isinstance(v, Mapping) and isinstance(into.get(k), dict):
            _merge(into[k], v)
        else:
            into[k] = v
    return into


def _style(fig: go.Figure, x_title: str, y_title: str, title: Optional[str] = None,
           height: int = 360, legend: bool = True) -> go.Figure:
    """Shared look: white template, large fonts for projectors, units on axes,
    legend under the x-axis title (never over the data or the title);
    `uirevision` keeps the user's zoom while live data refreshes. Every x and
    y axis the figure has so far gets the axis style and title.

    The layout is built as one dict and set once: Plotly validates every
    update_layout/update_xaxes call through its relayout machinery (~25 ms per
    figure here), and a live page styles about ten figures a second."""
    top = 56 if title else 20
    bottom = 118 if legend else 60
    plot_h = max(height - top - bottom, 80)
    layout = {k: v for k, v in fig.layout.to_plotly_json().items() if k != "template"}
    # The y title is drawn along the plot's height: longer, it would run into the
    # chart's title or off the chart. Smaller type first; short titles do the rest.
    axes = {"x": dict(_AXIS, title=dict(text=x_title, standoff=8, font=dict(size=15, color="#111827"))),
            "y": dict(_AXIS, title=dict(text=y_title, font=dict(size=fit_size(y_title, plot_h, 15),
                                                                color="#111827")))}
    for key in {"xaxis", "yaxis", *(k for k in layout if _AXIS_KEY.match(k))}:
        _merge(layout.setdefault(key, {}), axes[key[0]])
    _merge(layout, dict(
        font=_FONT, height=height,
        margin=dict(l=72, r=24, t=top, b=bottom),
        showlegend=legend, uirevision="keep",
        legend=dict(orientation="h", yanchor="top", y=-62 / plot_h, xanchor="left", x=0,
                    font=dict(size=13)),
        hoverlabel=dict(font=dict(size=14)),
    ))
    # No title: none at all (as update_layout(title=None) did), whatever was set before.
    layout["title"] = dict(text=title, font=dict(size=18), x=0, xanchor="left", y=1, yanchor="top",
                           pad=dict(t=12, l=4)) if title else {}
    layout["template"] = _template()
    fig.layout = layout
    return fig


def text_px(text: Optional[str], size: float) -> float:
    """Estimated width in pixels of `text` (HTML tags left out) at font `size` (px)."""
    return len(re.sub(r"<[^>]+>", "", text or "")) * _GLYPH * size


def fit_size(text: Optional[str], room_px: float, size: float = 15) -> float:
    """The largest font size <= `size` (down to 11) at which `text` fits in `room_px`."""
    width = text_px(text, size)
    if width <= room_px or not width:
        return size
    return max(_MIN_TITLE_SIZE, int(size * room_px / width))


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
            labels.append((m, color))
    _style(fig, T_TITLE, "throughput (samples/s)", title, height)
    highest = [float(v) for v in (execs["samples_per_sec"].max(), *(m for m, _ in labels)) if np.isfinite(v)]
    top = 1.08 * max(highest) if highest and max(highest) > 0 else 1.0
    fig.update_yaxes(range=[0, top], tickformat=",.0f")
    _median_labels(fig, labels, top)
    return fig


MEDIAN_NAME = "median"  # annotation name of the median labels (presenter() lays them out again)


def _median_labels(fig: go.Figure, labels: list, top: float, gap_px: float = 17, size: float = 13) -> None:
    """Each run's steady median as a number in the right margin at the height of
    its dashed line (off the data points), pushed apart when two are closer
    than `gap_px`; the right margin grows to the longest number (font `size` px)."""
    if not labels:
        return
    m = fig.layout.margin
    plot_h = fig.layout.height - m.t - m.b
    texts = [f"{v:,.0f}" for v, _ in labels]
    placed, last = [], None
    for (v, color), text in sorted(zip(labels, texts), key=lambda p: p[0][0]):
        y_px = v / top * plot_h
        shown = y_px if last is None else max(y_px, last + gap_px)
        placed.append((v, color, text, shown - y_px))
        last = shown
    for v, color, text, shift in placed:
        fig.add_annotation(x=1, xref="paper", y=v, text=text, showarrow=False, xanchor="left", xshift=4,
                           yshift=shift, yanchor="middle", font=dict(color=color, size=size), name=MEDIAN_NAME,
                           hovertext=f"steady median {text} samples/s")
    fig.update_layout(margin=dict(r=max(m.r, int(text_px(max(texts, key=len), size)) + 12)))


# --- presenter mode ----------------------------------------------------------------

TALK_FONT = 20     # px: axis titles and text in presenter mode
TALK_TICK = 18     # px: tick labels and legend
TALK_TITLE = 24    # px: chart titles
_LEGEND_ROW = 30   # px per legend row at TALK_TICK
_LEGEND_SYMBOL = 52  # px of a legend entry besides its text (symbol, gaps)


def legend_rows(names: list, width_px: float, size: float = TALK_TICK) -> int:
    """Rows a horizontal legend of `names` takes in `width_px` at font `size`
    (entries packed left to right, estimated with `text_px`)."""
    rows, used = 0, None
    for name in names:
        w = text_px(name, size) + _LEGEND_SYMBOL
        if used is None or used + w > width_px:
            rows, used = rows + 1, w
        else:
            used += w
    return rows


def presenter(fig: go.Figure, height: int = 430, width_px: float = 560, x_title: Optional[str] = None,
              y_title: Optional[str] = None) -> go.Figure:
    """A chart of this module restyled for the back of a room (presenter mode):
    black type about 1.35x larger (TALK_FONT, TALK_TICK, TALK_TITLE), lines 1.6x
    and markers 1.4x thicker, one legend entry per run (legend group), above
    the plot under the title, so that the plot keeps its height. `width_px` is the width the chart is
    expected to get (the legend's rows are estimated from it), `height` in px;
    `x_title` / `y_title` replace the axis titles (shorter ones stay large).
    Returns a new figure; `fig` is unchanged."""
    fig = go.Figure(fig)
    if x_title is not None:
        fig.update_xaxes(title_text=x_title)
    if y_title is not None:
        fig.update_yaxes(title_text=y_title)
    title = fig.layout.title.text if fig.layout.title and fig.layout.title.text else None
    # One legend entry per run: where a run has several (training and validation
    # loss), its last one stands for the run, under the run's name.
    entries: dict = {}
    for t in fig.data:
        if t.name and t.showlegend is not False:
            entries.setdefault(t.legendgroup or t.name, []).append(t)
    for group, traces in entries.items():
        if len(traces) > 1:
            for t in traces[:-1]:
                t.showlegend = False
            traces[-1].name = group
    names = list(dict.fromkeys(t.name for t in fig.data if t.name and t.showlegend is not False))
    medians = [(a.y, a.font.color, a.text) for a in fig.layout.annotations if a.name == MEDIAN_NAME]
    right = max([28, *(int(text_px(m[2], TALK_TICK)) + 12 for m in medians)])
    # The legend wraps at the plot area's width: the chart's less the margins.
    rows = legend_rows(names, width_px - 100 - right) if fig.layout.showlegend is not False and names else 0
    top = (50 if title else 14) + _LEGEND_ROW * rows
    bottom = 86
    plot_h = max(height - top - bottom, 100)
    black = "#000000"
    fig.update_layout(height=height, font=dict(size=TALK_FONT, color=black), hoverlabel_font_size=TALK_TICK,
                      margin=dict(l=100, r=28, t=top, b=bottom),
                      legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom",
                                  font=dict(size=TALK_TICK, color=black)))
    if title:
        fig.update_layout(title_font=dict(size=TALK_TITLE, color=black))
    axis = dict(title_font=dict(size=TALK_FONT, color=black), tickfont=dict(size=TALK_TICK, color=black),
                linecolor=black, linewidth=1.5, gridcolor="#C7CCD4")
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    fig.update_yaxes(title_font_size=fit_size(fig.layout.yaxis.title.text, plot_h, TALK_FONT))
    for t in fig.data:
        if getattr(t, "line", None) is not None and t.line.width:
            t.line.width = t.line.width * 1.6
        if getattr(t, "marker", None) is not None and isinstance(t.marker.size, (int, float)):
            t.marker.size = t.marker.size * 1.4
    fig.layout.annotations = [a.update(font_size=TALK_TICK) for a in fig.layout.annotations
                              if a.name != MEDIAN_NAME]
    if medians and fig.layout.yaxis.range:
        _median_labels(fig, [m[:2] for m in medians], fig.layout.yaxis.range[1], gap_px=24, size=TALK_TICK)
    return fig


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
    for label, color, g in _groups(downsample(execs, keep=None) if execs is not None else None):
        kind = kinds.get(label) or ""
        name = f"{label} train ({kind})" if kind else f"{label} train"
        fig.add_trace(go.Scatter(
            x=g[x], y=g["loss"], name=name, legendgroup=label, mode="lines",
            line=dict(color=tint(color, 0.55), width=1.5, dash="dot" if kind else "solid"),
            hovertemplate=f"training loss{' (' + kind + ')' if kind else ''} %{{y:.4f}} at "
                          f"%{{x:,.2f}} {unit}<extra>{label}</extra>"))
    for label, color, g in _groups(epochs):
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
    _style(fig, x_title, "cross-entropy (val: plain)", title, height)
    fig.update_yaxes(rangemode="tozero")
    return fig


# Where the time went: one colour per part, the same on every page.
TIME_PARTS = (("setup", "setup", "#9CA3AF"), ("warmup", "warm-up", "#E69F00"),
              ("train", "training", "#0072B2"), ("data_wait", "data wait", "#56B4E9"),
              ("validation", "validation", "#009E73"), ("other", "other", "#D55E00"))


def time_figure(rows: list[tuple[str, Optional[Mapping]]], title: Optional[str] = "Where the time went",
                height: Optional[int] = None) -> go.Figure:
    """Horizontal stacked bars, one per run, of its wall time (s) split into setup,
    warm-up, training (compute), data wait, validation and other.

    Args: rows: [(run label, engine.report.compare.breakdown() or None)].
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
    _style(fig, "wall time (s)", "", title, height)
    fig.update_layout(barmode="stack", legend_traceorder="normal")
    fig.update_yaxes(autorange="reversed", showline=False)
    return fig


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
        text=[f"{v:.2f}×" for v in bars["speedup"]], cliponaxis=False,
        # A bar ending just short of 1.0: its label inside, not across the dashed baseline line.
        textposition=["inside" if SLOWER_INSIDE <= v < 1.0 else "outside" for v in bars["speedup"]],
        insidetextanchor="end",
        textfont=dict(size=16), customdata=notes,
        hovertemplate="%{y}: %{x:.3f}×<br>%{customdata}<extra></extra>"))
    fig.add_vline(x=1.0, line=dict(color=BASELINE_COLOR, width=2, dash="dash"),
                  annotation_text="baseline 1.0×", annotation_position="top",
                  annotation_font=dict(color=BASELINE_COLOR, size=13))
    _style(fig, x_title, "", title, height, legend=False)
    # Room right of the longest bar for its "1.23×" label.
    top = max(1.4, float(bars["speedup"].max()) * 1.4) if len(bars) else 1.4
    # Few ticks: the bar often sits in a narrow column (Train page).
    fig.update_xaxes(range=[0, top], nticks=4)
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
                  height: int = 280) -> go.Figure:
    """One system metric (e.g. 'cpu_percent', %; 'rss_mb', MB) of the worker
    process over wall time since training start (s, T_SHORT: these charts are
    narrow), runs overlaid."""
    if system is None or system.empty or column not in system or system[column].isna().all():
        return empty_figure("no samples yet", height, T_SHORT, y_title, title)
    fig = go.Figure()
    for label, color, g in _groups(downsample(system, keep=None)):
        fig.add_trace(go.Scatter(x=g["t"], y=g[column], name=label, mode="lines",
                                 line=dict(color=color, width=2),
                                 hovertemplate="%{y:,.1f} at %{x:.1f} s<extra>" + label + "</extra>"))
    _style(fig, T_SHORT, y_title, title, height, legend=False)
    fig.update_yaxes(rangemode="tozero")
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
        text=[f"{y:.1f}×" if x > 1 else "" for x, y in zip(ref_x, ref_y)], textposition="top left",
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
        groups = sorted(_groups(pts), key=lambda grp: grp[1] == BASELINE_COLOR)
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
    _style(fig, "replicas (devices × workers)", y_title, title, height)
    ticks = [d for d in (1, 2, 4, 8, 16, 32, 64) if d <= max_dev]
    fig.update_xaxes(tickvals=ticks, range=[0.5, max_dev + 0.5])
    fig.update_yaxes(rangemode="tozero")
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


# --- quick benchmark (engine.bench.quick) ------------------------------------------------

BENCH_PRECISION_COLORS = {"float32": PALETTE[0], "mixed_bfloat16": PALETTE[1],
                          "mixed_float16": PALETTE[2]}
BEST_COLOR = REFERENCE_COLOR


def bench_cell_name(cell: Mapping) -> str:
    """'mixed bf16 · spe 8 · XLA on · 1 device' for tables and pickers."""
    dev = f"{int(cell['devices'])} device" + ("s" if int(cell["devices"]) != 1 else "")
    if cell.get("simulated"):
        dev += " (simulated)"
    if _is_jax(cell):
        return (f"JAX · {_PRECISION_SHORT.get(cell['precision'], cell['precision'])} · spe "
                f"{int(cell['steps_per_execution'])} · {dev}")
    return (f"{_PRECISION_SHORT.get(cell['precision'], cell['precision'])} · spe "
            f"{int(cell['steps_per_execution'])} · XLA {'on' if cell['jit_compile'] else 'off'} · {dev}")


def _is_jax(cell: Mapping) -> bool:
    b = cell.get("backend")
    return isinstance(b, str) and b == "jax"


def _is_bench_baseline(row) -> bool:
    return (row["precision"] == "float32" and int(row["steps_per_execution"]) == 1
            and not bool(row["jit_compile"]) and int(row["devices"]) == 1 and not _is_jax(row))


def bench_figure(cells: pd.DataFrame, title: Optional[str] = "Speedup of each option combination",
                 height: int = 440) -> go.Figure:
    """Grouped bars of the quick benchmark: one group per (steps per execution,
    XLA), one bar colour per precision (hatched: several replicas), the median
    speedup over repeats with its min-max spread as error bars.

    The baseline bar (float32, spe 1, XLA off, 1 device) is its own grey trace
    and exactly 1.0 (a dashed line marks 1.0 across); the best bar has a thick
    black outline, named in the legend.

    Args:
        cells: one row per cell (engine.bench.quick.summarize()['cells']): precision,
            steps_per_execution, jit_compile, devices, simulated, speedup,
            speedup_min, speedup_max, samples_per_sec, repeats.
    """
    y_title = "speedup vs float32 baseline (×)"
    x_title = "steps per execution (batches per call) · XLA"
    if cells is None or cells.empty or cells["speedup"].isna().all():
        return empty_figure("no benchmark result yet: press Run quick benchmark", height,
                            x_title, y_title, title)
    df = cells.dropna(subset=["speedup"]).reset_index(drop=True)
    for col in ("speedup_min", "speedup_max"):
        df[col] = df[col].fillna(df["speedup"]) if col in df else df["speedup"]
    for col, default in (("samples_per_sec", np.nan), ("repeats", 1), ("simulated", False)):
        if col not in df:
            df[col] = default
    # JAX cells (always XLA) get groups of their own, after TensorFlow's.
    jax = [_is_jax(r) for _, r in df.iterrows()]

    def group(s, x, j):
        return f"JAX · spe {s}" if j else f"spe {s} · XLA {'on' if x else 'off'}"

    df["group"] = [group(int(s), x, j) for s, x, j in zip(df["steps_per_execution"], df["jit_compile"], jax)]
    order = [group(s, x, j) for j, s, x in
             sorted({(j, int(s), bool(x)) for s, x, j in zip(df["steps_per_execution"], df["jit_compile"], jax)})]
    df["err_plus"] = (df["speedup_max"] - df["speedup"]).clip(lower=0)
    df["err_minus"] = (df["speedup"] - df["speedup_min"]).clip(lower=0)
    df["is_baseline"] = [_is_bench_baseline(r) for _, r in df.iterrows()]
    best_i = int(df["speedup"].idxmax())
    fig = go.Figure()

    def bars(g: pd.DataFrame, name: str, slot: str, color: str, hatched: bool, legend: bool = True):
        best = [i == best_i for i in g.index]
        fig.add_trace(go.Bar(
            x=g["group"], y=g["speedup"], name=name, offsetgroup=slot, legendgroup=name,
            showlegend=legend,
            marker=dict(color=color, pattern_shape="/" if hatched else "",
                        line=dict(color=[BEST_COLOR if b else color for b in best],
                                  width=[4 if b else 0 for b in best])),
            error_y=dict(type="data", symmetric=False, array=g["err_plus"], arrayminus=g["err_minus"],
                         color="#374151", thickness=1.5, width=4),
            text=[f"{v:.2f}×" for v in g["speedup"]], textposition="inside", insidetextanchor="start",
            textangle=0, textfont=dict(size=13, color="white"), cliponaxis=False,
            customdata=np.stack([g["speedup_min"], g["speedup_max"], g["samples_per_sec"].fillna(0),
                                 g["repeats"]], axis=-1),
            hovertemplate=name + " · %{x}<br>speedup %{y:.2f}× (spread %{customdata[0]:.2f}–"
                          "%{customdata[1]:.2f}× over %{customdata[3]:.0f} repeats)<br>"
                          "%{customdata[2]:,.0f} samples/s<extra></extra>"))

    for (prec, dev), g in df.groupby(["precision", "devices"], sort=False):
        sim = bool(g["simulated"].fillna(False).astype(bool).any())
        short = _PRECISION_SHORT.get(prec, prec)
        slot = f"{prec}|{dev}"
        name = short + (f" · {int(dev)} devices" + (" (simulated)" if sim else "") if int(dev) > 1 else "")
        base = g[g["is_baseline"]]
        if len(base):  # same slot as its precision's bars, own colour and legend entry
            bars(base, "baseline (fp32, spe 1, XLA off)", slot, BASELINE_COLOR, False)
        rest = g[~g["is_baseline"]]
        if len(rest):
            bars(rest, name, slot, BENCH_PRECISION_COLORS.get(prec, PALETTE[3]), int(dev) > 1)
    b = df.loc[best_i]
    # Legend-only entry that names the outlined bar.
    fig.add_trace(go.Bar(x=[None], y=[None], name=f"best: {bench_cell_name(b)} ({b['speedup']:.2f}×)",
                         marker=dict(color="white", line=dict(color=BEST_COLOR, width=3)),
                         offsetgroup=f"{b['precision']}|{b['devices']}", hoverinfo="skip"))
    fig.add_hline(y=1.0, line=dict(color=BASELINE_COLOR, width=1.5, dash="dash"))
    _style(fig, x_title, y_title, title, height)
    top = float((df["speedup"] + df["err_plus"]).max())
    fig.update_layout(barmode="group", bargap=0.22, bargroupgap=0.06,
                      uniformtext=dict(minsize=10, mode="hide"))
    fig.update_xaxes(categoryorder="array", categoryarray=order)
    fig.update_yaxes(range=[0, max(1.3, top * 1.12)])
    return fig


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
    _style(fig, x_title, y_title, title, height, legend=True)
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


def tint(color: str, alpha: float) -> str:
    """'#RRGGBB' as 'rgba(r, g, b, alpha)' (a light version of a run's colour
    that legends show too, unlike marker opacity)."""
    h = color.lstrip("#")
    if len(h) != 6:
        return color
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha})"


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
    pct = f"{100 * share:.0f}%"
    if share >= INPUT_BOUND_SHARE:
        return ("input-bound", f"input-bound: {pct} of step time waiting for data; try parallel map, "
                               "prefetch or cache (Input pipeline)")
    if share >= PARTLY_INPUT_BOUND_SHARE:
        return ("partly input-bound", f"partly input-bound: {pct} of step time waiting for data")
    return ("compute-bound", f"compute-bound: only {pct} of step time waiting for data")


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
    for label, color, g in _groups(df) if "label" in df.columns else [("run", PALETTE[0], df)]:
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
    _style(fig, STEP_TITLE, WAIT_TITLE, title, height)
    fig.update_layout(barmode="stack", bargap=0.0 if len(df) > 60 else 0.15)
    fig.update_yaxes(rangemode="tozero", tickformat="~g")
    top = WAIT_SCALE_CAP * float(df["duration"].quantile(0.95))
    over = df[df["duration"] > top]
    if len(df) >= 20 and len(over) and top > 0:
        fig.update_yaxes(range=[0, top])
        n = len(over)
        fig.add_annotation(x=1, y=1, xref="paper", yref="paper", xanchor="right", yanchor="bottom",
                           showarrow=False, font=dict(size=12, color="#374151"),
                           text=f"{n} execution{'s' if n > 1 else ''} off scale (up to "
                                f"{float(over['duration'].max()):.3g} s): zoom out to see")
    return fig


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
    for label, color, g in _groups(curves):
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
    _style(fig, T_TITLE, ACC_TITLE, title, height)
    fig.update_xaxes(rangemode="tozero")
    fig.update_yaxes(range=[0, 1.05], tickformat=".2f")
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
    for label, color, g in _groups(downsample(scaled, keep=None)):
        fig.add_trace(go.Scatter(x=g["step"], y=g["loss_scale"], name=f"{label}: loss scale", mode="lines",
                                 line=dict(color=color, width=2, shape="hv"),
                                 hovertemplate="loss scale %{y:g} after step %{x}<extra>" + label + "</extra>"))
        skips = g[g["skipped"].fillna(0) > 0]
        fig.add_trace(go.Scatter(x=skips["step"], y=skips["skipped"], name=f"{label}: skipped", yaxis="y2",
                                 mode="markers", marker=dict(color=color, symbol="x", size=9),
                                 hovertemplate="%{y} update(s) skipped at step %{x}<extra>" + label + "</extra>"))
    _style(fig, STEP_TITLE, "loss scale (log)", title, height, legend=False)
    fig.update_yaxes(type="log", exponentformat="power")
    fig.update_layout(yaxis2=dict(title=dict(text="skipped updates (per execution)", font=dict(size=13)),
                                  overlaying="y", side="right", rangemode="tozero", showgrid=False))
    return fig
