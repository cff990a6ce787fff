"""Launching, watching and cancelling runs; no TensorFlow in this process.

Every run executes in a fresh worker process (``python -m engine.jobs.worker``):
TF's device layout and dtype policy can be set once per process, and a crash
or out-of-memory in training must not take the caller (the dashboard) down.
Runs are queued in the store and executed one at a time by a detached queue
process (``python -m engine.jobs.queue_runner``), so a baseline and its run go
back to back even when the caller goes away.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Optional


from engine.config import RunConfig, baseline_config
from engine.base.errors import ActiveRunError
from engine.config.preflight import check_runnable
from engine.base.process import ROOT, process_alive, read_tail, start_time, worker_env  # noqa: F401 (re-used by callers)
from engine.base.process import USER_CANCEL, detach
from engine.store import ACTIVE_STATUSES, Store, from_script_run

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


# A queued run this young, queued after the last hand-over to a queue process and while no
# submit is under way, may still be waiting for a caller that queued it with start=False
# and starts the queue next (engine.jobs.comparison.start) (s). Runs handed to a queue
# that has died are settled at once.
ORPHAN_GRACE_S = 10.0


def _marker(store: Store) -> tuple[int, float, float]:
    """queue.pid: (pid, start_time of the queue process started last, wall time of the last
    hand-over: when a submit last saw a queue serve or start for its runs); zeros if none."""
    try:
        parts = (store.path.parent / "queue.pid").read_text().split()
        return int(parts[0]), float(parts[1]), float(parts[2]) if len(parts) > 2 else 0.0
    except (OSError, ValueError, IndexError):
        return 0, 0.0, 0.0


def _write_marker(path: Path, pid: int, started: Optional[float]) -> None:
    try:
        path.write_text(f"{pid} {started or 0.0} {time.time()}")
    except OSError:
        pass


def queue_starting(store: Store) -> bool:
    """Whether the queue process started last (queue.pid: pid and start time) is still
    alive: it may not hold the queue lock yet."""
    pid, started, _ = _marker(store)
    return bool(pid) and process_alive(pid, started)


@contextmanager
def submit_lock(store: Store | Path):
    """Held while a submit checks for an active run, queues its runs and starts the queue
    (and while engine.jobs.background.start_job starts a job): simultaneous submits (tabs,
    scripts) then queue exactly one launch, and `reconcile` knows a submit is under way (its
    queued runs are not orphans). An flock, so it ends with its process; a read-only home
    has none (nothing can be submitted there). `store`: the Store, or its file's path."""
    import fcntl

    path = store.path if isinstance(store, Store) else Path(store)
    try:
        fh = open(path.parent / "submit.lock", "a")
    except OSError:
        yield
        return
    try:
        fcntl.flock(fh, fcntl.LOCK_EX)
        yield
    finally:
        fh.close()  # releases the lock


def submitting(store: Store) -> bool:
    """Whether another process or thread holds `submit_lock` now."""
    import fcntl

    try:
        with open(store.path.parent / "submit.lock", "a") as fh:
            try:
                fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(fh, fcntl.LOCK_UN)
    except OSError:
        pass
    return False


