"""Comparisons in the run store: one row per set of interleaved pairs (engine.jobs.comparison).

Its table is part of the store's versioned schema (engine.store.schema, since schema 8;
a store of an older schema gets it when it is migrated or opened read-only,
engine.store.db.Store._ensure_tables), so that the Runs page,
`engine compare`, `engine noise` and exported bundles read the same stored figures later. The runs of a
comparison are ordinary runs with group_id = the comparison's `group_id`.

Row: id, created / ended (Unix s), kind ('ab': a configuration against its
baseline, 'aa': the baseline against itself, this machine's noise floor),
group_id, status ('running' | 'completed' | 'stopped' | 'failed'), hostname,
settings (JSON: pairs asked or None for adaptive, max_pairs, target_half_width,
budget_s, fingerprint: the machine's {id, name}, engine.hardware.fingerprint), plan (JSON: per pair {'pair', 'seed', 'order', 'baseline_id',
'run_id'}), result (JSON: engine.report.comparison.evaluate), ended_by (one line).
"""
from __future__ import annotations

import json
import time
from typing import Callable, Optional

from engine.store import Store

_JSON = ("settings", "plan", "result")


def create(store: Store, kind: str, group_id: str, settings: dict, plan: list, hostname: str) -> int:
    """Insert a running comparison; returns its id."""
    with store.tx() as conn:
        cur = conn.execute("INSERT INTO comparisons (created, kind, group_id, status, hostname, settings, plan) "
                           "VALUES (?,?,?,?,?,?,?)", (time.time(), kind, group_id, "running", hostname,
                                                      json.dumps(settings), json.dumps(plan)))
        return int(cur.lastrowid)


def update(store: Store, comparison_id: int, only_if_running: bool = False, **cols) -> bool:
    """Set columns (dict/list values stored as JSON). `only_if_running`: only while its status
    is 'running' (so that of two processes ending it, the first one's end stays). Returns
    whether a row changed."""
    if not cols:
        return False
    vals = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in cols.values()]
    with store.tx() as conn:
        return conn.execute(f"UPDATE comparisons SET {', '.join(f'{k}=?' for k in cols)} WHERE id=?"
                            + (" AND status='running'" if only_if_running else ""),
                            (*vals, comparison_id)).rowcount > 0


def mark_stopping(store: Store, comparison_id: int, reason: str) -> bool:
    """Record why a running comparison stops (its `ended_by`), unless one is recorded already
    or it has ended: the first stop's reason stays. Returns whether it was recorded."""
    with store.tx() as conn:
        return conn.execute("UPDATE comparisons SET ended_by=? WHERE id=? AND status='running' AND ended_by IS NULL",
                            (reason, comparison_id)).rowcount > 0


def _row(row) -> dict:
    d = dict(row)
    for k in _JSON:
        d[k] = json.loads(d[k]) if d.get(k) else None
    return d


def get(store: Store, comparison_id: int) -> Optional[dict]:
    """The comparison, or None."""
    row = store.conn.execute("SELECT * FROM comparisons WHERE id=?", (comparison_id,)).fetchone()
    return _row(row) if row else None


def by_group(store: Store, group_id: Optional[str]) -> Optional[dict]:
    """The comparison whose runs carry `group_id`, or None."""
    if not group_id:
        return None
    row = store.conn.execute("SELECT * FROM comparisons WHERE group_id=?", (group_id,)).fetchone()
    return _row(row) if row else None


def for_run(store: Store, run_id: int) -> Optional[dict]:
    """The comparison run `run_id` belongs to (either side of a pair), or None."""
    run = store.get_run(run_id)
    return by_group(store, run.get("group_id")) if run else None


def list_all(store: Store, kind: Optional[str] = None) -> list[dict]:
    """All comparisons (optionally of one kind), newest first."""
    q = "SELECT * FROM comparisons" + (" WHERE kind=?" if kind else "") + " ORDER BY id DESC"
    return [_row(r) for r in store.conn.execute(q, (kind,) if kind else ()).fetchall()]


def _finished_aa(store: Store, here: Callable[[dict], bool]):
    """Finished A/A comparisons, newest first, that `here` (a row -> bool, e.g.
    engine.hardware.fingerprint.row_here: the same machine fingerprint) accepts."""
    for c in list_all(store, "aa"):
        if c["status"] in ("completed", "stopped") and c["result"] and here(c):
            yield c


def latest_noise(store: Store, here: Callable[[dict], bool]) -> Optional[dict]:
    """The newest finished A/A comparison that `here` accepts (this machine's) with an interval, or None."""
    for c in _finished_aa(store, here):
        if (c["result"].get("time_to_accuracy") or {}).get("half_width") is not None or \
                (c["result"].get("end_to_end") or {}).get("half_width") is not None:
            return c
    return None


# What makes two A/A comparisons' noise alike: their baseline's data set, model, epochs, precision.
NOISE_KEYS = ("dataset", "model", "epochs", "precision")


def matching_noise(store: Store, here: Callable[[dict], bool], config: dict, min_pairs: int) -> Optional[dict]:
    """The newest finished A/A comparison that `here` accepts (this machine's: the row's
    settings' fingerprint, engine.hardware.fingerprint.row_here) whose baseline matches `config`
    on NOISE_KEYS and that has at least `min_pairs` complete pairs, or None."""
    want = {k: config.get(k) for k in NOISE_KEYS}
    for c in _finished_aa(store, here):
        r = c["result"] or {}
        if r.get("pairs", 0) < min_pairs:
            continue
        base = store.get_run((r.get("baseline_ids") or [None])[0]) if r.get("baseline_ids") else None
        if base is not None and {k: (base.get("config") or {}).get(k) for k in NOISE_KEYS} == want:
            return c
    return None
