"""Store doctor: check the run store's integrity and salvage a damaged one.

``python -m engine doctor`` (engine.cli.doctor) runs SQLite's `PRAGMA integrity_check`
(https://www.sqlite.org/pragma.html#pragma_integrity_check). A damaged store is moved
aside (``runs.sqlite.damaged-<UTC time>``, with its -wal and -shm files) and every row
SQLite can still read is copied into a new store at the old path, table by table, in
rowid order, skipping ranges it cannot read. A zeroed header (the first 100 bytes) is
rebuilt on a copy first: page size and page count follow from the file, so the pages
behind it become readable again. Rows whose run is gone and damaged run rows are
reported, not hidden: the Runs page and `python -m engine runs` list the latter apart.

Never while a queue or worker writes to the store (the CLI refuses then).
"""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import struct
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from engine.store import Store

TABLES = ("runs", "executions", "epochs", "system", "workers", "meta")
CHUNK = 500           # rows read per query while salvaging
MAX_EMPTY_CHUNKS = 40 # consecutive chunks with no readable row before a table is given up


@dataclass
class Check:
    """Outcome of `check`: `ok`, up to 20 `problems` (SQLite's own lines), `runs` (count, when readable)."""
    ok: bool
    problems: list[str] = field(default_factory=list)
    runs: Optional[int] = None


@dataclass
class Salvage:
    """Outcome of `salvage`: rows copied and row lookups that failed (`unreadable`) per table,
    where the damaged file went, whether its header was rebuilt, what the new store's
    integrity check found."""
    kept_as: Path
    copied: dict[str, int]
    unreadable: dict[str, int]
    header_rebuilt: bool = False
    new_problems: list[str] = field(default_factory=list)  # integrity_check of the new store ([] when ok)


def check(path: os.PathLike) -> Check:
    """`PRAGMA integrity_check` on the store at `path` (read only; nothing written)."""
    path = Path(path)
    if not path.exists():
        return Check(True, [], 0)
    try:
        conn = sqlite3.connect(path)
        try:
            lines = [r[0] for r in conn.execute("PRAGMA integrity_check(20)")]
            runs = conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] if lines == ["ok"] else None
        finally:
            conn.close()
    except sqlite3.DatabaseError as e:
        return Check(False, [str(e)])
    return Check(lines == ["ok"], [] if lines == ["ok"] else lines, runs)


def salvage(path: os.PathLike) -> Salvage:
    """Move the damaged store at `path` aside and copy what can be read into a new store there.
    Returns: a Salvage. Raises: OSError when the file cannot be moved."""
    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    kept = path.with_name(f"{path.name}.damaged-{stamp}")
    for suffix in ("", "-wal", "-shm"):
        src = Path(str(path) + suffix)
        if src.exists():
            os.replace(src, Path(str(kept) + suffix))
    source, rebuilt = _readable_copy(kept)
    copied = {t: 0 for t in TABLES if t != "meta"}
    unreadable = dict(copied)
    store = Store(path)
    try:
        if source is not None:
            src = sqlite3.connect(source)
            try:
                for table in copied:
                    copied[table], unreadable[table] = _copy_table(src, store.conn, table)
            finally:
                src.close()
        problems = [r[0] for r in store.conn.execute("PRAGMA integrity_check(20)")]
    finally:
        store.close()
    if source is not None and source != kept:
        source.unlink(missing_ok=True)
    return Salvage(kept, copied, unreadable, rebuilt, [] if problems == ["ok"] else problems)


def _readable_copy(path: Path) -> tuple[Optional[Path], bool]:
    """(a file SQLite can open: `path` itself, or a copy with a rebuilt header; whether
    rebuilt) or (None, False) when neither has a readable schema."""
    if _schema_ok(path):
        return path, False
    fixed = path.with_name(path.name + ".header-rebuilt")
    try:
        shutil.copyfile(path, fixed)
        for page in (4096, 1024, 2048, 8192, 16384, 32768, 65536):
            _write_header(fixed, page)
            if _schema_ok(fixed):
                return fixed, True
    except OSError:
        pass
    fixed.unlink(missing_ok=True)
    return None, False


def _schema_ok(path: Path) -> bool:
    try:
        conn = sqlite3.connect(path)
        try:
            names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
            return "runs" in names
        finally:
            conn.close()
    except sqlite3.DatabaseError:
        return False


