"""Stored runs for the talk-mode browser tests, written as the worker writes
them (plan, environment, per-execution and per-epoch rows, system samples,
summary by engine.report.measure.steady_state), without training.

`seed_pair` is a baseline and a 2-GPU mixed-bfloat16 run recorded on a
machine called dgx-07 (a minute and 18 s of training); `seed_many` adds runs
of many kinds (devices, precisions, failed, cancelled, imported, no target) so
that the Runs page holds 20; `seed_comparison`, `seed_not_held_comparison` and
`seed_slower_comparison` are finished comparisons of pairs (the second's test accuracy not
held, the third's run 1.45-1.55x slower).
"""
from __future__ import annotations

import math
import time

from engine.config import RunConfig
from engine.report.measure import steady_state
from engine.store import SYSTEM_COLS, Store


def recorded(store: Store, cfg: RunConfig, role: str = "run", group: str = "g1", step_sec: float = 0.05,
             n_exec: int | None = None, host: str = "dgx-07", kind: str = "GPU", status: str = "completed",
             target_epoch: int | None = None, error: str | None = None, pid: int | None = None) -> int:
    """Store one run: one execution per step of `step_sec` s (the first a 2 s
    warm-up), validation accuracy rising 0.62, 0.72, ... per epoch (reaching
    cfg.target_accuracy at `target_epoch`, 0-based, when given). With status
    'running', `pid` is the live process that stands in for its worker (the
    dashboard then shows the run live; cancelling it signals that process)."""
    rid = store.create_run(cfg.to_json(), role=role, group_id=group, status="running")
    spe = cfg.steps_per_epoch()
    total = spe * cfg.epochs
    n = n_exec or total
    plan = {"steps_per_epoch": spe, "total_steps": total, "epochs": cfg.epochs, "replicas": cfg.devices,
            "replicas_simulated": False, "per_replica_batch_size": cfg.per_replica_batch_size,
            "device_kind": kind, "n_train": spe * cfg.batch_size, "dropped_samples_per_epoch": 0}
    env = {"hostname": host, "python": "3.11.2", "tensorflow": "2.21.0", "keras": "3.15.0",
           "device_kind": kind, "devices": [f"/device:{kind}:{i}" for i in range(cfg.devices)],
           "physical_devices": cfg.devices, "replicas_simulated": False, "cpu_model": "AMD EPYC 7B13",
           "logical_cores": 64}
    store.update_run(rid, plan=plan, environment=env, started=time.time())
    bs, t, rows, durs = cfg.batch_size, 0.0, [], []
    for i in range(n):
        d = 2.0 if i == 0 else step_sec * (1.0, 0.93, 1.07, 0.98, 1.02)[i % 5]
        t += d
        durs.append(d)
        rows.append((i, i // spe, i + 1, 1, t, d, bs / d, 2.3 * math.exp(-2.5 * i / total) + 0.05,
                     cfg.learning_rate, int(i == 0), 0.04 * d))
    epochs_done = n // spe
    accs = [min(0.62 + 0.1 * e, 0.985) for e in range(epochs_done)]
    if target_epoch is not None and cfg.target_accuracy and target_epoch < epochs_done:
        accs = [min(a, cfg.target_accuracy - 0.01) if e < target_epoch else max(a, cfg.target_accuracy)
                for e, a in enumerate(accs)]
    ep = [(e, rows[(e + 1) * spe - 1][4] + 0.3, (e + 1) * spe, 1.2 / (e + 1), accs[e] - 0.02, 1.0 / (e + 1),
           accs[e], cfg.learning_rate) for e in range(epochs_done)]
    sysrows = [tuple({"t": float(s), "cpu_percent": 180.0 + 10 * (s % 3), "rss_mb": 2400.0 + s,
                      "mem_percent": 8.0, "gpu_mem_mb": 30_000.0, "worker": 0}.get(c) for c in SYSTEM_COLS)
               for s in range(int(t) + 1)]
    store.add_metrics(rid, rows, ep, sysrows)
    hit = next((e[1] for e in ep if cfg.target_accuracy and e[6] >= cfg.target_accuracy), None)
    summary = {**steady_state(durs, [1] * n, bs), "wall_sec": (ep[-1][1] if ep else t),
               "replicas": cfg.devices, "replicas_simulated": False, "device_kind": kind,
               "precision": cfg.precision, "final_val_accuracy": accs[-1] if accs else None,
               "time_to_target_sec": hit, "warnings": [],
               "test_accuracy": round(accs[-1] - 0.01, 4) if accs else None, "test_samples": 180}
    if status == "running":
        import psutil

        store.update_run(rid, pid=pid, pid_started=psutil.Process(pid).create_time())
    else:
        store.finish_run(rid, status, error, summary=None if status == "failed" else summary)
    return rid


def seed_pair(store: Store, group: str = "talk") -> tuple[int, int]:
    """(baseline id, run id): digits CNN, batch 32, 8 epochs of 45 steps; the
    baseline at 0.16 s per step on 1 GPU (about 58 s), the run mixed bfloat16
    on 2 GPUs at 0.05 s per step (about 20 s), both to 0.95 validation accuracy."""
    common = dict(dataset="digits", model="cnn", batch_size=32, epochs=8, target_accuracy=0.95,
                  device_type="gpu")
    b = recorded(store, RunConfig(**common), "baseline", group, step_sec=0.16, target_epoch=5)
    r = recorded(store, RunConfig(**common, precision="mixed_bfloat16", devices=2), "run", group,
                 step_sec=0.05, target_epoch=4)
    store.update_run(r, baseline_id=b)
    return b, r


