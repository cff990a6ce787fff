"""Every second of a run accounted for: timeline arithmetic by hand, then real runs. (A target
never reached, in a real comparison's report: tests/test_queue_runner.py, which runs that comparison.)"""
import threading
import time

import pytest

from engine.config import RunConfig
from engine.report import measure, pair, target
from engine.training.timeline import Timeline, setup_parts, totals


def test_timeline_tiles_merges_and_totals():
    tl = Timeline(origin_perf=time.perf_counter())
    tl.add("setup", 0.0, 4.0)
    tl.gap(4.5, 0, "epoch start")  # 4.0-4.5 other
    tl.add("warmup", 4.5, 5.5, 0)
    tl.add("train", 5.5, 6.0, 0)
    tl.add("train", 6.0, 6.25, 0)  # contiguous, same kind and epoch: merged
    tl.gap(6.5, 0, "between")
    tl.add("validation", 6.5, 7.0, 0)
    assert [s[0] for s in tl.spans] == ["setup", "other", "warmup", "train", "other", "validation"]
    assert tl.spans[3] == ("train", 5.5, 6.25, 0, None)
    t = totals(tl.spans)
    assert t == {"setup_sec": 4.0, "other_sec": 0.75, "warmup_sec": 1.0, "train_sec": 0.75,
                 "validation_sec": 0.5, "wall_sec": 7.0}
    parts = setup_parts({"startup": 0.25, "imports": 3.0, "devices": 3.1, "data": 3.5, "model": 3.9,
                         "input": 3.95}, 4.0)
    assert [(p["part"], p["start"], p["end"]) for p in parts] == [
        ("startup", 0.0, 0.25), ("imports", 0.25, 3.0), ("devices", 3.0, 3.1), ("data", 3.1, 3.5),
        ("model", 3.5, 3.9), ("input", 3.9, 3.95), ("compile", 3.95, 4.0)]


def test_time_to_accuracy_and_not_reached_by_hand():
    epochs = [{"t": 1.0, "val_accuracy": 0.90}, {"t": 2.0, "val_accuracy": 0.9499999}, {"t": 3.0, "val_accuracy": 0.97}]
    assert target.time_to_accuracy(epochs, 0.95) == 2.0  # float32 0.9499999 counts as 0.95
    assert target.time_to_accuracy(epochs, 0.98) is None
    assert target.not_reached({"status": "completed"}, epochs, 0.98) == "not reached in 3 epochs"
    assert target.not_reached({"status": "running"}, epochs[:1], 0.98) == "not reached yet (1 epoch so far)"
    assert target.not_reached({"status": "completed"}, epochs, 0.95) is None
    assert target.effective_target({"config": {"dataset": "digits", "target_accuracy": None}}) == 0.95
    assert target.effective_target({"config": {"dataset": "synthetic", "target_accuracy": None}}) is None
    assert target.effective_target({"config": {"dataset": "digits", "target_accuracy": 0.9}}, 0.8) == 0.8
    assert target.effective_target({"config": {"dataset": "mnist", "target_accuracy": 0.9}}) == 0.9
    from engine.data.meta import target_for

    assert (target_for(None, "mnist"), target_for(0.5, "mnist"), target_for(None, "user:faces")) == (0.98, 0.5, None)


