"""Multi-worker runs on loopback (127.0.0.1, free ports only)."""
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from engine.base import cluster
from engine.jobs import runner
from engine.config import ConfigError, RunConfig
from engine.config.preflight import check_runnable
from engine.store import Store


CPU = {"gpus": 0, "tpu": False, "cpu_bf16": False}


@pytest.mark.unit
@pytest.mark.parametrize("spec, index, field, fragment", [
    ("127.0.0.1:12345,127.0.0.1", 0, "cluster", "is not host:port"),
    ("127.0.0.1:70000", 0, "cluster", "outside 1-65535"),
    ("bad_host!:1234", 0, "cluster", "invalid host name"),
    ("a:1234,a:1234", 0, "cluster", "twice"),
    ("a:1234,b:1234", 2, "task_index", "use 0 to 1"),
    ("a:1234,b:1234", -1, "task_index", "out of range"),
    ("", 0, "cluster", "names no worker"),
])
def test_invalid_cluster_descriptions(spec, index, field, fragment):
    with pytest.raises(ConfigError) as e:
        cluster.parse(spec, index)
    assert e.value.field == field and fragment in str(e.value)


@pytest.mark.unit
def test_valid_cluster_and_tf_config_round_trip():
    c = cluster.parse("10.0.0.2:2222, host-b.example:2222,[::1]:2223", 1)
    assert c.workers == ("10.0.0.2:2222", "host-b.example:2222", "[::1]:2223") and not c.is_chief
    back = cluster.from_env({"TF_CONFIG": c.tf_config()})
    assert back == c
    with pytest.raises(ConfigError, match="not a worker task"):
        cluster.from_env({"TF_CONFIG": json.dumps({"cluster": {"worker": ["a:1"]},
                                                   "task": {"type": "ps", "index": 0}})})
    assert cluster.from_env({}) is None
    a, b = cluster.free_ports(2)
    assert a != b and all(1024 <= p <= 65535 for p in (a, b))


@pytest.mark.unit
def test_batch_must_divide_over_all_replicas():
    with pytest.raises(ConfigError, match="not divisible by 4 replicas"):
        RunConfig(workers=2, devices=2, batch_size=130)
    assert RunConfig(workers=2, batch_size=128).per_replica_batch_size == 64
    with pytest.raises(ConfigError, match="devices"):
        check_runnable(RunConfig(workers=2, devices=2, batch_size=128), CPU)


@pytest.mark.worker
def test_two_workers_match_one_process(store_home):
    # Same global batch and seed; the 2-worker run drops the last partial batch (1437 % 128 = 29).
    cfg = RunConfig(workers=2, batch_size=128, epochs=10)
    (rid,) = runner.submit([cfg])
    multi = runner.wait(rid, timeout_s=300)
    assert multi["status"] == "completed", multi["error"]
    (rid1,) = runner.submit([cfg.replace(workers=1)])
    single = runner.wait(rid1, timeout_s=300)
    assert single["status"] == "completed"
    s = multi["summary"]
    assert s["replicas"] == 2 and s["workers"] == 2 and s["steps"] == 110  # 10 x floor(1437/128)
    assert abs(s["final_val_accuracy"] - single["summary"]["final_val_accuracy"]) <= 0.02
    st = Store()
    assert [(w["task_index"], w["status"]) for w in st.workers(rid)] == [(0, "completed"), (1, "completed")]
    workers_with_system_rows = {r["worker"] for r in st.metrics("system", rid)}
    assert workers_with_system_rows == {0, 1}
    assert multi["plan"]["per_worker_batch_size"] == 64


@pytest.mark.worker
def test_killed_worker_fails_the_run_quickly_and_leaves_no_process(start_long_run):
    rid, st = start_long_run(workers=2)
    pids = {w["task_index"]: w["pid"] for w in st.workers(rid)}
    os.kill(pids[1], signal.SIGKILL)
    t_kill = time.monotonic()
    run = runner.wait(rid, timeout_s=60)
    # The chief may store its view of the dead peer ("UnavailableError: ... Connection reset by peer")
    # first; the queue writes the cause over it once every worker has ended (polled, 0.25 s).
    while not run["error"].startswith("worker ") and time.monotonic() - t_kill < 20:
        time.sleep(0.1)
        run = st.get_run(rid)
    assert time.monotonic() - t_kill < 20  # bounded: the queue process notices within 0.25 s
    assert run["status"] == "failed"
    assert run["error"].startswith("worker 1 of 2: worker was killed by SIGKILL")
    alive = _live(pids.values())
    deadline = time.monotonic() + 10
    while alive and time.monotonic() < deadline:  # polled: the killed peers' exit takes a moment
        time.sleep(0.1)
        alive = _live(pids.values())
    assert not alive, (pids, alive)


def _live(pids) -> dict[int, str]:
    """The status of each of `pids` still running (a zombie has ended: its parent has not reaped it)."""
    out = {}
    for p in pids:
        try:
            status = psutil.Process(p).status()
        except psutil.NoSuchProcess:
            continue
        if status != psutil.STATUS_ZOMBIE:
            out[p] = status
    return out


@pytest.mark.worker
def test_engine_worker_cli_two_processes(store_home, tmp_path):
    addrs = ",".join(cluster.local(2))
    cmd = [sys.executable, "-m", "engine", "worker", "--cluster", addrs, "--model", "mlp", "--epochs", "2",
           "--json"]
    env = dict(os.environ)
    other = dict(env, SPEEDLAB_HOME=str(tmp_path / "other-host"))  # the second "machine" has its own store
    p1 = subprocess.Popen(cmd + ["--task-index", "1"], env=other, stdout=subprocess.PIPE, text=True)
    out0 = subprocess.run(cmd + ["--task-index", "0"], env=env, capture_output=True, text=True, timeout=300)
    out1, _ = p1.communicate(timeout=60)
    assert out0.returncode == 0 and p1.returncode == 0, out0.stderr[-2000:]
    chief = json.loads(out0.stdout.strip().splitlines()[-1])
    second = json.loads(out1.strip().splitlines()[-1])
    assert chief["status"] == "completed" and chief["workers"] == 2 and chief["task_index"] == 0
    assert second["worker_status"] == "completed" and second["task_index"] == 1
    assert chief["final_val_accuracy"] > 0.5


@pytest.mark.worker
def test_cancel_multi_worker_run_ends_all_workers(start_long_run):
    rid, st = start_long_run(workers=2)
    assert "stop requested" in runner.cancel(rid)
    run = runner.wait(rid, timeout_s=60)
    assert run["status"] == "cancelled"
    assert [(w["task_index"], w["status"]) for w in st.workers(rid)] == [(0, "cancelled"), (1, "cancelled")]
    assert len(st.metrics("executions", rid)) >= 5  # partial metrics kept
