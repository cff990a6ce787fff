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
