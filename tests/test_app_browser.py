"""End to end in a real browser: `streamlit run app.py` headless on a free
loopback port with a temporary store, Chromium driven by Python playwright.

Launches a short digits run (mixed_bfloat16 on 2 devices, 3 epochs) with its
baseline, waits for live throughput points and a speedup number, and saves
screenshots under test-output/ (gitignored): train_live.png while it runs,
train.png and runs.png when both runs are done; hardware.png of the Hardware
page with a planted probe and a (pre-written) quick-benchmark result.
"""
from __future__ import annotations

import platform
import re

import pytest

from tests.helpers.probe_cache import plant_probe
from tests.helpers.recorded_runs import recorded
from tests.helpers.browser import (HEADLINE, OUT, SPEEDUP_VALUE, THROUGHPUT_POINTS, TIME_PARTS, VIEWPORT,  # noqa: F401
                                   fresh_stage, full_screenshot, playwright_api, settle, stage, wait_for)

pytestmark = pytest.mark.browser  # lane: docs/testing.md


def test_launch_watch_and_review_in_chromium(fresh_stage):
    from engine.store import Store

    server, browser, store_home = fresh_stage
    OUT.mkdir(exist_ok=True)
    page = browser.new_page(viewport=VIEWPORT)
    # The settings are bound to the URL, as a shared link would set them.
    page.goto(server + "/?precision=mixed_bfloat16&devices=2&epochs=3")
    launch = page.get_by_role("button", name="Launch")
    launch.wait_for(timeout=60_000)
    assert page.get_by_text("No runs yet: set options on the left").is_visible()
    assert "mixed bf16 · 2 devices · batch 128 · 3 epochs" in page.inner_text("body")
    slow = page.get_by_text("Launch anyway (slow on this machine)")
    if slow.count():  # a CPU without native bf16 (the server reads the real one) asks first
        slow.click()
    launch.click()
    # A comparison of interleaved pairs: while it measures the page is quiet (its
    # headline so far and the pair chart, progress lines; no live run charts).
    page.locator(".speedlab-headline").wait_for(timeout=120_000)
    page.get_by_text("Quiet while measuring").wait_for(timeout=60_000)
    assert page.evaluate(THROUGHPUT_POINTS) == 0
    full_screenshot(page, OUT / "train_live.png")

    store = Store(store_home / "runs.sqlite")
    try:
        wait_for(lambda: len(store.list_runs(["completed"])) >= 2, 240, "the first pair to complete")
    finally:
        store.close()
    stop = page.get_by_role("button", name="Stop")
    clicked = False
    try:
        stop.wait_for(timeout=15_000)
        stop.click()  # Stop keeps the complete pairs
        clicked = True
    except playwright_api.Error:
        pass  # short runs: the comparison may have ended (pair limit) by now
    page.get_by_text("ended by:").wait_for(timeout=120_000)
    body = page.inner_text("body")
    # A click just after a pair ended was once lost to the page's redraw: the comparison
    # then ran on to its pair limit.
    assert "stopped by the user;" in body if clicked else (
        "pair limit (5) reached" in body or "±10%" in body), body[-1500:]
    wait_for(lambda: page.evaluate(THROUGHPUT_POINTS) > 0, 60, "the run charts once it ended")
    # The pair's own headline is time to the data set's default target (digits: 0.95): a
    # ratio, or no number and the reason when a run did not reach it.
    label, value = wait_for(lambda: page.evaluate(HEADLINE), 30, "the pair's headline")
    assert label == "this pair: time to 0.95 val accuracy", label
    body = page.inner_text("body")
    assert re.fullmatch(r"\d+\.\d\d×", value) or (  # one pair of a comparison: no verdict word
        value == "—" and "not reached in 3 epochs" in body), (value, body[-2000:])
    # Read once the chart has drawn both runs' bars: a snapshot taken while a rerun
    # redraws it counts fewer (seen once under -n 2 on a loaded machine).
    parts = lambda: (lambda got: got if got and got[1] >= 2 * 4 else None)(page.evaluate(TIME_PARTS))
    wait_for(parts, 30, "the where-the-time-went chart with both runs' bars")
    names, bars = page.evaluate(TIME_PARTS)
    assert names == ["waiting for a worker", "setup", "warm-up", "training", "data wait", "validation",
                     "other"]
    assert bars >= 2 * 4  # two runs; parts of 0 s draw no bar
    settle(page)
    full_screenshot(page, OUT / "train.png")

    # A reload re-attaches from the store (no state in the browser session).
    page.reload()
    value = wait_for(lambda: page.evaluate(SPEEDUP_VALUE) not in (None, "—")
                     and page.evaluate(SPEEDUP_VALUE), 60, "the speedup after a reload")
    assert re.fullmatch(r"\d+\.\d\d×", value), value
    wait_for(lambda: page.evaluate(THROUGHPUT_POINTS) > 0, 30, "throughput after a reload")

    page.get_by_role("link", name="Runs").click()
    page.get_by_text("Speedup and scaling").wait_for(timeout=60_000)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 4",
                           timeout=60_000)
    settle(page)
    full_screenshot(page, OUT / "runs.png")
    body = page.inner_text("body")
    assert re.search(r"(\d+) of \1 runs", body) and "simulated" in body
    assert "Comparisons" in body


