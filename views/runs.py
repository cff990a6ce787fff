"""Runs: every stored run in one table with filters; overlay any runs' curves,
see speedups against any baseline and scaling with device count, download
CSVs, delete runs.

UI only: the table comes from engine.report.table.runs_frame, speedups from
engine.report.compare, figures from engine.report.runs_charts. No TensorFlow in this process.
"""
from __future__ import annotations

import io

import pandas as pd
import streamlit as st

from engine import bundle
from engine.jobs import background
from engine.report import chart_style, runs_charts, train_charts
from engine.jobs import runner
from engine.jobs import demo
from engine.report import forecast, mfu_charts
from engine.report.table import FIGURES, number, runs_frame
from engine.report.compare import compare, live_summary, progress
from engine.store import ACTIVE_STATUSES, FINAL_STATUSES, Store
from views.common import one_line_errors

PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
DEMO_REFRESH_S = 2.0  # the transfer section re-reads the store this often while the demo runs
DEMO_COMMAND = "python -m engine demo-transfer"
FILTERS = (("status", "Status"), ("dataset", "Data set"), ("model", "Model"),
           ("precision", "Precision"), ("devices", "Devices"), ("role", "Role"))
# The speedup bars' three kinds (engine.report.compare.compare keys).
SPEEDUP_KINDS = {"time to accuracy": "time_to_accuracy_speedup", "end-to-end": "end_to_end_speedup",
                 "steady": "steady_speedup"}
FIGURE_HELP = {"samples_per_sec": "median samples/s after the warm-up",
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
                                         help="model FLOPs utilization: steady samples/s × training FLOPs per "
                                              "sample ÷ the peak of the run's compute dtype (python -m engine show ID "
                                              "names which peak)"),
    "bound_by": st.column_config.TextColumn("bound by", width="medium",
                                            help="what limits the run, with the figures that decided it; "
                                                 "python -m engine show ID adds the next lever"),
    "created": st.column_config.TextColumn("created"),
    "origin": st.column_config.TextColumn("origin", help="imported from a run bundle: the host it ran on"),
    "error": st.column_config.TextColumn("error"),
}
# Shown without scrolling at 1280 px; the others are one click away (column chooser).
KEY_COLUMNS = ("id", "status", "role", "config", "samples_per_sec", "mfu", "bound_by", "wall_sec", "val_accuracy",
               "time_to_target_sec")
MORE_COLUMNS = ("end_to_end_samples_per_sec", "setup_sec", "warmup_sec", "validation_sec", "other_sec", "created",
                "origin", "error")


def table(runs: list[dict], df: pd.DataFrame) -> pd.DataFrame:
    """engine.report.table.runs_frame plus a one-line configuration summary."""
    by_id = {r["id"]: r for r in runs}
    df = df.copy()
    for col in FIGURES:
        df[col] = pd.to_numeric(df[col], errors="coerce")  # numbers, so that columns sort as numbers
    df["error"] = df["error"].fillna("")
    df["origin"] = df["origin"].fillna("")
    df["config"] = [chart_style.config_summary(by_id[i]["config"], by_id[i].get("summary"))
                    for i in df["id"]]
    return df


def filters(df: pd.DataFrame) -> pd.DataFrame:
    """Filter multiselects in a popover above the table (the table keeps the
    page's full width); an empty one means 'all'."""
    active = sum(bool(st.session_state.get(f"filter_{col}")) for col, _ in FILTERS)
    box = st.popover(f"Filter runs ({active} active)" if active else "Filter runs", icon=":material/filter_list:")
    view = df
    for col, label in FILTERS:
        options = sorted(df[col].dropna().unique().tolist(), key=str)
        picked = box.multiselect(label, options, key=f"filter_{col}", placeholder="all")
        if picked:
            view = view[view[col].isin(picked)]
    return view


def column_chooser() -> list[str]:
    """The key columns plus those picked under 'More columns'."""
    more = st.pills("More columns", MORE_COLUMNS, selection_mode="multi", key="runs_columns",
                    format_func=lambda c: TABLE_COLUMNS[c]["label"])
    return [*KEY_COLUMNS, *(c for c in MORE_COLUMNS if c in (more or []))]


