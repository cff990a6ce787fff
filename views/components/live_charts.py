"""A comparison's status lines, Stop, headline and live charts, as the Train
page draws them while runs train and Replay draws them from a recording.

The charts are read through an engine.report.live.LiveMetrics (this session's, or
a replay's); the slower charts are kept a few seconds (SLOW_REFRESH_S).
"""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from engine.jobs import runner
from engine.base import plain
from engine.charts import style as chart_style, train as train_charts
from engine.report.pair import compare
from engine.report.progress import live_summary, progress
from engine.report.live import LiveMetrics
from engine.report.table import incomplete_note
from engine.store import ACTIVE_STATUSES, EPOCH_COLS, Store
from views.components import comparison as cmp_view
from views.components import limits, quiet_progress, toasts
from views.components.common import PLOTLY_CONFIG, SMALL_CONFIG, autopilot_run, never_ran
from views.components.headline import backend_line, own_time, speedup_panel, time_row

# Learning rate, worker CPU and memory, data wait: redrawn at most this often while a run
# is live (their figures are kept in between), since drawing them every second cost
# about a third of a live refresh's server CPU (benchmarks/live_view.py).
SLOW_REFRESH_S = 5.0
# While a comparison measures: progress only, read this often; the browser moves it on in between
# (each rerun restyles the whole page: ~0.1 browser CPU-s; engine/report/progress_motion.py).
QUIET_REFRESH_S = 15.0
# After Stop, read every second until the comparison has settled: nothing is measured any more,
# and the page must say "stopped" at once, not at the next 15-s read.
STOPPING_REFRESH_S, STOPPING_S = 1.0, 30.0


def own_active(store: Store) -> list[dict]:
    """Queued and running runs launched here or from `engine run`: the
    autopilot's runs are followed on the Autopilot page, not here."""
    return [r for r in store.active_runs() if not autopilot_run(r)]


def cancel_own() -> list[str]:
    """Cancel the active runs this page shows (never the autopilot's) and stop a running
    two-command comparison (engine.jobs.command_pairs.stop: its side's process group, which
    may have recorded no run yet): one line each."""
    from engine.jobs import command_pairs
    from engine.store import comparisons as cstore

    with Store() as store:
        runs = own_active(store)
        pairs = [c["id"] for c in cstore.list_all(store)
                 if c["status"] == "running" and (c.get("settings") or {}).get("baseline_kind") == "command"]
    return [command_pairs.stop(cid) for cid in pairs] + \
        [runner.cancel(r["id"]) for r in sorted(runs, key=lambda r: r["status"] != "queued")]


def stop_clicked() -> None:
    """Stop's callback. It runs before the live fragment's body, which may redraw the whole page
    first (a pair has ended): a click read from the button's return value was lost to that.
    The body then redraws the page (`stop_redraw`), so that `quiet_refresh_s` applies. What was
    stopped is said in a toast at the end of the page run (views/components/toasts.py)."""
    toasts.say(stop_toast(cancel_own()))
    st.session_state["stop_clicked_at"] = time.time()
    st.session_state["stop_redraw"] = True


def stop_toast(lines: list[str]) -> str:
    """runner.cancel's lines in one short toast: the runs that were running, then how many
    queued ones were cancelled before they started (a comparison can have eight)."""
    queued = [x for x in lines if x.endswith(runner.NOT_STARTED)]
    said = [x for x in lines if x not in queued]
    if queued:
        said.append(f"{len(queued)} queued run{'s' if len(queued) != 1 else ''} cancelled before "
                    f"{'they' if len(queued) != 1 else 'it'} started")
    return "; ".join(said) or "nothing to stop"


def quiet_refresh_s() -> float:
    """How often the page reads the store while a comparison measures: QUIET_REFRESH_S, or
    STOPPING_REFRESH_S for STOPPING_S after this session pressed Stop."""
    stopped = st.session_state.get("stop_clicked_at")
    return STOPPING_REFRESH_S if stopped and time.time() - stopped < STOPPING_S else QUIET_REFRESH_S


def comparison_block(store: Store, comp: dict) -> None:
    """A comparison's headline, details and pair chart (views/components/comparison.py)."""
    left, right = st.columns([1.3, 2.4], gap="medium")
    with left:
        cmp_view.verdict_box(comp)
        cmp_view.details(comp)
    with right:
        cmp_view.pairs_chart(comp)


def _chief(df: pd.DataFrame) -> pd.DataFrame:
    """System samples of the first process only: a multi-worker run samples every
    worker, and their lines would interleave."""
    return df[df["worker"].fillna(0) == 0] if "worker" in df.columns else df


