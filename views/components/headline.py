"""The speedup panel of one pair: time to accuracy (what the clock says), then
end-to-end and steady, where the time went, and the backend speedup.
The wording comes from engine.report.headline, shared with presenter mode.
"""
from __future__ import annotations

import streamlit as st

from engine.autopilot import search as autopilot
from engine.charts import train as train_charts
from engine.report import headline, stats
from engine.report.pair import backend_speedup
from engine.store import ACTIVE_STATUSES, Store, from_script_run
from views.components.common import PLOTLY_CONFIG


def ratio_text(v: float | None) -> str:
    """A ratio as the pages write it: '1.23×', or engine.report.headline.MISSING."""
    return headline.ratio_text(v, headline.PAGE_SIGN)


# One pair's figures: body-size numbers in the neutral grey of the comparison headline's "no result".
ONE_PAIR_CSS = """<style>
.st-key-one_pair [data-testid="stMetricValue"] { font-size: 1.15rem; font-weight: 500; color: #374151; }
.st-key-one_pair [data-testid="stMetricLabel"] p { color: #374151; }
</style>"""


def own_time(base: dict | None, run: dict | None, src) -> dict | None:
    """engine.report.headline.own_time of `run` when it is its own baseline (`base` the
    same run), else None; `src` (a LiveMetrics or a replay's) gives its epoch rows."""
    if not (run and base and run["id"] == base["id"]):
        return None
    return headline.own_time(run, src.epochs(run))


PAIRS_ADVICE = ("A run of your own script (SpeedLabCallback): it has no baseline. To measure a speedup, "
                "run your two commands as interleaved pairs: `python -m engine pairs --baseline-cmd "
                "\"python train.py\" --cmd \"python train.py --bf16\"` (docs/your-own-model.md).")


def no_baseline_caption(run: dict | None) -> str:
    """What the panel says under a run with no baseline: where its speedups are, or how to get one."""
    run = run or {}
    if run.get("role") in autopilot.ROLES:
        return ("An autopilot run with no stored baseline of its settings here: the autopilot's "
                "speedups (against the user's batch) are on the **Autopilot** page.")
    if (run.get("group_id") or "").startswith("tune-"):  # engine.autopilot.tune's GROUP_PREFIX
        return ("A run of the tune-baseline sweep: it is a candidate baseline, not measured against one. "
                "The sweep stores its winner; `run --baseline tuned` compares against it.")
    if from_script_run(run.get("plan")):  # Compare with baseline cannot launch a user's script
        return PAIRS_ADVICE
    return "No baseline for this run: turn on **Compare with baseline** and launch again to measure the speedup."


def _above(comp: dict) -> str:
    """What to read instead of one pair of comparison `comp`: its interval once it has one."""
    if stats.comparison_interval(comp.get("result")):
        return "the comparison's interval above is what to read."
    return f"the comparison above has no interval yet (it needs {stats.MIN_PAIRS} pairs)."


