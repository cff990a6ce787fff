"""The one style of every chart: colours, fonts, axis titles, layout defaults
and the helpers the chart modules share (run colours and labels, `tag`, `downsample`,
`style`, `empty_figure`). The chart modules are one per page: train_charts,
runs_charts, hardware_charts, presenter_charts (and mfu_charts, comparison_charts,
engine.autopilot.charts); all are pure functions from pandas DataFrames to Plotly
figures (no Streamlit, no TensorFlow), so they are testable on their own.

Conventions (units on every axis title):
- time ``t`` is wall-clock seconds since the run's training start (s);
- throughput is samples/s (all replicas together);
- ``step`` counts batches run (steps); the optimizer updates really applied
  (``updates``) are fewer when float16 loss scaling skips some, and the
  recorded learning rate is the one in effect at the updates applied.
- a line of a few points draws its points too (`line_mode`: a short run has one system
  sample), and an x axis whose values are all one number spans [0, 2v] (`spread_lone_x`).

Metric frames are "long": one row per point with a ``label`` (legend name) and
a ``color`` column per run; `tag` adds both.  A run keeps one colour in every
chart (`run_color`: its configuration's colour); baselines are always the same neutral grey.
"""
from __future__ import annotations

import re
from typing import Mapping, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.config import MODELS, user_model, words
from engine.store import from_script_run


# Colour-blind-safe (Okabe-Ito / Tol) colours that stay distinct on a projector;
# no grey or yellow (grey is the baseline's, yellow washes out on white).
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
           "#882255", "#117733", "#332288", "#AA4499")
BASELINE_COLOR = "#6B7280"
REFERENCE_COLOR = "#111827"
# Display cap per trace; the store keeps every point.
MAX_POINTS = 2000

FONT = dict(family="Inter, Segoe UI, Helvetica, Arial, sans-serif", size=15, color="#111827")
PRECISION_SHORT = words.PRECISION_SHORT  # charts name precisions in the short words
T_TITLE = "wall time since training start (s)"
T_SHORT = "wall time (s)"  # the same axis on charts a third of a 1280 px page wide
STEP_TITLE = "batches run (steps)"
# Average glyph width / font size of the chart font: estimates how long a title is
# in pixels (a little generous, so that an estimate that fits does fit).
GLYPH = 0.58
_MIN_TITLE_SIZE = 11


# --- runs: colours, labels, summaries --------------------------------------

# Settings that do not make a configuration another one: the colour stays when only these change.
_NOT_COLOUR = frozenset({"seed", "validation_seed", "epochs", "target_accuracy", "stop_at_target", "save_model"})


def config_color(cfg: Mapping) -> str:
    """A configuration's palette colour, from its settings (a hash of them, the seeds, epochs and
    target left out): the same configuration has the same colour in every comparison, chart
    and page. Ten colours: two different configurations can share one."""
    import hashlib
    import json

    key = json.dumps({k: v for k, v in sorted(cfg.items()) if k not in _NOT_COLOUR}, sort_keys=True, default=str)
    return PALETTE[int(hashlib.sha256(key.encode()).hexdigest()[:8], 16) % len(PALETTE)]


def run_color(run_id: int, role: str = "run", config: Optional[Mapping] = None) -> str:
    """The colour of a run in every chart: grey for a baseline; else its configuration's
    colour (`config_color`) when `config` is given, so that a configuration keeps one colour
    across comparisons; else a palette colour fixed by its id."""
    if role == "baseline":
        return BASELINE_COLOR
    if config:
        return config_color(config)
    return PALETTE[(int(run_id) - 1) % len(PALETTE)]


def model_name(model) -> str:
    """A model as a page shows it: a built-in's name, or a user's model file by its file name
    only ('net.py:build', 'model.keras'), never the server's absolute path, with anything but
    letters, digits, '.', '_' and '-' as '-' (untrusted text: inert in markdown, HTML and CSV)."""
    import os

    spec = user_model(model)
    if spec is None:
        return str(model)
    path, fn = spec
    name = re.sub(r"[^\w.-]", "-", os.path.basename(path), flags=re.ASCII)
    return name + (f":{re.sub(r'[^A-Za-z0-9_]', '-', fn)}" if fn else "")


