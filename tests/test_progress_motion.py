"""engine.report.progress_motion and views.components.quiet_progress: the progress line of a
measuring comparison moves on in the browser between reads of the store."""
import json
import re

import pytest

from engine.report.progress_motion import counts, frames, projection
from views.components import quiet_progress


def test_the_bar_spreads_what_is_left_over_the_time_left_and_then_holds():
    p = {"fraction": 0.2, "elapsed_sec": 10.4, "time_left_sec": 4.0, "step": 20, "total_steps": 100,
         "epoch": 2, "epochs": 10}
    m = projection(p, 30.0)
    # 4 s left: the bar runs 0.2 -> 1.0 in 4 s and the time-left clock 4 -> 0; elapsed runs all 30 s.
    assert m == {"fraction": (0.2, 1.0), "elapsed_sec": (10.4, 40.4), "elapsed_s": 30.0,
                 "time_left_sec": (4.0, 0.0), "left_s": 4.0}
    # 10 steps an epoch: the step follows the bar (0.2 of 100 steps = 20, epoch 2), and so the epoch.
    # Due to end 4 s after the read: from then on the line holds, the elapsed clock too (14 s).
    assert frames(p, 6) == [(0.2, 10, 4, 2, 20), (0.4, 11, 3, 4, 40), (0.6, 12, 2, 6, 60), (0.8, 13, 1, 8, 80),
                            (1.0, 14, 0, 10, 100), (1.0, 14, 0, 10, 100), (1.0, 14, 0, 10, 100)]


def test_a_long_run_moves_on_at_its_rate_for_the_horizon_only():
    # 0.5 done, 100 s left: 0.005 of the bar a second; in 10 s it reaches 0.55 and 90 s left.
    m = projection({"fraction": 0.5, "elapsed_sec": 100.0, "time_left_sec": 100.0}, 10.0)
    assert m["fraction"] == pytest.approx((0.5, 0.55))
    assert m["time_left_sec"] == (100.0, 90.0) and m["left_s"] == 10.0
    f = frames({"fraction": 0.5, "elapsed_sec": 100.0, "time_left_sec": 100.0}, 2)
    assert f == [(0.5, 100, 100, 0, 0), (0.505, 101, 99, 0, 0), (0.51, 102, 98, 0, 0)]  # no plan: counts as read


def test_step_and_epoch_follow_the_bar_and_never_go_back():
    # digits/cnn, 60 epochs of 12 steps: step 60 ends epoch 5, step 61 is in epoch 6.
    p = {"step": 60, "total_steps": 720, "epoch": 5, "epochs": 60}
    assert counts(p, 60 / 720) == (5, 60)
    assert counts(p, 61 / 720) == (6, 61)
    assert counts(p, 0.5) == (30, 360)
    assert counts(p, 1.0) == (60, 720)
    assert counts(p, 0.0) == (5, 60)  # never before what was read


def test_warm_up_has_no_rate_so_only_the_elapsed_clock_moves():
    assert frames({"fraction": 0.0, "elapsed_sec": 3.6, "time_left_sec": None}, 2) == [
        (0.0, 4, None, 0, 0), (0.0, 5, None, 0, 0), (0.0, 6, None, 0, 0)]
    # Due to end already (0 s left): the bar is full and stays so.
    assert projection({"fraction": 0.9, "elapsed_sec": 5.0, "time_left_sec": 0.0}, 5.0)["fraction"] == (0.9, 1.0)


@pytest.mark.parametrize("bad", [0, -1.0])
def test_a_horizon_must_be_positive(bad):
    with pytest.raises(ValueError, match="horizon_s"):
        projection({"fraction": 0.1, "elapsed_sec": 1.0, "time_left_sec": 2.0}, bad)
    with pytest.raises(ValueError, match="horizon_s"):
        frames({"fraction": 0.1, "elapsed_sec": 1.0, "time_left_sec": 2.0}, int(bad))


def test_the_running_line_carries_its_frames_and_prints_the_first():
    p = {"fraction": 0.25, "elapsed_sec": 12.2, "time_left_sec": 3.0, "epoch": 3, "epochs": 12, "step": 30,
         "total_steps": 120}
    html = quiet_progress.running_line("#2 bf16 <x>", p, 4)
    assert ('<b>#2 bf16 &lt;x&gt;</b>: epoch <span class="slq-ep">3</span>/12 · '  # the label is escaped
            'step <span class="slq-s">30</span>/120 · ') in html
    clocks = '<span class="slq-e">12</span> s elapsed · <span class="slq-l">3 s left</span>'  # a read value
    assert clocks in html
    assert "width:25.0%" in html
    data = json.loads(re.search(r'data-frames="([^"]+)"', html).group(1).replace("&quot;", '"'))
    assert data == [[0.25, 12, 3, 3, 30], [0.5, 13, 2, 6, 60], [0.75, 14, 1, 9, 90], [1.0, 15, 0, 12, 120],
                    [1.0, 15, 0, 12, 120]]


