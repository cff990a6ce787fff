"""Presenter mode (the Talk page): any chart of the chart modules restyled for the
back of a room. Styled on top of engine.charts.style."""
from __future__ import annotations

from typing import Optional

import plotly.graph_objects as go

from engine.charts.style import MEDIAN_NAME, fit_size, median_labels, text_px


# --- presenter mode ----------------------------------------------------------------

PRESENTER_FONT = 20     # px: axis titles and text in presenter mode
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
    """A chart of the chart modules restyled for the back of a room (presenter mode):
    black type about 1.35x larger (PRESENTER_FONT, TALK_TICK, TALK_TITLE), lines 1.6x
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
    fig.update_layout(height=height, font=dict(size=PRESENTER_FONT, color=black), hoverlabel_font_size=TALK_TICK,
                      margin=dict(l=100, r=28, t=top, b=bottom),
                      legend=dict(orientation="h", x=0, xanchor="left", y=1.0, yanchor="bottom",
                                  font=dict(size=TALK_TICK, color=black)))
    if title:
        fig.update_layout(title_font=dict(size=TALK_TITLE, color=black))
    axis = dict(title_font=dict(size=PRESENTER_FONT, color=black), tickfont=dict(size=TALK_TICK, color=black),
                linecolor=black, linewidth=1.5, gridcolor="#C7CCD4")
    fig.update_xaxes(**axis)
    fig.update_yaxes(**axis)
    fig.update_yaxes(title_font_size=fit_size(fig.layout.yaxis.title.text, plot_h, PRESENTER_FONT))
    for t in fig.data:
        if getattr(t, "line", None) is not None and t.line.width:
            t.line.width = t.line.width * 1.6
        if getattr(t, "marker", None) is not None and isinstance(t.marker.size, (int, float)):
            t.marker.size = t.marker.size * 1.4
    fig.layout.annotations = [a.update(font_size=TALK_TICK) for a in fig.layout.annotations
                              if a.name != MEDIAN_NAME]
    if medians and fig.layout.yaxis.range:
        median_labels(fig, [m[:2] for m in medians], fig.layout.yaxis.range[1], gap_px=24, size=TALK_TICK)
    return fig
