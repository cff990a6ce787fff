"""Train (landing page): set the speed-up options, launch a run next to its
baseline, and watch throughput, loss and speedup live.

UI only: validation, launching, speedups and figures all come from `engine`.
Run state lives in the store (not in st.session_state), so reloading the tab
or opening a second one re-attaches to the active run. The script never
blocks on training: a fragment re-reads the store about once a second.

The page entry (app.py routes here); its parts are the modules beside it: the
sidebar (controls, upload, checks), the LR finder, the launch, the live view
and presenter mode. What other pages draw too is in views/components/.
"""
from __future__ import annotations

import streamlit as st

from engine.base import plain
from engine.config import SETTING_HELP, user_model
from engine.jobs import background, runner
from engine.lr_find import range_test as lr_find
from engine.charts import style as chart_style
from engine.report import live_refresh
from engine.store import Store
from views.components import handoff, presenter, toasts, url_params
from views.components.common import one_line_errors
from views.components.live_charts import comparison_block, quiet_refresh_s
from views.train.checks import hardware_hints, validate, warning_field
from views.train.commands import commands_panel
from views.train.controls import advanced_controls, controls, schedule_controls
from views.train.launch import launch, machine_busy, slow_line, stored_tuned, tuned_help
from views.train.live import (LIVE_REFRESH_S, WATCH_REFRESH_S, any_active, live_phase, live_view, measuring,
                              signature, watch)
from views.train.lr_finder import lr_finder, lr_preview
from views.train.presenter import presenter_main
from views.train.presets import follow_running, presets_popover

LINK_SETTINGS = frozenset(SETTING_HELP)  # every run setting a link may carry (RunConfig's fields)


def prewarm() -> None:
    """Have a warm spare worker ready before Launch (once per session; the spare
    imports TensorFlow in its own process, never in this one)."""
    if not st.session_state.get("prewarmed"):
        with one_line_errors("Starting a spare worker"):
            runner.prewarm()
        st.session_state["prewarmed"] = True


def main() -> None:
    link = url_params.snapshot()  # before any control rewrites the URL
    follow_running(link)  # a new tab during a comparison: its settings, before the controls draw
    prewarm()
    sb = st.sidebar
    f = controls(sb)
    schedule_controls(f, sb)
    advanced_controls(f, sb)
    # A user's model file is built in a process of its own (about 5 s): the line under Model
    # says so meanwhile, in the place of the previous run's error, which would stand there stale.
    checking = f.slots["model"].empty() if user_model(f.values.get("model")) and "model" in f.slots else None
    if checking is not None:
        checking.caption(":material/hourglass_top: Checking the model file (it is built once, a few seconds)…")
    cfg, error, err_field, warnings = validate(f.values)
    handoff.remember(f.values)  # what the Hardware page's speed options are fitted to
    if checking is not None:
        checking.empty()
    hints = hardware_hints(cfg) if cfg else {}
    for name, hint in hints.items():
        f.slots[name].caption(hint)
    for w in warnings:
        f.slots.get(warning_field(w), sb).warning(plain.md(w), icon=":material/info:")
    if error:
        f.slots.get(err_field, sb).error(plain.md(error), icon=":material/error:")
    if cfg:
        lr_preview(cfg, f.preview_slot)
    sweep = lr_find.read_progress()
    sweeping = bool(sweep) and sweep["state"] in background.ACTIVE_STATES
    with f.lr_find_slot:
        st.fragment(lr_finder, run_every=LIVE_REFRESH_S if sweeping else None)(cfg, sweeping)

    if presenter.is_on():
        return presenter_main(cfg, error, url_params.check(link, [*f.values, "synthetic_shape"], LINK_SETTINGS))
    head, mode = st.columns([5, 1.3], vertical_alignment="bottom")
    head.markdown("### SpeedLab · Train")
    toasts.below()  # Stop's toast must not cover Stop
    presenter.toggle(mode)
    c1, c2, c3 = st.columns([2, 1.3, 3.2], vertical_alignment="center")
    with_baseline = c1.toggle("Compare with baseline", value=True, key="with_baseline",
                              bind="query-params", persist_state="session",
                              help="Run the float32, 1-device baseline first (or reuse a stored "
                                   "one that matches) and report the speedup over it.")
    reuse = c1.toggle("Reuse stored baseline", value=False, key="reuse_baseline", disabled=not with_baseline,
                      help="Off (default): the baseline is measured fresh, in interleaved pairs with your run, "
                           "for an interval and a verdict. On: one run against the newest matching stored "
                           "baseline of this machine (its age is shown); one pair, no interval.")
    tuned_row = stored_tuned(cfg)
    tuned = c1.toggle("Against the tuned baseline", value=False, key="tuned_baseline", bind="query-params",
                      persist_state="session", disabled=not with_baseline or reuse or tuned_row is None,
                      help=tuned_help(tuned_row))
    pending = url_params.check(link, [*f.values, "synthetic_shape", "with_baseline"], LINK_SETTINGS)
    clicked = c2.button("Launch", type="primary", icon=":material/rocket_launch:", key="launch",
                        disabled=cfg is None or bool(pending), width="stretch")
    presets_popover(c2, f.values.get("dataset"))
    if cfg is None:
        c3.error(f"Launch is disabled: {plain.md(error)}", icon=":material/block:")
    else:
        c3.caption(chart_style.config_summary(cfg.to_dict()) + f" · {cfg.steps_per_epoch()} steps/epoch")
    handoff.notes(c3)  # a speed option from the Hardware page that was fitted to these settings
    allow_slow = slow_line(cfg, c3)
    if pending:
        url_params.show(pending, st.container())
    messages = st.container()
    ap_busy = machine_busy()
    if ap_busy:
        messages.info(ap_busy, icon=":material/travel_explore:")
    if clicked and cfg is not None and not pending:
        launch(cfg, with_baseline, messages, reuse=reuse,
               baseline_kind="tuned" if tuned and tuned_row is not None else "default", allow_slow=allow_slow)
    commands_panel()  # "Compare two commands", local servers only

    active = any_active()
    # While a run is active the live view re-reads the store every second; when
    # idle it is drawn once and a cheap watcher looks for new runs. While a comparison
    # measures, its headline and pair chart are drawn here, once per pair, and the
    # fragment only reads the store every QUIET_REFRESH_S (every second after Stop).
    live = measuring() if active else None
    if live is not None:
        with one_line_errors("Comparison"):
            with Store() as store:
                comparison_block(store, live)
    # A plain run redraws every second while it starts, every 3 s once steady (live_refresh).
    phase = live_phase() if active and live is None else None
    st.fragment(live_view, run_every=(quiet_refresh_s() if live else live_refresh.refresh_s(phase)) if active
                else None)(active, signature(live), phase)
    if not active:
        st.fragment(watch, run_every=WATCH_REFRESH_S)(bool(ap_busy))
    toasts.flush()  # last: a fragment above may rerun the page (views/components/toasts.py)


if __name__ == "__main__":
    main()
