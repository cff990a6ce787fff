"""The metrics writer: a background thread that commits the recorder's rows to the store.

The worker that owns a run (engine.jobs.worker, or SpeedLabCallback in a user's own script,
engine.training.script_run) starts one; the recorder (engine.training.recorder) only appends
rows to it. Commits happen about twice a second together with psutil samples, so a worker
that dies loses at most the last second of metrics. No Keras here.
"""
from __future__ import annotations

import math
import threading
import time
from typing import Callable, Optional

import psutil

FLUSH_EVERY_S = 0.5
FLUSH_AT_ONCE = 3  # executions committed as soon as they arrive (the live view's first points)
SAMPLE_EVERY_S = 1.0


class Writer(threading.Thread):
    """Commits buffered metric rows and samples system metrics in the background.

    `push(table, row)` is cheap and thread-safe (list.append under the GIL).
    System rows follow engine.store.SYSTEM_COLS: t (s since `t0`, a
    perf_counter value), worker CPU % (of one core), RSS (MB), system memory %,
    GPU memory (MB) from `gpu_mem_fn`, the worker's task index.

    Nothing is dropped on a locked store: rows leave the buffer only once their
    commit succeeded, a failed flush is retried with backoff (RETRY_MIN_S to
    RETRY_MAX_S) while sampling goes on, and the thread never dies of an error.
    Only rows still unwritten when `stop`'s patience runs out, a batch that
    fails MAX_BATCH_ERRORS times for a reason other than a lock, or a batch that
    meets a full disk (`disk_full`, then `on_full()` once), are given up;
    they are counted in `lost` ({table: rows}) and `lost_total`, which the
    worker stores as the run's `metrics_incomplete`; `last_error` is the latest failure;
    `cpu_sec` the CPU time the thread used (s: commits and psutil samples), set when it ends.
    """

    RETRY_MIN_S, RETRY_MAX_S = 0.25, 4.0
    MAX_BATCH_ERRORS = 20

    def __init__(self, store_factory, run_id: int, gpu_mem_fn: Optional[Callable[[], Optional[float]]] = None,
                 worker: int = 0):
        super().__init__(daemon=True, name="speedlab-writer")
        self.store_factory = store_factory
        self.run_id = run_id
        self.gpu_mem_fn = gpu_mem_fn
        self.worker = worker
        self.rows = {"executions": [], "epochs": [], "system": []}
        self.lost = {"executions": 0, "epochs": 0, "system": 0}
        self.cpu_sec: Optional[float] = None  # CPU time of this thread (s), once it has ended
        self.last_error: Optional[str] = None
        # A full disk: the batch that failed is counted lost at once (retrying cannot help
        # until space is freed), and `on_full` is called once (the worker stops the run).
        self.disk_full = False
        self.on_full: Optional[Callable[[], None]] = None
        self.t0 = None  # system samples start once training starts (set_t0)
        self._halt = threading.Event()
        self._kick = threading.Event()
        self._pushed = 0
        self._give_up_at = math.inf
        self._errors = 0
        self._proc = psutil.Process()
        self._proc.cpu_percent(None)  # prime: the first reading is always 0

    @property
    def lost_total(self) -> int:
        """Rows that could not be stored (0 when the store has every row)."""
        return sum(self.lost.values())

    def push(self, table: str, row: tuple):
        self.rows[table].append(row)
        # The first executions and every epoch are committed at once (the page's first
        # point should not wait for the next tick); later rows go in batches.
        if table == "epochs" or (table == "executions" and self._pushed < FLUSH_AT_ONCE):
            self._kick.set()
        if table == "executions":
            self._pushed += 1

    def set_t0(self, t0: float):
        """Align system-metric times with the Recorder's training start."""
        self.t0 = t0

    def sample(self):
        gpu = self.gpu_mem_fn() if self.gpu_mem_fn else None
        self.push("system", (time.perf_counter() - self.t0, self._proc.cpu_percent(None),
                             self._proc.memory_info().rss / 2**20, psutil.virtual_memory().percent, gpu, self.worker))

    def flush(self, store):
        """Commit every buffered row in one transaction; rows leave the buffer
        only after the commit. Raises what the store raises (rows kept)."""
        counts = {table: len(rows) for table, rows in self.rows.items()}
        if not any(counts.values()):
            return
        batch = {table: self.rows[table][:n] for table, n in counts.items()}
        store.add_metrics(self.run_id, batch["executions"], batch["epochs"], batch["system"])
        for table, n in counts.items():  # push() only appends: the first n are the ones written
            del self.rows[table][:n]

    def _drop(self, counts: Optional[dict] = None):
        """Give up the first counts[table] rows of each table (all rows when None)."""
        for table, rows in self.rows.items():
            n = len(rows) if counts is None else counts[table]
            del rows[:n]
            self.lost[table] += n

    def run(self):
        store = None
        next_sample = 0.0
        delay = self.RETRY_MIN_S
        cpu0 = time.thread_time()
        try:
            while True:
                halting = self._halt.is_set()
                try:
                    if self.t0 is not None and time.perf_counter() >= next_sample and not halting:
                        next_sample = time.perf_counter() + SAMPLE_EVERY_S
                        self.sample()
                except Exception as e:  # noqa: BLE001 - a failed psutil read must not end the thread
                    self.last_error = f"sample: {type(e).__name__}: {e}"
                counts = {table: len(rows) for table, rows in self.rows.items()}
                try:
                    if store is None:
                        store = self.store_factory()
                    self._kick.clear()  # before the flush: a row pushed during it kicks again
                    self.flush(store)
                    self._errors, delay = 0, self.RETRY_MIN_S
                    if halting:
                        return
                    self._kick.wait(FLUSH_EVERY_S)  # stop() kicks too
                    continue
                except Exception as e:  # noqa: BLE001 - keep the rows, keep the thread
                    from engine.store import StoreFullError, is_busy

                    self.last_error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                    if isinstance(e, StoreFullError) or "disk is full" in str(e):
                        self._drop(counts)  # these rows cannot be stored: count them, keep the thread
                        if not self.disk_full:
                            self.disk_full = True
                            if self.on_full:
                                self.on_full()
                    elif is_busy(e) or "locked" in str(e):
                        pass  # locked: retried after the backoff, not counted as an error
                    else:
                        self._errors += 1
                        if self._errors >= self.MAX_BATCH_ERRORS:  # this batch cannot be written: count it
                            self._drop(counts)
                            self._errors = 0
                        if store is not None:
                            try:
                                store.close()
                            except Exception:  # noqa: BLE001
                                pass
                            store = None  # reconnect on the next try
                if halting and time.monotonic() >= self._give_up_at:
                    self._drop()
                    return
                self._halt.wait(delay) if not halting else time.sleep(delay)
                delay = min(delay * 2, self.RETRY_MAX_S)
        finally:
            if store is not None:
                try:
                    store.close()
                except Exception:  # noqa: BLE001
                    pass
            self.cpu_sec = time.thread_time() - cpu0

    def stop(self, patience_s: float = 900.0):
        """Flush what is left and end the thread. Waits up to `patience_s`
        seconds for a locked store; rows still unwritten then are counted in `lost`."""
        self._give_up_at = time.monotonic() + patience_s
        self._halt.set()
        self._kick.set()
        self.join(timeout=patience_s + 30)
        if self.is_alive():  # stuck inside SQLite itself: whatever is buffered is not stored
            self._drop()
