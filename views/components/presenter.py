"""Presenter mode (``?mode=talk``, or the toggle at the top of Train and Replay):
for a projector at 1280x720, read from the back of a room.

Larger type on a plain black-on-white theme, the settings bar collapsed, and
only the essentials: the configuration, Launch/Stop (or the replay controls),
the headline speedup, and throughput and loss side by side. Not a page of its
own (app.py lists the pages): Train and Replay draw through it.
"""
from __future__ import annotations

import html

import streamlit as st

from engine.charts import style as chart_style, presenter as presenter_charts, train as train_charts
from engine.report import headline as report_headline
from engine.report import stats
from engine.charts.comparison import pairs_figure, pairs_title
from engine.report.pair import compare
from engine.report.progress import live_summary
from views.components import comparison as cmp_view
from views.components.headline import own_time
from views.components import quiet_progress, toasts
from views.components.live_charts import chart_frames, live_metrics  # the Train page's frames: same charts, same colours
from views.components.live_charts import STOPPING_REFRESH_S, STOPPING_S, pair_sides, quiet_line, unrun_line

PARAM, VALUE = "mode", "talk"
PLOTLY_CONFIG = {"displaylogo": False, "displayModeBar": False}
CHART_HEIGHT = 410  # px: the headline and both charts fit above the fold at 1280x720
# A comparison's headline card holds every line it has, caveats included: no box of fixed height
# (a line scrolled out of sight inside a card is a line nobody reads on a projector). The charts
# under it get what is left of ROOM_PX, the card's height estimated at 1280 px (`card_height`),
# and never less than MIN_CHART_HEIGHT: a card taller than that moves the charts down, not itself.
# px at 1280x720 for the headline and the charts: 720 less the control row (to 146), the gap under the
# headline (11) and the page's bottom padding (19) is 544; 12 kept for a line that wraps sooner than estimated.
ROOM_PX = 532
MIN_CHART_HEIGHT = 300   # px: a lower chart's plot is too flat to read on a projector
MAIN_WIDTH_PX = 1090     # px: the page's main column at 1280 px wide (CSS below)
COMP_MAIN_REM, MEASURE_MAIN_REM = 1.9, 1.3  # the verdict's size: ended, and beside the progress lines
ROOT_PX = 19             # px: 1rem in presenter mode (CSS below)
# The page's type (Source Sans) a character wide, in em: a little more than measured on the
# card's lines at 1280 px (0.42-0.43; the caveats' semibold 0.41; the verdict's bold 0.45), so
# that no line wraps more often than estimated.
PAGE_GLYPH, BOLD_GLYPH = 0.46, 0.5
# While a comparison measures, presenter mode reads the store this often and redraws the run's
# throughput and loss and the pair chart; in between its progress lines move on in the browser
# once a second (views/components/quiet_progress.py), so nothing on the projector stands still
# for more than a second. 10 s keeps the observer cost within the machine's noise
# (benchmarks/live_view.py --open-closed --presenter; docs/comparisons.md).
MEASURE_REFRESH_S = 10.0
MEASURE_CHART_HEIGHT = 330  # px: at most, under the headline and the progress lines at 1280x720
MEASURE_COLUMNS = (1.6, 1.65)  # the headline card beside the progress lines, while measuring
MEASURE_GAP_PX = 38         # px: the gap between them ("medium": 2rem)
PROGRESS_PX = 115           # px: the progress block (its head line and one line per run, at 1280 px)
MEASURE_MAX_POINTS = 300    # executions drawn per run while measuring (the browser redraws them each read)
# High contrast and larger type; the main area starts right under the navigation.
CSS = """
<style>
html { font-size: 19px; }
[data-testid="stMainBlockContainer"] { padding-top: 3.4rem; padding-bottom: 1rem; max-width: 100%; }
[data-testid="stMainBlockContainer"] [data-testid="stVerticalBlock"] { gap: 0.6rem; }
[data-testid="stMain"] p, [data-testid="stMain"] label, [data-testid="stMain"] span { color: #000000; }
[data-testid="stMain"] button:disabled, [data-testid="stMain"] button:disabled p,
[data-testid="stMain"] button:disabled span, [data-testid="stMain"] label:has(input:disabled) p {
  color: #9CA3AF; }
[data-testid="stCaptionContainer"] p { color: #111111; font-size: 1rem; }
[data-testid="stMetric"] { padding: 0.15rem 0.9rem 0.3rem; border: 2px solid #000000 !important; }
[data-testid="stMetricLabel"] p { font-size: 1.05rem; font-weight: 600; color: #000000; }
[data-testid="stMetricValue"] { font-size: 2.1rem; font-weight: 700; color: #000000; line-height: 1.15; }
.st-key-presenter_headline [data-testid="stColumn"]:first-child [data-testid="stMetricValue"] { font-size: 2.7rem; }
[data-testid="stMetricDelta"] div { font-size: 1rem; }
.st-key-presenter_config p { font-size: 1.05rem; font-weight: 600; color: #000000; }
[data-testid="stMain"] .st-key-presenter_cmp_headline { padding: 0.45rem 0.9rem; gap: 0; }
[data-testid="stMarkdownContainer"]:has(> .sl-card) { margin-bottom: 0; }  /* -1rem is for a last <p>'s margin */
.sl-card div { font-size: 1rem; line-height: 1.3; color: #1F2937; overflow-wrap: anywhere; }
.sl-card .sl-label { font-size: 0.95rem; color: #374151; }
.sl-card .sl-main { font-weight: 650; line-height: 1.15; }
.sl-card .sl-caveat { color: #000000; font-weight: 600; border-left: 6px solid #B91C1C; padding-left: 8px;
  margin: 3px 0; }
</style>
"""


