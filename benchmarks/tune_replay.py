"""Replay a recorded `tune-baseline` with another round-2 size: what it would have taken and chosen.

    python benchmarks/tune_replay.py STORE.sqlite [--keep 4 5 6 8]

Reads every run of the newest tune group (`tune-<hex>`) of the store. Round 1 (the first tuning
seed) is taken as run: its wall time from the first run's creation to the last round-1 run's end.
Round 2 for `--keep K`: the K fastest round-1 configurations that reached the target
(engine.autopilot.tune.survivors' rule), their recorded runs on the other seeds, start to end, plus
the median gap between consecutive runs; the winner by engine.autopilot.tune.choose. Needs the
tune to have kept at least K (a replay cannot invent runs it did not record).
Prints one line per K: runs, seconds (and minutes), the winner and its median time to accuracy (s).
"""
from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from engine.autopilot import tune  # noqa: E402
from engine.config.seeds import TUNING_SEEDS  # noqa: E402


def load(path: str) -> list[dict]:
    """The newest tune group's runs, in creation order: their KEYS, seed, time to accuracy and times."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    group = con.execute("SELECT group_id FROM runs WHERE group_id LIKE ? ORDER BY id DESC LIMIT 1",
                        (tune.GROUP_PREFIX + "%",)).fetchone()
    if group is None:
        raise SystemExit(f"no tune group in {path}")
    out = []
    for created, started, ended, config, summary in con.execute(
            "SELECT created, started, ended, config, summary FROM runs WHERE group_id=? ORDER BY id", group):
        cfg, s = json.loads(config), json.loads(summary or "{}")
        out.append({**{k: cfg[k] for k in tune.KEYS}, "seed": cfg["seed"], "created": created,
                    "started": started, "ended": ended, "time_to_accuracy_sec": s.get("time_to_target_sec")})
    return out


def replay(runs: list[dict], keep: int) -> dict:
    """{'runs', 'seconds', 'winner'} of the tune had round 2 kept `keep` configurations."""
    first = [r for r in runs if r["seed"] == TUNING_SEEDS[0]]
    kept = tune.survivors(first, keep * tune.KEEP_DIVISOR)[:keep]
    keys = [tuple(k[x] for x in tune.KEYS) for k in kept]
    later = [r for r in runs if r["seed"] != TUNING_SEEDS[0] and tuple(r[x] for x in tune.KEYS) in keys]
    recorded = {tuple(r[x] for x in tune.KEYS) for r in later}
    if len(recorded) < len(keys):
        raise SystemExit(f"--keep {keep}: the tune recorded round 2 for {len(recorded)} configurations only")
    gaps = [b["started"] - a["ended"] for a, b in zip(runs, runs[1:]) if a["ended"] and b["started"]]
    gap = statistics.median(gaps) if gaps else 0.0
    seconds = max(r["ended"] for r in first) - runs[0]["created"]
    seconds += sum(r["ended"] - r["started"] + gap for r in later)
    return {"runs": len(first) + len(later), "seconds": seconds, "winner": tune.choose(first + later)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("store", help="the runs.sqlite of a store that ran tune-baseline")
    p.add_argument("--keep", type=int, nargs="+", default=[4, 5, 6, 8])
    a = p.parse_args()
    runs = load(a.store)
    for k in a.keep:
        r = replay(runs, k)
        w = r["winner"] or {}
        print(f"keep {k}: {r['runs']} runs, {r['seconds']:.0f} s ({r['seconds'] / 60:.1f} min); winner "
              f"{w.get('schedule')} over {w.get('epochs')} epochs, peak {w.get('learning_rate')}, "
              f"smoothing {w.get('label_smoothing')}, median {w.get('median_time_to_accuracy_sec', float('nan')):.2f} s")


if __name__ == "__main__":
    main()