def _label(by_id: dict, rid: int) -> str:
    r = by_id[rid]
    return f"{chart_style.run_label(r)} · {r['status']}"


def _chief(df: pd.DataFrame) -> pd.DataFrame:
    """System samples of the first process only: a multi-worker run samples every
    worker, and their lines would interleave."""
    return df[df["worker"].fillna(0) == 0] if "worker" in df.columns else df


def _frames(store: Store, runs: list[dict], table_name: str) -> pd.DataFrame | None:
    parts = [chart_style.tag(_chief(store.frame(table_name, r["id"])), chart_style.run_label(r),
                        chart_style.run_color(r["id"], r["role"]), r["id"]) for r in runs]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else None


def overlay_section(store: Store, by_id: dict, view: pd.DataFrame) -> None:
    """Loss and throughput curves of any picked runs, overlaid."""
    st.markdown("### Overlay runs")
    ids = view["id"].tolist()
    newest_group = by_id[ids[0]]["group_id"] if ids else None
    default = [i for i in ids if by_id[i]["group_id"] == newest_group][:6] or ids[:2]
    picked = st.multiselect("Runs to overlay", ids, default=default, key="overlay",
                            format_func=lambda i: _label(by_id, i))
    if not picked:
        st.caption("Pick runs above to overlay their loss and throughput curves.")
        return
    runs = [by_id[i] for i in sorted(picked)]
    x = st.segmented_control("Loss against", ["wall time (s)", "step"], default="wall time (s)",
                             key="overlay_x", required=True)
    execs, epochs = _frames(store, runs, "executions"), _frames(store, runs, "epochs")
    medians = {chart_style.run_label(r): live_summary(store, r).get("samples_per_sec") for r in runs}
    c1, c2 = st.columns(2, gap="medium")
    c1.plotly_chart(train_charts.throughput_figure(execs, medians), key="overlay_throughput",
                    config=PLOTLY_CONFIG)
    c2.plotly_chart(train_charts.loss_figure(execs, epochs, x="step" if x == "step" else "t"),
                    key="overlay_loss", config=PLOTLY_CONFIG)


def comparisons_section(store: Store) -> None:
    """Stored comparisons of interleaved pairs (engine.jobs.comparison), newest first:
    the same headline, interval and verdict as the Train page and `engine compare`."""
    from engine import store_comparisons as cstore
    from engine.report import stats

    comps = [c for c in cstore.list_all(store) if c.get("result")]
    if not comps:
        return
    st.markdown("### Comparisons")
    rows = []
    for c in comps:
        r = c["result"]
        h = stats.comparison_headline(r, in_progress=c["status"] == "running")
        rows.append({"comparison": c["id"], "kind": "A/A (noise floor)" if c["kind"] == "aa" else "baseline vs run",
                     "measured": pd.Timestamp(c["created"], unit="s").strftime("%Y-%m-%d %H:%M"),
                     "headline": h["text"], "verdict": r.get("verdict") or "–", "measure": h["measure"],
                     "pairs": r.get("pairs"), "ended by": c.get("ended_by") or c["status"],
                     "runs": ", ".join(f"#{i}" for i in r.get("baseline_ids", []) + r.get("run_ids", []))})
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="comparisons_table")
    st.caption("Geometric mean of the pair ratios, 95% interval, verdict: 'faster' or 'slower' only when the "
               "interval excludes 1 (docs/comparisons.md).")


def _replicas(run: dict) -> int:
    """All replicas of a run: devices per worker x worker processes."""
    return run["config"]["devices"] * run["config"].get("workers", 1)


def _scaling_point(store: Store, run: dict) -> dict:
    """Scaling-chart columns of a run: replicas, simulated devices, worker
    processes, whether they all ran on one host, and the layout label
    ('2 workers × 1 device (one host)')."""
    workers = int(run["config"].get("workers", 1))
    hosts = len({w["host"] for w in store.workers(run["id"]) if w.get("host")}) if workers > 1 else None
    summary = run.get("summary") or {}
    return {"devices": _replicas(run), "simulated": summary.get("replicas_simulated"),
            "workers": workers, "one_host": hosts == 1,
            "layout": runs_charts.replica_layout(run["config"], summary, hosts or None)}


