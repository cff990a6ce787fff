"""GPU check: the hardware probe plus a short precision x XLA (x backend) benchmark.

Run on a machine with an NVIDIA GPU (about 2-4 minutes):

    python benchmarks/gpu_check.py [--repeats 2]                  # TensorFlow: precision x XLA
    python benchmarks/gpu_check.py --backend jax [--repeats 1]    # JAX only: no TensorFlow needed
    python benchmarks/gpu_check.py --backend both                 # both, against TensorFlow's baseline

Prints the probe (GPU model, compute capability, the installed backends and their
devices, verdicts) and a table of steady samples/s and speedups on the ResNet-style
model with synthetic 32x32x3 data (global batch 512 by default, the reference workload
of the README's GPU table), each against the float32 baseline measured in the same
invocation (engine.bench.quick): TensorFlow's float32 without XLA, or JAX's float32
with --backend jax. Also writes the result as JSON to --out.

On a machine without a GPU it stops after the probe, unless --allow-cpu (a dry run of
the same code path; use a small workload, e.g. --model cnn --shape 8,8,1 --batch-size 128
--steps 20).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

PRECISIONS = ("float32", "mixed_bfloat16", "mixed_float16")


def cells_for(backend: str) -> list[dict]:
    """The benchmark cells: float32 first (the baseline). TensorFlow: precision x XLA;
    JAX (always XLA): precision x steps per execution 1 and 8."""
    out = []
    if backend in ("tensorflow", "both"):
        out += [{"backend": "tensorflow", "precision": p, "steps_per_execution": 1, "jit_compile": x,
                 "devices": 1, "simulated": False} for p in PRECISIONS for x in (False, True)]
    if backend in ("jax", "both"):
        out += [{"backend": "jax", "precision": p, "steps_per_execution": s, "jit_compile": True,
                 "devices": 1, "simulated": False} for p in PRECISIONS for s in (1, 8)]
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--backend", choices=("tensorflow", "jax", "both"), default="tensorflow")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--model", default="resnet")
    p.add_argument("--shape", default="32,32,3", help="synthetic image shape H,W,C")
    p.add_argument("--batch-size", type=int, default=512)
    p.add_argument("--steps", type=int, default=60, help="steps per epoch (2 epochs per cell)")
    p.add_argument("--allow-cpu", action="store_true", help="measure even without a GPU (dry run)")
    p.add_argument("--out", default="gpu_check.json")
    a = p.parse_args()
    from engine.cli.bench import format_table
    from engine.cli.hardware import format_table as hardware_table
    from engine.hardware import verdicts as hardware
    from engine.bench import quick as bench

    probe = hardware.probe(refresh=True)
    print(hardware_table(probe))
    facts = probe["facts"]
    jax = (facts.get("backends") or {}).get("jax") or {}
    if a.backend == "jax":
        on_gpu = jax.get("platform") == "gpu"
        why = "JAX is not installed" if not jax.get("version") else "JAX sees no GPU (CPU-only jaxlib?)"
    else:
        on_gpu = bool(facts.get("gpus"))
        why = probe.get("diagnosis") or "TensorFlow sees no GPU here"
    if not on_gpu and not a.allow_cpu:
        print(f"\n{why}: nothing to benchmark on a GPU (--allow-cpu measures on the CPU).", file=sys.stderr)
        return 1
    work = {"model": a.model, "synthetic_shape": [int(v) for v in a.shape.split(",")],
            "batch_size": a.batch_size, "steps": a.steps, "epochs": 2}
    result = bench.run(repeats=a.repeats, cells=cells_for(a.backend), workload=work,
                       on_progress=lambda d, t, s: print(f"  measured {d}/{t}", file=sys.stderr, flush=True))
    print()
    print(format_table(result))
    print(f"device: {'GPU' if on_gpu else 'CPU (dry run, no GPU)'}")
    from engine.hardware.fingerprint import fingerprint, record_line

    print(record_line())  # the machine these figures belong to (docs/machines.md)
    Path(a.out).write_text(json.dumps({"probe": probe, "bench": result, "fingerprint": fingerprint()}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
