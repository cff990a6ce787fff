"""The run store: one SQLite file (WAL mode), the single source of truth.

The worker writes as it trains; the dashboard and the CLI only read.  WAL lets
readers in other processes see each committed batch of rows while the worker
keeps writing.  Location: ``$SPEEDLAB_HOME/runs.sqlite``, default the per-user folder
(`user_home`: $XDG_DATA_HOME/speedlab or ~/.local/share/speedlab), whatever the working folder.

Contention: another process (a database browser with unsaved edits, a second
worker) may hold the write lock for a long time. Every write transaction waits
for it with SQLite's busy handler and then retries with exponential backoff
for up to `patience_s` seconds before raising `StoreBusyError` (one line naming
the file); nothing is written half. Interactive callers (dashboard, CLI) keep
the default patience; workers and the queue process wait much longer
(`LONG_PATIENCE_S`), and the metrics writer (engine.training.writer.Writer)
keeps its rows and retries until the run ends.
"""
from __future__ import annotations

import json
import math
import os
import sqlite3
import time
from pathlib import Path
from typing import Iterable, Optional

from engine.store.errors import (DamagedRunError, StoreBusyError, StoreError, StoreReadOnlyError, is_busy,
                                 raise_fault)
from engine.store.rows import parse_row
from engine.store.schema import (ADDED_COLUMNS, COMPARISONS_TABLE, CONFIG_FILTERS, EPOCH_COLS, EXEC_COLS, INDEXES,
                                 LOOKS_WHOLE, SCHEMA, SCHEMA_VERSION, SYSTEM_COLS, TUNED_BASELINES_TABLE)

# sqlite3's own busy handler: how long one attempt waits for a lock (s).
BUSY_TIMEOUT_S = 5.0
# How long a write transaction keeps retrying a locked store (s): interactive
# callers (dashboard, CLI) by default, workers and the queue process (LONG).
DEFAULT_PATIENCE_S = 30.0
LONG_PATIENCE_S = 900.0
# Backoff between attempts: doubles from MIN to MAX (s).
RETRY_MIN_S, RETRY_MAX_S = 0.05, 2.0
ACTIVE_STATUSES = ("queued", "running")
FINAL_STATUSES = ("completed", "failed", "cancelled")


def _column_values(cols: dict) -> list:
    """Run-column values as stored: dicts and lists as JSON text, the rest as they are."""
    return [json.dumps(v) if isinstance(v, (dict, list)) else v for v in cols.values()]


def trash_retention_s() -> float:
    """How long a trashed run is kept (s): $SPEEDLAB_TRASH_DAYS days, default 30."""
    try:
        return float(os.environ.get("SPEEDLAB_TRASH_DAYS", "30")) * 86400.0
    except ValueError:
        return 30 * 86400.0


def user_home() -> Path:
    """The per-user SpeedLab folder: $XDG_DATA_HOME/speedlab, else ~/.local/share/speedlab (the
    XDG base-directory default; a relative XDG_DATA_HOME is ignored, as the spec says)."""
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and os.path.isabs(xdg) else Path.home() / ".local" / "share"
    return (base / "speedlab").resolve()


def home() -> Path:
    """The SpeedLab folder: $SPEEDLAB_HOME, default `user_home()`: one store for the CLI, the
    dashboard and the callback, from any working folder."""
    env = os.environ.get("SPEEDLAB_HOME", "")
    return Path(env).expanduser().resolve() if env else user_home()


OLD_DEFAULT = ".speedlab"  # the default store folder before 2026-12-06: in the working folder


def old_store_line(cwd: Optional[os.PathLike] = None) -> Optional[str]:
    """One line when SPEEDLAB_HOME is unset and the working folder (`cwd`, default the current
    one) holds a store at the old default (./.speedlab/runs.sqlite), else None: its runs
    stay there, and the line says where and how to use them."""
    if os.environ.get("SPEEDLAB_HOME"):
        return None  # a store the user chose: nothing moved under them
    old = (Path(cwd) if cwd else Path.cwd()) / OLD_DEFAULT / "runs.sqlite"
    try:
        if not old.is_file() or old.resolve() == default_path():
            return None
    except OSError:
        return None
    return (f"note: runs stored before the per-user default are in {old} (this uses {default_path()}); "
            f"to use them, set SPEEDLAB_HOME={old.parent}")