def test_breakdown_and_divergence_notice_by_hand():
    s = {"setup_sec": 5.0, "warmup_sec": 2.0, "train_sec": 10.0, "validation_sec": 41.0, "other_sec": 8.0,
         "wall_sec": 66.0, "data_wait_sec": 1.5}
    assert pair.breakdown(s) == {"waiting": 0.0, "setup": 5.0, "warmup": 2.0, "train": 8.5, "data_wait": 1.5,
                                "validation": 41.0, "other": 8.0, "wall": 66.0}
    # No data wait measured (a script's own input pipeline): unknown, not 0 s; training keeps its 10 s.
    unmeasured = pair.breakdown({k: v for k, v in s.items() if k != "data_wait_sec"})
    assert unmeasured["data_wait"] is None and unmeasured["train"] == 10.0
    # 13.3 s waiting for a spare's imports before the run's clock started: its own part, in the total.
    waited = pair.breakdown({**s, "waiting_sec": 13.3})
    assert waited["waiting"] == 13.3 and waited["setup"] == 5.0 and waited["wall"] == pytest.approx(79.3)
    assert pair.divergence_notice(s, 0.3, 1.22) == ("validation took 41.0 s of this run's 66.0 s: "
                                                   "end-to-end 0.30x vs steady 1.22x")
    assert pair.divergence_notice(s, 1.10, 1.22) is None  # 9.8% apart: within 15%
    # The new user's case: a cold worker's setup (7.2 s of 9.9 s) against a warm baseline's
    # (0.8 s of 3.8 s): end-to-end 1.12x, but start to finish 3.8 / 9.9 = 0.38x.
    base, run = {"wall_sec": 3.8, "setup_sec": 0.8}, {"wall_sec": 9.9, "setup_sec": 7.2}
    assert pair.setup_notice(base, run, 1.12) == (
        "setup took 7.2 s of this run's 9.9 s (the baseline's 0.8 s of 3.8 s), outside the speedups: "
        "start to finish the run took 2.61x as long as the baseline")
    assert pair.setup_notice(base, {"wall_sec": 3.5, "setup_sec": 0.7}, 1.12) is None  # 1.086 vs 1.12: within
    assert pair.setup_notice(base, {"wall_sec": 9.9}, 1.12) is None                   # still running
    assert pair.setup_notice({"wall_sec": 9.0, "setup_sec": 6.0}, {"wall_sec": 3.0, "setup_sec": 0.5},
                            1.5).endswith("start to finish the run was 3.00x as fast as the baseline")
    assert pair.breakdown({"samples_per_sec": 1.0}) is None


class SleepAtEpochEnd:
    """Test-only Keras callback: `seconds` of nothing at every epoch end; each sleep's
    (start, end) perf_counter values are appended to `slept`."""

    def __new__(cls, seconds: float, slept: list):
        import keras

        class _Sleep(keras.callbacks.Callback):
            def on_epoch_end(self, epoch, logs=None):
                t0 = time.perf_counter()
                time.sleep(seconds)
                slept.append((t0, time.perf_counter()))

        return _Sleep()


def _stored_run(store, cfg, extra=None, timeline=None) -> int:
    from engine.training.train import train

    rows = {"executions": [], "epochs": []}
    # A worker runs one run per process; here each run's clock starts at its own call.
    out = train(cfg, lambda table, row: rows[table].append(row), threading.Event(), extra_callbacks=extra,
                timeline=timeline or Timeline(origin_perf=time.perf_counter()))
    rid = store.create_run(cfg.to_json(), role="run", status="running")
    store.add_metrics(rid, rows["executions"], rows["epochs"])
    store.finish_run(rid, out.status, summary=out.summary)
    return rid


