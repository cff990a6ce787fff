"""SpeedLab dashboard: ``streamlit run app.py``.

Page config and navigation only; each page is one file in views/, or a package there
whose module of the same name is the entry (views/train/train.py: Streamlit
names the URL after the file); what pages share is in views/components/. Not pages/:
next to st.navigation, a pages/ folder makes Streamlit run a page without
app.py when its URL is opened directly or reloaded. Adding a page is one
line in PAGES. The app process never imports TensorFlow: runs
execute in worker processes started by engine.jobs.runner. With
$SPEEDLAB_SECRET set, no page runs before the session has given it (views/gate.py).
"""
import os

import streamlit as st

from engine.base.process import start_time
from views import gate, store_check
from views.components import server_signals

# The queue and spare worker this server starts leave within seconds of its exit when idle
# (engine.jobs.queue_runner.Owner): they inherit these.
if not os.environ.get("SPEEDLAB_OWNER_PID"):
    os.environ["SPEEDLAB_OWNER_PID"], os.environ["SPEEDLAB_OWNER_START"] = str(os.getpid()), str(start_time())

server_signals.install()  # a stop signal to this server stops what the store runs, naming it

# Presenter mode (?mode=talk, views/components/presenter.py) starts with the settings bar collapsed.
st.set_page_config(page_title="SpeedLab", page_icon=":material/speed:", layout="wide",
                   initial_sidebar_state="collapsed" if st.query_params.get("mode") == "talk" else "expanded")

PAGES = [
    st.Page("views/train/train.py", title="Train", icon=":material/rocket_launch:", default=True),
    st.Page("views/runs/runs.py", title="Runs", icon=":material/table_chart:"),
    st.Page("views/replay.py", title="Replay", icon=":material/replay:"),
    st.Page("views/hardware/hardware.py", title="Hardware", icon=":material/memory:"),
    st.Page("views/autopilot.py", title="Autopilot", icon=":material/travel_explore:"),
]

# The optional shared secret ($SPEEDLAB_SECRET) is checked before any page runs; a
# damaged or unreadable store is one line with the way out, not a page's traceback.
if gate.passed():
    page = st.navigation(PAGES, position="top")
    if store_check.healthy():
        with store_check.guard():
            page.run()
