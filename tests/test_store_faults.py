"""Faults from outside, each ending in one line (exit 2) or a clean failed run, with the
store and the pages working afterwards: a non-loopback connection, damaged rows, a
truncated or zeroed store and its salvage, a full disk during a real run, a killed
queue, the trash, strict JSON. Generated inputs; TensorFlow only for the full-disk run."""
from __future__ import annotations

import json
import math
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from engine.config import RunConfig
from engine.jobs import runner
from engine.store import Store
from tests.helpers.apptest import app_test

from tests.helpers import cli as in_process
from tests.helpers.faults import ROOT, finished, one_line


def engine(home: Path, *args: str) -> in_process.Result:
    """`python -m engine ARGS` on the store at `home` (this test's SPEEDLAB_HOME), in this process:
    the tables and one-line refusals are the point, not the process (tests/helpers/cli.py)."""
    assert os.environ.get("SPEEDLAB_HOME") == str(home), (os.environ.get("SPEEDLAB_HOME"), home)
    return in_process.engine(*args)


# --- 1. local by default ------------------------------------------------------------

def _external_ip() -> str | None:
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not a.address.startswith("127."):
                return a.address
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.worker
def test_server_with_the_repository_config_refuses_a_non_loopback_connection(store_home):
    ip = _external_ip()
    if ip is None:
        pytest.skip("this machine has no non-loopback IPv4 address to connect to")
    port = _free_port()
    log = open(store_home / "streamlit.log", "wb")
    # The repository's .streamlit/config.toml decides the address: no --server.address here.
    proc = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", f"--server.port={port}"],
                            cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env={**os.environ, "SPEEDLAB_HOME": str(store_home)})
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stcore/health", timeout=2) as r:
                    assert r.read() == b"ok"
                    break
            except OSError:
                assert proc.poll() is None, (store_home / "streamlit.log").read_text()[-2000:]
                assert time.monotonic() < deadline, "the server did not come up"
                time.sleep(0.5)
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((ip, port), timeout=5).close()
    finally:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
        log.close()


def test_shared_secret_gate_runs_no_page_before_the_secret(store, monkeypatch):
    finished(store)
    monkeypatch.setenv("SPEEDLAB_SECRET", "s3cret-word-long")
    at = app_test().run()
    assert not at.exception
    assert [t.label for t in at.text_input] == ["Access secret"]
    assert [b.label for b in at.button] == ["Open"]  # the form alone: no page ran
    at.text_input(key="_gate_secret").input("wrong")
    at.button[0].click().run()
    assert "That is not the access secret." in [e.value for e in at.error]
    assert [t.label for t in at.text_input] == ["Access secret"]
    at.text_input(key="_gate_secret").input("s3cret-word-long")
    at.button[0].click().run()
    assert not at.exception
    assert "Access secret" not in [t.label for t in at.text_input]
    assert len(at.button) > 1  # the Train page now runs


# --- damaged rows ----------------------------------------------------------------

def _damage(store: Store) -> tuple[int, int, int]:
    """A good run, a row whose config lacks 'model', a row with invalid JSON."""
    good = finished(store)
    no_model = store.create_run(json.dumps({k: v for k, v in RunConfig(epochs=1).to_dict().items() if k != "model"}),
                                status="completed")
    store.conn.execute("INSERT INTO runs (created, role, config, status) VALUES (?, 'run', '{broken', 'failed')",
                       (time.time(),))
    bad_json = store.conn.execute("SELECT MAX(id) FROM runs").fetchone()[0]
    return good, no_model, bad_json


def test_damaged_rows_break_no_command_and_can_be_deleted(store):
    good, no_model, bad_json = _damage(store)
    home = store.path.parent
    p = engine(home, "runs")
    assert p.returncode == 0 and "Traceback" not in p.stderr
    assert f"run #{no_model} is damaged (config lacks 'model'): delete it with python -m engine delete {no_model}" \
        in p.stdout
    assert f"run #{bad_json} is damaged (config is not valid JSON (JSONDecodeError))" in p.stdout
    runs = json.loads(engine(home, "runs", "--json").stdout)
    assert [r["id"] for r in runs] == [good, bad_json, no_model]
    assert one_line(engine(home, "show", str(no_model))) == (
        f"error: run #{no_model} is damaged (config lacks 'model'); it cannot be shown: delete it with "
        f"python -m engine delete {no_model} (or on the Runs page)")
    assert "is damaged" in one_line(engine(home, "compare", str(good), str(bad_json)))
    assert engine(home, "show", str(good)).returncode == 0
    d = engine(home, "delete", str(no_model), str(bad_json))
    assert d.returncode == 0 and f"moved 2 runs to the trash: #{no_model}, #{bad_json}" in d.stdout
    assert "damaged" not in engine(home, "runs").stdout


