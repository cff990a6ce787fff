"""The Hardware page's quick benchmark: started detached (engine.bench.quick.start_background),
followed by a fragment that re-reads its progress file, its result as a chart and a table, and
the button that puts the best configuration on the Train page."""
from __future__ import annotations

import time

import pandas as pd
import streamlit as st

from engine.base import plain
from engine.bench import quick as bench
from engine.charts import hardware as hardware_charts
from engine.config import words
from engine.hardware.machine import quick_facts
from engine.jobs.background import ACTIVE_STATES
from engine.report.headline import PAGE_SIGN, ratio_text
from views.components import handoff
from views.components.common import one_line_errors

LIVE_REFRESH_S = 1.0   # while the benchmark runs
WATCH_REFRESH_S = 3.0  # idle: notice a benchmark started from another tab
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}

BENCH_COLUMNS = {
    "best": st.column_config.TextColumn("", width="small"),
    "backend": st.column_config.TextColumn("backend"),
    "precision": st.column_config.TextColumn("precision"),
    "steps_per_execution": st.column_config.NumberColumn("steps / execution", format="%d"),
    "jit_compile": st.column_config.CheckboxColumn("XLA"),
    "devices": st.column_config.NumberColumn("devices", format="%d"),
    "samples_per_sec": st.column_config.NumberColumn("steady samples/s", format="%,.0f",
                                                     help="median over repeats of each cell's steady "
                                                          "median samples/s"),
    "speedup": st.column_config.NumberColumn("speedup (×)", format="%.2f",
                                             help="median over repeats of cell / baseline of the same "
                                                  "repeat"),
    "spread": st.column_config.TextColumn("spread (min–max ×)"),
    "warmup_sec": st.column_config.NumberColumn("warm-up (s)", format="%.2f"),
}


def bench_progress(was_running: bool) -> None:
    """Body of the benchmark fragment: re-reads the progress file every tick."""
    with one_line_errors("Benchmark progress"):
        p = bench.read_progress()
        running = bool(p) and p["state"] in ACTIVE_STATES
        if running != was_running:  # started elsewhere, or finished: redraw the page
            st.rerun()
        if running:
            done, total = p.get("done") or 0, p.get("total") or 0
            what = (f"measuring {p['current']}" if p.get("current")
                    else "finishing (summarising and saving the result)" if total and done >= total
                    else "starting the worker (TensorFlow, data, model)")
            left = bench.progress_left(p, time.time())
            text = (f":material/speed: {bench.step_label(done, total, p.get('repeats'))}: {what} · "
                    f"{p.get('elapsed', 0):.0f} s elapsed"
                    + (f" · about {left:.0f} s left" if left is not None else ""))
            st.progress(done / total if total else 0.0, text=text)
            last = p.get("last")
            if last and last.get("samples_per_sec"):
                st.caption(f"Last measured: {last['cell']}: {last['samples_per_sec']:,.0f} samples/s")
            return
        latest = bench.load_latest() or {}
        newer = p and (p.get("finished") or 0) > (latest.get("created") or 0)
        if p and newer and p["state"] == "failed":
            st.error(f"The last benchmark failed: {plain.md(p.get('error') or 'no message')}", icon=":material/error:")
        elif p and newer and p["state"] == "cancelled":
            st.caption(":material/stop_circle: The last benchmark was cancelled; the result below "
                       "(if any) is from an earlier one.")


def bench_table(cells: pd.DataFrame, best_i: int) -> pd.DataFrame:
    df = cells.copy()
    df["best"] = ["★ best" if i == best_i else "" for i in df.index]
    df["precision"] = df["precision"].astype(str) + [" (simulated)" if s else ""
                                                      for s in df.get("simulated", [False] * len(df))]
    df["spread"] = [f"{a:.2f}–{b:.2f}" if pd.notna(a) and pd.notna(b) else "–"
                    for a, b in zip(df["speedup_min"], df["speedup_max"])]
    return df


def use_help(workload: dict) -> str:
    """The help of "Use this configuration": what it changes, what it keeps, and what it does
    with a value measured on the benchmark's data that does not fit the user's."""
    return ("Changes on the Train page: backend, precision, steps per execution, XLA and devices "
            "(1 worker). Keeps your data, model, batch size, epochs and every other setting. Measured "
            f"on {bench.workload_text(workload)} at batch {workload.get('batch_size')}: a value that does not "
            "fit your data (steps per execution above the steps of one of your epochs, devices that do not "
            "divide your batch) is lowered to what fits, an option your settings rule out is not applied, "
            "and the Train page says so in one line.")


