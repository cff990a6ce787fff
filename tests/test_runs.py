"""Real runs in worker processes on small data (CPU)."""
import json
import os
import signal

import pytest

from engine.jobs import runner
from engine.report.pair import compare
from engine.config import RunConfig
from engine.store import Store

from tests.helpers import trained_store
from tests.helpers.trained_store import LAUNCHED


def run_and_wait(cfg, timeout=180):
    (rid,) = runner.submit([cfg])
    return runner.wait(rid, timeout_s=timeout)


@pytest.mark.worker
def test_cli_digits_run_reaches_095_and_prints_json(store_home):
    from tests.helpers import cli

    # In this process (the run is the worker's; the CLI only submits, follows and prints it).
    out = cli.engine("run", "--json", "--quiet", "--target-accuracy", "0.9")
    assert out.returncode == 0, out.stderr
    s = json.loads(out.stdout.strip().splitlines()[-1])
    assert s["status"] == "completed" and s["error"] is None
    assert s["final_val_accuracy"] >= 0.95
    assert s["replicas"] == 1 and s["replicas_simulated"] is False
    assert s["precision"] == "float32" and s["jit_compile"] is False and s["steps_per_execution"] == 1
    assert s["steps"] == 120 and s["executions"] == 120  # 10 epochs x ceil(1437/128)
    assert s["samples_per_sec"] > 0 and s["warmup_sec"] > 0 and s["wall_sec"] > s["warmup_sec"]
    assert s["wall_sec"] >= s["time_to_target_sec"] > 0
    # Measuring's own time is stored with the run: hooks on the training thread (the Recorder's
    # count, tested by value in test_recorder) and the writer thread's CPU time.
    assert sorted(s["instrumentation"]) == ["batch_hooks_sec", "writer_cpu_sec"]
    assert all(isinstance(v, float) for v in s["instrumentation"].values())
    st = Store()
    ex = st.metrics("executions", s["run_id"])
    ep = st.metrics("epochs", s["run_id"])
    assert len(ex) == 120 and [e["warmup"] for e in ex[:2]] == [1, 0]
    # Each epoch ends in a batch of 1437 - 11 x 128 = 29 samples: its throughput counts 29, not 128.
    assert all(e["samples_per_sec"] * e["duration"] == pytest.approx(29) for e in ex if e["step"] % 12 == 0)
    assert all(e["samples_per_sec"] * e["duration"] == pytest.approx(128) for e in ex if e["step"] % 12)
    assert [e["epoch"] for e in ep] == list(range(10))
    assert ep[-1]["val_accuracy"] == pytest.approx(s["final_val_accuracy"])
    assert len(st.metrics("system", s["run_id"])) >= 1
    env = st.get_run(s["run_id"])["environment"]
    assert env["tensorflow"].startswith("2.21") and env["hostname"]
    # The worker's fingerprint is this process's (the same CPU, cores and versions): the id that
    # reusing this run as a baseline matches on (docs/machines.md).
    from engine.hardware.fingerprint import fingerprint

    assert {k: env["fingerprint"][k] for k in ("id", "name", "cpu")} == {k: fingerprint()[k] for k in ("id", "name", "cpu")}
    shown = cli.engine("show", str(s["run_id"]), "--json")  # reads the store: in this process
    assert json.loads(shown.stdout.strip().splitlines()[-1])["environment"]["fingerprint"]["id"] == fingerprint()["id"]


# Two simulated replicas in bf16, executions of 2 steps; then the same on 1 device in mixed_float16.
TWO_REPLICAS = RunConfig(model="mlp", devices=2, batch_size=256, epochs=2, precision="mixed_bfloat16",
                         steps_per_execution=2)


