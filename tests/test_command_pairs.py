"""`python -m engine pairs`: two commands as interleaved pairs (engine.jobs.command_pairs).

The sides are tests/helpers/command_side.py: a fake training script that follows the env contract
and stores a run with a known time to accuracy, without TF."""
from __future__ import annotations

import json
import math
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.base.errors import ConfigError
from engine.jobs import command_pairs
from engine.store import Store
from tests.helpers import cli

# lanes (docs/testing.md): worker for the tests that start sides (`engine pairs` in-process, or its
# process where a signal to it is the point), page for the Train panel, unit for a refusal run in-process

ROOT = Path(__file__).resolve().parents[1]
SIDE = f"{shlex.quote(sys.executable)} -m tests.helpers.command_side"


def _pairs(monkeypatch, home, *args) -> cli.Result:
    """`engine pairs ARGS` in this process, from the repository root: the sides are still processes,
    the pairs process is not what these tests prove (the signal tests below start it). Its
    comparison, owned by this process, is in `home`, which no queue or server reads."""
    monkeypatch.setenv("SPEEDLAB_HOME", str(home))
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    monkeypatch.chdir(ROOT)
    return cli.engine("pairs", *args, files=True)


def _last_json(proc) -> dict:
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.worker
def test_known_times_give_the_geometric_mean_of_pair_ratios(tmp_path, monkeypatch):
    # Pair i runs both sides on seed i: baseline 2, 3, 4 s to the target, the command 1, 2, 1 s.
    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", f"{SIDE} --sec 2,3,4", "--cmd", f"{SIDE} --sec 1,2,1",
                  "--pairs", "3", "--json")
    assert proc.returncode == 0, proc.stderr
    out = _last_json(proc)
    c = out["comparison"]
    assert out["commands"] == {"baseline": f"{SIDE} --sec 2,3,4", "run": f"{SIDE} --sec 1,2,1"}
    assert c["status"] == "completed" and c["pairs"] == 3 and c["planned"] == 3
    assert c["pair_ratios"] == pytest.approx([2.0, 1.5, 4.0])
    assert c["time_to_accuracy_speedup"] == pytest.approx((2.0 * 1.5 * 4.0) ** (1 / 3))  # 2.289
    # Steady rate = 320 samples / T s, so throughput explains the whole ratio.
    assert c["factors"]["throughput"]["speedup"] == pytest.approx(12 ** (1 / 3))
    assert c["reached"] == {"pairs": 3, "baseline": 3, "run": 3, "baseline_failed": 0, "run_failed": 0,
                            "baseline_of": 3, "run_of": 3}
    assert c["baseline_kind"] == "command" and c["baseline_label"] == "your baseline command"
    lo, hi = c["time_to_accuracy_ci95"]
    assert lo < c["time_to_accuracy_speedup"] < hi
    rows = c["pair_rows"]
    assert [r["order"] for r in rows] == ["AB", "BA", "AB"]
    store = Store(tmp_path / "runs.sqlite")
    try:
        for r in rows:
            b, x = store.get_run(r["baseline_id"]), store.get_run(r["run_id"])
            # the same seed on both sides of a pair: seed + i
            assert b["config"]["seed"] == x["config"]["seed"] == r["seed"] == r["pair"]
            assert (b["role"], x["role"]) == ("baseline", "run")
            assert b["group_id"] == x["group_id"] and b["group_id"].startswith("cmp-")
            # order: the side named first ran first
            assert (b["id"] < x["id"]) == (r["order"] == "AB")
            assert x["baseline_id"] == b["id"]
    finally:
        store.close()


