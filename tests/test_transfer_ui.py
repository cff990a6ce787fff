"""The transfer demo as a background job for the dashboard
(engine.jobs.demo.start_demo_background / read_demo_progress), without training."""
from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest

from engine.jobs import background
from engine.jobs import demo as transfer


def finished_job(store_home, lines: list[str]) -> None:
    """A job file whose process has ended, with `lines` as its log."""
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    log = background.DEMO.log_path()
    log.write_text("\n".join(lines) + "\n")
    background.write_json(transfer.demo_job_path(), {"state": "running", "pid": proc.pid, "pid_started": None,
                                                     "started": time.time() - 5, "log": str(log)})


@pytest.mark.unit
def test_no_job_means_not_busy(store_home):
    assert transfer.read_demo_progress() is None and transfer.demo_busy() is None
    assert transfer.cancel_demo_background() is False


@pytest.mark.worker
def test_a_finished_demo_is_done_with_its_result(store_home):
    result = {"finetune_id": 2, "scratch_id": 3, "finetune_status": "completed", "scratch_status": "completed",
              "speedup": 0.52}
    finished_job(store_home, ["some progress", json.dumps(result)])
    job = transfer.read_demo_progress()
    assert job["state"] == "done" and job["result"]["speedup"] == 0.52 and job["error"] is None
    assert job["elapsed"] >= 5 and transfer.demo_busy() is None


@pytest.mark.worker
def test_a_failed_demo_reports_its_error_line(store_home):
    finished_job(store_home, ["error: pretraining run 1 ended failed: out of memory"])
    job = transfer.read_demo_progress()
    assert job["state"] == "failed"
    assert job["error"] == "the transfer demo ended without a result: pretraining run 1 ended failed: out of memory"


@pytest.mark.unit
def test_a_running_demo_is_busy_and_refuses_a_second_start(store_home):
    import psutil

    background.write_json(transfer.demo_job_path(), {"state": "running", "pid": psutil.Process().pid,
                                                     "pid_started": psutil.Process().create_time(),
                                                     "started": time.time(), "log": str(store_home / "x.log")})
    assert transfer.demo_busy().startswith("the transfer demo is running")
    with pytest.raises(transfer.TransferError, match="not started: the transfer demo is running"):
        transfer.start_demo_background()


@pytest.mark.worker
def test_transfer_module_still_imports_no_tensorflow():
    code = ("import sys, engine.training.transfer, engine.data.userdata; "
            "bad = [m for m in ('tensorflow', 'keras') if m in sys.modules]; assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)
