"""The command line's own rules (engine.cli.main, engine.cli.run, engine.cli.bench),
without training: refusals and a closed stdout."""
from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import psutil
import pytest

from engine.jobs import background


def _running(name: str, **fields) -> None:
    """A job file in $SPEEDLAB_HOME that reads as running (this test process is its pid)."""
    from engine.store import home

    background.write_json(home() / name, {"state": "running", "pid": os.getpid(),
                                          "pid_started": psutil.Process().create_time(),
                                          "started": time.time() - 12, **fields})


@pytest.mark.parametrize("name, fields, line", [
    (background.AUTOPILOT_FILE, {"phase": "search"},
     "the autopilot is searching (12 s so far, phase search): wait for it to end or stop it on the Autopilot page"),
    (background.BENCH_FILE, {"done": 3, "total": 8},
     "the quick benchmark is running (3/8 cells): wait for it to end or cancel it on the Hardware page"),
    (background.LR_FIND_FILE, {}, "an LR range test is running: wait for it to end (usually under a minute)"),
    (background.DEMO_FILE, {},
     "the transfer demo is running (12 s so far, about a minute in all): wait for it to end or stop it on the "
     "Runs page"),
])
def test_engine_run_refuses_while_the_machine_is_busy(store_home, capsys, name, fields, line):
    """Between its runs the autopilot (or the demo) holds no run, yet owns the machine."""
    from engine.cli.main import main
    from engine.store import Store

    _running(name, **fields)
    assert main(["run", "--model", "mlp", "--epochs", "1", "--quiet"]) == 2
    # The seconds so far are the wall clock's (about 12): not asserted.
    expected = re.escape(f"error: {line}").replace("12", r"\d+")
    assert re.fullmatch(expected, capsys.readouterr().err.strip())
    store = Store()
    try:
        assert store.list_runs() == []  # nothing was queued
    finally:
        store.close()


@pytest.mark.worker
def test_a_closed_stdout_ends_quietly(store_home):
    """`python -m engine runs | head`: the reader is gone before the table is written."""
    r, w = os.pipe()
    os.close(r)  # every write to w now fails with EPIPE (Python ignores SIGPIPE)
    try:
        out = subprocess.run([sys.executable, "-m", "engine", "runs"], stdout=w, stderr=subprocess.PIPE, text=True,
                             timeout=120)
    finally:
        os.close(w)
    assert (out.returncode, out.stderr) == (141, "")