@pytest.mark.worker
def test_a_failing_side_ends_its_pair_failed_with_its_last_stderr_line(tmp_path, monkeypatch):
    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", f"{SIDE} --sec 2",
                  "--cmd", f"{SIDE} --fail 'ValueError: boom'",
                  "--pairs", "2", "--json")
    assert proc.returncode == 1
    c = _last_json(proc)["comparison"]
    # Both pairs count, each with its candidate failed (a miss of that side), and none has a ratio.
    assert [r["status"] for r in c["pair_rows"]] == ["complete", "complete"]
    # Pair 2 is BA: its command failed first, so its baseline never ran.
    assert [r["outcomes"] for r in c["pair_rows"]] == [{"baseline": "reached", "run": "failed"},
                                                       {"baseline": "not run", "run": "failed"}]
    assert c["pair_rows"][0]["error"] == "run command: exited with code 3: ValueError: boom"
    # The side's run keeps its exception; stderr may end in a line that says less (TensorFlow's
    # op name after a generator's error): the run's reason is the pair's.
    proc = _pairs(monkeypatch, tmp_path / "tf", "--baseline-cmd", f"{SIDE} --sec 2",
                  "--cmd", f"{SIDE} --fail 'ValueError: corrupt record' --last-line '[[IteratorGetNext]]'",
                  "--pairs", "1", "--json")
    assert _last_json(proc)["comparison"]["pair_rows"][0]["error"] == (
        "run command: exited with code 3: ValueError: corrupt record")
    assert c["status"] == "failed" and c["pairs"] == 2 and c["time_to_accuracy"]["pairs"] == 0
    assert c["reached"]["run_failed"] == 2
    assert "ValueError: boom" in c["ended_by"]


@pytest.mark.worker
def test_a_candidate_that_writes_to_another_store_is_refused_and_no_other_run_changes(tmp_path, monkeypatch):
    """The pairs' store already holds an unrelated run #1; the candidate sets its own
    SPEEDLAB_HOME, so its run is #1 of another store. Nothing of the pairs' store's #1 may change."""
    from engine.config import RunConfig

    store = Store(tmp_path / "runs.sqlite")
    try:
        other_id = store.create_run(RunConfig().to_json(), role="run", group_id=None, status="completed")
        before = store.get_run(other_id)
    finally:
        store.close()
    elsewhere = tmp_path / "elsewhere"
    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", f"{SIDE} --sec 2",
                  "--cmd", f"{SIDE} --sec 1 --home {elsewhere}",
                  "--pairs", "1")
    assert proc.returncode == 1 and proc.stdout == ""
    line = f"error: the candidate wrote to another store: {os.path.realpath(elsewhere / 'runs.sqlite')}"
    assert proc.stderr.strip().splitlines()[-1] == line
    store = Store(tmp_path / "runs.sqlite")
    try:
        assert other_id == 1 and store.get_run(other_id) == before
        from engine.store import comparisons as cstore

        (comp,) = cstore.list_all(store)
        assert comp["ended_by"].startswith(line[len("error: "):]) and comp["plan"] == []
    finally:
        store.close()


@pytest.mark.worker
def test_a_megabyte_stderr_line_gives_a_reason_of_one_short_line(tmp_path, monkeypatch):
    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", f"{SIDE} --fail-chars 200000", "--cmd", f"{SIDE} --sec 1",
                  "--pairs", "1", "--json")
    assert proc.returncode == 1
    c = _last_json(proc)["comparison"]
    for reason in (c["pair_rows"][0]["error"], c["ended_by"]):
        assert "\n" not in reason and len(reason) <= 300 and "all of it: " in reason
    log = c["pair_rows"][0]["error"].rsplit("all of it: ", 1)[1].rstrip(")")
    assert Path(log).read_text().count("x" * 200_000) == 1  # the whole line is in the log file


@pytest.mark.worker
def test_a_side_that_records_no_run_fails_its_pair(tmp_path, monkeypatch):
    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", f"{SIDE} --no-run", "--cmd", f"{SIDE} --sec 1",
                  "--pairs", "1")
    assert proc.returncode == 1
    assert "recorded no run" in proc.stdout and "trained without the callback" in proc.stdout
    # pair 1 is AB: the baseline failed first, so the command never ran
    store = Store(tmp_path / "runs.sqlite")
    try:
        assert store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0
    finally:
        store.close()


@pytest.mark.worker
def test_json_comparison_has_the_fields_of_run_baseline(tmp_path, monkeypatch):
    from engine.store import comparisons as cstore
    from engine.cli.comparison import comparison_json
    from engine.report import comparison

    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", f"{SIDE} --sec 2", "--cmd", f"{SIDE} --sec 1",
                  "--pairs", "2", "--json")
    assert proc.returncode == 0, proc.stderr
    c = _last_json(proc)["comparison"]
    assert c["pair_ratios"] == pytest.approx([2.0, 2.0])
    store = Store(tmp_path / "runs.sqlite")
    try:
        comp = cstore.get(store, c["comparison_id"])
        # the object `run --baseline --json` prints for a queued comparison of the same runs
        queued = {**comp, "settings": {"pairs": 2, "max_pairs": 2, "baseline_kind": "default"}}
        queued["result"] = comparison.evaluate(store, queued)
        assert set(c) == set(comparison_json(queued))
    finally:
        store.close()
    assert math.isclose(c["end_to_end_speedup"], 2.0, rel_tol=0.01)


