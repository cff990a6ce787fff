"""Does the hand-made preset help? Time to a validation accuracy, baseline vs preset, on digits.

Runs the baseline and the preset configuration through the engine, alternating
REPEATS times in one invocation (so drift on a shared machine hits both), and
prints the median time to the target validation accuracy (s since training
start, warm-up included: that is what a user waits), the spread, the steady
throughput, and the ratio.

    python benchmarks/time_to_accuracy.py [--repeats 5] [--target 0.97]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from engine.config import RunConfig  # noqa: E402
from engine.config.presets import PRESETS  # noqa: E402
from engine.report.headline import ratio_text  # noqa: E402

# The baseline gets a generous epoch budget; the preset run's one-cycle schedule spans its 10 epochs.
BASELINE = dict(model="cnn", batch_size=128, epochs=20, learning_rate=1e-3)
PRESET = dict(PRESETS["digits"])  # the hand-made preset (engine.config.presets)


def measure(cfg: RunConfig, store_path) -> dict:
    from engine.jobs import runner

    (rid,) = runner.submit([cfg], store_path=store_path)
    run = runner.wait(rid, store_path=store_path, timeout_s=900)
    if run["status"] != "completed":
        raise SystemExit(f"run failed: {run['error']}")
    return run["summary"]


def _fmt(xs):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "never reached"
    return f"median {statistics.median(xs):.2f} s (min {min(xs):.2f}, max {max(xs):.2f}, n={len(xs)})"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--target", type=float, default=0.97)
    a = p.parse_args()
    from engine.hardware.machine import cpu_model

    base = RunConfig(**BASELINE, target_accuracy=a.target)
    preset = RunConfig(**PRESET, target_accuracy=a.target)
    store = Path(tempfile.mkdtemp(prefix="speedlab-tta-")) / "runs.sqlite"
    res = {"baseline": [], "preset": []}
    for i in range(a.repeats):
        for name, cfg in (("baseline", base), ("preset", preset)):
            s = measure(cfg.replace(seed=i), store)
            res[name].append(s)
            print(f"repeat {i + 1} {name:>8}: time to {a.target} = {s['time_to_target_sec']} s, "
                  f"steady {s['samples_per_sec']:,.0f} samples/s, final val acc {s['final_val_accuracy']:.4f}",
                  flush=True)
    print(f"machine: {cpu_model()}")
    print(f"baseline: {BASELINE}")
    print(f"preset:   {PRESET}")
    for name in res:
        tt = [s["time_to_target_sec"] for s in res[name]]
        sps = statistics.median(s["samples_per_sec"] for s in res[name])
        print(f"{name:>8}: time to {a.target}: {_fmt(tt)}; steady {sps:,.0f} samples/s")
    tb = [s["time_to_target_sec"] for s in res["baseline"] if s["time_to_target_sec"]]
    tt = [s["time_to_target_sec"] for s in res["preset"] if s["time_to_target_sec"]]
    if tb and tt:
        print(f"time-to-accuracy speedup (median/median): {ratio_text(statistics.median(tb) / statistics.median(tt))}")


if __name__ == "__main__":
    main()
