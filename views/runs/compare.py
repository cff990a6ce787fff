"""Runs page, reading runs against each other: overlaid curves, the stored
comparisons of interleaved pairs, and speedups against any baseline with scaling by replicas.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from engine.charts import style as chart_style, mfu as mfu_charts, runs as runs_charts, train as train_charts
from engine.report import forecast, stats
from engine.report import headline as report_headline
from engine.report.comparison import time_text
from engine.report.pair import compare
from engine.report.progress import live_summary
from engine.hardware.fingerprint import name_of, of
from engine.store import Store, from_script_run
from views.components.common import PLOTLY_CONFIG, autopilot_run, started

# The speedup bars' three kinds (engine.report.pair.compare keys).
SPEEDUP_KINDS = {"time to accuracy": "time_to_accuracy_speedup", "end-to-end": "end_to_end_speedup",
                 "steady": "steady_speedup"}


def pick_label(by_id: dict, rid: int) -> str:
    r = by_id[rid]
    return f"{chart_style.run_label(r)} · {r['status']}"


def subject(run: dict) -> tuple:
    """What a speedup must hold equal to mean anything: the run's data set and model, or for a
    script run (whose config holds placeholders there) the script it ran."""
    if from_script_run(run.get("plan")):
        return "script run", run["plan"].get("script")
    return run["config"].get("dataset"), run["config"].get("model")


def overlay_default(ids: list[int], by_id: dict) -> list[int]:
    """The newest group with a started run, up to 6 of its started runs of one data set and
    model; [] when no run in `ids` (newest first) has started."""
    first = next((i for i in ids if started(by_id[i])), None)
    if first is None:
        return []
    head = by_id[first]
    return [i for i in ids if by_id[i]["group_id"] == head["group_id"] and started(by_id[i])
            and subject(by_id[i]) == subject(head)][:6]


def default_baseline(ids: list[int], by_id: dict) -> int | None:
    """The newest finished baseline in `ids` (newest first, all finished) with another finished
    run of its data set and model, one the user launched before an autopilot re-run's; None
    when there is none (a speedup against another data set or model means nothing)."""
    def partnered(i: int) -> bool:
        return any(j != i and subject(by_id[j]) == subject(by_id[i]) for j in ids)

    baselines = [i for i in ids if by_id[i]["role"] == "baseline" and partnered(i)]
    return next((i for i in baselines if not autopilot_run(by_id[i])), baselines[0] if baselines else None)


def _chief(df: pd.DataFrame) -> pd.DataFrame:
    """System samples of the first process only: a multi-worker run samples every
    worker, and their lines would interleave."""
    return df[df["worker"].fillna(0) == 0] if "worker" in df.columns else df


def _frames(store: Store, runs: list[dict], table_name: str) -> pd.DataFrame | None:
    parts = [chart_style.tag(_chief(store.frame(table_name, r["id"])), chart_style.run_label(r),
                        chart_style.run_color(r["id"], r["role"], r.get("config")), r["id"]) for r in runs]
    parts = [p for p in parts if not p.empty]
    return pd.concat(parts, ignore_index=True) if parts else None


def overlay_section(store: Store, by_id: dict, view: pd.DataFrame) -> None:
    """Loss and throughput curves of any picked runs, overlaid."""
    st.markdown("### Overlay runs")
    ids = view["id"].tolist()
    default = overlay_default(ids, by_id)
    picked = st.multiselect("Runs to overlay", ids, default=default, key="overlay",
                            format_func=lambda i: pick_label(by_id, i))
    if not picked:
        st.caption("No started run in the table to overlay: pick runs above once one has started."
                   if not default else "Pick runs above to overlay their loss and throughput curves.")
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
    from engine.store import comparisons as cstore

    comps = [c for c in cstore.list_all(store) if c.get("result")]
    if not comps:
        return
    st.markdown("### Comparisons")
    rows = []
    for c in comps:
        r = c["result"]
        h = report_headline.comparison_headline(r, in_progress=c["status"] == "running")
        s = c.get("settings") or {}
        # The autopilot's say which of its comparisons they are (engine.autopilot.confirm).
        kind = ("A/A (noise floor)" if c["kind"] == "aa" else (s.get("autopilot") or {}).get("kind")
                or ("two commands" if s.get("baseline_kind") == "command" else "baseline vs run"))
        # Its candidate from the first run that ran (a stopped comparison's last may never have
        # started), its machine from the first that carries one.
        ran = [run for run in (store.get_run(i) for i in r.get("run_ids", []) + r.get("baseline_ids", [])
                               if i is not None) if run and started(run)]
        first = ran[0] if ran else {}
        placed = next((run for run in ran if of(run.get("environment"))), first)
        rows.append({"comparison": c["id"], "kind": kind,
                     # what was measured, and where: a table of verdicts alone says neither
                     "candidate": chart_style.config_summary(first["config"], first.get("summary"), first.get("plan"))
                     if first.get("config") else "–",
                     "machine": name_of(placed.get("environment")) if placed else "–",
                     "measured": pd.Timestamp(c["created"], unit="s").strftime("%Y-%m-%d %H:%M"),
                     "headline": h["text"], "verdict": r.get("verdict") or "–", "measure": h["measure"],
                     "split": h.get("factors") or "–", "with setup": h.get("setup") or "–",
                     "seeds reached": h.get("reached") or "–",
                     "test accuracy": h.get("test") or "–", "note": h.get("note") or "–",
                     "pairs": r.get("pairs"), "ended by": c.get("ended_by") or c["status"],
                     "took": time_text(r.get("time")) or "–",
                     # a failed pair of two commands may lack a run (engine.jobs.command_pairs): None
                     "runs": ", ".join(f"#{i}" for i in r.get("baseline_ids", []) + r.get("run_ids", [])
                                       if i is not None)})
    st.dataframe(pd.DataFrame(rows), hide_index=True, key="comparisons_table")
    st.caption("Geometric mean of the pair ratios, 95% interval as its two ends, verdict: 'faster' or 'slower' "
               "only when the interval excludes 1, 'equivalent' only inside the stated margin, else "
               "'inconclusive'; 'faster' needs every seed reached and test accuracy held. Split: the "
               "time-to-accuracy speedup as throughput × fewer samples × fixed costs (seconds outside steady "
               "training per side); with setup: start to target, setup included; every seed counts, a failed "
               "run as a miss; test accuracy on a held-out set nothing stopped on (docs/comparisons.md).")


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
    default = default_baseline(ids, by_id)
    base_id = st.selectbox("Baseline", ids, index=None if default is None else ids.index(default),
                           key="speedup_baseline", format_func=lambda i: pick_label(by_id, i),
                           placeholder="pick a baseline")
    if base_id is None:
        st.caption("No finished baseline with another finished run of its data set and model in the table: "
                   "pick one above, or launch a comparison on the Train page.")
        return
    base = by_id[base_id]
    others = [i for i in ids if i != base_id and subject(by_id[i]) != subject(base)]
    ids = [i for i in ids if i not in others]  # another data set or model: no speedup to read
    kind = st.segmented_control("Speedup", list(SPEEDUP_KINDS), default="time to accuracy", key="speedup_kind",
                                help="time to accuracy: seconds to the target validation accuracy; end-to-end: "
                                     "samples per second of wall time while training; steady: median "
                                     "samples/s per execution after warm-up") or "time to accuracy"
    # A baseline that missed its own target has no time to accuracy: no bar, as for any run.
    base_missing = compare(store, base_id, base_id)["time_to_accuracy_note"] if kind == "time to accuracy" else None
    rows = [{"label": chart_style.run_label(base), "color": chart_style.BASELINE_COLOR,
             "speedup": None if base_missing else 1.0, "steady": 1.0,
             **_scaling_point(store, base), "note": "baseline", "missing": base_missing}]
    machines = []  # 'measured on two machines: A vs B', each once: said before any bar
    overlaps = []  # runs that trained at the same time as the baseline on this machine
    for rid in sorted(i for i in ids if i != base_id):
        r = by_id[rid]
        c = compare(store, base_id, rid)
        if c["machines"] and c["machines"] not in machines:
            machines.append(c["machines"])
        if c["overlap"]:
            overlaps.append(f"run #{rid} and baseline #{base_id}: {c['overlap']}")
        rows.append({"label": chart_style.run_label(r), "color": chart_style.run_color(rid, r["role"], r.get("config")),
                     "speedup": c[SPEEDUP_KINDS[kind]], "steady": c["steady_speedup"], **_scaling_point(store, r),
                     "note": "; ".join(c["caveats"]) or "like for like",
                     "missing": c["time_to_accuracy_note"] or (c["baseline_time_to_accuracy_note"] and
                                                               f"baseline {c['baseline_time_to_accuracy_note']}")})
    bars = pd.DataFrame(rows)
    for line in machines:
        st.warning(f"{line}: those bars are not speedups of a configuration (hover a bar for its machine)",
                   icon=":material/compare_arrows:")
    for line in overlaps:
        st.warning(line, icon=":material/schedule:")
    c1, c2 = st.columns([1.2, 1], gap="medium")
    c1.plotly_chart(runs_charts.speedup_figure(bars, title=f"{kind.capitalize()} speedup vs {chart_style.run_label(base)}",
                                          x_title=f"speedup (×, {kind})"),
                    key="speedup_bars", config=PLOTLY_CONFIG)
    c1.caption(f"Each bar is one run against the picked baseline: {stats.ONE_PAIR_LABEL}. A comparison's "
               "interval and verdict are under **Comparisons** above.")
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
    if others:
        c1.caption(f"Left out: {len(others)} finished run(s) of another data set, model or script than the baseline "
                   "(pick one of theirs as the baseline to see them).")
    unlike = bars[~bars["note"].isin(["baseline", "like for like"])]
    if len(unlike):
        c1.caption(f":material/warning: {len(unlike)} run(s) are not like with like "
                   "(another batch size, synthetic data shape or machine): hover a bar for why.")
