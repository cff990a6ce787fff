"""The queue process: runs queued runs one at a time, each in a fresh worker.

``python -m engine.jobs.queue_runner STORE_PATH``.  An exclusive lock on the store's
folder keeps it to one queue process per store. While idle it keeps one *spare*
worker (engine.jobs.worker --warm: TensorFlow and Keras imported, runtime not
initialised) and polls the store for queued runs every POLL_S; it exits after
idle_exit_s() with nothing queued. A claimed run goes to the spare, so it skips
the ~5 s of imports; the spare is spent on that run (one run per process, as
always) and a new one is started only once nothing is queued or running, so a
spare never competes for cores with a measurement. Multi-worker and JAX runs
start cold (a spare has Keras imported on TensorFlow). SPEEDLAB_WARM_WORKER=0 turns spares off (each run then starts cold).

It watches each worker: a worker that dies without reporting ends
``failed`` with its exit status and the last lines of its stderr; a worker
that ignores a cancel for CANCEL_GRACE_S is killed and ends ``cancelled``.
"""
from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
import time
from pathlib import Path


from engine.jobs.runner import CANCEL_GRACE_S, idle_exit_s, read_tail, warm_enabled, worker_env
from engine.base import process
from engine.base.lines import last_error_line
from engine.base.process import start_time
from engine.store import LONG_PATIENCE_S, DamagedRunError, Store


def _claim_next(store: Store, free_since: float = 0.0):
    """Atomically move the oldest queued run to 'running'; None if there is none.

    Its summary gets 'waiting_since' (Unix s): when it could first have run, the later of its
    submission and `free_since` (when this queue's previous run ended); the worker turns it
    into 'waiting_sec' (engine.jobs.worker.waiting_seconds)."""
    with store.tx() as conn:
        row = conn.execute("SELECT id FROM runs WHERE status='queued' ORDER BY id LIMIT 1").fetchone()
        if row is None:
            return None
        conn.execute("UPDATE runs SET status='running', started=?, summary=json_set(CASE WHEN "
                     "json_valid(summary) AND json_type(summary)='object' THEN summary ELSE '{}' END, "
                     "'$.waiting_since', MAX(created, ?)) WHERE id=?", (time.time(), free_since, row[0]))
        return int(row[0])


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        hint = " (out of memory?)" if -code == signal.SIGKILL else ""
        return f"worker was killed by {name}{hint}"
    return f"worker exited with code {code}"




POLL_S = 0.05  # how often an idle queue looks for queued runs (s)
OWNER_CHECK_S = 1.0  # how often an idle queue looks whether the dashboard that started it is still up (s)
SPARE_READY_TIMEOUT_S = 120.0


class Spare:
    """One warm worker process (child of the queue), ready once its ready file exists."""

    def __init__(self, store: Store):
        folder = store.path.parent / "spares"
        folder.mkdir(parents=True, exist_ok=True)
        self.ready_file = folder / f"spare-{time.time_ns()}.ready"
        log = open(folder / "spare.log", "ab")
        self.proc = subprocess.Popen([sys.executable, "-m", "engine.jobs.worker", "--warm", str(self.ready_file)],
                                     stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT,
                                     env=worker_env())
        log.close()

    def alive(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, timeout_s: float = SPARE_READY_TIMEOUT_S) -> bool:
        """Wait for the spare's imports to finish (a run claimed while it still imports
        waits here rather than start a second, competing import)."""
        deadline = time.monotonic() + timeout_s
        while self.alive() and not self.ready_file.exists():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.02)
        return self.alive()

    def claim(self, run_id: int, store_path: Path, log_path: Path) -> subprocess.Popen:
        """Hand run `run_id` to the spare; returns its process (now the run's worker)."""
        self.proc.stdin.write(f"{run_id}\t{store_path}\t{log_path}\n".encode())
        self.proc.stdin.close()
        self.ready_file.unlink(missing_ok=True)
        return self.proc

    def close(self) -> None:
        """End an unclaimed spare (EOF on its stdin; killed if it lingers)."""
        if self.alive():
            try:
                self.proc.stdin.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
        self.ready_file.unlink(missing_ok=True)


