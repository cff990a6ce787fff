"""The Train page under AppTest: comparisons and runs as they measure and end, launching
(one tiny real run), Stop, presets and the live view."""
from __future__ import annotations

import json
import os
import re
import time

import numpy as np
import pytest


from engine.jobs import runner
from engine.config import RunConfig
from engine.store import Store
from tests.helpers.pages import (own_start_time, app, demo_pair, fake_run, finished_pair, no_errors, plotly_specs, texts, two_pair_comparison, values)


@pytest.mark.page
def test_train_page_empty_store(store_home):
    at = app()
    no_errors(at)
    assert "No runs yet: set options on the left and press **Launch**" in texts(at.info)
    launch = at.button(key="launch")
    assert launch.label == "Launch" and not launch.disabled
    assert at.toggle(key="with_baseline").value is True  # compare with baseline: on by default
    assert set(plotly_specs(at)) <= {"lr_preview"}  # no run charts yet


@pytest.mark.page
def test_train_page_shows_finished_comparison(store):
    b, r = finished_pair(store)
    at = app()
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steady"] == "1.50×"
    # Time to 0.7 val accuracy, read off the stored epochs (2nd epoch ends at 2/3 of each run).
    ep = {rid: store.metrics("epochs", rid)[1]["t"] for rid in (b, r)}
    assert metrics["time to 0.7 val accuracy"] == f"{ep[b] / ep[r]:.2f}× faster"
    # End-to-end: all samples over the last execution's time (fakes have no timeline).
    e2e = {rid: sum(x["samples_per_sec"] * x["duration"] for x in store.metrics("executions", rid))
           / store.metrics("executions", rid)[-1]["t"] for rid in (b, r)}
    assert metrics["End-to-end"] == f"{e2e[r] / e2e[b]:.2f}×"
    status = texts(at.markdown)
    assert f"#{b} baseline fp32**: completed" in status and f"#{r} mixed bf16 · 2 dev (sim)**: completed" in status
    specs = plotly_specs(at)
    assert {"throughput", "loss_t", "loss_step", "lr", "cpu", "mem"} <= set(specs)
    # Plotly's tool bar covered the titles of the three small charts in a row: none there.
    bars = {el.proto.id.rsplit("-", 1)[-1]: json.loads(el.proto.config).get("displayModeBar")
            for el in at.get("plotly_chart")}
    assert [bars[k] for k in ("lr", "cpu", "mem", "throughput")] == [False, False, False, None]
    tp = specs["throughput"]
    names = {t.get("name") for t in tp["data"]}
    assert {f"#{b} baseline fp32", f"#{r} mixed bf16 · 2 dev (sim)", "warm-up (compile)"} <= names
    assert tp["layout"]["yaxis"]["title"]["text"] == "throughput (samples/s)"
    assert not [b for b in at.button if b.key == "stop"]  # nothing to stop


@pytest.mark.page
def test_a_measuring_comparison_shows_its_pair_chart_from_the_first_complete_pair(store):
    """Before the first complete pair the pair chart is a box that says so (no empty Plotly
    chart drawn in the measured window); from the first complete pair on, the chart."""
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-t", "running")
    try:
        at = app()
        no_errors(at)
        assert "Quiet while measuring" in texts(at.caption)
        assert "Pairs: time to accuracy speedup" in texts(at.markdown)
        assert "Waiting for the first complete pair" in texts(at.caption)
        assert "cmp_pairs" not in plotly_specs(at)
        assert "(2 pairs asked)" in texts(at.caption)
        store.finish_run(r0, "completed", summary=store.get_run(r0)["summary"])
        comparison.finish_if_done(store, cstore.get(store, cid))  # as the queue does after each run
        at = app()
        no_errors(at)
        assert "Waiting for the first complete pair" not in texts(at.caption)
        # Between two pairs (the next one queued) the page stays quiet, with Stop: the pair shown has
        # ended, but the comparison has not (it drew its block twice and lost Stop for a moment).
        assert "Quiet while measuring" in texts(at.caption)
        assert [b.key for b in at.button if b.key == "stop"] == ["stop"]
        assert "throughput" not in plotly_specs(at)
        chart = plotly_specs(at)["cmp_pairs"]
        assert chart["layout"]["title"]["text"] == "Pairs: time to accuracy speedup"
        # One pair: 0.7 is first reached at the 2nd epoch's end, 2/3 of each run's 1 s warm-up
        # + 35 executions of 128 samples at 10,000 and 20,000 samples/s: (1.448 / 1.224) = 1.183.
        ep = {rid: store.metrics("epochs", rid)[1]["t"] for rid in (b0, r0)}
        assert ep[b0] / ep[r0] == pytest.approx(1.448 / 1.224)
        (pair,) = [t for t in chart["data"] if t.get("name") == "one pair"]
        assert pair["x"] == [1] and pair["y"] == [pytest.approx(1.448 / 1.224)]
    finally:
        for rid in (r1, b1):
            store.finish_run(rid, "cancelled", "test over")


