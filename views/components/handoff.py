"""One way to fill the Train page with settings: the Autopilot's winner, the Hardware page's
benchmark cell and the Presets menu all go through `fill`.

The Train page's controls are keyed by RunConfig field names (every field of SETTING_HELP that
the page shows) and keep their values across pages (`persist_state="session"`), so a handoff
sets those values in the session before the Train page draws its controls:

- `reset_others=True` (the Autopilot's winner, a preset): every field the handoff does not name
  goes back to RunConfig's default, so the page launches exactly the configuration handed over;
- `reset_others=False` (the Hardware page's speed options): the user's data, model and the
  rest stay as they were.

On the Train page, `fill` is the preset button's callback. From another page, `hand_over` is the
button's callback and `go_to_train` follows the click: it opens the Train page with the
handed-over settings in its URL (a link to what was launched).
"""
from __future__ import annotations

from typing import Any, Mapping

import streamlit as st

from engine.config import SETTING_HELP, RunConfig

TRAIN_PAGE = "views/train/train.py"
_PENDING = "_handoff_to_train"
_DEFAULTS = RunConfig().to_dict()


def _control_value(value: Any) -> Any:
    """A RunConfig value as the Train page's control holds it (a shape list as its text box's '32,32,3')."""
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return value


def differing(config: Mapping[str, Any]) -> dict:
    """The settings of `config` (a RunConfig dict) that differ from RunConfig's defaults, for
    every field the Train page has a control for (SETTING_HELP)."""
    return {k: config[k] for k in SETTING_HELP
            if k in config and config[k] is not None and config[k] != _DEFAULTS.get(k)}


def fill(changes: Mapping[str, Any], reset_others: bool) -> None:
    """Set the Train page's controls to `changes` (field -> RunConfig value); with `reset_others`
    every other control goes back to its default. Call it before the Train page's controls are
    drawn: as a button's on_click, or on the Train page before its controls."""
    for name in SETTING_HELP:
        if name in changes:
            st.session_state[name] = _control_value(changes[name])
        elif reset_others and name in st.session_state:
            default = _DEFAULTS.get(name)
            if default is None or isinstance(default, (list, tuple)):
                st.session_state.pop(name)  # the control's own default (it has no stored value)
            else:
                st.session_state[name] = default


def hand_over(changes: Mapping[str, Any], reset_others: bool) -> None:
    """A button's on_click on another page: `fill`, and keep `changes` for `go_to_train`."""
    fill(changes, reset_others)
    st.session_state[_PENDING] = dict(changes)


def query_params(changes: Mapping[str, Any]) -> dict:
    """The Train page's URL parameters for `changes` (values as the URL spells them)."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else str(_control_value(v))
            for k, v in changes.items()}


def go_to_train() -> None:
    """After a button whose on_click was `hand_over`: open the Train page, the settings in its URL."""
    changes = st.session_state.pop(_PENDING, None) or {}
    st.switch_page(TRAIN_PAGE, query_params=query_params(changes))