def test_static_lines_render_the_status_markdown_as_html():
    assert quiet_progress.md_line(":material/check_circle: **#1 baseline fp32**: completed in 7.2 s · "
                                  ":orange[2 of 12 steps lost] & more") == (
        '<b>#1 baseline fp32</b>: completed in 7.2 s · <span style="color:#D55E00">2 of 12 steps lost</span>'
        " &amp; more")
    assert "width:" not in quiet_progress.static_line("**#2**: queued", None)
    assert "width:40.0%" in quiet_progress.static_line("**#2**: setting up", 0.4)
    assert [quiet_progress.left_text(x) for x in (None, 0, 7)] == ["warming up", "< 1 s left", "7 s left"]


def test_a_run_that_stops_at_its_target_has_at_most_its_time_left(store_home):
    """Issue 57 item 11: "702 s left" just before a run ended at its target: the estimate is
    for every epoch, so a run that stops at its target says "at most"."""
    from engine.config import RunConfig
    from engine.report.progress import progress
    from engine.store import Store

    p = {"fraction": 0.25, "elapsed_sec": 12.2, "time_left_sec": 3.0, "epoch": 3, "epochs": 12, "step": 30,
         "total_steps": 120, "time_left_is_most": True}
    html = quiet_progress.running_line("#2", p, 4)
    assert '<span class="slq-l">at most 3 s left</span>' in html and 'data-most="1"' in html
    assert quiet_progress.left_text(None, True) == "warming up" and quiet_progress.left_text(0, True) == "< 1 s left"
    with Store() as store:
        for stops, expected in ((True, True), (False, False)):
            cfg = RunConfig(dataset="digits", epochs=2, target_accuracy=0.95, stop_at_target=stops)
            rid = store.create_run(cfg.to_json(), status="running")
            assert progress(store, rid)["time_left_is_most"] is expected
            store.finish_run(rid, "cancelled", "cancelled by the user")


def test_the_block_script_survives_dompurify():
    # DOMPurify (st.html) drops a script whose text has "<" before a letter, digit, "/" or "!".
    block = quiet_progress.block([quiet_progress.static_line("**#1**: queued", None)])
    script = re.search(r"<script>(.*)</script>", block, re.S).group(1)
    assert not re.search(r"<[/\w!]", script)
    key = re.search(r'<div id="(slq\d+)"', block).group(1)
    assert f'getElementById("{key}")' in script


def test_the_elapsed_clock_counts_from_the_training_start_through_warm_up(store_home):
    """Issue 57 item 1: during warm-up the clock was read from the last stored execution, so each
    read snapped the browser's count back ("6 s elapsed", five seconds later "1 s")."""
    from engine.config import RunConfig
    from engine.report.progress import progress
    from engine.store import Store

    cfg = RunConfig(dataset="digits", epochs=2)
    with Store() as store:
        rid = store.create_run(cfg.to_json(), status="running")
        store.update_run(rid, plan={"total_steps": 40, "steps_per_epoch": 20, "train_started_at": 1000.0})
        # Compiling the first execution: nothing stored yet, 3 s after the training start.
        assert progress(store, rid, now=1003.0)["elapsed_sec"] == 3.0
        # The first execution (warm-up) ended at t = 1.0 s; no steady rate yet, so no time left.
        store.add_metrics(rid, [(0, 0, 1, 1, 1.0, 1.0, 64.0, 2.3, 0.001, 1, None)], [], [])
        reads = [progress(store, rid, now=1000.0 + s) for s in (6.0, 11.0, 16.0)]
        assert [r["elapsed_sec"] for r in reads] == [6.0, 11.0, 16.0]
        assert [r["time_left_sec"] for r in reads] == [None, None, None]
        # The browser counts on from each read for 10 s: each next read starts where it got to.
        ends = [frames(r, 5)[-1][1] for r in reads[:-1]]
        assert ends == [11, 16]
        store.finish_run(rid, "cancelled", "cancelled by the user")
        assert progress(store, rid, now=2000.0)["elapsed_sec"] == 1.0  # ended: the last execution's time


def test_a_run_asked_to_stop_stands_still_where_the_store_has_it(store):
    """Issue 57 item 8: after Stop the animated line counted on ("step 306/360") below a toast
    that said "cancelled at step 292/360"."""
    import time

    from engine.config import RunConfig
    from engine.report.live import LiveMetrics
    from tests.helpers.pages import fake_run
    from views.components.live_charts import quiet_line

    rid = fake_run(store, RunConfig(epochs=2), n_exec=10, status="running")
    store.update_run(rid, plan={**store.get_run(rid)["plan"], "total_steps": 40, "train_started_at": time.time() - 5})
    src = LiveMetrics().use(store)
    moving = quiet_line(store, store.get_run(rid), src)
    assert "data-frames" in moving and "s elapsed" in moving                # the bar and clocks move on
    store.update_run(rid, cancel_requested=time.time())
    still = quiet_line(store, store.get_run(rid), src)
    assert "data-frames" not in still and "data-clock" not in still        # nothing moves
    assert "stopping at step 10/40" in still and "width:25.0%" in still
