"""Tuned baselines in the run store: the schedule, peak learning rate and label smoothing that bring
the float32, single-device baseline of a (data set, model, global batch size, optimizer) to its
target accuracy fastest, as `python -m engine tune-baseline` found it (engine.autopilot.tune).

A speedup against Keras's default learning rate mixes engineering (throughput) with
optimisation that a tuned baseline would also get (airbench and the NanoGPT speedrun
report records against tuned baselines). Comparisons with ``baseline_kind='tuned'``
(``run --baseline tuned``) take their baseline's settings from here (`config_fields`).

Its table is part of the store's versioned schema (engine.store.schema, since schema 8). Row: id, created (Unix s),
hostname, dataset, model, batch_size, optimizer, learning_rate (the winner's peak), target_accuracy,
result (JSON: the winner's 'schedule', 'warmup_epochs', 'max_lr', 'label_smoothing', 'tuning_seeds',
'reached' {'seeds', 'of'}, 'spread' {'min_sec', 'max_sec', 'sd_log'}, 'fingerprint' (the machine,
engine.hardware.fingerprint; absent before fingerprints), and the sweep's runs). A row
stored before the schedule was tuned (a constant learning rate on seeds 0 and 1) reads as a
constant-LR tuned baseline (`get` fills the fields in).
"""
from __future__ import annotations

import json
import time
from typing import Callable, Optional

from engine.store import Store

# The baseline settings a row fixes besides learning_rate (RunConfig fields), as a row stored
# before the schedule was tuned has them: constant, no warmup, no smoothing.
OLD_ROW = {"schedule": "constant", "warmup_epochs": 0.0, "max_lr": None, "label_smoothing": 0.0}


def key_of(cfg) -> dict:
    """What a tuned learning rate is stored under: {'dataset', 'model', 'batch_size',
    'optimizer'} of a RunConfig (or a config dict)."""
    get = cfg.get if isinstance(cfg, dict) else (lambda k: getattr(cfg, k))
    return {"dataset": get("dataset"), "model": get("model"), "batch_size": int(get("batch_size")),
            "optimizer": get("optimizer")}


def put(store: Store, cfg, learning_rate: float, target_accuracy: Optional[float], result: dict,
        hostname: str) -> int:
    """Store a tuned baseline for `cfg`'s key: its peak `learning_rate`, and in `result` its
    OLD_ROW fields, 'tuning_seeds', 'reached' and 'spread'; returns the row id. Older rows stay (history)."""
    k = key_of(cfg)
    with store.tx() as conn:
        cur = conn.execute(
            "INSERT INTO tuned_baselines (created, hostname, dataset, model, batch_size, optimizer, learning_rate, "
            "target_accuracy, result) VALUES (?,?,?,?,?,?,?,?,?)",
            (time.time(), hostname, k["dataset"], k["model"], k["batch_size"], k["optimizer"], float(learning_rate),
             target_accuracy, json.dumps(result)))
        return int(cur.lastrowid)


def get(store: Store, cfg, here: Optional[Callable[[dict], bool]] = None) -> Optional[dict]:
    """The newest tuned baseline for `cfg`'s key that `here` accepts (a row -> bool, e.g.
    engine.hardware.fingerprint.row_here: measured on this machine; None: any machine), as a
    dict with 'result' parsed, or None. A read only (a read-only store of an older schema
    has an empty table: engine.store.db.Store._ensure_tables)."""
    k = key_of(cfg)
    for row in store.conn.execute(
            "SELECT * FROM tuned_baselines WHERE dataset=? AND model=? AND batch_size=? AND optimizer=? "
            "ORDER BY id DESC", (k["dataset"], k["model"], k["batch_size"], k["optimizer"])).fetchall():
        d = _parsed(dict(row))
        if here is None or here(d):
            return d
    return None


def _parsed(d: dict) -> dict:
    d["result"] = json.loads(d["result"]) if d.get("result") else None
    res = d["result"] or {}
    d["fingerprint"] = res.get("fingerprint")  # the machine it was tuned on ({id, name}); None: before fingerprints
    d.update({k: res.get(k, v) for k, v in OLD_ROW.items()})
    old_seeds = res.get("seeds")  # a constant-LR row: seeds 0 and 1, reached on every one
    d["tuning_seeds"] = res.get("tuning_seeds") or old_seeds
    d["reached"] = res.get("reached") or (
        {"seeds": len(res.get("seeds_reached") or []), "of": len(old_seeds)} if old_seeds else None)
    d["spread"] = res.get("spread")
    return d


def config_fields(row: dict) -> dict:
    """The RunConfig fields a tuned row (`get`) gives the baseline: learning_rate (the peak),
    schedule, warmup_epochs, max_lr and label_smoothing; and for a schedule other than constant
    the epochs it was tuned over (a cosine or one-cycle over other epochs is another schedule)."""
    out = {"learning_rate": float(row["learning_rate"]), **{k: row.get(k, v) for k, v in OLD_ROW.items()}}
    epochs = (row.get("result") or {}).get("epochs")
    if out["schedule"] != "constant" and epochs:
        out["epochs"] = int(epochs)
    return out


def describe(row: dict) -> str:
    """A tuned row (`get`) in words: 'constant learning rate 0.0049', or 'warmup_cosine schedule
    (warmup 0.3 epochs) over 3 epochs peaking at learning rate 0.004, label smoothing 0.1'."""
    f = config_fields(row)
    if f["schedule"] == "constant":
        text = f"constant learning rate {f['learning_rate']:g}"
    else:
        text = (f"{f['schedule']} schedule" + (f" (warmup {f['warmup_epochs']:g} epochs)" if f["warmup_epochs"] else "")
                + (f" over {f['epochs']} epochs" if f.get("epochs") else "")
                + f" peaking at learning rate {f['learning_rate']:g}")
    return text + (f", label smoothing {f['label_smoothing']:g}" if f["label_smoothing"] else "")


def lookup(cfg, here: Optional[Callable[[dict], bool]], store_path=None) -> Optional[dict]:
    """`get` on a store opened for this read alone (`store_path`, default the SpeedLab
    store): the Train page's toggle and presets and the autopilot ask it once each, with
    `here` = engine.hardware.fingerprint.row_here (this machine's rows only)."""
    store = Store(store_path)
    try:
        return get(store, cfg, here)
    finally:
        store.close()


def missing_error(cfg):
    """The ConfigError (field baseline) for a comparison asked against a tuned baseline
    that is not stored: one line naming the key and the command that stores one."""
    from engine.base.errors import ConfigError

    k = key_of(cfg)
    return ConfigError("baseline", "tuned", f"has no learning rate stored for {k['dataset']}/{k['model']}, "
                       f"global batch {k['batch_size']}, {k['optimizer']}",
                       f"run python -m engine tune-baseline --dataset {k['dataset']} --model {k['model']} "
                       f"--batch-size {k['batch_size']} --optimizer {k['optimizer']} first")