def test_bad_commands_are_refused_before_anything_runs(tmp_path, monkeypatch):
    for args, field in (((" ", "x", 2, 10.0), "baseline_cmd"), (("x", "python 'a", 2, 10.0), "cmd"),
                        (("x", "y", 0, 10.0), "pairs"), (("x", "y", 2, 0.0), "timeout_s")):
        with pytest.raises(ConfigError) as e:
            command_pairs.check(*args)
        assert e.value.field == field
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    proc = cli.engine("pairs", "--baseline-cmd", "python a.py", "--cmd", "", "--json")  # in-process: unit lane
    assert proc.returncode == 2
    assert _last_json(proc)["exit_code"] == 2
    assert not (tmp_path / "runs.sqlite").exists()


@pytest.mark.page
def test_train_panel_is_local_only_and_refuses_bad_commands_before_starting(store_home, monkeypatch):
    import streamlit as st

    from views.train import commands

    for address, allowed in (("localhost", True), ("127.0.0.1", True), ("0.0.0.0", False), (None, False)):
        monkeypatch.setattr(st, "get_option", lambda name, a=address: a if name == "server.address" else None)
        assert commands.allowed() is allowed
    spawned = []
    monkeypatch.setattr(commands.background, "spawn", lambda *a: spawned.append(a) or (1, 0.0))
    with pytest.raises(ConfigError) as e:
        commands.launch("python train.py", "python 'train.py", 3)
    assert e.value.field == "cmd" and "balance its quotes" in str(e.value)
    with pytest.raises(ConfigError) as e:
        commands.launch("python train.py", "python train.py --bf16", 51)
    assert e.value.field == "pairs"
    assert spawned == [] and not (store_home / commands.JOB_FILE).exists()
    with pytest.raises(ConfigError) as e:
        commands.launch("python train.py", "python train.py --bf16", 3, 0.0)
    assert e.value.field == "timeout_s"
    assert commands.launch("python train.py", "python train.py --bf16", 3) == \
        "started: 3 pairs, at most 60 min a side, process 1"
    (argv, _log), = spawned
    assert argv == ["pairs", "--baseline-cmd", "python train.py", "--cmd", "python train.py --bf16", "--pairs", "3",
                    "--timeout-s", "3600", "--quiet", "--progress-file", str(store_home / commands.JOB_FILE)]


@pytest.mark.worker
def test_the_bf16_example_compares_two_real_scripts(tmp_path, monkeypatch):
    # examples/train_with_callback.py (SpeedLabCallback, digits), float32 against bf16: one pair of
    # one epoch (23 executions: a steady rate either way; bf16 trains ~20x slower on a CPU without it).
    script = f"{shlex.quote(sys.executable)} examples/train_with_callback.py --epochs 1"
    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", script, "--cmd", f"{script} --bf16", "--pairs", "1",
                  "--json")
    assert proc.returncode == 0, proc.stderr[-2000:]
    c = _last_json(proc)["comparison"]
    assert c["status"] == "completed" and c["pairs"] == 1 and c["baseline_kind"] == "command"
    store = Store(tmp_path / "runs.sqlite")
    try:
        b, r = store.get_run(c["baseline_ids"][0]), store.get_run(c["run_ids"][0])
        assert (b["role"], r["role"]) == ("baseline", "run") and b["group_id"] == r["group_id"]
        assert b["status"] == r["status"] == "completed"
        assert b["id"] < r["id"]  # pair 1 is AB
    finally:
        store.close()
    assert c["steady_speedup"] > 0 and len(c["pair_ratios"]) == 1


