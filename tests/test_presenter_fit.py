"""Presenter mode on a projector at 1280x720, in a real browser (Chromium via playwright,
skipped without it), issue 57: every page presenter mode offers fits 720 px, and the elapsed
clocks never run backwards while a run warms up. One Streamlit server and one Chromium serve
the whole module (a new browser page per test); the tests share one store, in order.

Screenshots go to test-output/ (gitignored): fit_<page>.png.
"""
from __future__ import annotations

import os
import signal
import subprocess

import pytest

from tests.helpers.browser import (CHROMIUM, CHROMIUM_ARGS, OUT, playwright_api, settle,  # noqa: F401
                                   start_streamlit, wait_for)
from tests.helpers.recorded_runs import seed_comparison, seed_pair

pytestmark = pytest.mark.browser  # lane: docs/testing.md

WIDTH, HEIGHT = 1280, 720
# JS: how tall the main area's content is (px; Streamlit scrolls inside stMain).
MAIN_HEIGHT = "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight"


@pytest.fixture(scope="module")
def stage(tmp_path_factory):
    """(url, browser, home): one server on a store of its own and one Chromium for the module."""
    home = tmp_path_factory.mktemp("stage")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEEDLAB_HOME", str(home))
        proc, url = start_streamlit(home)
        try:
            with playwright_api.sync_playwright() as p:
                browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                try:
                    yield url, browser, home
                finally:
                    browser.close()
        finally:
            from engine.jobs import runner

            runner.cancel_active()
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)


def fits(page, url: str, name: str, ready: str, charts: int = 0) -> int:
    """Open `url` at 1280x720, wait for `ready` and `charts` charts, save fit_<name>.png and
    return the main area's content height (px)."""
    page.goto(url)
    page.get_by_text(ready).first.wait_for(timeout=120_000)
    page.get_by_text("Presenter mode").first.wait_for(timeout=60_000)
    page.wait_for_function(f"document.querySelectorAll('.js-plotly-plot').length >= {charts}", timeout=60_000)
    settle(page)
    page.screenshot(path=str(OUT / f"fit_{name}.png"))
    return page.evaluate(MAIN_HEIGHT)


def test_every_presenter_page_fits_1280x720(stage):
    from engine.report import replay
    from engine.store import Store, comparisons as cstore

    url, browser, home = stage
    OUT.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    try:
        heights = {"train_empty": fits(page, url + "/?mode=talk", "train_empty", "No runs yet")}
        with Store() as store:
            b, r = seed_pair(store)
        replay.save_state(replay.ReplayState(b, r, speed=10, offset=25.0, paused=True))
        heights["train_idle"] = fits(page, url + "/?mode=talk", "train_idle", "× faster", charts=2)
        heights["replay"] = fits(page, url + "/replay?mode=talk", "replay", "25.0 s of", charts=2)
        replay.save_state(replay.ReplayState(b, r, offset=1e6, paused=True))
        heights["replay_end"] = fits(page, url + "/replay?mode=talk", "replay_end", "recorded", charts=2)
        with Store() as store:
            cid = seed_comparison(store)
            comp = cstore.get(store, cid)
        b, r = comp["plan"][-1]["baseline_id"], comp["plan"][-1]["run_id"]
        heights["train_comparison"] = fits(page, url + "/?mode=talk", "train_comparison", "faster", charts=2)
        replay.save_state(replay.ReplayState(b, r, speed=10, offset=25.0, paused=True))
        heights["replay_comparison"] = fits(page, url + "/replay?mode=talk", "replay_comparison", "25.0 s of",
                                            charts=2)
        print(heights)
        assert {k: h for k, h in heights.items() if h > HEIGHT} == {}
    finally:
        page.close()
