"""Runs page, the transfer-learning demo (engine.jobs.demo): start it, follow it,
and its two validation-accuracy curves with their time to target.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from engine.base import plain
from engine.jobs import background, demo, runner
from engine.charts import style as chart_style, runs as runs_charts
from engine.report.headline import PAGE_SIGN, ratio_text
from engine.report.progress import progress
from engine.store import ACTIVE_STATUSES, Store
from views.components.common import PLOTLY_CONFIG, one_line_errors

DEMO_COMMAND = "python -m engine demo-transfer"


def _demo_active() -> bool:
    job = demo.read_demo_progress()
    return bool(job) and job["state"] in background.ACTIVE_STATES


def transfer_section(was_active: bool) -> None:
    """Body of the transfer fragment: the digits demo's fine-tuned and from-scratch
    runs as two validation-accuracy curves with their time to target, or how to
    run the demo. Re-reads the store every DEMO_REFRESH_S while the demo runs."""
    with one_line_errors("Transfer learning"):
        with Store() as store:
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
        st.error(f"The last transfer demo failed: {plain.md(job.get('error') or 'no message')}", icon=":material/error:")
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
            st.markdown(f"**{who} reached {target:g} {ratio_text(k, PAGE_SIGN)} sooner.**")
        st.caption(f"Fine-tuned from run #{cfg.get('init_from')}: {cfg.get('freeze_epochs')} frozen epoch(s), "
                   f"then {cfg.get('finetune_lr_factor', 0.1):g}× the learning rate. Times from the start of "
                   "training, warm-up and recompilation included.")