@pytest.mark.page
def test_a_comparison_stopped_before_any_pair_completed_says_so_where_the_chart_would_be(store):
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-u", "queued")  # stopped after pair 1's baseline
    for rid in (r0, b1, r1):
        store.finish_run(rid, "cancelled", "cancelled before it started")
    comp = comparison.finish_if_done(store, cstore.get(store, cid))
    assert comp["status"] == "stopped" and comp["result"]["pairs"] == 0
    at = app()
    no_errors(at)
    assert "No pair of this comparison completed, so there is no ratio to show." in texts(at.caption)
    assert "Waiting for the first complete pair" not in texts(at.caption) and "cmp_pairs" not in plotly_specs(at)
    # Pair 1's run never started: said so, once (it read "cancelled at step 0/?"), and pair 2's
    # baseline, never run either, is not listed as measured.
    assert f"run #{r0} was cancelled before it started: this pair has no run" in texts(at.markdown)
    assert texts(at.markdown).count(f"#{r0}") == 2  # "This pair ... vs run #r0" and that line
    # A clock time (a relative "30 s ago" froze where it was drawn), and how long before the draw.

    assert re.search(rf"Baselines measured fresh in this comparison \(#{b0}\), first at \d\d:\d\d:\d\d "
                     r"\(3\d s ago when drawn\)", texts(at.caption))


@pytest.mark.page
def test_a_pair_whose_run_was_cancelled_before_it_started_draws_the_baseline_alone(store):
    """Stop during pair 1's baseline: its run, queued, never started. It has no environment, no
    metrics: no "two machines" caveat (the baseline's machine vs "machine unknown"), no "ended in
    its warm-up", no chart waiting for its first execution; one line says so."""
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-v", "queued")
    env = {"hostname": os.uname().nodename, "fingerprint": {"id": "zen5-a", "name": "AMD EPYC Zen 5"}}
    summary = store.get_run(b0)["summary"]
    store.conn.execute("UPDATE runs SET status='running' WHERE id=?", (b0,))
    store.conn.commit()
    store.update_run(b0, environment=env)
    store.finish_run(b0, "cancelled", "cancelled by the user", summary=summary)  # Stop, mid-run
    for rid in (r0, b1, r1):
        store.finish_run(rid, "cancelled", runner.NOT_STARTED)
    assert comparison.finish_if_done(store, cstore.get(store, cid))["status"] == "stopped"
    at = app()
    no_errors(at)
    said = texts(at.markdown) + texts(at.caption) + texts(at.warning)
    assert f"run #{r0} was cancelled before it started: this pair has no run" in said
    assert f"#{b0} baseline fp32**: cancelled at step" in said
    for wrong in ("two machines", "machine unknown", "ended in its warm-up", "waiting for the first",
                  f"#{r0} mixed bf16"):
        assert wrong not in said, wrong
    assert not at.metric  # no speedup panel for a pair with no run
    specs = plotly_specs(at)
    for key in ("throughput", "loss_t", "cpu", "mem", "lr"):
        names = {t.get("name") for t in specs[key]["data"]} - {None, "warm-up (compile)"}
        assert names and all(n.startswith(f"#{b0} baseline fp32") for n in names), (key, names)