def live_metrics(store: Store) -> LiveMetrics:
    """This session's incremental reader of run metrics, bound to this tick's store."""
    if "live_metrics" not in st.session_state:
        st.session_state["live_metrics"] = LiveMetrics()
    return st.session_state["live_metrics"].use(store)


def chart_frames(src: LiveMetrics, runs: list[dict]) -> dict[str, pd.DataFrame]:
    """Executions (at most chart_style.MAX_POINTS per run, warm-up kept), epochs and
    system rows of `runs`, tagged with label/colour: what the charts draw."""
    src.keep(r["id"] for r in runs)
    def shown(r: dict) -> pd.DataFrame:
        execs = src.executions(r)
        return src.memo(r, execs, "display", lambda: chart_style.downsample(execs))

    read = {"executions": shown,
            "epochs": lambda r: pd.DataFrame(src.epochs(r), columns=list(EPOCH_COLS)),
            "system": lambda r: _chief(src.system(r))}
    out = {}
    for table, fn in read.items():
        parts = [chart_style.tag(fn(r), chart_style.run_label(r),
                                 chart_style.run_color(r["id"], r["role"], r.get("config")), r["id"]) for r in runs]
        parts = [p for p in parts if not p.empty]
        out[table] = pd.concat(parts, ignore_index=True) if parts else None
    return out


def status_line(store: Store, run: dict, src: LiveMetrics | None = None) -> tuple[str, float | None]:
    """(one markdown line about a run, progress fraction while it runs)."""
    name = f"**{chart_style.run_label(run)}**"
    st_ = run["status"]
    if st_ == "queued":
        return f":material/hourglass_empty: {name}: queued", None
    p = progress(store, run["id"], source=src) or {}
    if st_ == "running":
        if not p.get("total_steps") and p.get("step"):  # a script's generator: no length, yet it trains
            return (f":material/play_circle: {name}: epoch {p['epoch']}/{p['epochs']} · step {p['step']} "
                    f"(steps per epoch unknown) · {p['elapsed_sec']:.1f} s elapsed"), None
        if not p.get("total_steps"):
            return f":material/settings: {name}: setting up (devices, data, model)", 0.0
        left = p.get("time_left_sec")
        left = quiet_progress.left_text(None if left is None else round(left), p.get("time_left_is_most", False))
        line = (f":material/play_circle: {name}: epoch {p['epoch']}/{p['epochs']} · step "
                f"{p['step']}/{p['total_steps']} · {p['elapsed_sec']:.1f} s elapsed · {left}")
        return line, p["fraction"]
    summ = live_summary(store, run, *((src.executions(run), src.epochs(run), src) if src else ()))
    sps = summ.get("samples_per_sec")
    rate = f" · {sps:,.0f} samples/s" if sps else ""
    lost = incomplete_note(run.get("summary"))
    rate += f" · :orange[{lost}]" if lost else ""
    if st_ == "completed":
        wall = summ.get("wall_sec")
        return (f":material/check_circle: {name}: completed"
                + (f" in {wall:.1f} s" if wall else "") + rate), None
    if st_ == "cancelled" and (run.get("error") or "").startswith(runner.NOT_STARTED):  # cancelled while queued
        return f":material/stop_circle: {name}: {plain.md(run['error'])}", None  # (stopped: the CLI got SIGTERM)
    if st_ == "cancelled":
        return (f":material/stop_circle: {name}: cancelled at step {p.get('step', 0)}/"
                f"{p.get('total_steps') or '?'} (partial charts kept){rate}"), None
    return f":material/error: {name}: failed: {plain.md(run.get('error') or 'no message')}", None


def quiet_line(store: Store, run: dict, src: LiveMetrics, read_every_s: float = QUIET_REFRESH_S) -> str:
    """A run's progress line while a comparison measures (views/components/quiet_progress.py):
    a running run's bar and clocks move on for two read intervals (`read_every_s` s each),
    a run setting up counts its seconds, the rest stand still."""
    horizon = int(2 * read_every_s)
    if run["status"] == "running":
        p = progress(store, run["id"], source=src)
        if p and p.get("total_steps") and run.get("cancel_requested"):
            # Stop was asked for: the line stands where the store has it (it counted on to
            # "step 306/360" after Stop's toast said "cancelled at step 292/360").
            return quiet_progress.static_line(
                f":material/stop_circle: **{chart_style.run_label(run)}**: stopping at step "
                f"{p['step']}/{p['total_steps']}", p["fraction"])
        if p and p.get("total_steps"):
            return quiet_progress.running_line(chart_style.run_label(run), p, horizon, key=f"r{run['id']}")
        if run.get("started"):  # the worker is up: devices, data, model, tracing
            line, frac = status_line(store, run, src)
            return quiet_progress.static_line(line, frac, since_s=max(time.time() - run["started"], 0.0),
                                              horizon_s=horizon, key=f"s{run['id']}")
    return quiet_progress.static_line(*status_line(store, run, src))


