"""Space comes back (issue 42, item 2): deleting runs for good and emptying the trash give
their pages back to the disk (incremental vacuum; one VACUUM for an older store), and
`doctor` reports free pages and compacts."""
from __future__ import annotations

import json
import sqlite3
import time


from engine.config import RunConfig
from engine.store import EXEC_COLS, Store, fault_line
from tests.helpers import cli

N_RUNS, ROWS = 3000, 24  # the store: 24 execution rows a run


def fill(store: Store, n: int = N_RUNS, rows: int = ROWS) -> list[int]:
    """`n` completed runs of `rows` executions each, inserted directly (fast)."""
    cfg = RunConfig(epochs=1).to_json()
    with store.tx() as conn:
        ids = [int(conn.execute("INSERT INTO runs (created, role, config, status, summary) VALUES (?,?,?,?,?)",
                                (time.time(), "run", cfg, "completed", json.dumps({"wall_sec": 1.0}))).lastrowid)
               for _ in range(n)]
        conn.executemany(f"INSERT INTO executions (run_id, {', '.join(EXEC_COLS)}) "
                         f"VALUES ({','.join('?' * (len(EXEC_COLS) + 1))})",
                         [(rid, i, 0, i + 1, 1, 0.1 * i, 0.1, 1280.0, 2.0, 1e-3, 0, 0.01, i, 0, None)
                          for rid in ids for i in range(rows)])
    return ids


def test_a_new_store_is_incremental_and_empty_trash_gives_3000_runs_back(store):
    assert store.space()["auto_vacuum"] == "incremental"
    ids = fill(store)
    big = store.path.stat().st_size + (store.path.with_name("runs.sqlite-wal").stat().st_size)
    assert big > 1.5 * 2**20
    assert store.trash_runs(ids) == ids
    assert store.empty_trash() == ids
    space = store.space()
    assert space["free_pages"] == 0
    assert store.path.stat().st_size < 2**20, space  # the goal: under 1 MB
    assert store.conn.execute("SELECT COUNT(*) FROM executions").fetchone()[0] == 0


def test_an_older_store_without_auto_vacuum_is_vacuumed_once(tmp_path):
    path = tmp_path / "runs.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")  # auto_vacuum none
    old.commit()
    old.close()
    with Store(path) as store:
        assert store.space()["auto_vacuum"] == "none"
        ids = fill(store)
        for rid in ids[:-1]:
            store.delete_run(rid, reclaim=False)
        assert store.space()["free_pages"] > 100
        store.delete_run(ids[-1])  # reclaims: VACUUM, now incremental
        assert store.space()["auto_vacuum"] == "incremental" and store.space()["free_pages"] == 0
        assert path.stat().st_size < 2**20


def test_the_disk_full_line_names_the_commands_that_free_space(tmp_path):
    line = fault_line(sqlite3.OperationalError("database or disk is full"), tmp_path / "runs.sqlite")
    assert "python -m engine trash --empty" in line and "python -m engine doctor --compact" in line


def test_doctor_reports_free_pages_and_compacts(store_home):
    path = store_home / "runs.sqlite"
    old = sqlite3.connect(path)
    old.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
    old.commit()
    old.close()
    with Store(path) as store:
        for rid in fill(store, 500):
            store.delete_run(rid, reclaim=False)  # as an older SpeedLab left it
        free = store.space()["free_pages"]
    out = cli.engine("doctor")
    assert out.returncode == 0, out.stderr
    assert f"{free:,} of " in out.stdout and "python -m engine doctor --compact" in out.stdout
    out = cli.engine("doctor", "--compact", "--json")
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["compacted_pages"] == free and got["space"]["free_pages"] == 0
    assert got["space"]["auto_vacuum"] == "incremental"


