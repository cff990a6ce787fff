"""Tuning the baseline: its peak learning rate, its schedule and its label smoothing, so that a
speedup is measured against a tuned baseline as well as against Keras's defaults (airbench and
the NanoGPT speedrun report records against tuned baselines; MLCommons AlgoPerf's baselines
train with a warmup and a decaying schedule, tuned, and so does this one).

The grid: the float32, single-device baseline (engine.config.baseline_config) of a data set,
model, global batch size and optimizer, within its epoch budget (cfg.epochs), at every
  - schedule of SCHEDULES: 'constant'; 'warmup_cosine', a linear warmup over WARMUP_FRACTION
    of the epochs (10%: a fixed share, so that it scales with the budget; one whole epoch would
    be a third of mnist5k's 3-epoch budget) and a cosine decay to 0 at the last epoch;
    'one_cycle' (Smith & Topin 2018), its peak at 30% of the epochs;
  - schedule length (the decaying schedules): the whole budget and a third of it
    (`schedule_lengths`; mnist5k's 15 epochs: 15 and 5). A cosine or one-cycle over the whole
    budget is barely past its peak when a stop-at-target run ends; the autopilot's routes
    decay over 5 epochs, and a baseline that may not would be handicapped;
  - peak learning rate of LR_FACTORS x the LR range test's suggestion (Smith 2017, sec. 3.3;
    engine.lr_find.range_test). "Peak" means the same for every schedule: the highest LR a step
    uses (constant: learning_rate; warmup_cosine: learning_rate, reached at the warmup's end;
    one_cycle: max_lr, set equal to learning_rate, which one_cycle reads only as the default
    peak's base: engine.config.lr_math);
  - label smoothing of LABEL_SMOOTHINGS;
each trained to the target accuracy and stopped there, on TUNING_SEEDS (engine.config.seeds:
reserved, so no comparison or autopilot measures on the seeds the baseline was chosen on).

Successive halving (Jamieson & Talwalkar 2016): round 1 runs every configuration on the first
tuning seed, in a fixed shuffled order (drift in the machine's load hits no schedule, rate or
smoothing more than another); the best tenth of those that reached the target (at least one)
go on to round 2, the other seeds, seed by seed, their order reversed every seed. With two
lengths: (1 + 2 x 2) schedule settings x 4 rates x 2 smoothings = 40 runs, then the best tenth,
4 x 3 = 12: 52 runs (mnist5k cnn on an idle 2-core Xeon: 13 min 21 s, replayed from the
recorded runs of a 64-run tune, which took 15 min 38 s with the best fifth and chose the same
configuration: docs/comparisons.md).

The choice (`choose`): among configurations run on every tuning seed that reached the target on
at least 3 of 4 (MIN_REACHED_SHARE; a failed or cancelled run is a miss), the one with the best
median time to accuracy, a miss counting as an infinite time (so a configuration that missed
once is ranked by the slower of its middle two). Stored per (data set, model, batch size,
optimizer) in engine.store.tuned_baselines with its reached count and spread. No TF in this
process: every run is a queued run in its own worker (group 'tune-<hex>').
"""
from __future__ import annotations

import math
import os
import random
import statistics
import time
import uuid
from typing import Callable, Optional

from engine.config import RunConfig, baseline_config
from engine.config.seeds import TUNING_SEEDS

SCHEDULES = ("constant", "warmup_cosine", "one_cycle")
LR_FACTORS = (0.5, 1.0, 2.0, 4.0)  # x the range test's suggestion; schedules with a warmup take higher peaks
LABEL_SMOOTHINGS = (0.0, 0.1)
WARMUP_FRACTION = 0.1  # warmup_cosine's warmup, a share of cfg.epochs
KEEP_DIVISOR = 10  # round 2 takes the best 1/KEEP_DIVISOR of round 1's configurations (15-min budget)
MIN_REACHED_SHARE = 0.75  # reached on at least 3 of 4 tuning seeds
DEFAULT_RUN_S = 20.0  # a rough run time (queue, worker start, training to the target) when the store knows none
GROUP_PREFIX = "tune-"
KEYS = ("schedule", "learning_rate", "label_smoothing", "epochs")  # one configuration of the grid


class TuneError(RuntimeError):
    """No configuration reached the target on enough tuning seeds (one line)."""


def sweep_lrs(center: float, factors=LR_FACTORS) -> list[float]:
    """The peak learning rates tried: `factors` x `center`, rounded to 3 significant digits."""
    return [float(f"{center * f:.3g}") for f in factors]


