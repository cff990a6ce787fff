"""Presenter mode (?mode=talk) under streamlit.testing: only the essentials on
Train and Replay, the projector styling, and the toggle that switches the URL."""
from __future__ import annotations

import pytest
import json

from streamlit.testing.v1 import AppTest

from engine.report import replay
from engine.report.pair import compare
from tests.helpers.recorded_runs import seed_not_held_comparison, seed_pair
from tests.helpers.apptest import app_test

pytestmark = pytest.mark.page  # lane: docs/testing.md

SIDEBAR_CHARTS = {"lr_preview", "lr_find_chart"}


def app(page: str | None = None, presenter: bool = True) -> AppTest:
    at = app_test()
    if presenter:
        at.query_params["mode"] = "talk"
    if page:
        at.switch_page(page)
    return at.run()


def charts_of(at: AppTest) -> dict[str, dict]:
    return {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def test_train_in_presenter_mode_shows_only_the_essentials(store):
    b, r = seed_pair(store)
    cmp = compare(store, b, r)
    at = app()
    assert not at.exception
    # Configuration, Launch, Stop (nothing to stop), the mode toggle.
    # The sidebar's configuration, named as what Launch starts: the charts show another run.
    assert ":material/skip_next: Next: digits · cnn · fp32 · 1 device · batch 128 · 10 epochs" in [
        m.value for m in at.markdown]
    assert not at.button(key="launch").disabled and at.button(key="stop").disabled
    assert at.toggle(key="presenter_toggle_True").value is True
    assert not [t for t in at.toggle if t.key == "with_baseline"]
    # The headline speedup and the two others, and only throughput and loss as charts.
    metrics = {m.label: m.value for m in at.metric}
    assert metrics == {"Time to 0.95 val accuracy": f"{cmp['time_to_accuracy_speedup']:.2f}× faster",
                       "End-to-end": f"{cmp['end_to_end_speedup']:.2f}×", "Steady": "3.20×"}
    # One pair (no comparison) is said to be one, with its seconds, beside the figures.
    assert "**one pair: not a result**: one baseline run and one run (45.3 s → 13.2 s), no interval" in [
        c.value for c in at.caption]
    specs = charts_of(at)
    assert set(specs) - SIDEBAR_CHARTS == {"presenter_throughput", "presenter_loss"}
    for key in ("presenter_throughput", "presenter_loss"):
        assert specs[key]["layout"]["font"]["size"] == 20 and specs[key]["layout"]["height"] == 410
    assert specs["presenter_throughput"]["layout"]["yaxis"]["title"]["text"] == "samples/s"
    # No status lines, data-wait, learning-rate or system charts; high-contrast styling applied.
    assert not at.get("progress") and not [m for m in at.markdown if "completed in" in m.value]
    assert any("font-size: 19px" in m.value for m in at.markdown)


def test_presenter_mode_says_why_there_is_no_time_to_accuracy(store):
    from tests.helpers.pages import fake_run
    from engine.config import RunConfig

    cfg = RunConfig(epochs=3, target_accuracy=0.95)
    fake_run(store, cfg, "baseline", rate=8000.0, val_acc=[0.6, 0.8, 0.97])
    fake_run(store, cfg.replace(precision="mixed_bfloat16"), "run", rate=10_000.0, val_acc=[0.6, 0.8, 0.9])
    at = app()
    assert not at.exception
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Time to 0.95 val accuracy · run"] == "not reached"
    # The sidebar holds the defaults, not the run on screen: "Next" says which is which.
    assert ":material/skip_next: Next: digits · cnn · fp32 · 1 device · batch 128 · 10 epochs" in [
        m.value for m in at.markdown]


def test_presenter_mode_shows_the_time_of_a_run_that_is_its_own_baseline(store):
    from tests.helpers.pages import fake_run
    from engine.config import RunConfig

    rid = fake_run(store, RunConfig(epochs=3, target_accuracy=0.95), "baseline", val_acc=[0.6, 0.96, 0.97])
    at = app()
    assert not at.exception
    t = store.metrics("epochs", rid)[1]["t"]
    assert {m.label: m.value for m in at.metric} == {"Time to 0.95 val accuracy": f"{t:.2f} s"}
    assert ("This run is its own baseline: nothing to compare. Turn on a speed option to compare."
            in [c.value for c in at.caption])


def test_the_toggle_switches_the_url_both_ways(store_home):
    at = app(presenter=False)
    assert at.query_params.get("mode") is None
    assert at.toggle(key="presenter_toggle_False").value is False
    at.toggle(key="presenter_toggle_False").set_value(True).run()
    assert at.query_params["mode"] == "talk"
    assert at.toggle(key="presenter_toggle_True").value is True and not [t for t in at.toggle if t.key == "with_baseline"]
    at.toggle(key="presenter_toggle_True").set_value(False).run()
    assert "mode" not in at.query_params
    assert at.toggle(key="with_baseline")                     # the full page is back


def test_replay_in_presenter_mode(store):
    b, r = seed_pair(store)
    replay.save_state(replay.ReplayState(b, r, speed=10, offset=25.0))
    at = app("views/replay.py")
    assert not at.exception
    assert not at.selectbox                                   # the pair stays as picked
    assert at.segmented_control(key="replay_speed").value == 10 and at.button(key="replay_play")
    line = [m.value for m in at.markdown if m.value.startswith(":material/replay:")]
    # Named by the hardware its runs stored (no fingerprint: their CPU), never by their host (dgx-07).
    assert len(line) == 1 and "replay of runs recorded on AMD EPYC 7B13 (no fingerprint), 1 GPU vs 2 GPUs" in line[0]
    assert "measured elsewhere, not on this machine" in line[0] and "dgx-07" not in line[0]
    assert "25.0 s of 59.7 s recorded · 10× · paused" in line[0]
    assert set(charts_of(at)) == {"presenter_throughput", "presenter_loss"}
    # Mid-way: the baseline has not reached 0.95 yet; the steady speedup is known.
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Time to 0.95 val accuracy"] == "—" and metrics["Steady"] == "3.20×"


def test_a_new_tab_during_a_comparison_starts_from_its_settings(store):
    """Issue 57 item 7: a second tab headed presenter mode "Next: digits · cnn · fp32 ..." (the
    page's defaults) above a running comparison of another configuration."""
    from engine.charts import style as chart_style
    from engine.store import comparisons as cstore
    from tests.helpers.pages import two_pair_comparison

    cid, ids = two_pair_comparison(store, "cmp-second-tab", "running")
    running = store.get_run(ids[1])["config"]
    at = app()
    assert not at.exception
    line = chart_style.config_summary(running)
    assert "mixed bf16" in line and "3 epochs" in line
    assert line in [m.value for m in at.markdown]                       # no "Next:": it is what runs
    assert not [m for m in at.markdown if "Next:" in m.value]
    assert at.button(key="launch").disabled and not at.button(key="stop").disabled
    # The normal page of a new tab: its sidebar holds the running configuration too.
    normal = app(presenter=False)
    assert normal.session_state["precision"] == "mixed_bfloat16" and normal.session_state["epochs"] == 3
    assert normal.toggle(key="tuned_baseline").value is False            # a default-baseline comparison
    cstore.update(store, cid, status="cancelled")
    for rid in ids:
        store.finish_run(rid, "cancelled", "cancelled by the user")
    assert app(presenter=False).session_state["precision"] == "float32"  # nothing runs: the defaults


def test_launch_in_presenter_mode_says_what_it_queued_once(store, fake_cpu, monkeypatch):
    """Presenter mode's Launch says what it queued in a toast, once (views/components/toasts.py).
    The browser test test_presenter_browser.py::test_launch_and_stop_say_so_in_toasts_that_cover_no_control
    holds what AppTest cannot show: the toast survives the fragment's rerun of the page."""
    from engine.jobs import runner

    fake_cpu({"avx512f", "avx512_bf16"})  # bf16 is native: Launch needs no second click
    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)  # no training: the runs stay queued
    at = app_test()
    at.query_params.update(mode="talk", precision="mixed_bfloat16", model="mlp")
    at.run()
    assert not at.exception and not at.toast
    at.button(key="launch").click().run()
    assert not at.exception
    assert [t.value for t in at.toast] == [
        "Queued comparison #1: up to 5 interleaved pairs of baseline and run (first: baseline #1, run #2), "
        "until the 95% interval is within ±10% or 15 min; each run stops at the target accuracy"]
    at.run()  # said once
    assert not at.toast