def launched_banner(runs: list[dict]) -> None:
    """'Queued baseline #n, then run #m' while a run launched from this tab is still queued: one
    small line under the progress lines and Stop (a comparison's first pair can wait minutes for
    the machine; a full-width banner above pushed both below the fold at 1280x720)."""
    launched = st.session_state.get("launched")
    if not launched:
        return
    status = {r["id"]: r["status"] for r in runs}
    if any(status.get(i) == "queued" for i in launched["ids"]):
        st.caption(f":material/rocket_launch: {launched['msg']}")
    else:
        del st.session_state["launched"]


def render_comparison(store: Store, group: list[dict], base: dict | None, run: dict | None,
                      stop: bool = True, source=None, comp: dict | None = None) -> None:
    """Status, Stop (unless `stop` is False: a replay has nothing to stop),
    speedup and the live charts of the current comparison. The Replay page draws
    through here too, with `store` an engine.report.replay.ReplayStore and
    `source` its metrics (default: this session's LiveMetrics). `comp`: the stored
    comparison of interleaved pairs the runs belong to (default: looked up in `store`):
    its headline, interval, verdict and pair chart lead; while it measures, the page
    stays quiet (progress only: the live charts would slow the run they measure)."""
    comp = comp or cmp_view.lookup(store, run)
    runs, unrun = pair_sides(base, run)
    shown = [r for r in ([base] if base and base not in group else []) + group if r not in unrun]
    active = any(r["status"] in ACTIVE_STATUSES for r in group)
    src = source or live_metrics(store)
    # A running comparison measures until its last run ends (lookup settles one with none left):
    # between two pairs, too, when the pair shown has ended and the next is still queued.
    quiet = source is None and comp is not None and comp["status"] == "running"
    head, stop_col = st.columns([6, 1], vertical_alignment="center")
    with head:
        if quiet:  # one block whose bars and clocks move on in the browser between reads
            st.html(quiet_progress.block([quiet_line(store, r, src) for r in shown]), unsafe_allow_javascript=True)
        for r in [] if quiet else shown:
            line, frac = status_line(store, r, src)
            # Setting up: its seconds count on in the browser; never on Replay (`source`), whose clock is its own.
            if source is None and r["status"] == "running" and r.get("started") and frac == 0.0:
                st.html(quiet_progress.block([quiet_line(store, r, src)]), unsafe_allow_javascript=True)
            elif frac is not None:
                st.progress(min(max(frac, 0.0), 1.0), text=line)
            else:
                st.markdown(line)
    with stop_col:
        if stop and (active or quiet):
            st.button("Stop", icon=":material/stop:", key="stop", type="primary", on_click=stop_clicked,
                      help="Cancel the active run(s); their metrics stay in the store")
    launched_banner(group)
    for w in dict.fromkeys(w for r in shown for w in (r.get("summary") or {}).get("warnings") or []):
        st.caption(f":material/info: {plain.md(w)}")  # a warning may carry untrusted text (a bundle)
    if comp is not None and not quiet:
        comparison_block(store, comp)
    if quiet:  # the headline and pair chart are drawn outside the live fragment (main)
        st.caption(":material/speed: Quiet while measuring: the live charts are drawn once the comparison "
                   "ends, so that the page does not slow the runs it measures. Progress is read every "
                   f"{QUIET_REFRESH_S:.0f} s; in between, the bars and clocks move on at the measured rate.")
        return
    if comp is not None and base and run and base["id"] != run["id"]:
        st.markdown(f"**This pair** (seed {run['config'].get('seed')}): baseline #{base['id']} vs run #{run['id']}")
    for r in unrun:
        st.markdown(f":material/stop_circle: {unrun_line(r)}")
    if not runs:  # neither side started: nothing to draw
        return

    frames = chart_frames(src, runs)
    cmp = (compare(store, base["id"], run["id"], source=src) if len(runs) == 2 else None)
    own = own_time(base, run, src)
    # compare() has just computed both steady medians: reuse them rather than recompute.
    medians = ({chart_style.run_label(base): cmp["baseline_samples_per_sec"], chart_style.run_label(run): cmp["samples_per_sec"]}
               if cmp else {chart_style.run_label(r): live_summary(store, r, src.executions(r), src.epochs(r), src)
                            .get("samples_per_sec") for r in runs})

    # Wide enough for "3.42× faster" beside the sidebar at 1280 px (tests/test_presenter_browser.py).
    left, right = st.columns([1.3, 2.4], gap="medium")
    with left:
        if comp is None and source is None:  # Replay has no Reuse switch to turn off
            cmp_view.reused_line(base, run)
        if not unrun:  # else the one line above says why there is no speedup
            speedup_panel(base, run, cmp, own, pair_of=comp, replay=source is not None)
        if source is None:  # a replay's store holds its two runs only: no other backend's run to find
            backend_line(store, run)
        limits.mfu_lines(store, runs[-1], src)
    with right:
        st.plotly_chart(train_charts.throughput_figure(frames["executions"], medians), key="throughput",
                        config=PLOTLY_CONFIG)
    time_row(base, run, cmp)
    kinds = {chart_style.run_label(r): train_charts.train_loss_kind(r.get("config")) for r in runs}
    c1, c2 = st.columns(2, gap="medium")
    c1.plotly_chart(train_charts.loss_figure(frames["executions"], frames["epochs"], x="t", loss_kinds=kinds),
                    key="loss_t", config=PLOTLY_CONFIG)
    c2.plotly_chart(train_charts.loss_figure(frames["executions"], frames["epochs"], x="step", loss_kinds=kinds),
                    key="loss_step", config=PLOTLY_CONFIG)
    # The live Train page keeps its slower charts a few seconds; a replay (source given) redraws all.
    slow = SlowCharts(runs) if source is None else None
    data_wait_row(src, runs, frames["executions"], slow)
    limits.flops_chart(store, runs, frames["executions"], src)
    loss_scale_row(src, runs, frames["executions"])
    s1, s2, s3 = st.columns(3, gap="medium")
    execs, system = frames["executions"], frames["system"]
    s1.plotly_chart(_kept(slow, "lr", execs, lambda: train_charts.lr_figure(execs)), key="lr", config=SMALL_CONFIG)
    s2.plotly_chart(_kept(slow, "cpu", system, lambda: train_charts.system_figure(
        system, "cpu_percent", "CPU (% of a core)", "Worker CPU")), key="cpu", config=SMALL_CONFIG)
    s3.plotly_chart(_kept(slow, "mem", system, lambda: train_charts.system_figure(
        system, "rss_mb", "memory (RSS, MB)", "Worker memory")), key="mem", config=SMALL_CONFIG)