def _write_header(path: Path, page_size: int) -> None:
    """A valid 100-byte database header (https://www.sqlite.org/fileformat2.html#the_database_header)
    for a file of `page_size` pages, legacy (rollback) journal so no -wal is looked for."""
    n_pages = max(1, path.stat().st_size // page_size)
    h = bytearray(100)
    h[0:16] = b"SQLite format 3\x00"
    struct.pack_into(">H", h, 16, 1 if page_size == 65536 else page_size)
    h[18], h[19], h[20], h[21], h[22], h[23] = 1, 1, 0, 64, 32, 32
    struct.pack_into(">I", h, 24, 1)          # file change counter
    struct.pack_into(">I", h, 28, n_pages)    # size in pages
    struct.pack_into(">I", h, 40, 1)          # schema cookie
    struct.pack_into(">I", h, 44, 4)          # schema format
    struct.pack_into(">I", h, 56, 1)          # UTF-8
    struct.pack_into(">I", h, 92, 1)          # version-valid-for = change counter
    struct.pack_into(">I", h, 96, 3040001)
    with open(path, "r+b") as fh:
        fh.write(h)


def _copy_table(src: sqlite3.Connection, dst: sqlite3.Connection, table: str) -> tuple[int, int]:
    """Copy the readable rows of `table` (columns both sides have), in rowid order.
    A range whose b-tree pages are gone is probed row by row (a point lookup needs only
    its own path through the tree). Returns (rows copied, rowids that could not be read)."""
    try:
        src_cols = [r[1] for r in src.execute(f"PRAGMA table_info({table})")]
    except sqlite3.DatabaseError:
        return 0, 1
    dst_cols = {r[1] for r in dst.execute(f"PRAGMA table_info({table})")}
    cols = [c for c in src_cols if c in dst_cols]
    if not cols:
        return 0, 0
    top = _top_rowid(src, table)
    select = f"SELECT rowid, {', '.join(cols)} FROM {table}"
    insert = f"INSERT OR IGNORE INTO {table} ({', '.join(cols)}) VALUES ({','.join('?' * len(cols))})"
    last, copied, bad, empty_runs = 0, 0, 0, 0
    dst.execute("BEGIN")
    try:
        while empty_runs < MAX_EMPTY_CHUNKS and (top is None or last < top):
            try:
                rows = src.execute(f"{select} WHERE rowid > ? ORDER BY rowid LIMIT {CHUNK}", (last,)).fetchall()
                if not rows:
                    break  # the tree reads to its end
            except sqlite3.DatabaseError:
                rows = []
                for rowid in range(last + 1, last + CHUNK + 1):
                    try:
                        rows += src.execute(f"{select} WHERE rowid = ?", (rowid,)).fetchall()
                    except sqlite3.DatabaseError:
                        bad += 1
                last += CHUNK
            if rows:
                dst.executemany(insert, [tuple(r[1:]) for r in rows])
                copied += len(rows)
                last = max(last, rows[-1][0])
                empty_runs = 0
            else:
                empty_runs += 1
        dst.execute("COMMIT")
    except BaseException:
        dst.execute("ROLLBACK")
        raise
    return copied, bad


def _top_rowid(src: sqlite3.Connection, table: str) -> Optional[int]:
    """The largest rowid `table` may hold: MAX(rowid), else sqlite_sequence, else None."""
    for q in (f"SELECT MAX(rowid) FROM {table}", "SELECT seq FROM sqlite_sequence WHERE name=?"):
        try:
            row = src.execute(q, (table,) if "?" in q else ()).fetchone()
            if row and row[0] is not None:
                return int(row[0])
        except sqlite3.DatabaseError:
            continue
    return None


UNKNOWN_MACHINE = "machine unknown"  # engine.hardware.fingerprint.UNKNOWN (the store imports no hardware)


def machines(store: Store) -> list[dict]:
    """How many stored runs (those that started: they have an environment) came from each machine:
    [{'id': fingerprint id or None, 'name': its name or 'machine unknown' (stored before
    fingerprints, or an environment that does not parse), 'runs': count}], most runs first."""
    counts: dict = {}
    for (env,) in store.conn.execute("SELECT environment FROM runs WHERE environment IS NOT NULL"):
        try:
            fp = (json.loads(env) or {}).get("fingerprint") or {}
        except (ValueError, AttributeError):
            fp = {}
        key = fp.get("id") if isinstance(fp, dict) else None
        name = (fp.get("name") or key) if key else UNKNOWN_MACHINE
        row = counts.setdefault(key, {"id": key, "name": name, "runs": 0})
        row["runs"] += 1
    return sorted(counts.values(), key=lambda r: (-r["runs"], r["name"]))
