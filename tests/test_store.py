"""The SQLite store: round trip, live reading from another process, schema guard."""
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import time

import pytest

from engine.config import RunConfig
from engine.store import SCHEMA_VERSION, Store, StoreError


def test_the_tables_are_made_once_at_open_not_per_read(store_home, monkeypatch):
    """A schema-8 store whose comparisons and tuned_baselines tables another program dropped gets
    them back when it is opened; a read-only store of schema 7 (no such tables) reads them empty."""
    from engine.store import comparisons as cstore, tuned_baselines
    import engine.store.db as db

    path = store_home / "runs.sqlite"
    Store().close()
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE comparisons; DROP TABLE tuned_baselines;")
    conn.close()
    with Store() as s:
        tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"comparisons", "tuned_baselines"} <= tables
        assert cstore.list_all(s) == [] and tuned_baselines.get(s, RunConfig()) is None
    conn = sqlite3.connect(path)
    conn.executescript("DROP TABLE comparisons; DROP TABLE tuned_baselines; "
                       "UPDATE meta SET value='7' WHERE key='schema_version';")
    conn.close()
    monkeypatch.setattr(db, "_read_only", lambda p: True)
    with Store() as s:
        assert s.readonly
        assert cstore.list_all(s) == [] and cstore.by_group(s, "g") is None
        assert tuned_baselines.get(s, RunConfig()) is None
        assert s.conn.execute("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='comparisons'"
                              ).fetchone()[0] == 0  # nothing written to the file


def test_round_trip(store):
    cfg = RunConfig(precision="mixed_bfloat16")
    rid = store.create_run(cfg.to_json(), role="baseline", group_id="g1")
    store.update_run(rid, status="running", plan={"total_steps": 120}, environment={"hostname": "h"})
    store.add_metrics(rid, executions=[(0, 0, 1, 1, 0.9, 0.9, 142.2, 2.3, 1e-3, 1, None),
                                       (1, 0, 2, 1, 1.0, 0.1, 1280.0, 2.1, 1e-3, 0, None)],
                      epochs=[(0, 1.2, 2, 2.1, 0.3, 2.0, 0.4, 1e-3, 1.8), (1, 2.0, 4, 1.9, 0.5, 1.7, 0.6, 1e-3)],
                      system=[(0.5, 95.0, 400.0, 20.0, None, 0)])
    store.finish_run(rid, "completed", summary={"samples_per_sec": 1280.0})
    run = store.get_run(rid)
    assert RunConfig.from_dict(run["config"]) == cfg
    assert (run["status"], run["role"], run["group_id"]) == ("completed", "baseline", "g1")
    assert run["plan"] == {"total_steps": 120} and run["summary"] == {"samples_per_sec": 1280.0}
    ex = store.metrics("executions", rid)
    assert [e["samples_per_sec"] for e in ex] == [142.2, 1280.0] and ex[0]["warmup"] == 1
    ep = store.frame("epochs", rid)
    assert ep["val_accuracy"].tolist() == [0.4, 0.6]
    # The second row was written without val_ce (as before schema 4): stored as NULL.
    assert ep["val_ce"].iloc[0] == 1.8 and ep["val_ce"].isna().iloc[1]
    assert store.frame("system", rid)["cpu_percent"].tolist() == [95.0]
    # Finishing again only if active leaves the final state alone.
    assert store.finish_run(rid, "failed", "x", only_if_active=True) is False
    folder = store.run_dir(rid)
    (folder / "worker.log").write_text("log")
    store.delete_run(rid)
    assert store.get_run(rid) is None and store.metrics("executions", rid) == []
    assert not folder.exists()


def test_a_run_can_be_created_with_more_columns_in_one_insert(store):
    # A SpeedLabCallback run is inserted with its pid and plan: no reader sees it without them.
    rid = store.create_run(RunConfig().to_json(), status="running", pid=4242, pid_started=12.5,
                           plan={"source": "callback", "script": "train.py"})
    run = store.get_run(rid)
    assert (run["status"], run["pid"], run["pid_started"]) == ("running", 4242, 12.5)
    assert run["plan"] == {"source": "callback", "script": "train.py"}


