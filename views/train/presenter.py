"""Train page in presenter mode (?mode=talk): one row of configuration, Launch,
Stop and the toggle, then the headline and two charts (views/components/presenter.py).
"""
from __future__ import annotations

import streamlit as st

from engine.config import RunConfig
from engine.jobs import runner
from engine.charts import style as chart_style
from engine.store import Store
from views.components import presenter, toasts, url_params
from views.components.common import one_line_errors
from views.components.live_charts import own_active, stop_clicked
from views.train.launch import launch, machine_busy, stored_tuned
from views.train.live import LIVE_REFRESH_S, WATCH_REFRESH_S, any_active, current_comparison, measuring


def presenter_main(cfg: RunConfig | None, error: str | None, pending: list[str]) -> None:
    """Presenter mode (views/components/presenter.py): one row with the configuration, Launch,
    Stop and the mode toggle, then the headline and two charts, live. The
    settings stay in the (collapsed) sidebar; the baseline is compared as the
    'Compare with baseline' toggle was last set (on by default). `pending`:
    settings from the link that were not taken (url_params); Launch waits for them."""
    presenter.style()
    active = any_active()
    ap_busy = machine_busy()
    summary, launch_col, stop_col, mode = st.columns([4.7, 1.2, 1.1, 1.8], vertical_alignment="center")
    summary.container(key="presenter_config").markdown(presenter_config_line(cfg, error))
    clicked = launch_col.button("Launch", type="primary", icon=":material/rocket_launch:", key="launch",
                                disabled=cfg is None or active or bool(pending), width="stretch")
    stop_col.button("Stop", icon=":material/stop:", key="stop", disabled=not active, width="stretch",
                    on_click=stop_clicked)
    st.session_state.pop("stop_redraw", None)  # this run is the whole page already
    presenter.toggle(mode)
    if ap_busy:
        st.info(ap_busy, icon=":material/travel_explore:")
    if pending:
        url_params.show(pending, st.container())
    if clicked and cfg is not None and not pending:
        with_baseline = st.query_params.get("with_baseline", "true").lower() != "false"
        tuned = st.query_params.get("tuned_baseline", "false").lower() == "true" and stored_tuned(cfg) is not None
        launch(cfg, with_baseline, toasts.Sink(),  # the fragment notices the new run and redraws
               baseline_kind="tuned" if tuned else "default")
        if st.session_state.get("launched"):
            toasts.say(st.session_state["launched"]["msg"], icon=":material/rocket_launch:")
    st.fragment(presenter_view, run_every=(presenter.measure_refresh_s() if measuring() else LIVE_REFRESH_S) if active
                else WATCH_REFRESH_S)(active, bool(ap_busy))
    toasts.flush()  # last: the fragment above may rerun the page (views/components/toasts.py)


def presenter_config_line(cfg: RunConfig | None, error: str | None) -> str:
    """Presenter mode's top line: the configuration Launch starts. Named "Next" when
    the run on screen is another one (a new tab starts from the defaults, and the line read
    as the label of the charts below); "Next" keeps it on one line at 1280 px."""
    if cfg is None:
        return f":material/block: {error}"
    line = chart_style.config_summary(cfg.to_dict())
    with Store() as store:
        _, _, run = current_comparison(store)
    if run is None or chart_style.config_summary(run["config"]) == line:
        return line
    return f":material/skip_next: Next: {line}"


def presenter_view(was_active: bool, ap_was_busy: bool = False) -> None:
    """Body of presenter mode's live fragment: the current comparison, re-read
    from the store on every tick (as live_view)."""
    with one_line_errors("Live view"):
        with Store() as store:
            runner.reconcile(store)
            group, base, run = current_comparison(store)
            # A run or the autopilot started or ended: Launch, Stop and the autopilot's line follow.
            if bool(own_active(store)) != was_active or bool(machine_busy()) != ap_was_busy:
                st.rerun()
            if not group:
                st.info("No runs yet: press **Launch** (settings in the sidebar, **>** at the top left).",
                        icon=":material/rocket_launch:")
                return
            presenter.comparison(store, base, run)
