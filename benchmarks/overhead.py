"""What does SpeedLab's instrumentation cost? Engine run vs bare `model.fit`.

Runs the same configuration through the engine (worker process, measuring
callback, store writer thread, psutil sampling) and through a bare
`model.fit` with no callbacks in an equally fresh process, alternating
ROUNDS times in one invocation, and prints the ratio of steady throughputs.
Goal: ratio >= 0.98 (instrumentation costs at most 2%).

Both sides use the same data, pipeline, model and compile settings
(engine.training.train.prepare) and train EPOCHS epochs; the first epoch (tracing,
compilation) is left out on both sides. Steady throughput over epochs 2..E:
- engine: samples / the summed durations of those epochs' executions, as
  stored by the worker (these include the engine's own per-execution costs);
- bare: samples / wall time of those epochs, from a callback with epoch hooks
  only (Keras keeps its per-batch fast path when no callback has batch hooks).

    python benchmarks/overhead.py [--rounds 5] [--samples 25600] [--epochs 4] [--model cnn]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def bare_child(cfg_json: str) -> None:
    """In a fresh process: bare fit, print samples/s as JSON."""
    from engine.config import RunConfig

    cfg = RunConfig.from_json(cfg_json)
    from engine.training import devices

    setup = devices.configure(cfg.device_type, cfg.devices)
    from engine.training.train import prepare

    prep = prepare(cfg, setup)  # the engine's own data, model and compile settings
    model, ds = prep.model, prep.train_ds
    import keras

    class EpochClock(keras.callbacks.Callback):
        def __init__(self):
            super().__init__()
            self.durations = []

        def on_epoch_begin(self, epoch, logs=None):
            self.t0 = time.perf_counter()

        def on_epoch_end(self, epoch, logs=None):
            self.durations.append(time.perf_counter() - self.t0)

    clock = EpochClock()
    model.fit(ds, epochs=cfg.epochs, verbose=0, shuffle=False, callbacks=[clock])
    steady = clock.durations[1:]
    samples = len(steady) * cfg.steps_per_epoch() * cfg.batch_size
    print(json.dumps({"samples_per_sec": samples / sum(steady)}))


def engine_rate(cfg, store_path) -> float:
    from engine.jobs import runner
    from engine.store import Store

    (rid,) = runner.submit([cfg], store_path=store_path)
    run = runner.wait(rid, store_path=store_path, timeout_s=600)
    if run["status"] != "completed":
        raise SystemExit(f"engine run failed: {run['error']}")
    store = Store(store_path)
    try:
        rows = [r for r in store.metrics("executions", rid) if r["epoch"] >= 1]
    finally:
        store.close()
    return sum(r["batches"] for r in rows) * cfg.batch_size / sum(r["duration"] for r in rows)


def bare_rate(cfg) -> float:
    from engine.jobs.runner import worker_env

    out = subprocess.run([sys.executable, __file__, "--bare-child", cfg.to_json()],
                         capture_output=True, text=True, env=worker_env(), timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])["samples_per_sec"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--samples", type=int, default=25600)
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--model", default="cnn")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps-per-execution", type=int, default=1)
    p.add_argument("--bare-child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.bare_child:
        bare_child(a.bare_child)
        return
    from engine.config import RunConfig
    from engine.hardware.machine import cpu_model

    cfg = RunConfig(dataset="synthetic", synthetic_shape=(8, 8, 1), synthetic_samples=a.samples,
                    model=a.model, batch_size=a.batch_size, epochs=a.epochs,
                    steps_per_execution=a.steps_per_execution, validation_fraction=0.01)
    store_path = Path(tempfile.mkdtemp(prefix="speedlab-bench-")) / "runs.sqlite"
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores")
    print(f"config: {cfg.model} on synthetic 8x8x1, {cfg.epochs} epochs of {cfg.steps_per_epoch()} steps of "
          f"batch {cfg.batch_size}, steps_per_execution {cfg.steps_per_execution}")
    ratios = []
    for i in range(a.rounds):
        e = engine_rate(cfg, store_path)
        b = bare_rate(cfg)
        ratios.append(e / b)
        print(f"round {i + 1}: engine {e:,.0f} samples/s, bare fit {b:,.0f} samples/s, ratio {e / b:.3f}")
    med = statistics.median(ratios)
    print(f"median ratio engine/bare: {med:.3f} (min {min(ratios):.3f}, max {max(ratios):.3f}); "
          f"goal >= 0.98: {'met' if med >= 0.98 else 'NOT met'}")


if __name__ == "__main__":
    main()