def warmup_epochs(epochs: int) -> float:
    """warmup_cosine's warmup: WARMUP_FRACTION of the epoch budget, in epochs (2 decimals)."""
    return round(WARMUP_FRACTION * epochs, 2)


def schedule_lengths(epochs: int) -> list[int]:
    """The lengths (epochs) a decaying schedule is tried at: the budget and a third of it (at least
    2), or the budget alone under 4 epochs."""
    return sorted({max(2, round(epochs / 3)), epochs}) if epochs >= 4 else [epochs]


def config_for(base: RunConfig, schedule: str, learning_rate: float, label_smoothing: float,
               epochs: Optional[int] = None) -> RunConfig:
    """`base` (a baseline config) with `schedule` over `epochs` (default base's) peaking at
    `learning_rate`, and `label_smoothing`."""
    epochs = epochs or base.epochs
    kw = dict(schedule=schedule, learning_rate=learning_rate, label_smoothing=label_smoothing, warmup_epochs=0.0,
              max_lr=None, epochs=epochs)
    if schedule == "warmup_cosine":
        kw["warmup_epochs"] = warmup_epochs(epochs)
    elif schedule == "one_cycle":
        kw["max_lr"] = learning_rate  # the peak; learning_rate = max_lr keeps RunConfig's max_lr >= learning_rate
    return base.replace(**kw)


def grid(lrs, schedules=SCHEDULES, smoothings=LABEL_SMOOTHINGS, epochs: Optional[int] = None) -> list[dict]:
    """Every configuration: {'schedule', 'learning_rate', 'label_smoothing', 'epochs'}: a constant
    rate over the budget `epochs`, a decaying schedule at each of `schedule_lengths(epochs)`
    (None: the budget is left to the base config, one length)."""
    return [{"schedule": s, "learning_rate": lr, "label_smoothing": ls, "epochs": n}
            for s in schedules
            for n in ([epochs] if s == "constant" or epochs is None else schedule_lengths(epochs))
            for lr in lrs for ls in smoothings]


def min_reached(n_seeds: int) -> int:
    """Seeds a configuration must reach the target on: 3 of 4 (MIN_REACHED_SHARE), 2 of 2, 1 of 1."""
    return max(1, math.ceil(MIN_REACHED_SHARE * n_seeds))


def keep_count(n_configs: int) -> int:
    """How many of round 1's configurations go on to round 2 (if that many reached)."""
    return max(1, math.ceil(n_configs / KEEP_DIVISOR))


def survivors(results: list[dict], n_configs: int) -> list[dict]:
    """Round 1's best: the `keep_count` fastest configurations (KEYS) among those that reached
    the target, fastest first; ties keep the grid's order."""
    reached = [r for r in results if r.get("time_to_accuracy_sec") is not None]
    reached.sort(key=lambda r: r["time_to_accuracy_sec"])  # stable
    return [{k: r[k] for k in KEYS} for r in reached[:keep_count(n_configs)]]


def plan_runs(n_configs: int, n_seeds: int, n_reached: Optional[int] = None) -> int:
    """Runs of a tune: every configuration on 1 seed, then the survivors on the other seeds.
    `n_reached`: how many reached the target in round 1 (None: enough)."""
    keep = keep_count(n_configs) if n_reached is None else min(keep_count(n_configs), n_reached)
    return n_configs + keep * (n_seeds - 1)


def _median(times: list[Optional[float]]) -> float:
    return statistics.median([math.inf if t is None else t for t in times])


def spread(times: list[Optional[float]]) -> dict:
    """{'min_sec', 'max_sec', 'sd_log' (sample sd of the log times; None under 2)} of the reached seeds."""
    t = [x for x in times if x is not None]
    return {"min_sec": min(t), "max_sec": max(t),
            "sd_log": statistics.stdev(math.log(x) for x in t) if len(t) > 1 else None}


