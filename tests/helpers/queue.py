"""A store's queue process and its warm spare workers, found by their command lines (both name
the store's folder): the queue and autopilot tests wait for a spare, and end what they started."""
from __future__ import annotations

import time

import psutil

from tests.helpers.waiting import wait_for


def _procs(store_home, match) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter(["cmdline"]):
        cmd = p.info["cmdline"] or []
        if match(cmd) and any(str(store_home) in c for c in cmd):
            out.append(p)
    return out


def queue_procs(store_home) -> list[psutil.Process]:
    """Live queue processes (engine.jobs.queue_runner) of the store in `store_home`."""
    return _procs(store_home, lambda cmd: any("engine.jobs.queue_runner" in c for c in cmd))


def warm_pids(store_home) -> set[int]:
    """Live spare-worker processes of this store (their command line names its spares folder)."""
    return {p.pid for p in _procs(store_home, lambda cmd: "--warm" in cmd)}


def ready_spare(store_home, timeout=120) -> int:
    """The pid of a spare of this store once it is ready (its imports done: its ready file
    exists). Raises: AssertionError after `timeout` s."""
    ready = wait_for(lambda: sorted((store_home / "spares").glob("*.ready")), timeout, "a ready spare worker", 0.1)
    return int(ready[0].read_text())


def queue_gone(store_home, timeout=30) -> None:
    """Wait for this store's queue process to exit by itself (SPEEDLAB_QUEUE_IDLE_S after its
    last run). Raises: AssertionError after `timeout` s."""
    wait_for(lambda: not queue_procs(store_home), timeout, "the queue to exit", 0.1)


def end_queue(store_home, timeout=15) -> None:
    """End this store's queue process (SIGTERM) and kill its spare at once, a spare the queue
    starts meanwhile too: an unclaimed spare holds no run, and left to the queue's close (EOF,
    then up to 5 s) it first finished importing TensorFlow, about 5 CPU-s. Waits `timeout` s
    at most."""
    queues = queue_procs(store_home)
    for q in queues:
        q.terminate()
    t0 = time.monotonic()
    while True:
        for pid in warm_pids(store_home):
            try:
                psutil.Process(pid).kill()
            except psutil.NoSuchProcess:
                pass
        _, alive = psutil.wait_procs(queues, timeout=0.05)
        if (not alive and not warm_pids(store_home)) or time.monotonic() - t0 > timeout:
            return


class StandInQueue:
    """A store's queue process and its workers, played, for tests whose point is the page or the
    store, not training (a real run's worker costs 5-9 CPU-s, mostly importing TensorFlow).

    From its construction it holds the store's queue lock, so that `comparison.start` starts no
    queue and no reader settles the queued runs as orphans. `claim(store)` claims the next queued
    run as the queue does (`queue_runner._claim_next`) and gives it the stand-in worker (a
    sleeping process: a stop signals it, never the test process); the test then writes what a
    worker would. `start()` serves the store as the queue does instead: claims each queued run in
    order, writes in real time what `recorded` stores for its config (the plan after SETUP_S of
    set-up, then each execution and epoch as its clock passes: the baseline STEP_S["baseline"] s
    a step, the run STEP_S["run"]), ends it with its summary and calls the queue's comparison hook
    (`comparison.on_run_end`), until no run is queued; it needs `scratch`, a folder for the
    recorded runs. `check()` raises what went wrong while serving. Leaving the block stops it,
    ends the stand-in worker, lets go of the lock and ends a claimed run still active as
    cancelled, as the queue settles a signalled worker's run."""

    SETUP_S = 1.5  # the worker's devices, data, model and tracing, before its first execution
    STEP_S = {"baseline": 0.06, "run": 0.045}

    def __init__(self, home, scratch=None):
        import fcntl
        import subprocess
        import sys
        import threading

        self.home, self.scratch, self.errors, self.claimed = home, scratch, [], []
        self.lock = open(home / "queue.lock", "a")
        fcntl.flock(self.lock, fcntl.LOCK_EX)
        self.worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        from engine.store import Store

        self.done.set()
        if self.thread.is_alive():
            self.thread.join(timeout=30)
        self.worker.kill()
        self.worker.wait()
        with Store(self.home / "runs.sqlite") as store:
            for rid in self.claimed:
                store.finish_run(rid, "cancelled", "cancelled by the user", only_if_active=True)
        self.lock.close()  # lets go of the queue lock
        if exc[0] is None:
            self.check()

    def claim(self, store):
        """The next queued run's id (None: none queued), claimed and given the stand-in worker."""
        from engine.base.process import start_time
        from engine.jobs import queue_runner

        rid = queue_runner._claim_next(store)
        if rid is not None:
            self.claimed.append(rid)
            store.update_run(rid, pid=self.worker.pid, pid_started=start_time(self.worker.pid))
        return rid

    def start(self) -> None:
        self.thread.start()

    def check(self) -> None:
        if self.errors:
            raise AssertionError(f"the stand-in queue failed: {self.errors[0]!r}") from self.errors[0]

    def _serve(self) -> None:
        from engine.jobs import comparison
        from engine.store import Store

        try:
            with Store(self.home / "runs.sqlite") as store, Store(self.scratch / "recorded.sqlite") as rec:
                while not self.done.is_set():
                    rid = self.claim(store)
                    if rid is None:
                        return
                    self._train(store, rec, rid)
                    comparison.on_run_end(store, rid)
                    self.done.wait(0.5)  # the next run's worker starts
        except Exception as e:  # noqa: BLE001 - said by check() in the test's thread
            self.errors.append(e)

    def _train(self, store, rec, rid: int) -> None:
        import os

        from engine.config import RunConfig
        from engine.store import EPOCH_COLS, EXEC_COLS, SYSTEM_COLS

        from tests.helpers.recorded_runs import recorded

        run = store.get_run(rid)
        src = recorded(rec, RunConfig.from_dict(run["config"]), run["role"], step_sec=self.STEP_S[run["role"]],
                       host=os.uname().nodename, kind="CPU")
        made = rec.get_run(src)
        cols = {"executions": EXEC_COLS, "epochs": EPOCH_COLS, "system": SYSTEM_COLS}
        rows = {t: [tuple(r[c] for c in cols[t]) for r in rec.metrics(t, src)] for t in cols}
        if self.done.wait(self.SETUP_S):
            return
        store.update_run(rid, environment=made["environment"], plan={**made["plan"], "train_started_at": time.time()})
        t0 = time.monotonic()
        while any(rows.values()):
            if self.done.wait(0.25):  # each row once its clock has passed (a worker commits twice a second)
                return
            now, at = time.monotonic() - t0, {t: cols[t].index("t") for t in cols}
            due = {t: [r for r in rs if r[at[t]] <= now] for t, rs in rows.items()}
            rows = {t: rs[len(due[t]):] for t, rs in rows.items()}
            store.add_metrics(rid, due["executions"], due["epochs"], due["system"])
        store.finish_run(rid, "completed", summary=made["summary"])
