"""How far from the limit, on the Train page: the MFU line under the headline, the
bound-by verdict, and the live chart of achieved FLOP/s against the peak. UI only:
the figures come from engine.report.mfu and engine.report.bound_by."""
from __future__ import annotations

import pandas as pd
import streamlit as st

from engine.charts import style as chart_style, mfu as mfu_charts
from engine.report import mfu
from engine.report.bound_by import bound_by
from engine.report.progress import live_summary

PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}


def figures(store, run: dict, src) -> dict:
    """engine.report.mfu.of for `run` with its live steady rate; a run imported from
    another machine keeps only what it brought (this machine's peak is not its peak)."""
    summ = live_summary(store, run, src.executions(run), src.epochs(run), src)
    if run.get("origin"):
        return {k: summ.get(k) for k in mfu.MFU_KEYS}
    return {**summ, **mfu.of(summ, run.get("plan"))}


def mfu_lines(store, run: dict | None, src) -> None:
    """'MFU 32% of this machine's measured float32 peak (...)' and, once the run ended,
    its bound-by line, as captions under the speedup headline."""
    if run is None:
        return
    m = figures(store, run, src)
    line = mfu.mfu_line(m)
    note = (run.get("summary") or {}).get("flops_note") or (run.get("plan") or {}).get("flops_note")
    if note and not m.get("flops_per_sample"):  # a user's model whose count XLA contradicts
        st.caption(f":material/speed: MFU -: {note}")
    elif line:
        st.caption(f":material/speed: **MFU {line.split('%', 1)[0]}%**{line.split('%', 1)[1]}",
                   help=f"model FLOPs utilization of run #{run['id']}: steady samples/s × "
                        f"{m['flops_per_sample']:,} training FLOPs per sample ÷ peak. Peak: {m.get('peak_source')}")
    elif m.get("flops_per_sample"):
        st.caption(f":material/speed: {m['flops_per_sample']:,} training FLOPs per sample; MFU once a peak is "
                   "known (measured after the run, or by the Hardware page's check)")
    if run["status"] in ("completed", "cancelled", "failed"):
        v = bound_by(m)
        if v:
            st.caption(f":material/troubleshoot: {v['line']}")


def flops_chart(store, runs: list[dict], execs: pd.DataFrame | None, src) -> None:
    """Achieved model FLOP/s per execution of `runs` against their peaks (live)."""
    per_run = {chart_style.run_label(r): figures(store, r, src) for r in runs}
    if not any(v.get("flops_per_sample") for v in per_run.values()):
        return
    st.plotly_chart(mfu_charts.flops_figure(execs, per_run), key="flops", config=PLOTLY_CONFIG)
