"""The worker process: ``python -m engine.jobs.worker RUN_ID STORE_PATH``.

Runs one stored run in this fresh process and writes its metrics and final
status to the store.  SIGTERM asks it to stop at the next execution (the run
ends `cancelled` with its metrics kept).  Any error ends the run `failed`
with one line; the traceback goes to the worker's log (stderr).
"""
from __future__ import annotations

import os
import socket
import sys
import threading
import time
import traceback
from pathlib import Path

from engine.base import process
from engine.base.lines import error_line
from engine.config import RunConfig
from engine.store import LONG_PATIENCE_S, Store, StoreFullError

# Space set aside at the start of a run and freed when the disk fills, so that the
# run's failure and cause can still be stored (bytes; a ballast file in its folder).
DISK_RESERVE_BYTES = 1 << 20


def incomplete_summary(writer) -> dict:
    """{'metrics_incomplete': rows lost, 'metrics_lost': {table: rows}} when the
    writer (engine.training.writer.Writer) could not store every row, else {}."""
    if not writer.lost_total:
        return {}
    _say(f"metrics incomplete: {writer.lost_total} rows could not be stored ({writer.lost}); "
         f"last error: {writer.last_error}")
    return {"metrics_incomplete": writer.lost_total, "metrics_lost": dict(writer.lost)}


def waiting_seconds(run: dict, clock_start: float) -> float | None:
    """Seconds run `run` waited before its worker's clock started (`clock_start`, Unix s: the
    process start, or a spare's claim): from its summary's 'waiting_since' (the queue's
    engine.jobs.queue_runner._claim_next: its submission or the previous run's end, whichever
    is later), else from its claim ('started'). Covers the queue's wait for the machine and for
    a spare's imports; the worker's own setup is 'setup_sec'. None without either time."""
    since = (run.get("summary") or {}).get("waiting_since") or run.get("started")
    return None if since is None else round(max(clock_start - since, 0.0), 3)


def mfu_summary(cfg: RunConfig, summary: dict, run_id: int) -> dict:
    """The MFU fields (engine.report.mfu.fields) against this machine's theoretical peak for
    the run's compute dtype (a CPU's clock is measured now, 0.2 s, when none is stored:
    after training, outside every second the run accounts for) and the kept best matmul
    beside it. {} (and a line on stderr) when that fails."""
    try:
        from engine.report import mfu

        return mfu.machine_fields(summary, summary.get("flops_per_sample"), measure_clock=True)
    except Exception as e:  # noqa: BLE001 - a missing MFU must not fail a finished run
        traceback.print_exc()
        return {"peak_source": f"MFU not computed: {type(e).__name__}: {str(e)[:200]}"}