def seed_many(store: Store, n: int = 18) -> list[int]:
    """`n` more runs of many kinds, 40 executions each, in groups of their own."""
    kinds = [
        dict(precision="mixed_float16", devices=4), dict(precision="mixed_bfloat16", devices=8),
        dict(steps_per_execution=4), dict(jit_compile=True), dict(schedule="one_cycle", max_lr=0.005),
        dict(devices=2, batch_size=256), dict(precision="mixed_bfloat16", steps_per_execution=8, jit_compile=True),
        dict(label_smoothing=0.1), dict(mixup_alpha=0.2), dict(batch_size=512, scale_lr=True),
    ]
    ids = []
    for i in range(n):
        extra = kinds[i % len(kinds)]
        cfg = RunConfig(**{"dataset": "digits", "model": "cnn", "batch_size": 128, "epochs": 4,
                           "device_type": "gpu", "target_accuracy": 0.95 if i % 3 else None, **extra})
        status = "failed" if i % 7 == 3 else "cancelled" if i % 7 == 5 else "completed"
        rid = recorded(store, cfg, "baseline" if i % 5 == 0 else "run", f"m{i}", step_sec=0.02 + 0.01 * (i % 4),
                       n_exec=min(40, cfg.steps_per_epoch() * cfg.epochs), status=status,
                       error="out of memory: OOM when allocating tensor; use a smaller batch_size"
                       if status == "failed" else "cancelled by the user" if status == "cancelled" else None,
                       host="dgx-07" if i % 2 else "vm")
        if i % 4 == 1:  # brought in with a run bundle
            store.update_run(rid, origin={"key": f"dgx-07/{100 + i}/0.0", "host": "dgx-07", "run_id": 100 + i,
                                          "imported": time.time(), "bundle": "talk.zip"})
        ids.append(rid)
    return ids


def seed_comparison(store: Store, pairs: int = 3, group: str = "cmp-talk") -> int:
    """A finished comparison of `pairs` interleaved pairs (seed_pair's configurations,
    mixed bfloat16 on 2 GPUs against fp32 on 1, the run's step time 0.05-0.06 s against
    0.16 s), its result as the queue stores it (engine.report.comparison.evaluate); returns
    its id."""
    import os

    from engine.report.comparison import evaluate
    from engine.store import comparisons as cstore

    common = dict(dataset="digits", model="cnn", batch_size=32, epochs=8, target_accuracy=0.95,
                  device_type="gpu")
    plan = []
    for i in range(pairs):
        b = recorded(store, RunConfig(**common, seed=i), "baseline", group, step_sec=0.16, target_epoch=5)
        r = recorded(store, RunConfig(**common, seed=i, precision="mixed_bfloat16", devices=2), "run", group,
                     step_sec=0.05 + 0.005 * i, target_epoch=4)
        store.update_run(r, baseline_id=b)
        plan.append({"pair": i, "seed": i, "order": "AB" if i % 2 == 0 else "BA", "baseline_id": b, "run_id": r})
    cid = cstore.create(store, "ab", group, {"pairs": pairs, "max_pairs": pairs, "target_half_width": 0.1,
                                             "budget_s": None, "min_pairs": 3}, plan, os.uname().nodename)
    comp = cstore.get(store, cid)
    cstore.update(store, cid, status="completed", ended=time.time(), result=evaluate(store, comp),
                  ended_by="all planned pairs measured")
    return cid


def seed_not_held_comparison(store: Store) -> int:
    """seed_comparison's 3 pairs (3.17x faster) with the candidate's held-out test accuracy +3, −1
    and +1 points from its baseline's: +1.0 points, sd 2.0, t(0.975, 2) = 4.303, so −4.0 to +6.0
    points, "not held" (a caveat on every headline). Evaluated again as the queue does; returns
    its id."""
    from engine.report.comparison import evaluate
    from engine.store import comparisons as cstore

    cid = seed_comparison(store)
    for pair, shift in zip(cstore.get(store, cid)["plan"], (0.03, -0.01, 0.01)):
        baseline = store.get_run(pair["baseline_id"])["summary"]["test_accuracy"]
        summary = store.get_run(pair["run_id"])["summary"]
        store.update_run(pair["run_id"], summary={**summary, "test_accuracy": baseline + shift})
    cstore.update(store, cid, result=evaluate(store, cstore.get(store, cid)))
    return cid


def seed_slower_comparison(store: Store) -> int:
    """Three pairs (AB, BA, AB; seeds 0-2) in which the run takes 1.45-1.55x the
    baseline's time to 0.95: stored and evaluated as the queue process does. Returns its id."""
    from engine.jobs import comparison
    from engine.store import comparisons as cstore

    common = dict(dataset="digits", model="cnn", batch_size=32, epochs=6, target_accuracy=0.95)
    plan = []
    for i, (order, slow) in enumerate(zip(comparison.orders(3), (1.45, 1.5, 1.55))):
        ids = {}
        for side in order:
            cfg = RunConfig(**common, seed=i, **({"precision": "mixed_bfloat16"} if side == "B" else {}))
            ids[side] = recorded(store, cfg, "baseline" if side == "A" else "run", "cmp-seeded",
                                 step_sec=0.02 * (slow if side == "B" else 1.0), target_epoch=3, host="vm")
        store.update_run(ids["B"], baseline_id=ids["A"])
        plan.append({"pair": i, "seed": i, "order": order, "baseline_id": ids["A"], "run_id": ids["B"]})
    cid = cstore.create(store, "ab", "cmp-seeded", {"pairs": 3, "max_pairs": 3, "target_half_width": 0.1,
                                                     "budget_s": None, "min_pairs": 3}, plan, "vm")
    comparison.finish_if_done(store, cstore.get(store, cid))
    return cid
