"""One rule for every stop signal, the dashboard (issue 56, item 2): a SIGTERM to the Streamlit
server while a comparison it could have launched trains stops that comparison naming the signal
("stopped: the dashboard got SIGTERM"), never "cancelled by the user", before the server shuts
down (engine.jobs.stopping.stop_on_server_signals, installed by app.py on its first page through
views/components/server_signals.py)."""
from __future__ import annotations

import os
import signal

import pytest

from engine.config import RunConfig
from engine.jobs import background, comparison, runner
from engine.store import Store
from engine.store import comparisons as cstore
from tests.conftest import LONG_RUN
from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, playwright_api, start_streamlit, wait_for

pytestmark = pytest.mark.browser


def test_sigterm_to_the_dashboard_during_a_comparison_stops_it_naming_the_signal(store_home):
    proc, url = start_streamlit(store_home)
    try:
        with playwright_api.sync_playwright() as pw:  # a first page: app.py installs the handler
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
            try:
                page = browser.new_page()
                page.goto(url)
                page.get_by_role("button", name="Launch").first.wait_for(timeout=120_000)
            finally:
                browser.close()
        cid = comparison.start(RunConfig(**LONG_RUN, precision="float32", target_accuracy=0.999), pairs=2)
        with Store() as s:
            wait_for(lambda: s.conn.execute("SELECT COUNT(*) FROM executions").fetchone()[0] >= 3, 240,
                     "the comparison's first run training")
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    with Store() as s:
        wait_for(lambda: runner.active_run(s) is None and comparison.running(s) is None, 60,
                 "the comparison's end")
        comp = cstore.get(s, cid)
        runs = s.list_runs()
    why = (comp, [(r["id"], r["status"], r["error"]) for r in runs], (store_home / "streamlit.log").read_text()[-2000:])
    assert (comp["status"], comp["ended_by"]) == ("stopped", "stopped: the dashboard got SIGTERM; 0 complete pairs kept"), why
    assert [(r["status"], r["error"]) for r in runs] == [("cancelled", "stopped: the dashboard got SIGTERM")], why
    assert background.busy() is None  # the next launch goes through at once
