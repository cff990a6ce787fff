"""What does SpeedLab's instrumentation cost? Engine run vs bare `model.fit`.

Runs the same configuration through the engine (worker process, measuring
callback, store writer thread, psutil sampling) and through a bare
`model.fit` with no callbacks in an equally fresh process, alternating
ROUNDS times in one invocation, and prints the ratio of steady throughputs.
Goal: ratio >= 0.98 (instrumentation costs at most 2%).

Both sides use the same data, pipeline, model and compile settings
(engine.datasets / pipeline / models) and one long epoch, so epoch
boundaries do not matter. Steady throughput:
- engine: samples / seconds over all executions after the first (warm-up);
- bare: after a warm-up `fit` of a few steps, timed fits of n and 2n steps;
  n x batch / (t_2n - t_n), which cancels each fit's fixed start-up costs.

    python benchmarks/overhead.py [--rounds 3] [--samples 51200] [--model cnn]
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
    from engine import devices

    setup = devices.configure(cfg.device_type, cfg.devices)
    from engine.train import prepare

    prep = prepare(cfg, setup)  # the engine's own data, model and compile settings
    model, ds = prep.model, prep.train_ds
    spe = cfg.steps_per_execution
    model.fit(ds.take(4 * spe), epochs=1, verbose=0)  # warm-up: trace, compile

    def timed(n):
        t0 = time.perf_counter()
        model.fit(ds.take(n), epochs=1, verbose=0, shuffle=False)
        return time.perf_counter() - t0

    # Differencing two fits of n and 2n steps cancels each fit's fixed costs (iterator
    # creation, shuffle-buffer fill), which the engine's warm-up execution also absorbs.
    n = (cfg.steps_per_epoch() // 2) // spe * spe
    t_n, t_2n = timed(n), timed(2 * n)
    print(json.dumps({"samples_per_sec": n * cfg.batch_size / (t_2n - t_n)}))


def engine_rate(cfg, store_path) -> float:
    from engine import runner

    (rid,) = runner.submit([cfg], store_path=store_path)
    run = runner.wait(rid, store_path=store_path, timeout_s=600)
    if run["status"] != "completed":
        raise SystemExit(f"engine run failed: {run['error']}")
    return run["summary"]["samples_per_sec_mean"]


def bare_rate(cfg) -> float:
    from engine.runner import worker_env

    out = subprocess.run([sys.executable, __file__, "--bare-child", cfg.to_json()],
                         capture_output=True, text=True, env=worker_env(), timeout=600)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])["samples_per_sec"]


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--samples", type=int, default=51200)
    p.add_argument("--model", default="cnn")
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--steps-per-execution", type=int, default=1)
    p.add_argument("--bare-child", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.bare_child:
        bare_child(a.bare_child)
        return
    from engine.config import RunConfig
    from engine.machine import cpu_model

    cfg = RunConfig(dataset="synthetic", synthetic_shape=(8, 8, 1), synthetic_samples=a.samples,
                    model=a.model, batch_size=a.batch_size, epochs=1,
                    steps_per_execution=a.steps_per_execution, validation_fraction=0.01)
    store_path = Path(tempfile.mkdtemp(prefix="speedlab-bench-")) / "runs.sqlite"
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores")
    print(f"config: {cfg.model} on synthetic 8x8x1, {cfg.steps_per_epoch()} steps of batch "
          f"{cfg.batch_size}, steps_per_execution {cfg.steps_per_execution}")
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
