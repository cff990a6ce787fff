"""The store's versioned schema: its tables, the columns added since schema 1, the indexes
and the metric columns (engine.store.db creates and migrates them when it opens a store).

A new column: add it to `SCHEMA`, a row to `ADDED_COLUMNS` and raise `SCHEMA_VERSION`
(docs/architecture.md, "Where things live").
"""
SCHEMA_VERSION = 8  # 8: the comparisons and tuned_baselines tables joined the versioned schema

# Comparisons of interleaved pairs (engine.store.comparisons); their runs carry group_id.
COMPARISONS_TABLE = """
CREATE TABLE IF NOT EXISTS comparisons (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL, ended REAL,
    kind TEXT NOT NULL, group_id TEXT NOT NULL UNIQUE, status TEXT NOT NULL,
    hostname TEXT, settings TEXT, plan TEXT, result TEXT, ended_by TEXT
)"""
# Tuned baseline learning rates (engine.store.tuned_baselines, `python -m engine tune-baseline`).
TUNED_BASELINES_TABLE = """
CREATE TABLE IF NOT EXISTS tuned_baselines (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL, hostname TEXT,
    dataset TEXT NOT NULL, model TEXT NOT NULL, batch_size INTEGER NOT NULL, optimizer TEXT NOT NULL,
    learning_rate REAL NOT NULL, target_accuracy REAL, result TEXT
)"""

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    created REAL NOT NULL,
    group_id TEXT,
    role TEXT NOT NULL DEFAULT 'run',          -- 'run' | 'baseline'
    config TEXT NOT NULL,                       -- RunConfig JSON
    environment TEXT,                           -- JSON: versions, devices, CPU model
    status TEXT NOT NULL,                       -- queued|running|completed|failed|cancelled
    pid INTEGER, pid_started REAL,
    started REAL, ended REAL,
    plan TEXT,                                  -- JSON: steps per epoch, total steps, ...
    summary TEXT,                               -- JSON: final figures
    error TEXT, stderr_tail TEXT,
    cancel_requested REAL,                      -- time a cancel was asked for
    baseline_id INTEGER,                        -- the baseline this run is compared with
    origin TEXT                                 -- JSON provenance of an imported run (NULL: run here)
);
CREATE TABLE IF NOT EXISTS executions (
    run_id INTEGER NOT NULL, idx INTEGER NOT NULL,
    epoch INTEGER NOT NULL, step INTEGER NOT NULL,   -- step = global steps done after it
    batches INTEGER NOT NULL, t REAL NOT NULL,       -- t = wall s since training start
    duration REAL NOT NULL, samples_per_sec REAL NOT NULL,
    loss REAL, lr REAL, warmup INTEGER NOT NULL, data_wait REAL,
    updates INTEGER, skipped INTEGER, loss_scale REAL,  -- applied / skipped optimizer updates (float16)
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE IF NOT EXISTS epochs (
    run_id INTEGER NOT NULL, epoch INTEGER NOT NULL, t REAL NOT NULL, step INTEGER,
    loss REAL, accuracy REAL, val_loss REAL, val_accuracy REAL, lr REAL,
    val_ce REAL,                                -- plain cross-entropy on validation (no smoothing)
    PRIMARY KEY (run_id, epoch)
);
CREATE TABLE IF NOT EXISTS system (
    run_id INTEGER NOT NULL, t REAL NOT NULL,
    cpu_percent REAL, rss_mb REAL, mem_percent REAL, gpu_mem_mb REAL,
    worker INTEGER NOT NULL DEFAULT 0             -- task index in a multi-worker run
);
CREATE INDEX IF NOT EXISTS system_run ON system (run_id, t);
CREATE TABLE IF NOT EXISTS workers (              -- one row per process of a multi-worker run
    run_id INTEGER NOT NULL, task_index INTEGER NOT NULL, address TEXT, host TEXT,
    pid INTEGER, status TEXT NOT NULL, error TEXT, updated REAL,
    PRIMARY KEY (run_id, task_index)
);
""" + COMPARISONS_TABLE + ";" + TUNED_BASELINES_TABLE + ";"

# Columns added since schema 1: (version, table, column, declaration). Tables that
# are missing altogether are created whole by SCHEMA.
ADDED_COLUMNS = [
    (2, "system", "worker", "INTEGER NOT NULL DEFAULT 0"),
    (3, "runs", "baseline_id", "INTEGER"),
    (4, "epochs", "val_ce", "REAL"),
    # Per execution: optimizer updates applied so far, updates skipped in it, loss scale (float16).
    (5, "executions", "updates", "INTEGER"),
    (5, "executions", "skipped", "INTEGER"),
    (5, "executions", "loss_scale", "REAL"),
    (6, "runs", "origin", "TEXT"),               # JSON provenance of an imported run
    (7, "runs", "trashed", "REAL"),              # time it was moved to the trash (NULL: not in it)
]

EXEC_COLS = ("idx", "epoch", "step", "batches", "t", "duration", "samples_per_sec",
             "loss", "lr", "warmup", "data_wait", "updates", "skipped", "loss_scale")
EPOCH_COLS = ("epoch", "t", "step", "loss", "accuracy", "val_loss", "val_accuracy", "lr", "val_ce")
SYSTEM_COLS = ("t", "cpu_percent", "rss_mb", "mem_percent", "gpu_mem_mb", "worker")


# Indexes for 10,000+ runs: the active runs (status), a launch's group (group_id), the
# Runs page's listing (trashed, id). Created by Store._ensure_indexes.
INDEXES = (
    ("runs_state", "CREATE INDEX IF NOT EXISTS runs_state ON runs (status, trashed, id)"),
    ("runs_group", "CREATE INDEX IF NOT EXISTS runs_group ON runs (group_id)"),
    ("runs_listed", "CREATE INDEX IF NOT EXISTS runs_listed ON runs (trashed, id)"),
    # Fine-tuned runs (the transfer demo's pairs, engine.jobs.demo.demo_pairs): `config_field`'s expression.
    ("runs_init_from", "CREATE INDEX IF NOT EXISTS runs_init_from ON runs "
                       "((CASE WHEN json_valid(config) THEN json_extract(config, '$.init_from') END))"),
)
# Config fields the Runs page and `runs` filter by, as SQL (json_extract of the config).
CONFIG_FILTERS = ("dataset", "model", "precision", "devices", "backend")
# A run row SQLite already sees as whole: valid JSON objects, a known status, a numeric
# time and the config fields every reader indexes (engine.store.rows.REQUIRED_CONFIG). Only
# rows failing it are parsed to find the damaged ones (`damaged_runs`).
LOOKS_WHOLE = (
    "status IN ('queued','running','completed','failed','cancelled') AND typeof(created) IN ('integer','real') "
    + "".join(f"AND CASE WHEN {c} IS NULL OR {c}='' THEN {int(c != 'config')} WHEN json_valid({c}) "
              f"THEN json_type({c})='object' ELSE 0 END "
              for c in ("config", "environment", "plan", "summary", "origin"))
    + "AND CASE WHEN json_valid(config) THEN "
    "json_type(config,'$.dataset')='text' AND json_type(config,'$.model')='text' "
    "AND json_type(config,'$.precision')='text' AND json_type(config,'$.devices')='integer' "
    "AND json_type(config,'$.batch_size')='integer' AND json_type(config,'$.steps_per_execution')='integer' "
    "AND json_type(config,'$.jit_compile') IN ('true','false') AND json_type(config,'$.epochs')='integer' "
    "ELSE 0 END")