def run_label(run: Mapping) -> str:
    """Short legend name, e.g. '#6 mixed bf16 · 2 dev (sim)', '#5 baseline fp32' or, for a user's
    model, '#7 baseline fp32 · net.py:build'."""
    cfg = run.get("config") or {}
    summ = run.get("summary") or {}
    plan = run.get("plan") or {}
    parts = [f"#{run['id']}" + (" baseline" if run.get("role") == "baseline" else "")]
    parts[0] += " " + words.precision(cfg.get("precision"))
    if cfg.get("model") not in (None, *MODELS):  # a user's model: which one, by its file name
        parts.append(model_name(cfg["model"]))
    devices = cfg.get("devices", 1)
    if devices > 1:
        simulated = summ.get("replicas_simulated", plan.get("replicas_simulated"))
        parts.append(f"{devices} dev" + (" (sim)" if simulated else ""))
    if cfg.get("workers", 1) > 1:
        parts.append(f"{cfg['workers']} workers")
    parts += _speed_parts(cfg)
    if cfg.get("init_from") is not None:
        parts.append(f"from #{cfg['init_from']}")
    if from_script_run(plan):  # SpeedLabCallback (engine.training.script_run)
        parts.append("script run")
    return " · ".join(parts)


def _speed_parts(cfg: Mapping) -> list:
    """Backend, steps per execution, XLA, the fused update and schedule, each only when it is not the default."""
    parts = ["JAX"] if cfg.get("backend") == "jax" else []
    if cfg.get("steps_per_execution", 1) > 1:
        parts.append(words.steps_per_execution(cfg["steps_per_execution"]))
    if cfg.get("jit_compile") and cfg.get("backend") != "jax":  # JAX: always XLA
        parts.append("XLA")
    if cfg.get("fused_optimizer"):
        parts.append("fused update")
    if cfg.get("schedule", "constant") != "constant":
        parts.append(cfg["schedule"])
    # The record-setting techniques (engine.training.techniques), each only when on.
    parts += words.techniques(cfg)
    return parts


def config_summary(cfg: Mapping, summary: Optional[Mapping] = None, plan: Optional[Mapping] = None) -> str:
    """One line describing a config for tables; speed options appear only when
    they are on, e.g. 'digits · cnn · mixed bf16 · 2 devices (simulated) · batch 128 · 3 epochs'.
    A script run (SpeedLabCallback in a user's script: `plan` source 'callback') names its script and its name, not
    the placeholder data set and model its stored config holds (engine.training.script_run)."""
    summary = summary or {}
    if from_script_run(plan):
        cfg = {**cfg, "dataset": f"script run {plan.get('script') or 'python'}",
               "model": str(plan.get("name") or "its own model"), "image_size": None}
    devices = cfg.get("devices", 1)
    dev = words.devices(devices, devices > 1 and bool(summary.get("replicas_simulated")))
    data = str(cfg.get("dataset", "?"))
    if cfg.get("label_subset"):
        data += " labels " + ",".join(str(v) for v in cfg["label_subset"])
    model = model_name(cfg.get("model", "?"))
    if cfg.get("image_size"):
        model += f" {cfg['image_size']}px"
    if cfg.get("pretrained"):
        model += " (ImageNet)"
    if cfg.get("init_from") is not None:
        model += f" from run #{cfg['init_from']}"
    parts = [data, model, words.precision(cfg.get("precision")), dev]
    if cfg.get("workers", 1) > 1:
        parts.append(f"{cfg['workers']} workers")
    parts.append(f"batch {cfg.get('batch_size')}")
    parts += _speed_parts(cfg)
    # The regularisers a preset turns on change time to accuracy: a line that omits them hides why.
    if cfg.get("label_smoothing"):
        parts.append(f"label smoothing {cfg['label_smoothing']:g}")
    if cfg.get("mixup_alpha"):
        parts.append(f"mixup {cfg['mixup_alpha']:g}")
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