def choose(results: list[dict], seeds=TUNING_SEEDS) -> Optional[dict]:
    """The winner: among configurations with a run on every seed of `seeds` that reached the
    target on at least `min_reached(len(seeds))` of them, the one with the lowest median time to
    accuracy, a miss counting as infinite (ties: the first in `results`' order); None if none.

    results: one per run: {'schedule', 'learning_rate', 'label_smoothing', 'seed',
        'time_to_accuracy_sec' (None: missed, failed or cancelled)}.
    Returns: {'schedule', 'learning_rate', 'label_smoothing', 'median_time_to_accuracy_sec',
        'reached' ({'seeds', 'of'}), 'seeds_reached', 'spread' (`spread`)} or None.
    """
    by: dict[tuple, dict] = {}
    for r in results:
        by.setdefault(tuple(r[k] for k in KEYS), {})[r["seed"]] = r.get("time_to_accuracy_sec")
    need, best = min_reached(len(seeds)), None
    for key, times in by.items():
        if any(s not in times for s in seeds):
            continue
        ts = [times[s] for s in seeds]
        hit = [s for s, t in zip(seeds, ts) if t is not None]
        if len(hit) < need:
            continue
        med = _median(ts)
        if best is None or med < best["median_time_to_accuracy_sec"]:
            best = {**dict(zip(KEYS, key)), "median_time_to_accuracy_sec": med,
                    "reached": {"seeds": len(hit), "of": len(seeds)}, "seeds_reached": hit, "spread": spread(ts)}
    return best


def run_seconds(store, cfg: RunConfig) -> tuple[float, str]:
    """(a run's expected wall seconds from queue start to end, where that figure comes from): the
    median of the last 20 completed stop-at-target runs of cfg's data set and model in the store,
    else DEFAULT_RUN_S."""
    rows = store.conn.execute(
        "SELECT ended - started FROM runs WHERE status='completed' AND trashed IS NULL AND started IS NOT NULL "
        "AND ended IS NOT NULL AND json_extract(config, '$.dataset')=? AND json_extract(config, '$.model')=? "
        "AND json_extract(config, '$.stop_at_target') ORDER BY id DESC LIMIT 20",
        (cfg.dataset, cfg.model)).fetchall()
    secs = [r[0] for r in rows if r[0] and r[0] > 0]
    if not secs:
        return DEFAULT_RUN_S, f"a rough default of {DEFAULT_RUN_S:.0f} s a run"
    return statistics.median(secs), f"the median of this store's last {len(secs)} {cfg.dataset}/{cfg.model} runs"