def test_bench_refuses_a_progress_file_that_is_a_directory(store_home, capsys):
    from engine.cli.main import main

    assert main(["bench", "--progress-file", str(store_home)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: progress_file: '{store_home}' is a directory; give a file "
                                               f"path, e.g. {store_home}/bench-progress.json")


@pytest.mark.parametrize("argv, line", [
    (["autopilot", "--budget", "5", "--json"], "budget: 5 is out of range; give the search's wall-clock seconds, "
                                               "30 to 86400"),
    (["run", "--batch-size", "0", "--json"], "batch_size: 0 is out of range; use a value between 1 and 1048576"),
    (["show", "99", "--json"], "run_id: 99 does not exist; see python -m engine runs"),
    # Refused by argparse itself, before any command runs.
    (["run", "--batch-size", "abc", "--json"], "argument --batch-size: invalid int value: 'abc'; "
                                               "use a whole number (see python -m engine run --help)"),
    (["run", "--learning-rate", "fast", "--json"], "argument --learning-rate: invalid float value: 'fast'; "
                                                   "use a number, e.g. 0.001 (see python -m engine run --help)"),
    (["show", "abc", "--json"], "argument run_id: invalid int value: 'abc'; use a whole number "
                                "(see python -m engine show --help)"),
])
def test_with_json_an_error_still_ends_stdout_with_one_json_object(store_home, capsys, argv, line):
    import json

    from engine.cli.main import main

    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert json.loads(out.splitlines()[-1]) == {"error": line, "exit_code": 2}
    assert err.strip() == f"error: {line}"  # stderr keeps its line


def test_a_config_file_that_is_not_utf8_is_one_line(store_home, tmp_path, capsys):
    from engine.cli.main import main

    bad = tmp_path / "bin.json"
    bad.write_bytes(b"\xff\xfe\x00")  # was a UnicodeDecodeError traceback, exit code 1
    assert main(["run", "--config", str(bad)]) == 2
    assert capsys.readouterr().err.strip() == (f"error: config: '{bad}' is not UTF-8 text (byte 0); "
                                               "give a JSON file of settings, saved as UTF-8")


def test_an_argparse_error_without_json_still_exits_2(capsys):
    from engine.cli.main import main

    with pytest.raises(SystemExit) as e:
        main(["run", "--bogus-flag"])
    assert e.value.code == 2
    assert capsys.readouterr().err.strip() == ("error: unrecognized arguments: --bogus-flag; "
                                               "see python -m engine --help")


@pytest.mark.worker
def test_stop_waits_for_a_job_that_writes_its_state_until_it_ends(store_home):
    """A job (as the autopilot's CLI) that, stopped, writes 'running' while it stops its
    run and then its final state: Stop returns once it has ended, with its own last state
    in the file (not 'running' again, and not a snapshot written over its last write)."""
    import textwrap

    path = store_home / "job.json"
    script = textwrap.dedent(f"""
        import json, os, signal, sys, time
        def write(state, **kw):
            tmp = {str(path)!r} + ".tmp"
            with open(tmp, "w") as fh:
                json.dump({{"state": state, "pid": os.getpid(), "pid_started": None, **kw}}, fh)
            os.replace(tmp, {str(path)!r})
        stopped = []
        signal.signal(signal.SIGTERM, lambda *_: stopped.append(1))
        write("running", trials=[1])
        while not stopped:
            time.sleep(0.05)
        time.sleep(0.3)
        write("running", trials=[1, 2])  # still stopping its current run
        time.sleep(0.5)
        write("cancelled", trials=[1, 2], error="stopped by the user")
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], start_new_session=True)
    try:
        deadline = time.monotonic() + 30
        while not (path.exists() and background.read_json(path)) and time.monotonic() < deadline:
            time.sleep(0.05)
        job = background.read_json(path)
        background.write_json(path, {**job, "pid_started": psutil.Process(proc.pid).create_time()})
        assert background.cancel_job(path, wait_s=10) is True
        assert proc.poll() is not None  # it has ended
        assert background.read_json(path)["state"] == "cancelled"
        assert background.read_json(path)["trials"] == [1, 2]  # its own last write, kept
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("argv", [["bench", "--quick"], ["lr-find", "--steps", "10"], ["demo-transfer", "--quiet"]])
def test_measuring_commands_refuse_while_the_autopilot_is_between_its_runs(store_home, capsys, argv):
    """The quick benchmark, an LR range test and the transfer demo would share the CPU with
    the autopilot's next trial: refused naming it, before any run is queued or sweep saved."""
    from engine.cli.main import main
    from engine.lr_find import range_test as lr_find
    from engine.store import Store

    _running(background.AUTOPILOT_FILE, phase="search")
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert re.fullmatch(r"error: not started: the autopilot is searching \(\d+ s so far, phase search\): wait for it "
                        r"to end or stop it on the Autopilot page", err), err
    store = Store()
    try:
        assert store.list_runs() == []
    finally:
        store.close()
    assert not (store_home / lr_find.LATEST_FILE).exists()


def test_every_measuring_command_refuses_a_busy_machine_with_one_line(store_home):
    """noise and tune-baseline printed "error: <why>", demo-transfer "error: not started: <why>",
    hardware --noise "noise floor not measured: <why>": one refusal now (engine.cli.printing
    refuse_if_busy), the same line and exit 2 from every command."""
    from engine.store import Store
    from tests.helpers import cli

    _running(background.LR_FIND_FILE)
    line = "error: not started: an LR range test is running: wait for it to end (usually under a minute)\n"
    for argv in (["noise", "--pairs", "3"], ["tune-baseline"], ["demo-transfer", "--quiet"],
                 ["autopilot", "--budget", "60", "--quiet"]):
        got = cli.engine(*argv)
        assert (got.returncode, got.stderr, got.stdout) == (2, line, ""), argv
    store = Store()
    try:
        assert store.list_runs() == []  # nothing was queued
    finally:
        store.close()


def test_only_the_pages_own_job_file_counts_as_the_jobs_own(store_home, monkeypatch):
    name = background.AUTOPILOT_FILE
    assert background.own_job_file(str(store_home / name), name) is True
    monkeypatch.chdir(store_home)
    assert background.own_job_file(name, name) is True            # the same file by a relative path
    assert background.own_job_file(str(store_home / "mine.json"), name) is False
    assert background.own_job_file(None, name) is False


def test_file_errors_of_export_import_and_data_are_one_line(store_home, tmp_path, capsys):
    import json

    import numpy as np

    from engine.cli.main import main
    from engine.config import RunConfig
    from engine.store import Store

    store = Store()
    rid = store.create_run(RunConfig().to_json(), status="running")
    store.finish_run(rid, "completed")
    store.close()
    # Were "error: FileNotFoundError: [Errno 2] No such file or directory: '...x.zip.part'".
    assert main(["export", str(rid), "-o", "/nonexistent/dir/x.zip"]) == 2
    assert capsys.readouterr().err.strip() == ("error: output: '/nonexistent/dir/x.zip' cannot be written (No such "
                                               "file or directory); give a path in an existing, writable folder")
    assert main(["import", "/nonexistent.zip"]) == 2
    assert capsys.readouterr().err.strip() == ("error: bundle: '/nonexistent.zip' cannot be read (No such file or "
                                               "directory); give the path of a .zip from python -m engine export")
    # Was printed on stdout, as if it were a result.
    assert main(["data", "remove", "nope"]) == 2
    out, err = capsys.readouterr()
    assert (out, err.strip()) == ("", "error: name: no data set user:nope; see python -m engine data list")
    # data add takes --json as data check does.
    rng = np.random.default_rng(0)
    npz = tmp_path / "small.npz"
    np.savez(npz, x_train=rng.random((40, 8, 8, 1), dtype=np.float32), y_train=np.arange(40) % 4)
    assert main(["data", "add", "small", str(npz), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1]) == {
        "ok": True, "dataset": "user:small", "shape": [8, 8, 1], "classes": 4, "samples": 40, "test_samples": 0}
