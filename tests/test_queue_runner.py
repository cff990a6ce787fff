"""The queue's warm spare worker, and Stop: values, not timings."""
import time

import psutil
import pytest

from engine.config import RunConfig
from engine.jobs import runner
from engine.store import Store

pytestmark = pytest.mark.worker  # lane: docs/testing.md


def _warm_pids(store_home) -> set[int]:
    """Live spare-worker processes of this store (their command line names its spares folder)."""
    out = set()
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if "--warm" in cmd and any(str(store_home) in c for c in cmd):
            out.add(p.pid)
    return out


def _ready_spare(store_home, timeout=120) -> int:
    t0 = time.monotonic()
    while True:
        ready = list((store_home / "spares").glob("*.ready")) if (store_home / "spares").exists() else []
        if ready:
            return int(ready[0].read_text())
        assert time.monotonic() - t0 < timeout, "no spare worker became ready"
        time.sleep(0.1)


@pytest.fixture
def warm_queue(store_home, monkeypatch):
    monkeypatch.setenv("SPEEDLAB_WARM_WORKER", "1")
    monkeypatch.setenv("SPEEDLAB_QUEUE_IDLE_S", "120")
    assert runner.prewarm() is True
    assert runner.prewarm() is False  # one queue per store
    yield store_home
    _end_queue(store_home)


def _end_queue(store_home) -> None:
    """End this store's queue process; its spare sees EOF on stdin and exits (waited for, 15 s)."""
    queues = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if any("queue_runner" in c for c in cmd) and any(str(store_home) in c for c in cmd):
            p.terminate()
            queues.append(p)
    psutil.wait_procs(queues, timeout=15)
    t0 = time.monotonic()
    while _warm_pids(store_home) and time.monotonic() - t0 < 15:
        time.sleep(0.2)


def test_a_warm_spare_runs_the_next_run_and_is_replaced_after_it(warm_queue):
    home = warm_queue
    spare = _ready_spare(home)
    assert _warm_pids(home) == {spare}  # one spare at most
    (rid,) = runner.submit([RunConfig(model="mlp", epochs=2, devices=2)])
    seen_during = set()
    st = Store()
    try:
        while (run := st.get_run(rid))["status"] not in ("completed", "failed", "cancelled"):
            if run["status"] == "running":
                seen_during |= _warm_pids(home) - {spare}  # any other spare while measuring?
            time.sleep(0.05)
    finally:
        st.close()
    assert run["status"] == "completed", run["error"]
    assert seen_during == set()  # no spare beside a measurement
    assert run["pid"] == spare  # the spare became the run's worker
    s = run["summary"]
    assert s["warm_worker"] is True
    assert s["replicas"] == 2 and s["replicas_simulated"] is True  # device layout still set after the imports
    parts = {p["part"]: p["end"] - p["start"] for p in s["setup_parts"]}
    assert parts["imports"] < 0.05  # done before the run was claimed
    new = _ready_spare(home)
    assert new != spare and _warm_pids(home) == {new}
    (rid2,) = runner.submit([RunConfig(model="mlp", epochs=1)])
    run2 = runner.wait(rid2, timeout_s=180)
    assert run2["status"] == "completed" and run2["pid"] == new


def test_stop_during_an_epoch_ends_cancelled_with_the_executions_before_it(start_long_run):
    rid, st = start_long_run(n=12)
    before = len(st.metrics("executions", rid))
    runner.cancel(rid)
    run = runner.wait(rid, timeout_s=60)
    assert run["status"] == "cancelled"
    execs = st.metrics("executions", rid)
    assert len(execs) >= before and [e["idx"] for e in execs] == list(range(len(execs)))
    assert execs[-1]["epoch"] < 399 and run["summary"]["steps"] == execs[-1]["step"]
    st.close()


def test_a_comparison_records_each_runs_waiting_and_its_wall_time_adds_up(store_home, monkeypatch):
    # Issue 57: a comparison took 560 s for 355 s of run wall time and nothing said where the rest
    # went. Each run now stores the seconds it waited for a worker (a spare's imports, the queue),
    # and the comparison's wall time splits into its runs' own wall time, that waiting and a rest.
    from engine.jobs import comparison
    from engine.store import comparisons as cstore

    monkeypatch.setenv("SPEEDLAB_WARM_WORKER", "1")  # every run of a comparison waits for a spare
    cid = comparison.start(RunConfig(model="mlp", epochs=1, steps_per_execution=4), pairs=2)
    st = Store()
    try:
        comp = comparison.wait(cid, timeout_s=400)
        assert comp["status"] == "completed", comp.get("ended_by")
        runs = [st.get_run(i) for i in comp["result"]["baseline_ids"] + comp["result"]["run_ids"]]
        split = cstore.get(st, cid)["result"]["time"]
    finally:
        st.close()
        _end_queue(store_home)
    waits = [r["summary"]["waiting_sec"] for r in runs]
    assert len(waits) == 4 and all(w >= 0 for w in waits), waits
    assert split["runs"] == 4
    assert split["waiting_sec"] == pytest.approx(sum(waits))
    assert split["runs_sec"] == pytest.approx(sum(r["summary"]["wall_sec"] for r in runs))
    # Submission to end = the runs' own time + their waiting, within 5%.
    assert split["runs_sec"] + split["waiting_sec"] == pytest.approx(split["wall_sec"], rel=0.05), split
    # A warm run's clock starts at its claim by the spare: what it waited before is waiting, not setup.
    assert all(r["summary"]["warm_worker"] for r in runs)
