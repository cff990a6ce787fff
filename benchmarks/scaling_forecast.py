"""What-if scaling forecast against measured runs: 1, 2 and 4 simulated CPU replicas.

Runs the same configuration (digits cnn, global batch 256, 4 epochs) on 1, 2 and 4
simulated replicas, ROUNDS times interleaved (1, 2, 4, 1, 2, 4, ...), each in its own
worker, and prints the forecast (engine.report.forecast: Amdahl's law plus a ring
all-reduce whose cost c2 is derived from the 2-replica run of the same round) next to
the measured steady speedup. The 2-replica forecast matches by construction (c2 comes
from it); the 4-replica one is the prediction. Both the forecast for simulated devices
(they share one CPU's cores) and the what-if for physical devices are printed.

    SPEEDLAB_HOME=/tmp/forecast python benchmarks/scaling_forecast.py [--rounds 2]
"""
from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=2)
    p.add_argument("--epochs", type=int, default=4)
    a = p.parse_args()
    from engine.config import RunConfig
    from engine.jobs import runner
    from engine.report import forecast as fc
    from engine.report.headline import ratio_text

    rows = {2: [], 4: []}
    for r in range(a.rounds):
        runs = {}
        for n in (1, 2, 4):
            cfg = RunConfig(dataset="digits", model="cnn", batch_size=256, epochs=a.epochs, devices=n,
                            device_type="cpu", seed=r)
            (rid,) = runner.submit([cfg])
            runs[n] = runner.wait(rid)
            assert runs[n]["status"] == "completed", runs[n].get("error")
        f = fc.forecast(runs[1], [runs[2]], ns=(1, 2, 4))
        t1 = f["t1"]
        for n in (2, 4):
            measured = t1 / (runs[n]["summary"]["global_batch_size"] / runs[n]["summary"]["samples_per_sec"])
            rows[n].append((dict(f["simulated"])[n], measured, dict(f["physical"])[n], f["c2"]))
        print(f"round {r + 1}: t1 {t1 * 1e3:.2f} ms/step, data wait {100 * f['serial_share']:.1f}%, "
              f"c2 {f['c2'] * 1e3:.2f} ms (runs #{runs[1]['id']}, #{runs[2]['id']}, #{runs[4]['id']})")
    print(f"\n{'replicas':>8} {'forecast (simulated)':>21} {'measured (simulated)':>21} {'ratio':>6} "
          f"{'what-if (physical)':>19}")
    for n, got in rows.items():
        fs, ms, ph = (statistics.median(v[i] for v in got) for i in range(3))
        note = "  (c2 derived from it)" if n == 2 else ""
        print(f"{n:>8} {ratio_text(fs, digits=3):>21} {ratio_text(ms, digits=3):>21} {fs / ms:>6.2f} "
              f"{ratio_text(ph):>19}{note}")
    with open("/proc/loadavg") as fh:
        print(f"\nload average: {fh.read().strip()}")


if __name__ == "__main__":
    main()