def test_hardware_page_with_a_finished_benchmark_in_chromium(fresh_stage):
    """The Hardware page with a planted probe (the real one, a TensorFlow and JAX process, is
    tests/test_hardware.py's) and a saved quick-benchmark result (pre-written: the real one
    takes over a minute): cards, verdicts, chart, table; 'Use this configuration' fills the
    Train page. Saves hardware.png."""
    from engine.bench import quick as bench

    server, browser, store_home = fresh_stage
    plant_probe()
    cells = bench.plan_matrix({"gpus": 0, "tpu": False, "cpu_bf16": True})
    rates = [3200, 2500, 3600, 2300, 4700, 2000, 5300, 1900]  # samples/s per cell, as measured on a 2-core CPU
    samples = [{"cell": i, "repeat": r, "samples_per_sec": rates[i] * (1 + 0.04 * r * (-1) ** i), "warmup_sec": 1.0}
               for r in range(2) for i in range(len(cells))]
    result = bench.summarize(cells, samples)
    result.update(workload=bench.QUICK, machine={"gpus": 0}, wall_sec=68.0, repeats=2)
    bench.save(result)

    OUT.mkdir(exist_ok=True)
    page = browser.new_page(viewport=VIEWPORT)
    # Opened by URL, the page still runs inside app.py's navigation (the top nav shows).
    page.goto(server + "/hardware")
    page.get_by_text("Which speed options should pay off").wait_for(timeout=60_000)
    assert "Checked on testhost at" in page.inner_text("body")  # the planted probe: none ran
    page.get_by_role("link", name="Train", exact=True).wait_for(timeout=10_000)
    page.goto(server + "/?epochs=3")
    page.get_by_role("button", name="Launch").wait_for(timeout=60_000)
    page.get_by_role("link", name="Hardware", exact=True).click()
    page.get_by_text("Which speed options should pay off").wait_for(timeout=60_000)
    page.get_by_role("button", name="Use this configuration").wait_for(timeout=30_000)
    page.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 1", timeout=30_000)
    settle(page)
    full_screenshot(page, OUT / "hardware.png")
    body = page.inner_text("body")
    assert "Host CPU" in body and "Best configuration" in body
    assert "mixed bf16 · spe 8 · XLA off · 1 device" in body

    page.get_by_role("button", name="Use this configuration").click()
    page.get_by_role("button", name="Launch").wait_for(timeout=30_000)
    page.wait_for_function("location.search.includes('precision=mixed_bfloat16')", timeout=10_000)
    assert "steps_per_execution=8" in page.url and "epochs=3" in page.url
    summary = "digits · cnn · mixed bf16 · 1 device · batch 128 · spe 8 · 3 epochs"
    page.get_by_text(summary).wait_for(timeout=10_000)


BACKEND_SPEEDUP = """() => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    if (m.innerText.includes('Backend speedup (JAX vs TensorFlow)'))
      return m.querySelector('[data-testid="stMetricValue"]').innerText.trim();
  }
  return null;
}"""


def test_jax_run_with_a_tensorflow_baseline_shows_the_backend_speedup(fresh_stage):
    """A TensorFlow run of a configuration is stored; the same configuration launched
    on JAX from the browser shows its backend speedup over it. Saves train_jax.png."""
    server, browser, store_home = fresh_stage
    pytest.importorskip("jax", reason="JAX is not installed: pip install -r requirements-dev.txt")
    from engine.config import RunConfig
    from engine.hardware.fingerprint import fingerprint
    from engine.report.pair import backend_speedup
    from engine.store import Store

    # The TensorFlow run is planted, stored as a worker on this machine stores one (its
    # fingerprint): the JAX run launched from the page is the one that trains.
    with Store(store_home / "runs.sqlite") as store:
        tf_id = recorded(store, RunConfig(model="mlp", epochs=2), host=platform.node(), kind="CPU")
        env = store.get_run(tf_id)["environment"]
        store.update_run(tf_id, environment={**env, "fingerprint": fingerprint()})
    OUT.mkdir(exist_ok=True)
    page = browser.new_page(viewport=VIEWPORT)
    page.goto(server + "/?backend=jax&model=mlp&epochs=2")
    launch = page.get_by_role("button", name="Launch")
    launch.wait_for(timeout=60_000)
    assert "digits · mlp · fp32 · 1 device · batch 128 · JAX · 2 epochs" in page.inner_text("body")
    launch.click()
    value = wait_for(lambda: page.evaluate(BACKEND_SPEEDUP), 240, "the backend speedup")
    store = Store(store_home / "runs.sqlite")
    try:
        (jax_run,) = [r for r in store.list_runs(["completed"]) if r["config"]["backend"] == "jax"]
        b = backend_speedup(store, jax_run["id"])
    finally:
        store.close()
    assert b["baseline_id"] == tf_id and value == f"{b['throughput_speedup']:.2f}×", (value, b)
    assert f"vs TensorFlow run #{tf_id}, same configuration" in page.inner_text("body")
    settle(page)
    full_screenshot(page, OUT / "train_jax.png")