def speedup_section(store: Store, by_id: dict, view: pd.DataFrame) -> None:
    """Every other finished run's speedup over a picked baseline, and scaling."""
    st.markdown("### Speedup and scaling")
    done = view[(view["status"] == "completed") & view["samples_per_sec"].notna()]
    if len(done) < 2:
        st.caption("Speedups need at least two completed runs in the table (a baseline and a run).")
        return
    ids = done["id"].tolist()
    baselines = [i for i in ids if by_id[i]["role"] == "baseline"]
    base_id = st.selectbox("Baseline", ids, index=ids.index(baselines[0]) if baselines else 0,
                           key="speedup_baseline", format_func=lambda i: _label(by_id, i))
    base = by_id[base_id]
    kind = st.segmented_control("Speedup", list(SPEEDUP_KINDS), default="time to accuracy", key="speedup_kind",
                                help="time to accuracy: seconds to the target validation accuracy; end-to-end: "
                                     "samples per second of wall time while training; steady: median "
                                     "samples/s per execution after warm-up") or "time to accuracy"
    # A baseline that missed its own target has no time to accuracy: no bar, as for any run.
    base_missing = compare(store, base_id, base_id)["time_to_accuracy_note"] if kind == "time to accuracy" else None
    rows = [{"label": chart_style.run_label(base), "color": chart_style.BASELINE_COLOR,
             "speedup": None if base_missing else 1.0, "steady": 1.0,
             **_scaling_point(store, base), "note": "baseline", "missing": base_missing}]
    for rid in sorted(i for i in ids if i != base_id):
        r = by_id[rid]
        c = compare(store, base_id, rid)
        rows.append({"label": chart_style.run_label(r), "color": chart_style.run_color(rid, r["role"]),
                     "speedup": c[SPEEDUP_KINDS[kind]], "steady": c["steady_speedup"], **_scaling_point(store, r),
                     "note": "; ".join(c["caveats"]) or "like for like",
                     "missing": c["time_to_accuracy_note"] or (c["baseline_time_to_accuracy_note"] and
                                                               f"baseline {c['baseline_time_to_accuracy_note']}")})
    bars = pd.DataFrame(rows)
    c1, c2 = st.columns([1.2, 1], gap="medium")
    c1.plotly_chart(runs_charts.speedup_figure(bars, title=f"{kind.capitalize()} speedup vs {chart_style.run_label(base)}",
                                          x_title=f"speedup (×, {kind})"),
                    key="speedup_bars", config=PLOTLY_CONFIG)
    if kind == "time to accuracy" and bars["speedup"].isna().any():
        c1.caption("No bar: " + "; ".join(f"{row.label}: {row.missing or 'not reached'}"
                                          for row in bars.itertuples() if pd.isna(row.speedup)))
    # Scaling is a property of the steps: it always uses the steady speedup, and says so.
    fc = forecast.forecast(base, [by_id[i] for i in ids])  # what-if from the baseline's split
    c2.plotly_chart(mfu_charts.add_forecast(runs_charts.scaling_figure(bars.assign(speedup=bars["steady"].fillna(
        bars["speedup"])), y_title="steady speedup vs baseline (×)"), fc), key="scaling", config=PLOTLY_CONFIG)
    if fc:
        c2.caption(forecast.caption(fc))
    c2.caption("Always the **steady** speedup, whichever is picked on the left: scaling is a property "
               "of the steps. Replicas = devices per worker × worker processes. Ideal: speedup = replicas. Black "
               "diamonds: a well-tuned data-parallel setup (2 replicas 2.0x, 4 replicas 3.8x, 8 replicas "
               "7.3x). Circles: devices in one process; squares: several worker processes. Open "
               "markers share hardware: simulated logical devices carved out of one physical device, "
               "or workers on one host sharing its cores, so expect no speedup from them.")
    unlike = bars[~bars["note"].isin(["baseline", "like for like"])]
    if len(unlike):
        c1.caption(f":material/warning: {len(unlike)} run(s) are not like with like "
                   "(different data, model or batch): hover a bar for why.")


