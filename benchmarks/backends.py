"""TensorFlow vs JAX on this machine: the same configuration on both Keras backends.

Each run goes through the engine (a fresh worker process, the measuring callback, the
store), the backends alternating ROUNDS times, and the script prints per run the steady
samples/s (median per execution), the warm-up (first execution: tracing and compiling),
the wall time of the whole run, the final validation accuracy and the share of steady
step time spent waiting for input; then the median JAX/TensorFlow throughput ratio.

With --mixup ALPHA it also compares, on JAX, mixup inside the compiled step (what
SpeedLab does) against mixup in NumPy on the host (engine.data.np_pipeline's
mixup_alpha), with the same prefetch, by their data-wait share and throughput.

    python benchmarks/backends.py [--rounds 3] [--models mlp,cnn] [--epochs 5] [--mixup 0.2]
    python benchmarks/backends.py --skip-backends --models mlp --mixup 0.2 --no-prefetch
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def engine_run(cfg, home: str) -> dict:
    """Run `cfg` through the engine's CLI in a fresh worker; its summary."""
    from engine.base.process import worker_env

    flags = []
    for k, v in cfg.to_dict().items():
        if v == getattr(type(cfg)(), k) or isinstance(v, list):
            continue
        flags += [f"--{k.replace('_', '-')}", str(v)] if not isinstance(v, bool) else \
            [f"--{'' if v else 'no-'}{k.replace('_', '-')}"]
    out = subprocess.run([sys.executable, "-m", "engine", "run", *flags, "--json", "--quiet"], cwd=ROOT,
                         capture_output=True, text=True, env={**worker_env(), "SPEEDLAB_HOME": home}, timeout=1800)
    return json.loads(out.stdout.strip().splitlines()[-1])


HOST_MIXUP_CHILD = """
import json, sys
from engine.training import backends
backends.use("jax")
from engine.config import RunConfig
from engine.data import np_pipeline
from engine.report.measure import steady_state
from engine.training import jax_devices
from engine.training.recorder import Recorder
from engine.training.build import prepare
cfg = RunConfig.from_json(sys.argv[1])
setup = jax_devices.configure("auto", 1)
prep = prepare(cfg.replace(mixup_alpha=0.0), setup)   # no mixup in the step ...
from engine.data import datasets
data = datasets.load(cfg)
meter = np_pipeline.DataWaitMeter()
ds = np_pipeline.train_dataset(data.x_train, data.y_train, data.classes, cfg.batch_size, 1, cfg.seed,
                               cfg.mixup_alpha, meter=meter, prefetch=cfg.data_prefetch)  # ... on the host
rec = Recorder(cfg.batch_size, prep.steps_per_epoch, lambda t, r: None, data_wait_fn=meter.total,
               epoch_samples=prep.plan["n_train"])
from engine.training.jax_steps import ShapeWarmup   # as the engine: a short batch's recompile is warm-up
short = ShapeWarmup(rec, prep.steps_per_epoch, 1, prep.plan["n_train"] % cfg.batch_size != 0)
prep.model.fit(ds, epochs=cfg.epochs, verbose=0, callbacks=[rec, short])
st = steady_state(rec.durations, rec.batches, cfg.batch_size, warmup_flags=rec.warmups, samples=rec.samples)
waits = [w for w, warm in zip(rec.data_waits, rec.warmups) if not warm]
secs = sum(d for d, warm in zip(rec.durations, rec.warmups) if not warm)
print(json.dumps({"samples_per_sec": st["samples_per_sec"], "data_wait_share": sum(waits) / secs}))
"""


def host_mixup_run(cfg) -> dict:
    from engine.base.process import worker_env

    out = subprocess.run([sys.executable, "-c", HOST_MIXUP_CHILD, cfg.to_json()], cwd=ROOT, capture_output=True,
                         text=True, env=worker_env(), timeout=1800)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return json.loads(out.stdout.strip().splitlines()[-1])


def fmt(s: dict) -> str:
    return (f"{s['samples_per_sec']:>9,.0f} samples/s, warm-up {s['warmup_sec']:5.2f} s, wall {s['wall_sec']:5.1f} s, "
            f"val acc {s['final_val_accuracy']:.3f}, data wait {100 * (s['data_wait_share'] or 0):4.1f}%")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--models", default="mlp,cnn")
    p.add_argument("--dataset", default="digits")
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--mixup", type=float, default=0.0, help="also compare device vs host mixup on JAX")
    p.add_argument("--no-prefetch", action="store_true",
                   help="input pipeline without prefetch (every batch is prepared while the step waits)")
    p.add_argument("--skip-backends", action="store_true", help="only the mixup comparison")
    a = p.parse_args()
    from engine.config import RunConfig

    home = tempfile.mkdtemp(prefix="speedlab-backends-")
    for model in a.models.split(","):
        cfg = RunConfig(model=model, dataset=a.dataset, epochs=a.epochs, batch_size=a.batch_size,
                        data_prefetch=not a.no_prefetch)
        print(f"{model} on {a.dataset}, batch {a.batch_size}, {a.epochs} epochs, float32, 1 device"
              + (", no prefetch" if a.no_prefetch else "") + ":")
        ratios = []
        for r in range(0 if a.skip_backends else a.rounds):
            row = {}
            for backend in ("tensorflow", "jax"):
                s = engine_run(cfg.replace(backend=backend), home)
                row[backend] = s
                print(f"  round {r + 1}: {backend:<10} {fmt(s)}")
            ratios.append(row["jax"]["samples_per_sec"] / row["tensorflow"]["samples_per_sec"])
        if ratios:
            print(f"  median throughput ratio JAX/TensorFlow: {statistics.median(ratios):.2f} "
                  f"(min {min(ratios):.2f}, max {max(ratios):.2f})")
        if a.mixup > 0:
            mcfg = cfg.replace(backend="jax", mixup_alpha=a.mixup)
            for r in range(a.rounds):
                dev = engine_run(mcfg, home)
                host = host_mixup_run(mcfg)
                print(f"  round {r + 1}: JAX mixup {a.mixup} in the step: {dev['samples_per_sec']:>9,.0f} samples/s, "
                      f"data wait {100 * dev['data_wait_share']:4.1f}% | on the host: "
                      f"{host['samples_per_sec']:>9,.0f} samples/s, data wait {100 * host['data_wait_share']:4.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
