"""Runs page, the runs as files: CSV export, run bundles (export and import),
delete, and the trash (restore, empty).
"""
from __future__ import annotations

import io

import pandas as pd
import streamlit as st

from engine import bundle
from engine.base import csv_safe, plain
from engine.charts import style as chart_style
from engine.store import ACTIVE_STATUSES, FINAL_STATUSES, Store
from views.components.common import started
from views.runs.compare import pick_label

MULTI_PICKERS = ("delete_ids", "overlay", "bundle_ids")
SINGLE_PICKERS = ("speedup_baseline", "export_run")


METRIC_TABLES = ("executions", "epochs", "system")


def csv_downloads(store: Store, view: pd.DataFrame, rid: int | None) -> dict[str, str]:
    """Every CSV this page offers, by file name: the (filtered) table and run `rid`'s
    metric tables, each written by engine.base.csv_safe.to_csv (no cell can start a
    spreadsheet formula; numbers stay numbers)."""
    out = {"speedlab_runs.csv": csv_safe.to_csv(view)}
    if rid is not None:
        out.update({f"speedlab_run{rid}_{name}.csv": csv_safe.to_csv(store.frame(name, rid))
                    for name in METRIC_TABLES})
    return out


def export_section(store: Store, by_id: dict, view: pd.DataFrame) -> None:
    """CSV downloads: the (filtered) table and any run's metrics."""
    st.markdown("### Download")
    c1, c2, c3, c4, c5 = st.columns([1.3, 2, 1, 1, 1], vertical_alignment="bottom")
    ids = view["id"].tolist()
    first = next((ids.index(i) for i in ids if started(by_id[i])), None)  # a queued run has no metrics
    rid = c2.selectbox("Run metrics", ids, index=first, key="export_run", placeholder="no run has started",
                       format_func=lambda i: pick_label(by_id, i))
    files = csv_downloads(store, view, rid)
    # A page of rows (a 100,000-run store costs a page here): the label says so, the CLI gives all.
    c1.download_button(f"This page's {len(view)} runs (CSV)", files["speedlab_runs.csv"], "speedlab_runs.csv",
                       "text/csv", icon=":material/download:", key="dl_table",
                       help="the rows shown, every column; every run that matches: python -m engine runs --json "
                            "--limit 0 (with the same filters as flags)")
    if rid is None:
        return
    for col, name in zip((c3, c4, c5), METRIC_TABLES):
        file = f"speedlab_run{rid}_{name}.csv"
        col.download_button(f"{name} (CSV)", files[file], file, "text/csv", key=f"dl_{name}",
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
        picked = st.multiselect("Runs to export", done, key="bundle_ids", format_func=lambda i: pick_label(by_id, i),
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
                st.error(plain.md(e), icon=":material/block:")  # names the file: untrusted text
                return
            hosts = {bundle.provenance(store.get_run(new)) for _, new in pairs}
            st.session_state["bundle_flash"] = (
                f"Imported {len(pairs)} run(s) as {', '.join(f'#{new}' for _, new in pairs)}: "
                + plain.md("; ".join(sorted(h for h in hosts if h))) + ". Replay them on the Replay page.")
            st.session_state["_bundle_n"] = n + 1
            st.rerun()


def id_list(ids) -> str:
    return ", ".join(f"#{i}" for i in ids)


def delete_section(store: Store, by_id: dict, damaged: list[dict] | None = None) -> None:
    """Move runs to the trash (restorable below); active runs are refused. Damaged rows
    (engine.store.damaged_runs) are offered too. No "Select all" in the picker: one slip
    must not take every run; the confirmation names how many runs and which."""
    st.markdown("### Delete runs")
    damaged = damaged or []
    labels = {**{i: pick_label(by_id, i) for i in by_id},
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
    sure = st.checkbox(f"Move {n} run{'s' if n != 1 else ''} to the trash: {id_list(sorted(picked))}" if picked
                       else "Move the picked runs to the trash", key="delete_sure")
    if st.button("Delete", icon=":material/delete:", key="delete", disabled=not picked or not sure):
        busy = [i for i in picked if i in by_id and by_id[i]["status"] in ACTIVE_STATUSES]
        if busy:
            st.error(f"Run(s) {id_list(busy)} are still active: stop them on the Train page first. "
                     "Nothing was deleted.")
            return
        moved = store.trash_runs(picked)
        st.session_state["runs_flash"] = (f"Moved {len(moved)} run{'s' if len(moved) != 1 else ''} to the trash: "
                                          f"{id_list(moved)}. Restore them under Trash below.")
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
            what = (f"{cfg.get('dataset')} · {chart_style.model_name(cfg.get('model'))} · {cfg.get('precision')}"
                    if r["config"]
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
        sure = st.checkbox(f"Delete {len(ids)} run{'s' if len(ids) != 1 else ''} for good: {id_list(ids)}",
                           key="empty_sure")
        st.button("Empty the trash", icon=":material/delete_forever:", key="empty_trash", disabled=not sure,
                  on_click=_empty_trash)


def _restore_picked() -> None:
    with Store() as store:
        done = store.restore_runs(st.session_state.get("restore_ids") or [])
    st.session_state.update(runs_flash=f"Restored {len(done)} run{'s' if len(done) != 1 else ''}: {id_list(done)}.",
                            restore_ids=[], trash_open=True)


def _empty_trash() -> None:
    with Store() as store:
        gone = store.empty_trash()
    st.session_state.update(runs_flash=f"Deleted {len(gone)} run{'s' if len(gone) != 1 else ''} for good.",
                            empty_sure=False)


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