def export_section(store: Store, by_id: dict, view: pd.DataFrame) -> None:
    """CSV downloads: the (filtered) table and any run's metrics."""
    st.markdown("### Download")
    c1, c2, c3, c4, c5 = st.columns([1.3, 2, 1, 1, 1], vertical_alignment="bottom")
    c1.download_button("Table (CSV)", view.to_csv(index=False), "speedlab_runs.csv", "text/csv",
                       icon=":material/download:", key="dl_table")
    ids = view["id"].tolist()
    rid = c2.selectbox("Run metrics", ids, key="export_run", format_func=lambda i: _label(by_id, i))
    if rid is None:
        return
    for col, name in ((c3, "executions"), (c4, "epochs"), (c5, "system")):
        col.download_button(f"{name} (CSV)", store.frame(name, rid).to_csv(index=False),
                            f"speedlab_run{rid}_{name}.csv", "text/csv", key=f"dl_{name}",
                            icon=":material/download:")


def bundle_section(store: Store, by_id: dict) -> None:
    """Run bundles: export finished runs to a .zip (as `python -m engine export`)
    and import one from another machine (as `python -m engine import`); every
    refusal is the engine's one line and changes nothing."""
    st.markdown("### Run bundles")
    flash = st.session_state.pop("bundle_flash", None)
    if flash:
        st.success(flash, icon=":material/check_circle:")
    c1, c2 = st.columns(2, gap="large")
    done = [i for i, r in by_id.items() if r["status"] in FINAL_STATUSES]
    with c1:
        picked = st.multiselect("Runs to export", done, key="bundle_ids", format_func=lambda i: _label(by_id, i),
                                placeholder="pick finished runs",
                                help="Config, environment (host, devices, versions), summary and every "
                                     "metric row, in one .zip for another machine's store")
        if picked:
            buf = io.BytesIO()
            bundle.export_runs(store, picked, buf)
            name = "speedlab_runs_" + "_".join(str(i) for i in sorted(picked))[:60] + ".zip"
            st.download_button(f"Export {len(picked)} run{'s' if len(picked) > 1 else ''} (.zip)",
                               buf.getvalue(), name, "application/zip", icon=":material/archive:",
                               key="bundle_download")
    with c2:
        n = st.session_state.get("_bundle_n", 0)  # a new key empties the uploader after an import
        file = st.file_uploader("Import a bundle (.zip from python -m engine export)", type=["zip"],
                                key=f"bundle_file_{n}")
        if st.button("Import", icon=":material/unarchive:", key="bundle_import", disabled=file is None):
            try:
                pairs = bundle.import_bundle(store, io.BytesIO(file.getvalue()), file.name)
            except bundle.BundleError as e:
                st.error(str(e), icon=":material/block:")
                return
            hosts = {bundle.provenance(store.get_run(new)) for _, new in pairs}
            st.session_state["bundle_flash"] = (
                f"Imported {len(pairs)} run(s) as {', '.join(f'#{new}' for _, new in pairs)}: "
                + "; ".join(sorted(h for h in hosts if h)) + ". Replay them on the Replay page.")
            st.session_state["_bundle_n"] = n + 1
            st.rerun()


def _ids(ids) -> str:
    return ", ".join(f"#{i}" for i in ids)


def delete_section(store: Store, by_id: dict, damaged: list[dict] | None = None) -> None:
    """Move runs to the trash (restorable below); active runs are refused. Damaged rows
    (engine.store.damaged_runs) are offered too. No "Select all" in the picker: one slip
    must not take every run; the confirmation names how many runs and which."""
    st.markdown("### Delete runs")
    damaged = damaged or []
    labels = {**{i: _label(by_id, i) for i in by_id},
              **{d["id"]: f"#{d['id']} · damaged: {d['reason']}" for d in damaged}}
    options = sorted(labels, reverse=True)
    c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
    # A changed pick unticks the confirmation: it must name the runs that will move.
    picked = c1.multiselect("Runs to delete", options, key="delete_ids", format_func=lambda i: labels[i],
                            select_all=False, placeholder="pick runs (they go to the trash)",
                            on_change=lambda: st.session_state.update(delete_sure=False))
    c2.button(f"Pick all {len(options)}", key="delete_pick_all", disabled=not options,
              help="Put every listed run in the picker (you still confirm below)",
              on_click=lambda: st.session_state.update(delete_ids=options, delete_sure=False))
    picked = [i for i in picked if i in labels]
    n = len(picked)
    sure = st.checkbox(f"Move {n} run{'s' if n != 1 else ''} to the trash: {_ids(sorted(picked))}" if picked
                       else "Move the picked runs to the trash", key="delete_sure")
    if st.button("Delete", icon=":material/delete:", key="delete", disabled=not picked or not sure):
        busy = [i for i in picked if i in by_id and by_id[i]["status"] in ACTIVE_STATUSES]
        if busy:
            st.error(f"Run(s) {_ids(busy)} are still active: stop them on the Train page first. "
                     "Nothing was deleted.")
            return
        moved = store.trash_runs(picked)
        st.session_state["runs_flash"] = (f"Moved {len(moved)} run{'s' if len(moved) != 1 else ''} to the trash: "
                                          f"{_ids(moved)}. Restore them under Trash below.")
        st.session_state["runs_deleted"] = True  # forget_deleted() mends the pickers on the rerun
        st.rerun()