def _gone(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


@pytest.mark.worker
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP], ids=lambda s: s.name)
def test_a_stop_signal_to_pairs_mid_side_stops_its_process_group_and_ends_stopped(tmp_path, sig):
    """`kill <pairs pid>` (SIGTERM), Ctrl-C (SIGINT) or a closed terminal (SIGHUP) while pair 2's
    first side trains on: that side and the child it started are stopped, its run ends naming the
    signal, and the comparison ends `stopped` with pair 1 kept; the exit status is 128 + the
    signal, as a shell reports it."""
    pids = tmp_path / "pids"
    env = {**os.environ, "SPEEDLAB_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    cli = subprocess.Popen([sys.executable, "-m", "engine", "pairs", "--baseline-cmd", f"{SIDE} --sec 2",
                            "--cmd", f"{SIDE} --sec 1 --hang-seed 1 --pids {pids}", "--pairs", "2"],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not pids.exists():  # pair 2 is BA: its command (seed 1) hangs first
            assert cli.poll() is None and time.monotonic() < deadline, cli.communicate()
            time.sleep(0.1)
        side, child = (int(x) for x in pids.read_text().split())
        os.kill(cli.pid, sig)
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert cli.returncode == 128 + sig, err
    assert "Traceback" not in err, err
    assert _gone(side) and _gone(child)  # the side's whole process group, not only the side
    with Store(tmp_path / "runs.sqlite") as s:
        from engine.store import comparisons as cstore

        (comp,) = cstore.list_all(s)
        assert (comp["status"], comp["ended_by"]) == (
            "stopped", f"stopped: the pairs process got {sig.name}; 1 complete pair kept")
        assert len(comp["plan"]) == 1 and comp["result"]["pair_ratios"] == pytest.approx([2.0])
        hung = [(r["status"], r["error"]) for r in s.list_runs() if r["config"]["seed"] == 1]
        assert hung == [("cancelled", f"stopped: the pairs process got {sig.name}")]
        assert not [r for r in s.list_runs() if r["status"] in ("queued", "running")]


@pytest.mark.worker
@pytest.mark.parametrize("who", ["Stop", "dashboard signal"])
def test_stop_on_the_page_or_a_signal_elsewhere_stops_a_hanging_side(tmp_path, who):
    """The dashboard's Stop (engine.jobs.command_pairs.stop) on a side that records a run and
    trains on: "stopped by the user", the run "cancelled by the user". A stop signal to another
    process of the store (engine.jobs.stopping.stop_all: the dashboard, the queue, a CLI) stops
    the pairs too, naming that signal."""
    from engine.jobs import command_pairs as cp
    from engine.jobs import stopping
    from engine.store import comparisons as cstore

    pids = tmp_path / "pids"
    env = {**os.environ, "SPEEDLAB_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    cli = subprocess.Popen([sys.executable, "-m", "engine", "pairs", "--baseline-cmd",
                            f"{SIDE} --hang-seed 0 --pids {pids}", "--cmd", f"{SIDE} --sec 1", "--pairs", "2"],
                           cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not pids.exists():
            assert cli.poll() is None and time.monotonic() < deadline, cli.communicate()
            time.sleep(0.1)
        with Store(tmp_path / "runs.sqlite") as s:
            (comp,) = cstore.list_all(s)
        if who == "Stop":
            line = cp.stop(comp["id"], tmp_path / "runs.sqlite")
            assert line == (f"comparison {comp['id']}: stop requested (its pairs process, pid {cli.pid}, "
                            "stops the running side)")
            reason, run_error = "stopped by the user", "cancelled by the user"
        else:
            reason = run_error = "stopped: the dashboard got SIGTERM"
            stopping.stop_all(reason, tmp_path / "runs.sqlite")
        out, err = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
    assert "Traceback" not in err, err
    side, child = (int(x) for x in pids.read_text().split())
    assert _gone(side) and _gone(child)
    with Store(tmp_path / "runs.sqlite") as s:
        comp = cstore.get(s, comp["id"])
        assert (comp["status"], comp["ended_by"]) == ("stopped", f"{reason}; 0 complete pairs kept")
        assert [(r["status"], r["error"]) for r in s.list_runs()] == [("cancelled", run_error)]
    assert cp.stop(comp["id"], tmp_path / "runs.sqlite") == f"comparison {comp['id']} is not running"