def reconcile(store: Store, locked: bool = False) -> None:
    """Settle runs that no process will ever finish, once no queue process serves the
    store (a live queue settles its runs itself, with better reasons). A dead queue is
    known at once: its flock on queue.lock ended with it.

    - running, its worker gone (pid plus boot-relative start time, so neither a reused
      pid nor a clock step misleads): failed, "worker process ended without reporting";
    - running with no worker recorded, or queued and handed to a queue that is gone
      (killed, crashed, the machine rebooted): failed at once, saying so, so that new
      runs are accepted again and nobody waits for a run that will not start. Only a
      queued run that no queue was ever told of, while no submit is under way, gets
      ORPHAN_GRACE_S (its caller may be about to start the queue).

    `locked`: the caller holds `submit_lock` (submit itself).
    """
    if store.readonly:  # nothing can be settled there (nor run)
        return
    active = store.list_runs(["queued", "running"])
    if active and (queue_alive(store) or queue_starting(store)):
        # A script's run (SpeedLabCallback) is no queue's: a live queue never settles it, so
        # a script killed before its atexit (SIGKILL, SIGTERM) left it running for good.
        active = [r for r in active if from_script_run(r.get("plan"))]
    if not active:
        return
    if not locked and any(r["status"] == "queued" for r in active) and submitting(store):
        active = [r for r in active if r["status"] != "queued"]  # its submitter starts the queue next
    handed = _marker(store)[2]
    now = time.time()
    for run in active:
        # A script's run is inserted with its pid; one without (an older SpeedLab, an edited
        # store) is given ORPHAN_GRACE_S.
        if from_script_run(run.get("plan")) and not run["pid"]:
            if now - run["created"] > ORPHAN_GRACE_S:
                store.finish_run(run["id"], "failed", "its script ended before it recorded its process",
                                 only_if_active=True)
            continue
        if run["status"] == "running" and run["pid"]:
            if process_alive(run["pid"], run["pid_started"]):
                continue
            if from_script_run(run.get("plan")):
                store.finish_run(run["id"], "failed", "its script ended before fit finished, without "
                                 "reporting (killed?); what it measured is kept", only_if_active=True)
                continue
            tail = read_tail(store.run_dir(run["id"]) / "worker.log")
            store.finish_run(run["id"], "failed", "worker process ended without reporting "
                             "(killed or crashed); see stderr_tail", only_if_active=True,
                             stderr_tail=tail)
        elif (run["status"] == "running" or run["created"] <= handed
              or now - run["created"] > ORPHAN_GRACE_S):
            what = "before its worker started" if run["status"] == "running" else "before it started"
            store.finish_run(run["id"], "failed", f"its queue process ended {what} (killed or crashed); "
                             "nothing ran: launch it again", only_if_active=True)


def active_run(store: Store, locked: bool = False) -> Optional[dict]:
    """The oldest queued or running run after `reconcile`, or None."""
    reconcile(store, locked)
    runs = store.active_runs()
    return runs[0] if runs else None


def current_run(store_path: Optional[os.PathLike] = None) -> Optional[dict]:
    """`active_run` on a store opened (and closed) for the purpose."""
    store = Store(store_path)
    try:
        return active_run(store)
    finally:
        store.close()