def trash_section(store: Store) -> None:
    """Trashed runs: restore any, or empty the trash (confirmed, naming how many and which).
    Runs older than the retention ($SPEEDLAB_TRASH_DAYS, default 30) are emptied on their own."""
    import time

    from engine.store import trash_retention_s

    store.purge_expired()
    runs = store.trashed_runs()
    days = trash_retention_s() / 86400
    with st.expander(f"Trash ({len(runs)} run{'s' if len(runs) != 1 else ''})", icon=":material/delete:",
                     expanded=bool(st.session_state.get("trash_open"))):
        if not runs:
            st.caption(f"The trash is empty. Deleted runs stay here {days:g} days before they are removed "
                       "for good (python -m engine trash lists them).")
            return
        labels = {}
        for r in runs:
            cfg = r["config"] or {}
            what = (f"{cfg.get('dataset')} · {cfg.get('model')} · {cfg.get('precision')}" if r["config"]
                    else f"damaged: {r['reason']}")
            left = max(0.0, (r["trashed"] + trash_retention_s() - time.time()) / 86400)
            labels[r["id"]] = f"#{r['id']} · {what} · {r['status']} · removed for good in {left:.1f} days"
        c1, c2 = st.columns([4, 1], vertical_alignment="bottom")
        picked = c1.multiselect("Runs to restore", list(labels), key="restore_ids", select_all=False,
                                format_func=lambda i: labels[i], placeholder="pick runs to bring back")
        # Callbacks: they run before the widgets they reset are drawn again.
        c2.button("Restore", icon=":material/restore_from_trash:", key="restore", disabled=not picked,
                  on_click=_restore_picked)
        ids = sorted(labels)
        sure = st.checkbox(f"Delete {len(ids)} run{'s' if len(ids) != 1 else ''} for good: {_ids(ids)}",
                           key="empty_sure")
        st.button("Empty the trash", icon=":material/delete_forever:", key="empty_trash", disabled=not sure,
                  on_click=_empty_trash)


def _restore_picked() -> None:
    store = Store()
    try:
        done = store.restore_runs(st.session_state.get("restore_ids") or [])
    finally:
        store.close()
    st.session_state.update(runs_flash=f"Restored {len(done)} run{'s' if len(done) != 1 else ''}: {_ids(done)}.",
                            restore_ids=[], trash_open=True)


def _empty_trash() -> None:
    store = Store()
    try:
        gone = store.empty_trash()
    finally:
        store.close()
    st.session_state.update(runs_flash=f"Deleted {len(gone)} run{'s' if len(gone) != 1 else ''} for good.",
                            empty_sure=False)


MULTI_PICKERS = ("delete_ids", "overlay", "bundle_ids")
SINGLE_PICKERS = ("speedup_baseline", "export_run")