@pytest.fixture(scope="module")
def back_to_back(tmp_path_factory):
    """TWO_REPLICAS, then its 1-device mixed_float16 variant in the next worker, both waited
    for, in a store of this module: (the 2-replica run, the 1-device run), final. Its tests
    only read them."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEEDLAB_HOME", str(tmp_path_factory.mktemp("back_to_back")))
        r2 = run_and_wait(TWO_REPLICAS)
        r1 = run_and_wait(TWO_REPLICAS.replace(devices=1, precision="mixed_float16"))
    return r2, r1


@pytest.mark.worker
def test_two_simulated_replicas_then_one_back_to_back(back_to_back):
    r2, r1 = back_to_back
    assert r2["status"] == "completed", r2["error"]
    s = r2["summary"]
    assert s["replicas"] == 2 and s["replicas_simulated"] is True
    assert s["per_replica_batch_size"] == 128 and s["dropped_samples_per_epoch"] == 157
    assert s["compute_dtype"] == "bfloat16" and s["variable_dtype"] == "float32"
    assert s["loss_scale"] is None
    assert s["steps"] == 10  # 2 epochs x floor(1437/256); executions of 2, 2, 1 steps each epoch
    assert s["executions"] == 6
    assert any("simulated" in w for w in s["warnings"])
    assert r1["status"] == "completed", r1["error"]
    assert r1["summary"]["replicas"] == 1 and r1["summary"]["steps"] == 12  # 2 x ceil(1437/256)
    assert r1["summary"]["replicas_simulated"] is False


@pytest.mark.worker
def test_mixed_float16_records_loss_scale(back_to_back):
    _, r = back_to_back
    assert r["status"] == "completed", r["error"]
    assert r["summary"]["compute_dtype"] == "float16" and r["summary"]["loss_scale"] > 0


@pytest.mark.worker
def test_second_launch_is_refused_and_stop_during_an_epoch_keeps_the_executions_before_it(start_long_run):
    rid, st = start_long_run(n=12)
    with pytest.raises(runner.ActiveRunError, match=f"run {rid} is running"):
        runner.submit([RunConfig()])
    before = len(st.metrics("executions", rid))
    assert "stop requested" in runner.cancel(rid)
    run = runner.wait(rid, timeout_s=60)
    assert run["status"] == "cancelled"
    execs = st.metrics("executions", rid)
    n = len(execs)
    assert 5 <= n < 1600  # partial: 400 epochs x 4 steps were planned
    assert run["summary"]["executions"] == n
    # Every execution stored before the stop is kept, in order, and the summary ends at the last one.
    assert n >= before and [e["idx"] for e in execs] == list(range(n))
    assert execs[-1]["epoch"] < 399 and run["summary"]["steps"] == execs[-1]["step"]
    st.close()


@pytest.mark.worker
def test_killed_worker_ends_failed_with_reason(start_long_run):
    rid, st = start_long_run(n=3)
    run = st.get_run(rid)
    os.kill(run["pid"], signal.SIGKILL)
    run = runner.wait(rid, timeout_s=60)
    assert run["status"] == "failed"
    # Only that: its last stderr line (a TensorFlow log line) read as the cause.
    assert run["error"] == "worker was killed by SIGKILL (out of memory?)"
    assert run["stderr_tail"] is not None
    assert len(st.metrics("executions", rid)) >= 3


@pytest.fixture(scope="module")
def launched(tmp_path_factory):
    """LAUNCHED launched with its baseline and waited for (the session's trained store,
    tests/helpers/trained_store.py, copied into a store of this module), then launched again:
    {"home", "first": (baseline id, run id, reused), "second": (...), "run": the first run,
    final}. Its tests only read the store. The second launch's point is its choice (the stored
    baseline reused, with the run's baseline id), made before anything runs: it is launched
    with no queue to claim it and cancelled while queued, so no worker trains it."""
    home = tmp_path_factory.mktemp("launched")
    built = trained_store.copy_into(home, tmp_path_factory)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("SPEEDLAB_HOME", str(home))
        mp.setattr(runner, "ensure_queue", lambda *a, **k: False)
        second = runner.launch_with_baseline(LAUNCHED)
        assert runner.cancel(second[1]) == f"run {second[1]} {runner.NOT_STARTED}"
    with Store(home / "runs.sqlite") as st:
        run = st.get_run(built["run"])
    return {"home": home, "first": (built["baseline"], built["run"], built["reused"]), "second": second, "run": run}


def _launched_store(launched) -> Store:
    return Store(launched["home"] / "runs.sqlite")


@pytest.mark.worker
def test_baseline_launch_reuse_and_compare(launched):
    bid, rid, reused = launched["first"]
    assert not reused and bid != rid
    assert launched["run"]["status"] == "completed", launched["run"]["error"]
    with _launched_store(launched) as st:
        base = st.get_run(bid)
        assert base["role"] == "baseline" and base["status"] == "completed"
        assert base["config"]["steps_per_execution"] == 1 and base["config"]["schedule"] == "constant"
        c = compare(st, bid, rid)
        b, r = base["summary"]["samples_per_sec"], st.get_run(rid)["summary"]["samples_per_sec"]
        assert c["throughput_speedup"] == pytest.approx(r / b)
        assert c["caveats"] == []
        assert st.get_run(rid)["baseline_id"] == bid and base["baseline_id"] == bid
        bid2, rid2, reused2 = launched["second"]
        assert reused2 and bid2 == bid and rid2 != rid
        assert st.get_run(rid2)["baseline_id"] == bid


@pytest.mark.worker
def test_device_type_tpu_fails_fast_without_traceback(store_home, monkeypatch):
    # Bypass the up-front check to prove the worker itself also fails cleanly.
    monkeypatch.setattr(runner, "check_runnable", lambda c: [])
    run = run_and_wait(RunConfig(device_type="tpu", epochs=1))
    assert run["status"] == "failed" and run["error"] == "No TPU detected"


@pytest.mark.worker
def test_recorded_learning_rate_follows_the_schedule(launched):
    import numpy as np

    from engine.config.lr_math import lr_at

    run = launched["run"]
    assert run["status"] == "completed", run["error"]
    with _launched_store(launched) as st:
        ex = st.metrics("executions", run["id"])
    steps = np.array([e["step"] for e in ex])
    assert steps.tolist() == [4, 8, 12, 16, 20, 24]  # 12 steps per epoch in executions of 4
    # The LR recorded with an execution is the one its last step used (optimizer iteration step - 1).
    np.testing.assert_allclose([e["lr"] for e in ex], lr_at(LAUNCHED, steps - 1, 12), rtol=1e-6)
    # Warmup: lr * (step + 1) / 12 at iteration 3 = 1e-3 * 4 / 12.
    assert ex[0]["lr"] == pytest.approx(1e-3 * 4 / 12)


@pytest.mark.unit
def test_the_reason_a_worker_ended_skips_tensorflow_log_lines():
    from engine.base.lines import last_error_line

    tail = ("Traceback (most recent call last):\n  File \"x.py\", line 1\n"
            "ValueError: shapes (3,) and (4,) do not match\n"
            "E0000 00:00:1796203617.918733   25959 util.cc:131] oneDNN supports DT_HALF only on platforms "
            "with AVX-512.\nWARNING: All log messages before absl::InitializeLog() is called are written to STDERR\n\n")
    assert last_error_line(tail) == "ValueError: shapes (3,) and (4,) do not match"
    assert last_error_line("I0000 00:00:17.1 1 cudart_stub.cc:31] no cuda\n") is None
    assert last_error_line(None) is None
