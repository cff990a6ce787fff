"""The store's errors and what an SQLite error means for the store file: one line naming the
file and the way out (`fault_line`), never a traceback (docs/reliability.md).
"""
from __future__ import annotations

import os
import sqlite3
from typing import Optional


class StoreError(RuntimeError):
    """The store file is unusable (e.g. written by a newer schema)."""


class StoreBusyError(StoreError):
    """Another process held the store's write lock longer than the caller's patience."""


class StoreCorruptError(StoreError):
    """The store file is damaged or not a database; `str(err)` names it and the way out
    (python -m engine doctor)."""


class StoreReadOnlyError(StoreError):
    """A write to a store opened read-only (a read-only mount or file); `str(err)` names the path."""


class StoreFullError(StoreError):
    """A write failed because the disk (or filesystem) holding the store is full."""


class DamagedRunError(StoreError):
    """A run row that cannot be read whole (engine.store.rows); `run_id`, `reason`."""

    def __init__(self, run_id: int, reason: str):
        self.run_id, self.reason = run_id, reason
        super().__init__(f"run #{run_id} is damaged ({reason}); it cannot be shown: delete it with "
                         f"python -m engine delete {run_id} (or on the Runs page)")


DOCTOR = "python -m engine doctor"


def fault_line(exc: BaseException, path: os.PathLike) -> Optional[str]:
    """One line for an SQLite error that means the store file itself is unusable
    (corrupt, not a database, unreadable, disk full), else None (e.g. a lock)."""
    if not isinstance(exc, sqlite3.DatabaseError) or is_busy(exc):
        return None
    code = getattr(exc, "sqlite_errorname", "") or ""
    text = str(exc).lower()
    if code == "SQLITE_FULL" or "disk is full" in text:
        return (f"the disk holding the store {path} is full ({exc}); free some space (deleting runs "
                f"for good, `python -m engine trash --empty`, then `{DOCTOR} --compact`, returns theirs "
                "to the disk): the runs already stored are kept, and SpeedLab works again once there is room")
    if code in ("SQLITE_CORRUPT", "SQLITE_NOTADB") or "malformed" in text or "not a database" in text:
        return (f"the store {path} is damaged ({exc}); run `{DOCTOR}` to check it and salvage its "
                "runs into a new store (the damaged file is kept beside it)")
    if code.startswith(("SQLITE_IOERR", "SQLITE_CANTOPEN", "SQLITE_READONLY", "SQLITE_PERM")):
        return (f"the store {path} cannot be read or written ({exc}); check the file's permissions "
                f"and disk, then run `{DOCTOR}`")
    return None


def raise_fault(exc: BaseException, path: os.PathLike) -> None:
    """Re-raise `exc` as StoreFullError / StoreCorruptError when it is one (no-op otherwise)."""
    line = fault_line(exc, path)
    if line:
        cls = StoreFullError if "is full" in line else StoreCorruptError
        raise cls(line) from None


def is_busy(exc: BaseException) -> bool:
    """Whether `exc` is SQLite's "database is locked" / "database is busy" (transient)."""
    if not isinstance(exc, sqlite3.OperationalError):
        return False
    text = str(exc).lower()
    return "locked" in text or "busy" in text