def tune(cfg: RunConfig, center: Optional[float] = None, seeds=TUNING_SEEDS, factors=LR_FACTORS,
         schedules=SCHEDULES, smoothings=LABEL_SMOOTHINGS, store_path: Optional[os.PathLike] = None,
         on_run: Optional[Callable[[dict], None]] = None, on_plan: Optional[Callable[[dict], None]] = None,
         lr_find_steps: int = 100) -> dict:
    """Tune the schedule, peak learning rate and label smoothing of `cfg`'s baseline; store the winner.

    Args:
        cfg: any configuration; its baseline (float32, one device, no mixup; engine.config.baseline_config)
            is what is tuned, trained up to cfg.epochs and stopped at the data set's (or cfg's) target.
        center: the rates' centre; None: the LR range test's suggestion (falls back to
            cfg.learning_rate when the test suggests none).
        seeds, factors, schedules, smoothings: the grid (tests shrink it; the CLI keeps the defaults).
        on_plan: called once before the first run with {'runs' (planned), 'configs', 'run_sec'
            (expected per run), 'run_sec_from', 'estimate_sec'}.
        on_run: called with each run's result as it ends, with 'index' (1-based), 'of' (runs
            planned now) and 'left_sec' (expected s left at the pace so far).
    Returns: the winner's 'schedule', 'learning_rate' (peak), 'label_smoothing', 'warmup_epochs',
        'max_lr', 'median_time_to_accuracy_sec', 'reached', 'seeds_reached', 'spread'; and
        'tuning_seeds', 'center', 'center_from' ('lr range test' | 'given' | 'config'),
        'learning_rates', 'schedules', 'label_smoothings', 'configs', 'survivors' (round 2's),
        'skipped' (configurations this optimizer cannot run, with why), 'runs' (per run:
        'run_id', 'round', KEYS, 'seed', 'time_to_accuracy_sec', 'status'), 'group_id',
        'target_accuracy', 'wall_sec', 'tuned_id' (the engine.store.tuned_baselines row).
    Raises: TuneError when no configuration reached the target on enough seeds (nothing
        stored); ConfigError when the data set has no target accuracy; as
        engine.jobs.runner.submit (ActiveRunError while a run is active).
    """
    from engine.base.errors import ConfigError
    from engine.data.meta import target_for
    from engine.jobs import runner
    from engine.report.target import effective_target, time_to_accuracy
    from engine.store import Store, tuned_baselines

    target = target_for(cfg.target_accuracy, cfg.dataset)
    if target is None:
        raise ConfigError("target_accuracy", None, f"is not set and {cfg.dataset} has no default",
                          "give --target-accuracy, e.g. 0.9")
    seeds = list(seeds)
    base = baseline_config(cfg).replace(stop_at_target=True, target_accuracy=target)
    center_from = "given"
    if center is None:
        from engine.lr_find import range_test

        found = range_test.run(base.replace(seed=seeds[0]), steps=lr_find_steps).get("suggestion") or {}
        center, center_from = found.get("suggested"), "lr range test"
        if not center or not math.isfinite(center):
            center, center_from = cfg.learning_rate, "config"
    lrs = sweep_lrs(center, factors)
    configs, skipped = [], []
    for c in grid(lrs, schedules, smoothings, base.epochs):
        try:
            config_for(base, **c)
            configs.append(c)
        except ConfigError as e:  # e.g. schedule_free_adamw replaces the schedule
            skipped.append({**c, "why": str(e)})
    group = GROUP_PREFIX + uuid.uuid4().hex[:8]
    runs: list[dict] = []
    planned = plan_runs(len(configs), len(seeds))
    store = Store(store_path)
    try:
        run_sec, run_sec_from = run_seconds(store, base)
    finally:
        store.close()
    if on_plan:
        on_plan({"runs": planned, "configs": len(configs), "run_sec": run_sec, "run_sec_from": run_sec_from,
                 "estimate_sec": planned * run_sec})
    started = time.time()

    def measure(plan: list[tuple[dict, int]], rnd: int) -> None:
        cfgs = [config_for(base, **c).replace(seed=seed) for c, seed in plan]
        ids = runner.submit(cfgs, ["baseline"] * len(cfgs), store_path, group_id=group)
        for (c, seed), rid in zip(plan, ids):
            run = runner.wait(rid, store_path)
            st = Store(store_path)
            try:
                t = time_to_accuracy(st.metrics("epochs", rid), effective_target(run)) \
                    if run["status"] == "completed" else None
            finally:
                st.close()
            r = {"run_id": rid, "round": rnd, **c, "seed": seed, "time_to_accuracy_sec": t, "status": run["status"]}
            runs.append(r)
            if on_run:
                pace = (time.time() - started) / len(runs)
                on_run({**r, "index": len(runs), "of": planned, "left_sec": pace * (planned - len(runs))})

    # Round 1: every configuration on the first seed, in a fixed shuffled order.
    order = list(configs)
    random.Random(0).shuffle(order)
    measure([(c, seeds[0]) for c in order], 1)
    round1 = [{**r} for r in runs]
    # Keep grid order among equal times: sort round 1's results by the grid's order first.
    rank = {tuple(c[k] for k in KEYS): i for i, c in enumerate(configs)}
    round1.sort(key=lambda r: rank[tuple(r[k] for k in KEYS)])
    kept = survivors(round1, len(configs))
    planned = plan_runs(len(configs), len(seeds), len(kept))
    # Round 2: the survivors on the other seeds, seed by seed, the order reversed every seed.
    plan2 = []
    for i, seed in enumerate(seeds[1:]):
        plan2 += [(c, seed) for c in (kept if i % 2 == 0 else kept[::-1])]
    if plan2:
        measure(plan2, 2)
    best = choose(runs, seeds)
    out = {"center": center, "center_from": center_from, "learning_rates": lrs, "schedules": list(schedules),
           "label_smoothings": list(smoothings), "configs": len(configs), "survivors": kept, "skipped": skipped,
           "runs": runs, "group_id": group, "target_accuracy": target, "tuning_seeds": seeds,
           "epoch_budget": base.epochs, "wall_sec": time.time() - started}
    if best is None:
        raise TuneError(f"no configuration reached {target:g} on {min_reached(len(seeds))} of the {len(seeds)} "
                        f"tuning seeds in {cfg.epochs} epochs (rates {', '.join(f'{x:g}' for x in lrs)}); "
                        "give more --epochs or a lower --target-accuracy")
    won = config_for(base, best["schedule"], best["learning_rate"], best["label_smoothing"], best["epochs"])
    out.update(best, warmup_epochs=won.warmup_epochs, max_lr=won.max_lr)
    from engine.hardware.fingerprint import short

    out["fingerprint"] = short()  # the machine it was tuned on: only this machine's lookups use it
    store = Store(store_path)
    try:
        out["tuned_id"] = tuned_baselines.put(store, base, best["learning_rate"], target, out, os.uname().nodename)
    finally:
        store.close()
    return out
