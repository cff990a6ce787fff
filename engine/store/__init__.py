"""The run store: one SQLite file, the single source of truth (docs/architecture.md).

`db` holds the file and its migrations (the Store class); `schema` its versioned schema (runs,
their metrics, the comparisons and the tuned baselines); `errors` the store's errors and
what an SQLite error means for the file; `rows` parses a stored row without trusting it;
`comparisons` and `tuned_baselines` read and write their tables; `doctor` finds and
repairs what a crash or another program left. This face is what the rest of the engine
imports: `from engine.store import Store`.
"""
from engine.store.db import (ACTIVE_STATUSES, FINAL_STATUSES, LONG_PATIENCE_S, Store, config_field, default_path,
                             filter_sql, home, old_store_line, trash_retention_s)
from engine.store.errors import (DOCTOR, DamagedRunError, StoreBusyError, StoreCorruptError, StoreError,
                                 StoreFullError, StoreReadOnlyError, fault_line, is_busy)
from engine.store.rows import SCRIPT_RUN_SOURCE, from_script_run, never_ran, started
from engine.store.schema import EPOCH_COLS, EXEC_COLS, SCHEMA_VERSION, SYSTEM_COLS

__all__ = ["ACTIVE_STATUSES", "DOCTOR", "EPOCH_COLS", "EXEC_COLS", "FINAL_STATUSES", "LONG_PATIENCE_S",
           "SCRIPT_RUN_SOURCE", "SCHEMA_VERSION", "SYSTEM_COLS", "DamagedRunError", "Store", "StoreBusyError",
           "StoreCorruptError",
           "StoreError", "StoreFullError", "StoreReadOnlyError", "config_field", "default_path", "fault_line",
           "filter_sql", "from_script_run", "home", "is_busy", "never_ran", "old_store_line", "started",
           "trash_retention_s"]