def forget_deleted(by_id: dict) -> None:
    """After a delete, before any widget is drawn: drop deleted runs from every picker and
    untick "I am sure". Values are set, not popped: a popped key falls back to the widget's
    default on the server while the browser keeps showing the old choice (seen: the overlay
    still listed a deleted run and drew another, the export button vanished with two runs
    still picked, "I am sure" stayed ticked)."""
    if not st.session_state.pop("runs_deleted", False):
        return
    state = st.session_state
    for key in MULTI_PICKERS:
        if key in state:
            state[key] = [i for i in state[key] if i in by_id] if key != "delete_ids" else []
    for key in SINGLE_PICKERS:
        if key in state and state[key] not in by_id:
            done = [i for i, r in by_id.items() if r["status"] == "completed"]
            pick = ([i for i in done if by_id[i]["role"] == "baseline"] + done if key == "speedup_baseline"
                    else list(by_id))
            if pick:
                state[key] = pick[0]  # the newest run (baseline): what the picker shows first
            else:
                del state[key]
    state["delete_sure"] = False


def _demo_active() -> bool:
    job = demo.read_demo_progress()
    return bool(job) and job["state"] in background.ACTIVE_STATES


def transfer_section(was_active: bool) -> None:
    """Body of the transfer fragment: the digits demo's fine-tuned and from-scratch
    runs as two validation-accuracy curves with their time to target, or how to
    run the demo. Re-reads the store every DEMO_REFRESH_S while the demo runs."""
    with one_line_errors("Transfer learning"):
        store = Store()
        try:
            active = _demo_active()
            if active != was_active:  # started or ended: switch the refresh on or off
                st.rerun()
            st.markdown("### Transfer learning")
            pairs = demo.demo_pairs(store)
            if not pairs and not active:
                st.info(f"No transfer demo yet. Run `{DEMO_COMMAND}` (about a minute on 2 CPU cores) or "
                        "press **Run the transfer demo**: it pretrains a CNN on digits 0-4, then trains "
                        "digits 5-9 fine-tuned from it and from scratch, and draws both here with their "
                        "time to 0.95 validation accuracy.", icon=":material/school:")
            demo_controls(store, active)
            if pairs:
                transfer_pair(store, pairs)
        finally:
            store.close()


def demo_controls(store: Store, active: bool) -> None:
    """'Run the transfer demo' (detached, refused while anything else measures),
    its progress while it runs, and its outcome."""
    job = demo.read_demo_progress()
    if active:
        run = runner.active_run(store)
        now = "between runs"
        if run:
            p = progress(store, run["id"]) or {}
            c = run["config"]
            what = ("pretraining on digits " + ",".join(map(str, c.get("label_subset") or ()))
                    if c.get("save_model") else "fine-tuning from run #" + str(c["init_from"])
                    if c.get("init_from") is not None else "training from scratch")
            now = (f"run #{run['id']} {what}: {run['status']}"
                   + (f", epoch {p['epoch']}/{p['epochs']}" if p.get("epoch") else ""))
        c1, c2 = st.columns([5, 1], vertical_alignment="center")
        c1.progress(min(job.get("elapsed", 0) / 90.0, 0.95),
                    text=f":material/school: Transfer demo running · {job.get('elapsed', 0):.0f} s · {now}")
        if c2.button("Stop the demo", icon=":material/stop:", key="demo_stop"):
            demo.cancel_demo_background()
            st.rerun()
        return
    row = st.container(horizontal=True, vertical_alignment="center", gap="medium")
    clicked = row.button("Run the transfer demo", icon=":material/play_arrow:", key="demo_start",
                         help=f"Runs `{DEMO_COMMAND}` in the background (about a minute on 2 CPU cores): "
                              "three runs, one after another; you can leave this page meanwhile")
    row.caption("Digits 0-4 pretraining (model saved), then digits 5-9 fine-tuned from it (1 frozen epoch, "
                "then 10x lower learning rate) and from scratch, both to 0.95 validation accuracy.",
                width="stretch")
    if clicked:
        try:
            demo.start_demo_background()
            st.rerun()
        except demo.TransferError as e:
            st.warning(str(e), icon=":material/hourglass_top:")
        return
    if job and job["state"] == "failed":
        st.error(f"The last transfer demo failed: {job.get('error') or 'no message'}", icon=":material/error:")
    elif job and job["state"] == "cancelled":
        st.caption(":material/stop_circle: The last transfer demo was stopped; its finished runs are kept.")