def _spawn(store: Store, run_id: int, extra: list, log_name: str, spare: Spare | None = None) -> subprocess.Popen:
    log_path = store.run_dir(run_id) / log_name
    if spare is not None and not extra and spare.wait_ready():
        open(log_path, "wb").close()
        return spare.claim(run_id, store.path, log_path)
    with open(log_path, "wb") as log:
        return subprocess.Popen([sys.executable, "-m", "engine.jobs.worker", str(run_id), str(store.path), *extra],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=worker_env())


def run_one(store: Store, run_id: int, spare: Spare | None = None) -> None:
    """Run one claimed run in fresh worker process(es) and settle its final status.

    A multi-worker run (config `workers` > 1) starts that many workers on free
    loopback ports; task 0 is the chief. If any worker dies, the run ends
    `failed` naming it and the others are killed at once (they would only block
    in collectives); a cancel also ends all of them at once.
    """
    cfg = store.get_run(run_id)["config"]
    n = int(cfg.get("workers", 1))
    if spare is not None and (n > 1 or cfg.get("backend", "tensorflow") != "tensorflow"):
        # A spare has Keras imported on TensorFlow: a JAX run (and every worker of a
        # multi-worker run) starts cold, and nothing stays idle beside the measurement.
        spare.close()
        spare = None
    if n > 1:
        from engine.base.cluster import local

        addrs = ",".join(local(n))
        procs = [_spawn(store, run_id, ["--cluster", addrs, "--task-index", str(i)],
                        "worker.log" if i == 0 else f"worker-{i}.log") for i in range(n)]
    else:
        procs = [_spawn(store, run_id, [], "worker.log", spare)]
    # Known by pid and boot-relative start time: a wall-clock step cannot make it look dead.
    store.update_run(run_id, pid=procs[0].pid, pid_started=start_time(procs[0].pid))
    codes: dict[int, int] = {}
    failure = None
    killed_at = None
    while len(codes) < len(procs):
        time.sleep(0.25)
        if process.RECEIVED["signal"] and not stopping_done():  # the queue got a stop signal: stop it all
            stop_everything(store)
        for i, p in enumerate(procs):
            if i not in codes and p.poll() is not None:
                codes[i] = p.returncode
                if p.returncode != 0 and failure is None and killed_at is None:  # not one we ended
                    failure = (i, p.returncode)
        run = store.get_run(run_id)
        asked = run.get("cancel_requested")
        if n > 1 and (failure or asked) and killed_at is None:
            for j, p in enumerate(procs):
                if j not in codes:
                    # Workers block in collectives (TF ignores SIGTERM there) and must stop
                    # at the same step anyway: end them at once; the chief's rows are
                    # committed every 0.5 s.
                    p.kill()
            killed_at = time.monotonic()
            if failure:
                # Ended first, so that none writes after the cause below: the chief may see the dead
                # peer (its collective aborted) and store that symptom, before or after this line.
                for p in procs:
                    try:
                        p.wait(timeout=CANCEL_GRACE_S)
                    except subprocess.TimeoutExpired:  # stuck in the kernel: its write cannot come later
                        pass
                run = store.get_run(run_id)
                if run["status"] == "running" or _peer_symptom(run):
                    i, code = failure
                    tail = read_tail(store.run_dir(run_id) / ("worker.log" if i == 0 else f"worker-{i}.log"))
                    store.finish_run(run_id, "failed", f"worker {i} of {n}: {_describe_exit(code)}",
                                     only_if_active=run["status"] == "running", stderr_tail=tail)
        if n == 1 and asked and time.time() - asked > CANCEL_GRACE_S:
            for j, p in enumerate(procs):
                if j not in codes:
                    p.kill()
    _settle(store, run_id, codes.get(0, 0) if failure is None else failure[1], failure)
    final = store.get_run(run_id)["status"]
    for w in store.workers(run_id):
        if w["status"] == "running":
            killed = failure is not None and w["task_index"] == failure[0]
            store.set_worker(run_id, w["task_index"], "failed" if killed else final,
                             error=_describe_exit(failure[1]) if killed else None)


