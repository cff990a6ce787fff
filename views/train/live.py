"""Train page, the live view: which runs are the current comparison (from the
store), the fragment that redraws them, and the idle watcher.
"""
from __future__ import annotations

import streamlit as st

from engine.config import ConfigError, RunConfig, baseline_config
from engine.jobs import runner
from engine.base.plain import md
from engine.report import live_refresh
from engine.store import FINAL_STATUSES, Store, from_script_run
from engine.autopilot.tune import GROUP_PREFIX as TUNE_PREFIX
from engine.report.table import peak_lr
from views.components import comparison as cmp_view
from views.components.common import one_line_errors
from views.components.live_charts import own_active, render_comparison
from views.train.launch import machine_busy

LIVE_REFRESH_S = 1.0   # live charts while a run is queued or running
WATCH_REFRESH_S = 3.0  # idle: notice a run launched from another tab or the CLI


# Runs launched here: not imported (origin), not the autopilot's (views.components.common.autopilot_run).
OWN_RUNS = "origin IS NULL AND (group_id IS NULL OR group_id NOT LIKE 'autopilot-%')"


def current_comparison(store: Store) -> tuple[list[dict], dict | None, dict | None]:
    """(runs of the newest group, oldest first; its baseline; its run).

    A group holds the baseline and the run launched together. When the
    baseline was reused from an earlier group (the user asked for it), that baseline
    stands in; a run launched without a baseline has none (None); when a config is its
    own baseline, both are the same run.
    Imported runs (run bundles) are left to the Runs and Replay pages, the
    autopilot's runs to the Autopilot page (`autopilot_run`).
    """
    # The newest own run, then its group: two indexed reads, however many runs are stored.
    newest = store.query_runs(OWN_RUNS, limit=1)
    if not newest:
        return [], None, None
    gid = newest[0]["group_id"]
    group = (store.query_runs(f"group_id=? AND {OWN_RUNS}", (gid,), order="id") if gid else newest)
    if (gid or "").startswith(TUNE_PREFIX):  # tune-baseline's sweep: its current run alone, no baseline
        now = _current_run(group)
        return [now], None, now
    if (gid or "").startswith("cmp-"):  # a comparison: its current pair (engine.jobs.comparison)
        pair = _current_pair(group)
        if pair:
            return pair, pair[0], pair[1]
    base = next((r for r in group if r["role"] == "baseline"), None)
    # An autopilot group (a trial, a runoff or an ablation run) has neither role: its run is shown.
    run = next((r for r in group if r["role"] == "run"), None) or base or group[-1]
    # Only the baseline it was launched against (Reuse stored baseline, `run --baseline
    # --reuse-baseline`): a run launched without one is never paired with a stored baseline here.
    if base is None and run is not None and run.get("baseline_id"):
        base = store.get_run(run["baseline_id"])
    if base is None and run is not None:  # launched together: its like-for-like baseline in its own group
        base = _baseline_in(group, run)
    return group, base, run


def _baseline_in(group: list[dict], run: dict) -> dict | None:
    """The completed run of `group` (not `run`) whose config is `run`'s baseline_config (the
    target aside), e.g. the transfer demo's from-scratch run for its fine-tuned run; else None."""
    try:
        want = baseline_config(RunConfig.from_dict(run["config"])).to_dict()
    except ConfigError:
        return None
    want.pop("target_accuracy", None)
    return next((r for r in group if r["id"] != run["id"] and r["status"] == "completed"
                 and {k: v for k, v in r["config"].items() if k != "target_accuracy"} == want), None)


def _current_run(group: list[dict]) -> dict:
    """The run of a sweep (oldest first) being measured, else the last that started, else the first."""
    running = [r for r in group if r["status"] == "running"]
    started = [r for r in group if r.get("started")]
    return (running or started or group[:1])[-1]


def sweep_caption(group: list[dict], run: dict) -> str | None:
    """One line naming a tune-baseline sweep's run as the sweep's (engine.autopilot.tune; it was
    not launched here), its schedule, peak learning rate, label smoothing and seed; None for
    any other run."""
    gid = run.get("group_id") or ""
    if not gid.startswith(TUNE_PREFIX):
        return None
    c = run.get("config") or {}
    ls = f", label smoothing {c['label_smoothing']:g}" if c.get("label_smoothing") else ""
    return (f"Run #{run['id']} of the tune-baseline sweep {gid} (python -m engine tune-baseline, not launched "
            f"here): {c.get('schedule')}, peak learning rate {peak_lr(c):g}{ls}, seed {c.get('seed')}; "
            f"{len(group)} of its runs queued so far, {sum(r['status'] in FINAL_STATUSES for r in group)} "
            "ended (all on the Runs page)")


