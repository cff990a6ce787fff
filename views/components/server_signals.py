"""The dashboard server's stop signals: SIGTERM, SIGINT or SIGHUP to the Streamlit server
stops what the store runs, naming the signal, before Streamlit shuts down
(engine.jobs.stopping.stop_on_server_signals; docs/reliability.md, "signals")."""
from __future__ import annotations

import streamlit as st


@st.cache_resource(show_spinner=False)
def install() -> bool:
    """Once per server (app.py calls it on every page run; the cache keeps it to one).
    Signal handlers belong to the main thread, which runs Streamlit's event loop: the install
    is handed to it. Returns False where there is no server (AppTest): nothing installed."""
    from streamlit.runtime import Runtime

    from engine.jobs import stopping

    try:
        loop = Runtime.instance()._get_async_objs().eventloop  # private: no public handle in 1.67
    except (RuntimeError, AttributeError):  # not a server (AppTest): nothing to install
        return False
    loop.call_soon_threadsafe(stopping.stop_on_server_signals)
    return True
