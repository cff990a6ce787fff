"""Charts of the autopilot (engine.autopilot.search): pure functions from its
state's lists to Plotly figures, no Streamlit, no TensorFlow.

Times are seconds from the start of a run's training to the first validation at
or above the target (time to target); a trial stopped before it got there is
drawn at the training seconds it used, an open marker: its time would have been
longer.
"""
from __future__ import annotations

from typing import Optional

import pandas as pd
import plotly.graph_objects as go

from engine.charts.style import BASELINE_COLOR, PALETTE, empty_figure, style
from engine.report.headline import ratio_text

# One marker per way a trial ended (the state's 'kind').
# Stopped trials have no time to target: they are drawn at the training time they used.
TRIALS_Y = "time to target or to stop (s)"
KINDS = {
    "reached": ("reached the target", "circle", PALETTE[0]),
    "pruned": ("pruned: passed the best time", "x-thin-open", PALETTE[1]),
    "share": ("over its share of the budget", "triangle-up-open", PALETTE[4]),
    "budget": ("budget ran out", "square-open", BASELINE_COLOR),
    "not_reached": ("not reached in its epochs", "diamond-open", PALETTE[3]),
    "failed": ("failed", "x", "#B91C1C"),
    "stopped": ("stopped", "square-open", BASELINE_COLOR),
}
BEST_COLOR = PALETTE[2]
NEUTRAL_COLOR = "#9CA3AF"  # a factor whose interval holds 1: no direction to colour
TICK_CHARS = 36  # an ablation name and its value longer than this take two lines
# The re-runs' chart: its plot keeps this height (px) whatever its legend takes above it.
CONFIRM_PLOT_PX = 200
LEGEND_ROW_PX = 24  # one row of a horizontal legend
LEGEND_PER_ROW = 3  # names of a configuration per legend row at the page's half width


def trials_frame(trials: list[dict]) -> pd.DataFrame:
    """One row per trial: 'trial', 'y' (time to target, else training s used, at least the best
    time so far before it: a trial stopped early is no faster than the best; None for a trial
    stopped before it trained, which would read as the fastest at 0 s),
    'kind', 'label', 'reason', 'run_id', 'best' (best time so far after it, s)."""
    rows, best = [], None
    for t in trials:
        y = t["time_to_target_sec"] if t.get("time_to_target_sec") is not None else t.get("elapsed_sec") or None
        if t.get("time_to_target_sec") is None and y is not None and best is not None:
            y = max(y, best)  # it never got there: never drawn below the best line, as if faster
        rows.append({"trial": t["trial"], "y": y, "kind": t["kind"], "label": t.get("label", ""),
                     "reason": t.get("reason", ""), "run_id": t.get("run_id"), "best": t.get("best_so_far_sec")})
        best = t.get("best_so_far_sec") if t.get("best_so_far_sec") is not None else best
    return pd.DataFrame(rows, columns=["trial", "y", "kind", "label", "reason", "run_id", "best"])


def trials_figure(trials: list[dict], target: float, title: Optional[str] = None,
                  height: int = 380) -> go.Figure:
    """Time to target against trial number, one marker style per way a trial
    ended, and the best time so far as a step line. A trial that ended before the
    target is drawn at the training time it used (its axis title says so)."""
    title = title or f"Trials: time to {target:g} val accuracy"
    df = trials_frame(trials)
    if df.empty:
        return empty_figure("waiting for the first trial to end ...", height, "trial", TRIALS_Y, title)
    fig = go.Figure()
    for kind, (name, symbol, color) in KINDS.items():
        g = df[df["kind"] == kind]
        if g.empty:
            continue
        fig.add_trace(go.Scatter(
            x=g["trial"], y=g["y"], mode="markers", name=name,
            marker=dict(symbol=symbol, size=14 if kind == "reached" else 13, color=color,
                        line=dict(width=2.5, color=color)),
            customdata=g[["run_id", "label", "reason"]].values,
            hovertemplate="trial %{x} (run #%{customdata[0]})<br>%{customdata[1]}<br>%{customdata[2]}"
                          "<extra></extra>"))
    best = df.dropna(subset=["best"])
    if not best.empty:
        fig.add_trace(go.Scatter(
            x=best["trial"], y=best["best"], mode="lines", name="best so far", line_shape="hv",
            line=dict(color=BEST_COLOR, width=3),
            hovertemplate="best so far after trial %{x}: %{y:.2f} s<extra></extra>"))
    style(fig, "trial", TRIALS_Y, title, height)
    fig.update_xaxes(dtick=1, rangemode="tozero")
    fig.update_yaxes(rangemode="tozero")
    return fig


def race_figure(curves: pd.DataFrame, target: float, best: Optional[float] = None,
                limit: Optional[float] = None, title: Optional[str] = None, height: int = 340) -> go.Figure:
    """Validation accuracy against training seconds of the current run (and, for
    comparison, the best trial so far), with the target as a horizontal line and
    the best time (where the current trial is pruned) as a vertical one.

    `curves`: epochs rows ('t', 'val_accuracy') tagged with 'label' and 'color'.
    """
    title = title or "Current run: validation accuracy vs training time"
    if curves is None or curves.empty:
        return empty_figure("waiting for the first validation ...", height, "training time (s)",
                            "val accuracy", title)
    fig = go.Figure()
    for label in dict.fromkeys(curves["label"]):
        g = curves[curves["label"] == label]
        fig.add_trace(go.Scatter(x=g["t"], y=g["val_accuracy"], name=label, mode="lines+markers",
                                 line=dict(color=g["color"].iloc[0], width=3), marker=dict(size=9),
                                 hovertemplate="%{y:.4f} at %{x:.2f} s<extra>" + label + "</extra>"))
    fig.add_hline(y=target, line=dict(color="#111827", dash="dash", width=1.5),
                  annotation_text=f"target {target:g}", annotation_position="bottom left")
    if best is not None:
        fig.add_vline(x=best, line=dict(color=BEST_COLOR, dash="dot", width=2),
                      annotation_text=f"best {best:.2f} s", annotation_position="top left")
    if limit is not None and (best is None or limit < best):
        fig.add_vline(x=limit, line=dict(color=PALETTE[4], dash="dot", width=2),
                      annotation_text="share of budget", annotation_position="top left")
    style(fig, "training time (s)", "val accuracy", title, height)
    fig.update_xaxes(rangemode="tozero")  # from 0: the warm-up before the first validation shows
    return fig


