"""The Autopilot page in a real browser (as tests/test_app_browser.py: headless
Streamlit on a free port, Chromium driven by Python playwright; skipped without
them): start a short search from the page, see the trials chart grow as trials
end, then Stop. Saves test-output/autopilot_live.png."""
from __future__ import annotations

import pytest
import time

from tests.helpers.browser import CHROMIUM, CHROMIUM_ARGS, OUT, VIEWPORT, full_screenshot, playwright_api, server, wait_for

pytestmark = pytest.mark.browser  # lane: docs/testing.md

__all__ = ["server"]  # the fixture, re-used

# JS: markers drawn in the trials chart (one per ended trial, plus none for the step line).
TRIAL_POINTS = """() => {
  for (const gd of document.querySelectorAll('.js-plotly-plot')) {
    const title = (gd.layout && gd.layout.title && gd.layout.title.text) || '';
    if (title.includes('Trials: time to'))
      return gd.querySelectorAll('.scatterlayer .trace .points path.point').length;
  }
  return -1;
}"""


def test_start_a_search_and_watch_the_trials_chart_grow(server, store_home):
    from engine.autopilot import search as autopilot

    OUT.mkdir(exist_ok=True)
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport=VIEWPORT)
            page.goto(server + "/autopilot")
            start = page.get_by_role("button", name="Start autopilot")
            start.wait_for(timeout=60_000)
            assert page.get_by_text("No search yet").is_visible()
            budget = page.get_by_role("spinbutton", name="Search budget (s)")
            budget.fill("90")  # under load a trial takes 15-30 s from start-up to its end
            budget.press("Enter")
            page.wait_for_timeout(1500)
            start.click()
            t0 = time.monotonic()
            page.get_by_role("button", name="Stop").wait_for(timeout=60_000)
            first = wait_for(lambda: max(page.evaluate(TRIAL_POINTS), 0), 180, "the first trial's point")
            print(f"\nStart -> first trial on the chart: {time.monotonic() - t0:.1f} s")
            wait_for(lambda: page.evaluate(TRIAL_POINTS) > first, 150, "the trials chart to grow")
            body = page.inner_text("body")
            assert "Searching:" in body or "re-running" in body or "Done" in body, body[-1500:]
            full_screenshot(page, OUT / "autopilot_live.png")
            page.get_by_role("button", name="Stop").click()
            page.get_by_text("The autopilot was stopped in its").wait_for(timeout=60_000)
            job = autopilot.read_progress()
            assert job["state"] == "cancelled" and len(job["trials"]) >= 2
        finally:
            autopilot.cancel_background()
            browser.close()
