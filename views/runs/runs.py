"""Runs: every stored run in one table with filters; overlay any runs' curves,
see speedups against any baseline and scaling with device count, download
CSVs, delete runs.

UI only: the table comes from engine.report.table.runs_frame, speedups from
engine.report.pair, figures from engine.report.charts. No TensorFlow in this process.
The page entry (app.py routes here); its sections are the modules beside it.
"""
from __future__ import annotations

import math

import pandas as pd
import streamlit as st

from engine.jobs import runner
from engine.charts import style as chart_style
from engine.report.table import FIGURES, mfu_caption, number, runs_frame
from engine.base.plain import md
from engine.store import Store, filter_sql, old_store_line
from views.components.common import one_line_errors
from views.runs.compare import comparisons_section, overlay_section, speedup_section
from views.runs.files import bundle_section, delete_section, export_section, forget_deleted, trash_section
from views.runs.transfer import _demo_active, transfer_section

PAGE_ROWS = 25  # runs in one page of the table (the pickers below offer these)
UNSTARTED = "status='cancelled' AND started IS NULL"
DEMO_REFRESH_S = 2.0  # the transfer section re-reads the store this often while the demo runs
FILTERS = (("status", "Status"), ("dataset", "Data set"), ("model", "Model"),
           ("precision", "Precision"), ("devices", "Devices"), ("role", "Role"))
FIGURE_HELP = {"samples_per_sec": "median samples/s after the warm-up",
               "waiting_sec": "waiting for a worker before the run's clock started (a free machine, a spare's "
                              "imports); not in wall",
               "end_to_end_samples_per_sec": "training samples / wall time of training"}
TABLE_COLUMNS = {
    "id": st.column_config.NumberColumn("run", format="#%d", width=56),
    "status": st.column_config.TextColumn("status", width=92),
    "role": st.column_config.TextColumn("role", width=78),
    "config": st.column_config.TextColumn("configuration", help="data set · model · precision · devices · "
                                          "batch · speed options that are on · epochs"),
    **{col: st.column_config.NumberColumn(name, width=max(96, 8 * len(name)), help=FIGURE_HELP.get(col))
       for col, (name, _) in FIGURES.items()},
    "mfu": st.column_config.NumberColumn("MFU", format="percent", width=72,
                                         help="model FLOPs utilization (PaLM's): steady samples/s × training FLOPs "
                                              "per sample ÷ the theoretical (CPU) or data-sheet (GPU) peak of the "
                                              "run's compute dtype; one peak per dtype for the whole column, stated "
                                              "under the table (python -m engine show ID: the run's own)"),
    "mfu_denominator": st.column_config.TextColumn("MFU of", help="the peak the MFU column divides that row by "
                                                   "(imported runs: their own machine's)"),
    "bound_by": st.column_config.TextColumn("bound by", width="medium",
                                            help="what limits the run, with the figures that decided it; "
                                                 "python -m engine show ID adds the next lever"),
    "schedule": st.column_config.TextColumn("schedule", help="the learning-rate schedule"),
    "learning_rate": st.column_config.NumberColumn("peak LR", format="%.3g",
                                                   help="the highest learning rate the schedule reaches "
                                                        "(one_cycle and cyclic: max_lr)"),
    "label_smoothing": st.column_config.NumberColumn("label smoothing", format="%.2f"),
    "created": st.column_config.TextColumn("created"),
    "origin": st.column_config.TextColumn("origin", help="imported from a run bundle: the host it ran on"),
    "error": st.column_config.TextColumn("error"),
    "backend": st.column_config.TextColumn("backend"),
    "optimizer": st.column_config.TextColumn("optimizer"),
    "seed": st.column_config.NumberColumn("seed", format="%d", width=64),
    "machine": st.column_config.TextColumn("machine", help="the hardware the run measured on (its fingerprint's "
                                           "name; never the hostname)"),
    "group": st.column_config.TextColumn("group", help="runs launched together; a comparison's pairs share one"),
}
# Shown without scrolling at 1280 px; the others are one click away (column chooser).
# Time to target right after the configuration (the headline's figure); "bound by", the widest, last.
KEY_COLUMNS = ("id", "status", "role", "config", "time_to_target_sec", "samples_per_sec", "val_accuracy", "wall_sec",
               "mfu", "bound_by")
MORE_COLUMNS = ("mfu_denominator", "end_to_end_samples_per_sec", "waiting_sec", "setup_sec", "warmup_sec", "validation_sec",
                "other_sec", "backend", "optimizer", "schedule", "learning_rate", "label_smoothing", "seed",
                "machine", "group", "created", "origin", "error")


def table(runs: list[dict], df: pd.DataFrame) -> pd.DataFrame:
    """engine.report.table.runs_frame plus a one-line configuration summary."""
    by_id = {r["id"]: r for r in runs}
    df = df.copy()
    for col in FIGURES:
        df[col] = pd.to_numeric(df[col], errors="coerce")  # numbers, so that columns sort as numbers
    df["error"] = df["error"].fillna("")
    df["origin"] = df["origin"].fillna("")
    df["config"] = [chart_style.config_summary(by_id[i]["config"], by_id[i].get("summary"), by_id[i].get("plan"))
                    for i in df["id"]]
    return df


def filters(store: Store) -> tuple[str, list]:
    """Filter multiselects in a popover above the table (the table keeps the
    page's full width); an empty one means 'all'. Options and filtering are SQL
    (engine.store.filter_sql): no run is read to offer them. Returns (where, params)."""
    active = sum(bool(st.session_state.get(f"filter_{col}")) for col, _ in FILTERS)
    box = st.popover(f"Filter runs ({active} active)" if active else "Filter runs", icon=":material/filter_list:")
    picked = {}
    for col, label in FILTERS:
        picked[col] = box.multiselect(label, store.distinct_values(col), key=f"filter_{col}", placeholder="all")
    return filter_sql(picked)


