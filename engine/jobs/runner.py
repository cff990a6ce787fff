"""Launching, watching and cancelling runs; no TensorFlow in this process.

Every run executes in a fresh worker process (``python -m engine.jobs.worker``):
TF's device layout and dtype policy can be set once per process, and a crash
or out-of-memory in training must not take the caller (the dashboard) down.
Runs are queued in the store and executed one at a time by a detached queue
process (``python -m engine.jobs.queue_runner``), so a baseline and its run go
back to back even when the caller goes away.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Callable, Optional

import psutil


from engine.config import RunConfig, baseline_config
from engine.errors import ActiveRunError
from engine.preflight import check_runnable
from engine.process import ROOT, process_alive, read_tail, worker_env  # noqa: F401 (re-used by callers)
from engine.store import ACTIVE_STATUSES, Store

def idle_exit_s() -> float:
    """Seconds an idle queue (and its spare) stays up: $SPEEDLAB_QUEUE_IDLE_S, default 600."""
    try:
        return float(os.environ.get("SPEEDLAB_QUEUE_IDLE_S", "600"))
    except ValueError:
        return 600.0


def warm_enabled() -> bool:
    """Whether the queue keeps a spare worker ($SPEEDLAB_WARM_WORKER, default on)."""
    return os.environ.get("SPEEDLAB_WARM_WORKER", "1") not in ("0", "false", "no", "off")


# A worker that ignores SIGTERM this long after a cancel is killed.
CANCEL_GRACE_S = 15.0


def queue_alive(store: Store) -> bool:
    """True while a queue process holds this store's queue lock (it then settles
    its runs' outcomes itself, with better reasons than `reconcile` can give)."""
    import fcntl

    with open(store.path.parent / "queue.lock", "a") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(fh, fcntl.LOCK_UN)
        return False


# A queued run this young may be waiting for the queue process its submitter is
# starting right now (submit stores it, then starts the queue) (s).
ORPHAN_GRACE_S = 10.0


def queue_starting(store: Store) -> bool:
    """Whether the queue process started last (queue.pid: pid and psutil create time)
    is still alive: it may not hold the queue lock yet."""
    try:
        pid, started = (store.path.parent / "queue.pid").read_text().split()
        return process_alive(int(pid), float(started))
    except (OSError, ValueError):
        return False


def reconcile(store: Store) -> None:
    """Settle runs that no process will ever finish, once no queue process serves the
    store (a live queue settles its runs itself, with better reasons):

    - running, its worker gone (pid plus start time, so a reused pid is not taken for
      it): failed, "worker process ended without reporting";
    - running with no worker recorded, or queued, and the queue process gone (killed,
      crashed, the machine rebooted): failed, saying so, so that new runs are accepted
      again and nobody waits for a run that will not start.
    """
    active = store.list_runs(["queued", "running"])
    if not active or queue_alive(store) or queue_starting(store):
        return
    now = time.time()
    for run in active:
        if run["status"] == "running" and run["pid"]:
            if process_alive(run["pid"], run["pid_started"]):
                continue
            tail = read_tail(store.run_dir(run["id"]) / "worker.log")
            store.finish_run(run["id"], "failed", "worker process ended without reporting "
                             "(killed or crashed); see stderr_tail", only_if_active=True,
                             stderr_tail=tail)
        elif now - (run.get("started") or run["created"]) > ORPHAN_GRACE_S:
            what = "before its worker started" if run["status"] == "running" else "before it started"
            store.finish_run(run["id"], "failed", f"its queue process ended {what} (killed or crashed); "
                             "nothing ran: launch it again", only_if_active=True)


def active_run(store: Store) -> Optional[dict]:
    """The oldest queued or running run after `reconcile`, or None."""
    reconcile(store)
    runs = store.active_runs()
    return runs[0] if runs else None


def current_run(store_path: Optional[os.PathLike] = None) -> Optional[dict]:
    """`active_run` on a store opened (and closed) for the purpose."""
    store = Store(store_path)
    try:
        return active_run(store)
    finally:
        store.close()


def submit(configs: list[RunConfig], roles: Optional[list[str]] = None,
           store_path: Optional[os.PathLike] = None, start: bool = True,
           baseline_id: Optional[int] = None, group_id: Optional[str] = None) -> list[int]:
    """Queue `configs` to run one after another, each in a fresh worker.

    A run with role 'baseline' becomes the baseline of the runs after it; the
    others get `baseline_id` (when given) so the dashboard compares like with like.
    The runs share `group_id` (default: a fresh random one), e.g. the autopilot's
    'autopilot-<id>-t3' labels a trial as belonging to its search.

    Returns: the new run ids, in order.
    Raises: ActiveRunError if a run is active; ConfigError if this machine
    cannot run a config (checked before anything is queued).
    """
    roles = roles or ["run"] * len(configs)
    warnings = [check_runnable(c) for c in configs]
    store = Store(store_path)
    try:
        run = active_run(store)
        if run:
            raise ActiveRunError(run)
        group = group_id or uuid.uuid4().hex[:8]
        ids = []
        for cfg, role, warn in zip(configs, roles, warnings):
            rid = store.create_run(cfg.to_json(), role=role, group_id=group)
            store.update_run(rid, baseline_id=rid if role == "baseline" else baseline_id,
                             **({"summary": {"warnings": warn}} if warn else {}))
            if role == "baseline":
                baseline_id = rid
            ids.append(rid)
    finally:
        store.close()
    if start:
        ensure_queue(store_path)
    return ids


