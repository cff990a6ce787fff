"""One way to fill the Train page with settings: the Autopilot's winner, the Hardware page's
benchmark cell and the Presets menu all go through `fill`.

The Train page's controls are keyed by RunConfig field names (every field of SETTING_HELP that
the page shows) and keep their values across pages (`persist_state="session"`), so a handoff
sets those values in the session before the Train page draws its controls:

- `reset_others=True` (the Autopilot's winner, a preset): every field the handoff does not name
  goes back to RunConfig's default, so the page launches exactly the configuration handed over;
- `reset_others=False` (the Hardware page's speed options): the user's data, model and the
  rest stay as they were. The speed options were measured on the benchmark's own data, so
  `fit` checks them against the user's settings (as the Train page last validated them,
  `remember`) with the engine's own checks: a number that does not fit (steps per execution
  above the steps of one of the user's epochs, devices that do not divide the batch) is
  lowered to the largest value that fits, another option that conflicts with a setting of
  the user's is not applied, and the Train page says so in one line each (`notes`).

On the Train page, `fill` is the preset button's callback. From another page, `hand_over` is the
button's callback and `go_to_train` follows the click: it opens the Train page with the
handed-over settings in its URL (a link to what was launched).
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

import streamlit as st

from engine.base import plain
from engine.config import SETTING_HELP, RunConfig
from engine.config.preflight import check_runnable

TRAIN_PAGE = "views/train/train.py"
_PENDING = "_handoff_to_train"
_VALUES = "_train_values"   # the Train page's values as it last validated them (`remember`)
_NOTES = "_handoff_notes"   # [(field, value it was set to, one line)] for the Train page (`notes`)
_DEFAULTS = RunConfig().to_dict()
# The order `fit` applies speed options in: the backend changes what XLA and devices mean,
# replicas change the steps of an epoch (so steps per execution comes last).
FIT_ORDER = ("backend", "workers", "devices", "precision", "jit_compile", "steps_per_execution")
_WORDS = {"jit_compile": "XLA", "steps_per_execution": "steps per execution"}


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
    drawn: as a button's on_click, or on the Train page before its controls. The notes of an
    earlier handoff (`notes`) end here: they were about settings this one replaces."""
    st.session_state.pop(_NOTES, None)
    for name in SETTING_HELP:
        if name in changes:
            st.session_state[name] = _control_value(changes[name])
        elif reset_others and name in st.session_state:
            default = _DEFAULTS.get(name)
            if default is None or isinstance(default, (list, tuple)):
                st.session_state.pop(name)  # the control's own default (it has no stored value)
            else:
                st.session_state[name] = default


def remember(values: Mapping[str, Any]) -> None:
    """The Train page's call after its controls: `values` (RunConfig field -> value, what it
    validates) are the user's settings a later `hand_over(..., fit_from=...)` fits to."""
    st.session_state[_VALUES] = dict(values)


def _problem(values: Mapping[str, Any], machine: Optional[dict]) -> Optional[Exception]:
    """What stops `values` from launching, as the Train page checks it (RunConfig's validation,
    then the preflight's machine checks), or None."""
    try:
        check_runnable(RunConfig.from_dict(dict(values)), machine)
    except Exception as e:  # noqa: BLE001 - a ConfigError, or a value no control could hold
        return e
    return None


def _whole(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _toward(want: Any, own: Any) -> list:
    """Values to try instead of `want`, nearest first: for whole numbers every one from `want`
    toward `own` (`own` included), else `own` alone."""
    if _whole(want) and _whole(own) and want != own:
        step = -1 if own < want else 1
        return list(range(want + step, own + step, step))
    return [own]


def _word(value: Any) -> str:
    return "on" if value is True else "off" if value is False else str(value)


def _why(e: Exception, name: str) -> str:
    """The engine's reason, naming the setting only when it is another one than `name`."""
    field, problem = getattr(e, "field", None), getattr(e, "problem", None)
    if field is None or problem is None:
        return str(e)
    return f"{e.value} {problem}" if field == name else f"{field} {e.value!r} {problem}"


def fit(values: Mapping[str, Any], changes: Mapping[str, Any], source: str = "the benchmark",
        machine: Optional[dict] = None) -> tuple[dict, list[tuple[str, Any, str]]]:
    """`changes` (RunConfig field -> value) fitted to the user's settings `values` (the Train
    page's, `remember`), checked as the Train page checks them (`_problem`). Returns (the
    changes to hand over, notes: [(field, value set, one line)] for each change that did not
    fit as it was): a whole number is lowered (or raised) toward the user's own value until
    it fits ("steps per execution 8 from the benchmark → 6: 8 is more than the 6 steps in one
    epoch (digits at batch 256)"); any other value is left at the user's own. Where the
    user's own settings do not launch either, `changes` are handed over as they are: the
    Train page names the user's own problem. `machine`: engine.hardware.machine.quick_facts()
    (looked up when None)."""
    own = {**_DEFAULTS, **values}
    if _problem(own, machine) is not None:
        return dict(changes), []
    fitted: dict = {}
    notes = []
    where = f"{own.get('dataset')} at batch {own.get('batch_size')}"
    for name in sorted(changes, key=lambda k: FIT_ORDER.index(k) if k in FIT_ORDER else len(FIT_ORDER)):
        want = changes[name]
        e = _problem({**own, **fitted, name: want}, machine)
        if e is None:
            fitted[name] = want
            continue
        # The user's own value fits (checked above, with every option fitted before it), so
        # the search always ends.
        value = next((v for v in _toward(want, own.get(name)) if _problem({**own, **fitted, name: v}, machine) is None),
                     own.get(name))
        fitted[name] = value
        line = f"{_WORDS.get(name, name)} {_word(want)} from {source} " + (
            f"→ {value}" if _whole(value) else f"not applied, kept {_word(value)}")
        notes.append((name, value, f"{line}: {_why(e, name)} ({where})"))
    return fitted, notes


def hand_over(changes: Mapping[str, Any], reset_others: bool, fit_from: Optional[str] = None) -> None:
    """A button's on_click on another page: `fill`, and keep `changes` for `go_to_train`.
    With `fit_from` (e.g. "the benchmark"; only with reset_others False), `changes` are first
    fitted to the user's settings (`fit`) and the Train page shows why one was changed (`notes`)."""
    found: list = []
    if fit_from and not reset_others:
        changes, found = fit(st.session_state.get(_VALUES) or {}, changes, fit_from)
    fill(changes, reset_others)
    st.session_state[_NOTES] = found
    st.session_state[_PENDING] = dict(changes)


def notes(container) -> None:
    """The last handoff's notes (`fit`), one line each in `container`, while the setting each is
    about still holds the value it was set to (a change by hand ends the note)."""
    for name, value, line in st.session_state.get(_NOTES) or []:
        if st.session_state.get(name) == _control_value(value):
            container.info(plain.md(line), icon=":material/tune:")


def query_params(changes: Mapping[str, Any]) -> dict:
    """The Train page's URL parameters for `changes` (values as the URL spells them)."""
    return {k: ("true" if v else "false") if isinstance(v, bool) else str(_control_value(v))
            for k, v in changes.items()}


def go_to_train() -> None:
    """After a button whose on_click was `hand_over`: open the Train page, the settings in its URL."""
    changes = st.session_state.pop(_PENDING, None) or {}
    st.switch_page(TRAIN_PAGE, query_params=query_params(changes))
