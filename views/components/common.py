"""Shared by the dashboard pages (not a page itself: app.py lists the pages): error lines,
the autopilot's runs, which runs started, Plotly's tool bar settings."""
import logging
from contextlib import contextmanager

import streamlit as st

from engine.base import plain
from engine.store import never_ran, started  # noqa: F401 (the pages' one rule, engine.store.rows)

log = logging.getLogger("speedlab.dashboard")
PLOTLY_CONFIG = {"displaylogo": False, "modeBarButtonsToRemove": ["lasso2d", "select2d"]}
# Small charts (three in a row, the sidebar previews): Plotly's tool bar covered their
# titles (drag still zooms, a double click resets).
SMALL_CONFIG = {**PLOTLY_CONFIG, "displayModeBar": False}


def autopilot_run(run: dict) -> bool:
    """Whether the autopilot submitted `run` (a trial, runoff, re-run or ablation
    run: its group id starts with the autopilot's id)."""
    return (run.get("group_id") or "").startswith("autopilot-")


@contextmanager
def one_line_errors(what: str):
    """An unexpected error becomes one line on the page (the traceback goes to
    the server log), so no traceback reaches the page, the other sections still
    render, and a live view keeps refreshing on its next tick."""
    try:
        yield
    except Exception as e:  # noqa: BLE001 - st.rerun/st.stop are BaseExceptions and pass
        log.exception("%s failed", what)
        from engine.store import StoreError, default_path, fault_line

        line = str(e) if isinstance(e, StoreError) else fault_line(e, default_path())
        if line:  # a damaged or full store, a damaged row: its own line and the way out
            st.error(f"{what}: {line}", icon=":material/database:")
            return
        first = (str(e).splitlines() or [""])[0][:300]
        st.error(f"{what} failed: {type(e).__name__}: {plain.md(first)}", icon=":material/error:")


def number_format(value: float | None, step: float) -> str:
    """The printf format of a float number input that hides no digit of `value` (to 6
    significant digits) nor of `step`: "%.3f" for 0.965 (step 0.01), "%.7f" for 1e-7 (a fixed
    "%.2f" showed 0.965 as "0.96"; "%.5f" showed 1e-7 as "0.00000"). `value` None: the step's."""
    def decimals(x: float | None) -> int:
        if x is None or x != x or x in (float("inf"), float("-inf")):
            return 0
        import numpy as np

        # 6 significant digits first: float noise (0.15000000000000002) is no digit of the value.
        text = np.format_float_positional(float(f"{abs(x):.6g}"), trim="-")
        return len(text.split(".")[1]) if "." in text else 0

    return f"%.{max(decimals(value), decimals(step))}f"