@pytest.mark.worker
def test_a_two_command_comparison_survives_export_and_import_with_its_failed_pair(tmp_path, monkeypatch):
    """Export of a comparison of two commands whose pair 2 failed (its command exited 3, its
    baseline never ran), then import into another store: a comparison again, of the imported
    runs, with the failed pair and the same ratio; each run names the host it ran on."""
    import io
    import socket

    from engine import bundle
    from engine.bundle.format import provenance
    from engine.report import replay
    from engine.store import comparisons as cstore

    proc = _pairs(monkeypatch, tmp_path, "--baseline-cmd", f"{SIDE} --sec 2",
                  "--cmd", f"{SIDE} --sec 1 --fail boom --fail-seed 1",
                  "--pairs", "2", "--json")
    assert proc.returncode == 1, proc.stderr
    with Store(tmp_path / "runs.sqlite") as s:
        (comp,) = cstore.list_all(s)
        ids = [r["id"] for r in s.list_runs()]
        buf = io.BytesIO()
        bundle.export_runs(s, ids, buf)
    assert [p.get("baseline_id") is None for p in comp["plan"]] == [False, True]  # pair 2: BA, its command failed
    other = tmp_path / "other"
    other.mkdir()
    with Store(other / "runs.sqlite") as s:
        mapping = dict(bundle.import_bundle(s, io.BytesIO(buf.getvalue()), "pairs.zip"))
        (got,) = cstore.list_all(s)
        assert got["settings"]["baseline_kind"] == "command" and got["settings"]["commands"] == comp["settings"]["commands"]
        assert (got["status"], got["ended_by"]) == (comp["status"], comp["ended_by"]) == (
            "stopped", "pair 2 failed (run command: exited with code 3: boom); 1 complete pair kept")
        assert [(p.get("baseline_id"), p["run_id"], p.get("error")) for p in got["plan"]] == [
            (mapping[q["baseline_id"]] if q.get("baseline_id") else None, mapping[q["run_id"]], q.get("error"))
            for q in comp["plan"]]
        assert got["result"]["pair_ratios"][0] == pytest.approx(2.0)
        assert got["result"]["pair_ratios"] == comp["result"]["pair_ratios"]
        runs = s.list_runs()
        assert sorted(r["id"] for r in runs) == sorted(mapping.values())
        for r in runs:
            assert provenance(r) == f"imported from {socket.gethostname()} (run #{r['origin']['run_id']} there)"
        # Replay opens on its complete pair
        assert replay.comparison_pair(cstore.list_all(s), runs) == (mapping[comp["plan"][0]["baseline_id"]],
                                                                    mapping[comp["plan"][0]["run_id"]])


@pytest.mark.page
def test_runs_page_lists_a_two_command_comparison_with_its_failed_pair(store):
    """As `engine pairs` stores it: pair 1 complete (10,000 against 20,000 samples/s), pair 2's
    command failed and its baseline never ran (no id): a comparison on the Runs page too."""
    from engine.config import RunConfig
    from engine.report.comparison import evaluate
    from engine.store import comparisons as cstore
    from tests.helpers.pages import app, fake_run, no_errors

    cfg = RunConfig(epochs=3, target_accuracy=0.7)
    b0 = fake_run(store, cfg, "baseline", group="cmp-two")
    r0 = fake_run(store, cfg, "run", group="cmp-two", rate=20_000.0)
    r1 = fake_run(store, cfg, "run", group="cmp-two", status="failed")
    plan = [{"pair": 0, "seed": 0, "order": "AB", "baseline_id": b0, "run_id": r0},
            {"pair": 1, "seed": 1, "order": "BA", "baseline_id": None, "run_id": r1,
             "error": "run command: exited with code 3: boom"}]
    cid = cstore.create(store, "ab", "cmp-two", {"pairs": 2, "max_pairs": 2, "min_pairs": 2,
                                                 "baseline_kind": "command",
                                                 "commands": {"baseline": "python a.py", "run": "python b.py"}},
                        plan, "here")
    cstore.update(store, cid, result=evaluate(store, cstore.get(store, cid)), status="stopped",
                  ended_by="pair 2 failed (run command: exited with code 3: boom); 1 complete pair kept")
    at = app("views/runs/runs.py")
    no_errors(at)
    (table,) = [d.value for d in at.dataframe if "headline" in d.value.columns]
    assert list(table["kind"]) == ["two commands"] and list(table["pairs"]) == [2]
    assert list(table["ended by"]) == ["pair 2 failed (run command: exited with code 3: boom); 1 complete pair kept"]
    assert list(table["runs"]) == [f"#{b0}, #{r0}, #{r1}"]