def test_pages_show_damaged_rows_apart(store):
    good, no_model, bad_json = _damage(store)
    for page in ("views/train/train.py", "views/runs/runs.py", "views/replay.py"):
        at = app_test()
        at.switch_page(page)
        at.run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not [e.value for e in at.error if " failed: " in e.value], page
    at = app_test()
    at.switch_page("views/runs/runs.py")
    at.run()
    assert any(f"#{no_model}: config lacks 'model'" in w.value for w in at.warning)
    picker = at.multiselect(key="delete_ids")
    assert set(picker.options) >= {f"#{no_model} · damaged: config lacks 'model'"}
    picker.set_value([no_model, bad_json]).run()
    assert at.checkbox(key="delete_sure").label == f"Move 2 runs to the trash: #{no_model}, #{bad_json}"
    at.checkbox(key="delete_sure").check().run()
    at.button(key="delete").click().run()
    assert not at.exception
    assert store.damaged_runs() == []
    assert {r["id"]: r["reason"] for r in store.trashed_runs()} == {
        no_model: "config lacks 'model'", bad_json: "config is not valid JSON (JSONDecodeError)"}


def test_delete_picker_has_no_select_all_and_no_default(store):
    for _ in range(3):
        finished(store)
    at = app_test()
    at.switch_page("views/runs/runs.py")
    at.run()
    picker = at.multiselect(key="delete_ids")
    assert picker.value == [] and picker.proto.select_all == 0  # Streamlit's own "Select all" is off
    assert len(picker.options) == 3
    ids = [r["id"] for r in store.list_runs()]
    picker.set_value(ids[:1]).run()
    at.checkbox(key="delete_sure").check().run()
    at.multiselect(key="delete_ids").set_value(ids[:2]).run()  # picked more after confirming
    box = at.checkbox(key="delete_sure")
    assert box.value is False and box.label == f"Move 2 runs to the trash: #{ids[1]}, #{ids[0]}"


# --- 3. a store that survives ------------------------------------------------------

def _filled_store(home: Path, n=4) -> Path:
    s = Store(home / "runs.sqlite")
    try:
        for _ in range(n):
            rid = finished(s)
            s.add_metrics(rid, system=[(float(t), 50.0, 100.0, 10.0, None, 0) for t in range(400)])
        s.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        s.close()
    return home / "runs.sqlite"


