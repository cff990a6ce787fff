"""Presenter mode on a projector at 1280x720, in a real browser (Chromium via playwright,
skipped without it), issue 57: every page presenter mode offers fits 720 px, and the elapsed
clocks never run backwards while a run warms up. One Streamlit server and one Chromium serve
the whole module (a new browser page per test); the tests share one store, in order.

Screenshots go to test-output/ (gitignored): fit_<page>.png.
"""
from __future__ import annotations

import time

import pytest

from tests.helpers.browser import OUT, settle, stage, wait_for, wait_js  # noqa: F401
from tests.helpers.queue import StandInQueue
from tests.helpers.recorded_runs import seed_comparison, seed_pair

pytestmark = pytest.mark.browser  # lane: docs/testing.md

WIDTH, HEIGHT = 1280, 720
# JS: how tall the main area's content is (px; Streamlit scrolls inside stMain).
MAIN_HEIGHT = "() => document.querySelector('[data-testid=\"stMain\"]').scrollHeight"

# JS: the text colour of Launch and Stop.
BUTTON_COLORS = """() => Object.fromEntries(['launch', 'stop'].map(k => [k,
  getComputedStyle(document.querySelector(`.st-key-${k} button p`)).color]))"""


def fits(page, url: str, name: str, ready: str, charts: int = 0) -> int:
    """Open `url` at 1280x720, wait for `ready` and `charts` charts, save fit_<name>.png and
    return the main area's content height (px)."""
    page.goto(url)
    page.get_by_text(ready).first.wait_for(timeout=120_000)
    page.get_by_text("Presenter mode").first.wait_for(timeout=60_000)
    wait_js(page, f"document.querySelectorAll('.js-plotly-plot').length >= {charts}", 60_000)
    settle(page)
    page.screenshot(path=str(OUT / f"fit_{name}.png"))
    return page.evaluate(MAIN_HEIGHT)


def test_every_presenter_page_fits_1280x720(stage):  # noqa: F811 (the fixture imported above)
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
        # Nothing runs: Stop is disabled and looks it (the presenter CSS forced black text on it).
        colors = page.evaluate(BUTTON_COLORS)
        assert colors["stop"] == "rgb(156, 163, 175)" and colors["launch"] != colors["stop"]
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


# JS: the progress block's clocks as shown: [the block's id (new at every store read), comparison's 'measuring for', [elapsed, time left] per run].
CLOCKS = """() => [document.querySelector('[id^="slq"]').id, [...document.querySelectorAll('[data-clock]')].map(e => Number(e.textContent)),
  [...document.querySelectorAll('[data-frames]')].map(e => [Number(e.querySelector('.slq-e').textContent),
                                                         e.querySelector('.slq-l').textContent, e.dataset.key])]"""


def test_the_presenter_clocks_never_run_backwards_through_a_warm_up(stage):  # noqa: F811
    """Issue 57 item 1: read once a second through a warm-up of over 10 s, the elapsed clock
    and the comparison's 'measuring for' clock never decrease (they stepped back 5 s at every
    read), and the running page fits 1280x720. The page and its store reads are the point, not
    training: the comparison is queued as Launch queues it, its first run claimed as the queue
    claims it and given the plan and training start a worker stores before its first execution,
    and a stand-in queue holds it there (tests/helpers/queue.py `StandInQueue`: a warm-up that lasts)."""
    from engine.config import RunConfig
    from engine.jobs import comparison, runner
    from engine.store import Store

    url, browser, home = stage
    page = browser.new_page(viewport={"width": WIDTH, "height": HEIGHT})
    with StandInQueue(home) as queue, Store() as store:  # its end settles the claimed run, as the queue would
        try:
            page.goto(url + "/?mode=talk")
            page.get_by_text("Presenter mode").first.wait_for(timeout=60_000)
            cfg = RunConfig(dataset="digits", epochs=2)
            cid = comparison.start(cfg, pairs=3)
            rid = queue.claim(store)
            spe = cfg.steps_per_epoch()
            store.update_run(rid, environment={"hostname": "testhost"},
                             plan={"steps_per_epoch": spe, "total_steps": spe * cfg.epochs, "epochs": cfg.epochs,
                                   "replicas": 1, "per_replica_batch_size": cfg.batch_size, "device_kind": "CPU",
                                   "train_started_at": time.time()})
            page.get_by_text(f"Comparison #{cid}").wait_for(timeout=120_000)
            page.locator(".slq-e").first.wait_for(timeout=180_000)  # the first run's training has started
            reads = []
            # Until 10 reads, two of them past a store read (one each MEASURE_REFRESH_S, 10 s): 10-20 s.
            while len(reads) < 20 and not (len(reads) >= 10 and sum(r[2] != reads[0][2] for r in reads) >= 2):
                block, clocks, lines = page.evaluate(CLOCKS)
                # Until the first run's warm-up ends: its line leaves "warming up", or (between two
                # page reads) the next run's line, warming up from 0 s, takes its place.
                if not lines or lines[0][1] != "warming up" or (reads and lines[0][2] != reads[0][3]):
                    break
                reads.append((clocks[0], lines[0][0], block, lines[0][2]))
                time.sleep(1.0)
            page.screenshot(path=str(OUT / "fit_train_running.png"))
            height = page.evaluate(MAIN_HEIGHT)
            assert len(reads) >= 10, f"the warm-up was read {len(reads)} times: {reads}"
            assert len({r[2] for r in reads}) >= 2, f"no store read during the warm-up: {reads}"
            for k, name in enumerate(("measuring for", "elapsed")):
                seen = [r[k] for r in reads]
                back = [(a, b) for a, b in zip(seen, seen[1:]) if b < a]
                assert not back, f"the {name} clock ran backwards: {seen}"
                assert seen[-1] - seen[0] >= len(seen) - 4  # it moved on with the wall clock (a loaded machine: 3 s slack)
            assert height <= HEIGHT
        finally:
            runner.cancel_active()  # the queued runs; the stand-in worker gets its SIGTERM
            page.close()
