"""XLA's own FLOP count of one real training step of each model SpeedLab builds, for
tests/test_flops.py: counted live in a JAX process (`count`, tens of seconds per backbone) or
read from XLA_FLOPS_FILE, recorded by

    python -m tests.helpers.xla_flops        # rewrites tests/helpers/xla_flops.json

with the JAX, jaxlib and Keras versions it was recorded under. A test uses the stored counts
only while those versions are the installed ones (`stored`); otherwise it counts live again.

Each case is [model, input shape, image size (0: the input's), frozen (None: no backbone;
True/False: its backbone frozen or fine-tuned), compiled (True: XLA's count after its CPU
passes; False: before them, `lower(...).cost_analysis()`)].
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from importlib import metadata
from pathlib import Path
from typing import Optional

XLA_FLOPS_FILE = Path(__file__).with_name("xla_flops.json")

# The built models on digits, mnist5k and 32x32x3; the keras.applications backbones at 32x32 behind
# the digits input, frozen and fine-tuned (why some are held before XLA's CPU passes: test_flops.py).
BUILT = [[name, shape, 0, None, True] for shape in ([8, 8, 1], [28, 28, 1], [32, 32, 3])
         for name in ("mlp", "cnn", "resnet")]
BACKBONES = ([[name, [8, 8, 1], 32, True, True] for name in ("mobilenetv2", "efficientnetb0")]
             + [["resnet50", [8, 8, 1], 32, False, True]]
             + [[name, [8, 8, 1], 32, False, False] for name in ("mobilenetv2", "efficientnetb0")])

# XLA's CPU code generation without LLVM's optimisations, for a test process whose compiles check
# what XLA builds (FLOP counts, dtypes, losses), not how fast its code runs. The FLOP counts are
# the HLO's, the same either way (equal for cnn, resnet and mobilenetv2, 2026-12-06); the compiles
# take about half the CPU (26.8 -> 14.3 CPU-s for those three and JAX's import).
FAST_COMPILE = {"XLA_FLAGS": "--xla_backend_optimization_level=0"}

# Keras on JAX needs a process of its own (the backend is fixed at import). Each case is one real
# training step of the model as SpeedLab builds it: the loss's value and its gradient with respect
# to the trainable weights, in training mode (dropout, batch statistics), compiled by XLA for the CPU.
SCRIPT = textwrap.dedent("""
    import json, sys
    import jax, jax.numpy as jnp
    from engine.training import flops, models, transfer
    B = 16
    for case in json.loads(sys.argv[1]):
        name, shape, size, frozen, compiled = case
        m = models.build(name, tuple(shape), 10, image_size=size)
        if frozen is not None:
            transfer.set_frozen(transfer.taken_part(m), frozen)
        tv = [v.value for v in m.trainable_variables]
        ntv = [v.value for v in m.non_trainable_variables]
        x = jnp.full((B, *shape), 0.5, jnp.float32)
        y = jax.nn.one_hot(jnp.zeros((B,), jnp.int32), 10)

        def loss(tv, ntv, x, y):
            p, _ = m.stateless_call(tv, ntv, x, training=True)
            return -jnp.mean(jnp.sum(y * jnp.log(p + 1e-7), -1))

        lowered = jax.jit(jax.value_and_grad(loss)).lower(tv, ntv, x, y)
        cost = lowered.compile().cost_analysis() if compiled else lowered.cost_analysis()
        cost = cost[0] if isinstance(cost, (list, tuple)) else cost  # a list of dicts before JAX 0.4.30
        c = flops.count(m)
        print(json.dumps({"case": case, "ours": c["flops_per_sample"], "xla": float(cost["flops"]) / B}),
              flush=True)
""")


def versions() -> dict:
    """The installed versions the counts depend on: {'jax', 'jaxlib', 'keras'}."""
    return {name: metadata.version(name) for name in ("jax", "jaxlib", "keras")}


def count(cases: list) -> list[dict]:
    """XLA's count, live: [{'case', 'ours' (engine.training.flops on JAX), 'xla'}] (FLOPs per
    sample), one per case, in a JAX process. Raises AssertionError with its stderr if it fails."""
    from engine.base.process import worker_env

    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(cases)], capture_output=True, text=True,
                          timeout=900, env={**worker_env(), "KERAS_BACKEND": "jax", **FAST_COMPILE})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def stored() -> Optional[dict]:
    """{json.dumps(case): XLA's count} from XLA_FLOPS_FILE, or None when it was recorded under
    other versions than the installed ones (or is missing)."""
    try:
        data = json.loads(XLA_FLOPS_FILE.read_text())
    except (OSError, ValueError):
        return None
    if data.get("versions") != versions():
        return None
    return {json.dumps(r["case"]): r["xla"] for r in data["rows"]}


def main() -> None:
    rows = count(BUILT + BACKBONES)
    XLA_FLOPS_FILE.write_text(json.dumps({"versions": versions(), "rows": rows}, indent=1) + "\n")
    print(f"{len(rows)} cases written to {XLA_FLOPS_FILE}")


if __name__ == "__main__":
    main()
