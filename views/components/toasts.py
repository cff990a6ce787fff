"""Toasts: said during a page run, shown at its end, at the bottom right.

Streamlit drops a toast when the same script run is rerun after it (`st.rerun()`, here from a
live fragment that notices a run start or end): 8 of 8 lost in Chromium with Streamlit 1.67,
and CI lost Stop's toast so. So a page says its toasts into the session (`say`) and shows them
with `flush` as its last line: a run that a fragment reruns never gets there, and the next run
that does shows them.
"""
from __future__ import annotations

import streamlit as st

_PENDING = "toasts_pending"

# Toasts open at the top right by default, over Stop and the Presenter switch (issue 43): at the
# bottom right they cover a corner of a chart for a few seconds, never a control.
TOAST_CSS = "<style>.stToastContainer { top: auto !important; bottom: 1rem !important; }</style>"


def say(body: str, icon: str | None = None) -> None:
    """Keep one toast for `flush` (also from a widget's callback, where drawing is not supported)."""
    st.session_state.setdefault(_PENDING, []).append((body, icon))


def below() -> None:
    """Move this page's toasts to the bottom right (TOAST_CSS)."""
    st.markdown(TOAST_CSS, unsafe_allow_html=True)


def flush() -> None:
    """Show the toasts said since the last flush (`say`). Call it as the page's last line."""
    for body, icon in st.session_state.pop(_PENDING, []):
        st.toast(body, icon=icon)


class Sink:
    """Where launch() writes its one-line outcome in presenter mode: a toast (`say`), which takes
    no room from the charts (same methods as a container)."""

    def _say(self, body: str, icon: str | None = None, **_) -> None:
        say(body, icon)

    success = warning = error = info = _say
