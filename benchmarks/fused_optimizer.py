"""What does the fused optimizer update buy? Keras's update vs one TF kernel per variable.

For each optimizer (Adam, SGD with momentum), runs the same configuration with and
without `--fused-optimizer` alternately, REPEATS rounds, each through the real CLI
path (a fresh worker per run; digits, cnn, batch 128, 10 epochs, seed = round).
Prints per run the train step's warm-up (its first execution: tracing, graph
optimisation, first run), steady and end-to-end samples/s; then, over the rounds,
the median of the per-round ratios fused / Keras with min-max. Nothing here is a
timed test; the figures go to the README.

    python benchmarks/fused_optimizer.py [--repeats 5] [--epochs 10] [--optimizers adam sgd]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from end_to_end import run  # noqa: E402  one CLI run in a fresh worker, its --json summary
from engine.report.headline import ratio_text  # noqa: E402


def train_step_warmup(summary: dict) -> float:
    """Seconds of the first training execution (the span 'training step traced')."""
    return sum(e - s for kind, s, e, _, note in summary["timeline"]
               if kind == "warmup" and note == "training step traced")


def ratio(xs: list, ys: list) -> str:
    r = sorted(y / x for x, y in zip(xs, ys))
    return f"{ratio_text(statistics.median(r))} (min {ratio_text(r[0])}, max {ratio_text(r[-1])}, {len(r)} pairs)"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--optimizers", nargs="*", default=["adam", "sgd"], choices=["adam", "sgd"])
    a = p.parse_args()
    home = tempfile.mkdtemp(prefix="speedlab-fused-")
    load0 = os.getloadavg()
    for opt in a.optimizers:
        lr = "0.001" if opt == "adam" else "0.05"
        res = {"keras": [], "fused": []}
        for i in range(a.repeats):
            for name, extra in (("keras", []), ("fused", ["--fused-optimizer"])):
                s = run(["--optimizer", opt, "--learning-rate", lr, "--seed", str(i), *extra], a.epochs, home)
                res[name].append(s)
                print(f"{opt} round {i + 1} {name:>5}: train-step warm-up {train_step_warmup(s):.2f} s, "
                      f"steady {s['samples_per_sec']:,.0f} samples/s, end-to-end "
                      f"{s['end_to_end_samples_per_sec']:,.0f} samples/s, val acc {s['final_val_accuracy']:.3f}",
                      flush=True)
        k, f = res["keras"], res["fused"]
        print(f"{opt}: steady samples/s fused / keras: "
              f"{ratio([s['samples_per_sec'] for s in k], [s['samples_per_sec'] for s in f])}")
        print(f"{opt}: end-to-end samples/s fused / keras: "
              f"{ratio([s['end_to_end_samples_per_sec'] for s in k], [s['end_to_end_samples_per_sec'] for s in f])}")
        print(f"{opt}: train-step warm-up keras / fused: "
              f"{ratio([train_step_warmup(s) for s in f], [train_step_warmup(s) for s in k])}"
              f" (medians {statistics.median(map(train_step_warmup, k)):.2f} s and "
              f"{statistics.median(map(train_step_warmup, f)):.2f} s)")
    print(f"load average before {load0[0]:.1f}, after {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