def _peer_symptom(run: dict) -> bool:
    """Whether a failed run's error is only the chief's view of a dead peer
    (an aborted collective or a reset connection), not a cause of its own."""
    err = run.get("error") or ""
    return run["status"] == "failed" and any(k in err for k in (
        "Collective ops is aborted", "Connection reset by peer", "UnavailableError", "Socket closed"))


def _settle(store: Store, run_id: int, code: int, failure) -> None:
    run = store.get_run(run_id)
    if run["status"] not in ("queued", "running"):
        return
    i = failure[0] if failure else 0
    tail = read_tail(store.run_dir(run_id) / ("worker.log" if i == 0 else f"worker-{i}.log"))
    if run.get("cancel_requested"):  # the reason the cancel left (engine.jobs.runner.cancel), if any
        store.finish_run(run_id, "cancelled", run.get("error") or "cancelled (worker stopped by signal)",
                         only_if_active=True, stderr_tail=tail)
        return
    if process.RECEIVED["signal"]:
        store.finish_run(run_id, "cancelled", process.stop_line("queue", process.RECEIVED["signal"]),
                         only_if_active=True, stderr_tail=tail)
        return
    # A killed worker left no line about its end: its last line is whatever it logged before.
    last = last_error_line(tail) if code > 0 else None
    reason = _describe_exit(code) + (f": {last[:300]}" if last else "")
    store.finish_run(run_id, "failed", reason, only_if_active=True, stderr_tail=tail)



class Owner:
    """The dashboard server that started this queue ($SPEEDLAB_OWNER_PID and
    $SPEEDLAB_OWNER_START, set by app.py and inherited): once it has exited, an idle queue
    and its spare leave within OWNER_CHECK_S, not idle_exit_s() later (a 179 MB queue and a
    678 MB spare outlived a stopped dashboard by 10 min). A run in flight or queued is
    finished first. Without the variables (the CLI) nothing changes."""

    def __init__(self, pid: int | None, started: float | None):
        self.pid, self.started, self.checked = pid, started, 0.0

    @classmethod
    def from_env(cls) -> "Owner":
        try:
            pid = int(os.environ.get("SPEEDLAB_OWNER_PID") or 0) or None
            started = float(os.environ["SPEEDLAB_OWNER_START"]) if os.environ.get("SPEEDLAB_OWNER_START") else None
        except ValueError:
            pid, started = None, None
        return cls(pid, started)

    def gone(self) -> bool:
        """Whether the owner has exited (looked at once every OWNER_CHECK_S)."""
        if self.pid is None or time.monotonic() - self.checked < OWNER_CHECK_S:
            return False
        self.checked = time.monotonic()
        from engine.base.process import process_alive

        return not process_alive(self.pid, self.started)


