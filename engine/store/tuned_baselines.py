"""Tuned baselines in the run store: the constant learning rate that brings the float32,
single-device baseline of a (data set, model, global batch size, optimizer) to its target
accuracy fastest, as `python -m engine tune-baseline` found it (engine.autopilot.tune).

A speedup against Keras's default learning rate mixes engineering (throughput) with
optimisation that a tuned baseline would also get (airbench and the NanoGPT speedrun
report records against tuned baselines). Comparisons with ``baseline_kind='tuned'``
(``run --baseline tuned``) take their baseline's learning rate from here.

Its table is part of the store's versioned schema (engine.store.db, since schema 8). Row: id, created (Unix s), hostname, dataset, model,
batch_size, optimizer, learning_rate (the winner), target_accuracy, result (JSON: the
sweep, per learning rate and seed its run id and time to accuracy in s).
"""
from __future__ import annotations

import json
import time
from typing import Optional

from engine.store import Store
from engine.store.db import TUNED_BASELINES_TABLE



def _has_table(store: Store) -> bool:
    return bool(store.conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type='table' AND name='tuned_baselines'").fetchone())


def ensure_table(store: Store) -> None:
    """Create the table if this store has none (a write only then)."""
    if not _has_table(store):
        with store.tx() as conn:
            conn.execute(TUNED_BASELINES_TABLE)


def key_of(cfg) -> dict:
    """What a tuned learning rate is stored under: {'dataset', 'model', 'batch_size',
    'optimizer'} of a RunConfig (or a config dict)."""
    get = cfg.get if isinstance(cfg, dict) else (lambda k: getattr(cfg, k))
    return {"dataset": get("dataset"), "model": get("model"), "batch_size": int(get("batch_size")),
            "optimizer": get("optimizer")}


def put(store: Store, cfg, learning_rate: float, target_accuracy: Optional[float], result: dict,
        hostname: str) -> int:
    """Store a tuned learning rate for `cfg`'s key; returns the row id. Older rows stay (history)."""
    ensure_table(store)
    k = key_of(cfg)
    with store.tx() as conn:
        cur = conn.execute(
            "INSERT INTO tuned_baselines (created, hostname, dataset, model, batch_size, optimizer, learning_rate, "
            "target_accuracy, result) VALUES (?,?,?,?,?,?,?,?,?)",
            (time.time(), hostname, k["dataset"], k["model"], k["batch_size"], k["optimizer"], float(learning_rate),
             target_accuracy, json.dumps(result)))
        return int(cur.lastrowid)


def get(store: Store, cfg) -> Optional[dict]:
    """The newest tuned baseline for `cfg`'s key, as a dict with 'result' parsed, or None.
    A read only: a store without the table (never tuned, or read-only) has none."""
    if not _has_table(store):
        return None
    k = key_of(cfg)
    row = store.conn.execute(
        "SELECT * FROM tuned_baselines WHERE dataset=? AND model=? AND batch_size=? AND optimizer=? "
        "ORDER BY id DESC LIMIT 1", (k["dataset"], k["model"], k["batch_size"], k["optimizer"])).fetchone()
    if row is None:
        return None
    d = dict(row)
    d["result"] = json.loads(d["result"]) if d.get("result") else None
    return d


def lookup(cfg, store_path=None) -> Optional[dict]:
    """`get` on a store opened for this read alone (`store_path`, default the SpeedLab
    store): the Train page's toggle and presets and the autopilot ask it once each."""
    store = Store(store_path)
    try:
        return get(store, cfg)
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