def default_path() -> Path:
    return home() / "runs.sqlite"


class Store:
    """Thin access layer over the SQLite file; one connection per instance.

    Use one Store per thread (sqlite3 connections are not shared across threads).

    Args:
        path: the SQLite file (default `default_path()`).
        patience_s: how long a write transaction retries a locked store before
            raising StoreBusyError (s); 0 = one attempt.
        busy_timeout_s: how long one attempt waits inside SQLite (s).
    """

    def __init__(self, path: Optional[os.PathLike] = None, patience_s: float = DEFAULT_PATIENCE_S,
                 busy_timeout_s: float = BUSY_TIMEOUT_S):
        self.path = Path(path) if path else default_path()
        self.patience_s = float(patience_s)
        # A store on a read-only mount (or a file or folder this user cannot write) is
        # opened read-only: it serves every read, and each write is one line (`tx`).
        self.readonly = _read_only(self.path)
        if self.readonly:
            self.conn = _open_read_only(self.path, busy_timeout_s)
            self._ensure_tables()
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.conn = sqlite3.connect(self.path, timeout=busy_timeout_s, isolation_level=None)
        except sqlite3.Error as e:
            raise_fault(e, self.path)
            raise
        self.conn.row_factory = sqlite3.Row
        try:
            if self.conn.execute("PRAGMA page_count").fetchone()[0] == 0:
                # A new store gives the pages of deleted runs back to the disk (`reclaim`);
                # auto_vacuum can only be chosen before the first table is created.
                self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
            self.conn.execute("PRAGMA journal_mode=WAL")
            self.conn.execute("PRAGMA synchronous=NORMAL")  # WAL: durable enough, far fewer fsyncs
            self._migrate()
            self._ensure_tables()
            self._ensure_indexes()
        except sqlite3.DatabaseError as e:  # a zeroed header, a truncated file: one line, not a traceback
            self.conn.close()
            raise_fault(e, self.path)
            raise

    def _migrate(self):
        self.conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
        row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        found = int(row[0]) if row else None
        if found == SCHEMA_VERSION:
            return  # readers open the store every second: no write lock when current
        if found is not None and found > SCHEMA_VERSION:
            raise StoreError(f"{self.path} has schema {found}, newer than this SpeedLab "
                             f"({SCHEMA_VERSION}); upgrade SpeedLab or use another SPEEDLAB_HOME")
        with self.tx():
            for stmt in SCHEMA.split(";"):
                if stmt.strip():
                    self.conn.execute(stmt)
            for _version, table, column, decl in ADDED_COLUMNS:
                have = {r[1] for r in self.conn.execute(f"PRAGMA table_info({table})")}
                if column not in have:
                    self.conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {decl}")
            self.conn.execute("INSERT OR REPLACE INTO meta VALUES ('schema_version', ?)",
                              (str(SCHEMA_VERSION),))

    def _ensure_tables(self) -> None:
        """The comparisons and tuned_baselines tables, made once here so that no read has to:
        a store of schema 8 has them, so only a damaged one (created) or a read-only store of
        an older schema (empty TEMP tables, in memory only) lacks them."""
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        missing = [(name, sql) for name, sql in (("comparisons", COMPARISONS_TABLE),
                                                 ("tuned_baselines", TUNED_BASELINES_TABLE)) if name not in have]
        if not missing:
            return
        if self.readonly:
            for name, sql in missing:
                self.conn.execute(sql.replace(f"CREATE TABLE IF NOT EXISTS {name}",
                                              f"CREATE TEMP TABLE IF NOT EXISTS {name}"))
            return
        with self.tx() as conn:
            for _name, sql in missing:
                conn.execute(sql)

    def _ensure_indexes(self) -> None:
        """The indexes the pages sort and filter by (`INDEXES`), created once on a store
        that lacks them (no schema version: an older SpeedLab ignores them)."""
        have = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type='index'")}
        missing = [(name, sql) for name, sql in INDEXES if name not in have]
        if missing:
            try:
                with self.tx() as conn:
                    for _name, sql in missing:
                        conn.execute(sql)
            except StoreBusyError:
                pass  # another writer holds it: the next open creates them

    def tx(self):
        """A write transaction (BEGIN IMMEDIATE ... COMMIT) as a context manager.

        Waits for a locked store up to `patience_s` (backoff RETRY_MIN_S..RETRY_MAX_S).
        Raises: StoreBusyError when the lock is still held after that; StoreReadOnlyError
        for a store opened read-only.
        """
        self.writable()
        return _Tx(self)

    def writable(self) -> None:
        """Raises: StoreReadOnlyError (one line naming the path) for a store opened read-only;
        for callers that refuse a write before reading its input (an import)."""
        if self.readonly:
            raise StoreReadOnlyError(
                f"the store {self.path} is read-only (a read-only file system or file): it can be read, "
                "but runs, deletes and imports are refused; copy it to a writable SPEEDLAB_HOME to change it")

    def close(self):
        self.conn.close()

    def __enter__(self) -> "Store":
        """`with Store() as store:` closes the connection when the block ends, also on an error."""
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def run_dir(self, run_id: int) -> Path:
        """Folder for a run's files (worker log, saved model), next to the store."""
        d = self.path.parent / "runs" / str(run_id)
        if not self.readonly:
            d.mkdir(parents=True, exist_ok=True)
        return d

    # --- runs -----------------------------------------------------------
    def create_run(self, config_json: str, role: str = "run", group_id: Optional[str] = None,
                   status: str = "queued", **cols) -> int:
        """Insert a run; `cols` sets more of its columns in the same insert (dict/list values
        stored as JSON), so no reader ever sees it without them. Returns its id."""
        names = ["created", "group_id", "role", "config", "status", *cols]
        vals = [time.time(), group_id, role, config_json, status, *_column_values(cols)]
        with self.tx():
            cur = self.conn.execute(
                f"INSERT INTO runs ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})", vals)
            return int(cur.lastrowid)

    def update_run(self, run_id: int, **cols):
        """Set columns of a run; dict/list values are stored as JSON."""
        if not cols:
            return
        vals = _column_values(cols)
        sets = ", ".join(f"{k}=?" for k in cols)
        with self.tx():
            self.conn.execute(f"UPDATE runs SET {sets} WHERE id=?", (*vals, run_id))

    def finish_run(self, run_id: int, status: str, error: Optional[str] = None,
                   only_if_active: bool = False, **cols) -> bool:
        """Mark a run final. With only_if_active, leave an already-final run alone.

        Returns: True when the row changed.
        """
        assert status in FINAL_STATUSES, status
        vals = [json.dumps(v) if isinstance(v, (dict, list)) else v for v in cols.values()]
        sets = "".join(f", {k}=?" for k in cols)
        cond = " AND status IN ('queued','running')" if only_if_active else ""
        with self.tx():
            cur = self.conn.execute(
                f"UPDATE runs SET status=?, error=?, ended=?{sets} WHERE id=?{cond}",
                (status, error, time.time(), *vals, run_id))
            return cur.rowcount > 0

    def get_run(self, run_id: int) -> Optional[dict]:
        """The run (a trashed one too: see its 'trashed'), or None.
        Raises: DamagedRunError for a row that cannot be read whole."""
        row = self.conn.execute("SELECT * FROM runs WHERE id=?", (run_id,)).fetchone()
        if row is None:
            return None
        d, problem = parse_row(dict(row))
        if problem:
            raise DamagedRunError(run_id, problem)
        return d

    def list_runs(self, statuses: Optional[Iterable[str]] = None) -> list[dict]:
        """All runs, newest first (optionally only those with the given statuses);
        neither trashed runs (`trashed_runs`) nor damaged rows (`damaged_runs`)."""
        if statuses:
            st = tuple(statuses)
            # "+id": sort the few matches rather than walk every run in id order (runs_state finds them).
            q = (f"SELECT * FROM runs WHERE status IN ({','.join('?' * len(st))}) AND trashed IS NULL "
                 "ORDER BY +id DESC")
            rows = self.conn.execute(q, st).fetchall()
        else:
            rows = self.conn.execute("SELECT * FROM runs WHERE trashed IS NULL ORDER BY id DESC").fetchall()
        out = []
        for r in rows:
            d, problem = parse_row(dict(r))
            if not problem:
                out.append(d)
        return out

    def query_runs(self, where: str = "", params: Iterable = (), limit: Optional[int] = None,
                   offset: int = 0, order: str = "id DESC") -> list[dict]:
        """Runs (not trashed, not damaged) matching the SQL condition `where` on the runs
        table (with `params`), in `order`, at most `limit` from `offset`: only those rows
        are read and parsed, so a page of a 100,000-run store costs a page.
        Build `where` with `filter_sql` (never from user text). The damaged rows met on
        the way are left out and kept in `self.skipped_damaged` (as `damaged_runs` lists them)."""
        # "+trashed": never the index on it (almost every run matches); the rowid order or
        # the index of the caller's condition (group, status, init_from) finds the rows.
        cond = "+trashed IS NULL" + (f" AND ({where})" if where else "")
        q = f"SELECT * FROM runs WHERE {cond} ORDER BY {order}"
        out: list[dict] = []
        self.skipped_damaged = []
        skip = int(offset)
        for row in self.conn.execute(q, tuple(params)):
            d, problem = parse_row(dict(row))
            if problem:
                self.skipped_damaged.append({"id": row["id"], "status": row["status"], "created": row["created"],
                                             "reason": problem, "trashed": row["trashed"]})
                continue
            if skip:
                skip -= 1
                continue
            out.append(d)
            if limit is not None and len(out) >= limit:
                break
        return out

    def count_runs(self, where: str = "", params: Iterable = ()) -> int:
        """How many runs (not trashed) match `where` (damaged rows included: cheap)."""
        cond = "trashed IS NULL" + (f" AND ({where})" if where else "")
        return int(self.conn.execute(f"SELECT COUNT(*) FROM runs WHERE {cond}", tuple(params)).fetchone()[0])

    def distinct_values(self, column: str) -> list:
        """The values of a run column (status, role) or a config field (CONFIG_FILTERS) over
        the stored runs (not trashed), sorted: a filter's options without reading a run.
        One scan gives every filter's values, kept until the store file changes (`_memo`)."""
        columns = ("status", "role", *CONFIG_FILTERS)
        if column not in columns:
            raise ValueError(f"cannot filter runs by {column!r}")

        def scan() -> dict:
            exprs = ", ".join(_filter_expr(c) for c in columns)
            combos = self.conn.execute(f"SELECT DISTINCT {exprs} FROM runs WHERE trashed IS NULL").fetchall()
            return {c: sorted({row[i] for row in combos if row[i] is not None}, key=str)
                    for i, c in enumerate(columns)}

        return list(self._memo("distinct", scan)[column])

    def _memo(self, what: str, compute):
        """`compute()`, reused while the store file and its WAL are unchanged (size and
        mtime): a page rerun of an idle 100,000-run store skips its whole-table scans."""
        state = []
        for p in (self.path, Path(f"{self.path}-wal")):
            try:
                st = p.stat()
                # An empty WAL is re-created by every open: it holds no change.
                state.append((st.st_mtime_ns, st.st_size) if st.st_size else None)
            except OSError:
                state.append(None)
        key = (str(self.path), what)
        hit = _MEMO.get(key)
        if hit is not None and hit[0] == state:
            return hit[1]
        value = compute()
        _MEMO[key] = (state, value)
        return value

    def damaged_runs(self) -> list[dict]:
        """Rows that cannot be read whole (not trashed), newest first: {'id', 'status', 'created', 'reason'}
        (engine.store.rows names the reason). They are listed apart so that they break
        no table, and can be deleted (`delete_run`). SQLite picks the suspects
        (`LOOKS_WHOLE` fails), so a store of whole rows costs one scan in C, and none
        while the file is unchanged (`_memo`)."""
        return [dict(d) for d in self._memo("damaged", self._damaged_scan)]

    def _damaged_scan(self) -> list[dict]:
        out = []
        for r in self.conn.execute(f"SELECT * FROM runs WHERE trashed IS NULL AND NOT COALESCE(({LOOKS_WHOLE}), 0) "
                                   "ORDER BY id DESC").fetchall():
            _, problem = parse_row(dict(r))
            if problem:
                out.append({"id": r["id"], "status": r["status"], "created": r["created"], "reason": problem,
                            "trashed": r["trashed"]})
        return out

    def active_runs(self) -> list[dict]:
        """Queued and running runs, oldest first."""
        return list(reversed(self.list_runs(ACTIVE_STATUSES)))

    def set_worker(self, run_id: int, task_index: int, status: str, **cols):
        """Record the status of one process of a multi-worker run."""
        cols = {"status": status, "updated": time.time(), **cols}
        names = ", ".join(cols)
        with self.tx():
            self.conn.execute(
                f"INSERT INTO workers (run_id, task_index, {names}) VALUES (?, ?, {','.join('?' * len(cols))}) "
                f"ON CONFLICT (run_id, task_index) DO UPDATE SET "
                + ", ".join(f"{k}=excluded.{k}" for k in cols),
                (run_id, task_index, *cols.values()))

    def workers(self, run_id: int) -> list[dict]:
        """Worker rows of a multi-worker run, by task index."""
        rows = self.conn.execute("SELECT * FROM workers WHERE run_id=? ORDER BY task_index", (run_id,))
        return [dict(r) for r in rows.fetchall()]

    def delete_run(self, run_id: int, reclaim: bool = True):
        """Delete a run, its metrics and its folder (worker logs, saved model); with
        `reclaim`, give the freed pages back to the disk (`reclaim`)."""
        import shutil

        with self.tx():
            for table in ("executions", "epochs", "system", "workers"):
                self.conn.execute(f"DELETE FROM {table} WHERE run_id=?", (run_id,))
            self.conn.execute("DELETE FROM runs WHERE id=?", (run_id,))
        shutil.rmtree(self.path.parent / "runs" / str(run_id), ignore_errors=True)
        if reclaim:
            self.reclaim()

    def delete_queued(self, run_ids) -> set[int]:
        """Delete those of `run_ids` still queued (never started: no metrics, no folder), in one
        transaction; returns the ids deleted. A run that started meanwhile stays."""
        with self.tx() as conn:
            delete = "DELETE FROM runs WHERE id=? AND status='queued'"
            return {i for i in run_ids if conn.execute(delete, (i,)).rowcount}

    # --- space ----------------------------------------------------------
    def space(self) -> dict:
        """The file's pages: {'page_size' (bytes), 'pages', 'free_pages' (on SQLite's free
        list: held by the file, not by data), 'free_bytes', 'file_bytes' (runs.sqlite
        without its -wal), 'auto_vacuum' ('none' | 'full' | 'incremental')}."""
        q = lambda p: self.conn.execute(f"PRAGMA {p}").fetchone()[0]  # noqa: E731
        size, pages, free = q("page_size"), q("page_count"), q("freelist_count")
        return {"page_size": size, "pages": pages, "free_pages": free, "free_bytes": free * size,
                "file_bytes": self.path.stat().st_size if self.path.exists() else 0,
                "auto_vacuum": {0: "none", 1: "full", 2: "incremental"}.get(q("auto_vacuum"), "?")}

    def reclaim(self, full: bool = False) -> int:
        """Give the free pages back to the file system; returns how many were freed.

        A store created with auto_vacuum=INCREMENTAL (every new store) runs `PRAGMA incremental_vacuum`: cheap, only the free pages move.
        An older store (auto_vacuum none), or `full`, is rebuilt once with VACUUM, which
        also switches it to incremental. The WAL is then checkpointed and truncated, so
        the file shrinks now. A store busy with another writer is left as it is (the
        next delete or `python -m engine doctor --compact` does it).
        Raises: StoreFullError / StoreCorruptError (VACUUM needs room for a copy)."""
        if self.readonly:
            return 0
        try:
            before = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
            if before == 0 and not full:
                return 0
            if self.conn.execute("PRAGMA auto_vacuum").fetchone()[0] == 2 and not full:
                # sqlite3_exec steps it to the end (execute() steps once: one page per call).
                self.conn.executescript("PRAGMA incremental_vacuum;")
            else:
                self.conn.execute("PRAGMA auto_vacuum=INCREMENTAL")
                self.conn.execute("VACUUM")
            after = self.conn.execute("PRAGMA freelist_count").fetchone()[0]
            self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            return before - after
        except sqlite3.OperationalError as e:
            if is_busy(e):
                return 0
            raise_fault(e, self.path)
            raise

    # --- trash ----------------------------------------------------------
    # Deleting from the dashboard or `python -m engine delete` moves runs here; they come
    # back with restore_runs until the trash is emptied or they are older than the retention.
    def trash_runs(self, run_ids: Iterable[int]) -> list[int]:
        """Move finished runs to the trash (metrics and files kept). Queued and running
        runs are left alone. Also empties what passed the retention (`purge_expired`).
        Returns: the ids moved, in the order given."""
        ids = list(dict.fromkeys(int(i) for i in run_ids))
        moved = []
        now = time.time()
        with self.tx():
            for rid in ids:
                row = self.conn.execute("SELECT * FROM runs WHERE id=?", (rid,)).fetchone()
                damaged = row is not None and parse_row(dict(row))[1] is not None  # never runs: any status
                cur = self.conn.execute("UPDATE runs SET trashed=? WHERE id=? AND trashed IS NULL AND "
                                        "(status NOT IN ('queued','running') OR ?)", (now, rid, damaged))
                if cur.rowcount:
                    moved.append(rid)
        self.purge_expired()
        return moved

    def restore_runs(self, run_ids: Iterable[int]) -> list[int]:
        """Bring runs back from the trash. Returns: the ids restored."""
        restored = []
        with self.tx():
            for rid in dict.fromkeys(int(i) for i in run_ids):
                if self.conn.execute("UPDATE runs SET trashed=NULL WHERE id=? AND trashed IS NOT NULL",
                                     (rid,)).rowcount:
                    restored.append(rid)
        return restored

    def trashed_runs(self) -> list[dict]:
        """Runs in the trash, most recently trashed first: {'id', 'status', 'role', 'created',
        'trashed', 'config' (dict, or None for a damaged row), 'reason' (damaged rows)}."""
        out = []
        for r in self.conn.execute("SELECT * FROM runs WHERE trashed IS NOT NULL ORDER BY trashed DESC, id DESC"):
            d, problem = parse_row(dict(r))
            out.append({"id": r["id"], "status": r["status"], "role": r["role"], "created": r["created"],
                        "trashed": r["trashed"], "config": None if problem else d["config"], "reason": problem})
        return out

    def empty_trash(self, older_than_s: Optional[float] = None) -> list[int]:
        """Delete for good the trashed runs (only those trashed more than `older_than_s`
        seconds ago, when given), with their metrics and files. Returns their ids."""
        cutoff = time.time() - older_than_s if older_than_s is not None else math.inf
        ids = [r[0] for r in self.conn.execute("SELECT id FROM runs WHERE trashed IS NOT NULL AND trashed < ?",
                                               (cutoff,))]
        for rid in ids:
            self.delete_run(rid, reclaim=False)
        if ids:
            self.reclaim()
        return ids

    def purge_expired(self) -> list[int]:
        """Empty what has been in the trash longer than `trash_retention_s()` (nothing in a
        read-only store: it is emptied where it can be written)."""
        return [] if self.readonly else self.empty_trash(trash_retention_s())

    # --- metrics --------------------------------------------------------
    def add_metrics(self, run_id: int, executions: list[tuple] = (), epochs: list[tuple] = (),
                    system: list[tuple] = ()):
        """Append metric rows (tuples in EXEC_COLS / EPOCH_COLS / SYSTEM_COLS order) in one commit.
        A row shorter than its columns (written before a column was added) ends in NULLs."""
        def pad(rows, n):
            return [(run_id, *r, *([None] * (n - len(r)))) for r in rows]

        with self.tx():
            if executions:
                self.conn.executemany(
                    f"INSERT OR REPLACE INTO executions (run_id, {', '.join(EXEC_COLS)}) "
                    f"VALUES ({','.join('?' * (len(EXEC_COLS) + 1))})",
                    pad(executions, len(EXEC_COLS)))
            if epochs:
                self.conn.executemany(
                    f"INSERT OR REPLACE INTO epochs (run_id, {', '.join(EPOCH_COLS)}) "
                    f"VALUES ({','.join('?' * (len(EPOCH_COLS) + 1))})",
                    pad(epochs, len(EPOCH_COLS)))
            if system:
                self.conn.executemany(
                    f"INSERT INTO system (run_id, {', '.join(SYSTEM_COLS)}) "
                    f"VALUES ({','.join('?' * (len(SYSTEM_COLS) + 1))})",
                    [(run_id, *r) for r in system])

    def metrics(self, table: str, run_id: int) -> list[dict]:
        """Rows of `table` ('executions', 'epochs' or 'system') for a run, in time order."""
        cols = {"executions": EXEC_COLS, "epochs": EPOCH_COLS, "system": SYSTEM_COLS}[table]
        order = {"executions": "idx", "epochs": "epoch", "system": "t"}[table]
        rows = self.conn.execute(
            f"SELECT {', '.join(cols)} FROM {table} WHERE run_id=? ORDER BY {order}",
            (run_id,)).fetchall()
        return [dict(r) for r in rows]

    def rows_after(self, table: str, run_id: int, after: int = -1) -> list[tuple]:
        """New rows of a run as tuples: 'executions' with idx > `after` (EXEC_COLS), or
        'system' with rowid > `after` (rowid first, then SYSTEM_COLS). For live views
        that keep what they read: a tick costs the rows added since the last one."""
        if table == "executions":
            return self.conn.execute(f"SELECT {', '.join(EXEC_COLS)} FROM executions WHERE run_id=? AND idx>? "
                                     "ORDER BY idx", (run_id, after)).fetchall()
        if table == "system":
            return self.conn.execute(f"SELECT rowid, {', '.join(SYSTEM_COLS)} FROM system WHERE run_id=? AND "
                                     "rowid>? ORDER BY rowid", (run_id, after)).fetchall()
        raise ValueError(f"rows_after reads executions or system, not {table}")
    def last_t(self, run_id: int) -> Optional[float]:
        """The latest stored time of a run's executions and system samples, in s
        since its training start (system samples come about once a second, also
        during the warm-up), or None before any: how far a live run has got."""
        row = self.conn.execute(
            "SELECT MAX(t) FROM (SELECT MAX(t) AS t FROM executions WHERE run_id=? "
            "UNION ALL SELECT MAX(t) FROM system WHERE run_id=?)", (run_id, run_id)).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    def frame(self, table: str, run_id: int):
        """Same as `metrics` as a pandas DataFrame (columns always present)."""
        import pandas as pd

        cols = {"executions": EXEC_COLS, "epochs": EPOCH_COLS, "system": SYSTEM_COLS}[table]
        return pd.DataFrame(self.metrics(table, run_id), columns=list(cols))