# Run ids this process queued (`submit`), for the command that runs in it: one interrupted
# after queueing and before its wait began still stops them (engine.cli.main).
QUEUED_HERE: list[int] = []


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

    The busy check, the inserts (one transaction) and starting the queue happen under
    `submit_lock`, so of simultaneous submits exactly one queues its runs.
    """
    roles = roles or ["run"] * len(configs)
    warnings = [check_runnable(c) for c in configs]
    store = Store(store_path)
    try:
        with submit_lock(store):
            run = active_run(store, locked=True)
            if run:
                raise ActiveRunError(run)
            group = group_id or uuid.uuid4().hex[:8]
            ids = []
            with store.tx() as conn:
                for cfg, role, warn in zip(configs, roles, warnings):
                    rid = int(conn.execute(
                        "INSERT INTO runs (created, group_id, role, config, status, summary) "
                        "VALUES (?,?,?,?,'queued',?)",
                        (time.time(), group, role, cfg.to_json(),
                         json.dumps({"warnings": warn}) if warn else None)).lastrowid)
                    conn.execute("UPDATE runs SET baseline_id=? WHERE id=?",
                                 (rid if role == "baseline" else baseline_id, rid))
                    if role == "baseline":
                        baseline_id = rid
                    ids.append(rid)
            QUEUED_HERE.extend(ids)
            if start:
                ensure_queue(store_path)
    finally:
        store.close()
    return ids


def ensure_queue(store_path: Optional[os.PathLike] = None) -> bool:
    """Start the queue process unless one already serves this store (an idle queue
    polls the store, so a live one picks new runs up by itself). Returns whether
    one was started."""
    store = Store(store_path) if store_path else Store()
    marker = store.path.parent / "queue.pid"
    try:
        pid, started, _ = _marker(store)
        # A live queue, or one started a moment ago that may not hold the lock yet: don't
        # pile a second on it; the runs queued so far are handed to it (the marker's time).
        if queue_alive(store) or (pid and process_alive(pid, started)):
            _write_marker(marker, pid, started)
            return False
    finally:
        store.close()
    proc = start_queue(store_path)
    _write_marker(marker, proc.pid, start_time(proc.pid))
    return True


def prewarm(store_path: Optional[os.PathLike] = None) -> bool:
    """Have a queue with a warm spare worker ready before the user presses Launch
    (the dashboard calls this when a page opens; no-op with SPEEDLAB_WARM_WORKER=0).
    Returns whether a queue was started. No TF in this process: the spare imports it."""
    return warm_enabled() and ensure_queue(store_path)


def start_queue(store_path: Optional[os.PathLike] = None) -> subprocess.Popen:
    """Start the detached queue process that runs queued runs in order."""
    path = Path(store_path) if store_path else Store().path
    return detach([sys.executable, "-m", "engine.jobs.queue_runner", str(path)], path.parent / "queue.log")


def _baseline_candidates(store: Store, cfg: RunConfig):
    """Completed runs, newest first, whose config equals `baseline_config(cfg)` (target_accuracy aside)."""
    # The target accuracy only decides what the comparison reads off the stored
    # epochs (engine.report.target), not how the baseline trains.
    def key(c: dict) -> dict:
        return {k: v for k, v in c.items() if k != "target_accuracy"}

    from engine.config import inputs

    base = baseline_config(cfg)
    want = key(base.to_dict())
    same = [run for run in store.list_runs(["completed"]) if key(run["config"]) == want]
    identity = inputs.of(base) if same else {}
    if identity:  # a user's model file or data set: the very content it trained on, not a name
        same = [run for run in same if ((run.get("plan") or {}).get("inputs") or {}) == identity]
    return same


def find_baseline(store: Store, cfg: RunConfig) -> Optional[dict]:
    """The newest completed run measured on this machine (the same fingerprint id,
    engine.hardware.fingerprint.matches; a run stored before fingerprints only with
    SPEEDLAB_USE_UNKNOWN_MACHINE=1 and this hostname) whose config equals
    `baseline_config(cfg)` (target_accuracy aside), or None."""
    from engine.hardware import fingerprint

    for run in _baseline_candidates(store, cfg):
        env = run.get("environment") or {}
        if fingerprint.matches(fingerprint.of(env), env.get("hostname")):
            return run
    return None


def baseline_elsewhere(store: Store, cfg: RunConfig) -> Optional[str]:
    """Why a stored baseline of `cfg` was not reused, in one line, when the newest one was
    measured on another machine (or before fingerprints, not opted in); None otherwise."""
    from engine.hardware import fingerprint

    runs = _baseline_candidates(store, cfg)
    if not runs or find_baseline(store, cfg) is not None:
        return None
    env = runs[0].get("environment") or {}
    if fingerprint.of(env):
        return (f"stored baseline run {runs[0]['id']} not reused: it was measured on another machine "
                f"({fingerprint.name_of(env)}; this one is {fingerprint.fingerprint()['name']}); a fresh one is queued")
    return (f"stored baseline run {runs[0]['id']} not reused: it was stored before machine fingerprints "
            f"({fingerprint.UNKNOWN}); set {fingerprint.UNKNOWN_SETTING}=1 (run --use-unknown-machine) to reuse it")


def launch_with_baseline(cfg: RunConfig, store_path: Optional[os.PathLike] = None,
                         reuse: bool = True) -> tuple[int, int, bool]:
    """Queue the baseline of `cfg` (unless a matching one is stored and `reuse`)
    and then `cfg`.

    Returns: (baseline run id, run id, whether the baseline was reused). A stored baseline of
    another machine is never reused (`find_baseline`; `baseline_elsewhere` says why).
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