def ablation_figure(ablation: list[dict], title: Optional[str] = "What each technique bought",
                    height: Optional[int] = None) -> go.Figure:
    """Horizontal bars, one per technique of the winner: its time to target
    without that technique / the winner's (x; 1 = no effect, 1.4 = 1.4x slower
    without it), the time-to-accuracy speedup of its stored comparison
    (engine.autopilot.confirm.ablation_entries). A technique whose ablated runs never reached
    the target is labelled so. An entry's 'ci95' is drawn as an error bar: a bar whose
    interval holds 1 is within noise."""
    rows = [a for a in ablation if a.get("factor") or a.get("note")]
    height = height or 140 + 46 * max(len(rows), 1)
    if not rows:
        return empty_figure("no ablation yet", height, "slower without it (x)", "", title)
    rows = sorted(rows, key=lambda a: a.get("factor") or 0.0)
    names = [a["label"] for a in rows]
    factors = [a.get("factor") or 0.0 for a in rows]
    cis = [a.get("ci95") if a.get("factor") else None for a in rows]
    noise = [bool(ci and ci[0] <= 1 <= ci[1]) for ci in cis]  # within noise: an interval that holds 1
    # No interval yet (under 3 pairs, while the re-run rounds go on): a sample, no direction to colour.
    early = [bool(a.get("factor")) and not ci for a, ci in zip(rows, cis)]
    text = [(ratio_text(a['factor']) + (" (within noise)" if quiet else " (no interval yet)" if soon else ""))
            if a.get("factor") else (a.get("note") or "not run") for a, quiet, soon in zip(rows, noise, early)]
    error = (dict(type="data", symmetric=False, color="#374151", thickness=1.5,
                  array=[ci[1] - f if ci else 0.0 for ci, f in zip(cis, factors)],
                  arrayminus=[f - ci[0] if ci else 0.0 for ci, f in zip(cis, factors)])
             if any(cis) else None)
    # Each factor is written beside its name on the axis, not on the bar: on the bar, the error
    # bar and the 1x line ran through it. An interval holding 1 says no direction: neutral grey.
    fig = go.Figure(go.Bar(
        x=factors, y=names, orientation="h", customdata=text, textposition="none",
        cliponaxis=False, error_x=error,
        marker=dict(color=[NEUTRAL_COLOR if quiet or soon else PALETTE[0] if f >= 1 else PALETTE[1]
                           for f, quiet, soon in zip(factors, noise, early)]),
        hovertemplate="%{y}: %{customdata}<extra>without it / winner</extra>", showlegend=False))
    fig.add_vline(x=1.0, line=dict(color="#111827", width=1.5, dash="dash"))
    style(fig, "time to target without it / the winner's (x)", "", title, height, legend=False)
    fig.update_xaxes(rangemode="tozero")
    # A long name and its value on two lines: on one, they squeezed the plot to a third of the chart.
    fig.update_yaxes(tickvals=names, ticktext=[f"{n}{'<br>' if len(n) + len(t) > TICK_CHARS else ' · '}{t}"
                                               for n, t in zip(names, text)])
    return fig


def confirm_figure(runs: list[dict], target: float, title: Optional[str] = None,
                   height: int = 300) -> go.Figure:
    """Each re-run's time to target by configuration, rounds connected, so the
    alternation and its spread are visible."""
    title = title or f"Re-runs: time to {target:g} (alternating)"
    done = [r for r in runs if r.get("time_to_target_sec") is not None]
    if not done:
        return empty_figure("waiting for the re-runs ...", height, "round", "time to target (s)", title)
    fig = go.Figure()
    colors = {"baseline": BASELINE_COLOR, "winner": PALETTE[0]}
    names = list(dict.fromkeys(r["name"] for r in done))
    # A 7-name legend squeezed the plot to ~70 px: the figure grows with the legend's rows instead.
    height = max(height, 76 + CONFIRM_PLOT_PX + LEGEND_ROW_PX * -(-len(names) // LEGEND_PER_ROW))  # 76: margins
    for i, name in enumerate(names):
        g = [r for r in done if r["name"] == name]
        fig.add_trace(go.Scatter(x=[r["round"] for r in g], y=[r["time_to_target_sec"] for r in g],
                                 mode="lines+markers", name=name,
                                 line=dict(color=colors.get(name, PALETTE[(i + 2) % len(PALETTE)]), width=2.5),
                                 marker=dict(size=11),
                                 hovertemplate="round %{x}: %{y:.2f} s<extra>" + name + "</extra>"))
    style(fig, "round", "time to target (s)", title, height)
    fig.update_xaxes(dtick=1)
    fig.update_yaxes(rangemode="tozero")
    return fig