def is_on() -> bool:
    """Whether the page is in presenter mode (``?mode=talk`` in the URL)."""
    return st.query_params.get(PARAM) == VALUE


def toggle(container) -> bool:
    """'Presenter mode' toggle bound to ``?mode=talk``; returns whether it is on.
    Switching reloads the page so that the sidebar and the theme follow."""
    on = is_on()
    want = container.toggle("Presenter mode", value=on, key=f"presenter_toggle_{on}",
                            help="Large type, high contrast, only the headline and two charts: for a "
                                 "projector at 1280x720 (also ?mode=talk in the URL)")
    if want != on:
        if want:
            st.query_params[PARAM] = VALUE
        else:
            del st.query_params[PARAM]
        st.rerun()
    return on


def style() -> None:
    """Apply presenter mode's type and contrast to the page."""
    st.markdown(CSS, unsafe_allow_html=True)
    toasts.below()


def card_lines(comp: dict) -> dict:
    """What a comparison's headline card says (engine.report.headline.comparison_headline of its
    result), by weight: 'label' (the measure; 'in progress' while it measures), 'main' (the
    verdict and interval) in 'color' (its tone's; neutral while it measures), 'detail' (pairs,
    baseline, power), 'caveats' (one line each, never merged into another line or put last:
    the note (runs that shared the machine, seeds missed or failed, the noise floor), test
    accuracy not held, seeds that missed the target), 'rest' (one line: what the speedup is made
    of, its ratio with setup, and the seeds and test accuracy when nothing is wrong with them).
    Strings or None; 'caveats' a list. Pure."""
    result = comp.get("result") or {}
    running = comp["status"] == "running"
    h = report_headline.comparison_headline(result, in_progress=running)
    setup = report_headline.with_setup_text(result.get("with_setup"), short=True) if h.get("setup") else None
    delta = result.get("test_accuracy_delta") or {}
    test_ok = stats.accuracy_held(delta) is not False or not delta.get("ci95")  # no interval yet: no caveat
    # The headline's note joins its facts with "; " (pairs without a ratio; an outlier): a line each.
    caveats = [x for x in (*(h["note"] or "").split("; "), None if test_ok else h["test"],
                           None if all_reached(result.get("reached")) else h["reached"]) if x]
    rest = [x for x in (h["factors"], setup, h["reached"] if all_reached(result.get("reached")) else None,
                        h["test"] if test_ok else None) if x]
    return {"label": (h["measure"] or "speedup") + (" · in progress: more pairs to come" if running else ""),
            "main": h["main"], "color": cmp_view.TONE_COLORS["neutral" if running else h["tone"]],
            "detail": h.get("detail"), "caveats": caveats, "rest": "  ·  ".join(rest) or None}


def all_reached(reached: dict | None) -> bool:
    """Whether every seed of both sides reached the target, none failed (engine.report.comparison's
    'reached' counts); True without counts (nothing to warn of)."""
    if not reached or not reached.get("pairs"):
        return True
    n = reached["pairs"]
    return (reached["run"] == reached.get("run_of", n) and reached["baseline"] == reached.get("baseline_of", n)
            and not reached.get("run_failed") and not reached.get("baseline_failed"))


