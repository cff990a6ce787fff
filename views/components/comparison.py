"""The comparison block shared by the Train page, presenter mode, Replay, the Runs page and
the Autopilot page: the verdict box (the headline of interleaved pairs,
engine.report.headline.comparison_headline, with its interval and verdict, coloured by the
verdict), its details and the pair chart. UI only."""
from __future__ import annotations

import html
import time

import streamlit as st

from engine.store import comparisons as cstore
from engine.report import stats
from engine.report import headline as report_headline
from engine.report.comparison import time_text
from engine.charts.comparison import pairs_figure, pairs_title

# Green only for "faster" (the interval above 1, every seed reached, test accuracy held);
# neutral for "equivalent" and "inconclusive".
TONE_COLORS = {"good": "#15803D", "bad": "#B91C1C", "neutral": "#374151"}
PLOTLY_CONFIG = {"displaylogo": False, "displayModeBar": False}


def lookup(store, run: dict | None) -> dict | None:
    """The stored comparison `run` belongs to, or None (also for a ReplayStore, which
    has no comparisons table: the Replay page passes the comparison itself)."""
    if not run or not (run.get("group_id") or "").startswith("cmp-") or not hasattr(store, "conn"):
        return None
    comp = cstore.by_group(store, run["group_id"])
    if comp is not None and comp["status"] == "running":
        from engine.jobs import comparison

        comp = comparison.settle_if_idle(store, comp)
    return comp


def _age(t: float | None) -> str:
    """When `t` (Unix s) was, as a clock time that stays true however long the page stays
    drawn ("at 18:12:05"; a relative "30 s ago" froze where it was drawn once), with the
    date when it was not today, and how long ago that was when drawn (engine.jobs.noise.age_text)."""
    from engine.jobs.noise import age_text

    if not t:
        return "at an unknown time"
    fmt = "%H:%M:%S" if time.localtime(t)[:3] == time.localtime()[:3] else "%Y-%m-%d %H:%M"
    return f"at {time.strftime(fmt, time.localtime(t))} ({age_text(t)} when drawn)"


def verdict_box(comp: dict, size_rem: float = 1.45, key: str = "cmp_headline") -> None:
    """The comparison's verdict box: its headline as large text that wraps (a metric cut "0.73× (slower)" to "0.73× (slo…"
    at 1280 px), coloured by the verdict, with its measure and note under it: the split,
    the start-to-end ratio, the seeds reached and the test accuracy, one line each (presenter
    mode draws its own card: views.components.presenter.card). The
    noise floor is the one the result was judged with (a matching A/A comparison), if any."""
    running = comp["status"] == "running"
    h = report_headline.comparison_headline(comp.get("result"), in_progress=running)
    color = TONE_COLORS[h["tone"]] if not running else TONE_COLORS["neutral"]
    label = f"{h['measure'] or 'speedup'}" + (" · in progress: more pairs to come" if running else "")
    box = st.container(key=key, border=True)
    box.caption(label)
    # The verdict and interval large; the pairs, the baseline and "so far" under it, small.
    box.markdown(f"<div class='speedlab-headline' style='font-size:{size_rem}rem;font-weight:650;line-height:1.2;"
                 f"color:{color};overflow-wrap:anywhere'>{html.escape(h['main'])}</div>", unsafe_allow_html=True)
    if h.get("detail"):
        box.caption(h["detail"])
    for k in ("factors", "setup", "reached", "test"):  # made of, setup, seeds, test
        if h.get(k):
            box.caption(h[k])
    if h["note"]:
        box.caption(f":material/info: {h['note']}")


def details(comp: dict) -> None:
    """End-to-end and steady with their intervals, how the comparison ended, which baselines."""
    r = comp.get("result") or {}
    lines = []
    for name in ("end_to_end", "steady"):
        s = r.get(name) or {}
        if s.get("speedup") is None:
            continue
        ci = s.get("ci95")
        lines.append(f"**{report_headline.MEASURE_NAMES[name].capitalize()}** "
                     + (report_headline.verdict_text(s) if ci else f"{report_headline.ratio_text(s['speedup'], report_headline.PAGE_SIGN)} · no interval "
                        f"(from {stats.MIN_PAIRS} pairs)"))
    if lines:
        st.markdown("  \n".join(lines))
    n, planned = r.get("pairs", 0), r.get("planned") or len(comp.get("plan") or [])
    s = comp.get("settings") or {}
    how = (f"{s['pairs']} pair{'s' if s['pairs'] != 1 else ''} asked" if s.get("pairs") else
           f"adaptive: until ±{s.get('target_half_width', 0.1) * 100:.0f}%, at most {s.get('max_pairs')} pairs")
    st.caption(f"Comparison #{comp['id']}: {n} complete pair{'s' if n != 1 else ''} of {planned} planned "
               f"({how}); interleaved AB BA …, seed i for pair i"
               + (f" · **ended by:** {comp['ended_by']}" if comp.get("ended_by") and comp["status"] != "running" else "")
               + (f" · {time_text(r.get('time'))}" if r.get("time") else ""))
    bids = r.get("baselines_measured", r.get("baseline_ids")) or []  # results stored before 2026-12-04
    if bids:
        st.caption(f"Baselines measured fresh in this comparison ({', '.join(f'#{i}' for i in bids)}), "
                   f"first {_age(r.get('baseline_measured'))}; not reused.")


def pairs_chart(comp: dict, key: str = "cmp_pairs", height: int = 280) -> None:
    """The pair chart (engine.charts.comparison.pairs_figure). Before the first
    complete pair it is a bordered box of the same height saying so: an empty Plotly
    chart drawn when a comparison starts cost the browser ~0.1 CPU-s in the measured
    window and showed nothing (benchmarks/live_view.py --open-closed)."""
    result = comp.get("result") or {}
    if not result.get("pairs"):  # complete pairs (engine.report.comparison.evaluate)
        box = st.container(height=height, border=True, key=f"{key}_waiting")
        box.markdown(f"**{pairs_title(result)}**")
        box.caption("Waiting for the first complete pair: each pair's ratio appears here as it "
                    "arrives, with the 95% interval narrowing." if comp.get("status") == "running" else
                    "No pair of this comparison completed, so there is no ratio to show.")
        return
    st.plotly_chart(pairs_figure(result, height=height), key=key, config=PLOTLY_CONFIG)


def reused_line(base: dict | None, run: dict | None) -> None:
    """For a run measured against a stored baseline (not a comparison): say so, its age
    and that there is no interval; offer the fresh re-measure."""
    if not base or not run or base["id"] == run["id"] or base.get("group_id") == run.get("group_id"):
        return
    st.warning(f"Stored baseline #{base['id']} reused, measured {_age(base.get('started'))} under that "
               "moment's load: one pair, no interval. Turn off **Reuse stored baseline** and launch again "
               "for a fresh comparison of interleaved pairs.", icon=":material/history:")
