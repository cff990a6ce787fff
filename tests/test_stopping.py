"""One rule for every stop signal (issue 56, item 4): SIGINT, SIGTERM and SIGHUP to any
SpeedLab process, or to every process group of a store, end the same way. A run that was
training ends `cancelled` naming the signal, never "cancelled by the user"; a comparison under
way ends `stopped` with its complete pairs kept and its queued runs withdrawn; the next launch
goes through at once (engine.base.process.on_stop_signals, engine.jobs.stopping)."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from engine.base import process
from engine.config import RunConfig
from engine.jobs import background, comparison, runner, stopping
from engine.store import Store
from engine.store import comparisons as cstore
from tests.helpers.pages import two_pair_comparison
from tests.helpers.queue import StandInQueue

ROOT = Path(__file__).resolve().parents[1]
LONG = ["--dataset", "synthetic", "--synthetic-shape", "8,8,1", "--synthetic-samples", "80", "--model", "mlp",
        "--batch-size", "16", "--epochs", "400", "--validation-fraction", "0.2"]


def test_the_lines_name_the_signal_and_who_got_it(monkeypatch):
    monkeypatch.setitem(process.RECEIVED, "signal", None)
    assert process.stop_reason("worker") == "cancelled by the user"  # no signal: the user's own cancel
    monkeypatch.setitem(process.RECEIVED, "signal", "SIGHUP")
    assert process.stop_reason("worker") == "stopped: the worker got SIGHUP"
    assert process.stop_line("queue", "SIGTERM") == "stopped: the queue got SIGTERM"


def test_a_stopped_comparison_keeps_its_complete_pairs_and_withdraws_the_queued(store):
    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-sig1", "completed")
    store.finish_run(r0, "completed")
    lines = stopping.stop_all("stopped: the queue got SIGTERM", store.path)
    comp = cstore.get(store, cid)
    assert (comp["status"], comp["ended_by"]) == ("stopped", "stopped: the queue got SIGTERM; 1 complete pair kept")
    assert store.get_run(b1) is None and store.get_run(r1) is None  # withdrawn: they never ran
    assert [store.get_run(i)["status"] for i in (b0, r0)] == ["completed", "completed"]
    assert lines == [] and runner.active_run(store) is None


def test_a_running_run_stopped_by_a_signal_is_not_cancelled_by_the_user(store):
    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-sig2", "running")
    store.update_run(r0, pid=None, pid_started=None)  # claimed, its worker not started (no queue left)
    stopping.stop_all("stopped: the CLI got SIGTERM", store.path)
    run = store.get_run(r0)
    assert (run["status"], run["error"]) == ("cancelled", "cancelled before its worker started")
    comp = cstore.get(store, cid)
    assert comp["status"] == "stopped" and comp["ended_by"].startswith("stopped: the CLI got SIGTERM; ")


def test_a_worker_stopped_by_a_signal_of_its_own_stops_its_comparison_naming_it(store):
    cid, (b0, r0, b1, r1) = two_pair_comparison(store, "cmp-sig3", "running")
    store.finish_run(r0, "cancelled", "stopped: the worker got SIGTERM")  # `kill <worker pid>`: it alone
    comp = comparison.on_run_end(store, r0)  # the queue's hook after the run
    assert (comp["status"], comp["ended_by"]) == ("stopped", "stopped: the worker got SIGTERM; 0 complete pairs kept")
    assert store.get_run(b1) is None and store.get_run(r1) is None


def _store_groups(home: Path, cli: subprocess.Popen) -> set[int]:
    """The process groups of every process of this store: the CLI's, the queue's (with its workers)."""
    groups = {os.getpgid(cli.pid)}
    for p in psutil.process_iter(["cmdline"]):
        try:
            if any(str(home) in a for a in p.info["cmdline"] or ()):
                groups.add(os.getpgid(p.pid))
        except (ProcessLookupError, psutil.Error):
            pass
    return groups


def _store_processes(home: Path) -> list[int]:
    out = []
    for p in psutil.process_iter(["cmdline", "environ"]):
        try:
            if any(str(home) in a for a in p.info["cmdline"] or ()) or \
                    (p.info["environ"] or {}).get("SPEEDLAB_HOME") == str(home):
                out.append(p.pid)
        except psutil.Error:
            pass
    return [pid for pid in out if pid != os.getpid()]


def _comparison_training(home: Path, played: StandInQueue | None = None) -> subprocess.Popen:
    """`engine run --baseline --pairs 2` of a long synthetic config in its own session, returned once
    its first run has stored 3 executions (it trains: a signal now lands mid-comparison). With
    `played` (holding the store's queue lock: no queue starts), the first run is claimed by it and
    its 3 executions are stored here, as its worker stores them."""
    env = {**os.environ, "SPEEDLAB_HOME": str(home), "SPEEDLAB_WARM_WORKER": "0", "PYTHONPATH": str(ROOT)}
    cli = subprocess.Popen([sys.executable, "-m", "engine", "run", *LONG, "--baseline", "--pairs", "2",
                            "--target-accuracy", "0.999", "--quiet"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, start_new_session=True)
    deadline = time.monotonic() + 240
    try:
        while True:
            assert cli.poll() is None and time.monotonic() < deadline, cli.stderr.read() if cli.poll() else "slow"
            try:
                with Store(home / "runs.sqlite") as s:
                    if played is not None and not played.claimed and (rid := played.claim(s)) is not None:
                        s.add_metrics(rid, executions=[(i, 0, i + 1, 1, 0.2 * (i + 1), 0.2, 80.0, 2.3, 1e-3,
                                                        int(i == 0), None) for i in range(3)])
                    # Mid-comparison: its row exists (the CLI queues the runs first, and a queue, the
                    # played one here, may claim one before the row is written: a signal then is
                    # comparison.start's all-or-nothing case, tests/test_comparisons.py).
                    if s.conn.execute("SELECT COUNT(*) FROM executions").fetchone()[0] >= 3 and cstore.list_all(s):
                        return cli
            except Exception:  # noqa: BLE001 - not created yet
                pass
            time.sleep(0.2)
    except BaseException:
        cli.kill()
        raise


def _worker_ends_as_asked(home: Path, played: StandInQueue) -> None:
    """The played worker's end once it got its SIGTERM: the run `cancelled` with the reason its
    canceller left (engine.jobs.worker._cancel_line), then the queue's hook (comparison.on_run_end)."""
    played.worker.wait(timeout=60)
    with Store(home / "runs.sqlite") as s:
        (rid,) = played.claimed
        run = s.get_run(rid)
        assert run["cancel_requested"] and run["status"] == "running", run
        s.finish_run(rid, "cancelled", run["error"], only_if_active=True)
        comparison.on_run_end(s, rid)


@pytest.mark.worker
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_signal_to_every_process_group_of_a_store_during_a_comparison(store_home, sig):
    """systemctl stop, docker stop (SIGTERM), Ctrl-C in a terminal (SIGINT to the foreground group),
    closing the terminal (SIGHUP): every process of the store gets it at once; all end one way."""
    cli = _comparison_training(store_home)
    try:
        groups = _store_groups(store_home, cli)
        assert os.getpgid(0) not in groups, "this test process is in a group of the store's processes"
        for group in groups:
            os.killpg(group, sig)
        out, err = cli.communicate(timeout=60)
        deadline = time.monotonic() + 10
        while _store_processes(store_home) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert _store_processes(store_home) == [], "a process of the store is still there 10 s after"
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 128 + sig, err
    assert "Traceback" not in err, err
    with Store(store_home / "runs.sqlite") as s:
        runs = s.list_runs()
        (comp,) = cstore.list_all(s)
        assert comp["status"] == "stopped", comp
        assert comp["ended_by"].startswith("stopped: the ") and f"got {sig.name}; 0 complete pairs kept" in \
            comp["ended_by"], (comp, [(r["id"], r["status"], r["error"]) for r in runs], err)
        assert [r["status"] for r in runs] == ["cancelled"]  # the one that trained; the 3 queued were withdrawn
        assert runs[0]["error"].startswith("stopped: the ") and runs[0]["error"].endswith(f" got {sig.name}")
        assert not [r for r in runs if "by the user" in (r["error"] or "")]
        assert comparison.running(s) is None and runner.active_run(s) is None
    assert background.busy() is None  # the next launch goes through at once
    rid, = runner.submit([RunConfig(epochs=1)], store_path=store_home / "runs.sqlite", start=False)  # at once
    runner.cancel(rid, store_home / "runs.sqlite")


def _one_process(home: Path, kind: str, cli: subprocess.Popen) -> int:
    """The pid of one SpeedLab process of this store: the CLI, the queue (its pid file) or the worker
    training the comparison's first run (its run row)."""
    if kind == "CLI":
        return cli.pid
    if kind == "queue":
        return int((home / "queue.pid").read_text().split()[0])
    with Store(home / "runs.sqlite") as s:
        return int(s.conn.execute("SELECT pid FROM runs WHERE status='running'").fetchone()[0])


@pytest.mark.worker
@pytest.mark.parametrize("kind", ["CLI", "queue", "worker"])
def test_sigterm_to_one_process_of_each_kind_ends_the_comparison_the_same_way(store_home, kind):
    """`kill <pid>` of the CLI, the queue or the worker alone during a 2-pair comparison: the
    comparison ends stopped with the signal named, nothing keeps training, the next launch goes.
    The CLI's queue and worker are played (StandInQueue; its worker a sleeping process): its
    signal's path is the CLI's own stop; a real worker's end on that SIGTERM is the queue's case."""
    with contextlib.ExitStack() as stack:
        played = stack.enter_context(StandInQueue(store_home)) if kind == "CLI" else None
        cli = _comparison_training(store_home, played)
        try:
            pid = _one_process(store_home, kind, cli)
            assert pid != os.getpid(), f"the {kind}'s stored pid is this test process's"
            os.kill(pid, signal.SIGTERM)
            if played is not None:
                _worker_ends_as_asked(store_home, played)
            out, err = cli.communicate(timeout=90)
            deadline = time.monotonic() + 10
            while [p for p in _store_processes(store_home) if p != cli.pid] and time.monotonic() < deadline:
                time.sleep(0.2)
        finally:
            if cli.poll() is None:
                cli.kill()
    assert "Traceback" not in err, err
    with Store(store_home / "runs.sqlite") as s:
        runs = s.list_runs()
        (comp,) = cstore.list_all(s)
        why = (comp, [(r["id"], r["status"], r["error"]) for r in runs], err)
        assert comp["status"] == "stopped" and "got SIGTERM" in comp["ended_by"], why
        assert not [r for r in runs if "by the user" in (r["error"] or "")], why
        assert not [r for r in runs if r["status"] in ("queued", "running")], why  # nothing keeps training
        assert comparison.running(s) is None and runner.active_run(s) is None
    assert background.busy() is None  # the next launch goes through at once


def test_a_worker_stopped_while_importing_ends_cancelled_without_setting_up(store_home, monkeypatch):
    """A SIGTERM to a worker still importing TensorFlow (an autopilot trial pruned, Stop right after
    Launch): the run ends cancelled naming it as soon as the imports are done; the set-up (data,
    model, tracing; ~1 CPU-s for digits, more for a backbone) is never begun."""
    from engine.jobs import worker
    from engine.training import backends

    with Store() as st:
        rid = st.create_run(RunConfig().to_json(), status="running")
        path = str(st.path)

    def imports_then_sigterm(*_a, **_k):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.05)  # the worker's handler runs in the main thread between two bytecodes

    monkeypatch.setattr(backends, "use", imports_then_sigterm)
    monkeypatch.setitem(sys.modules, "engine.training.train", None)  # importing it fails: set-up never begins
    assert worker.main([str(rid), path]) == 0
    with Store() as st:
        run = st.get_run(rid)
    assert (run["status"], run["error"]) == ("cancelled", "stopped: the worker got SIGTERM")
