"""The queue process: runs queued runs one at a time, each in a fresh worker.

``python -m engine.queue_runner STORE_PATH``.  An exclusive lock on the store's
folder keeps it to one queue process per store; it exits when nothing is
queued.  It watches each worker: a worker that dies without reporting ends
``failed`` with its exit status and the last lines of its stderr; a worker
that ignores a cancel for CANCEL_GRACE_S is killed and ends ``cancelled``.
"""
from __future__ import annotations

import fcntl
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from engine.runner import CANCEL_GRACE_S, read_tail, worker_env
from engine.store import Store


def _claim_next(store: Store):
    """Atomically move the oldest queued run to 'running'; None if there is none."""
    with store.tx() as conn:
        row = conn.execute("SELECT id FROM runs WHERE status='queued' ORDER BY id LIMIT 1").fetchone()
        if row is None:
            return None
        conn.execute("UPDATE runs SET status='running', started=? WHERE id=?", (time.time(), row[0]))
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


def run_one(store: Store, run_id: int) -> None:
    """Run one claimed run in a fresh worker process and settle its final status."""
    log_path = store.run_dir(run_id) / "worker.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([sys.executable, "-m", "engine.worker", str(run_id), str(store.path)],
                                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=worker_env())
    try:
        started = psutil.Process(proc.pid).create_time()
    except psutil.NoSuchProcess:
        started = None
    store.update_run(run_id, pid=proc.pid, pid_started=started)
    killed_for_cancel = False
    while True:
        try:
            code = proc.wait(timeout=0.5)
            break
        except subprocess.TimeoutExpired:
            pass
        run = store.get_run(run_id)
        asked = run.get("cancel_requested")
        if asked and time.time() - asked > CANCEL_GRACE_S and not killed_for_cancel:
            proc.kill()
            killed_for_cancel = True
    run = store.get_run(run_id)
    if run["status"] in ("queued", "running"):
        tail = read_tail(log_path)
        if run.get("cancel_requested"):
            store.finish_run(run_id, "cancelled", "cancelled (worker stopped by signal)",
                             only_if_active=True, stderr_tail=tail)
        else:
            last = next((ln for ln in reversed((tail or "").splitlines()) if ln.strip()), "")
            reason = _describe_exit(code) + (f": {last.strip()[:300]}" if last else "")
            store.finish_run(run_id, "failed", reason, only_if_active=True, stderr_tail=tail)


def main(argv=None) -> int:
    argv = argv if argv is not None else sys.argv[1:]
    store = Store(Path(argv[0]))
    lock = open(store.path.parent / "queue.lock", "w")
    fcntl.flock(lock, fcntl.LOCK_EX)  # a second queue process waits here, then drains
    try:
        while True:
            run_id = _claim_next(store)
            if run_id is None:
                return 0
            run_one(store, run_id)
    finally:
        fcntl.flock(lock, fcntl.LOCK_UN)
        store.close()


if __name__ == "__main__":
    sys.exit(main())
