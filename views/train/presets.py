"""Train page, presets: each bundled data set's presets (engine.config.presets.menu) in one popover
beside Launch, each with its one-line description; a click fills the settings.
"""
from __future__ import annotations

import streamlit as st

from engine.hardware import fingerprint
from engine.config import presets
from engine.config import RunConfig
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
