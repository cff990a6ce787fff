"""Train page, the schedule expander: the learning-rate preview and the LR
range test (engine.lr_find.range_test), whose suggested max LR one click applies.
"""
from __future__ import annotations

import pandas as pd
import streamlit as st

from engine.config import lr_math
from engine.base import plain
from engine.config import ConfigError, RunConfig
from engine.jobs import background
from engine.lr_find import range_test as lr_find
from engine.charts import train as train_charts
from views.components.common import SMALL_CONFIG, one_line_errors

# LR range test: the sweep's range and length (engine.lr_find.range_test defaults).
LR_SWEEP = {"min_lr": 1e-6, "max_lr": 1.0, "steps": 100}
# Settings that change an LR sweep's curve: an older sweep with other values is flagged.
LR_SWEEP_FIELDS = ("dataset", "model", "batch_size", "optimizer", "momentum", "precision", "devices",
                   "label_smoothing", "mixup_alpha")


def lr_preview(cfg: RunConfig, container) -> None:
    """The schedule's learning rate (and momentum) per step, from engine.config.lr_math."""
    try:
        p = lr_math.preview(cfg, cfg.steps_per_epoch())
        df = pd.DataFrame({k: p[k] for k in ("step", "lr", "momentum") if k in p})
    except Exception as e:  # noqa: BLE001
        container.caption(f"LR preview unavailable: {type(e).__name__}: {e}")
        return
    container.markdown("**Learning-rate preview**")
    container.plotly_chart(train_charts.lr_preview_figure(df, cfg.steps_per_epoch()), key="lr_preview",
                           config=SMALL_CONFIG)


def use_max_lr(value: float) -> None:
    """Button callback (runs before the controls are drawn): set the max LR control."""
    st.session_state["max_lr"] = value


def _sweep_differs(result: dict, cfg: RunConfig) -> list[str]:
    """Settings (LR_SWEEP_FIELDS) in which a stored sweep differs from `cfg`."""
    old = result.get("config") or {}
    now = cfg.to_dict()
    return [k for k in LR_SWEEP_FIELDS if k in old and old[k] != now.get(k)]


def lr_finder(cfg: RunConfig | None, was_running: bool) -> None:
    """Body of the LR range test fragment (in the schedule expander): the
    button, the sweep's progress while it runs, then its loss-vs-LR chart and
    'Use as max LR'. Re-reads lr-find-progress.json on every tick."""
    with one_line_errors("LR range test"):
        p = lr_find.read_progress()
        running = bool(p) and p["state"] in background.ACTIVE_STATES
        if running != was_running:  # started elsewhere, or finished: redraw the sidebar
            st.rerun()
        st.markdown("**Learning-rate range test**")
        if running:
            st.progress(min(p.get("elapsed", 0) / 60.0, 0.95),
                        text=f":material/search: Sweeping the LR {LR_SWEEP['min_lr']:g} → "
                             f"{LR_SWEEP['max_lr']:g} over up to {p.get('steps')} batches · "
                             f"{p.get('elapsed', 0):.0f} s")
            if st.button("Cancel the sweep", icon=":material/stop:", key="lr_find_cancel"):
                lr_find.cancel_background()
                st.rerun()
            return
        if st.button("Find learning rate", icon=":material/search:", key="lr_find_start",
                     disabled=cfg is None, width="stretch",
                     help=f"Train the current model for up to {LR_SWEEP['steps']} batches with the LR "
                          f"rising from {LR_SWEEP['min_lr']:g} to {LR_SWEEP['max_lr']:g}, in the "
                          "background (Smith 2017); suggests a max LR"):
            try:
                lr_find.start_background(cfg, **LR_SWEEP)
                st.rerun()
            except (ConfigError, lr_find.LRFindError) as e:
                st.warning(str(e), icon=":material/hourglass_top:")
                return
        res = lr_find.load_latest()
        if p and p["state"] == "failed" and (p.get("finished") or 0) > ((res or {}).get("created") or 0):
            st.error(f"The LR range test failed: {plain.md(p.get('error') or 'no message')}", icon=":material/error:")
        if not res:
            st.caption("Sweeps the learning rate upwards on your data and model and suggests the "
                       "largest one that still trains well, as max LR for cyclic / one_cycle.")
            return
        sug = res.get("suggestion") or {}
        df = pd.DataFrame({"lr": res["lr"], "loss": res["loss"], "smoothed": res["smoothed"]})
        st.plotly_chart(train_charts.lr_find_figure(df, sug.get("suggested"), sug.get("min_loss_lr")),
                        key="lr_find_chart", config=SMALL_CONFIG)
        differs = _sweep_differs(res, cfg) if cfg else []
        if differs:
            st.caption(f":material/info: This sweep used other settings ({', '.join(differs)}): "
                       "press Find learning rate again for the current ones.")
        value = sug.get("suggested")
        if value is None:
            why = sug.get("reason") or "the sweep gave no finite loss"
            st.warning(why[0].upper() + why[1:] if why.startswith("no ") else f"No suggestion: {why}",
                       icon=":material/block:")
            return
        value = float(f"{value:.3g}")
        st.caption(f"Suggested max LR **{value:.3g}** ({sug.get('reason')})")
        st.button(f"Use {value:.3g} as max LR", icon=":material/check:", key="lr_find_use",
                  on_click=use_max_lr, args=(value,), width="stretch",
                  help="Sets Max learning rate above; it is used by the cyclic and one_cycle schedules")
        if cfg is not None and cfg.schedule not in ("cyclic", "one_cycle"):
            st.caption("Max LR takes effect with the cyclic or one_cycle schedule.")
