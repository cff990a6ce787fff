"""Distributed input start-up with simulated CPU replicas: Keras's path against SpeedLab's.

In one process with 2 logical CPU devices (MirroredStrategy), alternating ROUNDS
times (ABBA), times making an iterator and pulling its first batch for
- keras: `strategy.experimental_distribute_dataset(pipeline)` (a MultiDeviceIterator),
- per-replica: engine.training.replica_input.per_replica (one host pipeline per replica),
for the training pipeline (digits-sized random data, global batch 256, mixup 0.2,
data-wait meter, endless) and the validation pipeline (360 examples). Prints the
medians with min-max. Keras builds these iterators once per run at the start of
`fit` and of the first validation, so this is wall time of every such run.

    python benchmarks/replica_input.py [--rounds 10]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # dropped MultiDeviceIterators log their cancellation


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=10)
    a = p.parse_args()
    from engine.training import devices

    setup = devices.configure("cpu", 2)
    import numpy as np

    from engine.data import pipeline
    from engine.hardware.machine import cpu_model
    from engine.training import replica_input

    rng = np.random.default_rng(0)
    x = rng.random((1437, 8, 8, 1), dtype=np.float32)
    y = (np.arange(1437) % 10).astype(np.int32)
    xv, yv = x[:360], y[:360]
    meter = pipeline.DataWaitMeter()
    st = setup.strategy

    def train(shard=None, metered=True):
        return pipeline.train_dataset(x, y, 10, 256, 2, 0, 0.2, repeat=True, meter=meter if metered else None,
                                      shard=shard)

    def val(shard=None):
        return pipeline.eval_dataset(xv, yv, 10, 256, 2, repeat=True, shard=shard)

    makers = {
        "training, keras": lambda: st.experimental_distribute_dataset(train()),
        "training, per-replica": lambda: replica_input.per_replica(st, lambda i, n: train((i, n), i == 0))[0],
        "validation, keras": lambda: st.experimental_distribute_dataset(val()),
        "validation, per-replica": lambda: replica_input.per_replica(st, lambda i, n: val((i, n)))[0],
    }
    times = {k: [] for k in makers}
    for r in range(a.rounds):
        order = list(makers) if r % 2 == 0 else list(reversed(makers))
        for k in order:
            ds = makers[k]()
            t0 = time.perf_counter()
            next(iter(ds))
            times[k].append(time.perf_counter() - t0)
    print(f"machine: {cpu_model()}; 2 simulated CPU replicas; {a.rounds} rounds; iterator + first batch")
    for k, v in times.items():
        print(f"{k:<26} median {statistics.median(v) * 1000:6.0f} ms (min {min(v) * 1000:.0f}, max {max(v) * 1000:.0f})")


if __name__ == "__main__":
    main()