def transfer_pair(store: Store, pairs: list[tuple[int, int]]) -> None:
    """One demo pair (the newest unless picked): curves, times to target, speedup."""
    if len(pairs) > 1:
        fid, sid = st.selectbox("Demo pair", pairs, key="transfer_pair",
                                format_func=lambda p: f"run #{p[0]} fine-tuned vs run #{p[1]} from scratch")
    else:
        fid, sid = pairs[0]
    c = demo.comparison(store, fid, sid)
    runs = {rid: store.get_run(rid) for rid in (fid, sid)}
    frames, reached = [], {}
    for curve, key in zip(c["curves"], ("finetune", "scratch")):
        rid = curve["run_id"]
        run = runs[rid] or {"id": rid, "role": "run"}
        label = curve["label"]
        df = pd.DataFrame({"t": curve["t"], "val_accuracy": curve["val_accuracy"],
                           "epoch": range(len(curve["t"]))})
        frames.append(chart_style.tag(df, label, chart_style.run_color(rid, run.get("role", "run")), rid))
        reached[label] = c.get(f"{key}_time_to_target_sec")
    target = c.get("target_accuracy")
    cfg = (runs[fid] or {}).get("config") or {}
    data = cfg.get("dataset", "?") + (" " + ",".join(map(str, cfg["label_subset"])) if cfg.get("label_subset") else "")
    left, right = st.columns([2.4, 1], gap="medium")
    left.plotly_chart(runs_charts.transfer_figure(pd.concat(frames, ignore_index=True), target, reached,
                                             title=f"{data}: fine-tuned vs from scratch"),
                      key="transfer_curves", config=PLOTLY_CONFIG)
    with right:
        st.markdown(f"**Time to {target:g} validation accuracy**" if target else "**Time to target**")
        fmt = lambda v: f"{v:.2f} s" if v is not None else "not reached"  # noqa: E731
        for key, name in (("finetune", "Fine-tuned"), ("scratch", "From scratch")):
            rid = c[f"{key}_id"]
            acc = c.get(f"{key}_final_val_accuracy")
            status = c.get(f"{key}_status")
            ttt = c.get(f"{key}_time_to_target_sec")
            value = "—" if ttt is None and status in ACTIVE_STATUSES else fmt(ttt)
            st.metric(f"{name} (run #{rid})", value, border=True,
                      delta=f"final val accuracy {acc:.3f}" if acc is not None else None, delta_color="off",
                      delta_arrow="off")
            if status != "completed":
                st.caption(f"run #{rid} is {status}")
        x = c.get("speedup")
        if x:
            who, k = ("Fine-tuning", x) if x >= 1 else ("Training from scratch", 1 / x)
            st.markdown(f"**{who} reached {target:g} {k:.2f}× sooner.**")
        st.caption(f"Fine-tuned from run #{cfg.get('init_from')}: {cfg.get('freeze_epochs')} frozen epoch(s), "
                   f"then {cfg.get('finetune_lr_factor', 0.1):g}× the learning rate. Times from the start of "
                   "training, warm-up and recompilation included.")


def main() -> None:
    st.markdown("### SpeedLab · Runs")
    flash = st.session_state.pop("runs_flash", None)
    if flash:
        st.success(flash, icon=":material/delete:")
    store = Store()
    try:
        runner.reconcile(store)
        runs = store.list_runs()
        damaged = store.damaged_runs()
        active_demo = _demo_active()
        forget_deleted({r["id"]: r for r in runs} | {d["id"]: d for d in damaged})
        if damaged:  # listed apart: a row that cannot be read whole breaks no table
            st.warning(f"{len(damaged)} damaged run row{'s' if len(damaged) != 1 else ''} (from an older or broken "
                       "SpeedLab, or edited by hand) cannot be shown: "
                       + "; ".join(f"#{d['id']}: {d['reason']}" for d in damaged[:5])
                       + ". Delete them below.", icon=":material/report:")
        if not runs:
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
        by_id = {r["id"]: r for r in runs}
        df = table(runs, runs_frame(store))
        row = st.container(horizontal=True, vertical_alignment="bottom", gap="medium")
        with row:
            view = filters(df)
            shown = column_chooser()
        st.caption(f"{len(view)} of {len(df)} runs · throughput = steady-state median samples/s "
                   "(warm-up excluded)")
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
    finally:
        store.close()


if __name__ == "__main__":
    main()
