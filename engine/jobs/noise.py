"""This machine's noise floor, as the hardware check measures it (no TF here).

A short A/A comparison (engine.jobs.comparison, kind 'aa'): the float32 baseline
of the cheapest configuration that still reaches the data set's target accuracy
(digits, the cnn, 10 epochs: its time to 0.95 is what a headline measures) against itself, in NOISE_PAIRS interleaved pairs, each run in its own
fresh worker as every run. The two sides of a pair train on different seeds
(engine.jobs.comparison.AA_SEED_OFFSET), because a real A/B comparison's time to
accuracy carries the spread between seeds as well as timing jitter. Any verdict
but "equivalent" or "inconclusive" would be wrong; the interval's relative half width is
the **noise floor**, one per figure (`floor_of`): a speedup smaller than
that is within this machine's noise (engine.report.stats.below_floor). The
comparison is stored like any other (engine.store.comparisons); `latest` reads
the newest one of this machine (its fingerprint id, engine.hardware.fingerprint) back, whichever command measured it
(``python -m engine hardware --noise``, ``python -m engine noise``, the
Hardware page's button).
"""
from __future__ import annotations

import os
import time
from typing import Callable, Optional

from engine.config import RunConfig

# 3 pairs is the fewest that give a t interval with 2 degrees of freedom (df 1: t = 12.7
# makes any interval useless). The mlp in 5 epochs did not reach digits' 0.95, so its floor
# fell back to the end-to-end rate of ~1 s runs (±149% at load 10); the cnn reaches it in 10.
NOISE_PAIRS = 3
NOISE_MODEL = "cnn"
NOISE_EPOCHS = 10


def noise_config(seed: int = 0) -> RunConfig:
    """The hardware check's A/A configuration: digits, NOISE_MODEL, NOISE_EPOCHS epochs,
    float32, 1 device (it is its own baseline)."""
    return RunConfig(dataset="digits", model=NOISE_MODEL, epochs=NOISE_EPOCHS, seed=seed)


def start(pairs: int = NOISE_PAIRS, store_path: Optional[os.PathLike] = None) -> int:
    """Queue the hardware check's A/A comparison (returns at once; the queue process
    runs it). Returns its comparison id.

    Raises: as engine.jobs.comparison.start (e.g. ActiveRunError while a run is
    queued or running); ValueError for fewer than 2 pairs (no interval).
    """
    from engine.jobs import comparison

    if pairs < 2:
        raise ValueError(f"a noise floor needs at least 2 pairs (3 or more advised), not {pairs}")
    return comparison.start(noise_config(), kind="aa", pairs=pairs, store_path=store_path)


def floor_of(comp: Optional[dict], measure: Optional[str] = None) -> Optional[float]:
    """The relative half width (0.08 = ±8%) of a stored A/A comparison's `measure`
    ('time_to_accuracy', 'end_to_end', 'steady'; default its headline measure), or None.
    Each figure has its own floor: a time to accuracy carries the spread between seeds
    (the A/A sides train on different seeds), a steady rate only timing jitter."""
    r = (comp or {}).get("result") or {}
    return (r.get(measure or r.get("measure") or "time_to_accuracy") or {}).get("half_width")


def _here(here):
    from engine.hardware.fingerprint import row_here

    return here or row_here


def latest(store, here: Optional[Callable[[dict], bool]] = None) -> Optional[dict]:
    """The newest finished A/A comparison of this machine (`here`, a comparison row -> bool;
    default engine.hardware.fingerprint.row_here: the same fingerprint id, never just the
    same hostname) with an
    interval, as {'floor' (relative half width), 'comparison_id', 'measured' (Unix s
    it ended), 'pairs', 'measure' ('time_to_accuracy' | 'end_to_end'), 'config'
    (dataset/model/epochs), 'verdict'}; None when none is stored (or `store` has
    no comparisons, e.g. a replay)."""
    from engine.store import comparisons as cstore

    if not hasattr(store, "conn"):
        return None
    c = cstore.latest_noise(store, _here(here))
    if c is None or floor_of(c) is None:
        return None
    r = c["result"]
    run = store.get_run((r.get("baseline_ids") or [None])[0]) if r.get("baseline_ids") else None
    cfg = (run or {}).get("config") or {}
    return {"floor": floor_of(c), "comparison_id": c["id"], "measured": c.get("ended") or c.get("created"),
            "pairs": r.get("pairs"), "measure": r.get("measure"), "verdict": r.get("verdict"),
            "config": {k: cfg.get(k) for k in ("dataset", "model", "epochs")}}


def floor(store, here: Optional[Callable[[dict], bool]] = None, measure: Optional[str] = None) -> Optional[float]:
    """This machine's stored noise floor (`latest`'s 'floor'), or that of `measure`
    (see `floor_of`) when given; None when not measured."""
    from engine.store import comparisons as cstore

    if measure is None:
        info = latest(store, here)
        return info["floor"] if info else None
    if not hasattr(store, "conn"):
        return None
    return floor_of(cstore.latest_noise(store, _here(here)), measure)


def running(store) -> Optional[dict]:
    """The A/A comparison still running in `store`, or None."""
    from engine.jobs import comparison

    c = comparison.running(store)
    return c if c is not None and c["kind"] == "aa" else None


def age_text(t: Optional[float], now: Optional[float] = None) -> str:
    """'40 s ago', '12 min ago', '3.5 h ago', '4 days ago' ('at an unknown time' for None)."""
    if not t:
        return "at an unknown time"
    s = max((now if now is not None else time.time()) - t, 0)
    return (f"{s:.0f} s ago" if s < 120 else f"{s / 60:.0f} min ago" if s < 7200 else
            f"{s / 3600:.1f} h ago" if s < 172800 else f"{s / 86400:.0f} days ago")


def floor_text(info: Optional[dict], now: Optional[float] = None) -> str:
    """One line for the CLI and the Hardware page, e.g. 'noise floor ±6% (A/A comparison
    #4: 3 pairs of digits/cnn, 10 epochs, time to accuracy; 12 min ago): a speedup
    inside it is within this machine's noise', or how to measure one."""
    if not info:
        return ("noise floor: not measured on this machine yet (python -m engine hardware --noise, "
                "or Measure noise floor on the Hardware page)")
    c = info.get("config") or {}
    what = f"{c.get('dataset')}/{c.get('model')}, {c.get('epochs')} epochs" if c.get("model") else "the baseline"
    from engine.report.headline import MEASURE_NAMES

    measure = MEASURE_NAMES.get(info.get("measure") or "", info.get("measure") or "time to accuracy")
    return (f"noise floor ±{info['floor'] * 100:.1f}% (A/A comparison #{info['comparison_id']}: "
            f"{info['pairs']} pairs of {what}, {measure}; {age_text(info.get('measured'), now)}): "
            "a speedup inside it is within this machine's noise")
