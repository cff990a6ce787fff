"""How long the autopilot's re-runs take after its search: said before Start, and counted
down while they run.

The budget bounds the search only. After it come the runoff (the `FINALISTS` fastest
trials once on each of RUNOFF_SEEDS new seeds), then `repeats` confirming rounds, each one
run of the baseline, the winner, the tuned baseline when one is stored, and the winner
without each technique it uses (the leave-one-out ablation, measured inside the same
rounds). Issue 43 asks for the page to say up front what that adds. Before the search
neither the winner's time nor its technique count is known, so the estimate is a range
built from this machine's recent runs of the same baseline (the median of the newest
RECENT_BASELINES): each winner-like run takes between WINNER_SHARE of the baseline's
training, plus the same per-run overhead (worker start, data, compile, validation).
No TF in this module.
"""
from __future__ import annotations

import statistics
import time
from typing import Optional

from engine.store import Store

# A winner-like run (the winner, its runoff, an ablated winner) trains this share of the
# baseline's time, low and high (the recorded mnist5k winner: 0.22; digits: 0.3-0.6).
WINNER_SHARE = (0.2, 0.7)
# Techniques a winner uses, low and high (the recorded winners: 3-5; each is one ablation run a round).
TECHNIQUES = (2, 5)


def planned_runs(repeats: int, finalists: int, techniques: int, tuned: bool, explain: bool,
                 seeds: int = 1) -> dict:
    """Runs after the search: {'runoff': finalists x `seeds` (0 when finalists < 2), 'confirm':
    repeats x (baseline + winner + tuned + techniques when explaining)}. repeats 0 = no rounds."""
    per_round = 2 + int(bool(tuned)) + (techniques if explain else 0)
    return {"runoff": finalists * seeds if finalists >= 2 else 0, "confirm": repeats * per_round if repeats else 0}


# The estimate reads this many of the newest baseline runs, and takes their median: one run
# that missed the target (its whole training counted) made the range twice too long.
RECENT_BASELINES = 5


def recent_baseline_runs(store: Store, dataset: str, model: str, n: int = RECENT_BASELINES) -> Optional[dict]:
    """The newest `n` completed runs of this data set and model that ran as a baseline (role
    'baseline'): {'id' (the newest), 'ids', 'elapsed_s' (median of started to finished: with the
    wait for a worker after the claim, what a re-run costs, s), 'wall_s' (median of the runs' own
    wall time, summary 'wall_sec', as the Runs table's wall column; elapsed where not stored, s),
    'train_s' (median of the time to the target, else the training time, s)}; None when
    there is none."""
    where = ("role='baseline' AND status='completed' AND json_valid(config) "
             "AND json_extract(config, '$.dataset')=? AND json_extract(config, '$.model')=?")
    rows = []
    for r in store.query_runs(where, (dataset, model), limit=n):
        s = r.get("summary") or {}
        if not r.get("started") or not r.get("ended"):  # no clock to read (an imported or damaged row)
            continue
        wall = r["ended"] - r["started"]
        train = s.get("time_to_target_sec") or s.get("train_sec")
        if wall > 0 and train and 0 < train <= wall:
            rows.append((r["id"], float(wall), float(train), float(s.get("wall_sec") or wall)))
    if not rows:
        return None
    return {"id": rows[0][0], "ids": [r[0] for r in rows], "elapsed_s": statistics.median(r[1] for r in rows),
            "train_s": statistics.median(r[2] for r in rows), "wall_s": statistics.median(r[3] for r in rows)}


def before_start(store: Store, dataset: str, model: str, repeats: int, explain: bool, tuned: bool,
                 finalists: int, seeds: int = 1) -> Optional[dict]:
    """The time the re-runs add after the search, as a range, before it starts.

    Returns: {'low_s', 'high_s' (s), 'runs_low', 'runs_high', 'baseline_run' (the newest's id),
    'baseline_runs' (how many the medians are of), 'baseline_wall_s' (their median wall time, as
    the Runs table shows it), 'baseline_elapsed_s' (their median claim to end: with waiting)}, or None
    when this machine has no baseline run of `dataset` and `model` yet (the page then says
    so) or there is nothing after the search."""
    base = recent_baseline_runs(store, dataset, model)
    lo_n = planned_runs(repeats, finalists, TECHNIQUES[0], tuned, explain, seeds)
    hi_n = planned_runs(repeats, finalists, TECHNIQUES[1], tuned, explain, seeds)
    if base is None or not (hi_n["runoff"] + hi_n["confirm"]):
        return None
    overhead = max(base["elapsed_s"] - base["train_s"], 0.0)
    baselines = (1 + int(bool(tuned))) * repeats  # the tuned baseline: as long as the default one, at most

    def total(n: dict, share: float) -> float:
        winner_like = n["runoff"] + n["confirm"] - baselines
        return baselines * base["elapsed_s"] + winner_like * (overhead + share * base["train_s"])

    return {"low_s": total(lo_n, WINNER_SHARE[0]), "high_s": total(hi_n, WINNER_SHARE[1]),
            "runs_low": lo_n["runoff"] + lo_n["confirm"], "runs_high": hi_n["runoff"] + hi_n["confirm"],
            "baseline_run": base["id"], "baseline_runs": len(base["ids"]), "baseline_wall_s": base["wall_s"],
            "baseline_elapsed_s": base["elapsed_s"]}


def left_in_confirm(confirm: Optional[dict], now: Optional[float] = None) -> Optional[float]:
    """Seconds the confirming rounds still need: their runs left times the mean wall time of
    those done so far (s). None before the first is done, or for a state without the plan
    (an autopilot state written before 'planned' and 'started' were kept)."""
    if not confirm or not confirm.get("planned") or not confirm.get("started"):
        return None
    done = len(confirm.get("runs") or [])
    if done < 1:
        return None
    spent = (now if now is not None else time.time()) - confirm["started"]
    return max(confirm["planned"] - done, 0) * spent / done


def minutes(s: float) -> str:
    """'40 s', '3 min', '12 min': a duration as a person reads an estimate."""
    return f"{s:.0f} s" if s < 90 else f"{s / 60:.0f} min"
