"""Charts of the Hardware page: the quick benchmark's speedup per option
combination (engine.bench.quick). Pure functions to Plotly figures, styled by
engine.charts.style."""
from __future__ import annotations

from typing import Mapping, Optional

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from engine.config import words
from engine.report.headline import PAGE_SIGN, ratio_text
from engine.charts.style import (
    BASELINE_COLOR, PALETTE, PRECISION_SHORT, REFERENCE_COLOR, empty_figure, style,
)


BENCH_PRECISION_COLORS = {"float32": PALETTE[0], "mixed_bfloat16": PALETTE[1],
                          "mixed_float16": PALETTE[2]}
BEST_COLOR = REFERENCE_COLOR


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
            text=[ratio_text(v, PAGE_SIGN) for v in g["speedup"]], textposition="inside", insidetextanchor="start",
            textangle=0, textfont=dict(size=13, color="white"), cliponaxis=False,
            customdata=np.stack([g["speedup_min"], g["speedup_max"], g["samples_per_sec"].fillna(0),
                                 g["repeats"]], axis=-1),
            hovertemplate=name + " · %{x}<br>speedup %{y:.2f}× (spread %{customdata[0]:.2f}–"
                          "%{customdata[1]:.2f}× over %{customdata[3]:.0f} repeats)<br>"
                          "%{customdata[2]:,.0f} samples/s<extra></extra>"))

    for (prec, dev), g in df.groupby(["precision", "devices"], sort=False):
        sim = bool(g["simulated"].fillna(False).astype(bool).any())
        short = PRECISION_SHORT.get(prec, prec)
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
    fig.add_trace(go.Bar(x=[None], y=[None], name=f"best: {words.bench_cell(b)} ({ratio_text(b['speedup'], PAGE_SIGN)})",
                         marker=dict(color="white", line=dict(color=BEST_COLOR, width=3)),
                         offsetgroup=f"{b['precision']}|{b['devices']}", hoverinfo="skip"))
    fig.add_hline(y=1.0, line=dict(color=BASELINE_COLOR, width=1.5, dash="dash"))
    style(fig, x_title, y_title, title, height)
    top = float((df["speedup"] + df["err_plus"]).max())
    fig.update_layout(barmode="group", bargap=0.22, bargroupgap=0.06,
                      uniformtext=dict(minsize=10, mode="hide"))
    fig.update_xaxes(categoryorder="array", categoryarray=order)
    fig.update_yaxes(range=[0, max(1.3, top * 1.12)])
    return fig