def _rows(text: str | None, size_px: float, width_px: float, glyph: float = PAGE_GLYPH) -> int:
    """Lines `text` wraps to in `width_px` at `size_px` (0 for none); a line's last word that
    does not fit moves down whole, so the line is taken as 0.93 of the width."""
    if not text:
        return 0
    return max(1, -(-int(len(text) * glyph * size_px) // int(0.93 * width_px)))


def card_height(lines: dict, size_rem: float, width_px: float, rest: bool = True) -> int:
    """Estimated height in px of the card `card` draws for `lines` (`card_lines`), `width_px`
    wide (its border included) with its main line at `size_rem`; `rest`: with the rest line.
    Pure; a little more than the browser draws at the widths it was measured at (1280 px)."""
    inner = width_px - 2 * 0.9 * ROOT_PX - 2
    line = 1.3 * ROOT_PX
    h = 2 * 0.45 * ROOT_PX + 2 + _rows(lines["label"], 0.95 * ROOT_PX, inner) * 0.95 * line
    h += _rows(lines["main"], size_rem * ROOT_PX, inner, BOLD_GLYPH) * 1.15 * size_rem * ROOT_PX
    h += _rows(lines["detail"], ROOT_PX, inner) * line
    h += sum(_rows(c, ROOT_PX, inner - 14) * line + 6 for c in lines["caveats"])
    h += _rows(lines["rest"], ROOT_PX, inner) * line if rest else 0
    return int(h + 4)  # 4: the lines' rounding to whole px


def card(lines: dict, size_rem: float, rest: bool = True) -> None:
    """A comparison's headline card (`card_lines`), every line in plain text and in sight:
    the label, the verdict large in its colour, the detail, each caveat on its own line with a
    red bar, then (`rest`) the rest line."""
    def div(cls: str, text: str | None, style: str = "") -> str:
        return f'<div class="{cls}"{style}>{html.escape(text)}</div>' if text else ""

    parts = [div("sl-label", lines["label"]),
             div("sl-main", lines["main"], f' style="font-size:{size_rem}rem;color:{lines["color"]}"'),
             div("sl-line", lines["detail"]), *(div("sl-caveat", c) for c in lines["caveats"]),
             div("sl-line", lines["rest"] if rest else None)]
    st.container(key="presenter_cmp_headline", border=True).markdown(
        f'<div class="sl-card">{"".join(parts)}</div>', unsafe_allow_html=True)


def speed_banner(base: dict | None, run: dict | None, cmp: dict | None, own: dict | None = None) -> None:
    """The headline speedup large (time to accuracy), end-to-end and steady beside it; the
    wording is engine.report.headline's, as on the Train page.
    own: views.components.headline.own_time of a run that is its own baseline (its time to target is shown)."""
    box = st.container(key="presenter_headline")
    if base is None or cmp is None:
        own = own or {"label": None, "note": ""}
        if base is not None and own["label"] is not None:
            box.metric(own["label"], own["value"], border=True)
        else:
            box.metric("Speedup", "—", border=True)
        box.caption("No baseline to compare with yet." if base is None
                    else own["note"] + report_headline.OWN_BASELINE + " Turn on a speed option to compare.")
        return
    # One pair (no comparison: a Replay of two runs, a reused stored baseline) is one sample:
    # its figures in body size and neutral grey, and said so beside them (same height: the charts keep their room).
    box.markdown(ONE_PAIR_CSS, unsafe_allow_html=True)
    big, e2e, steady, note = box.container(key="presenter_one_pair").columns([1.5, 0.9, 0.9, 1.0], gap="small")
    h = report_headline.pair_headline(cmp)
    note.caption((f":material/compare_arrows: **{h['machines']}**. " if h["machines"] else "")
                 + f"**{stats.ONE_PAIR_LABEL}**: one baseline run and one run"
                 + (f" ({h['seconds']})" if h["seconds"] else "") + ", no interval")
    label = h["label"][0].upper() + h["label"][1:]
    # Why there is no number, once it is final; short, since a longer label is cut at 1280 px.
    if h["missed"]:
        label += f" · {h['missed']}"
    big.metric(label, "not reached" if h["missed"] else h["value"], border=True)
    for col, name, key in ((e2e, "End-to-end", "end_to_end_speedup"), (steady, "Steady", "steady_speedup")):
        col.metric(name, report_headline.ratio_text(cmp.get(key), report_headline.PAGE_SIGN), border=True)


ONE_PAIR_CSS = """<style>
.st-key-presenter_one_pair [data-testid="stMetricValue"] { font-size: 1.25rem !important; font-weight: 500 !important;
  color: #374151 !important; }
</style>"""


def comparison(store, base: dict | None, run: dict | None, source=None, comp: dict | None = None,
               above_px: int = 0) -> None:
    """Headline, then throughput and loss against wall time side by side, for the
    baseline and the run. `store` may be an engine.report.replay.ReplayStore with
    `source` its metrics (default: the Train page's LiveMetrics of this session).
    `comp`: the comparison of interleaved pairs the runs belong to (default: looked
    up): its headline card (`card`) leads, the charts as tall as the card leaves room for;
    while it measures, `measuring` draws the page (it must not slow the run it measures).
    `above_px`: px the caller draws between its control row and the headline (Replay's
    line): the charts are that much shorter, so that the page stays within 720 px."""

    comp = comp or cmp_view.lookup(store, run)
    if comp is not None and source is None and comp["status"] == "running":
        return measuring(store, comp, base, run)
    chart_h = CHART_HEIGHT - above_px
    if comp is not None:
        lines = card_lines(comp)
        card(lines, COMP_MAIN_REM)
        chart_h = max(min(CHART_HEIGHT, ROOM_PX - card_height(lines, COMP_MAIN_REM, MAIN_WIDTH_PX)) - above_px,
                      MIN_CHART_HEIGHT)
    src = source or live_metrics(store)
    runs, unrun = pair_sides(base, run)
    cmp = compare(store, base["id"], run["id"], source=src) if len(runs) == 2 else None
    for r in unrun:  # no ratio, no "machine unknown": the side never ran
        st.markdown(f":material/stop_circle: {unrun_line(r)}")
    if comp is None and not unrun:
        speed_banner(base, run, cmp, own_time(base, run, src))
    frames = chart_frames(src, runs)
    medians = ({chart_style.run_label(base): cmp["baseline_samples_per_sec"], chart_style.run_label(run): cmp["samples_per_sec"]}
               if cmp else {chart_style.run_label(r): live_summary(store, r, src.executions(r), src.epochs(r), src)
                            .get("samples_per_sec") for r in runs})
    kinds = {chart_style.run_label(r): train_charts.train_loss_kind(r.get("config")) for r in runs}
    left, right = st.columns(2, gap="medium")
    # Short axis titles: the chart titles say what is drawn, and short titles stay large.
    left.plotly_chart(presenter_charts.presenter(train_charts.throughput_figure(frames["executions"], medians, title="Throughput"),
                                       chart_h, x_title=chart_style.T_SHORT, y_title="samples/s"),
                      key="presenter_throughput", config=PLOTLY_CONFIG)
    loss = train_charts.loss_figure(frames["executions"], frames["epochs"], x="t", loss_kinds=kinds,
                              title="Loss: validation ◆, training thin")
    right.plotly_chart(presenter_charts.presenter(loss, chart_h, x_title=chart_style.T_SHORT, y_title="cross-entropy"),
                       key="presenter_loss", config=PLOTLY_CONFIG)


def measure_refresh_s() -> float:
    """How often presenter mode reads the store while a comparison measures: MEASURE_REFRESH_S,
    or every second for a while after this session pressed Stop (it must say "stopped" at once)."""
    import time

    stopped = st.session_state.get("stop_clicked_at")
    return STOPPING_REFRESH_S if stopped and time.time() - stopped < STOPPING_S else MEASURE_REFRESH_S


def _pair_position(comp: dict, base: dict | None, run: dict | None) -> str:
    """'pair 2 of 5' for the pair on screen (by its runs' ids in the comparison's plan)."""
    plan = comp.get("plan") or []
    ids = {r["id"] for r in (base, run) if r}
    k = next((i for i, p in enumerate(plan) if {p.get("baseline_id"), p.get("run_id")} & ids), None)
    return f"pair {k + 1} of {len(plan)}" if k is not None else f"{len(plan)} pairs planned"


def measuring(store, comp: dict, base: dict | None, run: dict | None) -> None:
    """Presenter mode while a comparison measures: the headline so far and the progress lines
    of the pair training now (moving on in the browser every second between reads), then
    that pair's throughput and loss and the pair chart, redrawn every MEASURE_REFRESH_S.
    The charts have no legends (their room goes to the plot): each progress line carries its
    run's colour, as its curves do."""
    import time

    src = live_metrics(store)
    runs = ([base] if base else []) + ([run] if run and (base is None or run["id"] != base["id"]) else [])
    every = measure_refresh_s()
    lines = card_lines(comp)
    top_l, top_r = st.columns(MEASURE_COLUMNS, gap="medium")
    with top_l:  # the card without its rest line: that goes under the progress lines, in sight
        card(lines, MEASURE_MAIN_REM, rest=False)
    with top_r:
        since = max(time.time() - float(comp.get("created") or time.time()), 0.0)
        head = (f'<div style="margin-bottom:6px"><b>Comparison #{int(comp["id"])}</b> · '
                f'{html.escape(_pair_position(comp, base, run))} · measuring for '
                f'{quiet_progress.clock(since, int(2 * every), key="m%d" % int(comp["id"]))} s</div>')
        bar = {r["id"]: chart_style.run_color(r["id"], r["role"], r.get("config")) for r in runs}
        progress = [f'<div style="border-left:7px solid {bar[r["id"]]};padding-left:9px">'
                    f'{quiet_line(store, r, src, every)}</div>' for r in runs]
        st.html(quiet_progress.block([head] + progress), unsafe_allow_javascript=True)
        if lines["rest"]:  # as in the card, in plain text
            st.markdown(f'<div class="sl-card"><div class="sl-line">{html.escape(lines["rest"])}</div></div>',
                        unsafe_allow_html=True)
    left_w = (MAIN_WIDTH_PX - MEASURE_GAP_PX) * MEASURE_COLUMNS[0] / sum(MEASURE_COLUMNS)
    right = PROGRESS_PX + (_rows(lines["rest"], ROOT_PX, MAIN_WIDTH_PX - MEASURE_GAP_PX - left_w) * 1.3 * ROOT_PX
                           if lines["rest"] else 0)
    h = max(min(MEASURE_CHART_HEIGHT, ROOM_PX - max(card_height(lines, MEASURE_MAIN_REM, left_w, rest=False), right)),
            MIN_CHART_HEIGHT)
    frames = chart_frames(src, runs)
    if frames["executions"] is not None:  # a third of the page wide: fewer points draw faster, look the same
        frames["executions"] = chart_style.downsample(frames["executions"], MEASURE_MAX_POINTS)
    medians = {chart_style.run_label(r): live_summary(store, r, src.executions(r), src.epochs(r), src)
               .get("samples_per_sec") for r in runs}
    kinds = {chart_style.run_label(r): train_charts.train_loss_kind(r.get("config")) for r in runs}
    w = 400

    def bare(fig):
        fig.update_layout(showlegend=False)
        return fig

    c1, c2, c3 = st.columns(3, gap="small")
    c1.plotly_chart(presenter_charts.presenter(bare(train_charts.throughput_figure(frames["executions"], medians,
                                                                              title="Throughput")),
                                          h, width_px=w, x_title=chart_style.T_SHORT, y_title="samples/s"),
                    key="presenter_throughput", config=PLOTLY_CONFIG)
    loss = train_charts.loss_figure(frames["executions"], frames["epochs"], x="t", loss_kinds=kinds,
                                    title="Loss (◆ validation)")
    c2.plotly_chart(presenter_charts.presenter(bare(loss), h, width_px=w, x_title=chart_style.T_SHORT,
                                          y_title="cross-entropy"),
                    key="presenter_loss", config=PLOTLY_CONFIG)
    result = comp.get("result") or {}
    if result.get("pairs"):
        c3.plotly_chart(presenter_charts.presenter(bare(pairs_figure(result, height=h, title="Pairs ● · mean so far")),
                                              h, width_px=w, x_title="pair", y_title="speedup (×)"),
                        key="presenter_pairs", config=PLOTLY_CONFIG)
    else:
        box = c3.container(height=h, border=True, key="presenter_pairs_waiting")
        box.markdown(f"**{pairs_title(result)}**")
        box.caption("Each pair's ratio appears here as it completes, with the 95% interval narrowing "
                    "from the third pair on.")
