"""Settings from the page's URL that a control did not take: never silently.

The Train page's controls are bound to the URL (``bind="query-params"``), so a
link carries a configuration. Streamlit drops a value its control cannot take
(``batch_size=abc``, ``precision=float8``, a data set that is not registered
here) and shows the default instead. `check` compares the URL as the session
opened it with the values the controls ended up with; every difference becomes
a notice naming the setting, the value from the link and what replaced it, kept
until the user accepts it (Launch stays disabled until then).

Not a page: views/train/train.py calls `snapshot` first and `check` after its controls.
"""
from __future__ import annotations

import math
from typing import Any, Mapping, Optional

import streamlit as st

_NOTICES = "_url_notices"   # pending notices (list of str), until accepted
_CHECKED = "_url_checked"   # the first run of a session (a link opens one) has been checked


def snapshot() -> Optional[dict]:
    """The URL's query parameters as this session opened it, or None after the
    session's first run (later reruns are the user's own changes)."""
    if st.session_state.get(_CHECKED):
        return None
    return {k: st.query_params[k] for k in st.query_params}


def _same(raw: str, value: Any) -> bool:
    """Whether the URL text `raw` means the control's `value`."""
    if isinstance(value, bool):
        return raw.strip().lower() in (("true", "1") if value else ("false", "0"))
    if isinstance(value, (int, float)):
        try:
            got = float(raw)
        except ValueError:
            return False
        return math.isclose(got, float(value), rel_tol=1e-9, abs_tol=1e-12)
    return raw == str(value)


def rejected(raw: Mapping[str, str], values: Mapping[str, Any]) -> list[tuple[str, str, Any]]:
    """(setting, value in the URL, value the control has) for every URL parameter
    of a control (a key of `values`) whose value the control did not take."""
    return [(k, v, values[k]) for k, v in raw.items() if k in values and not _same(v, values[k])]


def notice(key: str, raw: str, value: Any, why: Optional[str] = None) -> str:
    """One line, e.g. "batch_size: 'abc' from the link was not accepted (not a number); using 128 instead"."""
    shown = "on" if value is True else "off" if value is False else repr(value) if isinstance(value, str) else value
    return f"{key}: {raw!r} from the link was not accepted{f' ({why})' if why else ''}; using {shown} instead"


def _why(key: str, raw: str, value: Any) -> Optional[str]:
    if isinstance(value, bool):
        return "not true or false"
    if isinstance(value, (int, float)):
        try:
            float(raw)
        except ValueError:
            return "not a number"
        return "out of this control's range"
    if key == "dataset":
        from engine.config import ConfigError
        from engine.data.meta import dataset_info

        try:
            dataset_info(raw)
        except ConfigError as e:
            return e.problem
        return None
    return "not one of the choices"


def unused(raw: Mapping[str, str], keys, settings) -> list[str]:
    """One notice for each parameter of `raw` that is a run setting (in `settings`) with
    no control among `keys`: one hidden by the other settings (reduce_on_plateau with a
    cyclic schedule, fused_optimizer on JAX), whose value would otherwise vanish. A value
    equal to the default is not one: the run uses it anyway (the Autopilot's "Use this
    configuration" passes every field, e.g. reference_batch_size 128 without scale_lr)."""
    shown = set(keys)
    return [f"{k}: {v!r} from the link was not used (no control takes it with these settings); "
            "the run uses the default" for k, v in raw.items()
            if k in settings and k not in shown and not _is_default(k, v)]


def _is_default(key: str, text: str) -> bool:
    """Whether URL value `text` spells RunConfig's default for field `key`."""
    from engine.config import RunConfig

    default = getattr(RunConfig(), key, None)
    if isinstance(default, bool):
        return text.strip().lower() == str(default).lower()
    if isinstance(default, (int, float)):
        try:
            return float(text) == float(default)
        except ValueError:
            return False
    return text == str(default)


def check(raw: Optional[dict], keys, settings=()) -> list[str]:
    """Record a notice for every parameter of `raw` (from `snapshot`) that the
    controls named in `keys` did not take, and for every run setting of `settings`
    that no control took (`unused`); returns the pending notices."""
    if raw is not None:
        values = {k: st.session_state[k] for k in keys if k in st.session_state}
        found = [notice(k, v, val, _why(k, v, val)) for k, v, val in rejected(raw, values)]
        found += unused(raw, keys, settings)
        st.session_state[_NOTICES] = found
        st.session_state[_CHECKED] = True
    return list(st.session_state.get(_NOTICES) or [])


def show(pending: list[str], container) -> None:
    """The pending notices and the button that accepts them (Launch waits for it)."""
    with container:
        st.warning("**Settings from the link were changed:**\n\n" + "\n".join(f"- {n}" for n in pending),
                   icon=":material/link_off:")
        if st.button("Accept these settings", key="url_accept", icon=":material/check:"):
            st.session_state[_NOTICES] = []
            st.rerun()