def style(fig: go.Figure, x_title: str, y_title: str, title: Optional[str] = None,
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
        font=FONT, height=height,
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
    return len(re.sub(r"<[^>]+>", "", text or "")) * GLYPH * size


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
    return style(fig, x_title, y_title, title=title, height=height, legend=False)


# A line trace of at most this many points also draws its points: one point alone is no line
# at all (a short run's one system sample, its one execution), and a few are hard to see.
FEW_POINTS = 12
# Values closer together than this share of their size are one value to an axis (LONE_SPAN).
LONE_SPAN = 0.05


def line_mode(n: int) -> str:
    """Plotly `mode` of a line trace of `n` points: 'lines+markers' up to FEW_POINTS, else 'lines'."""
    return "lines+markers" if n <= FEW_POINTS else "lines"


def lone_range(values, floor: Optional[float] = 0.0) -> Optional[list]:
    """An axis range for `values` that are all (nearly: within LONE_SPAN of their size) one
    number v: [v - |v|, v + |v|] ([v - 1, v + 1] for 0), not below `floor` (None: none).
    Plotly zooms such an axis to -0.5..1 or to a sliver (0.248 to 0.254 s for two runs' one
    sample each) whose tick labels overlap. None when the values spread, or there are none
    (Plotly's own range then)."""
    v = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").astype(float)
    v = v[np.isfinite(v)]
    if v.empty:
        return None
    lo, hi = float(v.min()), float(v.max())
    if hi - lo > LONE_SPAN * max(abs(lo), abs(hi)):
        return None
    mid = (lo + hi) / 2
    span = abs(mid) or 1.0
    return [mid - span if floor is None else max(floor, mid - span), mid + span]


def spread_lone_x(fig: go.Figure, floor: Optional[float] = 0.0) -> go.Figure:
    """Give `fig`'s x axis `lone_range` of all its traces' x values (when they are one value)."""
    r = lone_range((x for t in fig.data if t.x is not None for x in t.x), floor)
    if r is not None:
        fig.update_xaxes(range=r)
    return fig


def break_at_epochs(df: pd.DataFrame) -> pd.DataFrame:
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


def run_groups(df: pd.DataFrame):
    """(label, color, rows) per run, in first-appearance order."""
    if df is None or df.empty:
        return []
    return [(label, g["color"].iloc[0], g) for label, g in df.groupby("label", sort=False)]


MEDIAN_NAME = "median"  # annotation name of the median labels (presenter() lays them out again)


def median_labels(fig: go.Figure, labels: list, top: float, gap_px: float = 17, size: float = 13) -> None:
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


CLIPPED_NAME = "beyond the axis"  # the trace of clip_marks: a point drawn at the edge, its value as text
# The narrowest plot (px) that draws clip marks (a run's data-wait chart, two runs side by side at
# 1280 px; presenter mode's pair chart): labels closer than their widths there would overlap.
CLIP_PLOT_PX = 300
CLIP_FONT = 13


def _label_rows(fig: go.Figure, xs: list, texts: list, top: list) -> list[int]:
    """The text row (0: next to its marker, 1: a line further into the plot, ...) of each new
    clip-mark label, so that no two labels at one edge overlap in a plot CLIP_PLOT_PX wide: the
    marks already on `fig` (an earlier clip_marks call: a pair chart marks its means, then its
    pairs) keep theirs. Label widths are `text_px` estimates."""
    axis = fig.layout.xaxis
    log = axis.type == "log"

    def pos(x):
        return float(np.log10(x)) if log else float(x)

    rng = axis.range
    if rng is not None:
        lo, hi = float(rng[0]), float(rng[1])  # a log axis's range is in log10 already
    else:
        vals = [pos(x) for t in fig.data if t.x is not None for x in t.x
                if isinstance(x, (int, float, np.number)) and np.isfinite(x) and (x > 0 or not log)]
        vals += [pos(x) for x in xs]
        lo, hi = min(vals), max(vals)
    per_px = ((hi - lo) or 1.0) / CLIP_PLOT_PX
    placed = []  # (edge is top, position, half width in x units, row)
    for t in fig.data:
        if t.name == CLIPPED_NAME and t.customdata is not None:
            for x, label, (up, row) in zip(t.x, t.customdata, t.meta or []):
                placed.append((up, pos(x), text_px(label, CLIP_FONT) / 2 * per_px, row))
    rows = []
    for x, label, up in zip(xs, texts, top):
        p, half = pos(x), text_px(label, CLIP_FONT) / 2 * per_px
        taken = {row for u, q, h, row in placed if u == up and abs(q - p) < h + half + 4 * per_px}
        row = next(r for r in range(len(placed) + 1) if r not in taken)
        placed.append((up, p, half, row))
        rows.append(row)
    return rows


def clip_marks(fig: go.Figure, xs, values, lo: Optional[float], hi: Optional[float], fmt,
               color: str = REFERENCE_COLOR, most: Optional[int] = None) -> int:
    """Mark every value outside the y axis range [`lo`, `hi`] (None: open) at the edge it
    is beyond: a triangle pointing out of the plot (up at the top, down at the bottom) with
    the true value as text (`fmt(value)`, e.g. "0.08×") inside the plot beside it, so that a
    reader who never hovers sees it. Labels that would overlap (two off-scale executions a
    step apart read "00.0888s s") go a line further into the plot (`_label_rows`). `most`:
    mark only that many, the farthest out (a chart whose count is said elsewhere). Adds
    nothing when no value is out; returns how many it marked. The caller still draws (or
    clips) the data itself. The trace's customdata holds each label, its meta (top, row)."""
    out = [(x, float(v)) for x, v in zip(xs, values)
           if v is not None and np.isfinite(v) and ((hi is not None and v > hi) or (lo is not None and v < lo))]
    if most is not None:
        # How far out, on the scale of the edge it passed (a ratio: 9x over 8x is 1.125).
        out = sorted(out, key=lambda p: -(p[1] / hi if hi is not None and p[1] > hi else
                                          (lo / p[1] if p[1] > 0 else np.inf)))[:most]
    if not out:
        return 0
    top = [hi is not None and v > hi for _, v in out]
    labels = [fmt(v) for _, v in out]
    rows = _label_rows(fig, [x for x, _ in out], labels, top)
    # A row further in is an empty line on the marker's side: below it at the top, above it at the bottom.
    text = ["<br>" * r + s if t else s + "<br>" * r for s, t, r in zip(labels, top, rows)]
    fig.add_trace(go.Scatter(
        x=[x for x, _ in out], y=[hi if t else lo for (_, _), t in zip(out, top)], name=CLIPPED_NAME,
        mode="markers+text", cliponaxis=False, showlegend=False,
        marker=dict(symbol=["triangle-up" if t else "triangle-down" for t in top], size=13, color=color,
                    line=dict(width=1, color="white")),
        text=text, textposition=["bottom center" if t else "top center" for t in top],
        textfont=dict(size=CLIP_FONT, color=color), customdata=labels, meta=[[t, r] for t, r in zip(top, rows)],
        hovertemplate="%{customdata}: beyond the axis, drawn at its edge<extra></extra>"))
    return len(out)


def tint(color: str, alpha: float) -> str:
    """'#RRGGBB' as 'rgba(r, g, b, alpha)' (a light version of a run's colour
    that legends show too, unlike marker opacity)."""
    h = color.lstrip("#")
    if len(h) != 6:
        return color
    r, g, b = (int(h[i:i + 2], 16) for i in (0, 2, 4))
    return f"rgba({r}, {g}, {b}, {alpha})"