def cancel(run_id: int, store_path: Optional[os.PathLike] = None, reason: str = USER_CANCEL) -> str:
    """Cancel a queued run at once, or ask a running worker to stop (SIGTERM;
    the queue process kills it after CANCEL_GRACE_S). A user script's run (SpeedLabCallback)
    is only asked, in the store: its callback stops training at the next batch and ends the
    run cancelled; its process is never signalled. Metrics are kept.

    `reason`: why, as the run's error ends up ("cancelled by the user": Stop, `engine
    cancel`; "stopped: the queue got SIGTERM": engine.jobs.stopping). A running run keeps it
    in its error column until its worker ends the run with it.

    Returns: a one-line description of what was done.
    """
    store = Store(store_path)
    try:
        run = store.get_run(run_id)
        if run is None:
            return f"run {run_id} does not exist"
        if run["status"] == "queued":
            line = NOT_STARTED if reason == USER_CANCEL else f"{NOT_STARTED} ({reason})"
            store.finish_run(run_id, "cancelled", line, only_if_active=True)
            return f"run {run_id} {line}"
        if run["status"] != "running":
            return f"run {run_id} is already {run['status']}"
        store.update_run(run_id, cancel_requested=time.time(), error=reason)
        if from_script_run(run.get("plan")) and run["pid"] and process_alive(run["pid"], run["pid_started"]):
            # A user's script (a notebook kernel, perhaps) is never signalled: its SpeedLabCallback
            # reads the request and stops training at its next batch (engine.training.script_run).
            return (f"run {run_id}: stop requested (its script stops training at its next batch; "
                    f"its process, pid {run['pid']}, is not signalled)")
        if process_alive(run["pid"], run["pid_started"]):
            try:
                os.kill(run["pid"], signal.SIGTERM)
                return f"run {run_id}: stop requested (SIGTERM sent to its worker, pid {run['pid']})"
            except (ProcessLookupError, PermissionError) as e:
                return (f"run {run_id}: its worker (pid {run['pid']}) could not be signalled ({e}); "
                        f"its queue kills it within {CANCEL_GRACE_S:.0f} s")
        if not run["pid"] and (queue_alive(store) or queue_starting(store)):
            return f"run {run_id}: stop requested (its worker is starting; the queue stops it)"
        if not run["pid"]:  # claimed, but no queue is left to start its worker: nothing ran
            store.finish_run(run_id, "cancelled", "cancelled before its worker started", only_if_active=True)
            return f"run {run_id} cancelled before its worker started (no process to stop)"
        # No process to signal: the worker ended without reporting; say so, not "cancelled".
        tail = read_tail(store.run_dir(run_id) / "worker.log") if run["pid"] else None
        store.finish_run(run_id, "failed", "worker process not found when cancelled (it ended without "
                         "reporting: killed or crashed)", only_if_active=True, stderr_tail=tail)
        return (f"run {run_id}: its worker process could not be found (pid {run['pid'] or 'not recorded'}); "
                "nothing to stop: marked failed")
    finally:
        store.close()


def cancel_active(store_path: Optional[os.PathLike] = None, reason: str = USER_CANCEL,
                  skip_groups: tuple = ()) -> list[str]:
    """Cancel every queued and running run (queued ones first, so none starts), as `cancel`,
    but those of `skip_groups` (whose own process ends them: two commands' pairs)."""
    store = Store(store_path)
    try:
        runs = [r for r in store.active_runs() if r.get("group_id") not in skip_groups or r.get("group_id") is None]
    finally:
        store.close()
    queued = [r for r in runs if r["status"] == "queued"]
    running = [r for r in runs if r["status"] == "running"]
    return [cancel(r["id"], store_path, reason) for r in queued + running]


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