def test_a_run_cancelled_before_it_started_against_a_stored_baseline_has_no_pair_figures(store):
    """Reuse stored baseline, Launch, Stop while the run is queued: the run has no environment
    and no metrics. Neither mode reads it as a pair ("measured on two machines: ... vs machine
    unknown", "Speedup —"): one line says it never ran, the baseline is drawn alone."""
    import os

    from engine.config import RunConfig
    from engine.jobs import runner
    from tests.helpers.pages import fake_run

    b = fake_run(store, RunConfig(epochs=3), "baseline", group="g0")
    store.update_run(b, environment={"hostname": os.uname().nodename,
                                     "fingerprint": {"id": "zen5-a", "name": "AMD EPYC Zen 5"}})
    r = fake_run(store, RunConfig(epochs=3, precision="mixed_bfloat16"), "run", group="g1", status="queued")
    store.update_run(r, baseline_id=b)
    store.finish_run(r, "cancelled", runner.NOT_STARTED)
    for presenter in (True, False):
        at = app(presenter=presenter)
        assert not at.exception
        said = "\n".join(str(e.value) for kind in ("markdown", "caption", "warning") for e in getattr(at, kind))
        assert said.count(f"run #{r} was cancelled before it started: this pair has no run") == 1, presenter
        for wrong in ("two machines", "machine unknown", "ended in its warm-up", "waiting for the first"):
            assert wrong not in said, (presenter, wrong)
        assert not at.metric, presenter
        throughput = charts_of(at)["presenter_throughput" if presenter else "throughput"]
        assert {t.get("name") for t in throughput["data"]} - {None, "warm-up (compile)"} == {f"#{b} baseline fp32"}