def test_never_ran_is_an_ended_run_with_no_start_time_nor_summary():
    from views.components.common import never_ran, started

    assert not started({"status": "queued", "started": None, "summary": None})
    assert not never_ran({"status": "queued", "started": None, "summary": None})
    unrun = {"status": "cancelled", "started": None, "summary": None, "error": runner.NOT_STARTED}
    assert not started(unrun) and never_ran(unrun)
    assert never_ran({"status": "failed", "started": None, "summary": None})
    stopped = {"status": "cancelled", "started": 1.0e9, "summary": {"waiting_since": 1.0e9}}
    assert started(stopped) and not never_ran(stopped)
    assert started({"status": "running", "started": 1.0e9, "summary": None})


def test_an_ended_run_waits_for_no_execution_in_the_data_wait_row():
    """An ended run with no execution (it ended while setting up), or with warm-up ones only,
    is said to have none: "waiting for the first ..." stayed on the page forever."""
    import pandas as pd

    from views.components.live_charts import _data_wait

    run = {"id": 7, "role": "run", "config": RunConfig(epochs=3).to_dict(), "summary": None}
    warm = pd.DataFrame({"step": [1], "t": [1.0], "duration": [1.0], "data_wait": [0.2], "warmup": [1]})
    notes = {status: (_data_wait(None, {**run, "status": status}, None)[0],
                      _data_wait(None, {**run, "status": status}, warm)[0])
             for status in ("running", "cancelled", "failed")}
    assert notes["running"] == ("**#7 fp32** · data wait vs compute: waiting for the first execution ...",
                                ":material/info: **#7 fp32** · data wait vs compute: waiting for the first "
                                "steady execution ...")
    assert notes["cancelled"] == ("**#7 fp32** · data wait vs compute: no execution recorded (the run "
                                  "cancelled before its first)",
                                  ":material/info: **#7 fp32** · data wait vs compute: no steady execution "
                                  "recorded (the run cancelled in its warm-up)")
    assert notes["failed"][0].endswith("no execution recorded (the run failed before its first)")


def test_the_stop_toast_names_running_runs_and_counts_queued_ones():
    from views.components.live_charts import stop_toast

    assert stop_toast(["run 3 cancelled", "run 4 cancelled before it started",
                       "run 5 cancelled before it started"]) == "run 3 cancelled; 2 queued runs cancelled before they started"
    assert stop_toast(["run 9 cancelled before it started"]) == "1 queued run cancelled before it started"
    assert stop_toast([]) == "nothing to stop"


@pytest.mark.page
def test_stop_pressed_just_after_a_pair_ended_is_not_lost_to_the_redraw(store):
    """The live fragment reruns the page when a pair has ended since main() drew it. A click on
    Stop in that fragment rerun was consumed by the redraw and lost: the comparison ran on to
    its pair limit (seen in test_app_browser). Stop acts in its callback, before the body runs."""
    from benchmarks.live_view import fragment_run, live_fragment_id
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-s", "completed")
    at = app()  # drawn with no pair counted yet
    no_errors(at)
    assert "Quiet while measuring" in texts(at.caption)
    comparison.finish_if_done(store, cstore.get(store, cid))  # the queue counts pair 1: a redraw is due
    fid = live_fragment_id(at)
    assert fid is not None
    at.button(key="stop").click()
    fragment_run(at, fid)  # the fragment's tick with the click, as the browser sends it
    no_errors(at)
    assert [store.get_run(i)["status"] for i in (b1, r1)] == ["cancelled", "cancelled"]
    assert [t.value for t in at.toast] == ["2 queued runs cancelled before they started"]
    # From now on the page reads the store every second (it must say "stopped" at once), and the
    # next read shows the comparison ended.
    assert "stop_clicked_at" in at.session_state
    at.run()
    no_errors(at)
    assert "stopped by the user; 1 complete pair kept" in texts(at.caption)
    assert "Quiet while measuring" not in texts(at.caption)