def _current_pair(group: list[dict]) -> list[dict] | None:
    """[baseline, run] of a comparison's pair being measured (else its last complete
    pair), from the group's runs (oldest first; a pair's two runs are adjacent)."""
    pairs = [group[i:i + 2] for i in range(0, len(group) - 1, 2)]
    pairs = [sorted(p, key=lambda r: r["role"] != "baseline") for p in pairs]
    live = next((p for p in pairs if any(r["status"] == "running" for r in p)), None)
    done = [p for p in pairs if all(r["status"] == "completed" for r in p)]
    started = [p for p in pairs if any(r.get("started") for r in p)]
    return live or (done or started or pairs[:1] or [None])[-1]


def signature(comp: dict | None) -> tuple | None:
    """What changes a measuring comparison's block: its id, pairs done and status."""
    if comp is None:
        return None
    return comp["id"], len((comp.get("result") or {}).get("history") or []), comp["status"]


def live_view(was_active: bool, drawn: tuple | None = None, phase: str | None = None) -> None:
    """Body of the live fragment: re-reads the store on every tick. `drawn`: the
    `signature` of the measuring comparison whose block main() drew outside this
    fragment; a new pair (or its end) redraws the page. `phase`: the live_refresh
    phase main() set the interval for; a change (warm-up over) redraws the page."""
    if st.session_state.pop("stop_redraw", False):  # Stop was pressed: read every second from now on
        st.rerun()
    with one_line_errors("Live view"):
        with Store() as store:
            runner.reconcile(store)
            group, base, run = current_comparison(store)
            own = own_active(store)
            active = bool(own)
            if active != was_active:  # a run ended or started elsewhere: refresh the whole page
                st.rerun()
            if phase is not None and live_refresh.phase(store, [r["id"] for r in own]) != phase:
                st.rerun()  # past the warm-up, or a new run starting: a new interval
            if drawn is not None and signature(cmp_view.lookup(store, run)) != drawn:
                st.rerun()
            if not group:
                n_ap = store.count_runs("group_id LIKE 'autopilot-%'")
                st.info("No runs yet: set options on the left and press **Launch**. The baseline "
                        "(float32, 1 device) runs first, then your run; throughput, loss and the "
                        "speedup appear here live. With no speed option on, your run is the baseline "
                        "itself: turn one on (e.g. precision mixed_bfloat16) to see a speedup." + (f" (The autopilot's runs, {n_ap} so far, are on the "
                                                        "**Autopilot** and **Runs** pages.)" if n_ap else ""),
                        icon=":material/arrow_back:")
                return
            sweep = sweep_caption(store.query_runs("group_id=?", (run["group_id"],), order="id"), run) \
                if run is not None and (run.get("group_id") or "").startswith(TUNE_PREFIX) else None
            if sweep:
                st.caption(md(sweep))
            if run is not None and from_script_run(run.get("plan")):
                plan = run["plan"]  # engine.training.script_run: SpeedLabCallback in a user's script
                st.caption(md(f"Run {run['id']} is a script run: {plan.get('name') or ''} "
                                      f"({plan.get('script') or 'python'})"))
            render_comparison(store, group, base, run)


def live_phase() -> str | None:
    """engine.report.live_refresh.phase of this page's active runs (None if the store cannot be read)."""
    with one_line_errors("Reading the store"):
        with Store() as store:
            return live_refresh.phase(store, [r["id"] for r in own_active(store)])
    return None


def watch(ap_was_busy: bool) -> None:
    """Idle watcher: re-attaches when a run starts from another tab or the CLI,
    and redraws when the autopilot starts or ends (its banner, Launch)."""
    with Store() as store:
        if own_active(store) or bool(machine_busy()) != ap_was_busy:
            st.rerun()


def measuring() -> dict | None:
    """The comparison of interleaved pairs that is running, or None (the page then stays quiet)."""
    from engine.jobs import comparison

    with one_line_errors("Reading the store"):
        with Store() as store:
            return comparison.running(store)
    return None


def any_active() -> bool:
    """Whether a run is queued or running (dead workers settled first); False when the
    store cannot be read (its one-line error is shown)."""
    with one_line_errors("Reading the store"):
        with Store() as store:
            runner.reconcile(store)
            return bool(own_active(store))
    return False