def _read_only(path: Path) -> bool:
    """Whether the store must be opened read-only: it exists, and it or its folder (where
    SQLite creates the -wal and -shm files) cannot be written."""
    if not path.exists():
        return False
    if os.access(path, os.W_OK) and os.access(path.parent, os.W_OK):
        try:  # root passes os.access on a read-only mount: ask the file system
            return bool(os.statvfs(path.parent).f_flag & os.ST_RDONLY)
        except OSError:
            return False
    return True


def _open_read_only(path: Path, busy_timeout_s: float) -> sqlite3.Connection:
    """A read-only connection: `mode=ro`, else (the WAL's -shm cannot be created or read)
    `mode=ro&immutable=1`, which reads the main file only (what a WAL not yet
    checkpointed holds is not seen). Raises: StoreCorruptError for an unreadable file."""
    from urllib.parse import quote

    last: Optional[sqlite3.Error] = None
    for query in ("mode=ro", "mode=ro&immutable=1"):
        try:
            conn = sqlite3.connect(f"file:{quote(str(path))}?{query}", uri=True, timeout=busy_timeout_s,
                                   isolation_level=None)
            conn.row_factory = sqlite3.Row
            conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            found = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            if found and int(found[0]) > SCHEMA_VERSION:
                conn.close()
                raise StoreError(f"{path} has schema {found[0]}, newer than this SpeedLab ({SCHEMA_VERSION}); "
                                 "upgrade SpeedLab or use another SPEEDLAB_HOME")
            return conn
        except sqlite3.Error as e:
            last = e
    raise_fault(last, path)
    raise last


