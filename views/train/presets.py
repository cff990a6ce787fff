"""Train page, presets: each bundled data set's presets (engine.config.presets.menu) in one popover
beside Launch, each with its one-line description; a click fills the settings.
"""
from __future__ import annotations

import streamlit as st

from engine.hardware import fingerprint
from engine.config import presets
from engine.config import SETTING_HELP, MODELS, RunConfig
from views.components import handoff
from views.components.common import one_line_errors


def _tuned(dataset: str) -> dict | None:
    """The tuned baseline stored on this machine for `dataset`'s defaults (engine.store.tuned_baselines,
    `python -m engine tune-baseline`), or None."""
    from engine.store import tuned_baselines

    row = tuned_baselines.lookup(RunConfig(dataset=dataset), fingerprint.row_here)
    return row if row and row.get("learning_rate") else None


def apply(settings: dict) -> None:
    """Button callback: set every control to the preset (the others back to their defaults),
    before the controls are drawn again; the URL follows the controls."""
    handoff.fill(settings, reset_others=True)
    st.session_state["preset_applied"] = settings.get("dataset")


_NOT_FOLLOWED = ("seed", "validation_seed")  # a pair's own seeds: a new run keeps the page's


def follow_running(link: dict | None) -> None:
    """A new tab (`link`: url_params.snapshot, not None on a session's first run) opened while
    a comparison runs starts its settings from that comparison's run and baseline kind, unless
    its link carries run settings: its top line and toggles then describe what is on screen
    (a second tab read "Next: digits · cnn" above a running mnist5k comparison, with the tuned
    baseline toggle greyed out under a "vs tuned" headline)."""
    if link is None or set(link) & set(SETTING_HELP):
        return
    from engine.store import ACTIVE_STATUSES, Store, comparisons as cstore
    from views.train.live import current_comparison

    with one_line_errors("Following the running comparison"):
        with Store() as store:
            group, _, run = current_comparison(store)
            gid = run.get("group_id") if run else None
            if not (gid or "").startswith("cmp-") or not any(r["status"] in ACTIVE_STATUSES for r in group):
                return
            comp = cstore.by_group(store, gid)
        cfg = run.get("config") or {}
        if cfg.get("model") not in MODELS:  # an own model's file is chosen in its own control
            return
        # The settings a control holds (numbers, words, switches); a field left unset keeps its default.
        apply({k: v for k, v in cfg.items() if k in SETTING_HELP and k not in _NOT_FOLLOWED
               and isinstance(v, (bool, int, float, str))})
        st.session_state["with_baseline"] = True
        st.session_state["tuned_baseline"] = ((comp or {}).get("settings") or {}).get("baseline_kind") == "tuned"


def presets_popover(container, dataset: str | None) -> None:
    """'Presets': the data set's presets, one button and one line each; nothing for a data set
    without presets."""
    if not dataset or dataset not in presets.PRESETS:
        return
    tuned = None
    with one_line_errors("Tuned baseline"):
        tuned = _tuned(dataset)
    box = container.popover("Presets", icon=":material/tune:", width="stretch",
                            help=f"Ready configurations for {dataset}: a click fills the settings")
    box.markdown(f"**Presets for {dataset}**: a click fills the settings")
    for i, p in enumerate(presets.menu(dataset, tuned)):
        box.button(p["name"], key=f"preset_{dataset}_{i}", disabled=p["settings"] is None, on_click=apply,
                   args=(p["settings"],), help=p["missing"], width="stretch")
        box.caption(p["line"])
        if p["slow"]:  # flagged before Launch: this CPU emulates its precision
            box.caption(f":material/speed: slower here: {p['slow']}")
