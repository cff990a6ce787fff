"""Processes known by more than a pid, and one launch at a time (issue 42, items 4 and 7):
a wall-clock step (psutil's create_time moved by 5 s, psutil#2541) leaves a live worker
alive to cancel and a live autopilot 'running'; a cancel whose process is gone says so; a
dead queue's runs are settled at the next launch at once; simultaneous submits queue one."""
from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from engine.base import process
from engine.config import RunConfig
from engine.base.errors import ActiveRunError
from engine.jobs import background, runner
from engine.store import Store


@pytest.fixture
def clock_step(monkeypatch):
    """psutil's create_time() 5 s off, as after a wall-clock step (NTP, a suspended VM)."""
    real = psutil.Process.create_time
    monkeypatch.setattr(psutil.Process, "create_time", lambda self, *a, **k: real(self, *a, **k) + 5.0)


@pytest.fixture
def sleeper():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield p
    if p.poll() is None:
        p.kill()
    p.wait()


def test_start_time_is_since_boot_and_ignores_create_time(monkeypatch):
    me = process.start_time()
    assert 0 < me < time.monotonic() + 1  # seconds since boot (CLOCK_MONOTONIC counts from boot on Linux)
    monkeypatch.setattr(psutil.Process, "create_time", lambda self, *a, **k: 0.0)
    assert process.start_time() == me
    assert process.process_alive(os.getpid(), me)
    assert not process.process_alive(os.getpid(), me - 3.0)  # another process that had this pid
    assert process.start_time(2**22 + 12345) is None


def test_a_stored_wall_clock_create_time_from_an_older_store_still_matches():
    assert process.process_alive(os.getpid(), psutil.Process().create_time())


@pytest.mark.worker
def test_cancel_signals_a_live_worker_after_a_clock_step(store, clock_step, sleeper):
    cfg = RunConfig(epochs=1)
    rid = store.create_run(cfg.to_json(), status="running")
    store.update_run(rid, pid=sleeper.pid, pid_started=process.start_time(sleeper.pid), started=time.time())
    assert runner.queue_alive(store) is False
    line = runner.cancel(rid)
    assert line.startswith(f"run {rid}: stop requested (SIGTERM sent")
    assert sleeper.wait(timeout=5) == -signal.SIGTERM  # delivered: the worker stopped
    assert store.get_run(rid)["status"] == "running"  # the queue settles it as cancelled (cancel_requested)
    assert store.get_run(rid)["cancel_requested"]


def test_a_cancel_whose_worker_is_gone_says_so_not_cancelled(store):
    rid = store.create_run(RunConfig(epochs=1).to_json(), status="running")
    store.update_run(rid, pid=2**22 + 12345, pid_started=12.5, started=time.time())
    line = runner.cancel(rid)
    assert "could not be found" in line and "cancelled" not in line
    run = store.get_run(rid)
    assert run["status"] == "failed" and run["error"].startswith("worker process not found when cancelled")


@pytest.mark.worker
def test_a_background_job_after_a_clock_step_reads_running_and_stop_signals_it(store_home, clock_step, sleeper):
    job = {"state": "running", "pid": sleeper.pid, "pid_started": process.start_time(sleeper.pid),
           "started": time.time()}
    assert background.check(job, "autopilot")["state"] == "running"
    assert background.stop(job) is True
    assert sleeper.wait(timeout=5) == -signal.SIGTERM
    assert background.stop(job) is False  # nothing left to signal: says so
    assert background.check(job, "autopilot")["state"] == "failed"


def test_runs_handed_to_a_queue_that_died_are_settled_at_once(store):
    """The comparison's runs were queued, then its queue started (queue.pid) and was killed:
    the next launch, a moment later, is accepted (no ORPHAN_GRACE_S wait)."""
    ids = runner.submit([RunConfig(epochs=1), RunConfig(epochs=2)], start=False)
    runner._write_marker(store.path.parent / "queue.pid", 2**22 + 12345, 99.0)  # handed over; now dead
    assert runner.active_run(store) is None
    assert {store.get_run(i)["status"] for i in ids} == {"failed"}
    assert store.get_run(ids[0])["error"].startswith("its queue process ended before it started")
    (new,) = runner.submit([RunConfig(epochs=1)], start=False)
    assert store.get_run(new)["status"] == "queued"


