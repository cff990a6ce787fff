"""Untrusted text is text, in a real browser (issue 42, item 3): with a hostile bundle
imported (Markdown image and link, raw HTML in the host name, group, data set, error,
warnings), every page opens in Chromium without one request to another host, and no
image or link from the bundle is in the page."""
from __future__ import annotations

from urllib.parse import urlparse

import pytest

from tests.helpers.browser import (CHROMIUM, CHROMIUM_ARGS, playwright_api, script_idle, server,  # noqa: F401 (fixture)
                                   settle)
from tests.helpers.hostile import hostile_store
from tests.helpers.probe_cache import plant_probe

pytestmark = pytest.mark.browser  # lane: docs/testing.md

PAGES = ("", "runs", "replay", "hardware", "autopilot")
STREAMLIT_OWN = ("fonts.gstatic.com",)


@pytest.fixture
def hostile_home(store_home, monkeypatch, tmp_path):
    monkeypatch.setenv("SPEEDLAB_WARM_WORKER", "0")  # the Train page starts no spare worker
    from engine.store import Store

    with Store(store_home / "runs.sqlite") as store:
        hostile_store(store, tmp_path)
    plant_probe()  # the Hardware page reads it: the real probe (a TensorFlow process) is not the point here
    return store_home


def test_no_page_fetches_or_links_anything_from_a_hostile_bundle(hostile_home, server):  # noqa: F811
    requests: list[str] = []
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 720})
            page.on("request", lambda r: requests.append(r.url))
            for path in PAGES:
                page.goto(f"{server}/{path}")
                page.wait_for_selector('[data-testid="stMainBlockContainer"]', timeout=60_000)
                script_idle(page, 120_000)  # its script run, then its charts
                settle(page)
                found = page.evaluate("""() => ({
                    imgs: [...document.querySelectorAll('img')].map(i => i.getAttribute('src') || ''),
                    links: [...document.querySelectorAll('a')].map(a => a.getAttribute('href') || ''),
                    text: document.body.innerText})""")
                assert not [s for s in found["imgs"] if "HOST" in s or s == "x"], (path, found["imgs"])
                assert not [h for h in found["links"] if "HOST" in h], (path, found["links"])
                if path == "hardware":  # the planted probe, not a real one
                    assert "Checked on testhost at" in found["text"], found["text"][:1500]
                if path == "replay":  # the text is there, as characters (the Runs table is a canvas)
                    shown = found["text"].replace("\u2060", "")  # word joiners: invisible (engine.base.plain)
                    assert "[Session expired: sign in again](http://HOST/phish)" in shown, shown
        finally:
            browser.close()
    assert not [u for u in requests if "HOST" in u], requests  # nothing the bundle named
    # Streamlit's own: the tab's icon (page_icon=":material/speed:") comes from Google's font server.
    outside = [u for u in requests if urlparse(u).hostname not in ("127.0.0.1", "localhost", None, *STREAMLIT_OWN)
               and not u.startswith(("data:", "blob:"))]
    assert not outside, outside
