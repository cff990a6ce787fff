"""One rule for every stop signal, the background jobs alone (issue 56, item 2): a SIGTERM to
the process of the autopilot, the quick benchmark or the LR range test ends its job `cancelled`
naming the signal ("stopped: the autopilot got SIGTERM"), never "cancelled by the user", and
nothing of it keeps training; the page's Stop still reads as the user's
(engine.jobs.background.stopped_line, stop_by_user, end_by_signal)."""
from __future__ import annotations

import json
import os
import signal
import time

import psutil
import pytest

from engine.config import RunConfig
from engine.jobs import background, runner
from engine.store import Store
from tests.conftest import LONG_RUN

pytestmark = pytest.mark.worker

def _until(what, timeout_s: float = 240.0, why=lambda: "", pid: int | None = None) -> None:
    """Wait for `what()`; fail with `why()` after `timeout_s` or once process `pid` has ended."""
    deadline = time.monotonic() + timeout_s
    while not what():
        assert time.monotonic() < deadline and (pid is None or not _ended(pid)), why()
        time.sleep(0.2)


def _has_child(pid: int) -> bool:
    """Whether the job's process has started its worker (it is inside the job's own work)."""
    try:
        return bool(psutil.Process(pid).children())
    except psutil.NoSuchProcess:
        return False


def _ended(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_sigterm_to_the_autopilot_alone_stops_its_trial_naming_the_signal(store_home):
    """The autopilot's process is real; its trial's queue and worker are played (StandInQueue:
    the worker a sleeping process): the signal's path is the autopilot's, and a real worker
    stopping on its SIGTERM is tests/test_stopping.py's."""
    from engine.autopilot import search
    from tests.helpers.queue import StandInQueue

    cfg = store_home / "tiny.json"  # the synthetic shape and size come from --config (the flags name the rest)
    cfg.write_text(json.dumps({"synthetic_shape": [8, 8, 1], "synthetic_samples": 80, "validation_fraction": 0.2}))
    job = lambda: background.read_json(search.progress_path()) or {}  # noqa: E731
    with StandInQueue(store_home) as queue, Store() as s:
        # --lr-find no: with a 120-s budget the search would first run an LR range test.
        pid = search.start_background(["--config", str(cfg), "--dataset", "synthetic", "--model", "mlp",
                                       "--batch-size", "16", "--epochs", "400", "--target", "0.999", "--budget",
                                       "120", "--repeats", "0", "--no-explain", "--lr-find", "no"])
        rid = []
        _until(lambda: rid.append(queue.claim(s)) or rid[-1] is not None, pid=pid,
               why=lambda: (job(), background.last_error(job().get("log"))))
        # Its first 3 executions, as its worker stores them: the trial trains when the signal lands.
        s.add_metrics(rid[-1], executions=[(i, 0, i + 1, 1, 0.5 * (i + 1), 0.5, 32.0, 2.3, 1e-3, int(i == 0), None)
                                           for i in range(3)])
        os.kill(pid, signal.SIGTERM)
        queue.worker.wait(timeout=60)  # the autopilot's stop of its trial: a SIGTERM to its worker
        run = s.get_run(rid[-1])
        assert run["cancel_requested"], run  # then the worker ends it with the reason left (worker._cancel_line)
        s.finish_run(rid[-1], "cancelled", run["error"], only_if_active=True)
        _until(lambda: _ended(pid), 60)
        line = "stopped: the autopilot got SIGTERM"
        end = job()
        assert (end["state"], end["error"]) == ("cancelled", line), end
        assert end["phase"] == "stopped" and end["stopped_by"] == line
        assert not [n for n in end.get("notes") or [] if "by the user" in n], end["notes"]
        assert runner.active_run(s) is None  # its trial ended
        runs = s.list_runs()
    assert [(r["status"], r["error"]) for r in runs] == [("cancelled", f"autopilot: {line}")]  # a trial's error
    assert background.busy() is None  # the next launch goes through at once


def test_sigterm_to_the_quick_benchmark_alone_ends_it_naming_the_signal(store_home):
    from engine.bench import quick

    tiny = {"workload": {"model": "mlp", "synthetic_shape": [8, 8, 1], "batch_size": 32, "steps": 2000, "epochs": 2},
            "cells": [{"precision": "float32", "steps_per_execution": s, "jit_compile": False, "devices": 1}
                      for s in (1, 4)]}
    pid = quick.start_background(repeats=10, matrix=tiny)
    _until(lambda: _has_child(pid) and (quick.read_progress() or {}).get("state") == "running", pid=pid,
           why=lambda: quick.read_progress())
    os.kill(pid, signal.SIGTERM)
    _until(lambda: _ended(pid), 60)
    end = quick.read_progress()
    assert (end["state"], end["error"]) == ("cancelled", "stopped: the quick benchmark got SIGTERM"), end
    assert background.busy() is None


def test_sigterm_to_the_lr_range_test_alone_ends_it_naming_the_signal_and_stop_is_the_users(store_home):
    from engine.lr_find import range_test

    cfg = RunConfig(**{**LONG_RUN, "epochs": 2})
    for by_user in (False, True):
        pid = range_test.start_background(cfg, steps=500)
        _until(lambda: _has_child(pid), pid=pid, why=lambda: range_test.read_progress())
        if by_user:
            assert range_test.cancel_background()  # the page's Stop: a SIGTERM too, marked as the user's
        else:
            os.kill(pid, signal.SIGTERM)
        _until(lambda: _ended(pid), 60)
        end = range_test.read_progress()
        want = "cancelled by the user" if by_user else "stopped: the LR range test got SIGTERM"
        assert (end["state"], end["error"]) == ("cancelled", want), end
        assert background.busy() is None