def test_shell_syntax_is_refused_in_one_line_naming_it():
    for text, found in (("python train.py > log.txt", ">"), ("python a.py | tee x", "|"), ("python a.py; echo", ";"),
                        ("python a.py && b", "&"), ('python "$HOME/a.py"', "$"), ("python ~/a.py", "~"),
                        ("python *.py", "*"), ("python a.py # fast", "#"), ("VAR=1 python a.py", "VAR=...")):
        assert command_pairs.shell_syntax(text) == found, text
        with pytest.raises(ConfigError) as e:
            command_pairs.check("python a.py", text, 2, 10.0)
        assert e.value.field == "cmd" and str(e.value).startswith(f"cmd: {text!r} uses shell syntax ({found}); ")
    assert "env VAR=1 python train.py" in str(e.value)  # the assignment's fix
    # quoted or escaped, the same characters are arguments: not shell syntax
    for text in ("python a.py --glob '*.png' --sep 'a|b'", 'python a.py --x "it\'s;"', "python a\\>b",
                 "env VAR=1 python a.py", "python a~b --lr=1e-3 --tag=x#1"):
        assert command_pairs.shell_syntax(text) is None, text


def test_a_command_that_cannot_start_is_one_line_before_any_pair_trains(tmp_path, monkeypatch):
    # Refused before any side starts: the command runs in this process (unit lane), from the
    # repository root as _cli runs it.
    monkeypatch.setenv("SPEEDLAB_HOME", str(tmp_path))
    monkeypatch.chdir(ROOT)
    script = tmp_path / "train.sh"
    script.write_text("#!/bin/sh\nexit 0\n")  # not executable
    for baseline, cmd, line in (
            ("pyhton-nope train.py", SIDE,
             "error: baseline_cmd: 'pyhton-nope' cannot start: no such program on PATH; check its spelling, "
             "or give its full path"),
            (SIDE, str(script),
             f"error: cmd: {str(script)!r} cannot start: the file is not executable; run chmod +x {script}, or "
             "give its interpreter (python FILE, bash FILE)"),
            (SIDE, f"{shlex.quote(sys.executable)} no-such-train.py",
             f"error: cmd: 'no-such-train.py' cannot start: {os.path.basename(sys.executable)} has no such script "
             f"file; give its path from {ROOT}"),
            (SIDE, f"{SIDE} --sec 1 > {tmp_path / 'out.txt'}", None)):
        proc = cli.engine("pairs", "--baseline-cmd", baseline, "--cmd", cmd, "--pairs", "2")
        assert proc.returncode == 2, proc.stderr
        err = proc.stderr.strip().splitlines()
        assert len(err) == 1 and (line is None or err[0] == line), proc.stderr
        if line is None:
            assert err[0].startswith(f"error: cmd: {cmd!r} uses shell syntax (>); ")
    assert not (tmp_path / "out.txt").exists()
    if (tmp_path / "runs.sqlite").exists():  # nothing trained, no comparison stored
        with Store(tmp_path / "runs.sqlite") as store:
            assert store.count_runs() == 0
            assert store.conn.execute("SELECT COUNT(*) FROM comparisons").fetchone()[0] == 0


def test_the_pairs_row_counts_pairs_that_ran_apart_from_those_kept():
    """Two pairs ran to their end and both candidates failed: the row read '2 complete of 2
    planned; ended by: ...; 0 complete pairs kept'. 'Complete' is a pair with a ratio."""
    from engine.cli.comparison import comparison_rows

    c = {"comparison_id": 4, "headline": "no ratio", "pairs": 2, "planned": 2,
         "ended_by": "pair 1 failed (run command: exited with code 1: ValueError: x); 0 complete pairs kept"}
    assert dict(comparison_rows(c))["pairs"] == (
        "2 of 2 planned ran; ended by: pair 1 failed (run command: exited with code 1: ValueError: x); "
        "0 complete pairs kept")