@pytest.mark.page
def test_a_run_that_is_its_own_baseline_shows_no_speedup(store):
    b = fake_run(store, RunConfig(epochs=3, target_accuracy=0.95), "baseline", val_acc=[0.6, 0.8, 0.886])
    at = app()
    no_errors(at)
    # "1.00x" read as a measured result, here for a run that never reached 0.95.
    assert {m.label: m.value for m in at.metric}["Time to 0.95 val accuracy"] == "—"
    assert "Not reached in 3 epochs. This run is its own baseline: nothing to compare." in texts(at.caption)
    # One that reached it shows its own time (a first user's default Launch showed only "—").
    store.delete_run(b)
    fake_run(store, RunConfig(epochs=3, target_accuracy=0.95), "baseline", val_acc=[0.6, 0.96, 0.97])
    at = app()
    no_errors(at)
    epochs = store.metrics("epochs", store.list_runs()[0]["id"])
    assert {m.label: m.value for m in at.metric}["Time to 0.95 val accuracy"] == f"{epochs[1]['t']:.2f} s"
    assert "Not reached" not in texts(at.caption) and "This run is its own baseline" in texts(at.caption)


@pytest.mark.page
def test_a_baseline_config_launched_again_is_compared_with_the_baseline_it_reused(store):
    """Launched against stored baseline #b, a run of the very baseline settings is compared
    with #b, finished as while it ran (it used to become "its own baseline" once completed)."""
    cfg = RunConfig(epochs=3, target_accuracy=0.7)
    b = fake_run(store, cfg, "baseline", group="g1", rate=8000.0, ttt=2.0)
    r = fake_run(store, cfg, "run", group="g2", rate=10_000.0, ttt=1.6)
    store.update_run(r, baseline_id=b)
    at = app()
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["Steady"] == "1.25×"
    assert "This run is its own baseline" not in texts(at.caption)


@pytest.mark.page
def test_failed_and_cancelled_runs_keep_their_charts(store):
    b = fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0)
    r = fake_run(store, RunConfig(epochs=3, steps_per_execution=4), "run", status="cancelled")
    at = app()
    no_errors(at)
    assert f"#{r} fp32 · spe 4**: cancelled at step" in texts(at.markdown)
    assert "throughput" in plotly_specs(at)
    store.finish_run(b, "failed", "out of memory: OOM when allocating; use a smaller batch_size")
    at = app()
    no_errors(at)
    assert "failed: out of memory: OOM when allocating; use a smaller batch_size" in texts(at.markdown)


@pytest.mark.page
def test_long_runs_are_downsampled_for_display(store):
    finished_pair(store, n_exec=6000)
    specs = plotly_specs(app())
    for key in ("throughput", "loss_t", "loss_step", "lr"):
        longest = max(len(values(t.get("x"))) for t in specs[key]["data"])
        assert 1000 < longest <= 2000 + 3, key


@pytest.mark.page
def test_tuned_baseline_toggle_launches_against_the_stored_tuned_baseline(store, monkeypatch, fake_cpu):
    fake_cpu({"avx512f", "avx512_bf16"})  # bf16 is native: Launch needs no second click
    from engine.store import tuned_baselines
    from engine.jobs import comparison

    at = app()
    no_errors(at)
    toggle = at.toggle(key="tuned_baseline")
    assert toggle.disabled and "python -m engine tune-baseline" in toggle.help  # nothing tuned yet
    from engine.hardware.fingerprint import short

    tuned_baselines.put(store, RunConfig(), 0.0049, 0.95, {"seeds": [0, 1], "fingerprint": short()}, "vm")
    calls = []
    monkeypatch.setattr(comparison, "start", lambda cfg, **kw: calls.append(kw) or 1)
    monkeypatch.setattr(__import__("engine.store.comparisons", fromlist=["get"]), "get",
                        lambda _s, _cid: {"plan": [{"baseline_id": 1, "run_id": 2}]})
    at = app()
    at.selectbox(key="precision").set_value("mixed_bfloat16").run()
    toggle = at.toggle(key="tuned_baseline")
    assert not toggle.disabled and "1 device, constant learning rate 0.0049, stored" in toggle.help
    toggle.set_value(True).run()
    at.button(key="launch").click().run()
    no_errors(at)
    assert [c["baseline_kind"] for c in calls] == ["tuned"]
    assert at.session_state["launched"]["msg"].startswith(
        "Queued comparison #1: up to 1 interleaved pairs of the tuned baseline and run (first: baseline #1, run #2)")
    # Off again: the Keras-default baseline, as before.
    at.toggle(key="tuned_baseline").set_value(False).run()
    at.button(key="launch").click().run()
    assert [c["baseline_kind"] for c in calls] == ["tuned", "default"]