def test_a_run_never_handed_to_a_queue_keeps_its_grace_and_a_submit_under_way_is_waited_for(store):
    (rid,) = runner.submit([RunConfig(epochs=1)], start=False)
    assert runner.active_run(store)["id"] == rid  # queued by a caller about to start the queue
    store.update_run(rid, created=time.time() - 2 * runner.ORPHAN_GRACE_S)
    with runner.submit_lock(Store(store.path)):  # a submit under way: its queue starts next
        runner.reconcile(store)
        assert store.get_run(rid)["status"] == "queued"
    runner.reconcile(store)
    assert store.get_run(rid)["status"] == "failed"


def test_a_killed_scripts_run_is_settled_even_while_a_queue_serves_the_store(store, monkeypatch):
    """A SpeedLabCallback run whose script was killed before its atexit (SIGTERM, SIGKILL) is no
    queue's to settle: it ends failed at the next look, queue or not; a queue's own run is left
    to the queue; a script's run not yet holding its pid keeps ORPHAN_GRACE_S."""
    monkeypatch.setattr(runner, "queue_alive", lambda s: True)
    dead = {"pid": 2**22 + 12345, "pid_started": 99.0}

    def running(plan, **pid):
        rid = store.create_run(RunConfig(epochs=1).to_json(), status="running")
        store.update_run(rid, plan=plan, **pid)
        return rid

    script = running({"source": "callback", "script": "train.py"}, **dead)
    queued_worker = running({}, **dead)
    fresh = running({"source": "callback"})
    runner.reconcile(store)
    assert store.get_run(script)["status"] == "failed"
    assert store.get_run(script)["error"].startswith("its script ended before fit finished")
    assert store.get_run(queued_worker)["status"] == "running"   # its queue settles it
    assert store.get_run(fresh)["status"] == "running"           # about to record its pid
    store.update_run(fresh, created=time.time() - 2 * runner.ORPHAN_GRACE_S)
    runner.reconcile(store)
    assert store.get_run(fresh)["status"] == "failed"


def _submit_at(path: str, at: float, out) -> None:
    time.sleep(max(0.0, at - time.time()))
    try:
        out.put(runner.submit([RunConfig(epochs=1)], store_path=path, start=False)[0])
    except ActiveRunError:
        out.put(None)