def pair_sides(base: dict | None, run: dict | None) -> tuple[list[dict], list[dict]]:
    """([the pair's sides to draw: baseline first], [its sides that ended before they started]).
    A side that never ran (Stop while it was queued) has no metrics and no environment: it is
    said once (`unrun_line`) and drawn nowhere: no status line, no chart waiting for it, no ratio
    (engine.report.pair.compare read it as "on machine unknown", "ended in its warm-up")."""
    # By id: the stored baseline found for a run may be that very run (its config is its own baseline).
    sides = ([base] if base else []) + ([run] if run and (base is None or run["id"] != base["id"]) else [])
    return [r for r in sides if not never_ran(r)], [r for r in sides if never_ran(r)]


def unrun_line(run: dict) -> str:
    """'run #23 was cancelled before it started: this pair has no run' for a side of a pair
    that ended before it started (views.components.common.never_ran); its error is the
    runner's reason (engine.jobs.runner.NOT_STARTED, or why its queue failed it)."""
    side = "baseline" if run.get("role") == "baseline" else "run"
    error = plain.md(run.get("error") or "")
    said = (f"was {error}" if error.startswith("cancelled before") else
            f"{run['status']} before it started" + (f" ({error})" if error else ""))
    return f"{side} #{run['id']} {said}: this pair has no {side}"