def bench_results(res: dict) -> None:
    cells = pd.DataFrame(res.get("cells") or [])
    if cells.empty or cells["speedup"].isna().all():
        st.warning("The last benchmark has no measured cells: run it again.", icon=":material/info:")
        return
    best_i = int(cells["speedup"].idxmax())
    best = res["cells"][best_i]
    w = res.get("workload") or {}
    when = time.strftime("%Y-%m-%d %H:%M", time.localtime(res.get("created") or 0))
    st.caption(f"Measured {when}: {bench.workload_text(w)} images, global batch "
               f"{w.get('batch_size')}, {w.get('steps')} steps × {w.get('epochs')} epochs per cell, "
               f"{res.get('repeats')} interleaved repeats, {res.get('wall_sec', 0):.0f} s in all. Each cell "
               "is compared with the float32 baseline of the same repeat; error bars show the spread.")
    for caution in [plain.md(c) for c in [bench.machine_caution(res)] if c] + [bench.baseline_caution(res)]:
        if caution:  # another machine's result (its CPU's name is untrusted text), or a busy machine's
            st.warning(caution, icon=":material/warning:")
    chart, side = st.columns([2.4, 1], gap="medium")
    chart.plotly_chart(hardware_charts.bench_figure(cells), key="bench_chart", config=PLOTLY_CONFIG)
    with side:
        # An arrow and a colour only for a verdict: 1.00x "+0%" with a green up-arrow read as a gain,
        # and so did the best of 10 cells at 2 repeats (no interval, so no verdict: samples).
        verdict = best.get("verdict")
        moved = verdict in ("faster", "slower") and round((best["speedup"] - 1) * 100) != 0
        why = ("" if moved else " · within noise" if verdict in ("inconclusive", "equivalent") else " · no interval")
        st.metric("Best configuration", ratio_text(best["speedup"], PAGE_SIGN), border=True,
                  delta=f"{(best['speedup'] - 1) * 100:+.0f}% vs baseline" + why,
                  delta_color="normal" if moved else "off", delta_arrow="auto" if moved else "off",
                  help="median over repeats of its samples/s / the baseline's" + (
                      "" if verdict else f"; {res.get('repeats')} repeats give no interval (3 are the fewest): a "
                                         "sample, the best of every cell, so the likeliest to flatter"))
        st.markdown(f"**{words.bench_cell(best)}**")
        if best["speedup"] <= 1.0:
            st.caption("Nothing beat the float32 baseline here: keep the defaults.")
        order = list(range(len(res["cells"])))
        pick = st.selectbox("Configuration to use", order, index=best_i, key="bench_pick", format_func=lambda i: words.bench_cell(
            res["cells"][i]) + (f": {ratio_text(res['cells'][i]['speedup'], PAGE_SIGN)}" if res["cells"][i]["speedup"] is not None else ""))
        if st.button("Use this configuration", type="primary", icon=":material/arrow_forward:",
                     key="bench_use", on_click=handoff.hand_over, width="stretch",
                     args=({**bench.to_config_changes(res["cells"][pick]), "workers": 1}, False, "the benchmark"),
                     help=use_help(w)):
            handoff.go_to_train()
        st.caption("Measured on a small CNN: a larger model usually gains more from mixed precision "
                   "and XLA, a tiny one more from steps per execution. Launch on the Train page to "
                   "measure it on your own model.")
    st.dataframe(bench_table(cells, best_i), hide_index=True, column_config=BENCH_COLUMNS,
                 column_order=list(BENCH_COLUMNS), key="bench_table")


def bench_section() -> None:
    st.markdown("#### Quick benchmark")
    est, basis = bench.estimate_sec(cells=(cells := len(bench.plan_matrix(quick_facts()))))  # what it will run here
    st.caption("Measures every option combination that makes sense here (precision × steps per "
               "execution × XLA, and several devices when there are) with short runs on synthetic "
               f"data, each against the float32 single-device baseline: about {est:.0f} s ({basis}). "
               f"**On mnist5k** measures the same on the bundled real MNIST 28x28 (about "
               f"{bench.estimate_sec(dataset='mnist5k', cells=cells)[0]:.0f} s). "
               "It runs in the background: you can leave this page and come back.")
    p = bench.read_progress()
    running = bool(p) and p["state"] in ACTIVE_STATES
    c1, c4, c2, c3 = st.columns([1.3, 1.1, 1, 2.4], vertical_alignment="center")
    for col, dataset, label, key, kind in ((c1, "synthetic", "Run quick benchmark", "bench_start", "primary"),
                                           (c4, "mnist5k", "On mnist5k", "bench_start_mnist5k", "secondary")):
        if col.button(label, type=kind, icon=":material/speed:", key=key, disabled=running, width="stretch"):
            try:
                bench.start_background(full=False, repeats=2, dataset=dataset)
                st.rerun()
            except bench.BenchError as e:
                c3.warning(str(e), icon=":material/hourglass_top:")
    if running and c2.button("Cancel", icon=":material/stop:", key="bench_cancel", width="stretch"):
        bench.cancel_background()
        st.rerun()
    st.fragment(bench_progress, run_every=LIVE_REFRESH_S if running else WATCH_REFRESH_S)(running)
    res = bench.load_latest()
    if res:
        bench_results(res)
    elif not running:
        st.info("No benchmark yet: press **Run quick benchmark** to measure which options speed up "
                "training on this machine. Its result appears here as a chart and a table, with a "
                "button that puts the best configuration on the Train page.", icon=":material/speed:")

