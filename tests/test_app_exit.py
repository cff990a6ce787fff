"""Issue 43 item 8: when the dashboard server exits, the queue and the warm spare worker it
started leave within seconds (no run in flight), not after the queue's 10-min idle exit."""
from __future__ import annotations

import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, playwright_api, start_streamlit, wait_for

pytestmark = pytest.mark.browser  # lane: docs/testing.md


def speedlab_processes(home) -> list:
    """Processes whose command line names this store's folder (the queue, a spare, a worker)."""
    import psutil

    out = []
    for p in psutil.process_iter(["pid", "cmdline"]):
        try:
            if any(str(home) in part for part in p.info["cmdline"] or []) and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def test_no_speedlab_process_is_left_10_s_after_the_server_stops(store_home):
    env = {**os.environ, "SPEEDLAB_HOME": str(store_home), "SPEEDLAB_WARM_WORKER": "1",
           "SPEEDLAB_QUEUE_IDLE_S": "600", "PYTHONUNBUFFERED": "1"}
    env.pop("SPEEDLAB_OWNER_PID", None)  # this server is the owner, as when started from a shell
    env.pop("SPEEDLAB_OWNER_START", None)
    with ThreadPoolExecutor(1) as pool:
        starting = pool.submit(start_streamlit, store_home, env)  # the server starts while Chromium does
        try:
            with playwright_api.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    _server, url = starting.result()
                    page = browser.new_page(viewport={"width": 1280, "height": 720})
                    page.goto(url)
                    page.get_by_text("No runs yet").wait_for(timeout=60_000)
                    # Opening the Train page starts the queue with a warm spare worker.
                    wait_for(lambda: len(speedlab_processes(store_home)) >= 2, 60, "the queue and its spare")
                finally:
                    browser.close()
        finally:
            if starting.exception() is None:  # one that did not start was killed by start_streamlit
                server = starting.result()[0]
                os.killpg(server.pid, signal.SIGTERM)
                server.wait(timeout=30)
    stopped = time.monotonic()
    left = wait_for(lambda: not speedlab_processes(store_home), 10, "the queue and the spare to exit", poll_s=0.25)
    assert left and time.monotonic() - stopped <= 10.5