def main(argv=None, timeline=None, warm: bool = False) -> int:
    """``RUN_ID STORE_PATH [--cluster H:P,H:P --task-index I]``; always exits 0 once
    the outcome is in the store (a non-zero exit means the worker itself broke).
    `timeline`: a warm worker's clock, started when it claimed the run (`warm`)."""
    import argparse

    from engine.training.timeline import Timeline

    if timeline is None:
        timeline = Timeline()  # seconds since this process started: the interpreter's start-up counts
        timeline.mark("startup")
    p = argparse.ArgumentParser(prog="python -m engine.jobs.worker")
    p.add_argument("run_id", type=int)
    p.add_argument("store_path", type=Path)
    p.add_argument("--cluster", help="host:port of every worker, comma-separated (multi-worker)")
    p.add_argument("--task-index", type=int, default=0)
    args = p.parse_args(argv)
    run_id, store_path = args.run_id, args.store_path
    cluster = None
    if args.cluster:
        from engine.base import cluster as cluster_mod

        cluster = cluster_mod.parse(args.cluster, args.task_index)
    chief = cluster is None or cluster.is_chief
    store = Store(store_path, patience_s=LONG_PATIENCE_S)  # waits out a locked store
    run = store.get_run(run_id)
    if run is None or run["status"] != "running":
        return 0  # cancelled while queued, or claimed by nobody
    stop = threading.Event()
    if cluster is None:  # SIGINT, SIGTERM, SIGHUP: stop at the next execution, keep the metrics
        process.on_stop_signals(lambda _name: stop.set())
    # Several workers must stop at the same step or their collectives hang, so a
    # multi-worker run is cancelled by ending every process (default SIGTERM).
    cfg = RunConfig.from_dict(run["config"])
    warnings = (run.get("summary") or {}).get("warnings", [])
    waiting = waiting_seconds(run, time.time() - timeline.now())
    if cluster is not None:
        store.set_worker(run_id, cluster.task_index, "running", pid=os.getpid(),
                         address=cluster.workers[cluster.task_index], host=socket.gethostname())

    from engine.training import backends

    backends.use(cfg.backend, cfg.device_type, cfg.devices)  # before anything imports Keras
    from engine.training.writer import Writer

    # One short attempt per flush: the writer keeps its rows and retries while it goes on sampling.
    writer = Writer(lambda: Store(store_path, patience_s=0, busy_timeout_s=0.5), run_id,
                    worker=args.task_index if cluster else 0)
    reserve = _reserve(store, run_id) if chief else None
    writer.on_full = stop.set  # a full disk ends the run at the next execution: no row could be kept
    writer.start()
    # Only the chief writes the run's metrics; other workers write their system metrics.
    sink = writer.push if chief else (lambda table, row: None)

    seen_plan = {}

    def on_setup(env, plan):
        from engine.config import inputs

        plan = {**plan, "inputs": inputs.of(cfg)}  # the content it trains on (find_baseline matches it)
        seen_plan.update(plan)
        if chief:
            store.update_run(run_id, environment=env, plan=plan)
        if plan["device_kind"] == "GPU":
            if cfg.backend == "jax":
                from engine.training.jax_devices import gpu_memory_mb
            else:
                from engine.training.devices import gpu_memory_mb

            names = env["devices"]
            writer.gpu_mem_fn = lambda: gpu_memory_mb(names)

    status, error, summary = "failed", None, {}
    try:
        if stop.is_set():  # stopped while importing: the run's set-up (data, model, tracing) is not begun
            raise _StoppedInSetup
        from engine.training.train import train

        def on_start(t0):
            writer.set_t0(t0)
            if chief:  # the page counts its time-left estimate down from here (report.progress.progress)
                store.update_run(run_id, plan={**seen_plan, "train_started_at": time.time()})

        out = train(cfg, sink, stop, on_setup=on_setup, on_start=on_start, cluster=cluster,
                    timeline=timeline)
        status, error, summary = out.status, out.error, out.summary
        if out.status == "completed" and cfg.save_model and chief:
            path = store.run_dir(run_id) / "model.keras"
            out.model.save(path)
            summary["model_path"] = str(path)
            from engine.training.saved import LOAD_LINE

            summary["model_load"] = LOAD_LINE  # how to load it with plain Keras elsewhere
    except _StoppedInSetup:
        status = "cancelled"
    except StoreFullError:  # the run's own writes (plan, environment) met the full disk
        writer.disk_full = True
    except Exception as exc:  # noqa: BLE001 - every error must end as one line in the store
        traceback.print_exc()
        error = error_line(exc)
    finally:
        writer.stop(patience_s=LONG_PATIENCE_S)
    summary.update(incomplete_summary(writer))
    if writer.disk_full:
        status, error = "failed", disk_full_line(writer.lost_total, store_path)
        _say(error)
        if reserve is not None:
            reserve.unlink(missing_ok=True)  # room for the lines below
    if "instrumentation" in summary:
        summary["instrumentation"]["writer_cpu_sec"] = writer.cpu_sec
    if status == "completed" and stop.is_set():
        status = "cancelled"
    if status == "cancelled":
        error = _cancel_line(store, run_id)
    if cluster is not None:
        store.set_worker(run_id, cluster.task_index, status, error=error)
    if chief and summary.get("samples_per_sec"):
        summary.update(mfu_summary(cfg, summary, run_id))
    if chief:
        summary.update(warnings=warnings, run_id=run_id, status=status, error=error,
                       warm_worker=warm, waiting_sec=waiting)
        if summary.get("wall_sec") is not None:  # after the clock stopped: test set, saving, last rows
            summary["close_sec"] = round(max(timeline.now() - summary["wall_sec"], 0.0), 3)
        try:
            store.finish_run(run_id, status, error, summary=summary)
        except StoreFullError:  # not even the reserve was enough: the outcome alone, no summary
            store.finish_run(run_id, status, error or disk_full_line(writer.lost_total, store_path))
    if reserve is not None:
        reserve.unlink(missing_ok=True)
    store.close()
    return 0


