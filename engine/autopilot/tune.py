"""Tuning the baseline's constant learning rate, so that a speedup is measured against a
tuned baseline as well as against Keras's defaults (airbench and the NanoGPT speedrun
report records against tuned baselines; MLPerf fixes the same hyperparameter rules for
every submission).

The sweep: the float32, single-device baseline (engine.config.baseline_config) of a data
set, model, global batch size and optimizer, at LR_FACTORS x the LR range test's
suggestion (Smith 2017, sec. 3.3; engine.lr_find.range_test), each trained to the target
accuracy and stopped there on SEEDS seeds, in interleaved order. The winner is the
learning rate with the shortest mean time to accuracy among those that reached the
target on every seed (a winner at the sweep's edge extends the sweep by a factor of 2 that
way, at most EDGE_STEPS times); it is stored per (data set, model, batch size, optimizer) in
engine.store.tuned_baselines. No TF in this process: every run is a queued run in its own worker.
"""
from __future__ import annotations

import math
import os
import uuid
from typing import Callable, Optional

from engine.config import RunConfig, baseline_config

# Five log-spaced learning rates around the suggestion: x1/4 ... x4 (factor 2 apart).
LR_FACTORS = (0.25, 0.5, 1.0, 2.0, 4.0)
SEEDS = (0, 1)
EDGE_STEPS = 2  # how far a sweep extends past its edge when the winner sits there
GROUP_PREFIX = "tune-"


class TuneError(RuntimeError):
    """No learning rate of the sweep reached the target on every seed (one line)."""


def sweep_lrs(center: float, factors=LR_FACTORS) -> list[float]:
    """The learning rates tried: `factors` x `center`, rounded to 3 significant digits."""
    return [float(f"{center * f:.3g}") for f in factors]


def choose(results: list[dict], seeds=SEEDS) -> Optional[dict]:
    """The winner of a sweep: among learning rates whose runs reached the target on every
    seed of `seeds`, the one with the shortest mean time to accuracy (s); None if none did.

    results: one per run: {'learning_rate', 'seed', 'time_to_accuracy_sec' (None: missed)}.
    Returns: {'learning_rate', 'mean_time_to_accuracy_sec', 'seeds_reached'} or None.
    """
    by_lr: dict[float, dict] = {}
    for r in results:
        by_lr.setdefault(r["learning_rate"], {})[r["seed"]] = r.get("time_to_accuracy_sec")
    best = None
    for lr, times in sorted(by_lr.items()):
        if any(times.get(s) is None for s in seeds):
            continue
        mean = sum(times[s] for s in seeds) / len(seeds)
        if best is None or mean < best["mean_time_to_accuracy_sec"]:
            best = {"learning_rate": lr, "mean_time_to_accuracy_sec": mean, "seeds_reached": list(seeds)}
    return best


def tune(cfg: RunConfig, center: Optional[float] = None, seeds=SEEDS, factors=LR_FACTORS,
         store_path: Optional[os.PathLike] = None, on_run: Optional[Callable[[dict], None]] = None,
         lr_find_steps: int = 100) -> dict:
    """Tune the constant learning rate of `cfg`'s baseline and store the winner.

    Args:
        cfg: any configuration; its baseline (float32, one device, constant LR, no
            smoothing or mixup) is what is tuned, trained up to cfg.epochs and stopped
            at the data set's (or cfg's) target accuracy.
        center: the sweep's centre LR; None: the LR range test's suggestion (falls back
            to cfg.learning_rate when the test suggests none).
        on_run: called with each run's result as it ends.
    Returns: {'learning_rate' (the winner), 'mean_time_to_accuracy_sec', 'seeds_reached',
        'center', 'center_from' ('lr range test' | 'given' | 'config'), 'learning_rates',
        'runs' (per run: 'run_id', 'learning_rate', 'seed', 'time_to_accuracy_sec',
        'status'), 'target_accuracy', 'tuned_id' (the engine.store.tuned_baselines row)}.
    Raises: TuneError when no learning rate reached the target on every seed (nothing
        stored); ConfigError when the data set has no target accuracy; as
        engine.jobs.runner.submit (ActiveRunError while a run is active).
    """
    from engine.store import tuned_baselines
    from engine.data.meta import target_for
    from engine.base.errors import ConfigError
    from engine.jobs import runner
    from engine.report.target import effective_target, time_to_accuracy
    from engine.store import Store

    target = target_for(cfg.target_accuracy, cfg.dataset)
    if target is None:
        raise ConfigError("target_accuracy", None, f"is not set and {cfg.dataset} has no default",
                          "give --target-accuracy, e.g. 0.9")
    base = baseline_config(cfg).replace(stop_at_target=True, target_accuracy=target)
    center_from = "given"
    if center is None:
        from engine.lr_find import range_test

        found = range_test.run(base.replace(seed=seeds[0]), steps=lr_find_steps).get("suggestion") or {}
        center, center_from = found.get("suggested"), "lr range test"
        if not center or not math.isfinite(center):
            center, center_from = cfg.learning_rate, "config"
    lrs = sweep_lrs(center, factors)
    group = GROUP_PREFIX + uuid.uuid4().hex[:8]
    runs: list[dict] = []

    def measure(rates: list[float]) -> None:
        plan = []
        for i, seed in enumerate(seeds):  # interleaved: drift in the machine's load hits every LR alike
            order = rates if i % 2 == 0 else list(reversed(rates))
            plan += [(lr, seed) for lr in order]
        configs = [base.replace(learning_rate=lr, seed=seed) for lr, seed in plan]
        ids = runner.submit(configs, ["baseline"] * len(configs), store_path, group_id=group)
        for (lr, seed), rid in zip(plan, ids):
            run = runner.wait(rid, store_path)
            store = Store(store_path)
            try:
                t = time_to_accuracy(store.metrics("epochs", rid), effective_target(run)) \
                    if run["status"] == "completed" else None
            finally:
                store.close()
            r = {"run_id": rid, "learning_rate": lr, "seed": seed, "time_to_accuracy_sec": t, "status": run["status"]}
            runs.append(r)
            if on_run:
                on_run(r)

    measure(lrs)
    best = choose(runs, seeds)
    # A winner at the edge of the sweep may not be the best rate: extend the sweep that way, one
    # factor of 2 at a time, at most EDGE_STEPS times.
    for _ in range(EDGE_STEPS):
        if best is None or best["learning_rate"] not in (lrs[0], lrs[-1]):
            break
        nxt = float(f"{(lrs[-1] * 2 if best['learning_rate'] == lrs[-1] else lrs[0] / 2):.3g}")
        lrs = sorted([*lrs, nxt])
        measure([nxt])
        best = choose(runs, seeds)
    out = {"center": center, "center_from": center_from, "learning_rates": lrs, "runs": runs,
           "target_accuracy": target, "seeds": list(seeds)}
    if best is None:
        raise TuneError(f"no learning rate of {', '.join(f'{x:g}' for x in lrs)} reached {target:g} on every seed "
                        f"in {cfg.epochs} epochs; give more --epochs or a lower --target-accuracy")
    out.update(best)
    store = Store(store_path)
    try:
        out["tuned_id"] = tuned_baselines.put(store, base, best["learning_rate"], target, out, os.uname().nodename)
    finally:
        store.close()
    return out