@pytest.mark.parametrize("damage", ["zeroed header", "truncated"])
def test_damaged_store_is_one_line_and_doctor_salvages_it(store_home, damage):
    path = _filled_store(store_home)
    size = path.stat().st_size
    with open(path, "r+b") as fh:
        if damage == "zeroed header":
            fh.write(b"\0" * 100)
        else:  # a copy that stopped short: the last tenth is gone
            fh.truncate(int(size * 0.9) // 4096 * 4096)
    for args in (("runs",), ("show", "1"), ("runs", "--json")):
        p = engine(store_home, *args)
        line = p.stderr.strip().splitlines()[-1]
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert str(path) in line and "python -m engine doctor" in line, line
    d = engine(store_home, "doctor")
    assert d.returncode == 1 and "Traceback" not in d.stderr, d.stderr
    kept = list(store_home.glob("runs.sqlite.damaged-*"))
    assert [k.name for k in kept if not k.name.endswith(("-wal", "-shm"))], kept
    assert f"the damaged file is kept as {kept[0]}" in d.stdout
    after = engine(store_home, "runs", "--json")
    assert after.returncode == 0, after.stderr
    ids = [r["id"] for r in json.loads(after.stdout)]
    assert "(header rebuilt)" in d.stdout and ids == [4, 3, 2, 1]  # the runs' pages are all there
    s = Store(path)
    try:
        system = s.conn.execute("SELECT COUNT(*) FROM system").fetchone()[0]
    finally:
        s.close()
    assert system == 1600 if damage == "zeroed header" else 0 < system < 1600  # the cut pages are lost
    assert engine(store_home, "doctor").stdout.startswith(f"{path}: integrity check ok")


def test_pages_show_the_damaged_store_line_and_the_command(store_home):
    path = _filled_store(store_home, n=1)
    with open(path, "r+b") as fh:
        fh.write(b"\0" * 100)
    at = app_test().run()
    assert not at.exception
    assert any(str(path) in e.value and "is damaged" in e.value for e in at.error)
    assert [c.value for c in at.code] == ["python -m engine doctor"]


def test_doctor_on_a_sound_store_changes_nothing(store_home):
    path = _filled_store(store_home, n=2)
    p = engine(store_home, "doctor", "--json")
    assert p.returncode == 0
    got = json.loads(p.stdout)
    assert {k: got[k] for k in ("store", "ok", "runs", "damaged_runs")} == {
        "store": str(path), "ok": True, "runs": 2, "damaged_runs": []}
    assert got["space"]["free_pages"] == 0 and got["space"]["auto_vacuum"] == "incremental"
    assert not list(store_home.glob("*.damaged-*"))


def _tmpfs(path: Path, size: str) -> None:
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a small tmpfs needs root")
    path.mkdir(parents=True, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")


@pytest.mark.worker
def test_full_disk_during_a_real_run_fails_it_with_the_cause(tmp_path, monkeypatch):
    """A real digits run on a 24 MB tmpfs that a filler file fills after epoch 2: the run
    ends failed with 'disk full: N metric rows not stored', the rows committed before
    are kept, the CLI ends with no traceback; once space is freed, the store works. The
    commands run in this process (their output is the point; tests/helpers/cli.py: an
    exception would fail the test), the run in its worker."""
    home = tmp_path / "small"
    _tmpfs(home, "24m")
    monkeypatch.setenv("SPEEDLAB_HOME", str(home))
    monkeypatch.setenv("SPEEDLAB_WARM_WORKER", "0")
    ended, filled = threading.Event(), threading.Event()

    def fill_after_epoch_2():
        while not ended.is_set():
            try:
                s = Store(home / "runs.sqlite")
                try:
                    if s.conn.execute("SELECT COUNT(*) FROM epochs").fetchone()[0] >= 2:
                        break
                finally:
                    s.close()
            except Exception:  # noqa: BLE001 - the store may not exist yet
                pass
            time.sleep(0.2)
        else:
            return  # the run ended before epoch 2
        with open(home / "filler", "wb") as fh:
            try:
                while True:
                    fh.write(b"\0" * (1 << 16))
                    fh.flush()
            except OSError:
                pass
        filled.set()

    filler = threading.Thread(target=fill_after_epoch_2, daemon=True)
    filler.start()
    try:
        try:
            out = engine(home, "run", "--dataset", "digits", "--model", "mlp", "--epochs", "40", "--json")
        finally:
            ended.set()
            filler.join(60)
        assert filled.is_set(), "the run ended before epoch 2"
        assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr[-2000:]
        result = json.loads(out.stdout.strip().splitlines()[-1])
        assert result["status"] == "failed"
        assert result["error"].startswith(f"disk full: {result['metrics_incomplete']:,} metric rows not stored")
        assert result["metrics_incomplete"] > 0
        # Still full: reads work.
        s = Store(home / "runs.sqlite")
        try:
            kept = s.conn.execute("SELECT COUNT(*) FROM epochs").fetchone()[0]
        finally:
            s.close()
        assert kept >= 2
        (home / "filler").unlink()
        assert engine(home, "runs").returncode == 0
        assert engine(home, "delete", "1").returncode == 0
    finally:
        subprocess.run(["umount", "-l", str(home)], capture_output=True)


def test_a_full_disk_on_a_write_is_one_line(store):
    """SQLITE_FULL provoked with max_page_count: StoreFullError naming the store, nothing half written."""
    from engine.store import StoreFullError

    rid = finished(store)
    store.conn.execute(f"PRAGMA max_page_count={store.conn.execute('PRAGMA page_count').fetchone()[0]}")
    with pytest.raises(StoreFullError, match=rf"the disk holding the store {store.path} is full"):
        store.add_metrics(rid, system=[(float(t), 1.0, 2.0, 3.0, None, 0) for t in range(5000)])
    assert store.conn.execute("SELECT COUNT(*) FROM system").fetchone()[0] == 0
    assert store.get_run(rid)["status"] == "completed"


@pytest.mark.tf
def test_writer_counts_rows_met_by_a_full_disk_and_stops_the_run(store):
    from engine.training.writer import Writer

    rid = finished(store)
    limit = store.conn.execute("PRAGMA page_count").fetchone()[0]

    def full_store():
        s = Store(store.path, patience_s=0)
        s.conn.execute(f"PRAGMA max_page_count={limit}")
        return s

    stopped = []
    w = Writer(full_store, rid)
    w.on_full = lambda: stopped.append(True)
    w.start()
    for i in range(3000):
        w.push("executions", (100 + i, 1, 100 + i, 1, 1.0 + i, 0.01, 1000.0, 0.5, 1e-3, 0, 0.0))
    w.stop(patience_s=10)
    assert w.disk_full and stopped == [True]
    assert w.lost_total == 3000 - (store.conn.execute("SELECT COUNT(*) FROM executions WHERE idx>=100")
                                   .fetchone()[0])
    assert w.lost_total > 0


# --- 4. a queue that recovers ------------------------------------------------------

def _dead_process() -> tuple[int, float]:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = psutil.Process(p.pid).create_time()
    p.kill()
    p.wait()
    return p.pid, started


@pytest.mark.worker
def test_killed_queue_and_worker_fail_their_runs_and_new_runs_are_accepted(store):
    """The CLI, queue and worker of a baseline+run pair killed: the running baseline (its
    worker gone) and the queued run (no queue left) end failed with the reason."""
    cfg = RunConfig(epochs=1)
    base = store.create_run(cfg.to_json(), role="baseline", status="running")
    run = store.create_run(cfg.to_json(), role="run")
    pid, started = _dead_process()
    store.update_run(base, pid=pid, pid_started=started, started=time.time() - 30)
    store.update_run(run, created=time.time() - 30)
    assert not runner.queue_alive(store)
    assert runner.active_run(store) is None
    b, r = store.get_run(base), store.get_run(run)
    assert (b["status"], b["error"]) == ("failed", "worker process ended without reporting (killed or crashed); "
                                                   "see stderr_tail")
    assert (r["status"], r["error"]) == ("failed", "its queue process ended before it started (killed or crashed); "
                                                   "nothing ran: launch it again")
    ids = runner.submit([cfg], start=False)
    assert store.get_run(ids[0])["status"] == "queued"


def test_a_freshly_queued_run_waits_for_the_queue_being_started(store):
    rid = store.create_run(RunConfig(epochs=1).to_json())
    runner.reconcile(store)
    assert store.get_run(rid)["status"] == "queued"  # within ORPHAN_GRACE_S: its queue may be starting
    me = psutil.Process()
    (store.path.parent / "queue.pid").write_text(f"{me.pid} {me.create_time()}")
    store.update_run(rid, created=time.time() - 60)
    runner.reconcile(store)
    assert store.get_run(rid)["status"] == "queued"  # the queue process that was started is alive


def test_claimed_run_whose_queue_died_before_its_worker_started(store):
    rid = store.create_run(RunConfig(epochs=1).to_json(), status="running")
    store.update_run(rid, started=time.time() - 60)
    runner.reconcile(store)
    assert store.get_run(rid)["error"].startswith("its queue process ended before its worker started")


@pytest.mark.worker
def test_really_killed_queue_process_is_recovered(store_home):
    """A real queue process killed with SIGKILL while it holds a queued run (a worker
    that never starts: the queue waits on the store's lock held here)."""
    s = Store(store_home / "runs.sqlite")
    try:
        rid = s.create_run(RunConfig(epochs=1).to_json())
        hold = Store(store_home / "runs.sqlite")
        hold.conn.execute("BEGIN IMMEDIATE")  # the queue cannot claim the run: it stays queued
        q = runner.start_queue(store_home / "runs.sqlite")
        deadline = time.monotonic() + 60
        while not runner.queue_alive(s):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        q.kill()
        q.wait()
        hold.conn.execute("ROLLBACK")
        hold.close()
        s.update_run(rid, created=time.time() - 60)
        assert runner.active_run(s) is None
        assert s.get_run(rid)["status"] == "failed"
    finally:
        s.close()


# --- 5. deleting is recoverable ----------------------------------------------------

def test_trash_restore_empty_and_retention(store):
    a, b, c = finished(store), finished(store), finished(store)
    home = store.path.parent
    p = engine(home, "delete", str(a), str(b))
    assert p.stdout.strip() == f"moved 2 runs to the trash: #{a}, #{b}; restore with python -m engine trash --restore {a} {b}"
    assert [r["id"] for r in json.loads(engine(home, "runs", "--json").stdout)] == [c]
    assert "in the trash" in one_line(engine(home, "show", str(a)))
    trash = json.loads(engine(home, "trash", "--json").stdout)
    assert {r["id"] for r in trash} == {a, b}
    assert engine(home, "trash", "--restore", str(a)).stdout.strip() == f"restored 1 run: #{a}"
    assert store.frame("executions", a).shape[0] == 3  # metrics came back with it
    assert "not in the trash" in one_line(engine(home, "trash", "--restore", str(c)))
    # Retention: b was trashed 31 days ago: the next listing empties it.
    store.conn.execute("UPDATE runs SET trashed=? WHERE id=?", (time.time() - 31 * 86400, b))
    assert engine(home, "trash").stdout.strip() == "the trash is empty"
    assert store.get_run(b) is None and store.frame("executions", b).empty
    engine(home, "delete", str(c))
    assert engine(home, "trash", "--empty").stdout.strip() == f"deleted 1 trashed run for good: #{c}"
    assert one_line(engine(home, "delete", "999")) == "error: run_id: #999 not in this store; see python -m engine runs"


def test_active_runs_cannot_be_deleted(store):
    q = store.create_run(RunConfig(epochs=1).to_json())
    assert "still queued or running" in one_line(engine(store.path.parent, "delete", str(q)))
    assert store.trash_runs([q]) == []


def test_runs_page_restores_from_the_trash(store):
    a, b = finished(store), finished(store)
    store.trash_runs([a, b])
    at = app_test()
    at.switch_page("views/runs/runs.py")
    at.run()
    assert not at.exception
    picker = at.multiselect(key="restore_ids")
    assert picker.value == [] and picker.proto.select_all == 0
    picker.set_value([a]).run()
    at.button(key="restore").click().run()
    assert f"Restored 1 run: #{a}." in [s.value for s in at.success]
    assert [r["id"] for r in store.list_runs()] == [a]
    assert at.checkbox(key="empty_sure").label == f"Delete 1 run for good: #{b}"


# --- 6. strict JSON ----------------------------------------------------------------

def _strict(text: str):
    def refuse(name):
        raise ValueError(f"non-strict JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_show_and_runs_json_are_strict_and_name_the_non_finite(store):
    rid = finished(store, samples_per_sec=math.inf)
    store.update_run(rid, summary={"samples_per_sec": math.inf, "final_loss": math.nan, "wall_sec": 0.4})
    home = store.path.parent
    show = _strict(engine(home, "show", str(rid), "--json").stdout)
    assert show["summary"]["samples_per_sec"] is None and show["summary"]["final_loss"] is None
    assert set(show["non_finite"]) >= {"summary.samples_per_sec", "summary.final_loss"}
    runs = _strict(engine(home, "runs", "--json").stdout)
    assert runs[0]["samples_per_sec"] is None and runs[0]["non_finite"] == ["samples_per_sec"]
    other = finished(store)
    comp = _strict(engine(home, "compare", str(other), str(rid), "--json").stdout)
    assert isinstance(comp, dict)


def test_jsonsafe_paths():
    from engine.base.jsonsafe import dumps

    assert _strict(dumps({"a": [1.0, math.inf], "b": {"c": -math.inf}, "d": None})) == {
        "a": [1.0, None], "b": {"c": None}, "d": None, "non_finite": ["a[1]", "b.c"]}
    assert dumps({"x": 1}) == '{"x": 1}'