class _Tx:
    def __init__(self, store: Store):
        self.store = store
        self.conn = store.conn

    def __enter__(self):
        deadline = time.monotonic() + self.store.patience_s
        delay = RETRY_MIN_S
        while True:
            try:
                self.conn.execute("BEGIN IMMEDIATE")
                return self.conn
            except sqlite3.OperationalError as e:
                left = deadline - time.monotonic()
                if not is_busy(e):
                    raise_fault(e, self.store.path)
                    raise
                if left <= 0:
                    raise StoreBusyError(
                        f"the store {self.store.path} is locked by another process (still after "
                        f"{self.store.patience_s:.0f} s); close the program holding it (e.g. a database "
                        "browser with unsaved changes) and try again") from None
                time.sleep(min(delay, left))
                delay = min(delay * 2, RETRY_MAX_S)

    def __exit__(self, exc_type, exc, tb):
        if exc_type:
            if self.conn.in_transaction:  # SQLite may have rolled back itself (e.g. SQLITE_FULL)
                self.conn.execute("ROLLBACK")
            raise_fault(exc, self.store.path)  # a full disk or damaged file: one line
            return False
        try:
            self.conn.execute("COMMIT")
        except sqlite3.Error as e:
            # Leave no transaction open on this connection: the next write starts clean.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise_fault(e, self.store.path)
            raise
        return False


_MEMO: dict = {}  # Store._memo: (store path, what) -> (file state, value)


def _filter_expr(column: str) -> str:
    if column in ("status", "role", "group_id"):
        return column
    if column in CONFIG_FILTERS:
        return (f"COALESCE({config_field(column)}, 'tensorflow')" if column == "backend"
                else config_field(column))
    raise ValueError(f"cannot filter runs by {column!r}")


def config_field(name: str) -> str:
    """SQL for a run's config field `name` (NULL for a row whose config is not valid JSON,
    where json_extract would stop the whole query with "malformed JSON")."""
    if not name.isidentifier():
        raise ValueError(f"not a config field: {name!r}")
    return f"CASE WHEN json_valid(config) THEN json_extract(config, '$.{name}') END"


def filter_sql(filters: dict) -> tuple[str, list]:
    """(SQL condition, params) for `query_runs` / `count_runs` from {column: [values]}
    (columns: status, role, group_id and CONFIG_FILTERS; an empty list means any)."""
    parts, params = [], []
    for column, values in filters.items():
        values = list(values or [])
        if not values:
            continue
        parts.append(f"{_filter_expr(column)} IN ({','.join('?' * len(values))})")
        params += values
    return " AND ".join(parts), params