@pytest.mark.worker
def test_four_simultaneous_submits_queue_exactly_one_in_each_of_ten_rounds(store):
    ctx = multiprocessing.get_context("fork")
    for _round in range(10):
        out = ctx.Queue()
        at = time.time() + 0.3
        procs = [ctx.Process(target=_submit_at, args=(str(store.path), at, out)) for _ in range(4)]
        for p in procs:
            p.start()
        got = [out.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(timeout=60)
        queued = [g for g in got if g is not None]
        assert len(queued) == 1, got
        store.finish_run(queued[0], "cancelled", runner.NOT_STARTED)
    assert store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 10


@pytest.mark.page
def test_the_autopilot_page_reads_running_after_a_clock_step(store_home, clock_step):
    """The search's job file as `engine.autopilot.search` writes it (pid, start_time): after a
    5-s step it is running, not 'failed ... (killed?)'."""
    from engine.autopilot import search as autopilot
    from tests.test_autopilot_page import done_state
    from tests.helpers.pages import app, no_errors, texts

    background.write_json(autopilot.progress_path(), {
        **done_state(), "state": "running", "pid": os.getpid(), "pid_started": process.start_time(),
        "started": time.time() - 100, "phase": "runoff", "winner": None, "confirm": None, "ablation": None,
        "current": {"phase": "runoff", "trial": 1, "run_id": 6, "label": "config 1"}})
    at = app("views/autopilot.py")
    no_errors(at)
    assert "**Re-running the fastest trials on new seeds**" in texts(at.markdown)
    assert not [e.value for e in at.error], [e.value for e in at.error]


@pytest.mark.worker
def test_a_launch_right_after_the_queue_is_killed_is_accepted_ten_times(store):
    """The issue's crash: a comparison's runs queued, its queue process SIGKILLed before it
    started them (it waits on the store's lock held here). A launch at once is accepted,
    in each of 10 tries (it was refused in 1 of 2 with 'run #2 is queued: wait for it')."""
    cfg = RunConfig(epochs=1)
    for _try in range(10):
        queued = runner.submit([cfg, cfg], ["baseline", "run"], start=False)
        hold = Store(store.path)
        hold.conn.execute("BEGIN IMMEDIATE")  # the queue cannot claim a run: they stay queued
        try:
            assert runner.ensure_queue(store.path)
            pid, _started, _handed = runner._marker(store)
            deadline = time.monotonic() + 60
            while not runner.queue_alive(store):
                assert time.monotonic() < deadline, "the queue process did not start"
                time.sleep(0.05)
            os.kill(pid, signal.SIGKILL)
            while process.process_alive(pid, None):
                time.sleep(0.02)
        finally:
            hold.conn.execute("ROLLBACK")
            hold.close()
        t0 = time.monotonic()
        while runner.queue_alive(store):  # the kernel lets go of its flock as the process ends
            assert time.monotonic() - t0 < 5, "the killed queue's lock outlived it"
            time.sleep(0.01)
        (new,) = runner.submit([cfg], start=False)  # at once: accepted, its runs settled
        assert {store.get_run(i)["status"] for i in queued} == {"failed"}
        store.finish_run(new, "cancelled", runner.NOT_STARTED)


@pytest.mark.worker
def test_cancel_stops_a_real_worker_after_a_clock_step(start_long_run, clock_step):
    """A training worker, psutil's create time 5 s off in the process that cancels: the
    SIGTERM is sent and the run ends cancelled within the usual grace (it trained on for
    15-16 s, stored 'cancelled' without a signal, before)."""
    rid, st = start_long_run()
    line = runner.cancel(rid)
    assert line.startswith(f"run {rid}: stop requested (SIGTERM sent"), line
    t0 = time.monotonic()
    run = runner.wait(rid, timeout_s=runner.CANCEL_GRACE_S + 15)
    assert run["status"] == "cancelled" and time.monotonic() - t0 < runner.CANCEL_GRACE_S


@pytest.mark.worker
def test_stop_of_a_background_job_says_true_only_when_it_signalled(store_home, clock_step, sleeper):
    path = store_home / "autopilot.json"
    job = {"state": "running", "pid": sleeper.pid, "pid_started": process.start_time(sleeper.pid),
           "started": time.time()}
    background.write_json(path, job)
    assert background.cancel_job(path, wait_s=5) is True  # delivered after a clock step
    assert sleeper.wait(timeout=5) == -signal.SIGTERM
    background.write_json(path, job)  # its process gone, the file still says running
    assert background.cancel_job(path) is False
    assert background.read_json(path)["state"] == "cancelled"


@pytest.mark.worker
def test_children_started_from_another_folder_find_the_engine(tmp_path):
    # The queue and every worker run `python -m engine...` with ROOT as cwd and on
    # PYTHONPATH; a ROOT one folder too deep broke every run (CI, stop 49).
    assert (process.ROOT / "engine" / "__init__.py").is_file()
    assert (process.ROOT / "README.md").is_file()
    out = subprocess.run([sys.executable, "-c", "import engine.jobs.queue_runner, engine.jobs.worker; print('ok')"],
                         cwd=tmp_path, env=process.worker_env(), capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "ok", out.stderr


@pytest.mark.worker
def test_a_detached_child_is_reaped_when_it_ends_and_its_log_is_not_held(tmp_path):
    """The dashboard starts jobs and queues and never waits for them: an ended autopilot stayed a
    `<defunct>` child of the server for 6 minutes, and each queue start kept its log open."""
    log = tmp_path / "job.log"
    proc = process.detach([sys.executable, "-c", "print('done')"], log)
    t0 = time.monotonic()
    while psutil.pid_exists(proc.pid) and time.monotonic() - t0 < 30:
        time.sleep(0.05)  # a zombie still exists: only a wait removes it
    assert not psutil.pid_exists(proc.pid) and proc.returncode == 0
    assert log.read_text() == "done\n"
    assert str(log) not in [f.path for f in psutil.Process().open_files()]
    sleeper = process.detach([sys.executable, "-c", "import time; time.sleep(30)"], log)
    try:
        assert os.getsid(sleeper.pid) == sleeper.pid != os.getsid(0)
    finally:
        sleeper.kill()
