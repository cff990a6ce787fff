"""A fake side of `python -m engine pairs` for tests: follows the issue-44 env contract
(SPEEDLAB_HOME, SPEEDLAB_SEED, SPEEDLAB_GROUP, SPEEDLAB_ROLE, SPEEDLAB_RUN_FILE) and
stores a finished run through the store API, as SpeedLabCallback would, without TF.

    python -m tests.helpers.command_side --sec T1,T2,... [--fail MSG [--last-line L]] [--no-run] [--sleep S] [--home DIR]
        [--hang-seed N --pids FILE]

--home DIR: the side sets its own SPEEDLAB_HOME (another store) and records its run there.
--hang-seed N: on seed N the side records its run as running, writes the run file, starts a
child (`sleep`, in its process group) and then sleeps, as a script that trains on; --pids FILE
gets "<its pid> <the child's pid>" once both run (a test then signals `engine pairs`).

T = the list's item SPEEDLAB_SEED (modulo its length). The run reaches its target (0.8) at exactly T s (epoch 2 of 2, t = T; epoch 1 at
T/2 with 0.5) and trains 10 executions of 32 samples, each T/10 s long, so its
steady rate is 320 / T samples/s. The seed it got is stored as config 'seed'.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

from engine.config import RunConfig
from engine.report.measure import steady_state
from engine.store import Store


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sec", default="1.0", help="seconds per seed, comma-separated")
    p.add_argument("--fail", help="print this to stderr and exit 3 after storing the run")
    p.add_argument("--fail-seed", type=int, help="--fail on this seed only")
    p.add_argument("--last-line", help="with --fail: stderr's last line (as TensorFlow's '[[IteratorGetNext]]')")
    p.add_argument("--no-run", action="store_true", help="exit 0 without recording a run")
    p.add_argument("--sleep", type=float, default=0.0, help="wait this many s first (a side still running)")
    p.add_argument("--fail-chars", type=int, help="--fail with a message of this many 'x' on one line")
    p.add_argument("--home", help="record the run in this store folder instead of $SPEEDLAB_HOME")
    p.add_argument("--hang-seed", type=int, help="on this seed: record a running run, then train on for ever")
    p.add_argument("--pids", help="with --hang-seed: write '<pid> <child pid>' here once hanging")
    a = p.parse_args()
    time.sleep(a.sleep)
    if a.fail_chars:
        a.fail = "x" * a.fail_chars
    if a.no_run:
        print("trained without the callback", file=sys.stderr)
        return 0
    seed = int(os.environ.get("SPEEDLAB_SEED", "0"))
    secs = [float(x) for x in a.sec.split(",")]
    sec = secs[seed % len(secs)]
    cfg = RunConfig(epochs=2, batch_size=32, target_accuracy=0.8, seed=seed)
    store = Store(os.path.join(a.home or os.environ["SPEEDLAB_HOME"], "runs.sqlite"))
    rid = store.create_run(cfg.to_json(), role=os.environ.get("SPEEDLAB_ROLE", "run"),
                           group_id=os.environ.get("SPEEDLAB_GROUP"), status="running")
    path = os.environ.get("SPEEDLAB_RUN_FILE")
    if path:
        with open(path + ".tmp", "w") as f:
            json.dump({"run_id": rid, "store": os.path.realpath(store.path)}, f)
        os.replace(path + ".tmp", path)
    if a.hang_seed == seed:
        import subprocess

        child = subprocess.Popen(["sleep", "600"])  # in this side's process group
        with open(a.pids + ".tmp", "w") as f:
            f.write(f"{os.getpid()} {child.pid}")
        os.replace(a.pids + ".tmp", a.pids)
        time.sleep(600)
        return 0
    n, bs, d = 10, 32, sec / 10
    store.update_run(rid, started=store.get_run(rid)["created"],
                     plan={"steps_per_epoch": 5, "total_steps": n, "epochs": 2, "replicas": 1, "n_train": 5 * bs,
                           "per_replica_batch_size": bs, "device_kind": "CPU"},
                     environment={"hostname": os.uname().nodename})
    rows = [(i, i // 5, i + 1, 1, d * (i + 1), d, bs / d, 1.0, 1e-3, 0, None) for i in range(n)]
    ep = [(0, sec / 2, 5, 1.0, 0.5, 1.0, 0.5, 1e-3), (1, sec, 10, 0.5, 0.9, 0.5, 0.9, 1e-3)]
    store.add_metrics(rid, rows, ep)
    summary = {**steady_state([d] * n, [1] * n, bs, warmup_executions=0), "wall_sec": sec, "replicas": 1,
               "final_val_accuracy": 0.9, "time_to_target_sec": sec, "warnings": []}
    if a.fail and a.fail_seed in (None, seed):
        store.finish_run(rid, "failed", a.fail, summary=summary)
        print("Traceback (most recent call last):\n  ...", file=sys.stderr)
        print(a.fail, file=sys.stderr)
        if a.last_line:
            print(a.last_line, file=sys.stderr)
        return 3
    store.finish_run(rid, "completed", None, summary=summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