@pytest.mark.page
def test_active_run_reattaches_blocks_a_second_launch_and_stops(store):
    rid = fake_run(store, RunConfig(epochs=2), "baseline", status="queued")
    at = app()  # a fresh session (like a reload or a second tab) finds the run in the store
    no_errors(at)
    assert f"#{rid} baseline fp32**: queued" in texts(at.markdown)
    at.button(key="launch").click().run()
    assert f"Run #{rid} (#{rid} baseline fp32) is queued" in texts(at.warning)
    assert len(store.list_runs()) == 1  # nothing new was queued
    at.button(key="stop").click().run()
    no_errors(at)
    assert store.get_run(rid)["status"] == "cancelled"
    at.run()
    assert "cancelled" in texts(at.markdown)


@pytest.mark.page
def test_running_run_shows_progress_and_holds_the_speedup_back(store):
    base = fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0)
    rid = fake_run(store, RunConfig(epochs=3, steps_per_execution=4), "run", rate=16_000.0,
                   status="running")
    at = app()
    no_errors(at)
    bar = at.get("progress")
    assert bar and "epoch 3/3" in bar[0].proto.text and "s left" in bar[0].proto.text
    # Mid-run ratios mean nothing (end-to-end read 0.06x, 0.30x, 0.41x before settling near 0.9x).
    assert {m.label: m.value for m in at.metric} == {"Speedup of this pair · in progress": "—"}
    assert at.button(key="stop")
    store.finish_run(rid, "completed")  # keep the Stop button from signalling this process
    assert base


@pytest.mark.worker
def test_real_run_launched_from_the_train_page(store_home):
    """A tiny real baseline + run (digits, mlp, 2 epochs) through the page."""
    at = app()
    at.selectbox(key="model").set_value("mlp")
    at.number_input(key="epochs").set_value(2)
    at.number_input(key="steps_per_execution").set_value(4).run()
    at.button(key="launch").click().run()
    no_errors(at)
    assert "Queued comparison #1: up to 5 interleaved pairs" in texts(at.caption)
    assert "(first: baseline #1, run #2)" in texts(at.caption)
    try:
        for rid in (1, 2):
            assert runner.wait(rid, poll_s=0.25, timeout_s=180)["status"] == "completed"
    finally:
        runner.cancel_active()  # Stop after the first pair: it is kept
    from engine.store import comparisons as cstore
    from engine.jobs import comparison

    comp = comparison.wait(1, timeout_s=60)
    assert comp["status"] == "stopped" and comp["result"]["pairs"] == 1
    at = app()  # a new session re-attaches from the store
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    value = metrics["Steady"]
    assert value.endswith("×") and float(value[:-1]) > 0
    # mlp on digits does not reach 0.95 in 2 epochs: no number, the reason instead.
    assert metrics["this pair: time to 0.95 val accuracy"] == "—"
    assert "not reached in 2 epochs" in texts(at.caption)
    assert "stopped by the user; 1 complete pair kept" in texts(at.caption)
    assert cstore.get(Store(), 1)["result"]["end_to_end"]["pairs"] == 1
    parts = plotly_specs(at)["time_parts"]["data"]
    assert [t["name"] for t in parts] == ["waiting for a worker", "setup", "warm-up", "training", "data wait", "validation",
                                            "other"]
    specs = plotly_specs(at)
    steady = [t for t in specs["throughput"]["data"] if t.get("mode") == "lines+markers"]
    assert len(steady) == 2 and all(len(values(t["x"])) > 1 for t in steady)
    assert any(t.get("name", "").endswith("val") for t in specs["loss_step"]["data"])