class _StoppedInSetup(Exception):
    """A stop signal arrived before training began: the run ends cancelled at once."""


def _cancel_line(store: Store, run_id: int) -> str:
    """Why a cancelled run stopped: the reason whoever cancelled it left (engine.jobs.runner.cancel:
    the user's Stop, or a stop signal's engine.jobs.stopping), else the signal this worker got
    ("stopped: the worker got SIGTERM"); "cancelled by the user" only when the user asked."""
    run = store.get_run(run_id) or {}
    if run.get("cancel_requested"):
        return run.get("error") or process.USER_CANCEL
    return process.stop_reason("worker")


def _say(line: str) -> None:
    """A line to the worker's log (stderr), which may sit on the full disk itself."""
    try:
        print(line, file=sys.stderr)
    except OSError:
        pass


def disk_full_line(lost: int, store_path) -> str:
    """The cause a run stopped by a full disk is stored with."""
    return (f"disk full: {lost:,} metric rows not stored (the disk holding {store_path} filled up; the rows "
            "committed before are kept); free space and run it again")


def _reserve(store: Store, run_id: int):
    """Write the run's DISK_RESERVE_BYTES ballast file; its path, or None when even that does not fit."""
    path = store.run_dir(run_id) / ".disk-reserve"
    try:
        with open(path, "wb") as fh:
            fh.write(b"\0" * DISK_RESERVE_BYTES)
        return path
    except OSError:
        path.unlink(missing_ok=True)
        return None


def warm_main(ready_path: str) -> int:
    """``python -m engine.jobs.worker --warm READY_FILE``: a spare worker.

    Imports TensorFlow, Keras and the training code (the slowest part of a
    worker's start: ~5 s on a 2-core CPU) without initialising the TF runtime,
    so that the device layout can still be set when a run claims it; touches
    READY_FILE; then waits for one line on stdin, ``RUN_ID<TAB>STORE_PATH<TAB>LOG_PATH``,
    sends its output to LOG_PATH and runs that run as `main` would. EOF on stdin
    (the queue went away) ends it. The run's clock starts at the claim: its setup
    is what is left after the imports (summary 'warm_worker': true).
    """
    from engine.training import backends

    # Keras on TensorFlow, as every run it may claim (JAX runs start cold); no device is set
    # up yet, so the run's own backends.use then only checks the backend.
    backends.use("tensorflow")
    import engine.training.train  # noqa: F401
    from engine.training.timeline import Timeline

    Path(ready_path).write_text(str(os.getpid()))
    line = sys.stdin.readline()
    if not line.strip():
        return 0
    timeline = Timeline(origin_perf=time.perf_counter())
    timeline.mark("startup")
    timeline.mark("imports")
    run_id, store_path, log_path = line.rstrip("\n").split("\t")
    log = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    sys.stdout.flush()
    sys.stderr.flush()
    os.dup2(log, 1)
    os.dup2(log, 2)
    return main([run_id, store_path], timeline, warm=True)


def _exit(code: int) -> None:
    """Leave without TensorFlow's interpreter teardown (~1 s measured): by now the
    outcome is committed and the store closed, so nothing is left to save."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--warm"]:
        _exit(warm_main(sys.argv[2]))
    _exit(main())