def serve(store: Store) -> None:
    """Run queued runs until none has been queued for idle_exit_s(), or the dashboard that
    started the queue has exited (`Owner`); keep a spare worker while idle (warm_enabled())."""
    spare: Spare | None = None
    idle_since = time.monotonic()
    free_since = 0.0  # when the previous run ended (Unix s): a run waits from then or its submission
    owner = Owner.from_env()
    try:
        while True:
            if process.RECEIVED["signal"]:  # a stop signal: withdraw the queued work, end every comparison
                stop_everything(store)
                from engine.jobs import stopping

                stopping.settle_all(store)
                return
            if warm_enabled() and (spare is None or not spare.alive()) and _next_in_comparison(store):
                # Every run of a comparison starts from a warm spare (both sides start the same
                # way): started here, between runs, never beside a measurement; claimed once ready.
                spare = Spare(store)
            run_id = _claim_next(store, free_since)
            if run_id is not None:
                use = spare if spare is not None and spare.alive() else None
                spare = None  # spent on this run either way (a multi-worker run closes it)
                try:
                    run_one(store, run_id, use)
                except DamagedRunError as e:  # a row that cannot be read: it cannot run either
                    store.conn.execute("UPDATE runs SET status='failed', error=?, ended=? WHERE id=?",
                                       (str(e), time.time(), run_id))
                _after_run(store, run_id)
                # The next run waits from here at the latest: the worker's exit, the queue's own
                # bookkeeping and a spare's imports are all waiting, none of it a run's.
                free_since = (store.get_run(run_id) or {}).get("ended") or time.time()
                idle_since = time.monotonic()
                continue
            if time.monotonic() - idle_since > idle_exit_s() or owner.gone():
                return
            if warm_enabled() and (spare is None or not spare.alive()):
                spare = Spare(store)
            time.sleep(POLL_S)
    finally:
        if spare is not None:
            spare.close()


_STOPPED = {"done": False}


def stopping_done() -> bool:
    return _STOPPED["done"]


def stop_everything(store: Store) -> None:
    """After a stop signal (SIGINT, SIGTERM, SIGHUP: engine.base.process.on_stop_signals), once:
    the running run is asked to stop and every comparison ends `stopped` with its complete
    pairs kept and its queued runs withdrawn, naming the signal (engine.jobs.stopping)."""
    if _STOPPED["done"]:
        return
    _STOPPED["done"] = True
    from engine.jobs import stopping

    try:
        stopping.stop_all(process.stop_line("queue", process.RECEIVED["signal"]), store.path)
    except Exception as e:  # noqa: BLE001 (logged to queue.log; the worker still stops: it got the signal too)
        print(f"stopping after {process.RECEIVED['signal']} failed: {type(e).__name__}: {e}", file=sys.stderr,
              flush=True)


def _after_run(store: Store, run_id: int) -> None:
    """Let a comparison (engine.jobs.comparison) update its statistics and decide
    whether to queue-stop; a failure there must not stop the queue."""
    from engine.jobs import comparison

    try:
        comparison.on_run_end(store, run_id)
    except Exception as e:  # noqa: BLE001 (logged to queue.log; the runs themselves are settled)
        print(f"comparison update after run {run_id} failed: {type(e).__name__}: {e}", file=sys.stderr, flush=True)


def _next_in_comparison(store: Store) -> bool:
    """Whether the next queued run belongs to a comparison."""
    row = store.conn.execute("SELECT group_id FROM runs WHERE status='queued' ORDER BY id LIMIT 1").fetchone()
    return bool(row and (row[0] or "").startswith("cmp-"))


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    process.on_stop_signals()  # SIGINT, SIGTERM, SIGHUP: serve() and run_one() stop everything, then exit
    store = Store(Path(argv[0]), patience_s=LONG_PATIENCE_S)  # waits out a locked store
    lock = open(store.path.parent / "queue.lock", "w")
    try:
        while True:
            fcntl.flock(lock, fcntl.LOCK_EX)  # a second queue process waits here, then drains
            serve(store)
            fcntl.flock(lock, fcntl.LOCK_UN)
            # A run queued after the last look but before the unlock saw a live queue and
            # started none: look once more now that a new submit would start one.
            if _queued(store) == 0 or process.RECEIVED["signal"]:
                return 0
    finally:
        store.close()


def _queued(store: Store) -> int:
    return store.conn.execute("SELECT COUNT(*) FROM runs WHERE status='queued'").fetchone()[0]


if __name__ == "__main__":
    sys.exit(main())
