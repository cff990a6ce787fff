"""The optional shared-secret gate: with $SPEEDLAB_SECRET set, every page asks for it
once per browser session before it runs (app.py calls `passed()` before navigation).

Not a user system: one secret for everyone who may drive this machine, for a
dashboard served beyond localhost (docs/reliability.md). Compared in constant
time (hmac.compare_digest). Unset or empty: no gate (the server is local only).
"""
from __future__ import annotations

import hmac
import os

import streamlit as st

ENV = "SPEEDLAB_SECRET"


def secret() -> str:
    """The configured secret ('' when the gate is off)."""
    return os.environ.get(ENV, "")


def passed() -> bool:
    """True when no secret is configured or this session has given it; otherwise
    draws the sign-in form and returns False (the caller stops: no page runs)."""
    want = secret()
    if not want or st.session_state.get("_gate_ok"):
        return True
    st.markdown("### SpeedLab")
    with st.form("gate"):
        given = st.text_input("Access secret", type="password", key="_gate_secret",
                              help=f"This dashboard is served with ${ENV} set: ask whoever runs it")
        ok = st.form_submit_button("Open", icon=":material/lock_open:")
    if ok:
        if hmac.compare_digest(given.encode(), want.encode()):
            st.session_state["_gate_ok"] = True
            st.rerun()
        st.error("That is not the access secret.", icon=":material/lock:")
    return False