class SlowCharts:
    """This session's slower charts for `runs`: a value is rebuilt once it is
    SLOW_REFRESH_S old or the runs shown (ids, statuses) changed, so a run's end
    is drawn at once. Kept in st.session_state, one entry per key."""

    def __init__(self, runs: list[dict]):
        self.sig = tuple((r["id"], r["status"]) for r in runs)
        self.cache = st.session_state.setdefault("slow_charts", {})
        for key in [k for k, hit in self.cache.items() if hit[0] != self.sig]:
            del self.cache[key]  # drawn for other runs: never shown again

    def get(self, key: str, build):
        now = time.monotonic()
        hit = self.cache.get(key)
        if hit is None or hit[0] != self.sig or now - hit[1] >= SLOW_REFRESH_S:
            hit = self.cache[key] = (self.sig, now, build())
        return hit[2]


def _kept(slow: SlowCharts | None, key: str, frame: pd.DataFrame | None, build):
    """build(), or its kept value while `slow` keeps it; never kept while `frame`
    is still empty (the first points show at once)."""
    return slow.get(key, build) if slow is not None and frame is not None and not frame.empty else build()


def loss_scale_row(src: LiveMetrics, runs: list[dict], execs: pd.DataFrame | None) -> None:
    """For float16 runs (they record a loss scale): the loss scale and the
    optimizer updates skipped per execution, and a warning when any were skipped."""
    if execs is None or "loss_scale" not in execs or execs["loss_scale"].isna().all():
        return
    st.plotly_chart(train_charts.loss_scale_figure(execs), key="loss_scale", config=PLOTLY_CONFIG)
    for r in runs:
        g = src.executions(r)  # all of them: the chart's rows are thinned
        skipped = int(g["skipped"].fillna(0).sum()) if "skipped" in g else 0
        if skipped:
            st.caption(f":material/warning: {chart_style.run_label(r)}: {skipped:,} of {int(g['batches'].sum()):,} "
                       "updates skipped (gradients not finite under float16 loss scaling); steps count batches run")


def data_wait_row(src: LiveMetrics, runs: list[dict], execs: pd.DataFrame | None,
                  slow: SlowCharts | None = None) -> None:
    """Per run: how long each execution waited for input versus computed, and a
    one-line verdict (input-bound or compute-bound). Runs whose data wait is
    not measured (multi-worker, TPU: NULL) get a short note instead. `slow`:
    keeps each run's verdict and chart a few seconds (see render_comparison)."""
    cols = st.columns(len(runs), gap="medium") if runs else []
    for col, r in zip(cols, runs):
        rows = execs[execs["run_id"] == r["id"]] if execs is not None and "run_id" in execs else None
        note, verdict, fig = _kept(slow, f"data_wait_{r['id']}", rows, lambda: _data_wait(src, r, rows))
        with col:
            if note:
                st.caption(note)
                continue
            if verdict:  # the verdict first, then the evidence
                st.markdown(verdict)
            st.plotly_chart(fig, key=f"data_wait_{r['id']}", config=PLOTLY_CONFIG)


def _data_wait(src: LiveMetrics, r: dict, rows: pd.DataFrame | None) -> tuple:
    """(a note instead of the chart, or None; the verdict line or None; the figure or None)
    for run `r`, whose display rows are `rows`."""
    label = chart_style.run_label(r)
    if rows is None or rows.empty:  # an ended run waits for nothing any more
        note = ("waiting for the first execution ..." if r["status"] in ACTIVE_STATUSES
                else f"no execution recorded (the run {r['status']} before its first)")
        return f"**{label}** · data wait vs compute: {note}", None, None
    if train_charts.data_wait_frame(rows).empty:
        cfg = r.get("config") or {}
        why = ("multi-worker runs" if cfg.get("workers", 1) > 1 else "TPU runs"
               if cfg.get("device_type") == "tpu" else "this run")
        active = r["status"] in ACTIVE_STATUSES
        note = (f"not measured for {why} (the input meter does not run there)" if rows["data_wait"].isna().all()
                else "waiting for the first steady execution ..." if active
                else f"no steady execution recorded (the run {r['status']} in its warm-up)")
        return f":material/info: **{label}** · data wait vs compute: {note}", None, None
    share = (r.get("summary") or {}).get("data_wait_share") if r["status"] == "completed" else None
    if share is None:
        execs_r = src.executions(r)  # all of them: the chart's rows are thinned
        share = src.memo(r, execs_r, "data_wait_share", lambda: train_charts.data_wait_share(execs_r))
    verdict = train_charts.data_wait_verdict(share)
    line = None
    if verdict:
        kind, text = verdict
        color = {"input-bound": "red", "partly input-bound": "orange"}.get(kind, "green")
        line = f"**{label}** · :{color}-badge[{kind}] {text[len(kind) + 2:]}"
    return None, line, train_charts.data_wait_figure(rows, title="Data wait vs compute")