def test_a_comparisons_card_shows_its_caveat_on_a_line_of_its_own_and_the_charts_make_room(store):
    """The card of a comparison whose test accuracy did not hold: the caveat is a line of its own
    (it was the end of one long line in a box of 126 px that scrolled, out of sight), the rest of
    the lines one; the card is as tall as its lines, estimated at 1280 px, and the charts get what
    is left of presenter.ROOM_PX. The browser test (test_presenter_browser.py) measures the card."""
    from engine.store import comparisons as cstore
    from views.components import presenter

    cid = seed_not_held_comparison(store)
    lines = presenter.card_lines(cstore.get(store, cid))
    caveat = ("test accuracy +1.0 points (−4.0 to +6.0) vs the baseline, 3 pairs: not held "
              "(needs the lower end above −0.5)")
    assert lines == {
        "label": "time to accuracy", "main": "3.17x faster, accuracy not held (+162% to +283%)",
        "color": "#374151", "detail": "3 pairs vs Keras-default Adam 1e-3", "caveats": [caveat],
        "rest": "3.17x = 2.92x throughput × 1.23x fewer samples × 0.88x fixed costs (2.1 s → 2.2 s outside "
                "steady training)  ·  reached the target on 3 of 3 seeds (baseline 3 of 3)"}
    # 1090 px wide, 1053.8 inside; a line is 1.3 x 19 = 24.7 px and wraps at 0.93 of the width:
    # padding and border 19.1, label 23.5, verdict 1 x 1.15 x 36.1 = 41.5 (47 x 0.5 x 36.1 = 848 px),
    # detail 24.7, caveat 24.7 + 6 (108 x 0.46 x 19 = 944 px of 967), rest 2 x 24.7 (152 characters,
    # 1328 px), 4 to spare: 192.
    assert presenter.card_height(lines, 1.9, 1090) == 192
    # One pair, a gain of 0.4 points: no interval yet, so no caveat (it read "not held" in red).
    early = {"status": "running", "result": {"speedup": 1.3, "pairs": 1, "pair_ratios": [1.3],
                                             "test_accuracy_delta": {"mean": 0.004, "ci95": None, "pairs": 1}}}
    assert presenter.card_lines(early)["caveats"] == []
    # The headline's note joins its facts with "; ": each is a caveat line of its own (an overlap and
    # a seed missed read as one red line).
    comp = cstore.get(store, cid)
    overlap = "these runs overlapped for 3 s on this machine: their times are not independent"
    missed = {**comp["result"]["reached"], "run": 2}  # the candidate reached on 2 of 3 seeds
    many = {**comp, "result": {**comp["result"], "overlap": overlap, "reached": missed,
                               "time_to_accuracy": {**comp["result"]["time_to_accuracy"],
                                                    "misses": {"run": {"missed": 1}}}}}
    got = presenter.card_lines(many)["caveats"]
    assert got[0] == overlap and got[1].startswith("the candidate missed the target on 1 seed") and caveat in got
    assert presenter.card_height(lines, 1.9, 1090, rest=False) == 192 - 49
    at = app()
    assert not at.exception
    card = [m.value for m in at.markdown if m.value.startswith('<div class="sl-card">')]
    assert len(card) == 1 and f'<div class="sl-caveat">{caveat}</div>' in card[0]
    specs = charts_of(at)
    for key in ("presenter_throughput", "presenter_loss"):
        assert specs[key]["layout"]["height"] == presenter.ROOM_PX - 192 == 340
