"""Autopilot: search this machine for the fastest route to a target accuracy,
watch the trials live, and see the winner re-run against the baseline and explained.

UI only: the search runs detached (engine.autopilot.search.start_background, i.e.
``python -m engine autopilot``) and writes its state to a JSON file that a
fragment re-reads every second; the current run's curves come from the store;
figures come from engine.autopilot.charts and the engine.report chart modules.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from engine.hardware import fingerprint
from engine.base import plain
from engine.store import tuned_baselines
from engine.config import MODELS, ConfigError, RunConfig
from engine.data import meta as datasets_meta
from engine.autopilot import confirm, rerun_time, search as autopilot
from engine.autopilot.explain import explanation
from engine.report import headline as report_headline
from engine.jobs.background import ACTIVE_STATES
from engine.charts import style as chart_style, train as train_charts
from engine.autopilot import charts as autopilot_charts
from engine.store import Store
from views.components import comparison as cmp_view, handoff
from views.components.common import number_format, one_line_errors

LIVE_REFRESH_S = 1.0   # while the autopilot runs
WATCH_REFRESH_S = 3.0  # idle: notice an autopilot started elsewhere
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
PHASES = {"starting": "starting", "search": "searching", "runoff": "re-running the fastest trials on new seeds",
          "confirm": "re-running the winner and the baseline",
          "ablation": "explaining the winner (ablation)", "done": "done", "stopped": "stopped"}


# --- the form --------------------------------------------------------------------------

def form_defaults(p: dict | None) -> dict:
    """The form's starting values: the last search's settings (so the page shows what
    the search on it ran with, also after leaving the page), else the defaults."""
    base = (p or {}).get("base_config") or {}
    d = {"dataset": "digits", "model": "cnn", "target": None, "budget": 300, "repeats": 3, "batch": 128,
         "epochs": 20, "seed": 0, "explain": True}
    if p and base:
        d.update(dataset=base.get("dataset", "digits"), model=base.get("model", "cnn"),
                 target=p.get("target_accuracy"), budget=int(p.get("budget_sec") or 300),
                 repeats=int(p.get("repeats", 3)), batch=int(base.get("batch_size", 128)),
                 epochs=int(base.get("epochs", 20)), seed=int(p.get("seed", 0)), explain=bool(p.get("explain", True)))
    return d


def settings_form(p: dict | None = None) -> tuple[list[str] | None, str | None]:
    """The autopilot's settings, starting from the last search's (`p`, its state);
    returns (CLI arguments, None) or (None, one-line error)."""
    d = form_defaults(p)
    names = list(datasets_meta.DATASET_NAMES)
    c = st.columns([1.2, 1, 1, 1, 1], vertical_alignment="bottom")
    dataset = c[0].selectbox("Data set", names, index=names.index(d["dataset"]) if d["dataset"] in names else
                             names.index("digits"), key="ap_dataset")
    model = c[1].selectbox("Model", MODELS, index=list(MODELS).index(d["model"]) if d["model"] in MODELS else
                           list(MODELS).index("cnn"), key="ap_model")
    default = (d["target"] if d["target"] and dataset == d["dataset"]
               else datasets_meta.default_target(dataset) or 0.9)
    # No min/max on these inputs: Streamlit would silently keep the previous value of an
    # out-of-range entry (and Start would use it); the engine's checks name the field instead.
    # Every digit typed is shown (0.9995 is not rounded to "1.00" on screen).
    shown = st.session_state.get(f"ap_target_{dataset}", float(default))
    target = c[2].number_input("Target val accuracy", value=float(default), step=0.01,
                               format=number_format(shown if isinstance(shown, (int, float)) else None, 0.01),
                               key=f"ap_target_{dataset}",
                               help="the search minimises the seconds from the start of training to the "
                                    "first validation at or above this")
    budget = c[3].number_input("Search budget (s)", value=d["budget"], step=30, key="ap_budget",
                               help="wall-clock seconds for the search; the re-runs and the ablation follow")
    repeats = c[4].number_input("Re-runs each", value=d["repeats"], step=1, key="ap_repeats",
                                help="rounds of interleaved re-runs of the baseline and the winner (and the winner "
                                     "without each technique): the confirmed speedup and the ablation are "
                                     "comparisons of these pairs, shown on the Runs page too. " + autopilot.NO_REPEATS)
    with st.expander("More settings", icon=":material/tune:"):
        e = st.columns(5, vertical_alignment="bottom")
        batch = e[0].number_input("Baseline global batch", value=d["batch"], step=32, key="ap_batch",
                                  help="the search scales it 0.5-4x with the linear scaling rule")
        epochs = e[1].number_input("Epoch cap per run", value=d["epochs"], step=1, key="ap_epochs",
                                   help="every run stops at the target; this is the most it may train")
        seed = e[2].number_input("Seed", value=d["seed"], step=1, key="ap_seed",
                                 help="same seed, same proposals; the re-runs use the seeds after it")
        lr_find = e[3].selectbox("LR range test", ("auto", "yes", "no"), key="ap_lr_find",
                                 help="for one-cycle's max LR: auto = reuse a stored one, else run one when "
                                      "the budget is at least 120 s; yes = reuse or run one; no = none, stored "
                                      "or new (one-cycle peaks at 5x the base LR)")
        explain = e[4].toggle("Explain the winner", value=d["explain"], key="ap_explain",
                              help="leave-one-out ablation: in each re-run round, one run per technique the "
                                   "winner uses, without it (none with 0 re-runs)")
    try:
        cfg = RunConfig(dataset=dataset, model=model, batch_size=int(batch), epochs=int(epochs), seed=int(seed),
                        target_accuracy=float(target), stop_at_target=True)
        autopilot.check_settings(float(budget), float(target), int(repeats), seed=int(seed))
    except ConfigError as e:
        return None, str(e)
    st.caption(rerun_line(cfg, int(budget), int(repeats), explain))
    args = ["--dataset", dataset, "--model", model, "--target", f"{target:g}", "--budget", str(int(budget)),
            "--batch-size", str(int(batch)), "--epochs", str(int(epochs)), "--seed", str(int(seed)),
            "--repeats", str(int(repeats)), "--lr-find", lr_find]
    return args + ([] if explain else ["--no-explain"]), None


def rerun_line(cfg: RunConfig, budget: int, repeats: int, explain: bool) -> str:
    """What the search's budget does not cover, said before Start: the runoff and the
    confirming rounds (with the ablation inside them), estimated from this machine's last
    baseline run of the data set and model (engine.autopilot.rerun_time)."""
    with Store() as store:
        tuned = tuned_baselines.get(store, cfg, fingerprint.row_here) is not None
        est = rerun_time.before_start(store, cfg.dataset, cfg.model, repeats, explain, tuned, autopilot.FINALISTS,
                                      autopilot.RUNOFF_SEEDS)
    rounds = (f"{repeats} rounds of the baseline, the winner" + (", the tuned baseline" if tuned else "")
              + (" and the winner without each of its techniques" if explain else "")) if repeats else ""
    what = (f"the runoff (the {autopilot.FINALISTS} fastest trials on {autopilot.RUNOFF_SEEDS} new seeds, "
            f"{autopilot.FINALISTS * autopilot.RUNOFF_SEEDS} runs)" + (f", then {rounds}" if rounds else ""))
    if est is None:
        return (f"The {budget} s budget is the search's. After it: {what}; how long they take here is known "
                f"once this machine has run a baseline of {cfg.dataset}/{cfg.model}.")
    return (f"The {budget} s budget is the search's. After it: {what}, {est['runs_low']}-{est['runs_high']} runs, "
            f"about {rerun_time.minutes(est['low_s'])} to {rerun_time.minutes(est['high_s'])} more here ("
            + (f"a baseline run took {took(est)}: run #{est['baseline_run']})."
               if est.get("baseline_runs", 1) == 1 else
               f"baseline runs took {took(est)}, the median of the newest "
               f"{est['baseline_runs']}, up to run #{est['baseline_run']})."))


def took(est: dict) -> str:
    """'6 s' (the Runs table's wall), or '6 s plus 18 s waiting for a worker' when a run's
    claim to end was longer (a spare's imports, the queue): both figures the Runs table has."""
    wall, waited = est["baseline_wall_s"], est["baseline_elapsed_s"] - est["baseline_wall_s"]
    return f"{wall:.0f} s" + (f" plus {waited:.0f} s waiting for a worker" if waited >= 1 else "")


# --- live state -----------------------------------------------------------------------

def status(p: dict) -> None:
    """One progress line: the phase, the budget used, the best so far."""
    phase = p.get("phase") or "starting"
    trials = p.get("trials") or []
    best = p.get("best")
    best_text = f"best so far {best['time_to_target_sec']:.2f} s (trial {best['trial']})" if best else "no time yet"
    w = p.get("winner")
    if w and phase not in ("starting", "search"):  # after the runoff the winner may not be the search's best
        best_text = f"winner: trial {w['trial']}"
    if phase in ("starting", "search") and p["state"] in ACTIVE_STATES:
        budget = p.get("budget_sec") or 0
        used = p.get("elapsed", 0.0)
        left = max(budget - used, 0.0)
        cur = p.get("current") or {}
        doing = ("starting (hardware facts, max LR)" if not cur.get("trial") and not trials and not budget
                 else "preparing (hardware facts, max LR)" if not cur.get("trial") and not trials
                 else "between trials" if not cur.get("trial")
                 # Nothing stored yet: its worker is still starting (imports, data, model).
                 else f"trial {cur['trial']} starting its worker" if not cur.get("elapsed_sec")
                 else f"trial {cur['trial']} at {cur['elapsed_sec']:.1f} s of training")
        left_text = f" · {left:.0f} s of {budget:.0f} s budget left" if budget else ""
        st.progress(min(used / budget, 1.0) if budget else 0.0,
                    text=f":material/travel_explore: Searching: {len(trials)} trial{'' if len(trials) == 1 else 's'} "
                         f"done, {doing}{left_text} · {best_text}")
    elif p["state"] in ACTIVE_STATES:
        cur = p.get("current") or {}
        what = (f"round {cur.get('round')}: {cur.get('name')}" if phase == "confirm" and cur
                else f"trial {cur.get('trial')}: {cur.get('label', '')}" if phase == "runoff" and cur
                else cur.get("label", "") if cur else "")
        conf = p.get("confirm") if phase == "confirm" else None
        left = rerun_time.left_in_confirm(conf)
        rounds = (f"run {min(len(conf.get('runs') or []) + 1, conf['planned'])} of {conf['planned']}"
                  + (f", about {rerun_time.minutes(left)} left" if left is not None else "") + " · "
                  if conf and conf.get("planned") else "")
        st.markdown(f":material/autorenew: **{PHASES.get(phase, phase).capitalize()}** · {what} · {rounds}run "
                    f"#{cur.get('run_id', '?')} · {p.get('elapsed', 0):.0f} s since the start · {best_text}")
    elif p["state"] == "failed":
        st.error(f"The autopilot failed: {plain.md(p.get('error') or 'no message')}", icon=":material/error:")
    elif p["state"] == "cancelled":
        # Where it stopped, and why (a signal names itself; Stop reads "cancelled by the user").
        where = ("in its confirming rounds" if (p.get("confirm") or {}).get("comparisons") else
                 "in its runoff" if p.get("runoff") else "in its search")
        why = f" ({plain.md(p['stopped_by'])})" if p.get("stopped_by") else ""
        st.warning(f"The autopilot was stopped {where}, after {len(trials)} trials{why}; what it found so far "
                   "is below.", icon=":material/stop_circle:")
    else:
        after = [what for what, ran in (("the runoff", (p.get("runoff") or {}).get("runs")),
                                        ("the re-runs", (p.get("confirm") or {}).get("repeats")),
                                        ("the ablation", p.get("ablation"))) if ran]
        then = f", then {', '.join(after[:-1])}{' and ' if len(after) > 1 else ''}{after[-1]}" if after else ""
        st.markdown(f":material/check_circle: **Done** in {p.get('elapsed', 0):.0f} s: {len(trials)} "
                    f"trial{'' if len(trials) == 1 else 's'} in the {p.get('budget_sec', 0):.0f} s search{then}.")


def current_curves(p: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(epochs, executions) of the current run and the best trial, tagged for the charts."""
    cur = p.get("current") or {}
    best = p.get("best") or {}
    # Short legend names (the settings are in the table): a full label ran past the chart's edge.
    now = f"trial {cur['trial']}" if cur.get("trial") else cur.get("name") or ""
    runs = [(cur.get("run_id"), f"#{cur.get('run_id')} now" + (f" ({now})" if now else ""), chart_style.PALETTE[1])]
    if best.get("run_id") and best.get("run_id") != cur.get("run_id"):
        runs.append((best["run_id"], f"#{best['run_id']} best (trial {best.get('trial')})", chart_style.BASELINE_COLOR))
    eps, exs = [], []
    with Store() as store:
        for rid, label, color in runs:
            if rid is None:
                continue
            eps.append(chart_style.tag(store.frame("epochs", rid), label, color, rid))
            if rid == cur.get("run_id"):
                exs.append(chart_style.tag(store.frame("executions", rid), label, color, rid))
    eps = [e for e in eps if not e.empty]
    exs = [e for e in exs if not e.empty]
    return (pd.concat(eps, ignore_index=True) if eps else pd.DataFrame(),
            pd.concat(exs, ignore_index=True) if exs else pd.DataFrame())


def trials_table(trials: list[dict]) -> pd.DataFrame:
    return pd.DataFrame([{"trial": t["trial"], "run": t["run_id"], "settings": t["label"],
                          "time to target (s)": t.get("time_to_target_sec"),
                          "training used (s)": t.get("elapsed_sec"), "how it ended": t["reason"]}
                         for t in trials])


def tried_table(tried: list[dict]) -> pd.DataFrame:
    """engine.autopilot.space.techniques_tried as a table: a row per technique, those no trial used last."""
    rows = sorted(tried, key=lambda r: r["trials"] == 0)
    return pd.DataFrame([{"technique": r["technique"].replace("_", " "), "trials": r["trials"],
                          "reached": r["reached"], "best time to target (s)": r["best_sec"],
                          "settings (trials)": ", ".join(f"{k} ({v})" for k, v in r["settings"].items())}
                         for r in rows])


def live(was_running: bool) -> None:
    """Body of the live fragment: re-reads the autopilot's state file each tick."""
    with one_line_errors("Autopilot progress"):
        p = autopilot.read_progress()
        running = bool(p) and p["state"] in ACTIVE_STATES
        if running != was_running:  # started elsewhere, or finished: redraw the page
            st.rerun()
        if not p:
            st.info("No search yet: pick a data set, a model, a target and a budget, and press **Start "
                    "autopilot**. Each trial is a real run; its time to target appears in the chart as it "
                    "ends, the best so far as a step line.", icon=":material/travel_explore:")
            return
        status(p)
        target = p.get("target_accuracy") or 0.0
        left, right = st.columns([1.2, 1], gap="medium")
        left.plotly_chart(autopilot_charts.trials_figure(p.get("trials") or [], target), key="ap_trials",
                          config=PLOTLY_CONFIG)
        cur = p.get("current") or {}
        if running and cur.get("run_id"):
            eps, exs = current_curves(p)
            best = (p.get("best") or {}).get("time_to_target_sec") if cur.get("phase") == "search" else None
            right.plotly_chart(autopilot_charts.race_figure(eps, target, best, cur.get("limit_sec")),
                               key="ap_race", config=PLOTLY_CONFIG)
            st.plotly_chart(train_charts.throughput_figure(exs, title=f"Run #{cur['run_id']}: throughput per execution",
                                                     height=300), key="ap_throughput", config=PLOTLY_CONFIG)
        elif (p.get("confirm") or {}).get("runs"):
            right.plotly_chart(autopilot_charts.confirm_figure(p["confirm"]["runs"], target), key="ap_confirm",
                               config=PLOTLY_CONFIG)
        if p.get("trials"):
            # placeholder: a trial that did not reach the target gets a blank cell (its 'how it
            # ended' says why), not Streamlit's grey "None" (as the Runs table).
            st.dataframe(trials_table(p["trials"]), hide_index=True, key="ap_table", placeholder="",
                         column_config={"trial": st.column_config.NumberColumn(width="small"),
                                        "run": st.column_config.NumberColumn(width="small"),
                                        "settings": st.column_config.TextColumn(width="large"),
                                        "how it ended": st.column_config.TextColumn(width="large"),
                                        "time to target (s)": st.column_config.NumberColumn(format="%.2f"),
                                        "training used (s)": st.column_config.NumberColumn(
                                            format="%.1f", help="seconds from its training start to its last "
                                            "stored row: a stopped trial's includes the second or two it took "
                                            "to stop after its pruning time (in 'how it ended')")})
        if p.get("tried"):
            with st.expander("What the search tried, technique by technique", icon=":material/checklist:"):
                st.dataframe(tried_table(p["tried"]), hide_index=True, key="ap_tried", placeholder="",
                             column_config={"best time to target (s)": st.column_config.NumberColumn(format="%.2f"),
                                            "settings (trials)": st.column_config.TextColumn(width="large")})
        for note in p.get("notes") or []:
            st.caption(f":material/info: {note}")
        if p.get("winner"):
            result(p)


# --- the result --------------------------------------------------------------------------

def confirmed(p: dict) -> dict:
    """The autopilot's stored comparisons (engine.autopilot.confirm.stored), with its ablation's
    entries and their figures ('ablation_entries'), read from the store."""
    with Store() as store:
        comps = confirm.stored(store, p.get("confirm"))
    return {**comps, "ablation_entries": confirm.ablation_entries(p.get("ablation") or [], comps["ablation"], p)}


def result(p: dict) -> None:
    w = p["winner"]
    target = p.get("target_accuracy") or 0.0
    comps = confirmed(p)
    comp = comps["confirmation"]
    r = (comp or {}).get("result") or {}
    entries = comps["ablation_entries"]
    st.markdown("#### The winner")
    a, b = st.columns([1, 2.2], gap="medium")
    finished = p["state"] not in ACTIVE_STATES
    machine, elsewhere = measured_on(p)
    with a:
        if elsewhere:  # another CPU (or before fingerprints): its figures are not this machine's
            st.warning(f"Measured elsewhere ({plain.md(machine)}): check it here before you use its figures.",
                       icon=":material/fingerprint:")
        if comp is not None:
            # The Train and Runs pages' verdict box, of the stored comparison (engine.autopilot.confirm).
            # Another machine's figure says so beside the figure, not only in the warning above it.
            # "Confirmation", not "Confirmed": the verdict box under it says whether it was (an
            # inconclusive 1.23x under "Confirmed" claimed more than its verdict).
            st.caption(("Measured elsewhere · " if elsewhere else "") + f"Confirmation: the winner vs "
                       f"{p.get('baseline_label') or 'the baseline'}, on seeds the search did not use")
            cmp_view.verdict_box(comp, key="ap_confirmation")
            for name, pair in comps["extra"].items():
                tuned = (pair.get("winner") or {}).get("result")
                if tuned:
                    label = p.get("tuned_label") if name == confirm.TUNED and p.get("tuned_label") else f"the {name}"
                    st.caption(f"Against {label}: {report_headline.comparison_headline(tuned)['text']}")
            tta = r.get("time_to_accuracy") or {}
            # Only a verdict says slower: under 3 pairs (no verdict) one pair's 1.15x read as the winner's failure.
            if tta.get("speedup") and r.get("verdict") == "slower":
                st.warning(f"Re-run, the winner was slower than the baseline "
                           f"({report_headline.ratio_text(1 / tta['speedup'], report_headline.PAGE_SIGN)} as long): "
                           "its time in the search did not hold up. Keep the baseline's settings, or search longer.",
                           icon=":material/trending_down:")
        elif p.get("repeats") == 0:
            st.caption(f":material/info: {autopilot.NO_REPEATS}.")
        st.markdown(f"**{w['label']}**")
        st.caption(f":material/fingerprint: measured on {plain.md(machine)}" + ("" if elsewhere else " (this machine)"))
        secs = w.get("runoff_secs") or []
        runoff = (f"; re-run on {len(secs)} other seed{'s' if len(secs) != 1 else ''}: "
                  + ", ".join("missed" if x is None else f"{x:.2f} s" for x in secs)
                  + f" (of the {len(p['runoff']['runs'])} fastest trials, it reached the target on the most seeds, "
                  "then had the lowest mean time)" if secs and p.get("runoff") else "")
        st.caption(f"Trial {w['trial']} (run #{w['run_id']}): {w['search_time_to_target_sec']:.2f} s to "
                   f"{target:g} in the search{runoff}. " + chart_style.config_summary(w["config"]))
        # Not while the autopilot still runs: the Train page could not launch it before the end anyway.
        # Primary only for a confirmed 'faster': an inconclusive 1.32x (-51% to +256%) is no recommendation.
        if st.button("Use this configuration", type="primary" if r.get("verdict") == "faster" else "secondary",
                     icon=":material/arrow_forward:", key="ap_use_btn", disabled=not finished,
                     on_click=handoff.hand_over, args=(handoff.differing(w["config"]), True), width="stretch",
                     help="Fill the Train page with the winner's settings" if finished
                     else "Available when the autopilot has finished"):
            handoff.go_to_train()
    with b:
        if entries:
            st.plotly_chart(autopilot_charts.ablation_figure(entries), key="ap_ablation", config=PLOTLY_CONFIG)
            line = explanation(entries)
            if line:
                st.caption(f"Without each technique the winner took this many times as long: {line}. Bars: "
                           "their 95% intervals. Each is a comparison on the Runs page.")
        if comp is not None:  # the confirmation's pairs, as the Train page draws a comparison's
            cmp_view.pairs_chart(comp, key="ap_pairs", height=260)
    if comp is not None:
        with st.expander(f"The confirmation: comparison #{comp['id']}", icon=":material/compare_arrows:"):
            cmp_view.details(comp)


def measured_on(p: dict) -> tuple[str, bool]:
    """(the name of the machine an autopilot state was measured on, or 'machine unknown';
    whether that is another machine than this one: another fingerprint id, or none)."""
    fp = p.get("fingerprint") or {}
    return fp.get("name") or fingerprint.UNKNOWN, fp.get("id") != fingerprint.here_id()


def main() -> None:
    st.markdown("### SpeedLab · Autopilot")
    st.caption("Give a data set, a model, a target validation accuracy and a budget: the autopilot tries "
               "configurations this machine allows (Optuna's seeded TPE sampler over precision, steps per "
               "execution, batch with scaled LR, schedule, label smoothing, XLA, devices), stops each as soon as "
               "it cannot beat the best time to the target, re-runs the fastest few on new seeds to choose the winner, "
               "re-runs the winner against the baseline, and says "
               "what each technique bought. It runs in the background: you can leave this page.")
    p = autopilot.read_progress()
    running = bool(p) and p["state"] in ACTIVE_STATES
    args, error = settings_form(p)
    c1, c2, c3 = st.columns([1.3, 1, 3.5], vertical_alignment="center")
    if c1.button("Start autopilot", type="primary", icon=":material/travel_explore:", key="ap_start",
                 disabled=running or args is None, width="stretch"):
        try:
            autopilot.start_background(args)
            st.rerun()
        except autopilot.AutopilotError as e:
            c3.warning(str(e), icon=":material/hourglass_top:")
    if running and c2.button("Stop", icon=":material/stop:", key="ap_stop", width="stretch"):
        with st.spinner("Stopping the search (its current run first) ..."):
            autopilot.cancel_background()
        st.rerun()
    if error:
        c3.error(error, icon=":material/error:")
    st.fragment(live, run_every=LIVE_REFRESH_S if running else WATCH_REFRESH_S)(running)


if __name__ == "__main__":
    main()