@pytest.mark.page
def test_live_view_shows_data_wait_vs_compute_and_a_verdict(store):
    b = fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0, wait=0.05)
    r = fake_run(store, RunConfig(epochs=3, data_prefetch=False), "run", rate=8000.0, wait=0.63)
    at = app()
    no_errors(at)
    specs = plotly_specs(at)
    assert {f"data_wait_{b}", f"data_wait_{r}"} <= set(specs)
    fig = specs[f"data_wait_{r}"]
    wait, compute = fig["data"][0], fig["data"][1]
    assert (wait["name"], compute["name"]) == ("waiting for data", "compute")
    assert fig["layout"]["yaxis"]["title"]["text"] == "time per execution (s)"
    assert fig["layout"]["xaxis"]["title"]["text"] == "batches run (steps)"
    dur = [d for d in store.frame("executions", r)["duration"][1:]]  # steady ones
    assert np.allclose(values(wait["y"]), [0.63 * d for d in dur])
    assert np.allclose(values(compute["y"]), [0.37 * d for d in dur])
    md = texts(at.markdown)
    assert ":red-badge[input-bound] 63% of step time waiting for data" in md
    assert ":green-badge[compute-bound] only 5% of step time waiting for data" in md


@pytest.mark.page
def test_live_view_notes_unmeasured_data_wait(store):
    fake_run(store, RunConfig(epochs=3), "baseline", rate=8000.0)
    r = fake_run(store, RunConfig(epochs=3, workers=2), "run", rate=8000.0)  # wait=None: NULL, as multi-worker
    at = app()
    no_errors(at)
    assert not [k for k in plotly_specs(at) if k.startswith("data_wait")]
    assert f"#{r} fp32 · 2 workers** · data wait vs compute: not measured for multi-worker runs" in texts(at.caption)


@pytest.mark.page
def test_the_train_page_says_before_launch_that_the_quick_benchmark_holds_the_machine(store_home):

    from engine.jobs import background

    background.write_json(store_home / background.BENCH_FILE,
                          {"state": "running", "pid": os.getpid(), "pid_started": own_start_time(),
                           "started": time.time(), "done": 3, "total": 12})
    at = app()
    no_errors(at)
    assert ("Launch waits: the quick benchmark is running (3/12 cells): wait for it to end or cancel it "
            "on the Hardware page.") in texts(at.info)


@pytest.mark.page
def test_launch_is_refused_while_the_transfer_demo_runs(store_home):

    from engine.jobs import background
    from engine.jobs import demo as transfer

    background.write_json(transfer.demo_job_path(), {"state": "running", "pid": os.getpid(),
                                                     "pid_started": own_start_time(), "started": time.time(),
                                                     "log": str(store_home / "demo.log")})
    at = app()
    at.button(key="launch").click().run()
    no_errors(at)
    assert "Not launched: the transfer demo is running" in texts(at.warning)
    assert Store().list_runs() == []


@pytest.mark.page
def test_train_page_with_the_demo_runs_as_newest_group(store):
    """The fine-tuned run's like-for-like baseline is the from-scratch run (a baseline
    trains from scratch): both are drawn, each once, with no error."""
    pid, fid, sid = demo_pair(store)
    at = app()
    no_errors(at)
    specs = plotly_specs(at)
    assert "throughput" in specs
    assert sorted(k for k in specs if k.startswith("data_wait")) == sorted([f"data_wait_{fid}", f"data_wait_{sid}"])
    assert f"#{fid} fp32 · from #{pid}**: completed" in texts(at.markdown)


