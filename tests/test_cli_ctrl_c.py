"""Ctrl-C is always one line (issue 42, item 9): pressed twice 0.3 s apart while
`python -m engine run` waits, the run is cancelled, stderr holds one line about it and no
traceback, and the command exits 130 (128 + SIGINT)."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.store import Store

ROOT = Path(__file__).resolve().parents[1]
LONG = ["--dataset", "synthetic", "--synthetic-shape", "8,8,1", "--synthetic-samples", "80", "--model", "mlp",
        "--batch-size", "16", "--epochs", "400", "--validation-fraction", "0.2"]


@pytest.mark.worker
@pytest.mark.parametrize("presses", [2, 5])
def test_any_number_of_ctrl_c_cancels_in_one_line_and_exits_130(store_home, presses):
    env = {**os.environ, "SPEEDLAB_HOME": str(store_home), "SPEEDLAB_WARM_WORKER": "0"}
    # Its own process group, as a terminal's foreground job: Ctrl-C is SIGINT to the group.
    p = subprocess.Popen([sys.executable, "-m", "engine", "run", *LONG, "--quiet"], cwd=ROOT, env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                         # A terminal's job gets SIGINT's default; an xdist worker ignores SIGINT and a
                         # child inherits that, so the run trained on to its end and exited 0.
                         preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 180
        while True:
            assert p.poll() is None and time.monotonic() < deadline, p.stderr.read() if p.poll() else "slow"
            try:
                with Store(store_home / "runs.sqlite") as s:
                    if s.conn.execute("SELECT COUNT(*) FROM executions").fetchone()[0] >= 3:
                        break
            except Exception:  # noqa: BLE001 - not created yet
                pass
            time.sleep(0.2)
        for _ in range(presses):
            os.killpg(p.pid, signal.SIGINT)
            time.sleep(0.3)
        out, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 130, err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert lines == ["cancelling run 1 (interrupted; more presses change nothing) ..."], err
    with Store(store_home / "runs.sqlite") as s:
        assert s.get_run(1)["status"] == "cancelled"


def test_a_run_and_a_comparison_stop_on_ctrl_c_through_one_function(monkeypatch, capsys):
    """engine.cli.follow.until_done: what `run` and `run --baseline` do on Ctrl-C while they
    wait (the line once, everything stopped once, the stopped result returned, exit 130)."""
    from engine.cli import follow

    stops = []
    monkeypatch.setattr(follow, "stop_all_for_signal", lambda: stops.append("stop"))

    def pressed():
        raise KeyboardInterrupt

    done, stopped = {"status": "completed"}, {"status": "stopped"}
    assert follow.until_done(lambda: done, lambda: stopped, "stopping ...", True, "comparison 4") is done
    assert (stops, follow.INTERRUPTED["by_user"], capsys.readouterr().err) == ([], False, "")
    line = "stopping comparison 4 (complete pairs are kept; more presses change nothing) ..."
    assert follow.until_done(pressed, lambda: stopped, line, True, "comparison 4") is stopped
    assert (stops, follow.INTERRUPTED["by_user"], capsys.readouterr().err) == (["stop"], True, f"\n{line}\n")
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a second press changes nothing
    # It had ended before the signal: the stop found nothing to stop, and the line after says so.
    assert follow.until_done(pressed, lambda: done, "cancelling run 3 ...", True, "run 3") is done
    assert capsys.readouterr().err == "\ncancelling run 3 ...\nrun 3 had completed before the stop reached it: its results stand\n"


def test_ctrl_c_during_the_noise_measurement_stops_it_like_every_other_command(store_home, monkeypatch, capsys):
    """`engine hardware --noise` had a Ctrl-C block of its own: no "more presses change nothing"
    (a second press was a traceback) and exit 0/1 as if it had ended by itself. Now the family's
    one path (engine.cli.follow.until_done): the line once, everything stopped, exit 130."""
    from engine.cli import follow
    from engine.cli.hardware import measure_noise
    from engine.jobs import comparison, noise

    stops, waits = [], []
    monkeypatch.setattr(follow, "stop_all_for_signal", lambda: stops.append("stop"))
    monkeypatch.setattr(noise, "start", lambda: 7)

    def wait(cid, **kw):  # the first wait is interrupted; the second sees the stopped comparison
        waits.append(cid)
        if len(waits) == 1:
            raise KeyboardInterrupt
        return {"id": cid, "status": "stopped", "kind": "aa", "result": {"pairs": 1}}

    monkeypatch.setattr(comparison, "wait", wait)
    # measure_noise is what `hardware --noise` runs after the probe (a process: not in this lane);
    # engine.cli.main turns INTERRUPTED into exit 130 for every command.
    assert measure_noise(quiet=True) == 1  # no floor from one pair
    assert (stops, waits, follow.INTERRUPTED["by_user"]) == (["stop"], [7, 7], True)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # a second press changes nothing
    assert capsys.readouterr().err.endswith("stopping the noise measurement (complete pairs are kept; more presses "
                                            "change nothing) ...\n")


def test_a_signal_after_queueing_and_before_the_wait_still_stops_what_was_queued(store_home, monkeypatch, capsys):
    """A SIGTERM that lands after `run --baseline --pairs 2` queued its comparison and before its
    wait began (CI, loaded: the CLI exited "interrupted" and the comparison trained on with
    nobody to stop it). engine.cli.main stops what the store runs, as the wait would have; a
    command that queued nothing (a second command in this process) still says one line."""
    from engine.base import process
    from engine.cli import run as cli_run
    from engine.cli.main import main
    from engine.jobs import runner
    from engine.store import comparisons as cstore

    monkeypatch.setattr(runner, "ensure_queue", lambda *a, **k: False)  # queued, no queue process

    def sigterm_lands(*_a, **_k):  # what engine.cli.main's handler does with a SIGTERM
        process.RECEIVED["signal"] = "SIGTERM"
        raise KeyboardInterrupt("SIGTERM")

    monkeypatch.setattr(cli_run, "_run_pairs", sigterm_lands)
    args = ["run", "--model", "mlp", "--epochs", "1", "--baseline", "--pairs", "2", "--quiet"]
    assert main(args) == 143  # 128 + SIGTERM
    assert capsys.readouterr().err == "\nstopping what this command queued (interrupted before its wait began) ...\n"
    with Store(store_home / "runs.sqlite") as s:
        (comp,) = cstore.list_all(s)
        assert (comp["status"], comp["ended_by"]) == ("stopped", "stopped: the CLI got SIGTERM; 0 complete pairs kept")
        assert s.list_runs() == []  # its 4 queued runs withdrawn: none ever ran
    # A second command in this process queues nothing and is interrupted: one line, nothing stopped.
    for name in process.STOP_SIGNALS:  # as a fresh command's process starts
        signal.signal(getattr(signal, name), signal.SIG_DFL)
    process.RECEIVED["signal"] = None
    from engine.jobs import launch

    monkeypatch.setattr(launch, "launch", lambda *_a, **_k: (_ for _ in ()).throw(KeyboardInterrupt()))
    assert main(args) == 130
    assert capsys.readouterr().err == "\ninterrupted\n"
