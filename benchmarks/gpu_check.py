"""GPU check: the hardware probe plus a short precision x XLA benchmark.

Run on a machine with an NVIDIA GPU (about 2-4 minutes):

    python benchmarks/gpu_check.py [--repeats 2]

Prints the probe (GPU model, compute capability, CUDA/cuDNN of the TF build,
verdicts) and a table of steady samples/s and speedups for float32,
mixed_float16 and mixed_bfloat16, XLA off and on, on the ResNet-style model
with synthetic 32x32x3 data, each against float32 without XLA measured in the
same invocation (engine.jobs.bench).  Also writes the result as JSON to --out.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--out", default="gpu_check.json")
    a = p.parse_args()
    from engine.jobs import bench
    from engine.hardware import verdicts as hardware
    from engine.cli.bench import format_table
    from engine.cli.hardware import format_table as hardware_table

    probe = hardware.probe(refresh=True)
    print(hardware_table(probe))
    gpus = probe["facts"].get("gpus") or []
    if not gpus:
        print("\nTensorFlow sees no GPU here: nothing to benchmark on a GPU.", file=sys.stderr)
        diag = probe.get("diagnosis")
        if diag:
            print(diag, file=sys.stderr)
        return 1
    cells = [{"precision": pr, "steps_per_execution": 1, "jit_compile": x, "devices": 1, "simulated": False}
             for pr in ("float32", "mixed_float16", "mixed_bfloat16") for x in (False, True)]
    work = {"model": "resnet", "synthetic_shape": [32, 32, 3], "batch_size": a.batch_size, "steps": a.steps,
            "epochs": 2}
    result = bench.run(repeats=a.repeats, cells=cells, workload=work,
                       on_progress=lambda d, t, s: print(f"  measured {d}/{t}", file=sys.stderr, flush=True))
    print()
    print(format_table(result))
    Path(a.out).write_text(json.dumps({"probe": probe, "bench": result}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