def ensure_queue(store_path: Optional[os.PathLike] = None) -> bool:
    """Start the queue process unless one already serves this store (an idle queue
    polls the store, so a live one picks new runs up by itself). Returns whether
    one was started."""
    store = Store(store_path) if store_path else Store()
    try:
        if queue_alive(store):
            return False
        # One started a moment ago may not hold the lock yet: don't pile a second on it.
        marker = store.path.parent / "queue.pid"
        try:
            pid, started = marker.read_text().split()
            if process_alive(int(pid), float(started)):
                return False
        except (OSError, ValueError):
            pass
    finally:
        store.close()
    proc = start_queue(store_path)
    try:
        marker.write_text(f"{proc.pid} {psutil.Process(proc.pid).create_time()}")
    except (OSError, psutil.Error):
        pass
    return True


def prewarm(store_path: Optional[os.PathLike] = None) -> bool:
    """Have a queue with a warm spare worker ready before the user presses Launch
    (the dashboard calls this when a page opens; no-op with SPEEDLAB_WARM_WORKER=0).
    Returns whether a queue was started. No TF in this process: the spare imports it."""
    return warm_enabled() and ensure_queue(store_path)


def start_queue(store_path: Optional[os.PathLike] = None) -> subprocess.Popen:
    """Start the detached queue process that runs queued runs in order."""
    path = Path(store_path) if store_path else Store().path
    log = open(path.parent / "queue.log", "ab")
    return subprocess.Popen(
        [sys.executable, "-m", "engine.jobs.queue_runner", str(path)],
        stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True,
        cwd=str(ROOT), env=worker_env())


def find_baseline(store: Store, cfg: RunConfig) -> Optional[dict]:
    """The newest completed run on this machine whose config equals
    `baseline_config(cfg)` (target_accuracy aside), or None."""
    # The target accuracy only decides what the comparison reads off the stored
    # epochs (engine.report.compare), not how the baseline trains.
    def key(c: dict) -> dict:
        return {k: v for k, v in c.items() if k != "target_accuracy"}

    want = key(baseline_config(cfg).to_dict())
    host = os.uname().nodename
    for run in store.list_runs(["completed"]):
        if key(run["config"]) == want and (run.get("environment") or {}).get("hostname") == host:
            return run
    return None


def launch_with_baseline(cfg: RunConfig, store_path: Optional[os.PathLike] = None,
                         reuse: bool = True) -> tuple[int, int, bool]:
    """Queue the baseline of `cfg` (unless a matching one is stored and `reuse`)
    and then `cfg`.

    Returns: (baseline run id, run id, whether the baseline was reused).
    When `cfg` is itself its baseline, both ids are the same run.
    Raises: as `submit`.
    """
    base_cfg = baseline_config(cfg)
    store = Store(store_path)
    try:
        found = find_baseline(store, cfg) if reuse else None
    finally:
        store.close()
    if found:
        (rid,) = submit([cfg], ["run"], store_path, baseline_id=found["id"])
        return found["id"], rid, True
    if base_cfg == cfg:
        (rid,) = submit([cfg], ["baseline"], store_path)
        return rid, rid, False
    bid, rid = submit([base_cfg, cfg], ["baseline", "run"], store_path)
    return bid, rid, False


NOT_STARTED = "cancelled before it started"  # a queued run's cancel: its error and its line


def cancel(run_id: int, store_path: Optional[os.PathLike] = None) -> str:
    """Cancel a queued run at once, or ask a running worker to stop (SIGTERM;
    the queue process kills it after CANCEL_GRACE_S). Metrics are kept.

    Returns: a one-line description of what was done.
    """
    store = Store(store_path)
    try:
        run = store.get_run(run_id)
        if run is None:
            return f"run {run_id} does not exist"
        if run["status"] == "queued":
            store.finish_run(run_id, "cancelled", NOT_STARTED, only_if_active=True)
            return f"run {run_id} {NOT_STARTED}"
        if run["status"] != "running":
            return f"run {run_id} is already {run['status']}"
        store.update_run(run_id, cancel_requested=time.time())
        if process_alive(run["pid"], run["pid_started"]):
            os.kill(run["pid"], signal.SIGTERM)
            return f"run {run_id}: stop requested"
        store.finish_run(run_id, "cancelled", "cancelled", only_if_active=True)
        return f"run {run_id} cancelled"
    finally:
        store.close()


def cancel_active(store_path: Optional[os.PathLike] = None) -> list[str]:
    """Cancel every queued and running run (queued ones first, so none starts)."""
    store = Store(store_path)
    try:
        runs = store.active_runs()
    finally:
        store.close()
    queued = [r for r in runs if r["status"] == "queued"]
    running = [r for r in runs if r["status"] == "running"]
    return [cancel(r["id"], store_path) for r in queued + running]


def wait(run_id: int, store_path: Optional[os.PathLike] = None, poll_s: float = 0.5,
         on_poll: Optional[Callable[[dict], None]] = None, timeout_s: Optional[float] = None) -> dict:
    """Block until run `run_id` is final; call `on_poll(run)` each poll.

    Returns: the final run row. Raises: TimeoutError after `timeout_s`.
    """
    store = Store(store_path)
    t0 = time.monotonic()
    try:
        while True:
            reconcile(store)
            run = store.get_run(run_id)
            if on_poll:
                on_poll(run)
            if run["status"] not in ACTIVE_STATUSES:
                return run
            if timeout_s is not None and time.monotonic() - t0 > timeout_s:
                raise TimeoutError(f"run {run_id} still {run['status']} after {timeout_s} s")
            time.sleep(poll_s)
    finally:
        store.close()
