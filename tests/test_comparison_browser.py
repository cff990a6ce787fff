"""The comparison headline in Chromium at 1280x720: a 'slower' verdict is shown whole
(it read "0.73× (slo…"), coloured red, with the pair chart beside it. The comparison
is seeded as the queue would store it (tests/helpers/recorded_runs.py runs, no training)."""
from __future__ import annotations

import pytest

from tests.helpers.browser import OUT, fresh_stage, settle, stage  # noqa: F401 (fixtures)
from tests.helpers.recorded_runs import recorded, seed_slower_comparison

HEADLINE = """() => [...document.querySelectorAll('.speedlab-headline')].map(e => {
  const r = e.getBoundingClientRect(), box = e.closest('[data-testid="stVerticalBlockBorderWrapper"]') || e.parentElement;
  const b = box.getBoundingClientRect();
  return {text: e.textContent, color: getComputedStyle(e).color, right: r.right, bottom: r.bottom,
          boxRight: b.right, scroll: e.scrollWidth, client: e.clientWidth};
})"""


@pytest.mark.browser
def test_a_slower_headline_is_whole_and_red_at_1280x720(fresh_stage):  # noqa: F811 (the fixture imported above)
    from engine.store import comparisons as cstore
    from engine.store import Store

    server, browser, store_home = fresh_stage
    OUT.mkdir(exist_ok=True)
    store = Store(store_home / "runs.sqlite")
    cid = seed_slower_comparison(store)
    comp = cstore.get(store, cid)
    store.close()
    r = comp["result"]
    assert comp["status"] == "completed" and r["verdict"] == "slower" and r["pairs"] == 3
    page = browser.new_page(viewport={"width": 1280, "height": 720})
    page.goto(server)
    page.locator(".speedlab-headline").wait_for(timeout=60_000)
    page.get_by_text("Pairs: time to accuracy speedup").wait_for(timeout=60_000)
    settle(page)
    page.screenshot(path=str(OUT / "comparison_slower_1280x720.png"))
    (h,) = page.evaluate(HEADLINE)
    ci = r["time_to_accuracy_ci95"]
    from engine.report.headline import interval_text

    # Slower reads as how many times as long it takes (1.30x slower, not 0.77x slower).
    assert h["text"] == f"{1 / r['time_to_accuracy_speedup']:.2f}x slower ({interval_text(ci)})"
    page.get_by_text("3 pairs vs Keras-default Adam 1e-3").wait_for(timeout=10_000)
    # Under it: what the speedup is made of, every seed, the held-out test set.
    page.get_by_text("throughput × 1.00x fewer samples ×").wait_for(timeout=10_000)
    page.get_by_text("reached the target on 3 of 3 seeds (baseline 3 of 3)").wait_for(timeout=10_000)
    page.get_by_text("test accuracy +0.0 points").wait_for(timeout=10_000)
    assert h["color"] == "rgb(185, 28, 28)"                        # red: the interval lies below 1
    assert h["scroll"] <= h["client"] and h["right"] <= h["boxRight"] + 1 and h["right"] <= 1280
    assert h["bottom"] <= 720                                      # above the fold


LINE = """() => [...document.querySelectorAll('[id^=slq] [data-frames]')].map(e => ({
  text: e.textContent, width: parseFloat(e.querySelector('.slq-bar').style.width),
  elapsed: +e.querySelector('.slq-e').textContent, step: +e.querySelector('.slq-s').textContent}))"""


@pytest.mark.browser
def test_a_measuring_comparison_moves_its_progress_on_between_reads(fresh_stage):  # noqa: F811
    """While pairs measure, the page reads the store every QUIET_REFRESH_S (15 s); in
    between, the browser moves the running run's bar, step and clocks on once a second."""
    import os
    import subprocess
    import time

    from engine.store import comparisons as cstore
    from engine.config import RunConfig
    from engine.store import Store

    server, browser, store_home = fresh_stage
    common = dict(dataset="digits", model="cnn", batch_size=32, epochs=6, target_accuracy=0.95)
    worker = subprocess.Popen(["sleep", "600"])  # stands in for the run's worker (Stop signals it)
    store = Store(store_home / "runs.sqlite")
    try:
        # 45 steps an epoch, 270 in all; the run has done 100 at 0.05 s a step: ~9 s left.
        base = recorded(store, RunConfig(**common, seed=0), "baseline", "cmp-live", step_sec=0.05, host="vm")
        run = recorded(store, RunConfig(**common, seed=0, precision="mixed_bfloat16"), "run", "cmp-live",
                       step_sec=0.05, n_exec=100, status="running", pid=worker.pid, host="vm")
        store.update_run(run, baseline_id=base)
        cstore.create(store, "ab", "cmp-live", {"pairs": 2, "max_pairs": 2, "target_half_width": 0.1,
                                                "budget_s": None, "min_pairs": 2},
                      [{"pair": 0, "seed": 0, "order": "AB", "baseline_id": base, "run_id": run}], os.uname().nodename)
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(server)
        page.get_by_text("Quiet while measuring").wait_for(timeout=60_000)
        page.wait_for_function(f"({LINE})().length === 1", timeout=30_000)
        (a,) = page.evaluate(LINE)
        time.sleep(3.2)
        (b,) = page.evaluate(LINE)
        page.screenshot(path=str(OUT / "comparison_measuring_1280x720.png"))
    finally:
        worker.kill()
        store.finish_run(run, "cancelled", "test over")
        store.close()
    assert a["step"] >= 100 and "/270" in a["text"] and "s left" in a["text"], a
    # ~20 steps a second: 3.2 s on, the clock, bar and step have moved (a read in between moves
    # them too; a busy machine may delay the browser's timer, so no upper bound on the clock).
    assert b["elapsed"] - a["elapsed"] >= 2, (a, b)
    assert b["step"] >= a["step"] + 30 and b["width"] > a["width"], (a, b)
