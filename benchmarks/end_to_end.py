"""Where does a run's time go? Training's share of the wall time of training, per option.

For the baseline (float32, 1 device, batch 128), each speed option alone, and
their combination (mixed bfloat16 + 2 simulated devices + batch 256 + one_cycle
+ label smoothing 0.1 + mixup 0.2), on digits with 10 epochs, runs each
configuration REPEATS times through the real CLI path (a fresh worker per run)
and prints, median of the repeats,

    train share = train_sec / (train_sec + validation_sec + other_sec)

(warm-up and setup left out: they are one-off), with the seconds of each part,
the end-to-end and steady samples/s. Goal (issue "the headline tells the
truth"): train share >= 0.85 for every line, on a 2-core machine with nothing
else running. Nothing here is a timed test; the figures go to the README.

    python benchmarks/end_to_end.py [--repeats 3] [--epochs 10] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMBO = ["--precision", "mixed_bfloat16", "--devices", "2", "--batch-size", "256", "--schedule", "one_cycle",
         "--label-smoothing", "0.1", "--mixup-alpha", "0.2"]
CONFIGS = {
    "baseline": [],
    "mixed_bfloat16": ["--precision", "mixed_bfloat16"],
    "2 devices (simulated)": ["--devices", "2"],
    "batch 256": ["--batch-size", "256"],
    "one_cycle": ["--schedule", "one_cycle"],
    "label smoothing 0.1": ["--label-smoothing", "0.1"],
    "mixup 0.2": ["--mixup-alpha", "0.2"],
    "combination": COMBO,
}
PARTS = ("setup", "warmup", "train", "validation", "other")


def run(flags: list[str], epochs: int, home: str) -> dict:
    env = {**os.environ, "SPEEDLAB_HOME": home}
    out = subprocess.run([sys.executable, "-m", "engine", "run", "--json", "--quiet", "--epochs", str(epochs),
                          *flags], capture_output=True, text=True, cwd=ROOT, env=env, timeout=900)
    res = json.loads(out.stdout.strip().splitlines()[-1])
    if res["status"] != "completed":
        raise SystemExit(f"{flags}: run {res['status']}: {res['error']}")
    return res


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--only", nargs="*", choices=list(CONFIGS), help="measure only these lines")
    a = p.parse_args()
    sys.path.insert(0, str(ROOT))
    from engine.hardware.machine import cpu_model

    home = tempfile.mkdtemp(prefix="speedlab-e2e-")
    names = a.only or list(CONFIGS)
    print(f"machine: {cpu_model()}, {os.cpu_count()} logical cores; digits, cnn, {a.epochs} epochs, "
          f"median of {a.repeats}")
    head = f"{'configuration':<24}{'train share':>12}" + "".join(f"{k + ' s':>14}" for k in PARTS) + \
        f"{'e2e samples/s':>15}{'steady':>10}"
    print(head)
    worst = 1.0
    for name in names:
        res = [run(CONFIGS[name], a.epochs, home) for _ in range(a.repeats)]
        share = statistics.median(r["train_sec"] / (r["train_sec"] + r["validation_sec"] + r["other_sec"])
                                  for r in res)
        worst = min(worst, share)
        med = {k: statistics.median(r[f"{k}_sec"] for r in res) for k in PARTS}
        e2e = statistics.median(r["end_to_end_samples_per_sec"] for r in res)
        steady = statistics.median(r["samples_per_sec"] for r in res)
        print(f"{name:<24}{share:>12.2f}" + "".join(f"{med[k]:>14.2f}" for k in PARTS) +
              f"{e2e:>15,.0f}{steady:>10,.0f}", flush=True)
    print(f"lowest train share: {worst:.2f}; goal >= 0.85: {'met' if worst >= 0.85 else 'NOT met'}")


if __name__ == "__main__":
    main()