@pytest.mark.tf
def test_epoch_end_sleep_is_other_and_lowers_end_to_end_but_not_steady(store):
    cfg = RunConfig(model="mlp", epochs=2, batch_size=64)
    _stored_run(store, cfg.replace(epochs=1))  # the process's first run pays TF's one-off start-up
    plain = _stored_run(store, cfg)
    sleeps, tl = [], Timeline(origin_perf=time.perf_counter())
    slept = _stored_run(store, cfg, [SleepAtEpochEnd(1.0, sleeps)], tl)
    for rid in (plain, slept):
        s = store.get_run(rid)["summary"]
        parts = sum(s[f"{k}_sec"] for k in ("setup", "warmup", "train", "validation", "other"))
        assert parts == pytest.approx(s["wall_sec"], rel=0.01)
        spans = s["timeline"]  # the spans tile the run from the process start to the end of fit
        assert all(abs(a[2] - b[1]) < 1e-3 for a, b in zip(spans, spans[1:]))
        assert spans[-1][2] == pytest.approx(s["wall_sec"], abs=1e-3)
    s = store.get_run(slept)["summary"]
    assert s["other_sec"] == pytest.approx(2.0, abs=0.3)  # 2 epochs x 1.0 s
    # Each sleep sits between an epoch's end and the next epoch's first step (the last: end of fit).
    after = [b - a for k, a, b, _, note in s["timeline"]
             if k == "other" and (note.startswith("epoch start") or note == "end of fit")]
    assert sum(after) >= 1.9
    c = pair.compare(store, plain, slept)
    assert c["end_to_end_speedup"] < 1
    # The sleeps are in no step: the same executions, no step's span (warm-up or train, on the
    # run's clock) overlapping either sleep (ordering only, no speed), and the steady figure is
    # theirs. A ratio of the two runs' medians is no test of that: on a shared CPU it read 0.41
    # and 2.10 (CI, 2026-12-07).
    rows = {rid: store.metrics("executions", rid) for rid in (plain, slept)}
    assert [r["step"] for r in rows[slept]] == [r["step"] for r in rows[plain]]
    assert len(sleeps) == 2
    steps = [(a, b) for k, a, b, _, _ in s["timeline"] if k in ("warmup", "train")]
    for z0, z1 in [(tl.at(a), tl.at(b)) for a, b in sleeps]:
        assert all(b <= z0 + 1e-3 or a >= z1 - 1e-3 for a, b in steps), (z0, z1)
    steady = measure.steady_state([r["duration"] for r in rows[slept]], [r["batches"] for r in rows[slept]], 64,
                                  warmup_flags=[r["warmup"] for r in rows[slept]],
                                  samples=[r["samples_per_sec"] * r["duration"] for r in rows[slept]])
    assert s["samples_per_sec"] == pytest.approx(steady["samples_per_sec"], rel=1e-6)
    base_rate = store.get_run(plain)["summary"]["samples_per_sec"]
    assert c["steady_speedup"] == pytest.approx(s["samples_per_sec"] / base_rate, rel=1e-6)
    assert c["notice"] is not None  # end-to-end and steady differ by more than 15%: said, with the largest part


def test_like_with_like_of_script_runs_is_the_script_not_the_placeholders():
    """A script run's config holds placeholders (synthetic, cnn): keras-io's MNIST convnet and
    the antirectifier MLP compared as like for like. The script each ran decides."""
    def run(script=None, **cfg):
        plan = {"source": "callback", "script": script} if script else {}
        return {"config": {"dataset": "synthetic", "model": "cnn", "batch_size": 128, **cfg}, "plan": plan}

    assert pair.like_caveats(run("mnist_convnet.py"), run("mnist_convnet.py")) == []
    assert pair.like_caveats(run("mnist_convnet.py"), run("antirectifier.py")) == [
        "two scripts (mnist_convnet.py vs antirectifier.py): like with like only if they train the same model "
        "on the same data"]
    assert pair.like_caveats(run(), run("mnist_convnet.py")) == [
        "a script run against a SpeedLab run: their data and model are not known to be alike"]
    assert pair.like_caveats(run(), run(model="mlp", batch_size=64)) == [
        "model differs (cnn vs mlp): not like with like", "batch_size differs (128 vs 64): not like with like"]


def test_a_run_that_never_started_is_one_caveat_not_another_machine(store):
    """Stop during a comparison's first baseline: its run, still queued, ends cancelled with no
    environment. compare() read that as 'measured on two machines: ... vs machine unknown' and
    'ended in its warm-up (0 executions)'; `engine compare` and every page ask compare()."""
    from tests.helpers.pages import fake_run

    cfg = RunConfig(model="mlp", epochs=2)
    base = fake_run(store, cfg, "baseline")
    store.update_run(base, environment={"hostname": "vm", "fingerprint": {"id": "fedcba987654", "name": "Zen 4 box"}})
    run = store.create_run(cfg.to_json(), role="run", status="queued")
    store.finish_run(run, "cancelled", "cancelled before it started")
    c = pair.compare(store, base, run)
    assert c["machines"] is None and c["caveats"] == [f"run #{run} never started (cancelled): no ratio"]
    assert c["end_to_end_speedup"] is None and c["steady_speedup"] is None
