"""Does the matmul peak probe keep its time budget? (engine.hardware.matmul_peak)

Runs `matmul_peak.measure` REPEATS times on this machine's CPU and prints, per run, the
seconds it took against its budget (BUDGET_S) and the float32 peak it found, then the
worst ratio. The hardware check calls it once; a probe far over budget makes the
one-minute check late. A speed goal, so measured here, not asserted in a test.

    python benchmarks/matmul_peak_budget.py [--repeats 3]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    import tensorflow as tf

    from engine.hardware import matmul_peak

    tf.config.list_physical_devices()  # the hardware check has listed devices before it probes

    print(f"load average before: {open('/proc/loadavg').read().split()[:3]}; budget {matmul_peak.BUDGET_S:g} s")
    ratios = []
    for i in range(a.repeats):
        out = matmul_peak.measure()
        f32 = out["dtypes"].get("float32", {})
        ratios.append(out["seconds"] / matmul_peak.BUDGET_S)
        print(f"run {i + 1}: {out['seconds']:.2f} s ({ratios[-1]:.2f}x the budget), float32 peak "
              f"{f32.get('flops_per_sec', 0) / 1e9:.1f} GFLOP/s", flush=True)
    print(f"worst: {max(ratios):.2f}x the budget")


if __name__ == "__main__":
    main()