def test_a_run_stored_before_validation_seed_reads_as_drawn_by_its_seed(store):
    """Runs stored before 2026-12-06 drew validation by their seed: read back, their config says
    so, and a stored baseline of seed 3 is not reused for a run validated on draw 0."""
    from engine.jobs.runner import find_baseline

    old = RunConfig(seed=3).to_dict()
    del old["validation_seed"]
    rid = store.create_run(json.dumps(old), role="baseline")
    store.finish_run(rid, "completed", summary={})
    from engine.hardware.fingerprint import short

    store.update_run(rid, environment={"hostname": os.uname().nodename, "fingerprint": short()})
    run = store.get_run(rid)
    assert run["config"]["validation_seed"] == 3 and RunConfig.from_dict(run["config"]).validation_seed == 3
    assert find_baseline(store, RunConfig(seed=3)) is None
    assert find_baseline(store, RunConfig(seed=3, validation_seed=3))["id"] == rid


def test_wal_mode(store):
    assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


@pytest.mark.worker
def test_reader_sees_rows_while_another_process_writes(store):
    rid = store.create_run(RunConfig().to_json(), status="running")
    writer = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import time
        from engine.store import Store
        s = Store({str(store.path)!r})
        for i in range(40):
            s.add_metrics({rid}, executions=[(i, 0, i + 1, 1, i * 0.05, 0.05, 1280.0, 1.0, 1e-3, 0, None)])
            time.sleep(0.05)
        s.finish_run({rid}, "completed")
    """)])
    seen = []
    try:
        while writer.poll() is None:
            seen.append(len(store.metrics("executions", rid)))
            time.sleep(0.1)
    finally:
        writer.wait(30)
    assert store.get_run(rid)["status"] == "completed"
    partial = [n for n in seen if 0 < n < 40]
    assert len(partial) >= 3, seen  # progress was visible while the writer was still running
    assert partial == sorted(partial)


def test_newer_schema_is_refused(store_home):
    s = Store()
    s.conn.execute("UPDATE meta SET value='99' WHERE key='schema_version'")
    s.close()
    with pytest.raises(StoreError, match="newer"):
        Store()


def test_version_1_store_is_migrated(store_home):
    import sqlite3

    path = store_home / "runs.sqlite"
    conn = sqlite3.connect(path)
    conn.executescript("""
        CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO meta VALUES ('schema_version', '1');
        CREATE TABLE system (run_id INTEGER NOT NULL, t REAL NOT NULL, cpu_percent REAL, rss_mb REAL,
                             mem_percent REAL, gpu_mem_mb REAL);
        INSERT INTO system VALUES (7, 0.5, 50.0, 100.0, 10.0, NULL);
    """)
    conn.commit()
    conn.close()
    s = Store()
    assert s.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == str(SCHEMA_VERSION)
    assert {"updates", "skipped", "loss_scale"} <= {r[1] for r in s.conn.execute("PRAGMA table_info(executions)")}
    assert {"baseline_id", "origin"} <= {r[1] for r in s.conn.execute("PRAGMA table_info(runs)")}
    # Schema 8: the comparisons and tuned baselines are tables of the schema, not made on first use.
    tables = {r[0] for r in s.conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"comparisons", "tuned_baselines"} <= tables
    assert s.metrics("system", 7) == [{"t": 0.5, "cpu_percent": 50.0, "rss_mb": 100.0, "mem_percent": 10.0,
                                       "gpu_mem_mb": None, "worker": 0}]
    s.set_worker(7, 1, "running", pid=123, address="127.0.0.1:1")
    s.set_worker(7, 1, "failed", error="boom")
    (w,) = s.workers(7)
    assert (w["status"], w["pid"], w["error"], w["address"]) == ("failed", 123, "boom", "127.0.0.1:1")


def test_store_as_a_context_manager_closes_its_connection(store_home):
    with Store() as s:
        rid = s.create_run(RunConfig(epochs=1).to_json())
        assert s.get_run(rid)["id"] == rid
    with pytest.raises(sqlite3.ProgrammingError):  # closed: "Cannot operate on a closed database"
        s.conn.execute("SELECT 1")
    with pytest.raises(KeyError):
        with Store() as s2:
            raise KeyError("inside")
    with pytest.raises(sqlite3.ProgrammingError):  # closed on an error too
        s2.conn.execute("SELECT 1")
