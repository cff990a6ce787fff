"""The worker process: ``python -m engine.jobs.worker RUN_ID STORE_PATH``.

Runs one stored run in this fresh process and writes its metrics and final
status to the store.  SIGTERM asks it to stop at the next execution (the run
ends `cancelled` with its metrics kept).  Any error ends the run `failed`
with one line; the traceback goes to the worker's log (stderr).
"""
from __future__ import annotations

import os
import signal
import socket
import sys
import threading
import traceback
from pathlib import Path

from engine.config import RunConfig
from engine.store import Store


def _one_line(exc: BaseException) -> str:
    # TF's graph errors start with boilerplate; keep the first line that says something.
    noise = ("Graph execution error", "Detected at node", "[[", "Cf. ")
    text = [ln.strip() for ln in str(exc).splitlines() if ln.strip() and not ln.strip().startswith(noise)]
    first = text[0] if text else ""
    name = type(exc).__name__
    if name in ("DeviceError", "RunFailed"):  # already written for the user
        return first
    if name == "ResourceExhaustedError":
        return f"out of memory: {first[:200]}; use a smaller batch_size or model"
    return f"{name}: {first[:300]}" if first else name


def main(argv=None) -> int:
    """``RUN_ID STORE_PATH [--cluster H:P,H:P --task-index I]``; always exits 0 once
    the outcome is in the store (a non-zero exit means the worker itself broke)."""
    import argparse

    from engine.training.timeline import Timeline

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
        from engine import cluster as cluster_mod

        cluster = cluster_mod.parse(args.cluster, args.task_index)
    chief = cluster is None or cluster.is_chief
    store = Store(store_path)
    run = store.get_run(run_id)
    if run is None or run["status"] != "running":
        return 0  # cancelled while queued, or claimed by nobody
    stop = threading.Event()
    if cluster is None:
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        signal.signal(signal.SIGINT, lambda *_: stop.set())
    # Several workers must stop at the same step or their collectives hang, so a
    # multi-worker run is cancelled by ending every process (default SIGTERM).
    cfg = RunConfig.from_dict(run["config"])
    warnings = (run.get("summary") or {}).get("warnings", [])
    if cluster is not None:
        store.set_worker(run_id, cluster.task_index, "running", pid=os.getpid(),
                         address=cluster.workers[cluster.task_index], host=socket.gethostname())

    from engine.training.recorder import Writer

    writer = Writer(lambda: Store(store_path), run_id, worker=args.task_index if cluster else 0)
    writer.start()
    # Only the chief writes the run's metrics; other workers write their system metrics.
    sink = writer.push if chief else (lambda table, row: None)

    def on_setup(env, plan):
        if chief:
            store.update_run(run_id, environment=env, plan=plan)
        if plan["device_kind"] == "GPU":
            from engine.training.devices import gpu_memory_mb

            names = env["devices"]
            writer.gpu_mem_fn = lambda: gpu_memory_mb(names)

    status, error, summary = "failed", None, {}
    try:
        from engine.training.train import train

        out = train(cfg, sink, stop, on_setup=on_setup, on_start=writer.set_t0, cluster=cluster,
                    timeline=timeline)
        status, error, summary = out.status, out.error, out.summary
        if out.status == "completed" and cfg.save_model and chief:
            path = store.run_dir(run_id) / "model.keras"
            out.model.save(path)
            summary["model_path"] = str(path)
    except Exception as exc:  # noqa: BLE001 - every error must end as one line in the store
        traceback.print_exc()
        error = _one_line(exc)
    finally:
        writer.stop()
    if status == "completed" and stop.is_set():
        status = "cancelled"
    if cluster is not None:
        store.set_worker(run_id, cluster.task_index, status, error=error)
    if chief:
        summary.update(warnings=warnings, run_id=run_id, status=status, error=error)
        store.finish_run(run_id, status, error, summary=summary)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