@pytest.mark.page
def test_after_launch_the_previous_speedup_is_gone(store, fake_cpu, monkeypatch):
    fake_cpu({"avx512f", "avx512_bf16"})  # bf16 is native: Launch needs no second click
    # No queue: the runs stay queued, as they are the moment after Launch (a worker's start is
    # seconds); what is checked is the page's switch to the new comparison, not training.
    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)
    b, r = finished_pair(store)
    at = app()
    assert {m.label: m.value for m in at.metric}["Steady"] == "1.50×"  # the previous comparison
    at.selectbox(key="model").set_value("mlp")
    at.selectbox(key="precision").set_value("mixed_bfloat16")
    at.number_input(key="epochs").set_value(2).run()
    at.button(key="launch").click().run()
    try:
        no_errors(at)
        assert f"(first: baseline #{r + 1}, run #{r + 2})" in texts(at.caption)
        metrics = {m.label: m.value for m in at.metric}
        # The new comparison measures: the page is quiet (no run metrics), never the old 1.50×.
        assert "Steady" not in metrics and "1.50×" not in metrics.values()
        assert "Quiet while measuring" in texts(at.caption)
        assert f"#{r + 1}" in texts(at.markdown)  # the page follows the new runs
    finally:
        runner.cancel_active()
    assert [store.get_run(rid)["status"] for rid in (r + 1, r + 2)] == ["cancelled", "cancelled"]


@pytest.mark.page
def test_a_plain_run_setting_up_counts_its_seconds(store):
    # Issue 57: "setting up (devices, data, model)" stood still for 25 s and the page looked frozen.
    rid = store.create_run(RunConfig(epochs=2).to_json(), role="run", group_id="g1", status="running")
    store.update_run(rid, started=time.time() - 14.2, pid=os.getpid(), pid_started=own_start_time())
    at = app()
    no_errors(at)
    blocks = [e.proto.body for e in at.get("html") if "setting up" in e.proto.body]
    assert len(blocks) == 1, [e.proto.body for e in at.get("html")]
    clock = re.search(r'data-clock="(\d+)"', blocks[0])
    assert clock and int(clock.group(1)) >= 14  # counted from the claim, 14 s ago
    store.finish_run(rid, "cancelled")


@pytest.mark.page
def test_one_pair_of_a_comparison_without_an_interval_says_so_and_no_verdict(store):
    """Issue 57 item 8: "the comparison's interval above is what to read" stood under a
    comparison with no interval, and the "this pair" card put a verdict word on one pair."""
    from engine.report.pair import compare
    from tests.helpers.recorded_runs import seed_comparison

    cid = seed_comparison(store, pairs=1)
    from engine.store import comparisons as cstore

    pair = cstore.get(store, cid)["plan"][0]
    ratio = compare(store, pair["baseline_id"], pair["run_id"])["time_to_accuracy_speedup"]
    at = app()
    no_errors(at)
    metrics = {m.label: m.value for m in at.metric}
    assert metrics["this pair: time to 0.95 val accuracy"] == f"{ratio:.2f}×"     # no "faster"
    captions = texts(at.caption)
    assert "the comparison above has no interval yet (it needs 3 pairs)" in captions
    assert "what to read" not in captions
    assert "from one pair: not a result (an interval needs 3 pairs)" in texts(at.markdown) + captions


def test_a_script_run_fed_by_a_generator_reads_training_not_setting_up(store):
    """A generator has no length: the run's plan has no total steps. After 60 s of stored
    executions its line still said 'setting up (devices, data, model) · 81 s'."""
    from views.components.live_charts import status_line

    rid = store.create_run(RunConfig(epochs=3).to_json(), role="run", status="running",
                           plan={"source": "callback", "script": "train.py", "total_steps": None})
    line, frac = status_line(store, store.get_run(rid))
    assert "setting up (devices, data, model)" in line and frac == 0.0
    # (idx, epoch, step, batches, t, duration, samples/s, loss, lr, warmup)
    store.add_metrics(rid, executions=[(0, 0, 1, 1, 1.5, 1.5, 85.0, 2.3, 1e-3, 1),
                                       (1, 1, 42, 1, 60.2, 0.1, 1280.0, 0.4, 1e-3, 0)])
    line, frac = status_line(store, store.get_run(rid))
    assert line.endswith("script run**: epoch 2/3 · step 42 (steps per epoch unknown) · 60.2 s elapsed")
    assert frac is None