def pager(matching: int) -> int:
    """The page of PAGE_ROWS rows to show (1-based), picked beside the filters."""
    pages = max(1, math.ceil(matching / PAGE_ROWS))
    if st.session_state.get("runs_page", 1) > pages:  # fewer matches than before (a filter, a delete)
        st.session_state["runs_page"] = pages
    if pages == 1:
        return 1
    return int(st.number_input("Page", 1, pages, key="runs_page", width=110,
                               help=f"{PAGE_ROWS} runs a page, newest first; {pages:,} pages match"))


def column_chooser() -> list[str]:
    """The key columns plus those picked under 'More columns'."""
    more = st.pills("More columns", MORE_COLUMNS, selection_mode="multi", key="runs_columns",
                    format_func=lambda c: TABLE_COLUMNS[c]["label"])
    return [*KEY_COLUMNS, *(c for c in MORE_COLUMNS if c in (more or []))]


def main() -> None:
    st.markdown("### SpeedLab · Runs")
    flash = st.session_state.pop("runs_flash", None)
    if flash:
        st.success(flash, icon=":material/delete:")
    moved = old_store_line()  # the dashboard's working folder holds a store at the old default
    if moved:
        st.info(md(moved), icon=":material/folder_open:")
    with Store() as store:
        runner.reconcile(store)
        damaged = store.damaged_runs()
        stored = store.count_runs() - len(damaged)
        active_demo = _demo_active()
        if damaged:  # listed apart: a row that cannot be read whole breaks no table
            st.warning(f"{len(damaged)} damaged run row{'s' if len(damaged) != 1 else ''} (from an older or broken "
                       "SpeedLab, or edited by hand) cannot be shown: "
                       + "; ".join(f"#{d['id']}: {d['reason']}" for d in damaged[:5])
                       + ". Delete them below.", icon=":material/report:")
        if not stored:
            forget_deleted({d["id"]: d for d in damaged})
            st.info("No runs yet: open **Train**, set options on the left and press **Launch**. "
                    "Every run is kept here.", icon=":material/info:")
            st.fragment(transfer_section, run_every=DEMO_REFRESH_S if active_demo else None)(active_demo)
            with one_line_errors("Run bundles"):
                bundle_section(store, {})
            if damaged:
                with one_line_errors("Delete"):
                    delete_section(store, {}, damaged)
            with one_line_errors("Trash"):
                trash_section(store)
            return
        # Runs cancelled before they started (Stop during a comparison) have no data: hidden, as
        # docs/comparisons.md says; they stay in the store.
        unstarted = store.count_runs(UNSTARTED)
        row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
        with row:
            where, params = filters(store)
            # Counted as all matches less the unstarted ones: two index-only counts when unfiltered.
            matching = (store.count_runs(where, params)
                        - store.count_runs(f"({where}) AND {UNSTARTED}" if where else UNSTARTED, params))
            where = f"({where}) AND NOT ({UNSTARTED})" if where else f"NOT ({UNSTARTED})"
            page = pager(matching)
            shown = column_chooser()
        # One page of rows, read and drawn: a 100,000-run store costs what a 50-run one does
        # (and stays far below Streamlit's 262,144-cell limit of a styled table).
        runs = store.query_runs(where, params, limit=PAGE_ROWS, offset=(page - 1) * PAGE_ROWS)
        by_id = {r["id"]: r for r in runs}
        forget_deleted(by_id | {d["id"]: d for d in damaged})
        frame = runs_frame(store, runs)  # MFU restated against one peak per dtype (mfu_caption says which)
        view = table(runs, frame)
        first, listed = (page - 1) * PAGE_ROWS + 1, stored - unstarted
        rows_text = f"{first:,}-{first + len(view) - 1:,}" if matching > len(view) else f"{len(view):,}"
        of_text = f"{matching:,} matching, of {listed:,} runs" if matching != listed else f"{listed:,} runs"
        st.caption(f"{rows_text} of {of_text} · throughput = steady-state median samples/s "
                   "(warm-up excluded)" + (f" · {unstarted:,} cancelled before they started, not listed"
                                           if unstarted else ""))
        if mfu_caption(frame):
            st.caption(mfu_caption(frame))
        # Shown through the CLI's formatter (blank when missing, not "None"); sorting uses the numbers.
        shown_view = view.style.format({col: (lambda v, d=d: number(v, d)) for col, (_, d) in FIGURES.items()},
                                       na_rep="")
        st.dataframe(shown_view, hide_index=True, column_config=TABLE_COLUMNS, column_order=shown,
                     placeholder="", key="runs_table")
        if view.empty:
            st.caption("No run matches the filters on the left.")
        else:
            with one_line_errors("Comparisons"):
                comparisons_section(store)
            for title, section in (("Overlay", overlay_section), ("Speedup", speedup_section)):
                with one_line_errors(title):
                    section(store, by_id, view)
        # All stored runs (not the filtered table): the demo's runs are found by their group.
        st.fragment(transfer_section, run_every=DEMO_REFRESH_S if active_demo else None)(active_demo)
        if not view.empty:
            with one_line_errors("Download"):
                export_section(store, by_id, view)
        with one_line_errors("Run bundles"):
            bundle_section(store, by_id)
        with one_line_errors("Delete"):
            delete_section(store, by_id, damaged)
        with one_line_errors("Trash"):
            trash_section(store)


if __name__ == "__main__":
    main()