def speedup_panel(base: dict | None, run: dict | None, cmp: dict | None, own: tuple | None = None,
                  pair_of: dict | None = None, replay: bool = False) -> None:
    """The headline: time-to-accuracy speedup (what the clock says), then the
    end-to-end and steady throughput speedups, smaller, each with what it means.
    own: `own_time` (a dict) of a run that is its own baseline: its time to target is shown instead.
    pair_of: the comparison this pair belongs to (its headline is shown above): the
    figures are labelled as one pair's. While a side still runs, no ratio is shown
    (mid-run, end-to-end read 0.06x, 0.30x, 0.41x before settling near 0.9x).
    replay: drawn by Replay, which has no Reuse switch to name."""
    if base is None:
        st.metric("Time-to-accuracy speedup", "—", border=True)
        st.caption(no_baseline_caption(run))
        return
    if cmp is None:  # the run is its own baseline
        # Not "1.00×": that read as a measured result, also for a run that never reached the target.
        # Its own time to target is what it measured: shown (a first user saw only "—").
        own = own or {"label": None, "note": ""}
        if own["label"] is None:
            st.metric("Time-to-accuracy speedup", "—", border=True,
                      help="This configuration is the baseline itself (float32, 1 device, no options).")
        else:
            st.metric(own["label"], own["value"], border=True,
                      help="seconds from the start of training to the first validation at or above the target; "
                           "this configuration is the baseline itself (float32, 1 device, no options)")
        st.caption(own["note"] + headline.OWN_BASELINE + " Turn on a speed option (precision, "
                   "devices, steps per execution, XLA) to compare.")
        return
    if base["status"] in ACTIVE_STATUSES or run["status"] in ACTIVE_STATUSES:
        st.metric("Speedup of this pair · in progress", "—", border=True,
                  help="held back until both sides have ended: a ratio of a run still warming up means nothing")
        st.caption("One pair is one sample: " + (_above(pair_of) if pair_of else
                   "a comparison of interleaved pairs has an interval." if replay else
                   "turn off **Reuse stored baseline** for interleaved pairs with an interval."))
        return
    h = headline.pair_headline(cmp)
    if h["machines"]:  # the headline's first line: a ratio across two machines is no result
        st.warning(h["machines"] + ": the ratio is not a speedup of this configuration",
                   icon=":material/compare_arrows:")
    label = f"this pair: {h['label']}" if pair_of is not None else h["label"]
    # One pair is one sample, never a result: its figures small and neutral (no green), said so.
    st.markdown(ONE_PAIR_CSS, unsafe_allow_html=True)
    box = st.container(key="one_pair")
    box.caption(f":material/info: **{stats.ONE_PAIR_LABEL}**: " + (
        _above(pair_of) if pair_of is not None else
        f"baseline #{base['id']} vs run #{run['id']}, no interval" + (
            "; a comparison of interleaved pairs has one." if replay else
            "; turn off **Reuse stored baseline** for interleaved pairs with one.")))
    if h["ratio"] is not None:  # a pair of a comparison: its ratio, no verdict word ("faster") on one pair
        box.metric(label, ratio_text(h["ratio"]) if pair_of is not None and not h["machines"] else h["value"],
                   delta=h["seconds"], delta_color="off",
                   border=True, help="seconds from the start of training to the first validation at or above the "
                                     f"target: baseline #{base['id']} vs run #{run['id']}")
    else:
        box.metric(label, "—", border=True)
        box.caption("; ".join(h["notes"]) if h["notes"] else
                    "Set a target validation accuracy (Training) to compare time to accuracy.")
    e2e, steady = cmp.get("end_to_end_speedup"), cmp.get("steady_speedup")
    # One under the other: side by side, "2.97×" is cut to "2.9…" beside the sidebar at 1280 px.
    box.metric("End-to-end", ratio_text(e2e), border=True,
               help="training samples / wall time of training (warm-up, validation and everything "
                    "else inside fit included), run vs baseline")
    box.metric("Steady", ratio_text(steady), border=True,
               help="median samples/s per execution after the warm-up, run vs baseline: what the "
                    "device does, not what the clock says")
    box.caption("**End-to-end**: samples per second of wall time while training. **Steady**: per-step "
                "throughput after warm-up.")
    for key in ("notice", "setup_notice"):
        if cmp.get(key):
            st.warning(cmp[key], icon=":material/schedule:")
    for line in cmp["caveats"]:
        if line != h["machines"]:
            st.caption(f":material/warning: {line}")


def time_row(base: dict | None, run: dict | None, cmp: dict | None) -> None:
    """Where the time went: baseline and run side by side (once each has ended)."""
    if cmp is None:
        return
    rows = [(f"baseline #{base['id']}", cmp.get("baseline_breakdown")), (f"run #{run['id']}", cmp.get("breakdown"))]
    if not any(b for _, b in rows):
        return
    st.plotly_chart(train_charts.time_figure(rows), key="time_parts", config=PLOTLY_CONFIG)


def backend_line(store: Store, run: dict | None) -> None:
    """The backend speedup: this run against the same configuration stored on the
    other Keras backend (engine.report.pair.backend_speedup), or how to get one."""
    if run is None or run["status"] != "completed":
        return
    b = backend_speedup(store, run["id"])
    if b is None:
        if (run.get("config") or {}).get("backend") == "jax":
            st.caption(":material/compare_arrows: Backend speedup: no TensorFlow run of this configuration "
                       "is stored yet; launch it with Keras backend TensorFlow to compare the backends.")
        return
    x = b["steady_speedup"]
    st.metric(f"Backend speedup ({b['backend']} vs {b['other_backend']})", ratio_text(x),
              border=True, help=f"steady samples/s of run #{run['id']} on {b['backend']} / run "
                                f"#{b['baseline_id']}, the same configuration on {b['other_backend']}"
                                + (" (with XLA)" if b["other_jit_compile"] else ""))
    st.caption(f"Backend speedup **{ratio_text(x)}**: {b['backend']} run #{run['id']} "
               f"vs {b['other_backend']} run #{b['baseline_id']}, same configuration.")
