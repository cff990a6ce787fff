"""Metrics of the runs a live page shows, read incrementally (no TF).

A live Train page re-reads the store every second. Reading every execution of a
long run each time costs seconds of server CPU per refresh (measured: 1.6 CPU-s
with 50,000 executions), so a page keeps one `LiveMetrics` per session: each
tick it reads only the executions and system samples added since the last tick
and appends them; epochs (one row each, few) are re-read. A finished run is read
once; figures derived from a run's rows (its steady state, its display series)
are kept until new rows arrive (`memo`). `compare`, `progress` and the charts
take it as their metrics source.
"""
from __future__ import annotations

import pandas as pd

from engine.store import EPOCH_COLS, EXEC_COLS, SYSTEM_COLS, Store

FINAL = ("completed", "failed", "cancelled")


class StoreMetrics:
    """Metrics straight from the store (each call reads everything): the default source."""

    def __init__(self, store: Store):
        self.store = store

    def executions(self, run: dict) -> pd.DataFrame:
        """The run's executions, columns EXEC_COLS, in order."""
        return self.store.frame("executions", run["id"])

    def epochs(self, run: dict) -> list[dict]:
        """The run's epoch rows (dicts of EPOCH_COLS), in order."""
        return self.store.metrics("epochs", run["id"])

    def system(self, run: dict) -> pd.DataFrame:
        """The run's system samples, columns SYSTEM_COLS, in time order."""
        return self.store.frame("system", run["id"])

    def memo(self, run: dict, execs: pd.DataFrame, key: str, compute):
        """compute(): a figure derived from `execs`, the run's executions. Here
        computed on every call; LiveMetrics keeps it until new rows arrive."""
        return compute()


class LiveMetrics(StoreMetrics):
    """StoreMetrics that keeps what it read: a tick reads only new rows.

    Bind it to the tick's open store with `use(store)`; keep the object across
    ticks (e.g. in st.session_state). Memory: the runs shown, about 90 bytes per
    stored execution; runs no longer shown are dropped by `keep`.
    """

    def __init__(self):
        super().__init__(None)
        self._execs: dict[int, pd.DataFrame] = {}
        self._system: dict[int, tuple[int, pd.DataFrame]] = {}
        self._done: dict[int, list] = {}  # finished runs' epochs, read once
        self._memo: dict[int, dict] = {}  # figures derived from a run's executions as read so far

    def use(self, store: Store) -> "LiveMetrics":
        self.store = store
        return self

    def keep(self, run_ids) -> None:
        """Forget every run but these."""
        keep = set(run_ids)
        for cache in (self._execs, self._system, self._done, self._memo):
            for rid in [r for r in cache if r not in keep]:
                del cache[rid]

    def executions(self, run: dict) -> pd.DataFrame:
        rid = run["id"]
        have = self._execs.get(rid)
        if have is not None and run["status"] in FINAL and rid in self._done:
            return have
        after = int(have["idx"].iloc[-1]) if have is not None and len(have) else -1
        new = self.store.rows_after("executions", rid, after)
        if new or have is None:
            part = pd.DataFrame.from_records(new, columns=list(EXEC_COLS))
            have = part if have is None or not len(have) else pd.concat([have, part], ignore_index=True)
            self._execs[rid] = have
            self._memo.pop(rid, None)
        return have

    def memo(self, run: dict, execs: pd.DataFrame, key: str, compute):
        """compute() once per run, key and rows read: a page tick asks for the same
        steady state or display series several times, and a finished run's never
        change. Only for `execs` as returned by `executions` (else computed)."""
        rid = run["id"]
        if execs is not self._execs.get(rid):
            return compute()
        memo = self._memo.setdefault(rid, {})
        if key not in memo:
            memo[key] = compute()
        return memo[key]

    def epochs(self, run: dict) -> list[dict]:
        rid = run["id"]
        if rid in self._done:
            return self._done[rid]
        rows = self.store.metrics("epochs", rid)
        if run["status"] in FINAL:
            self.executions(run)  # the last rows, then never again
            self._done[rid] = rows
        return rows

    def system(self, run: dict) -> pd.DataFrame:
        rid = run["id"]
        last, have = self._system.get(rid, (-1, None))
        new = self.store.rows_after("system", rid, last)
        if new or have is None:
            part = pd.DataFrame.from_records([r[1:] for r in new], columns=list(SYSTEM_COLS))
            have = part if have is None or not len(have) else pd.concat([have, part], ignore_index=True)
            self._system[rid] = (new[-1][0] if new else last, have)
        return have


__all__ = ["EPOCH_COLS", "LiveMetrics", "StoreMetrics"]
