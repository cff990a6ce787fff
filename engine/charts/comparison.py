"""The pair chart of a comparison (engine.jobs.comparison): each pair's ratio as it
arrives and the 95% interval narrowing, a pure function to a Plotly figure (no
Streamlit, no TF)."""
from __future__ import annotations

import math
from typing import Optional

import plotly.graph_objects as go

from engine.charts.style import BASELINE_COLOR, PALETTE, clip_marks, empty_figure, style
from engine.report.stats import comparison_interval, pair_ratio
from engine.report.headline import MEASURE_NAMES, PAGE_SIGN, ratio_text

NEUTRAL, PAIR_COLOR = PALETTE[0], "#111827"  # one pair's ratio is no verdict: no green or red


# The pair chart's y ticks: few, labelled in full ("0.5×", never a bare "5" under "1").
TICKS = (0.125, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
LIMITS = (0.125, 8.0)  # the y axis never spans more: a ratio or band beyond is drawn at the edge
# The interval band reaches this far (pairs) past its first and last interval: the first interval
# comes with the third pair, and a band of one interval was a polygon of no width (not drawn).
BAND_PAD = 0.3


def log_range(values: list) -> tuple[float, float]:
    """(low, high) of the pair chart's log y axis: 0.5x to 2x at least, widened to the
    finite positive `values` with a 15% margin, to a whole tick, and clipped to LIMITS."""
    vals = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    lo = min([0.5, *(v / 1.15 for v in vals)])
    hi = max([2.0, *(v * 1.15 for v in vals)])
    lo = max(LIMITS[0], 2.0 ** math.floor(math.log2(lo)))
    hi = min(LIMITS[1], 2.0 ** math.ceil(math.log2(hi)))
    return lo, hi


def _times(v: float) -> str:
    """A ratio as the chart's text: '0.08×', '9.3×', '12×'."""
    return f"{v:.2g}×" if v < 10 else f"{v:.0f}×"


def pairs_title(result: Optional[dict]) -> str:
    """The pair chart's title: 'Pairs: <headline measure> speedup'."""
    measure = (result or {}).get("measure") or "time_to_accuracy"
    return f"Pairs: {MEASURE_NAMES.get(measure, measure)} speedup"


def pairs_figure(result: Optional[dict], height: int = 300, title: Optional[str] = None) -> go.Figure:
    """Ratio of each complete pair (markers; > 1 is faster) of the headline measure,
    and after each pair the running central value with its 95% interval (band),
    against pair number (the band held flat BAND_PAD past its first and last interval, so that
    the one interval of 3 pairs shows); a dotted line at 1 (no difference). Log y axis: 2x and
    0.5x are as far from 1. Pairs without a ratio are listed in the legend.

    `result`: a stored comparison result (engine.report.comparison.evaluate), or None."""
    measure = (result or {}).get("measure") or "time_to_accuracy"
    title = title or pairs_title(result)
    done = [r for r in (result or {}).get("pair_rows") or [] if r["status"] == "complete"]
    hist = (result or {}).get("history") or []
    if not done:
        return empty_figure("waiting for the first complete pair ...", height, "pair", "speedup (×)", title)
    higher = measure != "time_to_accuracy"
    xs = list(range(1, len(done) + 1))
    ratios = [pair_ratio(r[f"baseline_{measure}"], r[measure], higher) for r in done]
    fig = go.Figure()
    # History entry k is "after the k-th counted pair": drawn at pair k, whatever number of those
    # pairs has a ratio (a seed a side missed is counted, without one).
    with_ci = [(k, h["ci95"]) for k, h in enumerate(hist, 1) if h.get("ci95")]
    if not with_ci and comparison_interval(result):  # a result stored without its history's intervals
        with_ci = [(len(hist) or len(done), comparison_interval(result))]
    if with_ci:  # each end held flat for BAND_PAD: one interval is a box
        k = [with_ci[0][0] - BAND_PAD, *(p for p, _ in with_ci), with_ci[-1][0] + BAND_PAD]
        ends = [with_ci[0][1], *(c for _, c in with_ci), with_ci[-1][1]]
        fig.add_trace(go.Scatter(x=k + k[::-1], y=[c[1] for c in ends] + [c[0] for c in ends][::-1],
                                 fill="toself", fillcolor="rgba(0,114,178,0.15)", line=dict(width=0), mode="lines",
                                 name="95% interval so far", hoverinfo="skip"))
    fig.add_trace(go.Scatter(x=[k for k, h in enumerate(hist, 1) if h.get("speedup")],
                             y=[h["speedup"] for h in hist if h.get("speedup")], mode="lines",
                             line=dict(color=NEUTRAL, width=2), name="geometric mean so far"))
    shown = [(x, y, r) for x, y, r in zip(xs, ratios, done) if y is not None]
    fig.add_trace(go.Scatter(x=[x for x, _, _ in shown], y=[y for _, y, _ in shown], mode="markers",
                             marker=dict(size=12, color=PAIR_COLOR, line=dict(width=1, color="white")),
                             name="one pair", text=[f"pair {r['pair'] + 1} ({r['order']}, seed {r['seed']}): {ratio_text(y, PAGE_SIGN)}"
                                                    for _, y, r in shown],  # the value itself: y may be clipped
                             hovertemplate="%{text}<extra></extra>"))
    missing = [x for x, y in zip(xs, ratios) if y is None]
    if missing:
        fig.add_trace(go.Scatter(x=missing, y=[1.0] * len(missing), mode="markers",
                                 marker=dict(size=12, symbol="x-thin-open", color=BASELINE_COLOR, line=dict(width=2)),
                                 name="no ratio (a side missed or failed)"))
    fig.add_hline(y=1.0, line=dict(color=BASELINE_COLOR, dash="dot", width=1))
    lo, hi = log_range([y for _, y, _ in shown] + [v for _, c in with_ci for v in c])
    for t in fig.data:  # the band and the points stay inside the axis (an open interval is clipped)
        if t.y is not None:
            t.y = [None if v is None else min(max(v, lo), hi) for v in t.y]
    # ... and a clipped pair or mean is marked at the edge with its value: the headline beside the
    # chart says 0.08x, so the chart must not show 0.125x without a word.
    means = [(k, h["speedup"]) for k, h in enumerate(hist, 1) if h.get("speedup")]
    clip_marks(fig, [k for k, _ in means], [v for _, v in means], lo, hi, _times, color=NEUTRAL)
    clip_marks(fig, [x for x, _, _ in shown], [y for _, y, _ in shown], lo, hi, _times, color=PAIR_COLOR)
    ticks = [v for v in TICKS if lo <= v <= hi]
    fig.update_yaxes(type="log", range=[math.log10(lo), math.log10(hi)], tickvals=ticks,
                     ticktext=[f"{v:g}×" for v in ticks], minor=dict(showgrid=False))
    fig.update_xaxes(dtick=1, range=[0.5, max(len(done), (result or {}).get("planned") or 0) + 0.5])
    return style(fig, "pair", "speedup (×, log)", title=title, height=height)
