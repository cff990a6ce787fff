"""The worker process: ``python -m engine.worker RUN_ID STORE_PATH``.

Runs one stored run in this fresh process and writes its metrics and final
status to the store.  SIGTERM asks it to stop at the next execution (the run
ends `cancelled` with its metrics kept).  Any error ends the run `failed`
with one line; the traceback goes to the worker's log (stderr).
"""
from __future__ import annotations

import signal
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
    argv = argv if argv is not None else sys.argv[1:]
    run_id, store_path = int(argv[0]), Path(argv[1])
    store = Store(store_path)
    run = store.get_run(run_id)
    if run is None or run["status"] != "running":
        return 0  # cancelled while queued, or claimed by nobody
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    cfg = RunConfig.from_dict(run["config"])
    warnings = (run.get("summary") or {}).get("warnings", [])

    from engine.recorder import Writer

    writer = Writer(lambda: Store(store_path), run_id)
    writer.start()

    def on_setup(env, plan):
        store.update_run(run_id, environment=env, plan=plan)
        if plan["device_kind"] == "GPU":
            from engine.devices import gpu_memory_mb

            names = env["devices"]
            writer.gpu_mem_fn = lambda: gpu_memory_mb(names)

    status, error, summary = "failed", None, {}
    try:
        from engine.train import train

        out = train(cfg, writer.push, stop, on_setup=on_setup, on_start=writer.set_t0)
        status, error, summary = out.status, out.error, out.summary
        if out.status == "completed" and cfg.save_model:
            path = store.run_dir(run_id) / "model.keras"
            out.model.save(path)
            summary["model_path"] = str(path)
    except Exception as exc:  # noqa: BLE001 - every error must end as one line in the store
        traceback.print_exc()
        error = _one_line(exc)
    finally:
        writer.stop()
    summary["warnings"] = warnings
    summary["run_id"] = run_id
    summary["status"] = status
    summary["error"] = error
    if status == "completed" and stop.is_set():
        status = "cancelled"
    store.finish_run(run_id, status, error, summary=summary)
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
